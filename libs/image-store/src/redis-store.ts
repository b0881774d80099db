import type { Redis } from 'ioredis';
import { assertImageId, assertTtl, type ImageStore, type StoredImage } from './store.js';

/**
 * Images in Redis (the default): one hash per image (`ct` content type, `b` bytes), expired by Redis
 * itself (PEXPIRE), so nothing needs sweeping. Suits the ~60-minute life of generated images; mind
 * Redis memory (a 1024x1024 PNG is 0.1-3 MB) and use the S3 store for large volumes.
 */
export class RedisImageStore implements ImageStore {
  readonly kind = 'redis';

  /**
   * @param redis a connection; closed by close() only when `ownsConnection` is true.
   * @param prefix key prefix, e.g. `infer:image:`.
   */
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'infer:image:',
    private readonly ownsConnection = false,
  ) {}

  async put(id: string, bytes: Uint8Array, contentType: string, ttlSeconds: number): Promise<void> {
    assertImageId(id);
    assertTtl(ttlSeconds);
    const key = this.prefix + id;
    const res = await this.redis
      .multi()
      .del(key)
      .hset(key, 'ct', contentType, 'b', Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      .pexpire(key, ttlSeconds * 1000)
      .exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw failed?.[0] ?? new Error('redis transaction aborted');
  }

  async get(id: string): Promise<StoredImage | null> {
    assertImageId(id);
    const key = this.prefix + id;
    const res = await this.redis.multi().hgetallBuffer(key).pttl(key).exec();
    if (!res) throw new Error('redis transaction aborted');
    const [[e1, hash], [e2, pttl]] = res as [[Error | null, Record<string, Buffer>], [Error | null, number]];
    if (e1 || e2) throw e1 ?? e2;
    if (!hash?.b || !hash.ct || pttl < 0) return null;
    return { bytes: hash.b, contentType: hash.ct.toString('utf8'), expiresAt: Date.now() + pttl };
  }

  async delete(id: string): Promise<void> {
    assertImageId(id);
    await this.redis.del(this.prefix + id);
  }

  async close(): Promise<void> {
    if (this.ownsConnection) this.redis.disconnect();
  }
}
