import type { z } from 'zod';
import { ApiError, paramFromPath } from './errors.js';

type Issue = z.core.$ZodIssue;

/**
 * Parses `input` with `schema`; on failure throws the spec's 400 with `param` naming the first
 * offending field by its path (e.g. `messages[0].content[0].image_url`).
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  throw issueToError(r.error.issues[0]);
}

export function issueToError(first: Issue | undefined): ApiError {
  if (!first) return ApiError.invalid('Invalid request body.');
  const { issue, path } = deepest(first, [...first.path]);
  const param = paramFromPath(path);
  return ApiError.invalid(describe(issue, param), param);
}

/**
 * A union reports "Invalid input" at its own path; descend into the branch that got furthest (the
 * longest inner path), so that the message and `param` name the real offending field.
 */
function deepest(issue: Issue, path: PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  if (issue.code !== 'invalid_union' || !issue.errors?.length) return { issue, path };
  let best: Issue | undefined;
  for (const branch of issue.errors) {
    const inner = branch[0];
    if (inner && (!best || inner.path.length > best.path.length)) best = inner;
  }
  if (!best) return { issue, path };
  if (best.path.length === 0) {
    // Every branch failed at the root: a missing value reads better than "Invalid input".
    if (/ received undefined$/.test(best.message)) return { issue: best, path };
    // A branch whose type matched but whose check failed (e.g. a string over its maximum length)
    // says what is wrong; the other branches only say the type differs.
    const checked = issue.errors.map((b) => b[0]).filter((i) => i && i.code !== 'invalid_type');
    if (checked.length === 1 && checked[0]) return { issue: checked[0], path };
    return { issue, path };
  }
  return deepest(best, [...path, ...best.path]);
}

function describe(issue: Issue, param: string | null): string {
  const where = param ? `'${param}'` : 'request body';
  if (issue.code === 'invalid_type' && / received undefined$/.test(issue.message)) {
    return `Missing required parameter: ${where}.`;
  }
  if (issue.code === 'unrecognized_keys')
    return `Unrecognized parameter(s) in ${where}: ${issue.keys.join(', ')}.`;
  return `Invalid value for ${where}: ${issue.message}.`;
}
