import { ConfigError } from '@infer/service-kit';
import { startSearchService } from './app.js';

try {
  await startSearchService({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
