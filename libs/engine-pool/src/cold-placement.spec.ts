import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnginePoolSchema } from '@infer/contracts';
import { coldChars } from './affinity.js';
import { AffinityKey } from './hash.js';
import { type Endpoint, EnginePool } from './pool.js';

const four = [0, 1, 2, 3].map((i) => ({ url: `http://10.0.0.${i}:8000/v1` }));
let seq = 0;
const pool = () =>
  new EnginePool(
    EnginePoolSchema.parse({ endpoints: four, routing: 'prefix_affinity', probe_interval_ms: 0 }),
    { model: `cold${seq++}` },
  );
const keyOf = (s: string) => new AffinityKey().add(s).value();
/** Two keys whose ring endpoint is the same (found by trying). */
function twoKeysOneHome(p: EnginePool): [number, number, Endpoint] {
  const a = keyOf('conversation a');
  const home = p.pick({ key: a }, 0) as Endpoint;
  for (let i = 0; ; i++) {
    const b = keyOf(`conversation b${i}`);
    if (p.pick({ key: b }, 0) === home) return [a, b, home];
  }
}

describe('cold placement of long new prompts', () => {
  it('coldChars counts what follows the system prompts of a first turn, nothing for a later turn', () => {
    const sys = { role: 'system', content: 'S'.repeat(500) };
    assert.equal(coldChars([sys, { role: 'user', content: 'x'.repeat(9_000) }]), 9_000);
    assert.equal(coldChars([sys, { role: 'user', content: [{ type: 'text', text: 'abc' }] }]), 3);
    assert.equal(
      coldChars([
        sys,
        { role: 'user', content: 'q' },
        { role: 'assistant', content: 'a' },
        { role: 'user', content: 'q2' },
      ]),
      undefined,
    );
  });

  it('a long first turn whose endpoint is busy prefilling another goes where the least prefill is pending; its later turns follow it', async () => {
    const p = pool();
    const [a, b, home] = twoKeysOneHome(p);
    const first = p.tryAcquire({ key: a, cold: 20_000 });
    assert.equal(first?.endpoint, home);
    assert.equal(home.prefilling, 20_000);
    // Same home, also long and new: placed elsewhere, not behind the first one's prefill.
    const second = p.tryAcquire({ key: b, cold: 20_000 });
    assert.ok(second && second.endpoint !== home);
    const moved = second.endpoint;
    // Its conversation's later turns (no cold part) go where its prefix now is, not to the ring's endpoint.
    const later = p.tryAcquire({ key: b });
    assert.equal(later?.endpoint, moved);
    later?.release('ok');
    // The first byte ends a request's pending prefill; release does too (once).
    first?.started();
    assert.equal(home.prefilling, 0);
    first?.release('ok');
    assert.equal(home.prefilling, 0);
    second.release('ok');
    assert.equal(moved.prefilling, 0);
    // Placed by recent long new prompts too (decaying): a third one goes to an endpoint that has had
    // none lately, whatever its ring endpoint; a short new prompt stays on the ring.
    const c = p.tryAcquire({ key: keyOf('conversation c'), cold: 20_000 });
    assert.ok(c && c.endpoint !== home && c.endpoint !== moved);
    const shortKey = keyOf('a short question');
    const short = p.tryAcquire({ key: shortKey, cold: 100 });
    // Its ring endpoint, read from a fresh pool with the same endpoints (no moves, no load).
    const fresh = pool();
    assert.equal(short?.endpoint.url, fresh.pick({ key: shortKey }, 0)?.url);
    await fresh.close();
    c.release('ok');
    short?.release('ok');
  });

  it('a remembered endpoint that cools down sends the key back to the ring', () => {
    const p = pool();
    const [a, b, home] = twoKeysOneHome(p);
    const first = p.tryAcquire({ key: a, cold: 20_000 });
    const second = p.tryAcquire({ key: b, cold: 20_000 });
    assert.ok(second && second.endpoint !== home);
    first?.release('ok');
    second.release('connect', 'refused'); // cools the endpoint it moved to
    const later = p.tryAcquire({ key: b });
    assert.equal(later?.endpoint, home);
    later?.release('ok');
  });
});
