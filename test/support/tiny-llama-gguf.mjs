// Writes a tiny RANDOM-WEIGHT llama GGUF for tests of the embedded llama.cpp engine (node-llama-cpp).
// It is not a language model: its output is gibberish. It exercises the mechanics only (loading,
// tokenizing, chat template, sampling, streaming, grammars, stop, max_tokens, abort).
//
//   node test/support/tiny-llama-gguf.mjs /tmp/tiny.gguf      # CLI
//   import { writeTinyLlamaGguf } from '.../test/support/tiny-llama-gguf.mjs'   # from tests
//
// Format: GGUF v3, all tensors F32, architecture `llama`: 2 layers, width 64, 4 heads, FFN 128,
// SentencePiece-style vocabulary (`tokenizer.ggml.model = llama`: <unk> <s> </s>, 256 byte tokens,
// ChatML control tokens, <think>/<tool_call> tags, letters, digits, punctuation, a few words) and a
// Qwen-style ChatML Jinja chat template with tools (Hermes <tool_call>) and `enable_thinking`.
// Weights come from a seeded PRNG, so the same options give the same bytes. About 0.5 MB.
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const GGUF = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 };
const F32 = 0;
const ALIGN = 32;

export const TINY_CHAT_TEMPLATE = `{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- if message.tool_calls %}
{%- for tool_call in message.tool_calls %}
{{- '\\n<tool_call>\\n{"name": "' + tool_call.function.name + '", "arguments": ' }}
{%- if tool_call.function.arguments is string %}{{- tool_call.function.arguments }}{%- else %}{{- tool_call.function.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{%- endif %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}
{%- endif %}`;

const WORDS = [
  'the',
  'and',
  'is',
  'of',
  'to',
  'in',
  'it',
  'you',
  'that',
  'model',
  'answer',
  'hello',
  'world',
  'name',
  'value',
  'true',
  'false',
  'null',
  'json',
  'tool',
  'call',
  'think',
  'river',
  'stone',
  'light',
  'yes',
  'no',
];
const PUNCT = [...'.,!?:;\'"{}[]()-_/\\=+*<>|#@&%$'];

/** The vocabulary: [text, score, type] with llama.cpp token types 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte. */
export function tinyVocab() {
  const v = [
    ['<unk>', 0, 2],
    ['<s>', 0, 3],
    ['</s>', 0, 3],
  ];
  for (let b = 0; b < 256; b++) v.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0, 6]);
  v.push(['<|im_start|>', 0, 3], ['<|im_end|>', 0, 3]);
  for (const t of ['<think>', '</think>', '<tool_call>', '</tool_call>']) v.push([t, 0, 4]);
  const seen = new Set(v.map((e) => e[0]));
  const add = (text, score) => {
    if (seen.has(text)) return;
    seen.add(text);
    v.push([text, score, 1]);
  };
  add('\u2581', -1);
  const letters = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'];
  for (const c of letters) add(c, -2);
  for (const c of PUNCT) add(c, -2);
  for (const c of letters) add(`\u2581${c}`, -1.5);
  for (const c of PUNCT) add(`\u2581${c}`, -1.5);
  // Words and every prefix of them, so that SentencePiece's pair merges can reach the whole word.
  for (const w of WORDS) {
    for (let k = 2; k <= w.length; k++) add(`\u2581${w.slice(0, k)}`, -1 + k * 0.1);
  }
  return v;
}

/** mulberry32 */
function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Writer {
  constructor() {
    this.chunks = [];
    this.size = 0;
  }
  push(buf) {
    this.chunks.push(buf);
    this.size += buf.length;
  }
  u32(n) {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n) {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  str(s) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  pad() {
    const rest = this.size % ALIGN;
    if (rest) this.push(Buffer.alloc(ALIGN - rest));
  }
}

/**
 * Builds the GGUF bytes.
 * @param {{seed?: number, contextLength?: number, chatTemplate?: string, scale?: number}} [opts]
 * @returns {Buffer}
 */
export function tinyLlamaGguf(opts = {}) {
  const seed = opts.seed ?? 42;
  const nCtx = opts.contextLength ?? 4096;
  const nEmbd = 64;
  const nLayer = 2;
  const nHead = 4;
  const nFf = 128;
  const vocab = tinyVocab();
  const nVocab = vocab.length;
  const id = (t) => vocab.findIndex((e) => e[0] === t);

  /** @type {Array<[string, number, unknown, number?]>} key, type, value, array element type */
  const kv = [
    ['general.architecture', GGUF.string, 'llama'],
    ['general.name', GGUF.string, 'tiny-random-llama (test fixture, random weights)'],
    ['general.alignment', GGUF.u32, ALIGN],
    ['llama.context_length', GGUF.u32, nCtx],
    ['llama.embedding_length', GGUF.u32, nEmbd],
    ['llama.block_count', GGUF.u32, nLayer],
    ['llama.feed_forward_length', GGUF.u32, nFf],
    ['llama.attention.head_count', GGUF.u32, nHead],
    ['llama.attention.head_count_kv', GGUF.u32, nHead],
    ['llama.rope.dimension_count', GGUF.u32, nEmbd / nHead],
    ['llama.attention.layer_norm_rms_epsilon', GGUF.f32, 1e-5],
    ['llama.vocab_size', GGUF.u32, nVocab],
    ['tokenizer.ggml.model', GGUF.string, 'llama'],
    ['tokenizer.ggml.tokens', GGUF.array, vocab.map((e) => e[0]), GGUF.string],
    ['tokenizer.ggml.scores', GGUF.array, vocab.map((e) => e[1]), GGUF.f32],
    ['tokenizer.ggml.token_type', GGUF.array, vocab.map((e) => e[2]), GGUF.i32],
    ['tokenizer.ggml.unknown_token_id', GGUF.u32, id('<unk>')],
    ['tokenizer.ggml.bos_token_id', GGUF.u32, id('<s>')],
    ['tokenizer.ggml.eos_token_id', GGUF.u32, id('<|im_end|>')],
    ['tokenizer.ggml.padding_token_id', GGUF.u32, id('<unk>')],
    ['tokenizer.ggml.add_bos_token', GGUF.bool, true],
    ['tokenizer.ggml.add_eos_token', GGUF.bool, false],
    ['tokenizer.chat_template', GGUF.string, opts.chatTemplate ?? TINY_CHAT_TEMPLATE],
  ];

  // Tensors: [name, dims (ggml order: ne0 first)].
  const tensors = [
    ['token_embd.weight', [nEmbd, nVocab]],
    ['output_norm.weight', [nEmbd]],
    ['output.weight', [nEmbd, nVocab]],
  ];
  for (let l = 0; l < nLayer; l++) {
    tensors.push(
      [`blk.${l}.attn_norm.weight`, [nEmbd]],
      [`blk.${l}.attn_q.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_k.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_v.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_output.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.ffn_norm.weight`, [nEmbd]],
      [`blk.${l}.ffn_gate.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_down.weight`, [nFf, nEmbd]],
      [`blk.${l}.ffn_up.weight`, [nEmbd, nFf]],
    );
  }

  const w = new Writer();
  w.push(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kv.length);
  const value = (type, v) => {
    if (type === GGUF.u32) w.u32(v);
    else if (type === GGUF.i32) w.i32(v);
    else if (type === GGUF.f32) w.f32(v);
    else if (type === GGUF.bool) w.push(Buffer.from([v ? 1 : 0]));
    else if (type === GGUF.string) w.str(v);
    else throw new Error(`unsupported type ${type}`);
  };
  for (const [key, type, v, elem] of kv) {
    w.str(key);
    w.u32(type);
    if (type === GGUF.array) {
      w.u32(elem);
      w.u64(v.length);
      for (const x of v) value(elem, x);
    } else value(type, v);
  }
  let offset = 0;
  const sizes = [];
  for (const [name, dims] of tensors) {
    w.str(name);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(F32);
    w.u64(offset);
    const bytes = dims.reduce((a, b) => a * b, 1) * 4;
    sizes.push(bytes);
    offset += Math.ceil(bytes / ALIGN) * ALIGN;
  }
  w.pad();
  const rand = prng(seed);
  const scale = opts.scale ?? 0.5;
  // The output rows of the end-of-generation tokens are zero: their logit is always 0, far below the
  // best of the random others, so generation practically never ends by itself and tests choose the
  // length with max_tokens (a grammar still ends it when complete).
  const silent = new Set([id('<|im_end|>'), id('</s>')]);
  for (const [i, [name]] of tensors.entries()) {
    const n = sizes[i] / 4;
    const data = Buffer.alloc(Math.ceil(sizes[i] / ALIGN) * ALIGN);
    const isNorm = name.endsWith('norm.weight');
    for (let k = 0; k < n; k++) {
      const zero = name === 'output.weight' && silent.has(Math.floor(k / nEmbd));
      const v = isNorm ? 1 : (rand() * 2 - 1) * scale;
      data.writeFloatLE(zero ? 0 : v, k * 4);
    }
    w.push(data);
  }
  return Buffer.concat(w.chunks, w.size);
}

/** Writes the tiny model to `path` and returns the path. */
export function writeTinyLlamaGguf(path, opts = {}) {
  writeFileSync(path, tinyLlamaGguf(opts));
  return path;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2] ?? 'tiny-llama.gguf';
  writeTinyLlamaGguf(out);
  console.log(out);
}
