// Optional body logging (docs/adr/0110-request-log.md, "Bodies"): when an operator turned it on for the
// member or the model, the gateway keeps the request body and the answer of a call, redacts secrets and
// caps each at REQUEST_LOG_BODY_MAX_BYTES before anything leaves the gateway. Nothing here runs for a
// call whose member and model are both off (one boolean read at admission).
import type { RequestBodies } from '@infer/contracts';

/** Ends a body cut at the cap: how long the whole body was. */
export const TRUNCATED_MARKER = (total: number) => `…[truncated: the body was ${total} bytes]`;
export const REDACTED = '[redacted]';

/**
 * A field whose value is a secret, by its name (any case, `_`/`-` or none between the words): password,
 * secret, api key, token, authorization, credential, private key. Its string value is replaced; the
 * same inside JSON that is itself a string (tool-call arguments: `\"password\":\"...\"`).
 */
const SECRET_FIELD =
  /(\\?")([^"\\]*(?:passw(?:or)?d|secret|api[_-]?key|apikey|token|authori[sz]ation|credential|private[_-]?key)[^"\\]*)\1(\s*:\s*)\1(?:[^"\\]|\\(?!")|\\"(?!\s*[,}\]]))*(?:\1|$)/gi;
/** API keys: ours (`sk-inf-` + 40 base62) and OpenAI-style `sk-...`, `sk-proj-...`. */
const API_KEY = /\bsk-[A-Za-z0-9][A-Za-z0-9_-]{7,}/g;
/** `Bearer <token>` anywhere (a header echoed into a prompt, a curl line). */
const BEARER = /\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi;

/** The text with every secret the patterns above match replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return text
    .replace(
      SECRET_FIELD,
      (_m, q: string, name: string, sep: string) => `${q}${name}${q}${sep}${q}${REDACTED}${q}`,
    )
    .replace(API_KEY, `sk-${REDACTED}`)
    .replace(BEARER, (_m, word: string) => `${word} ${REDACTED}`);
}

/**
 * One body as it is logged: redacted, then cut to at most `maxBytes` UTF-8 bytes (never inside a
 * character) followed by the truncation marker. `totalBytes`: the whole body's size when `text` is
 * already a part of it (a stream's capture). A body far over the cap is cut before the redaction (with
 * room for a secret that straddles the cut to still match), so the work is bounded by the cap.
 */
export function loggedBody(
  text: string,
  maxBytes: number,
  totalBytes?: number,
): { text: string; truncated: boolean } {
  const source = text.length > maxBytes * 2 ? text.slice(0, maxBytes * 2) : text;
  const redacted = redactSecrets(source);
  // UTF-16 length x 3 bounds the UTF-8 length: most bodies need no byte count.
  if (totalBytes === undefined && source === text && redacted.length * 3 <= maxBytes)
    return { text: redacted, truncated: false };
  const buf = Buffer.from(redacted, 'utf8');
  const total = totalBytes ?? (source === text ? buf.length : Buffer.byteLength(text, 'utf8'));
  if (buf.length <= maxBytes && total <= buf.length) return { text: redacted, truncated: false };
  let end = Math.min(maxBytes, buf.length);
  // Back off to the start of a character (continuation bytes are 10xxxxxx).
  while (end > 0 && end < buf.length && ((buf[end] as number) & 0xc0) === 0x80) end--;
  return { text: buf.toString('utf8', 0, end) + TRUNCATED_MARKER(total), truncated: true };
}

/** The request and answer of a call as the usage event carries them. */
export function requestBodies(
  request: string,
  response: string | { text: string; truncated: boolean },
  maxBytes: number,
): RequestBodies {
  const req = loggedBody(request, maxBytes);
  const res = typeof response === 'string' ? loggedBody(response, maxBytes) : response;
  return {
    request: req.text,
    response: res.text,
    ...(req.truncated ? { requestTruncated: true } : {}),
    ...(res.truncated ? { responseTruncated: true } : {}),
  };
}

/**
 * The frames of a stream as they arrive, one frame a line, kept until they pass `maxBytes` (then only
 * counted: the logged text is cut at the cap anyway).
 */
export class FrameCapture {
  private readonly frames: Uint8Array[] = [];
  private kept = 0;
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  add(frame: Uint8Array): void {
    this.total += frame.byteLength + 1;
    if (this.kept > this.maxBytes) return;
    this.frames.push(frame);
    this.kept += frame.byteLength + 1;
  }

  /** The stream as it is logged (redacted, capped). */
  logged(): { text: string; truncated: boolean } {
    const dec = new TextDecoder();
    let s = '';
    for (const f of this.frames) s += `${dec.decode(f)}\n`;
    return loggedBody(s, this.maxBytes, this.total > this.kept ? this.total : undefined);
  }
}
