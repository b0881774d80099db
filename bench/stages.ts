// Where the gateway's CPU per request goes, by elimination, in one run (issue 13).
//
//   node --conditions=source --import ./tools/ts-register.js bench/stages.ts [--rounds 3] [--duration 5]
//        [--warmup 10] [--connections 32] [--rate 3000] [--no-build]
//
// Starts the production stack of bench/stack.ts (bench/stack/lib.ts: fake upstream, raw proxy,
// chat-service, ledger writer, a gateway with limits on and one with limits off) with both gateways
// preloading bench/stack/rpc-stub.mjs, which answers a chat request marked `user: "bench-stage-no-rpc"`
// in the gateway itself instead of over NATS (a test double for the model service). The measured
// processes are alone on CPU 0 (everything else on CPU 1, as `bench/stack.ts --isolate`). Then, in a
// closed loop with wrk, alternating targets each round, the gateway's CPU per request (/proc) for:
//
//   GET /healthz           the HTTP floor: Fastify, Nest's router, the gateway's hooks, a small JSON reply
//   chat, no RPC, no usage event, limits off   + JSON body, auth, validation, catalog, metrics, the reply
//   chat, no RPC, limits off   + the usage event (a JetStream publish and its ack)
//   chat, no RPC, limits on    + every limit in Redis (admission and settlement)
//   chat, limits on            + the NATS hop to chat-service (simulator, max_tokens 1)
//   raw proxy              the baseline: node:http proxy to the fake upstream
//
// and the differences between consecutive rows: what each stage costs. Numbers, not pass/fail; stops
// by itself.
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildProduction, isolateTargets, startStack } from './stack/lib.js';
import { runWrk } from './stack/wrk.js';
import { cpuMs } from './support.js';

const { values: opt } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    'no-build': { type: 'boolean', default: false },
    /**
     * Every target at this many req/s (autocannon's rate mode) instead of wrk's closed loop: in a closed
     * loop a stage that adds latency also halves the request rate, and a process's fixed cost per turn
     * of the event loop is then shared by fewer requests; at one rate for all, the stages compare like
     * for like.
     */
    rate: { type: 'string', default: '0' },
  },
});

const chat = (user?: string) =>
  JSON.stringify({
    model: 'chat-A',
    messages: [{ role: 'user', content: 'Hello there, how are you today?' }],
    max_tokens: 1,
    ...(user ? { user } : {}),
  });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2 : 0;
};

async function main(): Promise<void> {
  if (!opt['no-build']) buildProduction();
  const stub = new URL('./stack/rpc-stub.mjs', import.meta.url).href;
  const stack = await startStack({ gatewayFlags: ['--import', stub] });
  const restoreCpus = isolateTargets(stack);
  try {
    const auth = { authorization: `Bearer ${stack.key}`, 'content-type': 'application/json' };
    interface StageTarget {
      name: string;
      pid: number;
      url: string;
      method?: 'GET' | 'POST';
      headers: Record<string, string>;
      body: string;
    }
    const targets: StageTarget[] = [
      {
        name: 'GET /healthz',
        pid: stack.gatewayOn.pid,
        url: `${stack.gatewayOn.url}/healthz`,
        method: 'GET' as const,
        headers: {},
        body: '',
      },
      {
        name: 'chat, no RPC, no usage event, limits off',
        pid: stack.gatewayOff.pid,
        url: `${stack.gatewayOff.url}/v1/chat/completions`,
        headers: auth,
        body: chat('bench-stage-no-rpc-no-usage'),
      },
      {
        name: 'chat, no RPC, limits off',
        pid: stack.gatewayOff.pid,
        url: `${stack.gatewayOff.url}/v1/chat/completions`,
        headers: auth,
        body: chat('bench-stage-no-rpc'),
      },
      {
        name: 'chat, no RPC, limits on',
        pid: stack.gatewayOn.pid,
        url: `${stack.gatewayOn.url}/v1/chat/completions`,
        headers: auth,
        body: chat('bench-stage-no-rpc'),
      },
      {
        name: 'chat, limits on',
        pid: stack.gatewayOn.pid,
        url: `${stack.gatewayOn.url}/v1/chat/completions`,
        headers: auth,
        body: chat(),
      },
      {
        name: 'raw proxy',
        pid: stack.rawProxy.pid,
        url: `${stack.rawProxy.url}/v1/chat/completions`,
        headers: { 'content-type': 'application/json' },
        body: chat(),
      },
    ];
    const run = async (t: StageTarget, seconds: number) => {
      const before = cpuMs(t.pid);
      const rate = Number(opt.rate);
      const r = rate
        ? await autocannon({
            url: t.url,
            method: t.method ?? 'POST',
            headers: t.headers,
            ...(t.method === 'GET' ? {} : { body: t.body }),
            connections: Number(opt.connections),
            duration: seconds,
            overallRate: rate,
          }).then((a) => ({
            responses: a['2xx'] + a.non2xx,
            durationS: a.duration,
            non2xx: a.non2xx,
            errors: a.errors,
          }))
        : await runWrk({ ...t, connections: Number(opt.connections), seconds });
      const us = r.responses ? ((cpuMs(t.pid) - before) * 1000) / r.responses : 0;
      if (r.non2xx || r.errors) console.log(`  ${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return { us, reqPerS: r.responses / r.durationS };
    };
    console.log(
      `warm-up ${opt.warmup} s per target, then ${opt.rounds} rounds of ${opt.duration} s, ${opt.connections} connections, ${Number(opt.rate) ? `${opt.rate} req/s (autocannon)` : 'closed loop (wrk)'}; measured processes alone on CPU 0`,
    );
    for (const t of targets) await run(t, Number(opt.warmup));
    const us = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const rps = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    for (let r = 0; r < Number(opt.rounds); r++) {
      for (const t of r % 2 ? [...targets].reverse() : targets) {
        const x = await run(t, Number(opt.duration));
        us.get(t.name)?.push(x.us);
        rps.get(t.name)?.push(x.reqPerS);
      }
    }
    const raw = median(us.get('raw proxy') ?? []);
    let prev: number | null = null;
    const rows = targets.map((t) => {
      const m = median(us.get(t.name) ?? []);
      const row = {
        target: t.name,
        'req/s': Math.round(median(rps.get(t.name) ?? [])),
        'us/req (median)': m.toFixed(1),
        rounds: (us.get(t.name) ?? []).map((x) => x.toFixed(0)).join(' '),
        'x raw proxy': (m / raw).toFixed(2),
        'stage adds us': t.name === 'raw proxy' || prev === null ? '' : (m - prev).toFixed(1),
      };
      if (t.name !== 'raw proxy') prev = m;
      return row;
    });
    console.table(rows);
  } finally {
    restoreCpus();
    await stack.close();
  }
}

await main();
