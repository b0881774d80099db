import { randomUUID } from 'node:crypto';
import type { BlobRef } from '@infer/contracts';
import type { Redis } from 'ioredis';

/**
 * Bytes parked in Redis under a key with a TTL: speech results too large for one NATS message (the
 * gateway reads and deletes them), and the decoded segments of long transcriptions (any worker reads
 * them). Uploads arrive the same way from the gateway (TranscriptionUpload).
 */
export class BlobStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'infer:blob',
  ) {}

  key(kind: string, id: string = randomUUID()): string {
    return `${this.prefix}:${kind}:${id}`;
  }

  async put(key: string, bytes: Buffer, contentType: string, ttlMs: number): Promise<BlobRef> {
    await this.redis.set(key, bytes, 'PX', Math.max(1_000, Math.ceil(ttlMs)));
    return { key, bytes: bytes.length, contentType };
  }

  /** The bytes, or null when the key is gone (expired or never written). */
  get(key: string): Promise<Buffer | null> {
    return this.redis.getBuffer(key);
  }

  async del(...keys: string[]): Promise<void> {
    // One DEL per key: the keys may live in different Redis Cluster slots.
    await Promise.all(keys.map((k) => this.redis.del(k)));
  }
}
