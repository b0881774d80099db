import { jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Creates the durable usage stream when it is missing (idempotent; every gateway replica and the
 * ledger writer may call it). Work-queue retention: an event leaves the stream once the ledger writer
 * has stored and acknowledged it. A publish retried within 10 minutes is stored once (message id =
 * request id). `replicas`: copies of the stream in a NATS cluster (USAGE_STREAM_REPLICAS, default 1; 3 on
 * the production cluster of k8s/reference, so that losing a node loses no usage event).
 */
export async function ensureUsageStream(
  nc: NatsConnection,
  name: string,
  subjects: string[],
  replicas = usageStreamReplicas(),
): Promise<void> {
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
        num_replicas: replicas,
      });
    } catch (e) {
      // Another replica may have created it between our info and add.
      await jsm.streams.info(name).catch(() => {
        throw e;
      });
    }
  }
}

/** USAGE_STREAM_REPLICAS: 1 to 5 (JetStream's limit), default 1; anything else stops the start. */
export function usageStreamReplicas(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.USAGE_STREAM_REPLICAS?.trim();
  if (!raw) return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 5) {
    throw new Error(`USAGE_STREAM_REPLICAS must be an integer from 1 to 5, got '${raw}'`);
  }
  return n;
}
