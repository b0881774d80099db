import { EngineError } from './engine.js';

/** Largest upstream answer read (bytes): a search API page is a few tens of kilobytes. */
const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

/**
 * GETs a JSON answer from an operator-configured upstream (SearXNG, Brave). Every failure (network,
 * timeout, non-2xx status, oversized or unreadable body) is an EngineError for the handler to turn into
 * 503; the status and a short excerpt of the body go to the log, never to the client.
 */
export async function getJson(
  engine: string,
  url: URL,
  opts: { headers?: Record<string, string>; signal: AbortSignal; timeoutMs: number },
): Promise<unknown> {
  const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]);
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: 'application/json', ...opts.headers },
      signal,
      redirect: 'follow',
    });
  } catch (e) {
    const what = signal.aborted ? `no answer within ${opts.timeoutMs} ms` : 'unreachable';
    throw new EngineError(engine, `${what} (${url.origin})`, { cause: e });
  }
  let text: string;
  try {
    const declared = Number(res.headers.get('content-length') ?? Number.NaN);
    if (declared > MAX_ANSWER_BYTES) throw new Error('answer too large');
    text = await res.text();
    if (text.length > MAX_ANSWER_BYTES) throw new Error('answer too large');
  } catch (e) {
    throw new EngineError(engine, `could not read the answer (${(e as Error).message})`, { cause: e });
  }
  if (!res.ok) {
    throw new EngineError(engine, `answered HTTP ${res.status}: ${text.slice(0, 200).replace(/\s+/g, ' ')}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new EngineError(engine, `answered something that is not JSON: ${text.slice(0, 120)}`);
  }
}
