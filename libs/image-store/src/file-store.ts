import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { envBool, envInt } from '@infer/runtime';
import { z } from 'zod';
import { S3Bucket, type S3BucketOptions } from './s3-bucket.js';

/**
 * Large files streamed in and out (the Files API: batch inputs up to 200 MB and batch outputs):
 * never held whole in memory. Same backends as the image store, filesystem by default, any
 * S3-compatible store in production. Retention is the caller's (the File rows say when a file
 * expires; the gateway deletes expired ones).
 */
export interface FileStore {
  readonly kind: string;
  /** Streams `source` under `key` (replacing an earlier object); visible only once complete. Returns its size. */
  put(key: string, source: AsyncIterable<Uint8Array>): Promise<number>;
  /** The object's bytes as a stream, or null when it does not exist. */
  get(key: string): Promise<Readable | null>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

/** Keys: letters, digits, `_`, `-` and `.`, 1 to 200 characters (no paths). */
export const FILE_KEY_RE = /^[A-Za-z0-9_.-]{1,200}$/;
function assertKey(key: string): void {
  if (!FILE_KEY_RE.test(key) || key.startsWith('.'))
    throw new Error(`invalid file key '${key.slice(0, 40)}'`);
}

/** Files in one directory, written to a temporary name and renamed when complete. */
export class FsFileStore implements FileStore {
  readonly kind = 'fs';
  private ready: Promise<unknown> | undefined;

  constructor(private readonly dir: string) {}

  async put(key: string, source: AsyncIterable<Uint8Array>): Promise<number> {
    assertKey(key);
    this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.ready;
    const tmp = join(this.dir, `.${key}.${randomBytes(6).toString('hex')}.tmp`);
    let bytes = 0;
    try {
      await pipeline(
        source,
        async function* (src: AsyncIterable<Uint8Array>) {
          for await (const chunk of src) {
            bytes += chunk.byteLength;
            yield chunk;
          }
        },
        createWriteStream(tmp, { mode: 0o600 }),
      );
      await rename(tmp, join(this.dir, key));
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
    return bytes;
  }

  async get(key: string): Promise<Readable | null> {
    assertKey(key);
    const path = join(this.dir, key);
    const st = await stat(path).catch(() => null);
    if (!st) return null;
    return createReadStream(path, { highWaterMark: 256 * 1024 });
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    await rm(join(this.dir, key), { force: true });
  }

  async close(): Promise<void> {}
}

export interface S3FileStoreOptions extends S3BucketOptions {
  /** Size of each multipart-upload part held in memory while it is sent (S3's minimum is 5 MiB). */
  partBytes?: number;
}

/**
 * Files in an S3-compatible bucket, streamed with a multipart upload (one part of `partBytes` in
 * memory at a time) and read back as a stream. SigV4-signed requests over fetch, as S3ImageStore.
 */
export class S3FileStore implements FileStore {
  readonly kind = 's3';
  private readonly s3: S3Bucket;

  constructor(private readonly opts: S3FileStoreOptions) {
    this.s3 = new S3Bucket(opts, 60_000);
  }

  async put(key: string, source: AsyncIterable<Uint8Array>): Promise<number> {
    assertKey(key);
    const partBytes = Math.max(5 * 1024 * 1024, this.opts.partBytes ?? 8 * 1024 * 1024);
    const created = await this.s3.send('POST', this.s3.url(key, { uploads: '' }));
    const xml = await created.text();
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(xml)?.[1];
    if (!created.ok || !uploadId)
      throw new Error(`S3 multipart upload not started (status ${created.status})`);
    const etags: string[] = [];
    let total = 0;
    const sendPart = async (buf: Buffer) => {
      const n = etags.length + 1;
      const res = await this.s3.send('PUT', this.s3.url(key, { partNumber: String(n), uploadId }), buf);
      await res.arrayBuffer().catch(() => undefined);
      const etag = res.headers.get('etag');
      if (!res.ok || !etag) throw new Error(`S3 upload of part ${n} failed with status ${res.status}`);
      etags.push(etag);
    };
    try {
      let pending: Buffer[] = [];
      let size = 0;
      for await (const chunk of source) {
        pending.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
        size += chunk.byteLength;
        total += chunk.byteLength;
        if (size >= partBytes) {
          await sendPart(Buffer.concat(pending, size));
          pending = [];
          size = 0;
        }
      }
      if (size > 0 || etags.length === 0) await sendPart(Buffer.concat(pending, size));
      const body = Buffer.from(
        `<CompleteMultipartUpload>${etags
          .map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`)
          .join('')}</CompleteMultipartUpload>`,
      );
      const done = await this.s3.send('POST', this.s3.url(key, { uploadId }), body, {
        'content-type': 'application/xml',
      });
      const text = await done.text();
      if (!done.ok || text.includes('<Error>'))
        throw new Error(`S3 multipart upload not completed (status ${done.status})`);
    } catch (e) {
      const res = await this.s3.send('DELETE', this.s3.url(key, { uploadId })).catch(() => null);
      await res?.arrayBuffer().catch(() => undefined);
      throw e;
    }
    return total;
  }

  async get(key: string): Promise<Readable | null> {
    assertKey(key);
    const res = await this.s3.send('GET', this.s3.url(key));
    if (res.status === 404) {
      await res.arrayBuffer().catch(() => undefined);
      return null;
    }
    if (!res.ok || !res.body) {
      await res.arrayBuffer().catch(() => undefined);
      throw new Error(`S3 GET failed with status ${res.status}`);
    }
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    const res = await this.s3.send('DELETE', this.s3.url(key));
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok && res.status !== 404) throw new Error(`S3 DELETE failed with status ${res.status}`);
  }

  async close(): Promise<void> {}
}

/** Environment of the file store: every process that reads or writes files (gateway, batch runner). */
export const FileStoreEnvShape = {
  FILE_STORE: z
    .enum(['fs', 's3'])
    .default('fs')
    .describe(
      'Where /v1/files keeps its bytes: fs or s3; the same store for the gateway and the batch runner.',
    ),
  FILE_STORE_DIR: z
    .string()
    .min(1)
    .default('var/files')
    .describe('Directory of the fs store (a shared volume when the gateway and the batch runner run apart).'),
  FILE_S3_ENDPOINT: z
    .string()
    .url()
    .optional()
    .describe('S3 store: endpoint URL (required with FILE_STORE=s3).'),
  FILE_S3_BUCKET: z.string().min(1).optional().describe('S3 store: bucket (required with FILE_STORE=s3).'),
  FILE_S3_REGION: z
    .string()
    .min(1)
    .default('us-east-1')
    .describe('S3 store: region of the request signatures.'),
  FILE_S3_ACCESS_KEY_ID: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: access key id (required with FILE_STORE=s3).'),
  FILE_S3_SECRET_ACCESS_KEY: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: secret access key (required with FILE_STORE=s3; from a Secret).'),
  FILE_S3_SESSION_TOKEN: z
    .string()
    .min(1)
    .optional()
    .describe('S3 store: session token of temporary credentials.'),
  FILE_S3_PREFIX: z.string().default('files/').describe('S3 store: key prefix of the objects.'),
  FILE_S3_FORCE_PATH_STYLE: envBool(true).describe(
    'S3 store: path-style URLs (endpoint/bucket/key), as MinIO and most S3-compatible servers need.',
  ),
  FILE_S3_TIMEOUT_MS: envInt(60_000, 100).describe('S3 store: longest wait for one S3 request (ms).'),
};
export type FileStoreEnv = z.output<z.ZodObject<typeof FileStoreEnvShape>>;

export function checkFileStoreEnv(env: Partial<FileStoreEnv>, ctx: z.RefinementCtx): void {
  if (env.FILE_STORE !== 's3') return;
  for (const name of [
    'FILE_S3_ENDPOINT',
    'FILE_S3_BUCKET',
    'FILE_S3_ACCESS_KEY_ID',
    'FILE_S3_SECRET_ACCESS_KEY',
  ] as const) {
    if (!env[name]) ctx.addIssue({ code: 'custom', message: 'required when FILE_STORE=s3', path: [name] });
  }
}

export function createFileStore(env: FileStoreEnv): FileStore {
  if (env.FILE_STORE === 's3') {
    return new S3FileStore({
      endpoint: env.FILE_S3_ENDPOINT!,
      bucket: env.FILE_S3_BUCKET!,
      region: env.FILE_S3_REGION,
      accessKeyId: env.FILE_S3_ACCESS_KEY_ID!,
      secretAccessKey: env.FILE_S3_SECRET_ACCESS_KEY!,
      sessionToken: env.FILE_S3_SESSION_TOKEN,
      prefix: env.FILE_S3_PREFIX,
      forcePathStyle: env.FILE_S3_FORCE_PATH_STYLE,
      timeoutMs: env.FILE_S3_TIMEOUT_MS,
    });
  }
  return new FsFileStore(env.FILE_STORE_DIR);
}
