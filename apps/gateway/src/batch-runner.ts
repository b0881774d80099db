// Entry point of the batch runner role (node apps/gateway/dist/batch-runner.js): see batch/runner/app.ts.
// First: Intl formatters made while the modules below load are built on first use (ADR 0015).
import '@infer/service-kit/intl-at-load';
import { endIntlDeferral } from '@infer/service-kit/intl-at-load';
import 'reflect-metadata';
import { ConfigError } from '@infer/service-kit';
import { startBatchRunner } from './batch/runner/app.js';

endIntlDeferral();
try {
  await startBatchRunner({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
