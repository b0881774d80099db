/**
 * Shared by the fuzz specs (test/faults/fuzz.spec.ts, fuzz-messages.spec.ts): the request and answer
 * types, the value generators that break a valid body, the JSON body cases built from a valid base,
 * sending a case (fetch, or a raw socket for what fetch would refuse or fix) and the run that sends
 * the cases in parallel and groups the bad answers.
 */
import { connect } from 'node:net';
import type { Rng } from './rng.js';

/**
 * A request that gets no complete answer within this is a hang. Generous: a request the fuzzer made
 * valid by chance does real work (a transcription queued behind others), slow on a busy machine.
 */
export const ANSWER_MS = 60_000;

export interface Case {
  name: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer | string;
  /** Sent over a raw socket (headers fetch would refuse or fix). */
  raw?: Buffer;
}

export interface Answer {
  status: number;
  contentType: string;
  body: Buffer;
  /** The `request-id` header (Anthropic's clients read it), or null. */
  requestId: string | null;
}

// ---- value generators ----

export function weirdString(r: Rng): string {
  switch (r.int(9)) {
    case 0:
      return '';
    case 1:
      return 'a\u0000b';
    case 2:
      return 'x'.repeat(r.pick([70_000, 300_000, 1_100_000]));
    case 3:
      return '\ud800'; // a lone surrogate
    case 4:
      return '😀'.repeat(r.int(2000) + 1);
    case 5:
      return '../../etc/passwd';
    case 6:
      return ' '.repeat(r.int(50));
    case 7:
      return '%00%ff<script>';
    default:
      return r.bytes(r.int(64)).toString('latin1');
  }
}

export function weirdValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 2 ? 8 : 11)) {
    case 0:
      return null;
    case 1:
      return r.pick([0, -1, 1e308, -1e308, 3.5, 2 ** 53 + 1, 65_536, 1_000_000_000]);
    case 2:
      return r.pick([true, false]);
    case 3:
    case 4:
      return weirdString(r);
    case 5:
      return [];
    case 6:
      return {};
    case 7:
      return 'chat-A';
    case 8:
      return Array.from({ length: r.int(5) + 1 }, () => weirdValue(r, depth + 1));
    case 9:
      return {
        [weirdString(r).slice(0, 20) || 'k']: weirdValue(r, depth + 1),
        type: weirdValue(r, depth + 1),
      };
    default:
      return Array.from({ length: r.pick([3000, 20_000]) }, () => 'x');
  }
}

/** A copy of `value` with one randomly chosen node (at any depth) replaced, removed or added to. */
export function mutate(r: Rng, value: unknown, depth = 0): unknown {
  const isObj = value !== null && typeof value === 'object';
  if (!isObj || depth > 4 || r.int(3) === 0) return weirdValue(r);
  if (Array.isArray(value)) {
    const copy = [...value];
    if (!copy.length || r.int(5) === 0) copy.push(weirdValue(r));
    else {
      const i = r.int(copy.length);
      copy[i] = mutate(r, copy[i], depth + 1);
    }
    return copy;
  }
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  const keys = Object.keys(copy);
  const op = r.int(6);
  if (op === 0 && keys.length) delete copy[r.pick(keys)];
  else if (op === 1)
    copy[r.pick(['__proto__', 'constructor', 'stream', 'n', 'extra', weirdString(r).slice(0, 30)])] =
      weirdValue(r);
  else if (keys.length) {
    const k = r.pick(keys);
    copy[k] = mutate(r, copy[k], depth + 1);
  }
  return copy;
}

// ---- JSON body cases ----

/** A valid request of one endpoint, which the fuzzer breaks. */
export interface JsonBase {
  path: string;
  body: Record<string, unknown>;
}

/**
 * A broken JSON request from one of `bases`: truncated JSON (1 in 10), an odd JSON document (1 in 10,
 * from `oddDocuments`), a wrong Content-Type (1 in 10, from `contentTypes`) or a body mutated one to
 * three times. `headersFor` gives the headers of the chosen base (auth, content type). The random
 * draws are the same whatever the lists, so that a seed replays the same cases.
 */
export function jsonBodyCase(
  r: Rng,
  bases: readonly JsonBase[],
  headersFor: (base: JsonBase) => Record<string, string>,
  oddDocuments: readonly string[],
  contentTypes: readonly string[],
): Case {
  const base = r.pick(bases);
  const headers = headersFor(base);
  const kind = r.int(10);
  if (kind === 0) {
    const text = JSON.stringify(base.body);
    return {
      name: `${base.path} truncated JSON`,
      method: 'POST',
      path: base.path,
      headers,
      body: text.slice(0, r.int(text.length)),
    };
  }
  if (kind === 1) {
    const body = r.pick(oddDocuments);
    return { name: `${base.path} odd JSON document`, method: 'POST', path: base.path, headers, body };
  }
  if (kind === 2) {
    const type = r.pick(contentTypes);
    return {
      name: `${base.path} content-type '${type}'`,
      method: 'POST',
      path: base.path,
      headers: { ...headers, 'content-type': type },
      body: JSON.stringify(base.body),
    };
  }
  let body = base.body as unknown;
  const rounds = r.int(3) + 1;
  for (let i = 0; i < rounds; i++) body = mutate(r, body);
  return {
    name: `${base.path} mutated body`,
    method: 'POST',
    path: base.path,
    headers,
    body: JSON.stringify(body),
  };
}

// ---- the run ----

export interface FuzzRun {
  /** Cases sent. */
  sent: number;
  /** Answers by status. */
  statuses: Map<number, number>;
  /** The bad answers, grouped by request kind and problem: `<count> x <group>` and its first example. */
  bad: string[];
  seconds: number;
}

/**
 * Sends every case `parallel` at a time and judges each answer (`judge` returns what is wrong, or
 * null). Bad answers are grouped by request kind and answer, each with its first example and the
 * request, so that a failure can be replayed without re-running the seed.
 */
export async function runCases(
  base: URL,
  cases: Iterator<Case>,
  parallel: number,
  judge: (c: Case, a: Answer | 'closed') => string | null,
): Promise<FuzzRun> {
  const failures = new Map<string, { count: number; example: string }>();
  const statuses = new Map<number, number>();
  let sent = 0;
  const started = performance.now();
  const worker = async () => {
    for (let next = cases.next(); !next.done; next = cases.next()) {
      const c = next.value;
      sent++;
      let problem: string | null;
      try {
        const a = await send(base, c);
        if (a !== 'closed') statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        problem = judge(c, a);
      } catch (e) {
        problem = `request failed: ${(e as Error).message}`;
      }
      if (problem) {
        const group = `${c.name} -> ${problem.slice(0, 60)}`;
        const seen = failures.get(group);
        if (seen) seen.count++;
        else
          failures.set(group, {
            count: 1,
            example: `#${sent}: ${problem.slice(0, 400)}; sent ${c.method} ${c.path} ${String(c.body ?? '').slice(0, 600)}`,
          });
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return {
    sent,
    statuses,
    bad: [...failures].map(([group, f]) => `${f.count} x ${group}\n    ${f.example}`),
    seconds: (performance.now() - started) / 1000,
  };
}

/** `{"200": 12, "400": 900, ...}` for the log line. */
export const statusLine = (statuses: Map<number, number>) =>
  JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])));

// ---- sending ----

export async function send(base: URL, c: Case): Promise<Answer | 'closed'> {
  if (c.raw) return sendRaw(base, c.raw);
  const res = await fetch(new URL(c.path, base), {
    method: c.method,
    headers: c.headers,
    body: c.body,
    signal: AbortSignal.timeout(ANSWER_MS),
  });
  const body = Buffer.from(await res.arrayBuffer());
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body,
    requestId: res.headers.get('request-id'),
  };
}

/** One request over its own socket; the answer's status, content type and body (de-chunked). */
export function sendRaw(base: URL, raw: Buffer): Promise<Answer | 'closed'> {
  return new Promise((resolve, reject) => {
    const sock = connect(Number(base.port), base.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer within ${ANSWER_MS} ms`));
    }, ANSWER_MS);
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', () => undefined);
    sock.on('close', () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      if (!all.length) return resolve('closed');
      const end = all.indexOf('\r\n\r\n');
      const head = all.subarray(0, end < 0 ? all.length : end).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      const contentType = /\r\ncontent-type: *([^\r\n]*)/i.exec(head)?.[1] ?? '';
      let body: Buffer = end < 0 ? Buffer.alloc(0) : all.subarray(end + 4);
      if (/\r\ntransfer-encoding: *chunked/i.test(head)) body = dechunk(body);
      const requestId = /\r\nrequest-id: *([^\r\n]*)/i.exec(head)?.[1] ?? null;
      resolve({ status, contentType, body, requestId });
    });
    // No half-close: Node's server ends a connection whose client stopped sending, aborting its
    // request. `Connection: close` makes the server close it after the answer.
    sock.write(raw);
  });
}

export function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < b.length) {
    const eol = b.indexOf('\r\n', at);
    if (eol < 0) break;
    const n = Number.parseInt(b.subarray(at, eol).toString(), 16);
    if (!n) break;
    out.push(b.subarray(eol + 2, eol + 2 + n));
    at = eol + 2 + n + 2;
  }
  return Buffer.concat(out);
}

/** What is wrong with an answer, or null. */
