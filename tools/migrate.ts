// Prisma migrations offline, through the wasm schema engine (the Prisma CLI would start the native
// engine, which is a download). Usage:
//   node --conditions=source --import ./tools/ts-register.js tools/migrate.ts create <name> [--empty]
//   node --conditions=source --import ./tools/ts-register.js tools/migrate.ts deploy
//   node --conditions=source --import ./tools/ts-register.js tools/migrate.ts status [--json]
// DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/infer). `create` diffs
// prisma/schema.prisma against prisma/migrations on a throw-away shadow database and writes
// prisma/migrations/<timestamp>_<name>/migration.sql; `deploy` creates the database if needed and
// applies what is pending (recorded in _prisma_migrations); `status` compares the two.
// Set MIGRATE_LOG=1 to see the engine's log.
import { parseArgs } from 'node:util';
import {
  createMigration,
  databaseUrlFromEnv,
  migrateDeploy,
  migrateStatus,
  redactUrl,
} from '@infer/persistence/migrate';

const USAGE = `usage: tools/migrate.ts <create <name> [--empty] | deploy | status> [--json]`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      empty: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const url = databaseUrlFromEnv();
  const onLog = process.env.MIGRATE_LOG
    ? (line: { level: string; fields?: { message?: string } }) =>
        console.error(`[engine ${line.level}] ${line.fields?.message ?? JSON.stringify(line)}`)
    : undefined;
  const out = (human: string, data: unknown) =>
    console.log(values.json ? JSON.stringify(data, null, 2) : human);

  switch (command) {
    case 'create': {
      const name = rest[0];
      if (!name) {
        console.error(`missing migration name\n${USAGE}`);
        return 2;
      }
      const r = await createMigration(url, name, { empty: values.empty, onLog });
      out(r.path ? `created ${r.path}` : 'no changes: schema.prisma matches the migrations', r);
      return 0;
    }
    case 'deploy': {
      const r = await migrateDeploy(url, { onLog });
      const lines = [
        r.createdDatabase ? `created database ${redactUrl(url)}` : null,
        r.applied.length
          ? `applied ${r.applied.length} migration(s):\n  ${r.applied.join('\n  ')}`
          : 'no pending migrations',
        `usage partitions: ${r.partitions.join(', ')}`,
      ];
      out(lines.filter(Boolean).join('\n'), r);
      return 0;
    }
    case 'status': {
      const s = await migrateStatus(url, { onLog });
      const lines = [`database ${redactUrl(url)}${s.databaseExists ? '' : ' (does not exist)'}`];
      for (const m of s.migrations)
        lines.push(`  ${m.appliedAt ? `applied ${m.appliedAt}` : 'pending             '}  ${m.name}`);
      if (s.failed.length) lines.push(`failed: ${s.failed.join(', ')}`);
      if (s.edited.length) lines.push(`edited after being applied: ${s.edited.join(', ')}`);
      if (s.unknown.length) lines.push(`applied but not in prisma/migrations: ${s.unknown.join(', ')}`);
      lines.push(
        s.upToDate
          ? 'database schema is up to date'
          : s.pending.length
            ? `${s.pending.length} pending migration(s)`
            : 'not up to date',
      );
      out(lines.join('\n'), s);
      return s.upToDate ? 0 : 1;
    }
    default:
      console.error(`unknown command: ${command}\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`migrate: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
