import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../../../../../test/support/wait-for.js';
import { BatchLane } from './lane.js';

describe('BatchLane', () => {
  const make = (over: Partial<ConstructorParameters<typeof BatchLane>[0]> = {}) => {
    let pressure = 0;
    let now = 1_000;
    const lane = new BatchLane({
      cap: 2,
      yieldCap: 1,
      backoffMinMs: 100,
      backoffMaxMs: 400,
      pressure: () => pressure,
      now: () => now,
      ...over,
    });
    return {
      lane,
      setPressure: (p: number) => {
        pressure = p;
      },
      advance: (ms: number) => {
        now += ms;
      },
    };
  };
  const never = () => false;

  it('caps the lines of one model, not of others, and frees a slot on release', async () => {
    const { lane } = make();
    assert.equal(await lane.acquire('m', never), true);
    assert.equal(await lane.acquire('m', never), true);
    let third = false;
    const p = lane.acquire('m', never).then((v) => {
      third = v;
    });
    assert.equal(await lane.acquire('other', never), true);
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false);
    lane.release('m');
    await p;
    assert.equal(third, true);
    assert.equal(lane.running, 3);
  });

  it('drops to the yield cap while interactive requests are in flight', async () => {
    const { lane, setPressure } = make();
    setPressure(3);
    assert.equal(lane.capNow(), 1);
    assert.equal(lane.yielding, true);
    assert.equal(await lane.acquire('m', never), true);
    let stopped = false;
    const second = lane.acquire('m', () => stopped);
    // The second line waited for the interactive traffic.
    await waitFor('the second line to yield', () => lane.yields > 0);
    setPressure(0);
    assert.equal(await second, true);
    stopped = true;
  });

  it('gives up waiting when the batch stops (cancel, expiry, shutdown)', async () => {
    const { lane } = make({ cap: 1 });
    assert.equal(await lane.acquire('m', never), true);
    let stop = false;
    const waiting = lane.acquire('m', () => stop);
    stop = true;
    assert.equal(await waiting, false);
  });

  it('backs a model off after 429/503, doubling up to the maximum, reset by a success', async () => {
    const { lane, advance } = make();
    assert.equal(lane.backoff('m'), 100);
    assert.equal(lane.backoff('m'), 200);
    assert.equal(lane.backoff('m'), 400);
    assert.equal(lane.backoff('m'), 400);
    let got = false;
    const p = lane.acquire('m', never).then((v) => {
      got = v;
    });
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(got, false, 'paused');
    advance(1_000);
    await p;
    assert.equal(got, true);
    lane.succeeded('m');
    assert.equal(lane.backoff('m'), 100);
  });
});
