/**
 * Temporary image storage behind ONE interface. Generated images (and the input images of an edit
 * while its job runs) are kept here for a limited time and read back by id: by the gateway to serve
 * signed URLs and b64_json answers, by the image workers to read the inputs of an edit. Images never
 * travel through NATS (its default max payload is 1 MB); ids do.
 *
 * Implementations: Redis (default; `redis-store.ts`), the filesystem (`fs-store.ts`) and any
 * S3-compatible object store (`s3-store.ts`, SigV4-signed requests with fetch).
 */
export interface StoredImage {
  bytes: Buffer;
  contentType: string;
  /** Epoch milliseconds after which the image is gone. */
  expiresAt: number;
}

export interface ImageStore {
  /** `redis`, `fs` or `s3`, for logs. */
  readonly kind: string;
  /** Keeps `bytes` under `id` for `ttlSeconds` (replacing an earlier value). */
  put(id: string, bytes: Uint8Array, contentType: string, ttlSeconds: number): Promise<void>;
  /** The image, or null when it does not exist or has expired. */
  get(id: string): Promise<StoredImage | null>;
  /** Removes the image; no error when it does not exist. */
  delete(id: string): Promise<void>;
  /** Releases what the store owns (connections it opened, timers). */
  close(): Promise<void>;
}

/** Ids are opaque, URL- and file-name-safe: letters, digits, `_` and `-`, 8 to 128 characters. */
export const IMAGE_ID_RE = /^[A-Za-z0-9_-]{8,128}$/;

export function assertImageId(id: string): void {
  if (!IMAGE_ID_RE.test(id)) throw new Error(`invalid image id '${id.slice(0, 40)}'`);
}

export function assertTtl(ttlSeconds: number): void {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) throw new Error(`invalid ttl ${ttlSeconds}`);
}
