import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { usageStreamReplicas } from './usage-stream.js';

describe('usageStreamReplicas', () => {
  it('is 1 when unset or empty', () => {
    assert.equal(usageStreamReplicas({}), 1);
    assert.equal(usageStreamReplicas({ USAGE_STREAM_REPLICAS: ' ' }), 1);
  });
  it('takes 1 to 5', () => {
    assert.equal(usageStreamReplicas({ USAGE_STREAM_REPLICAS: '3' }), 3);
    assert.equal(usageStreamReplicas({ USAGE_STREAM_REPLICAS: '5' }), 5);
  });
  it('refuses anything else with the variable named', () => {
    for (const v of ['0', '6', '2.5', 'three']) {
      assert.throws(() => usageStreamReplicas({ USAGE_STREAM_REPLICAS: v }), /USAGE_STREAM_REPLICAS/);
    }
  });
});
