// Entry point of the batch runner role (node apps/gateway/dist/batch-runner.js): see batch/runner/app.ts.
import 'reflect-metadata';
import { ConfigError } from '@infer/service-kit';
import { startBatchRunner } from './batch/runner/app.js';

try {
  await startBatchRunner({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
