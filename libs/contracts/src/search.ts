import { z } from 'zod';
import type { WireError } from './errors.js';
import { TextLimits } from './text-limits.js';

export const SEARCH_COUNT_MIN = 1;
export const SEARCH_COUNT_MAX = 20;
export const SEARCH_COUNT_DEFAULT = 5;

const FRESHNESS_RE = /^(?:pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$/;
const FRESHNESS_HINT = 'must be pd, pw, pm, py or a range YYYY-MM-DDtoYYYY-MM-DD';

/** A real calendar date `YYYY-MM-DD` (rejects 2024-02-30). */
function isCalendarDate(s: string): boolean {
  const [y, m, d] = s.split('-').map(Number) as [number, number, number];
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

export const FreshnessSchema = z
  .string()
  .regex(FRESHNESS_RE, FRESHNESS_HINT)
  .superRefine((v, ctx) => {
    // Zod runs this even after the regex failed: only look at well-shaped ranges.
    if (v.length <= 2 || !FRESHNESS_RE.test(v)) return;
    const [from, to] = v.split('to') as [string, string];
    if (!isCalendarDate(from) || !isCalendarDate(to)) {
      ctx.addIssue({ code: 'custom', message: `${FRESHNESS_HINT}, with valid dates (got ${v})`, input: v });
    } else if (from > to) {
      ctx.addIssue({ code: 'custom', message: `range start ${from} is after its end ${to}`, input: v });
    }
  });

export function clampSearchCount(n: number): number {
  return Math.min(SEARCH_COUNT_MAX, Math.max(SEARCH_COUNT_MIN, n));
}

// ---- request: POST /v1/search (and the arguments of the web_search tool) ----
export const SearchRequestSchema = z
  .object({
    query: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(TextLimits.searchQuery, `must be at most ${TextLimits.searchQuery} characters`)
      // The local index and the cache live in PostgreSQL, whose text cannot hold a NUL character.
      .refine((q) => !q.includes('\u0000'), 'must not contain NUL (\\u0000) characters')
      .describe(`What to search the web for (at most ${TextLimits.searchQuery} characters).`),
    // Clamped, not refused. `overwrite` (not `transform`) keeps the schema a plain integer, so its JSON
    // Schema (OpenAPI, tool parameters) still shows the type, range and default.
    count: z
      .number()
      .int()
      .overwrite(clampSearchCount)
      .meta({
        minimum: SEARCH_COUNT_MIN,
        maximum: SEARCH_COUNT_MAX,
        description: `Number of results, ${SEARCH_COUNT_MIN} to ${SEARCH_COUNT_MAX}; values outside the range are clamped.`,
      })
      .default(SEARCH_COUNT_DEFAULT),
    freshness: FreshnessSchema.optional().describe(
      'Time filter: pd (past day), pw (past week), pm (past month), py (past year), or a range YYYY-MM-DDtoYYYY-MM-DD. Omit for no time filter.',
    ),
    fetch_content: z
      .boolean()
      .default(false)
      .describe('Add the readable main text of the top results as `content` (slower).'),
  })
  .meta({ id: 'SearchRequest' });
export type SearchRequest = z.infer<typeof SearchRequestSchema>;
export type SearchRequestInput = z.input<typeof SearchRequestSchema>;

// ---- response ----
export const SearchResultSchema = z.object({
  title: z.string(),
  url: z.string(),
  snippet: z.string(),
  source: z.string(),
  /** Extracted main text; only when the request set `fetch_content: true`. */
  content: z.string().optional(),
});
export type SearchResult = z.infer<typeof SearchResultSchema>;

export const SearchResponseSchema = z
  .object({
    results: z.array(SearchResultSchema),
    /** True when served from the ~15-minute cache of identical queries. */
    cached: z.boolean(),
  })
  .meta({ id: 'SearchResponse' });
export type SearchResponse = z.infer<typeof SearchResponseSchema>;

// ---- the same request as a model tool ----
export const WEB_SEARCH_TOOL_NAME = 'web_search';
export const WEB_SEARCH_TOOL_DESCRIPTION =
  'Search the web and return the top results (title, url, snippet, source), optionally with the main text of each page.';

/** JSON Schema of the tool arguments, generated from SearchRequestSchema (input side: defaults shown). */
function searchParametersJsonSchema(): Record<string, unknown> {
  const json = z.toJSONSchema(SearchRequestSchema, { target: 'draft-2020-12', io: 'input' }) as {
    $ref?: string;
    $defs?: Record<string, Record<string, unknown>>;
  };
  // The request carries an `id`, so the root comes out as a `$ref` into `$defs`: inline it.
  const root = json.$defs?.[SearchRequestSchema.meta()?.id ?? ''];
  if (!root || Object.keys(json.$defs ?? {}).length !== 1) {
    throw new Error('web_search parameters: unexpected JSON Schema shape');
  }
  return JSON.parse(JSON.stringify(root)) as Record<string, unknown>;
}

export interface FunctionToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Function-tool definition of web search (chat `tools[]`), also the MCP tool's input schema. */
export const WEB_SEARCH_TOOL: FunctionToolDefinition = Object.freeze({
  type: 'function',
  function: Object.freeze({
    name: WEB_SEARCH_TOOL_NAME,
    description: WEB_SEARCH_TOOL_DESCRIPTION,
    parameters: searchParametersJsonSchema(),
  }),
}) as FunctionToolDefinition;

// ---- hosted search: a service asking the gateway that admitted its request to search for it ----
/**
 * What a service sends on the envelope's `search` subject: one search for the request `requestId`
 * (the Responses API's hosted `web_search` tool). The gateway admits it against the member's search
 * budget like POST /v1/search.
 */
export const HostedSearchAskSchema = z.object({
  requestId: z.string().min(1),
  query: z.string(),
});
export type HostedSearchAsk = z.infer<typeof HostedSearchAskSchema>;

/** The gateway's answer: the results, or the error a POST /v1/search would have answered. */
export type HostedSearchAnswer = { results: SearchResult[] } | { error: WireError };
