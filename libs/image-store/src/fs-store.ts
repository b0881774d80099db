import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { assertImageId, assertTtl, type ImageStore, type StoredImage } from './store.js';

interface Meta {
  contentType: string;
  expiresAt: number;
}

/**
 * Images as files in one directory: `<id>.img` (the bytes) and `<id>.json` (content type and expiry),
 * each written to a temporary name and renamed, so a reader never sees half a file. Expired images
 * are refused on read and removed by a sweep every `sweepIntervalMs`. Every process that reads or
 * writes images (gateway, image api and workers) must see the same directory: a local disk for one
 * machine, a shared volume (NFS, a ReadWriteMany volume) for several.
 */
export class FsImageStore implements ImageStore {
  readonly kind = 'fs';
  private readonly timer: NodeJS.Timeout | undefined;
  private ready: Promise<unknown> | undefined;

  constructor(
    private readonly dir: string,
    private readonly opts: { now?: () => number; sweepIntervalMs?: number } = {},
  ) {
    const every = opts.sweepIntervalMs ?? 60_000;
    if (every > 0) {
      this.timer = setInterval(() => void this.sweep().catch(() => undefined), every);
      this.timer.unref();
    }
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }

  private ensureDir(): Promise<unknown> {
    this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 });
    return this.ready;
  }

  async put(id: string, bytes: Uint8Array, contentType: string, ttlSeconds: number): Promise<void> {
    assertImageId(id);
    assertTtl(ttlSeconds);
    await this.ensureDir();
    const meta: Meta = { contentType, expiresAt: this.now() + ttlSeconds * 1000 };
    const tmp = `.${randomBytes(6).toString('hex')}.tmp`;
    // Bytes first, meta last: a reader finds the meta only once the bytes are complete.
    await writeFile(join(this.dir, `${id}.img${tmp}`), bytes, { mode: 0o600 });
    await rename(join(this.dir, `${id}.img${tmp}`), join(this.dir, `${id}.img`));
    await writeFile(join(this.dir, `${id}.json${tmp}`), JSON.stringify(meta), { mode: 0o600 });
    await rename(join(this.dir, `${id}.json${tmp}`), join(this.dir, `${id}.json`));
  }

  async get(id: string): Promise<StoredImage | null> {
    assertImageId(id);
    const meta = await this.readMeta(id);
    if (!meta) return null;
    if (this.now() >= meta.expiresAt) {
      await this.delete(id);
      return null;
    }
    try {
      const bytes = await readFile(join(this.dir, `${id}.img`));
      return { bytes, contentType: meta.contentType, expiresAt: meta.expiresAt };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async delete(id: string): Promise<void> {
    assertImageId(id);
    await rm(join(this.dir, `${id}.json`), { force: true });
    await rm(join(this.dir, `${id}.img`), { force: true });
  }

  /** Removes expired images (and stray temporary files older than an hour). Returns how many went. */
  async sweep(): Promise<number> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw e;
    }
    let removed = 0;
    const now = this.now();
    for (const name of names) {
      if (name.endsWith('.tmp')) {
        const st = await stat(join(this.dir, name)).catch(() => null);
        if (st && Date.now() - st.mtimeMs > 3_600_000) await rm(join(this.dir, name), { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const id = name.slice(0, -5);
      const meta = await this.readMeta(id);
      if (meta && now >= meta.expiresAt) {
        await this.delete(id);
        removed++;
      }
    }
    return removed;
  }

  private async readMeta(id: string): Promise<Meta | null> {
    try {
      const meta = JSON.parse(await readFile(join(this.dir, `${id}.json`), 'utf8')) as Meta;
      return typeof meta.contentType === 'string' && typeof meta.expiresAt === 'number' ? meta : null;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || e instanceof SyntaxError) return null;
      throw e;
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
  }
}
