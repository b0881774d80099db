import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AlertmanagerReader } from './alertmanager.js';

/** An HTTP server answering Alertmanager's GET /api/v2/alerts (a test double of Alertmanager). */
describe('alerts read from Alertmanager (ALERTMANAGER_URL)', () => {
  let url = '';
  let status = 200;
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify([
        {
          labels: { alertname: 'InferQueueBacklog', severity: 'warning', queue: 'images' },
          annotations: { summary: 'More than 50 jobs have waited 10 minutes in images.' },
          startsAt: '2026-11-29T12:00:00.000Z',
          status: { state: 'active', silencedBy: [], inhibitedBy: [] },
        },
        {
          labels: { alertname: 'InferHighErrorRate', severity: 'critical' },
          annotations: { summary: 'More than 5% of gateway answers are 5xx.' },
          startsAt: '2026-11-29T12:30:00.000Z',
          status: { state: 'active' },
        },
        { labels: { alertname: 'Old' }, startsAt: '2026-11-29T12:00:00Z', status: { state: 'suppressed' } },
      ]),
    );
  });
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/am`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('lists the active alerts, critical first, with since and summary; asks for unsilenced ones only', async () => {
    let now = 0;
    const reader = new AlertmanagerReader(url, () => now);
    const list = await reader.read();
    assert.equal(asked[0], '/am/api/v2/alerts?active=true&silenced=false&inhibited=false');
    assert.deepEqual(
      list.map((a) => [a.alert, a.severity, a.state, a.labels, new Date(a.since).toISOString(), a.summary]),
      [
        [
          'InferHighErrorRate',
          'critical',
          'firing',
          {},
          '2026-11-29T12:30:00.000Z',
          'More than 5% of gateway answers are 5xx.',
        ],
        [
          'InferQueueBacklog',
          'warning',
          'firing',
          { queue: 'images' },
          '2026-11-29T12:00:00.000Z',
          'More than 50 jobs have waited 10 minutes in images.',
        ],
      ],
    );
    // Read at most every 10 s.
    now += 5_000;
    await reader.read();
    assert.equal(asked.length, 1);
    now += 6_000;
    status = 503;
    await assert.rejects(reader.read(), /Alertmanager answered 503/);
  });
});
