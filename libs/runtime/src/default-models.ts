import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type CatalogEntry, CatalogFileSchema } from '@infer/contracts';
import type { Logger } from '@infer/telemetry';
import { parse } from 'yaml';
import type { ReadinessCheck } from './nest/ops-server.js';

export interface DefaultModelsOptions {
  /** The catalog kinds this service serves (e.g. ['embedding', 'rerank']). */
  kinds: readonly string[];
  /** Loads one model's engine (e.g. `registry.get(model).ready()`); a throw means it cannot serve. */
  load(model: CatalogEntry): Promise<unknown>;
  log: Logger;
  /** The catalog file; default CATALOG_FILE, else config/models.yaml under the working directory. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Wait before trying a failed load again (ms); default 30 s. */
  retryMs?: number;
}

export interface DefaultModels {
  /** The readiness check `models`: true once every default model of this service has loaded. */
  check: ReadinessCheck;
  /** Settles when the first round of loads has (loaded or not). */
  settled: Promise<void>;
  stop(): void;
}

/**
 * Readiness that means "can serve its default models": loads, at start, the engine of every model of the
 * catalog file that this service serves (the models the deployment ships with), and reports ready only
 * when each one has loaded. A model whose engine cannot load (a missing package, a bad setting) keeps the
 * service not ready and is logged as an error, and is tried again every `retryMs`. Without a catalog file
 * there are no default models (the check passes).
 */
export function loadDefaultModels(opts: DefaultModelsOptions): DefaultModels {
  const env = opts.env ?? process.env;
  const file = resolve(opts.file ?? env.CATALOG_FILE ?? 'config/models.yaml');
  let models: CatalogEntry[] = [];
  let failed = '';
  try {
    const catalog = CatalogFileSchema.parse(parse(readFileSync(file, 'utf8')));
    models = catalog.models.filter((m) => opts.kinds.includes(m.kind));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      failed = `catalog ${file}`;
      opts.log.error({ err, file }, 'the catalog file cannot be read: not ready');
    }
  }
  const pending = new Set(models.map((m) => m.id));
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const round = async (): Promise<void> => {
    await Promise.all(
      models
        .filter((m) => pending.has(m.id))
        .map(async (m) => {
          try {
            await opts.load(m);
            pending.delete(m.id);
            opts.log.info(
              { model: m.id, engine: (m.engine as { type?: string }).type },
              'default model loaded',
            );
          } catch (err) {
            opts.log.error(
              { err, model: m.id, engine: (m.engine as { type?: string }).type },
              'default model cannot load: not ready',
            );
          }
        }),
    );
    if (pending.size && !stopped) {
      timer = setTimeout(() => void round(), opts.retryMs ?? 30_000);
      timer.unref();
    }
  };
  const settled = round();
  return {
    check: { name: 'models', check: () => !failed && pending.size === 0 },
    settled,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
