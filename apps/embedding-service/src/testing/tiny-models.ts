/**
 * Tiny RANDOM-WEIGHT GGUF models for the tests of the embedded llama.cpp engines. They are not models
 * of language: their vectors and scores carry no meaning. They exercise the mechanics (loading,
 * tokenizing, pooling, rank heads, token counts, context limits) in milliseconds, since no real weights
 * can be downloaded here (docs/platform-notes.md).
 *
 * - `tinyLlamaEmbeddingGguf`: architecture `llama`, 2 layers, width 64 (the vector size), mean pooling,
 *   a SentencePiece-style vocabulary (`tokenizer.ggml.model = llama`) with byte tokens, so any text
 *   tokenizes. About 0.3 MB.
 * - `tinyBertRerankerGguf`: architecture `bert` (non-causal), 2 layers, width 32, rank pooling with a
 *   classifier head (`cls`, `cls.output`), a WordPiece vocabulary (`tokenizer.ggml.model = bert`:
 *   [PAD] [UNK] [CLS] [SEP] [MASK], letters, digits, punctuation, a few words). About 0.1 MB.
 *
 * Weights come from a seeded PRNG: the same options give the same bytes.
 *
 * The chat-service tests have their own tiny chat model writer (test/support/tiny-llama-gguf.mjs); this
 * one adds what embeddings and ranking need (pooling, a BERT graph, a rank head) on a generic writer.
 */
import { writeFileSync } from 'node:fs';
import {
  constTensor,
  type GgufTensor,
  type GgufValue,
  randomTensor,
  seededRandom,
  writeGguf,
} from './gguf-writer.js';

const LETTERS = [...'abcdefghijklmnopqrstuvwxyz0123456789'];
const UPPER = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];
const PUNCT = [...'.,!?:;\'"{}[]()-_/\\=+*<>|#@&%$'];
const WORDS = ['the', 'and', 'is', 'of', 'to', 'in', 'cat', 'dog', 'sat', 'mat', 'river', 'stone', 'paris'];

const u32 = (value: number): GgufValue => ({ type: 'u32', value });
const f32 = (value: number): GgufValue => ({ type: 'f32', value });
const str = (value: string): GgufValue => ({ type: 'string', value });
const bool = (value: boolean): GgufValue => ({ type: 'bool', value });

export interface TinyModelOptions {
  seed?: number;
  /** Training context length (the most tokens per sequence). */
  contextLength?: number;
}

/** SentencePiece vocabulary: [text, score, type]; llama.cpp types 1 normal, 2 unknown, 3 control, 6 byte. */
function spmVocab(): Array<[string, number, number]> {
  const v: Array<[string, number, number]> = [
    ['<unk>', 0, 2],
    ['<s>', 0, 3],
    ['</s>', 0, 3],
  ];
  for (let b = 0; b < 256; b++) v.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0, 6]);
  const seen = new Set(v.map((e) => e[0]));
  const add = (text: string, score: number) => {
    if (seen.has(text)) return;
    seen.add(text);
    v.push([text, score, 1]);
  };
  add('\u2581', -1);
  for (const c of [...LETTERS, ...UPPER, ...PUNCT]) add(c, -2);
  for (const c of [...LETTERS, ...UPPER, ...PUNCT]) add(`\u2581${c}`, -1.5);
  for (const w of WORDS) for (let k = 2; k <= w.length; k++) add(`\u2581${w.slice(0, k)}`, -1 + k * 0.1);
  return v;
}

/** A llama-architecture embedding model (mean pooling); vectors have 64 dimensions. */
export function tinyLlamaEmbeddingGguf(opts: TinyModelOptions = {}): Buffer {
  const rand = seededRandom(opts.seed ?? 7);
  const nCtx = opts.contextLength ?? 512;
  const nEmbd = 64;
  const nLayer = 2;
  const nHead = 4;
  const nFf = 128;
  const vocab = spmVocab();
  const nVocab = vocab.length;
  const kv: Array<[string, GgufValue]> = [
    ['general.architecture', str('llama')],
    ['general.name', str('tiny-random-llama-embedding (test fixture, random weights)')],
    ['llama.context_length', u32(nCtx)],
    ['llama.embedding_length', u32(nEmbd)],
    ['llama.block_count', u32(nLayer)],
    ['llama.feed_forward_length', u32(nFf)],
    ['llama.attention.head_count', u32(nHead)],
    ['llama.attention.head_count_kv', u32(nHead)],
    ['llama.rope.dimension_count', u32(nEmbd / nHead)],
    ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['llama.vocab_size', u32(nVocab)],
    ['llama.pooling_type', u32(1)], // mean
    ['tokenizer.ggml.model', str('llama')],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: vocab.map((e) => e[0]) }],
    ['tokenizer.ggml.scores', { type: 'array', of: 'f32', value: vocab.map((e) => e[1]) }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'i32', value: vocab.map((e) => e[2]) }],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.add_bos_token', bool(true)],
    ['tokenizer.ggml.add_eos_token', bool(false)],
  ];
  const s = 0.5;
  const tensors: GgufTensor[] = [
    randomTensor('token_embd.weight', [nEmbd, nVocab], rand, s),
    constTensor('output_norm.weight', [nEmbd], 1),
    randomTensor('output.weight', [nEmbd, nVocab], rand, s),
  ];
  for (let l = 0; l < nLayer; l++) {
    tensors.push(
      constTensor(`blk.${l}.attn_norm.weight`, [nEmbd], 1),
      randomTensor(`blk.${l}.attn_q.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_k.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_v.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_output.weight`, [nEmbd, nEmbd], rand, s),
      constTensor(`blk.${l}.ffn_norm.weight`, [nEmbd], 1),
      randomTensor(`blk.${l}.ffn_gate.weight`, [nEmbd, nFf], rand, s),
      randomTensor(`blk.${l}.ffn_down.weight`, [nFf, nEmbd], rand, s),
      randomTensor(`blk.${l}.ffn_up.weight`, [nEmbd, nFf], rand, s),
    );
  }
  return writeGguf(kv, tensors);
}

/** WordPiece vocabulary as llama.cpp stores it: word starts carry `▁`, continuations are bare. */
function wpmVocab(): string[] {
  const v = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const seen = new Set(v);
  const add = (t: string) => {
    if (!seen.has(t)) {
      seen.add(t);
      v.push(t);
    }
  };
  for (const c of [...LETTERS, ...PUNCT]) add(`\u2581${c}`);
  for (const c of LETTERS) add(c);
  for (const w of WORDS) add(`\u2581${w}`);
  return v;
}

/** A BERT-architecture cross-encoder with rank pooling (a classifier head with one output). */
export function tinyBertRerankerGguf(opts: TinyModelOptions = {}): Buffer {
  const rand = seededRandom(opts.seed ?? 11);
  const nCtx = opts.contextLength ?? 128;
  const nEmbd = 32;
  const nLayer = 2;
  const nHead = 4;
  const nFf = 64;
  const vocab = wpmVocab();
  const nVocab = vocab.length;
  const kv: Array<[string, GgufValue]> = [
    ['general.architecture', str('bert')],
    ['general.name', str('tiny-random-bert-reranker (test fixture, random weights)')],
    ['bert.context_length', u32(nCtx)],
    ['bert.embedding_length', u32(nEmbd)],
    ['bert.block_count', u32(nLayer)],
    ['bert.feed_forward_length', u32(nFf)],
    ['bert.attention.head_count', u32(nHead)],
    ['bert.attention.layer_norm_epsilon', f32(1e-12)],
    ['bert.attention.causal', bool(false)],
    ['bert.pooling_type', u32(4)], // rank
    ['tokenizer.ggml.model', str('bert')],
    ['tokenizer.ggml.tokens', { type: 'array', of: 'string', value: vocab }],
    ['tokenizer.ggml.token_type', { type: 'array', of: 'i32', value: vocab.map((_, i) => (i < 5 ? 3 : 1)) }],
    ['tokenizer.ggml.token_type_count', u32(2)],
    ['tokenizer.ggml.padding_token_id', u32(0)],
    ['tokenizer.ggml.unknown_token_id', u32(1)],
    ['tokenizer.ggml.bos_token_id', u32(2)],
    ['tokenizer.ggml.seperator_token_id', u32(3)],
    ['tokenizer.ggml.mask_token_id', u32(4)],
  ];
  const s = 0.3;
  const tensors: GgufTensor[] = [
    randomTensor('token_embd.weight', [nEmbd, nVocab], rand, s),
    randomTensor('token_types.weight', [nEmbd, 2], rand, s),
    randomTensor('position_embd.weight', [nEmbd, nCtx], rand, s),
    constTensor('token_embd_norm.weight', [nEmbd], 1),
    constTensor('token_embd_norm.bias', [nEmbd], 0),
  ];
  for (let l = 0; l < nLayer; l++) {
    tensors.push(
      randomTensor(`blk.${l}.attn_q.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_q.bias`, [nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_k.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_k.bias`, [nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_v.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_v.bias`, [nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_output.weight`, [nEmbd, nEmbd], rand, s),
      randomTensor(`blk.${l}.attn_output.bias`, [nEmbd], rand, s),
      constTensor(`blk.${l}.attn_output_norm.weight`, [nEmbd], 1),
      constTensor(`blk.${l}.attn_output_norm.bias`, [nEmbd], 0),
      randomTensor(`blk.${l}.ffn_up.weight`, [nEmbd, nFf], rand, s),
      randomTensor(`blk.${l}.ffn_up.bias`, [nFf], rand, s),
      randomTensor(`blk.${l}.ffn_down.weight`, [nFf, nEmbd], rand, s),
      randomTensor(`blk.${l}.ffn_down.bias`, [nEmbd], rand, s),
      constTensor(`blk.${l}.layer_output_norm.weight`, [nEmbd], 1),
      constTensor(`blk.${l}.layer_output_norm.bias`, [nEmbd], 0),
    );
  }
  tensors.push(
    randomTensor('cls.weight', [nEmbd, nEmbd], rand, 1),
    randomTensor('cls.bias', [nEmbd], rand, 0.1),
    randomTensor('cls.output.weight', [nEmbd, 1], rand, 1),
    randomTensor('cls.output.bias', [1], rand, 0.1),
  );
  return writeGguf(kv, tensors);
}

/** Writes `bytes` to `path` and returns the path. */
export function writeModel(path: string, bytes: Buffer): string {
  writeFileSync(path, bytes);
  return path;
}
