import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '@infer/telemetry';
import { type AccessLine, AccessLog } from './access-log.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('access-test', 'info', { write: (l: string) => lines.push(JSON.parse(l)) });
  return { log, lines };
}

const line = (over: Partial<AccessLine> = {}): AccessLine => ({
  reqId: 'req_1',
  method: 'POST',
  route: '/v1/chat/completions',
  status: 429,
  code: 'rate_limit_exceeded',
  ms: 0.4,
  keyId: 'key_a',
  trace_id: undefined,
  ...over,
});

describe('AccessLog (refusals grouped to a line per second)', () => {
  it('writes the first answer of a group at once and the rest as one repeated line when the window ends', () => {
    const { log, lines } = capture();
    const access = new AccessLog(log, 60_000);
    for (let i = 1; i <= 100; i++) access.refused(line({ reqId: `req_${i}` }));
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.msg, 'request');
    assert.equal(lines[0]?.reqId, 'req_1');
    assert.equal(lines[0]?.code, 'rate_limit_exceeded');
    access.flush();
    assert.equal(lines.length, 2);
    assert.equal(lines[1]?.msg, 'request (repeated)');
    assert.equal(lines[1]?.repeated, 99);
    assert.equal(lines[1]?.reqId, 'req_100');
    assert.equal(lines[1]?.keyId, 'key_a');
    // A new window starts again with a line at once, and a window with no repeats adds nothing.
    access.refused(line({ reqId: 'req_101' }));
    access.flush();
    assert.deepEqual(
      lines.slice(2).map((l) => [l.msg, l.reqId]),
      [['request', 'req_101']],
    );
  });

  it('keeps keys, routes, statuses and codes apart, and writes every 500', () => {
    const { log, lines } = capture();
    const access = new AccessLog(log, 60_000);
    const variants = [
      line(),
      line({ keyId: 'key_b' }),
      line({ route: '/v1/embeddings' }),
      line({ status: 503, code: 'service_unavailable' }),
      line({ code: 'insufficient_quota' }),
      line({ keyId: undefined, status: 401, code: 'invalid_api_key' }),
    ];
    for (const v of [...variants, ...variants]) access.refused(v);
    for (let i = 0; i < 3; i++) access.refused(line({ status: 500, code: 'internal_error' }));
    assert.equal(lines.length, variants.length + 3);
    assert.equal(lines.filter((l) => l.status === 500).length, 3);
    access.flush();
    const repeated = lines.filter((l) => l.msg === 'request (repeated)');
    assert.equal(repeated.length, variants.length);
    assert.ok(repeated.every((l) => l.repeated === 1));
  });

  it('ends the window by itself', async () => {
    const { log, lines } = capture();
    const access = new AccessLog(log, 20);
    access.refused(line());
    access.refused(line());
    const deadline = Date.now() + 5_000;
    while (lines.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    assert.equal(lines[1]?.repeated, 1);
  });

  it('past its group bound writes lines one by one instead of keeping more groups', () => {
    const { log, lines } = capture();
    const access = new AccessLog(log, 60_000, 2);
    for (const k of ['a', 'b', 'c', 'c', 'c']) access.refused(line({ keyId: k }));
    assert.deepEqual(
      lines.map((l) => l.keyId),
      ['a', 'b', 'c', 'c', 'c'],
    );
    access.flush();
    assert.equal(lines.length, 5);
  });
});
