/**
 * Text as the embedding service's non-neural engines see it.
 *
 * `countTokens` is the service's TOKEN COUNT APPROXIMATION, used where no real tokenizer is at hand:
 * usage of the lexical-hash and bm25 engines, usage of upstreams that report none (TEI's native routes),
 * and the per-input limit check before an upstream call. It is not any model's tokenizer; it is stable,
 * cheap and close in magnitude for English (about 1.3 pieces per word). It is the same rule as the
 * chat-service's approximation (apps/chat-service/src/tokens.ts), so one text costs the same
 * everywhere. Scanning left to right and skipping whitespace, a token ("piece") is:
 *   - one Han / Hiragana / Katakana character, or
 *   - a run of 1 to 8 other letters, combining marks or digits (longer runs split every 8), or
 *   - one other character (punctuation, symbol, emoji).
 * `Hello, world!` is 4 tokens, `internationalization` (20 letters) is 3.
 *
 * `terms` is the lexical analysis shared by lexical-hash and bm25: NFKC, lower case, and the text split
 * into words (whole runs of letters, marks and digits; each Han/Hiragana/Katakana character is a word of
 * its own, since those scripts do not separate words with spaces) and symbols (any other non-space
 * character).
 */
const CJK = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}';
const PIECE = new RegExp(`[${CJK}]|(?:(?![${CJK}])[\\p{L}\\p{M}\\p{N}]){1,8}|[^\\s\\p{L}\\p{M}\\p{N}]`, 'gu');
const TERM = new RegExp(
  `([${CJK}])|((?:(?![${CJK}])[\\p{L}\\p{M}\\p{N}])+)|([^\\s\\p{L}\\p{M}\\p{N}])`,
  'gu',
);
/** camelCase / PascalCase boundaries inside an identifier: `parseJSONValue` -> parse, JSON, Value. */
const CASE_PART = /\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+|\p{Lu}+|\p{N}+/gu;

export function countTokens(text: string): number {
  let n = 0;
  PIECE.lastIndex = 0;
  while (PIECE.exec(text)) n++;
  return n;
}

export interface Term {
  text: string;
  /** A word (letters/digits, or one CJK character), or a single symbol character. */
  kind: 'word' | 'symbol';
}

/**
 * The words and symbols of `text`, normalized (NFKC, lower case). With `splitIdentifiers`, a word
 * written in camelCase or PascalCase (`parseJsonValue`) is followed by its parts (`parse`, `json`,
 * `value`), so that code matches the words it is made of.
 */
export function terms(text: string, opts: { splitIdentifiers?: boolean } = {}): Term[] {
  const out: Term[] = [];
  const norm = text.normalize('NFKC');
  TERM.lastIndex = 0;
  for (let m = TERM.exec(norm); m; m = TERM.exec(norm)) {
    if (m[3] !== undefined) {
      out.push({ text: m[3].toLowerCase(), kind: 'symbol' });
      continue;
    }
    const word = (m[1] ?? m[2]) as string;
    const lower = word.toLowerCase();
    out.push({ text: lower, kind: 'word' });
    if (opts.splitIdentifiers && m[2] !== undefined && lower !== word && word.length > 2) {
      const parts = word.match(CASE_PART);
      if (parts && parts.length > 1) for (const p of parts) out.push({ text: p.toLowerCase(), kind: 'word' });
    }
  }
  return out;
}
