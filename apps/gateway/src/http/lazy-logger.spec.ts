import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger } from '@infer/telemetry';
import { LazyChildLogger, lazyChildLoggerFactory } from './lazy-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger('lazy-test', level, { write: (l: string) => lines.push(JSON.parse(l)) });
  return { log, lines };
}

describe('LazyChildLogger (Fastify req.log made on its first line)', () => {
  it('writes lines with the bindings, redaction and level of an eager pino child', () => {
    const { log, lines } = capture('info');
    const lazy = lazyChildLoggerFactory(log, { reqId: 'req_1' }, {});
    lazy.info({ authorization: 'Bearer sk-secret', n: 1 }, 'hello');
    lazy.error({ err: new Error('boom') }, 'failed');
    lazy.debug('not written at info');
    assert.equal(lines.length, 2);
    assert.equal(lines[0]?.reqId, 'req_1');
    assert.equal(lines[0]?.msg, 'hello');
    assert.equal(lines[0]?.authorization, '[redacted]');
    assert.equal(lines[1]?.level, 50);
    assert.match(String((lines[1]?.err as { stack?: string })?.stack), /boom/);
  });

  it('makes no pino child for a request that logs nothing or only below the level', () => {
    const { log } = capture('warn');
    let children = 0;
    const counting = new Proxy(log, {
      get(target, prop, recv) {
        if (prop === 'child') {
          return (...a: Parameters<typeof log.child>) => {
            children++;
            return target.child(...a);
          };
        }
        return Reflect.get(target, prop, recv);
      },
    });
    const lazy = new LazyChildLogger(counting, { reqId: 'req_2' }, {});
    lazy.info('below warn');
    lazy.debug('below warn');
    assert.equal(children, 0);
    assert.equal(lazy.isLevelEnabled('warn'), true);
    lazy.warn('written');
    lazy.warn('again');
    assert.equal(children, 1, 'one child, made on the first line written');
  });

  it('has what Fastify requires of a logger, and child() nests with both bindings', () => {
    const { log, lines } = capture('info');
    const lazy = lazyChildLoggerFactory(log, { reqId: 'req_3' }, {});
    for (const m of ['info', 'error', 'debug', 'fatal', 'warn', 'trace', 'child'] as const) {
      assert.equal(typeof lazy[m], 'function', m);
    }
    lazy.child({ route: '/x' }).info('nested');
    assert.equal(lines[0]?.reqId, 'req_3');
    assert.equal(lines[0]?.route, '/x');
  });
});
