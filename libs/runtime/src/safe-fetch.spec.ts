import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isPublicAddress, SafeFetchError, safeFetch } from './safe-fetch.js';

describe('isPublicAddress', () => {
  it('accepts public unicast, refuses internal ranges', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111'])
      assert.ok(isPublicAddress(a), a);
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '224.0.0.1',
      'not-an-ip',
      // IPv4-compatible (deprecated) forms of internal IPv4 addresses, and deprecated IPv6 ranges.
      '::a9fe:a9fe',
      '::127.0.0.1',
      '::10.0.0.1',
      'fec0::1',
      'feff::1',
      '2001:10::1',
      '2001:1f:ffff::1',
      '2001:db8::1',
      '5f00::1',
      '100::1',
      '64:ff9b::a9fe:a9fe',
    ]) {
      assert.ok(!isPublicAddress(a), a);
    }
  });
});

describe('safeFetch', () => {
  let server: Server;
  let base: string;
  let allowHosts: string[];
  before(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      switch (url.pathname) {
        case '/page':
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end('<p>hello</p>');
          return;
        case '/big':
          res.writeHead(200, { 'content-type': 'text/plain' });
          for (let i = 0; i < 64; i++) res.write('x'.repeat(1024));
          res.end();
          return;
        case '/hang':
          return; // never answers
        case '/404':
          res.writeHead(404).end();
          return;
        case '/to-page':
          res.writeHead(302, { location: '/page' }).end();
          return;
        case '/to-localhost':
          res
            .writeHead(302, { location: `http://localhost:${(server.address() as AddressInfo).port}/page` })
            .end();
          return;
        case '/to-metadata':
          res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
          return;
        case '/loop':
          res.writeHead(302, { location: '/loop' }).end();
          return;
        default:
          res.writeHead(500).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    base = `http://127.0.0.1:${port}`;
    allowHosts = [`127.0.0.1:${port}`];
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  const reason = (r: string) => (e: unknown) => e instanceof SafeFetchError && e.reason === r;
  const opts = { maxBytes: 16 * 1024, timeoutMs: 2000 };

  it('refuses loopback, private and metadata addresses, by literal and by DNS', async () => {
    await assert.rejects(safeFetch(`${base}/page`, opts), reason('blocked_address'));
    await assert.rejects(
      safeFetch('http://169.254.169.254/latest/meta-data/', opts),
      reason('blocked_address'),
    );
    await assert.rejects(safeFetch('http://[::1]/', opts), reason('blocked_address'));
    await assert.rejects(safeFetch('http://10.0.0.1/', opts), reason('blocked_address'));
    await assert.rejects(safeFetch('http://localhost/', opts), reason('blocked_address'));
  });

  it('refuses non-http schemes and credentials', async () => {
    await assert.rejects(safeFetch('file:///etc/passwd', opts), reason('invalid_url'));
    await assert.rejects(safeFetch('ftp://example.com/x', opts), reason('invalid_url'));
    await assert.rejects(safeFetch('http://user:pw@example.com/', opts), reason('invalid_url'));
    await assert.rejects(safeFetch('not a url', opts), reason('invalid_url'));
  });

  it('fetches an allowed host, following same-host redirects', async () => {
    const r = await safeFetch(`${base}/to-page`, { ...opts, allowHosts });
    assert.equal(r.status, 200);
    assert.equal(r.body.toString(), '<p>hello</p>');
    assert.match(r.contentType, /^text\/html/);
    assert.equal(r.finalUrl, `${base}/page`);
  });

  it('checks every redirect hop again', async () => {
    await assert.rejects(
      safeFetch(`${base}/to-localhost`, { ...opts, allowHosts }),
      reason('blocked_address'),
    );
    await assert.rejects(
      safeFetch(`${base}/to-metadata`, { ...opts, allowHosts }),
      reason('blocked_address'),
    );
    await assert.rejects(safeFetch(`${base}/loop`, { ...opts, allowHosts }), reason('too_many_redirects'));
  });

  it('bounds size, time, status and content type', async () => {
    await assert.rejects(safeFetch(`${base}/big`, { ...opts, allowHosts }), reason('too_large'));
    await assert.rejects(
      safeFetch(`${base}/hang`, { ...opts, timeoutMs: 200, allowHosts }),
      reason('timeout'),
    );
    await assert.rejects(safeFetch(`${base}/404`, { ...opts, allowHosts }), reason('bad_status'));
    await assert.rejects(
      safeFetch(`${base}/page`, { ...opts, allowHosts, allowedContentTypes: ['image/'] }),
      reason('bad_content_type'),
    );
  });
});
