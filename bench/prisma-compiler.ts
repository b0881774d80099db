// Prisma's two query compiler builds side by side: what `compilerBuild = "fast"` (Prisma's default) and
// `"small"` (prisma/schema.prisma since issue 13's memory work) cost in memory and in CPU per query.
//
//   node --conditions=source --import ./tools/ts-register.js bench/prisma-compiler.ts [--queries 2000] [--rounds 2]
//
// Generates the client twice from prisma/schema.prisma into var/bench-prisma/<build>/ (`prisma generate`,
// offline), seeds a throw-away database, then, alternating the builds each round, runs one child process
// per build that loads its client, answers the gateway's kinds of query and reports:
//   - RSS and its parts once the client has run one query of each kind and two full collections ran: what
//     an idle process pays for the client;
//   - CPU us per query (process.cpuUsage over `--queries` of each kind, after 200 warm-up queries), with the
//     same SQL through `pg` alone in the same child as the baseline (the driver Prisma's adapter uses).
// Query kinds: `raw` the auth key lookup ($queryRaw, as ApiKeysRepository.findActiveByHash), `findMany`
// the catalog read (Model where enabled, ordered), `include` a console page (ApiKey of a member with its
// Member), `create` an audit event insert. Numbers, not pass/fail; the database is dropped at the end.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Db } from '@infer/persistence';
import { createBenchDatabase } from './support.js';

const { values: opt } = parseArgs({
  options: {
    queries: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '2' },
    child: { type: 'string' },
  },
});

const BUILDS = ['fast', 'small'] as const;
const OUT = 'var/bench-prisma';

interface ChildResult {
  build: string;
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  heapUsedMiB: number;
  /** CPU us per query by kind, Prisma and the pg baseline. */
  cpu: Record<string, { prisma: number; pg: number }>;
}

if (opt.child) await child(opt.child);
else await main();

async function main(): Promise<void> {
  const schema = readFileSync('prisma/schema.prisma', 'utf8');
  for (const build of BUILDS) {
    const dir = `${OUT}/${build}`;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    // The generator block with this build's output and compiler; everything else as in the real schema.
    const copy = schema
      .replace(/^\s*output\s*=.*$/m, '  output = "./client"')
      .replace(/^\s*compilerBuild\s*=.*\n/m, '')
      .replace(/(provider\s*=\s*"prisma-client"\s*\n)/, `$1  compilerBuild = "${build}"\n`);
    // prisma resolves `output` from the schema's folder.
    writeFileSync(`${dir}/schema.prisma`, copy);
    execFileSync('npx', ['prisma', 'generate', '--schema', `${dir}/schema.prisma`], { stdio: 'ignore' });
  }
  const db = await createBenchDatabase();
  const rows: Record<string, string | number>[] = [];
  try {
    for (let r = 0; r < Number(opt.rounds); r++) {
      const order = r % 2 === 0 ? BUILDS : [...BUILDS].reverse();
      for (const build of order) {
        const res = await runChild(build, db.databaseUrl, db.memberId, db.keyId);
        const row: Record<string, string | number> = {
          round: r + 1,
          build,
          'RSS MiB': res.rssMiB.toFixed(1),
          'anon MiB': res.anonMiB.toFixed(1),
          'file MiB': res.fileMiB.toFixed(1),
          'heap used MiB': res.heapUsedMiB.toFixed(1),
        };
        for (const [kind, v] of Object.entries(res.cpu)) {
          row[`${kind} us`] = v.prisma.toFixed(0);
          row[`${kind} pg us`] = v.pg.toFixed(0);
        }
        rows.push(row);
      }
    }
  } finally {
    await db.drop();
    rmSync(OUT, { recursive: true, force: true });
  }
  console.log(
    'Prisma query compiler builds: idle memory after one query of each kind, CPU us per query (pg alone: same SQL)',
  );
  console.table(rows);
}

function runChild(build: string, databaseUrl: string, memberId: string, keyId: string): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [
        '--conditions=source',
        '--import',
        './tools/ts-register.js',
        '--expose-gc',
        'bench/prisma-compiler.ts',
        '--child',
        build,
        '--queries',
        String(opt.queries),
      ],
      {
        env: {
          ...process.env,
          NODE_ENV: 'production',
          DATABASE_URL: databaseUrl,
          BENCH_MEMBER: memberId,
          BENCH_KEY: keyId,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('error', reject);
    p.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) reject(new Error(`child ${build} exited with ${code}: ${out.slice(-500)}`));
      else resolve(JSON.parse(line) as ChildResult);
    });
  });
}

async function child(build: string): Promise<void> {
  const { PrismaPg } = await import('@prisma/adapter-pg');
  const { PrismaClient } = (await import(`../${OUT}/${build}/client/client.ts`)) as {
    // The same schema as @infer/persistence's client: the same types.
    PrismaClient: new (
      o: unknown,
    ) => Db;
  };
  const pg = (await import('pg')).default;
  const url = process.env.DATABASE_URL as string;
  const memberId = process.env.BENCH_MEMBER as string;
  const keyId = process.env.BENCH_KEY as string;
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const hash = 'no-such-hash';

  const kinds: Record<string, { prisma: () => Promise<unknown>; pg: () => Promise<unknown> }> = {
    raw: {
      prisma: () =>
        prisma.$queryRaw`SELECT k."id" AS "keyId", k."memberId", m."tier"::text AS "tier", k."limits"
          FROM "ApiKey" k JOIN "Member" m ON m."id" = k."memberId" WHERE k."hash" = ${hash} LIMIT 1`,
      pg: () =>
        pool.query(
          `SELECT k."id" AS "keyId", k."memberId", m."tier"::text AS "tier", k."limits"
             FROM "ApiKey" k JOIN "Member" m ON m."id" = k."memberId" WHERE k."hash" = $1 LIMIT 1`,
          [hash],
        ),
    },
    findMany: {
      prisma: () =>
        prisma.model.findMany({ where: { enabled: true }, orderBy: [{ rank: 'asc' }, { id: 'asc' }] }),
      pg: () =>
        pool.query('SELECT * FROM "Model" WHERE "enabled" = $1 ORDER BY "rank" ASC, "id" ASC', [true]),
    },
    include: {
      prisma: () =>
        prisma.apiKey.findMany({
          where: { memberId },
          include: { member: true },
          orderBy: { createdAt: 'desc' },
          take: 50,
        }),
      pg: () =>
        pool.query(
          `SELECT k.*, row_to_json(m.*) AS member FROM "ApiKey" k JOIN "Member" m ON m."id" = k."memberId"
            WHERE k."memberId" = $1 ORDER BY k."createdAt" DESC LIMIT 50`,
          [memberId],
        ),
    },
    update: {
      prisma: () =>
        prisma.apiKey.updateMany({ where: { id: keyId, lastUsedAt: null }, data: { name: 'bench' } }),
      pg: () =>
        pool.query('UPDATE "ApiKey" SET "name" = $1 WHERE "id" = $2 AND "lastUsedAt" IS NULL', [
          'bench',
          keyId,
        ]),
    },
  };
  const gc = (globalThis as { gc?: () => void }).gc as () => void;

  // One of each, then the idle picture.
  for (const k of Object.values(kinds)) await k.prisma();
  gc();
  gc();
  await new Promise((r) => setTimeout(r, 200));
  const smaps = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const kib = (name: string) => Number(smaps.match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1] ?? 0);
  const result: ChildResult = {
    build,
    rssMiB: kib('Rss') / 1024,
    anonMiB: kib('Anonymous') / 1024,
    fileMiB: (kib('Rss') - kib('Anonymous')) / 1024,
    heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
    cpu: {},
  };

  const n = Number(opt.queries);
  const cpuPer = async (fn: () => Promise<unknown>): Promise<number> => {
    for (let i = 0; i < 200; i++) await fn();
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / n;
  };
  for (const [kind, k] of Object.entries(kinds)) {
    result.cpu[kind] = { prisma: await cpuPer(k.prisma), pg: await cpuPer(k.pg) };
  }
  await prisma.$disconnect();
  await pool.end();
  console.log(JSON.stringify(result));
}
