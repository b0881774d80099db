import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops).
void runMain(
  'image-service',
  () => import('./app.js'),
  (app) => app.startImageService({ installSignalHandlers: true }).then(() => undefined),
);
