// What a limit's name means, in a sentence, and when it lets requests through again: used by the
// Logs page (one refused request) and the member page's "why refused" panel. Pure functions
// (limits-explain.spec.ts); the numbers come from the key's live limit state when it is known.
import type { LimitState } from '@infer/contracts';
import { utc } from './format.js';

export const WINDOW: Record<string, string> = {
  minute: 'per minute',
  day: 'per UTC day',
  month: 'per calendar month (UTC)',
  billing_period: 'per billing period',
  rolling: 'over a rolling window',
  concurrent: 'at the same time',
};

/** `key.requests_per_minute` -> "Requests per minute of the key" (from the name alone). */
export function limitTitle(name: string): string {
  const parts = name.split('.');
  const field = parts.at(-1) ?? name;
  const what: Record<string, string> = {
    requests_per_minute: 'Requests per minute',
    tokens_per_minute: 'Tokens per minute',
    concurrent: 'Concurrent requests',
    rolling_tokens: 'Rolling token budget',
    allowance_tokens: 'Token allowance',
    requests_per_day: 'Requests per day',
    requests_per_month: 'Requests per month',
  };
  const label = what[field] ?? field.replace(/_/g, ' ');
  if (parts[0] === 'key') return `${label} of the key`;
  if (parts[0] === 'models' && parts.length >= 3) return `${label} on ${parts.slice(1, -1).join('.')}`;
  if (parts[0] === 'search') return `${label} of web search`;
  if (parts[0] === 'images') return `${label} of image generation`;
  return label;
}

/** When a refused request would be admitted again, as a sentence, from the live state (or the name). */
export function resetSentence(name: string, state: LimitState | undefined, now = Date.now()): string {
  if (state) {
    if (state.window === 'concurrent') return 'A slot frees as soon as one of the requests running now ends.';
    if (state.resets_at) {
      const inS = Math.max(0, Math.round(state.resets_at - now / 1000));
      const when =
        inS < 120
          ? `in ${inS} s`
          : inS < 7200
            ? `in ${Math.round(inS / 60)} min`
            : `in ${Math.round(inS / 3600)} h`;
      return `${state.remaining > 0 ? 'The window rolls over' : 'It resets'} ${when}, at ${utc(state.resets_at * 1000)}.`;
    }
  }
  if (name.endsWith('_per_minute')) return 'It resets within a minute.';
  if (name.endsWith('.concurrent')) return 'A slot frees as soon as one of the running requests ends.';
  if (name.endsWith('_per_day')) return 'It resets at midnight UTC.';
  if (name.endsWith('_per_month')) return 'It resets on the 1st of next month (UTC).';
  if (name.endsWith('.allowance_tokens')) return 'It resets at the start of the next quota period.';
  return 'Its reset time is not known.';
}

/** "1 request per minute of the key; 1 used now, 0 left." from the live state. */
export function stateSentence(state: LimitState): string {
  const unit = state.limit === 1 ? state.unit.replace(/s$/, '') : state.unit;
  return `${state.limit.toLocaleString('en')} ${unit} ${WINDOW[state.window] ?? state.window}; ${state.used.toLocaleString('en')} used now, ${Math.max(0, state.remaining).toLocaleString('en')} left.`;
}

/** A status code in words, for the table and the detail. */
export function statusText(status: number, code: string | null): string {
  if (status === 429) return code === 'insufficient_quota' ? 'quota spent' : 'rate limited';
  if (status === 402) return 'allowance spent';
  if (status >= 500) return 'server error';
  if (status >= 400) return 'client error';
  return 'ok';
}
