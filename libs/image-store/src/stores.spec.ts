import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createImageStore, ImageStoreEnvSchema } from './config.js';
import { S3FileStore } from './file-store.js';
import { FsImageStore } from './fs-store.js';
import { RedisImageStore } from './redis-store.js';
import { S3ImageStore } from './s3-store.js';
import { sha256Hex, signV4 } from './sigv4.js';
import type { ImageStore } from './store.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const id = () => `img_${randomBytes(12).toString('base64url')}`;

/** The behaviour every store must have; `advance` moves the store's clock (or waits for real TTLs). */
function contract(name: string, make: () => { store: ImageStore; advance: (ms: number) => Promise<void> }) {
  describe(`${name} image store`, () => {
    let store: ImageStore;
    let advance: (ms: number) => Promise<void>;
    before(() => {
      ({ store, advance } = make());
    });
    after(async () => {
      await store.close();
    });

    it('puts and gets bytes and content type, byte for byte', async () => {
      const k = id();
      const bytes = randomBytes(200_000);
      await store.put(k, bytes, 'image/png', 60);
      const got = await store.get(k);
      assert.ok(got);
      assert.equal(got.contentType, 'image/png');
      assert.ok(got.bytes.equals(bytes));
      assert.ok(got.expiresAt > Date.now() + 50_000 && got.expiresAt <= Date.now() + 61_000);
    });

    it('answers null for an unknown id and after delete (delete twice is fine)', async () => {
      assert.equal(await store.get(id()), null);
      const k = id();
      await store.put(k, Buffer.from('x'), 'image/webp', 60);
      await store.delete(k);
      await store.delete(k);
      assert.equal(await store.get(k), null);
    });

    it('replaces an earlier value under the same id', async () => {
      const k = id();
      await store.put(k, Buffer.from('first'), 'image/png', 60);
      await store.put(k, Buffer.from('second'), 'image/jpeg', 60);
      const got = await store.get(k);
      assert.equal(got?.bytes.toString(), 'second');
      assert.equal(got?.contentType, 'image/jpeg');
    });

    it('forgets an image after its ttl', async () => {
      const k = id();
      await store.put(k, Buffer.from('short-lived'), 'image/png', 1);
      assert.ok(await store.get(k));
      await advance(1_100);
      assert.equal(await store.get(k), null);
    });

    it('refuses unsafe ids and bad ttls', async () => {
      await assert.rejects(
        store.put('../../etc/passwd', Buffer.from('x'), 'image/png', 60),
        /invalid image id/,
      );
      await assert.rejects(store.get('a/b'), /invalid image id/);
      await assert.rejects(store.put(id(), Buffer.from('x'), 'image/png', 0), /invalid ttl/);
    });
  });
}

// ---- Redis: the machine's Redis, a private key prefix, real TTLs ----
const redis = new Redis(REDIS_URL, { lazyConnect: true });
const redisPrefix = `test:image-store:${randomBytes(4).toString('hex')}:`;
contract('redis', () => ({
  store: new RedisImageStore(redis, redisPrefix),
  advance: (ms) => new Promise((r) => setTimeout(r, ms)),
}));
after(async () => {
  const keys = await redis.keys(`${redisPrefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

// ---- filesystem: a temporary directory, an injectable clock ----
let fsNow = Date.now();
const fsDir = await mkdtemp(join(tmpdir(), 'image-store-'));
contract('fs', () => ({
  store: new FsImageStore(fsDir, { now: () => fsNow, sweepIntervalMs: 0 }),
  advance: async (ms) => {
    fsNow += ms;
  },
}));
after(async () => {
  await rm(fsDir, { recursive: true, force: true });
});

describe('fs image store sweep', () => {
  it('removes expired images from disk and keeps live ones', async () => {
    let now = Date.now();
    const dir = await mkdtemp(join(tmpdir(), 'image-store-sweep-'));
    const store = new FsImageStore(dir, { now: () => now, sweepIntervalMs: 0 });
    const live = id();
    const old = id();
    await store.put(old, Buffer.from('old'), 'image/png', 1);
    await store.put(live, Buffer.from('live'), 'image/png', 100);
    now += 2_000;
    assert.equal(await store.sweep(), 1);
    assert.deepEqual((await readdir(dir)).sort(), [`${live}.img`, `${live}.json`].sort());
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});

// ---- S3: a small S3-like HTTP server that checks every request's SigV4 signature ----
/**
 * Accepts PUT/GET/DELETE on /<bucket>/<key>, keeps objects in memory with their content type and
 * x-amz-meta-* headers, and refuses (403) any request whose Authorization does not match a signature
 * recomputed from what actually arrived on the wire (method, path, the signed headers as received,
 * the body's SHA-256), or whose x-amz-content-sha256 is not the body's hash.
 */
class FakeS3 {
  readonly objects = new Map<string, { body: Buffer; headers: Record<string, string> }>();
  readonly uploads = new Map<string, Map<number, { body: Buffer; etag: string }>>();
  readonly partSizes: number[] = [];
  private uploadSeq = 0;
  rejected = 0;
  private server!: Server;
  endpoint = '';

  constructor(
    private readonly creds: { accessKeyId: string; secretAccessKey: string },
    private readonly region: string,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (!this.verify(req, body)) {
          this.rejected++;
          res
            .writeHead(403, { 'content-type': 'application/xml' })
            .end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
          return;
        }
        const u = new URL(req.url ?? '/', 'http://x');
        const key = decodeURIComponent(u.pathname);
        // Multipart uploads (S3FileStore): create, parts, complete, abort.
        const uploadId = u.searchParams.get('uploadId');
        if (req.method === 'POST' && u.searchParams.has('uploads')) {
          const id = `up${++this.uploadSeq}`;
          this.uploads.set(id, new Map());
          res
            .writeHead(200)
            .end(`<InitiateMultipartUploadResult><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`);
          return;
        }
        if (uploadId) {
          const parts = this.uploads.get(uploadId);
          if (!parts) {
            res.writeHead(404).end('<Error><Code>NoSuchUpload</Code></Error>');
          } else if (req.method === 'PUT') {
            const etag = `"${sha256Hex(body).slice(0, 32)}"`;
            parts.set(Number(u.searchParams.get('partNumber')), { body, etag });
            res.writeHead(200, { etag }).end();
          } else if (req.method === 'POST') {
            const listed = [
              ...body.toString().matchAll(/<PartNumber>(\d+)<\/PartNumber><ETag>([^<]+)<\/ETag>/g),
            ];
            const ok = listed.every(([, n, e]) => parts.get(Number(n))?.etag === e);
            if (!ok) {
              res.writeHead(400).end('<Error><Code>InvalidPart</Code></Error>');
              return;
            }
            this.partSizes.push(...listed.map(([, n]) => parts.get(Number(n))!.body.length));
            this.objects.set(key, {
              body: Buffer.concat(listed.map(([, n]) => parts.get(Number(n))!.body)),
              headers: {},
            });
            this.uploads.delete(uploadId);
            res.writeHead(200).end('<CompleteMultipartUploadResult></CompleteMultipartUploadResult>');
          } else if (req.method === 'DELETE') {
            this.uploads.delete(uploadId);
            res.writeHead(204).end();
          }
          return;
        }
        if (req.method === 'PUT') {
          const headers: Record<string, string> = { 'content-type': String(req.headers['content-type']) };
          for (const [k, v] of Object.entries(req.headers))
            if (k.startsWith('x-amz-meta-')) headers[k] = String(v);
          this.objects.set(key, { body, headers });
          res.writeHead(200, { etag: `"${sha256Hex(body).slice(0, 32)}"` }).end();
        } else if (req.method === 'GET') {
          const o = this.objects.get(key);
          if (!o)
            res
              .writeHead(404, { 'content-type': 'application/xml' })
              .end('<Error><Code>NoSuchKey</Code></Error>');
          else res.writeHead(200, { ...o.headers, 'content-length': String(o.body.length) }).end(o.body);
        } else if (req.method === 'DELETE') {
          this.objects.delete(key);
          res.writeHead(204).end();
        } else {
          res.writeHead(405).end();
        }
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private verify(req: IncomingMessage, body: Buffer): boolean {
    const auth = String(req.headers.authorization ?? '');
    const m =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request,SignedHeaders=([a-z0-9;-]+),Signature=([0-9a-f]{64})$/.exec(
        auth,
      );
    if (!m || m[1] !== this.creds.accessKeyId || m[3] !== this.region) return false;
    const hash = String(req.headers['x-amz-content-sha256'] ?? '');
    if (hash !== sha256Hex(body)) return false;
    const stamp = String(req.headers['x-amz-date'] ?? '');
    const d = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp);
    if (!d || stamp.slice(0, 8) !== m[2]) return false;
    const date = new Date(Date.UTC(+d[1]!, +d[2]! - 1, +d[3]!, +d[4]!, +d[5]!, +d[6]!));
    if (Math.abs(Date.now() - date.getTime()) > 15 * 60_000) return false;
    const signed = m[4]!.split(';');
    for (const required of ['host', 'x-amz-date', 'x-amz-content-sha256'])
      if (!signed.includes(required)) return false;
    const headers: Record<string, string> = {};
    for (const name of signed) {
      if (name === 'host' || name === 'x-amz-date' || name === 'x-amz-content-sha256') continue;
      const v = req.headers[name];
      if (v === undefined) return false;
      headers[name] = String(v);
    }
    const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
    const expected = signV4(
      { method: req.method ?? 'GET', url, headers, payloadHash: hash },
      this.creds,
      this.region,
      's3',
      date,
    );
    return expected.authorization === auth;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

const s3Creds = { accessKeyId: 'TESTACCESSKEY', secretAccessKey: 'test/secret+key' };
const fake = new FakeS3(s3Creds, 'eu-central-1');
await fake.start();
let s3Now = Date.now();
contract('s3', () => ({
  store: new S3ImageStore({
    endpoint: fake.endpoint,
    bucket: 'imgs',
    region: 'eu-central-1',
    prefix: 'gen/',
    ...s3Creds,
    now: () => s3Now,
  }),
  advance: async (ms) => {
    s3Now += ms;
  },
}));
after(() => fake.stop());

describe('s3 image store against the signature-checking server', () => {
  it('stores under <bucket>/<prefix><id> with the expiry as metadata, and every request was signed right', async () => {
    const store = new S3ImageStore({
      endpoint: fake.endpoint,
      bucket: 'imgs',
      region: 'eu-central-1',
      prefix: 'gen/',
      ...s3Creds,
    });
    const k = id();
    const rejectedBefore = fake.rejected;
    await store.put(k, Buffer.from('png-bytes'), 'image/png', 120);
    const o = fake.objects.get(`/imgs/gen/${k}`);
    assert.ok(o, 'object at the path-style key');
    assert.equal(o.headers['content-type'], 'image/png');
    const exp = Number(o.headers['x-amz-meta-expires-at']);
    assert.ok(exp > Date.now() + 100_000 && exp <= Date.now() + 121_000);
    assert.equal((await store.get(k))?.bytes.toString(), 'png-bytes');
    assert.equal(fake.rejected, rejectedBefore);
  });

  it('fails loudly (no secret in the message) when the server refuses the signature', async () => {
    const store = new S3ImageStore({
      endpoint: fake.endpoint,
      bucket: 'imgs',
      region: 'eu-central-1',
      accessKeyId: s3Creds.accessKeyId,
      secretAccessKey: 'wrong-secret',
    });
    await assert.rejects(store.put(id(), Buffer.from('x'), 'image/png', 60), (e: Error) => {
      assert.match(e.message, /S3 PUT failed with status 403/);
      assert.doesNotMatch(e.message, /wrong-secret/);
      return true;
    });
  });
});

describe('createImageStore / ImageStoreEnvSchema', () => {
  it('defaults to redis and validates s3 settings at start-up', () => {
    const env = ImageStoreEnvSchema.parse({});
    assert.equal(env.IMAGE_STORE, 'redis');
    const bad = ImageStoreEnvSchema.safeParse({ IMAGE_STORE: 's3', IMAGE_S3_BUCKET: 'b' });
    assert.equal(bad.success, false);
    const paths = bad.error?.issues.map((i) => i.path.join('.')).sort();
    assert.deepEqual(paths, ['IMAGE_S3_ACCESS_KEY_ID', 'IMAGE_S3_ENDPOINT', 'IMAGE_S3_SECRET_ACCESS_KEY']);
  });

  it('builds the configured kind', async () => {
    const fsStore = createImageStore(
      ImageStoreEnvSchema.parse({ IMAGE_STORE: 'fs', IMAGE_STORE_DIR: fsDir }),
    );
    assert.equal(fsStore.kind, 'fs');
    await fsStore.close();
    const s3 = createImageStore(
      ImageStoreEnvSchema.parse({
        IMAGE_STORE: 's3',
        IMAGE_S3_ENDPOINT: fake.endpoint,
        IMAGE_S3_BUCKET: 'imgs',
        IMAGE_S3_ACCESS_KEY_ID: s3Creds.accessKeyId,
        IMAGE_S3_SECRET_ACCESS_KEY: s3Creds.secretAccessKey,
        IMAGE_S3_REGION: 'eu-central-1',
      }),
    );
    const k = id();
    await s3.put(k, Buffer.from('via env'), 'image/png', 60);
    assert.equal((await s3.get(k))?.bytes.toString(), 'via env');
    const r = createImageStore(ImageStoreEnvSchema.parse({}), { redisUrl: REDIS_URL });
    assert.equal(r.kind, 'redis');
    await r.close();
  });
});

describe('S3FileStore', () => {
  it('streams a file up in multipart parts (one part in memory at a time) and back, aborts a failed upload', async () => {
    const store = new S3FileStore({
      endpoint: fake.endpoint,
      bucket: 'files',
      region: 'eu-central-1',
      prefix: 'f/',
      partBytes: 5 * 1024 * 1024,
      ...s3Creds,
    });
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    async function* eleven() {
      for (let i = 0; i < 11; i++) yield chunk;
    }
    const rejectedBefore = fake.rejected;
    assert.equal(await store.put('file-big', eleven()), 11 * 1024 * 1024);
    assert.deepEqual(fake.partSizes.slice(-3), [5 * 1024 * 1024, 5 * 1024 * 1024, 1024 * 1024]);
    assert.equal(fake.rejected, rejectedBefore, 'every request correctly signed');
    const s = await store.get('file-big');
    let n = 0;
    for await (const c of s!) n += (c as Buffer).length;
    assert.equal(n, 11 * 1024 * 1024);
    await assert.rejects(
      store.put(
        'file-broken',
        (async function* () {
          yield chunk;
          throw new Error('client went away');
        })(),
      ),
      /client went away/,
    );
    assert.equal(fake.uploads.size, 0, 'the failed upload was aborted');
    assert.equal(await store.get('file-broken'), null);
    await store.delete('file-big');
    assert.equal(await store.get('file-big'), null);
  });
});
