import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops).
void runMain(
  'chat-service',
  () => import('./app.js'),
  (app) => app.startChatService({ installSignalHandlers: true }).then(() => undefined),
);
