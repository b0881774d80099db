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
  // An unknown field is named itself (`param: 'previous_response_id'`), not its parent object.
  const param = paramFromPath(
    issue.code === 'unrecognized_keys' && issue.keys[0] ? [...path, issue.keys[0]] : path,
  );
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.map((k) => `'${paramFromPath([...path, k])}'`).join(', ');
    const them = issue.keys.length > 1 ? 'them' : 'it';
    return ApiError.invalid(
      `Unsupported parameter(s): ${names}. This platform does not support ${them}; remove ${them} from the request.`,
      param,
    );
  }
  return ApiError.invalid(describe(issue, param), param);
}

/**
 * A union reports "Invalid input" at its own path; descend into the branch that got furthest (the
 * longest inner path), so that the message and `param` name the real offending field.
 */
function deepest(issue: Issue, path: PropertyKey[]): { issue: Issue; path: PropertyKey[] } {
  if (issue.code !== 'invalid_union' || !issue.errors?.length) return { issue, path };
  // Deepest first; on a tie, a branch whose `type` matched (its failure is elsewhere) wins over one
  // that failed on `type` itself, so `{type: 'item_reference'}` without `id` names `id`.
  const score = (i: Issue) =>
    2 * i.path.length + (i.path.at(-1) === 'type' && i.code === 'invalid_value' ? 0 : 1);
  let best: Issue | undefined;
  for (const branch of issue.errors) {
    const inner = branch[0];
    if (inner && (!best || score(inner) > score(best))) best = inner;
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
  return `Invalid value for ${where}: ${issue.message}.`;
}
