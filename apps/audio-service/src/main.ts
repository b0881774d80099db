import { runMain } from '@infer/runtime/main';

// The app installs its own SIGTERM/SIGINT handlers (it drains its queues before it stops).
void runMain(
  'audio-service',
  () => import('./app.js'),
  (app) => app.startAudioService({ installSignalHandlers: true }).then(() => undefined),
);
