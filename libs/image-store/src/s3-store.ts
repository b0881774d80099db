import { S3Bucket, type S3BucketOptions } from './s3-bucket.js';
import { assertImageId, assertTtl, type ImageStore, type StoredImage } from './store.js';

export interface S3StoreOptions extends S3BucketOptions {
  /** Clock for expiry checks (signing always uses real time). */
  now?: () => number;
}

const EXPIRES_META = 'x-amz-meta-expires-at';

/**
 * Images in an S3-compatible bucket with SigV4-signed PUT/GET/DELETE over fetch (no SDK). Object
 * stores have no per-object TTL, so the expiry travels as object metadata (`x-amz-meta-expires-at`,
 * epoch ms) and is enforced on read (an expired object is deleted and reported missing). Add a
 * bucket lifecycle rule (e.g. expire objects under the prefix after 1 day) to reclaim the space of
 * images nobody read after they expired.
 */
export class S3ImageStore implements ImageStore {
  readonly kind = 's3';
  private readonly s3: S3Bucket;

  constructor(private readonly opts: S3StoreOptions) {
    this.s3 = new S3Bucket(opts, 30_000);
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }

  private send(
    method: 'PUT' | 'GET' | 'DELETE',
    id: string,
    body?: Uint8Array,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    return this.s3.send(method, this.s3.url(id), body, headers);
  }

  async put(id: string, bytes: Uint8Array, contentType: string, ttlSeconds: number): Promise<void> {
    assertImageId(id);
    assertTtl(ttlSeconds);
    const expiresAt = this.now() + ttlSeconds * 1000;
    const res = await this.send('PUT', id, bytes, {
      'content-type': contentType,
      [EXPIRES_META]: String(expiresAt),
    });
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok) throw new Error(`S3 PUT failed with status ${res.status}`);
  }

  async get(id: string): Promise<StoredImage | null> {
    assertImageId(id);
    const res = await this.send('GET', id);
    if (res.status === 404) {
      await res.arrayBuffer().catch(() => undefined);
      return null;
    }
    if (!res.ok) {
      await res.arrayBuffer().catch(() => undefined);
      throw new Error(`S3 GET failed with status ${res.status}`);
    }
    const expiresAt = Number(res.headers.get(EXPIRES_META));
    if (!Number.isFinite(expiresAt) || this.now() >= expiresAt) {
      await res.arrayBuffer().catch(() => undefined);
      await this.delete(id).catch(() => undefined);
      return null;
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    return {
      bytes,
      contentType: res.headers.get('content-type') ?? 'application/octet-stream',
      expiresAt,
    };
  }

  async delete(id: string): Promise<void> {
    assertImageId(id);
    const res = await this.send('DELETE', id);
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok && res.status !== 404) throw new Error(`S3 DELETE failed with status ${res.status}`);
  }

  async close(): Promise<void> {}
}
