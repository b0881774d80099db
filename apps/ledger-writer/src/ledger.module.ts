import { AppLifetime } from '@infer/runtime';
import { type DynamicModule, Module } from '@nestjs/common';
import { Counter, Gauge, Registry } from 'prom-client';
import type { LedgerWriter } from './app.js';

/** Runs the ledger writer's consumer loop as a Nest provider: started with the app, stopped before it closes. */
export class LedgerWriterHost extends AppLifetime<LedgerWriter> {}

@Module({})
export class LedgerWriterModule {
  static forRoot(host: LedgerWriterHost): DynamicModule {
    return { module: LedgerWriterModule, providers: [{ provide: LedgerWriterHost, useValue: host }] };
  }
}

/** The ledger's metrics, read at scrape time: events written, duplicates skipped, failures, lag. */
export function ledgerMetrics(host: LedgerWriterHost): Registry {
  const registry = new Registry();
  const seen = { inserted: 0, duplicates: 0, rejected: 0, failures: 0, batches: 0 };
  const counter = (name: string, help: string, key: keyof typeof seen) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        const now = host.value?.stats[key] ?? 0;
        if (now > seen[key]) this.inc(now - seen[key]);
        seen[key] = now;
      },
    });
  counter('ledger_events_written_total', 'Usage events written to the PostgreSQL ledger.', 'inserted');
  counter(
    'ledger_events_duplicate_total',
    'Redelivered usage events skipped (already in the ledger).',
    'duplicates',
  );
  counter(
    'ledger_events_rejected_total',
    'Messages on the usage stream that were not usage events.',
    'rejected',
  );
  counter('ledger_write_failures_total', 'Failed attempts to write a batch (each retried).', 'failures');
  counter('ledger_batches_total', 'Batches written.', 'batches');
  new Gauge({
    name: 'ledger_pending_events',
    help: 'Messages of usage events (one event, or a gateway batch of up to USAGE_BATCH_MAX) in the stream not yet delivered to the ledger writer (the ledger lag).',
    registers: [registry],
    async collect() {
      try {
        if (host.value) this.set(await host.value.pending());
      } catch {
        // NATS unreachable during a scrape: leave the last value.
      }
    },
  });
  return registry;
}
