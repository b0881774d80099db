import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops).
void runMain(
  'search-service',
  () => import('./app.js'),
  (app) => app.startSearchService({ installSignalHandlers: true }).then(() => undefined),
);
