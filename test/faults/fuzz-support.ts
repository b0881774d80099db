/**
 * Shared by the fuzz specs (fuzz.spec.ts, fuzz-messages.spec.ts): the request and answer types, the value
 * generators that break a valid body, and sending a case (fetch, or a raw socket for what fetch would
 * refuse or fix).
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
