// First: Intl formatters made while the modules below load are built on first use (ADR 0015).
import '@infer/service-kit/intl-at-load';
import { ConfigError } from '@infer/service-kit';
import { endIntlDeferral } from '@infer/service-kit/intl-at-load';
import { startEmbeddingService } from './app.js';

endIntlDeferral();
try {
  await startEmbeddingService({ installSignalHandlers: true, loadDefaultModels: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
