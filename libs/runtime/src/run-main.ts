// The one static import: memory.ts loads Node built-ins only, so the deferral below begins before
// anything that could make a formatter loads. The app's modules (and config.ts) are loaded by runMain,
// after this.
import { beginIntlDeferral, endIntlDeferral } from './memory.js';

beginIntlDeferral();

/** What an app's start function may hand back: something to close on SIGTERM/SIGINT. */
export interface Closable {
  close?(): Promise<void>;
  stop?(): Promise<void>;
}

/**
 * The one start-up of every entry point (`src/main.ts`), so that none has to remember an incantation:
 *
 *   import { runMain } from '@infer/runtime/main';
 *   runMain('gateway', () => import('./app.js'), (app) => app.startGateway());
 *
 * 1. The Intl deferral (ADR 0015) is on while `load` imports the app's modules, and ends before `start`
 *    runs: formatters made by Nest's modules as they load are built on first use, ours are real.
 * 2. Exit codes: a configuration error prints its message and exits 2 (the app did not start and will not
 *    until its environment is fixed); any other start-up failure prints one line and exits 1.
 * 3. Signals: when `start` returns something closable and the app does not install its own handlers,
 *    SIGTERM/SIGINT close it once and exit 0.
 */
export async function runMain<M>(
  name: string,
  load: () => Promise<M>,
  start: (app: M) => Promise<Closable | unknown>,
): Promise<void> {
  try {
    const app = await load();
    endIntlDeferral();
    const running = (await start(app)) as Closable | undefined;
    const close = running?.close?.bind(running) ?? running?.stop?.bind(running);
    if (close) {
      let closing = false;
      for (const sig of ['SIGTERM', 'SIGINT'] as const) {
        process.once(sig, () => {
          if (closing) return;
          closing = true;
          void close().then(
            () => process.exit(0),
            (e: unknown) => {
              console.error(`${name} did not close cleanly:`, e instanceof Error ? e.message : e);
              process.exit(1);
            },
          );
        });
      }
    }
  } catch (e) {
    const { ConfigError } = await import('./config.js');
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(2);
    }
    console.error(`${name} failed to start:`, e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  }
}
