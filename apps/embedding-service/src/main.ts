import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops); a process
// started from here loads its default models before it reports ready.
void runMain(
  'embedding-service',
  () => import('./app.js'),
  (app) =>
    app.startEmbeddingService({ installSignalHandlers: true, loadDefaultModels: true }).then(() => undefined),
);
