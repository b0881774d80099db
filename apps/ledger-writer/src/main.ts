import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops).
void runMain(
  'ledger-writer',
  () => import('./app.js'),
  (app) => app.startLedgerWriter({ installSignalHandlers: true }).then(() => undefined),
);
