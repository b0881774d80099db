import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '@infer/telemetry';
import { Counter, Registry } from 'prom-client';
import { OpsServer } from './ops-server.js';

describe('OpsServer (/healthz, /readyz, /metrics)', () => {
  let ready = true;
  const own = new Registry();
  const jobs = new Counter({ name: 'test_jobs_total', help: 'test', registers: [own] });
  const ops = new OpsServer({
    service: 'test-service',
    port: 0,
    host: '127.0.0.1',
    log: createLogger('ops-spec', 'silent'),
    checks: [
      { name: 'engine', check: () => ready },
      {
        name: 'flaky',
        check: () => {
          if (!ready) throw new Error('down');
          return true;
        },
      },
    ],
    registries: [own],
  });
  let url: string;
  before(async () => {
    url = await ops.start();
  });
  after(() => ops.close());

  it('is healthy and ready while every check passes', async () => {
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const r = await fetch(`${url}/readyz`);
    assert.equal(r.status, 200);
    assert.deepEqual(await r.json(), { status: 'ready', checks: { engine: true, flaky: true } });
  });

  it('is not ready (503, naming the checks) when a check fails or throws, and ready again after', async () => {
    ready = false;
    const r = await fetch(`${url}/readyz`);
    assert.equal(r.status, 503);
    assert.deepEqual(((await r.json()) as { checks: unknown }).checks, { engine: false, flaky: false });
    assert.equal((await fetch(`${url}/healthz`)).status, 200, 'still alive');
    ready = true;
    assert.equal((await fetch(`${url}/readyz`)).status, 200);
  });

  it('serves the RPC gauge, process metrics and the service’s own registry, labelled with the service', async () => {
    jobs.inc(3);
    const text = await (await fetch(`${url}/metrics`)).text();
    assert.match(text, /^infer_rpc_inflight\{service="test-service"\} 0$/m);
    assert.match(text, /^process_cpu_user_seconds_total\{service="test-service"\} /m);
    assert.match(text, /^test_jobs_total 3$/m);
  });

  it('answers 404 elsewhere and 405 for other methods', async () => {
    assert.equal((await fetch(`${url}/nope`)).status, 404);
    assert.equal((await fetch(`${url}/healthz`, { method: 'POST' })).status, 405);
  });

  it('says 503 on both probes once shutting down', async () => {
    ops.shuttingDown();
    assert.equal((await fetch(`${url}/healthz`)).status, 503);
    assert.equal((await fetch(`${url}/readyz`)).status, 503);
  });
});
