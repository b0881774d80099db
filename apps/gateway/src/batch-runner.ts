// Entry point of the batch runner role (node apps/gateway/dist/batch-runner.js): see batch/runner/app.ts.
import { runMain } from '@infer/runtime/main';

// The runner installs its own SIGTERM/SIGINT handlers (it requeues its jobs before it stops).
void runMain(
  'batch-runner',
  () => import('reflect-metadata').then(() => import('./batch/runner/app.js')),
  (app) => app.startBatchRunner({ installSignalHandlers: true }).then(() => undefined),
);
