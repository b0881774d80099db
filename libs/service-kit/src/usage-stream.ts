import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Creates the durable usage stream when it is missing (idempotent; every gateway replica and the
 * ledger writer may call it). Work-queue retention: an event leaves the stream once the ledger writer
 * has stored and acknowledged it. A publish retried within 10 minutes is stored once (message id =
 * request id).
 */
export async function ensureUsageStream(nc: NatsConnection, name: string, subjects: string[]): Promise<void> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(name);
  } catch {
    try {
      await jsm.streams.add({
        name,
        subjects,
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        duplicate_window: 10 * 60 * 1_000_000_000, // ns
      });
    } catch (e) {
      // Another replica may have created it between our info and add.
      await jsm.streams.info(name).catch(() => {
        throw e;
      });
    }
  }
}
