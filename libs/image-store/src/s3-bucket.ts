import { EMPTY_SHA256, type SigV4Credentials, sha256Hex, signV4 } from './sigv4.js';

/** Where a bucket is and how to reach it: what the image store and the file store share. */
export interface S3BucketOptions extends SigV4Credentials {
  /** `https://s3.eu-west-1.amazonaws.com`, `http://minio:9000`, ... (no bucket in it). */
  endpoint: string;
  bucket: string;
  region: string;
  /** Key prefix inside the bucket, e.g. `images/`. */
  prefix?: string;
  /** `endpoint/bucket/key` (true, the default: MinIO and most S3-compatible stores) or `bucket.endpoint/key`. */
  forcePathStyle?: boolean;
  /** Per-request time limit. */
  timeoutMs?: number;
}

/**
 * One bucket's object URLs and SigV4-signed requests over fetch (S3ImageStore and S3FileStore).
 * A network failure is rethrown as `S3 <method> <host>: <reason>`; answers of any status are returned.
 */
export class S3Bucket {
  private readonly base: URL;
  private readonly timeoutMs: number;

  constructor(
    private readonly opts: S3BucketOptions,
    defaultTimeoutMs: number,
  ) {
    this.base = new URL(opts.endpoint);
    if (!/^https?:$/.test(this.base.protocol)) throw new Error('S3 endpoint must be an http(s) URL');
    this.timeoutMs = opts.timeoutMs ?? defaultTimeoutMs;
  }

  /** The URL of the object `<prefix><key>`, with `query` in its search string. */
  url(key: string, query: Record<string, string> = {}): URL {
    const objectKey = `${this.opts.prefix ?? ''}${key}`;
    const u = new URL(this.base.href);
    const basePath = u.pathname.replace(/\/+$/, '');
    if (this.opts.forcePathStyle === false) {
      u.hostname = `${this.opts.bucket}.${u.hostname}`;
      u.pathname = `${basePath}/${objectKey}`;
    } else {
      u.pathname = `${basePath}/${this.opts.bucket}/${objectKey}`;
    }
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    return u;
  }

  async send(
    method: string,
    url: URL,
    body?: Uint8Array,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const signed = signV4(
      { method, url, headers, payloadHash: body ? sha256Hex(body) : EMPTY_SHA256 },
      this.opts,
      this.opts.region,
      's3',
    );
    try {
      return await fetch(url, {
        method,
        headers: signed,
        body: body ? Buffer.from(body.buffer, body.byteOffset, body.byteLength) : undefined,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new Error(`S3 ${method} ${url.host}: ${(e as Error).message}`);
    }
  }
}
