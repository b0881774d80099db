import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ErrorBodySchema } from '@infer/contracts';
import Fastify from 'fastify';
import { clientErrorAnswer, handleClientError } from './client-error.js';

const err = (code: string) => Object.assign(new Error(code), { code });

describe('clientErrorAnswer', () => {
  it('maps the parser errors to 431, 408 and 400, and a reset to nothing', () => {
    assert.equal(clientErrorAnswer(err('HPE_HEADER_OVERFLOW'))?.status, 431);
    assert.equal(clientErrorAnswer(err('HPE_HEADER_OVERFLOW'))?.code, 'request_header_fields_too_large');
    assert.equal(clientErrorAnswer(err('ERR_HTTP_REQUEST_TIMEOUT'))?.status, 408);
    assert.equal(clientErrorAnswer(err('HPE_INVALID_CONSTANT'))?.status, 400);
    assert.equal(clientErrorAnswer(err('ECONNRESET')), null);
  });
});

describe('handleClientError on a real server', () => {
  async function rawAnswer(port: number, request: string): Promise<string> {
    const sock: Socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    sock.on('data', (d) => chunks.push(d));
    sock.write(request);
    await once(sock, 'close');
    return Buffer.concat(chunks).toString();
  }

  it('answers oversized headers and unframeable requests in the error envelope', async () => {
    const app = Fastify({ clientErrorHandler: handleClientError });
    app.get('/', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const port = (app.server.address() as { port: number }).port;
      const big = await rawAnswer(
        port,
        `GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'k'.repeat(60_000)}\r\n\r\n`,
      );
      assert.match(big, /^HTTP\/1\.1 431 /);
      assert.match(big, /content-type: application\/json/i);
      const body = ErrorBodySchema.parse(JSON.parse(big.slice(big.indexOf('\r\n\r\n') + 4)));
      assert.equal(body.error.code, 'request_header_fields_too_large');
      const bad = await rawAnswer(port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
      assert.match(bad, /^HTTP\/1\.1 400 /);
      ErrorBodySchema.parse(JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4)));
    } finally {
      await app.close();
    }
  });
});

describe('hasDuplicateHost', () => {
  it('finds a second Host header whatever its case, and only then', async () => {
    const { hasDuplicateHost } = await import('./client-error.js');
    assert.equal(hasDuplicateHost(['Host', 'a', 'Accept', '*/*']), false);
    assert.equal(hasDuplicateHost(['Host', 'a', 'Accept', '*/*', 'host', 'b']), true);
    assert.equal(hasDuplicateHost(['HOST', 'a', 'hOsT', 'a']), true);
    assert.equal(hasDuplicateHost(['Hosts', 'a', 'Host', 'b', 'X-Host', 'c']), false);
    assert.equal(hasDuplicateHost([]), false);
  });
});
