import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '@infer/contracts';
import { joinList } from './collect.js';

const parts = (...arrays: unknown[][]) => arrays.map((a) => Buffer.from(JSON.stringify(a).slice(1, -1)));

describe('collected list replies', () => {
  it('joins the frames into the list field, in order, keeping the other fields and their order', () => {
    const body = joinList(
      { object: 'list', data: [], model: 'm', usage: { prompt_tokens: 3, total_tokens: 3 } },
      'data',
      parts([{ index: 0 }, { index: 1 }], [{ index: 2 }]),
    );
    assert.equal(
      body.toString(),
      '{"object":"list","data":[{"index":0},{"index":1},{"index":2}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}',
    );
    const exact = parts([{ a: 'x,]"' }], [{ b: 2 }]);
    const bytes = exact.reduce((s, p) => s + p.length, 0);
    assert.deepEqual(
      JSON.parse(joinList({ id: 'r', results: [], meta: {} }, 'results', exact, bytes).toString()),
      {
        id: 'r',
        results: [{ a: 'x,]"' }, { b: 2 }],
        meta: {},
      },
    );
  });

  it('makes an empty list from no frames, and refuses an end frame without an object', () => {
    assert.deepEqual(JSON.parse(joinList({ id: 'r', results: [] }, 'results', []).toString()), {
      id: 'r',
      results: [],
    });
    assert.throws(() => joinList(null, 'data', []), ApiError);
    assert.throws(() => joinList([1], 'data', []), ApiError);
  });
});
