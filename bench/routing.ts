/**
 * Engine routing bench (issue 35): 4 vLLM SIMULATOR replicas (libs/engine-pool/src/testing, a test
 * double) behind the chat-service's real upstream engine (OpenAIUpstreamEngine + EnginePool, over
 * loopback HTTP), under a synthetic multi-turn workload, at 50 %, 80 % and 95 % of the fleet's capacity,
 * for each routing policy; then one replica killed mid-run.
 *
 *   node --conditions=source --import ./tools/ts-register.js bench/routing.ts [--scale 1] [--conversations 120]
 *        [--loads 50,80,95] [--policies round_robin,least_loaded,prefix_affinity] [--no-kill]
 *        [--seed 7] [--cache-blocks 2000] [--tail]
 *
 * Times are SIMULATED milliseconds (real ms / --scale). Numbers, not pass/fail. `rest p99` leaves out
 * the first turns that open with a new document (`doc1`: no engine can have it cached yet). Each row also gives the
 * host's state during the run: the 1-minute load average at its end and this process's event-loop delay
 * p99 (real ms): the lag every timer and socket read of the run suffered. `hit min` is the lowest hit
 * rate of one replica. `--tail` prints, after each row, the slowest 1 % of the run's requests as the
 * simulators saw them (replica, first-token time, prompt and uncached tokens, document or not, turn) with
 * the long prefills (> 1,500 uncached tokens) their replica took in the 300 ms before their first token.
 */
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type EngineInput, type EngineMessage, OpenAIUpstreamEngine } from '@infer/chat-service/public';
import { OpenAIUpstreamEngineSchema } from '@infer/contracts';
import { chatAffinityKey, coldChars, EnginePool, type PoolSettings } from '@infer/engine-pool';
import { type FirstTokenTrace, VllmSimulator } from '@infer/engine-pool/testing';
import { pino } from 'pino';
import { pct } from './support.js';

const { values: args } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    conversations: { type: 'string', default: '120' },
    loads: { type: 'string', default: '50,80,95' },
    policies: { type: 'string', default: 'round_robin,least_loaded,prefix_affinity' },
    'no-kill': { type: 'boolean', default: false },
    seed: { type: 'string', default: '7' },
    'cache-blocks': { type: 'string', default: '2000' },
    tail: { type: 'boolean', default: false },
  },
});
const SCALE = Number(args.scale);
const CONVERSATIONS = Number(args.conversations);
const LOADS = args.loads.split(',').map(Number);
const POLICIES = args.policies.split(',') as PoolSettings['routing'][];

// The fleet: 4 replicas of the simulator's default figures (Llama-3.1-8B BF16 on one H100, see
// docs/engine-pools.md) with a small KV cache (--cache-blocks, default 2,000 blocks = 32k tokens): no
// replica holds the workload's working set, the fleet's caches together hold most of it.
const REPLICAS = 4;
const SIM = {
  cacheBlocks: Number(args['cache-blocks']),
  maxRunning: 64,
  tokensPerEvent: 10,
  timeScale: SCALE,
};
const OUTPUT_TOKENS = 150;
const MAX_INFLIGHT = 64;

// The workload: 8 system prompts (~600 tokens each) shared by all conversations; conversations of
// 3-8 turns (user turns of ~100 tokens, answers of 150 tokens); 25 % start with a long document
// (~4,000 tokens) of their own; a think time of ~1 s (simulated) between turns.
const SYSTEMS = 8;
const SYS_CHARS = 2_400;
const DOC_CHARS = 16_000;
const DOC_SHARE = 0.25;
const USER_CHARS = 400;
const THINK_MS = 1_000;

let rng = Number(args.seed);
const rand = () => {
  rng = (Math.imul(rng, 1_103_515_245) + 12_345) >>> 0;
  return rng / 2 ** 32;
};
const exp = (mean: number) => -Math.log(1 - rand()) * mean;
const filler = (n: number, tag: string) => {
  let s = `${tag} `;
  while (s.length < n) s += `${tag}-${Math.floor(rand() * 1e9).toString(36)} lorem ipsum dolor sit amet `;
  return s.slice(0, n);
};
const systems = Array.from({ length: SYSTEMS }, (_, i) => filler(SYS_CHARS, `system${i}`));

/**
 * One conversation, drawn whole before the first run: its prompts, its user turns and the think time after
 * each, and the gap before the next conversation arrives. Every policy replays the same draws (common
 * random numbers), so the policies of one process differ only in routing and timing, not in which
 * conversations happened to open with a document or think longer.
 */
interface Conversation {
  system: string;
  doc: string | null;
  questions: string[];
  thinkMs: number[];
  /** Simulated ms to the next conversation at one conversation a second (a run divides it by its rate). */
  gap: number;
}
const conversationsOf = (n: number): Conversation[] =>
  Array.from({ length: n }, () => {
    const system = systems[Math.floor(rand() * SYSTEMS)] as string;
    const doc = rand() < DOC_SHARE ? filler(DOC_CHARS, `doc${Math.floor(rand() * 1e6)}`) : null;
    const turns = 3 + Math.floor(rand() * 6);
    const questions = Array.from({ length: turns }, () => filler(USER_CHARS, 'question'));
    const thinkMs = Array.from({ length: turns }, () => exp(THINK_MS));
    return { system, doc, questions, thinkMs, gap: exp(1000) };
  });
/** The run's workload: the same for every policy and load of one process (`--seed`). */
const WORKLOAD = conversationsOf(CONVERSATIONS);

// Analytic capacity of one replica with only the system prompts cached (what any policy reaches once
// warm): uncached prompt tokens per request x prefill cost + its share of batched decode steps.
const avgTurns = 5.5;
const avgUncached =
  DOC_SHARE * (DOC_CHARS / 4) + (avgTurns / 2) * (USER_CHARS / 4 + OUTPUT_TOKENS) + USER_CHARS / 4;
const perRequestMs = avgUncached * 0.035 + (OUTPUT_TOKENS * (6 + 0.055 * 32)) / 32;
const FLEET_RPS = (REPLICAS * 1000) / perRequestMs;

const log = pino({ level: 'silent' });

interface RunResult {
  ttft: number[];
  /** First-token times of first turns that open with a document (no cache can hold it yet), and the rest. */
  ttftDocFirst: number[];
  ttftRest: number[];
  done: number;
  failedBeforeStream: number;
  failedStreaming: number;
  tokens: number;
  seconds: number;
  hitRate: number;
  /** The lowest hit rate of one replica (the cache under the most pressure). */
  hitMin: number;
  /** prefix_affinity requests placed past their key's endpoint for load, of all requests. */
  spills: number;
  lagP99: number;
  load: number;
  /** --tail: the slowest 1 % of requests, one line each. */
  tail?: string[];
}

/** The slowest 1 % of first tokens as the simulators saw them, with the long prefills just before each. */
function tailOf(traces: Array<FirstTokenTrace & { replica: number }>): string[] {
  const ms = (t: FirstTokenTrace) => (t.first - t.arrived) / SCALE;
  const kind = (t: FirstTokenTrace) =>
    `${t.prompt.includes(' doc') ? 'doc' : 'chat'} turn ${t.prompt.split('question ').length - 1}`;
  const sorted = [...traces].sort((a, b) => ms(b) - ms(a));
  return sorted.slice(0, Math.ceil(sorted.length / 100)).map((t) => {
    const near = traces
      .filter(
        (u) =>
          u !== t &&
          u.replica === t.replica &&
          u.promptTokens - u.cachedTokens > 1_500 &&
          u.first <= t.first &&
          u.first > t.first - 300 * SCALE,
      )
      .map((u) => `${kind(u)} ${u.promptTokens - u.cachedTokens}`);
    return `  replica ${t.replica}  ${ms(t).toFixed(0).padStart(4)} ms  ${kind(t).padEnd(12)} prompt ${t.promptTokens}, uncached ${t.promptTokens - t.cachedTokens}  | long prefills before it: ${near.join(', ') || 'none'}`;
  });
}

async function run(
  routing: PoolSettings['routing'],
  load: number,
  opts: { kill?: boolean; resume?: boolean } = {},
): Promise<RunResult> {
  const sims = Array.from({ length: REPLICAS }, (_, i) => new VllmSimulator({ name: `sim${i}`, ...SIM }));
  const urls = await Promise.all(sims.map((s) => s.start()));
  const traces: Array<FirstTokenTrace & { replica: number }> = [];
  if (args.tail)
    sims.forEach((s, replica) => {
      s.onFirstToken = (t) => traces.push({ ...t, replica });
    });
  const settings = OpenAIUpstreamEngineSchema.parse({
    type: 'openai',
    endpoints: urls.map((url) => ({ url })),
    routing,
    max_inflight_per_endpoint: MAX_INFLIGHT,
    retries: 3,
    resume: opts.resume ?? false,
    probe_interval_ms: 1_000,
    timeout_ms: 30_000,
  });
  const engine = new OpenAIUpstreamEngine(settings, 'bench', 'none', undefined, log);
  const rate = (load / 100) * FLEET_RPS; // requests per simulated second
  const convRate = rate / avgTurns;
  const r: RunResult = {
    ttft: [],
    ttftDocFirst: [],
    ttftRest: [],
    done: 0,
    failedBeforeStream: 0,
    failedStreaming: 0,
    tokens: 0,
    seconds: 0,
    hitRate: 0,
    hitMin: 0,
    spills: 0,
    lagP99: 0,
    load: 0,
  };
  const lag = monitorEventLoopDelay({ resolution: 2 });
  lag.enable();
  const t0 = performance.now();
  let killAt = Number.POSITIVE_INFINITY;
  if (opts.kill) killAt = t0 + ((CONVERSATIONS / convRate) * 1000 * SCALE) / 2;
  let killed = false;
  const sleep = (simMs: number) => new Promise((res) => setTimeout(res, simMs * SCALE));

  const one = async (messages: EngineMessage[], docFirst: boolean): Promise<string | null> => {
    if (!killed && performance.now() >= killAt) {
      killed = true;
      void sims[0]?.kill();
    }
    const input: EngineInput = {
      model: 'bench',
      messages,
      sampling: { temperature: 0, top_p: 1, seed: null, presence_penalty: null, frequency_penalty: null },
      max_tokens: OUTPUT_TOKENS,
      stop: [],
      tools: [],
      tool_choice: 'none',
      parallel_tool_calls: false,
      response_format: null,
      reasoning: null,
      choice: 0,
      route: { cls: 'inference', member: 'bench', deadline: Date.now() + 120_000 },
    };
    const start = performance.now();
    let first = true;
    let text = '';
    try {
      for await (const d of engine.generate(input, new AbortController().signal)) {
        if (d.type === 'content') {
          if (first) {
            first = false;
            const ms = (performance.now() - start) / SCALE;
            r.ttft.push(ms);
            (docFirst ? r.ttftDocFirst : r.ttftRest).push(ms);
          }
          text += d.text;
        } else if (d.type === 'finish') {
          r.tokens += d.usage.completion_tokens;
        }
      }
      r.done++;
      return text;
    } catch {
      if (first) r.failedBeforeStream++;
      else r.failedStreaming++;
      return null;
    }
  };

  const conversation = async (c: Conversation) => {
    const messages: EngineMessage[] = [{ role: 'system', content: c.system }];
    for (let t = 0; t < c.questions.length; t++) {
      const q = c.questions[t] as string;
      messages.push({ role: 'user', content: t === 0 && c.doc ? `${c.doc}\n\n${q}` : q });
      const answer = await one(messages, t === 0 && c.doc !== null);
      if (answer === null) return;
      messages.push({ role: 'assistant', content: answer });
      await sleep(c.thinkMs[t] as number);
    }
  };

  const running: Promise<void>[] = [];
  for (const c of WORKLOAD) {
    running.push(conversation(c));
    await sleep(c.gap / convRate);
  }
  await Promise.all(running);
  r.seconds = (performance.now() - t0) / 1000 / SCALE;
  const prompt = sims.reduce((s, x) => s + x.stats.promptTokens, 0);
  const hits = sims.reduce((s, x) => s + x.stats.hitTokens, 0);
  r.hitRate = prompt ? hits / prompt : 0;
  r.hitMin = Math.min(
    ...sims.map((x) => (x.stats.promptTokens ? x.stats.hitTokens / x.stats.promptTokens : 1)),
  );
  r.spills = engine.pool.status().affinity_spills / Math.max(1, r.ttft.length + r.failedBeforeStream);
  lag.disable();
  r.lagP99 = lag.percentile(99) / 1e6;
  r.load = loadavg()[0] ?? 0;
  await engine.close();
  await Promise.all(sims.map((s) => s.kill()));
  if (args.tail) r.tail = tailOf(traces);
  return r;
}

/** CPU of one routing decision (affinity key + pick + lease), microseconds, on this workload's prompts. */
function routingCpu(routing: PoolSettings['routing']): number {
  const pool = new EnginePool(
    OpenAIUpstreamEngineSchema.parse({
      type: 'openai',
      endpoints: [0, 1, 2, 3].map((i) => ({ url: `http://10.0.0.${i}:8000/v1` })),
      routing,
      probe_interval_ms: 0,
    }),
    { model: `cpu-${routing}` },
  );
  // Half first turns (a cold part to measure), half later turns.
  const samples = conversationsOf(64).map((c, i) => {
    const first = [
      { role: 'system', content: c.system },
      { role: 'user', content: c.doc ? `${c.doc}\n\nquestion` : 'question' },
    ];
    return i % 2
      ? first
      : [...first, { role: 'assistant', content: 'answer' }, { role: 'user', content: 'and then?' }];
  });
  const n = 200_000;
  const decide = (i: number) => {
    const m = samples[i & 63] as EngineMessage[];
    const affinity = routing === 'prefix_affinity';
    const lease = pool.tryAcquire({
      key: affinity ? chatAffinityKey(m) : undefined,
      cold: affinity ? coldChars(m) : undefined,
    });
    lease?.release('ok');
  };
  // Every endpoint busy prefilling a long prompt: long first turns take the pending-prefill path.
  const held = [0, 1, 2, 3].map((i) => pool.tryAcquire({ key: i * 0x3fffffff, cold: 1e9 }));
  for (let i = 0; i < 20_000; i++) decide(i);
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) decide(i);
  const c = process.cpuUsage(c0);
  for (const l of held) l?.release('ok');
  void pool.close();
  return (c.user + c.system) / n;
}

const f = (x: number, d = 0) => x.toFixed(d).padStart(8);

async function main() {
  console.log(
    `engine routing bench: ${REPLICAS} vLLM simulator replicas (test double), ${CONVERSATIONS} conversations per run, ` +
      `time scale ${SCALE}; fleet capacity ~${FLEET_RPS.toFixed(1)} req/s (simulated, analytic)`,
  );
  console.log('times in simulated ms; throughput in requests and output tokens per simulated second\n');
  const cpu = new Map(POLICIES.map((p) => [p, routingCpu(p)]));
  console.log(
    `${'load'.padEnd(6)}${'policy'.padEnd(17)}${'ttft p50'.padStart(9)}${'ttft p99'.padStart(9)}${'rest p99'.padStart(9)}${'doc1 p50'.padStart(9)}${'doc1 p90'.padStart(9)}${'req/s'.padStart(9)}${'tok/s'.padStart(9)}${'hit %'.padStart(9)}${'hit min'.padStart(9)}${'cpu us'.padStart(9)}${'failed'.padStart(9)}${'spill %'.padStart(9)}${'lag p99'.padStart(9)}${'host'.padStart(7)}`,
  );
  for (const load of LOADS) {
    for (const p of POLICIES) {
      const r = await run(p, load);
      console.log(
        `${`${load}%`.padEnd(6)}${p.padEnd(17)}${f(pct(r.ttft, 50))} ${f(pct(r.ttft, 99))} ${f(pct(r.ttftRest, 99))} ${f(pct(r.ttftDocFirst, 50))} ${f(pct(r.ttftDocFirst, 90))} ${f(r.done / r.seconds, 1)} ${f(r.tokens / r.seconds)} ${f(r.hitRate * 100, 1)} ${f(r.hitMin * 100, 1)} ${f(cpu.get(p) ?? 0, 2)} ${f(r.failedBeforeStream + r.failedStreaming)} ${f(r.spills * 100, 1)} ${f(r.lagP99, 1)} ${r.load.toFixed(1).padStart(6)}`,
      );
      if (r.tail) console.log(r.tail.join('\n'));
    }
  }
  if (!args['no-kill']) {
    console.log('\none of 4 replicas killed mid-run (80 % load):');
    for (const [p, resume] of [
      ['prefix_affinity', false],
      ['prefix_affinity', true],
      ['least_loaded', false],
    ] as const) {
      const r = await run(p, 80, { kill: true, resume });
      console.log(
        `  ${p}${resume ? ' + resume' : ''}: ${r.done} done, failed before streaming ${r.failedBeforeStream}, failed mid-stream ${r.failedStreaming}`,
      );
    }
  }
}

await main();
process.exit(0);
