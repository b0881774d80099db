/**
 * A minimal GGUF v3 writer for TEST FIXTURES: metadata key/values and F32 tensors, nothing else. The
 * embedding-service tests use it to write tiny random-weight models (tiny-models.ts) that llama.cpp
 * loads in milliseconds; no real weights can be downloaded on our machines (docs/platform-notes.md).
 *
 * Layout (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): magic `GGUF`, version 3, tensor
 * count, kv count, the kvs, the tensor infos (name, dims in ggml order, type, offset), padding to the
 * alignment, then the tensor data, each tensor aligned.
 */

export const GgufType = {
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
} as const;

type Scalar = { type: 'u32' | 'i32' | 'f32'; value: number } | { type: 'bool'; value: boolean };
export type GgufValue =
  | Scalar
  | { type: 'string'; value: string }
  | { type: 'array'; of: 'string'; value: readonly string[] }
  | { type: 'array'; of: 'u32' | 'i32' | 'f32'; value: readonly number[] };

export interface GgufTensor {
  name: string;
  /** ggml order: the fastest-moving dimension first (a [rows x cols] matrix is [cols, rows]). */
  dims: readonly number[];
  /** F32 values, `product(dims)` of them. */
  data: Float32Array;
}

const ALIGN = 32;
const F32_TYPE = 0;

class Bytes {
  readonly chunks: Buffer[] = [];
  size = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  scalar(type: 'u32' | 'i32' | 'f32' | 'bool' | 'string', v: number | boolean | string): void {
    if (type === 'u32') this.u32(v as number);
    else if (type === 'i32') this.i32(v as number);
    else if (type === 'f32') this.f32(v as number);
    else if (type === 'bool') this.push(Buffer.from([v ? 1 : 0]));
    else this.str(v as string);
  }
  pad(): void {
    const rest = this.size % ALIGN;
    if (rest) this.push(Buffer.alloc(ALIGN - rest));
  }
}

/** The bytes of a GGUF file with these metadata entries and F32 tensors. */
export function writeGguf(
  kv: ReadonlyArray<readonly [string, GgufValue]>,
  tensors: readonly GgufTensor[],
): Buffer {
  const w = new Bytes();
  w.push(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kv.length + 1);
  w.str('general.alignment');
  w.u32(GgufType.u32);
  w.u32(ALIGN);
  for (const [key, v] of kv) {
    w.str(key);
    if (v.type === 'array') {
      w.u32(GgufType.array);
      w.u32(GgufType[v.of]);
      w.u64(v.value.length);
      for (const x of v.value) w.scalar(v.of, x);
    } else {
      w.u32(GgufType[v.type]);
      w.scalar(v.type, v.value);
    }
  }
  let offset = 0;
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (n !== t.data.length) throw new Error(`tensor ${t.name}: ${t.data.length} values for dims ${t.dims}`);
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(F32_TYPE);
    w.u64(offset);
    offset += Math.ceil((n * 4) / ALIGN) * ALIGN;
  }
  w.pad();
  for (const t of tensors) {
    const buf = Buffer.alloc(Math.ceil((t.data.length * 4) / ALIGN) * ALIGN);
    Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).copy(buf);
    w.push(buf);
  }
  return Buffer.concat(w.chunks, w.size);
}

/** mulberry32: a small seeded PRNG, so fixtures are byte-identical for the same seed. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Tensor helpers for fixtures: uniform random in [-scale, scale], or a constant. */
export function randomTensor(name: string, dims: number[], rand: () => number, scale: number): GgufTensor {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = (rand() * 2 - 1) * scale;
  return { name, dims, data };
}

export function constTensor(name: string, dims: number[], value: number): GgufTensor {
  const n = dims.reduce((a, b) => a * b, 1);
  return { name, dims, data: new Float32Array(n).fill(value) };
}
