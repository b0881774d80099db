import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CreateMemberRequestSchema, SetKeyLimitsRequestSchema } from '@infer/contracts';
import { compact, fieldErrors } from './validate.js';

describe('console form validation (the API contracts)', () => {
  it('names each bad field the way the API names `param`', () => {
    const errs = fieldErrors(CreateMemberRequestSchema, { name: '', tier: 'gold', email: 'nope' });
    assert.deepEqual(Object.keys(errs).sort(), ['email', 'name', 'tier']);
    assert.deepEqual(fieldErrors(CreateMemberRequestSchema, { name: 'Ada', tier: 'premium' }), {});
  });

  it('validates limit overrides with the limits contract', () => {
    const errs = fieldErrors(SetKeyLimitsRequestSchema, { limits: { key: { requests_per_minute: -1 } } });
    assert.deepEqual(Object.keys(errs), ['limits.key.requests_per_minute']);
    assert.deepEqual(fieldErrors(SetKeyLimitsRequestSchema, { limits: null }), {});
  });

  it('drops empty optional fields', () => {
    assert.deepEqual(compact({ name: 'a', email: '', tier: 'community' }), { name: 'a', tier: 'community' });
  });
});
