import { runMain } from '@infer/runtime/main';

// SIGTERM/SIGINT close the gateway (runMain): in-flight requests finish, usage is flushed.
void runMain(
  'gateway',
  () => import('./app.js'),
  (app) => app.startGateway(),
);
