// First: Intl formatters made while the modules below load are built on first use (ADR 0015).
import '@infer/service-kit/intl-at-load';
import { ConfigError } from '@infer/service-kit';
import { endIntlDeferral } from '@infer/service-kit/intl-at-load';
import { startGateway } from './app.js';

endIntlDeferral();
try {
  const gw = await startGateway();
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    process.once(sig, () => void gw.close().then(() => process.exit(0)));
  }
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(2);
  }
  console.error('gateway failed to start:', e instanceof Error ? e.message : e);
  process.exit(1);
}
