import { ConfigError } from '@infer/service-kit';
import { startEmbeddingService } from './app.js';

try {
  await startEmbeddingService({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
