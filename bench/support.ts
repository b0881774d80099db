/** What the benchmarks share: a free port, percentiles, and a fresh database with one inference key. */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import {
  ApiKeysRepository,
  CatalogRepository,
  createPrisma,
  dropDatabase,
  ensureDatabase,
  MembersRepository,
  migrateDeploy,
} from '@infer/persistence';

export const PG_ROOT = process.env.TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** The p-th percentile (0-100) of `xs`. */
export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

export interface BenchDatabase {
  databaseUrl: string;
  prisma: ReturnType<typeof createPrisma>;
  /** An API key of an inference-tier member, and its record id. */
  key: string;
  keyId: string;
  memberId: string;
  keys: ApiKeysRepository;
  drop(): Promise<void>;
}

/** A fresh, migrated database with the default catalog and one inference-tier member and key. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const databaseUrl = `${PG_ROOT}/infer_bench_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(databaseUrl);
  await migrateDeploy(databaseUrl);
  const prisma = createPrisma(databaseUrl);
  await new CatalogRepository(prisma).syncFromFile('config/models.yaml');
  const member = await new MembersRepository(prisma).create({ name: 'bench', tier: 'inference' });
  const keys = new ApiKeysRepository(prisma);
  const { key, record } = await keys.mint(member.id, 'bench');
  return {
    databaseUrl,
    prisma,
    key,
    keyId: record.id,
    memberId: member.id,
    keys,
    drop: async () => {
      await prisma.$disconnect().catch(() => undefined);
      await dropDatabase(databaseUrl).catch(() => undefined);
    },
  };
}
