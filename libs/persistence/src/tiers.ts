import { TIERS, type Tier, TierSchema } from '@infer/contracts';
import { InvalidInputError } from './errors.js';

/** Parses a tier name or throws an InvalidInputError that lists the valid ones. */
export function parseTier(value: unknown): Tier {
  const r = TierSchema.safeParse(value);
  if (!r.success)
    throw new InvalidInputError(`unknown tier: ${String(value)} (expected one of ${TIERS.join(', ')})`);
  return r.data;
}
