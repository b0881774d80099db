import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobTimings, percentile } from './queues.service.js';

describe('queue timings', () => {
  it('takes nearest-rank percentiles', () => {
    const s = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    assert.equal(percentile(s, 50), 50);
    assert.equal(percentile(s, 95), 100);
    assert.equal(percentile([], 50), 0);
  });

  it('groups wait and run times of finished jobs by name', () => {
    const t = jobTimings([
      { name: 'transcribe', timestamp: 1000, processedOn: 1100, finishedOn: 1600 },
      { name: 'transcribe', timestamp: 2000, processedOn: 2300, finishedOn: 2400 },
      { name: 'segment', timestamp: 1000, processedOn: 1000, finishedOn: 1250 },
      { name: 'segment', timestamp: 1000, processedOn: undefined, finishedOn: undefined },
    ]);
    assert.deepEqual(t.transcribe, {
      jobs: 2,
      wait_ms: { p50: 100, p95: 300, max: 300 },
      run_ms: { p50: 100, p95: 500, max: 500 },
    });
    assert.equal(t.segment?.jobs, 1);
    assert.deepEqual(t.segment?.wait_ms, { p50: 0, p95: 0, max: 0 });
  });
});

describe('job data summary', () => {
  it('shows short values, sizes of long strings, arrays and objects', async () => {
    const { summarize } = await import('./queue-jobs.service.js');
    assert.deepEqual(
      summarize({ prompt: 'a fox', n: 2, audio: 'x'.repeat(5000), tags: [1, 2], opts: { a: 1 }, none: null }),
      {
        prompt: '"a fox"',
        n: '2',
        audio: 'string (5000 characters)',
        tags: 'array (2 items)',
        opts: 'object (1 fields)',
        none: 'null',
      },
    );
    assert.deepEqual(summarize('plain'), { value: '"plain"' });
  });
});
