import { ConfigError } from '@infer/service-kit';
import { startChatService } from './app.js';

try {
  await startChatService({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
