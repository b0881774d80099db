import { ConfigError } from '@infer/service-kit';
import { startImageService } from './app.js';

try {
  await startImageService({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
