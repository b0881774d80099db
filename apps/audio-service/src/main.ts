import { ConfigError } from '@infer/service-kit';
import { startAudioService } from './app.js';

try {
  await startAudioService({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
