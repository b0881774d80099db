import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import cors from '@fastify/cors';
import Fastify from 'fastify';
import { GatewayEnvSchema } from '../config.js';
import { corsOptions } from './cors.js';

/** A bare Fastify with the gateway's CORS options and one route that wants a key (as the API does). */
async function server(origins: string[]) {
  const f = Fastify();
  const opts = corsOptions(origins);
  if (opts) await f.register(cors, opts);
  f.post('/v1/chat/completions', async (req, reply) => {
    if (req.headers.authorization !== 'Bearer k')
      return reply.code(401).send({ error: { message: 'no key' } });
    return { ok: true };
  });
  await f.ready();
  return f;
}

const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: '/v1/chat/completions',
  headers: {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization, content-type, x-stainless-os',
  },
});

describe('CORS (CORS_ORIGINS)', () => {
  it('default *: preflight 204 without a key, any origin, the asked headers allowed, errors readable', async () => {
    const f = await server(GatewayEnvSchema.shape.CORS_ORIGINS.parse(undefined));
    const pre = await f.inject(preflight('https://app.example.com'));
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    assert.equal(pre.headers['access-control-allow-headers'], 'authorization, content-type, x-stainless-os');
    assert.equal(pre.headers['access-control-max-age'], '600');
    const denied = await f.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { origin: 'https://app.example.com' },
    });
    assert.equal(denied.statusCode, 401);
    assert.equal(denied.headers['access-control-allow-origin'], '*', 'a browser can read the 401 body');
    assert.match(String(denied.headers['access-control-expose-headers']), /x-request-id/);
    assert.equal(denied.headers['access-control-allow-credentials'], undefined);
    await f.close();
  });

  it('a list: only those origins, echoed with Vary: Origin; others get no CORS headers', async () => {
    const f = await server(['https://app.example.com', 'http://localhost:5173']);
    const ok = await f.inject(preflight('http://localhost:5173'));
    assert.equal(ok.statusCode, 204);
    assert.equal(ok.headers['access-control-allow-origin'], 'http://localhost:5173');
    assert.match(String(ok.headers.vary), /Origin/i);
    const other = await f.inject(preflight('https://evil.example.net'));
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    await f.close();
  });

  it('empty: off (no CORS headers); a bad entry stops the start', async () => {
    assert.equal(corsOptions(GatewayEnvSchema.shape.CORS_ORIGINS.parse('')), null);
    const f = await server([]);
    const r = await f.inject(preflight('https://app.example.com'));
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    await f.close();
    assert.equal(GatewayEnvSchema.shape.CORS_ORIGINS.safeParse('https://a.example.com/path').success, false);
    assert.equal(GatewayEnvSchema.shape.CORS_ORIGINS.safeParse('app.example.com').success, false);
    assert.deepEqual(
      GatewayEnvSchema.shape.CORS_ORIGINS.parse(' https://a.example.com , http://[::1]:8080 '),
      ['https://a.example.com', 'http://[::1]:8080'],
    );
  });
});
