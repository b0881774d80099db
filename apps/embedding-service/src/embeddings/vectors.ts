import { endianness } from 'node:os';
import { type EncodingFormat, encodeEmbeddingBase64 } from '@infer/contracts';

/**
 * The first `dims` values of `v`, L2-normalised again (what OpenAI does for shortened embeddings with
 * `dimensions`): cosine similarity keeps working on the shorter vectors.
 */
export function truncateVector(v: Float32Array, dims: number): Float32Array {
  if (dims >= v.length) return v;
  const out = v.slice(0, dims);
  let n = 0;
  for (const x of out) n += x * x;
  if (n === 0) return out;
  const inv = 1 / Math.sqrt(n);
  for (let i = 0; i < out.length; i++) out[i] = (out[i] as number) * inv;
  return out;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * A vector on the wire: `float` gives the float32 values as JSON numbers (each exactly the float32
 * value, so it equals what a client decodes from `base64`), `base64` the little-endian float32 bytes
 * (the format of contracts `encodeEmbeddingBase64`, what the OpenAI SDKs decode). On a little-endian
 * machine the Float32Array's own bytes are that format, and Buffer encodes them ~10x faster than the
 * portable encoder (which stays the fallback; vectors.spec.ts checks both give the same text).
 */
export function encodeVector(v: Float32Array, format: EncodingFormat): number[] | string {
  if (format === 'float') return Array.from(v);
  if (LITTLE_ENDIAN) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  return encodeEmbeddingBase64(Array.from(v));
}

/** An upper bound of the JSON size of an encoded vector, to cut replies into NATS-sized frames. */
export function encodedSize(e: number[] | string): number {
  if (typeof e === 'string') return e.length + 2;
  let n = 2;
  // A float32 value printed as a double takes at most 24 characters (-1.2345678901234567e-10); 0 takes 1.
  for (const x of e) n += x === 0 ? 2 : 25;
  return n;
}
