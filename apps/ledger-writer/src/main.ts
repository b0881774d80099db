import { ConfigError } from '@infer/service-kit';
import { startLedgerWriter } from './app.js';

try {
  await startLedgerWriter({ installSignalHandlers: true });
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(1);
  }
  throw e;
}
