import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fnv1a } from '../hash.js';

/**
 * A vLLM-compatible engine SIMULATOR: a TEST DOUBLE, not a model. It speaks the parts of vLLM's HTTP API
 * that the platform uses (`POST /v1/chat/completions` streamed or not, `GET /health`, `GET /metrics`
 * with vLLM's metric names) and models the timing that engine routing depends on:
 *
 * - a prefix cache of `blockTokens`-token blocks (16, vLLM's default), LRU, `cacheBlocks` capacity: a
 *   prompt's leading blocks that are cached cost no prefill; the full blocks of the prompt and of the
 *   generated text are cached (vLLM caches a block once it is full, decoded tokens included), so the next
 *   turn of a conversation finds the previous answer cached as well as the previous prompt;
 * - continuous batching: at most `maxRunning` sequences run (vLLM's max_num_seqs), the others wait
 *   (by `priority` when the request sends one, lower first, as vLLM's priority scheduling);
 * - each engine step lasts `decodeMsBase + decodeMsPerSeq x running` plus `prefillMsPerToken` per
 *   uncached prompt token admitted in that step; every running sequence gets one token per step, a new
 *   one its first token at the end of its prefill step (sent at once, whatever `tokensPerEvent`).
 *
 * Default figures model Llama-3.1-8B in BF16 on one H100 SXM (docs/engine-pools.md gives the sources).
 * `timeScale` maps simulated milliseconds to real ones (0.1 = ten times faster, 2 = slower, for a busy
 * host). Steps run on a schedule, not from timer to timer: a step starts when the previous one was due to
 * end (or when the last sequence it admits arrived, if later), so a timer that fires late on a loaded
 * host delays that step's tokens but does not slow the simulated engine down. Text is deterministic filler; tokens are `charsPerToken` characters of prompt text.
 */
export interface VllmSimulatorOptions {
  name?: string;
  host?: string;
  port?: number;
  timeScale?: number;
  blockTokens?: number;
  cacheBlocks?: number;
  maxRunning?: number;
  prefillMsPerToken?: number;
  decodeMsBase?: number;
  decodeMsPerSeq?: number;
  charsPerToken?: number;
  defaultOutputTokens?: number;
  /** Tokens per SSE event (a coarser stream costs the bench less CPU; 1 = one event per token). */
  tokensPerEvent?: number;
}

const WORDS = [
  'the',
  'and',
  'for',
  'are',
  'but',
  'not',
  'you',
  'all',
  'any',
  'can',
  'had',
  'her',
  'was',
  'one',
];

/** One sequence at its first token: its prompt, how much of it was cached, when it arrived (real ms). */
export interface FirstTokenTrace {
  prompt: string;
  promptTokens: number;
  cachedTokens: number;
  arrived: number;
  first: number;
}

interface Seq {
  id: string;
  promptTokens: number;
  cachedTokens: number;
  /** The rendered prompt and its chained block hashes (the last one continues over the output). */
  prompt: string;
  blocks: number[];
  outputTokens: number;
  produced: number;
  priority: number;
  arrived: number;
  prefilled: boolean;
  seed: number;
  /** Tokens not yet sent (a coarse stream), and everything generated. */
  text: string[];
  output: string;
  res: ServerResponse;
  stream: boolean;
  includeUsage: boolean;
  model: string;
  done: boolean;
  /** Continues an assistant message (continue_final_message): its first token is not the answer's first. */
  continued: boolean;
}

export class VllmSimulator {
  readonly name: string;
  private readonly o: Required<Omit<VllmSimulatorOptions, 'name' | 'host' | 'port'>>;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly cache = new Map<number, true>();
  private running: Seq[] = [];
  private waiting: Seq[] = [];
  private stepping = false;
  /** performance.now() at which the step under way is due to end (its schedule, not its timer's firing). */
  private due = 0;
  private seq = 0;
  /** Fault injection for tests: answer every request with this status; break the next stream after N tokens (once). */
  failStatus: number | null = null;
  breakAfterTokens: number | null = null;
  healthy = true;
  /** Called at each sequence's first token (bench/routing.ts --tail): what it asked and found cached. */
  onFirstToken: ((t: FirstTokenTrace) => void) | null = null;
  readonly stats = { requests: 0, promptTokens: 0, hitTokens: 0, generated: 0 };
  url = '';

  constructor(private readonly opts: VllmSimulatorOptions = {}) {
    this.name = opts.name ?? 'vllm-sim';
    this.o = {
      timeScale: opts.timeScale ?? 1,
      blockTokens: opts.blockTokens ?? 16,
      cacheBlocks: opts.cacheBlocks ?? 27_000,
      maxRunning: opts.maxRunning ?? 256,
      prefillMsPerToken: opts.prefillMsPerToken ?? 0.035,
      decodeMsBase: opts.decodeMsBase ?? 6,
      decodeMsPerSeq: opts.decodeMsPerSeq ?? 0.055,
      charsPerToken: opts.charsPerToken ?? 4,
      defaultOutputTokens: opts.defaultOutputTokens ?? 64,
      tokensPerEvent: opts.tokensPerEvent ?? 1,
    };
  }

  /** Listens (127.0.0.1, a free port unless given); returns the OpenAI base URL (`.../v1`). */
  async start(): Promise<string> {
    const server = createServer((req, res) => this.route(req, res));
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port ?? 0, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}/v1`;
    return this.url;
  }

  get port(): number {
    return Number(new URL(this.url).port);
  }

  /** Dies like a killed pod: every connection reset, streams cut mid-way, the port closed. */
  async kill(): Promise<void> {
    const s = this.server;
    this.server = null;
    for (const sock of this.sockets) sock.destroy();
    for (const q of [this.running, this.waiting]) for (const x of q) x.done = true;
    this.running = [];
    this.waiting = [];
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }

  /** Prefix-cache hit rate so far (tokens served from cache / prompt tokens). */
  hitRate(): number {
    return this.stats.promptTokens ? this.stats.hitTokens / this.stats.promptTokens : 0;
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/health') {
      res.writeHead(this.healthy ? 200 : 503).end();
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(this.metrics());
      return;
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.chat(Buffer.concat(chunks).toString('utf8'), res));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
  }

  private metrics(): string {
    const used = Math.min(1, this.cache.size / this.o.cacheBlocks);
    const l = `{model_name="${this.name}"}`;
    return [
      '# TYPE vllm:num_requests_running gauge',
      `vllm:num_requests_running${l} ${this.running.length}`,
      '# TYPE vllm:num_requests_waiting gauge',
      `vllm:num_requests_waiting${l} ${this.waiting.length}`,
      '# TYPE vllm:kv_cache_usage_perc gauge',
      `vllm:kv_cache_usage_perc${l} ${used}`,
      '# TYPE vllm:prefix_cache_queries_total counter',
      `vllm:prefix_cache_queries_total${l} ${this.stats.promptTokens}`,
      '# TYPE vllm:prefix_cache_hits_total counter',
      `vllm:prefix_cache_hits_total${l} ${this.stats.hitTokens}`,
      '',
    ].join('\n');
  }

  private chat(text: string, res: ServerResponse): void {
    let body: {
      model?: string;
      messages?: Array<{ role?: string; content?: unknown }>;
      stream?: boolean;
      max_tokens?: number;
      priority?: number;
      stream_options?: { include_usage?: boolean };
      continue_final_message?: boolean;
    };
    try {
      body = JSON.parse(text);
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
      return;
    }
    if (this.failStatus) {
      res
        .writeHead(this.failStatus, { 'content-type': 'application/json' })
        .end(`{"error":{"message":"simulated failure ${this.failStatus}"}}`);
      return;
    }
    if (!Array.isArray(body.messages) || !body.messages.length) {
      res
        .writeHead(400, { 'content-type': 'application/json' })
        .end('{"error":{"message":"messages required"}}');
      return;
    }
    // The prompt as a chat template renders it: each message's role and text, in order. A continued
    // final assistant message is left open (vLLM continue_final_message).
    let prompt = '';
    body.messages.forEach((m, i) => {
      const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
      const open = body.continue_final_message && i === (body.messages?.length ?? 0) - 1;
      prompt += `<|${m.role}|>\n${content}${open ? '' : '<|end|>\n'}`;
    });
    if (!body.continue_final_message) prompt += '<|assistant|>\n';
    const blockChars = this.o.blockTokens * this.o.charsPerToken;
    const blocks: number[] = [];
    let h = 0x811c9dc5;
    for (let at = 0; at + blockChars <= prompt.length; at += blockChars) {
      // Chained: a block's hash covers every block before it, as vLLM's block hashes do.
      h = fnv1a(prompt.slice(at, at + blockChars), h);
      blocks.push(h);
    }
    const s: Seq = {
      id: `chatcmpl-sim${++this.seq}`,
      prompt,
      promptTokens: Math.ceil(prompt.length / this.o.charsPerToken),
      cachedTokens: 0,
      blocks,
      outputTokens: Math.max(1, body.max_tokens ?? this.o.defaultOutputTokens),
      produced: 0,
      priority: typeof body.priority === 'number' ? body.priority : 0,
      arrived: performance.now(),
      prefilled: false,
      seed: fnv1a(prompt),
      text: [],
      output: '',
      res,
      stream: body.stream === true,
      includeUsage: body.stream_options?.include_usage === true,
      model: body.model ?? this.name,
      done: false,
      continued: body.continue_final_message === true,
    };
    res.on('close', () => {
      if (!res.writableFinished) s.done = true;
    });
    if (s.stream) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // Waiting queue in priority order (lower first), first come first served within one priority.
    let at = this.waiting.length;
    while (at > 0 && (this.waiting[at - 1] as Seq).priority > s.priority) at--;
    this.waiting.splice(at, 0, s);
    this.kick();
  }

  private kick(): void {
    if (this.stepping || !this.server) return;
    this.stepping = true;
    setImmediate(() => this.step());
  }

  /** One engine step: admit waiting sequences, then after the step's time, one token each. */
  private step(): void {
    this.running = this.running.filter((s) => !s.done);
    let prefill = 0;
    const admitted: Seq[] = [];
    while (this.running.length < this.o.maxRunning && this.waiting.length) {
      const s = this.waiting.shift() as Seq;
      if (s.done) continue;
      s.cachedTokens = this.lookup(s.blocks) * this.o.blockTokens;
      this.stats.requests++;
      this.stats.promptTokens += s.promptTokens;
      this.stats.hitTokens += s.cachedTokens;
      prefill += Math.max(0, s.promptTokens - s.cachedTokens);
      this.running.push(s);
      admitted.push(s);
    }
    if (!this.running.length) {
      this.stepping = false;
      return;
    }
    const ms =
      this.o.decodeMsBase + this.o.decodeMsPerSeq * this.running.length + this.o.prefillMsPerToken * prefill;
    let start = this.due;
    for (const s of admitted) if (s.arrived > start) start = s.arrived;
    const now = performance.now();
    // Behind schedule by more than a step (a stalled host): start afresh rather than replay the stall.
    if (now - start > ms * this.o.timeScale) start = now;
    this.due = start + ms * this.o.timeScale;
    setTimeout(() => {
      if (!this.server) return;
      for (const s of admitted) this.insert(s.blocks);
      for (const s of this.running) {
        if (s.done) continue;
        s.prefilled = true;
        this.token(s);
      }
      this.step();
    }, this.due - now);
  }

  /** Leading cached blocks of a prompt (touched: most recently used). */
  private lookup(blocks: number[]): number {
    let n = 0;
    for (const b of blocks) {
      if (!this.cache.has(b)) break;
      this.cache.delete(b);
      this.cache.set(b, true);
      n++;
    }
    return n;
  }

  private insert(blocks: number[]): void {
    for (const b of blocks) {
      this.cache.delete(b);
      this.cache.set(b, true);
    }
    while (this.cache.size > this.o.cacheBlocks) {
      const oldest = this.cache.keys().next().value as number;
      this.cache.delete(oldest);
    }
  }

  /**
   * A finished sequence's blocks, as vLLM frees them: the full blocks of its prompt and of its generated
   * text (vLLM caches a block as soon as it is full, decoded tokens included) go to the LRU end in
   * reverse order, so its last blocks are evicted first and its leading ones last.
   */
  private cacheOutput(s: Seq): void {
    const blockChars = this.o.blockTokens * this.o.charsPerToken;
    const all = s.prompt + s.output;
    const blocks = s.blocks.slice();
    let h = blocks.length ? (blocks[blocks.length - 1] as number) : 0x811c9dc5;
    for (let at = blocks.length * blockChars; at + blockChars <= all.length; at += blockChars) {
      h = fnv1a(all.slice(at, at + blockChars), h);
      blocks.push(h);
    }
    this.insert(blocks.reverse());
  }

  private token(s: Seq): void {
    const word = WORDS[(s.seed + s.produced * 7) % WORDS.length] as string;
    if (s.produced === 0 && this.onFirstToken) {
      const { prompt, promptTokens, cachedTokens, arrived } = s;
      this.onFirstToken({ prompt, promptTokens, cachedTokens, arrived, first: performance.now() });
    }
    const piece = s.produced === 0 && !s.continued ? word : ` ${word}`;
    s.text.push(piece);
    s.output += piece;
    s.produced++;
    this.stats.generated++;
    const last = s.produced >= s.outputTokens;
    if (this.breakAfterTokens !== null && s.produced >= this.breakAfterTokens && s.stream) {
      this.breakAfterTokens = null;
      this.flush(s, false);
      s.done = true;
      s.res.socket?.destroy();
      return;
    }
    if (s.stream && (last || s.produced === 1 || s.text.length >= this.o.tokensPerEvent)) this.flush(s, last);
    if (last) this.end(s);
  }

  private flush(s: Seq, last: boolean): void {
    if (!s.text.length) return;
    const content = s.text.join('');
    s.text = [];
    const chunk = {
      id: s.id,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model: s.model,
      choices: [{ index: 0, delta: { content }, finish_reason: last ? 'length' : null }],
    };
    s.res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  }

  private end(s: Seq): void {
    s.done = true;
    this.cacheOutput(s);
    const usage = {
      prompt_tokens: s.promptTokens,
      completion_tokens: s.produced,
      total_tokens: s.promptTokens + s.produced,
      prompt_tokens_details: { cached_tokens: s.cachedTokens },
    };
    if (s.stream) {
      if (s.includeUsage) {
        s.res.write(
          `data: ${JSON.stringify({ id: s.id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: s.model, choices: [], usage })}\n\n`,
        );
      }
      s.res.end('data: [DONE]\n\n');
      return;
    }
    const content = s.output;
    s.res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: s.id,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: s.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'length' }],
        usage,
      }),
    );
  }
}
