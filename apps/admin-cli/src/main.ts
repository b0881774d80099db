// Entry point of the admin CLI: `npm run admin -- <command>` (see cli.ts for the commands).
import { run } from './cli.js';

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
