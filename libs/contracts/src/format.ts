/**
 * An integer with comma thousands separators, as `n.toLocaleString('en-US')` writes it ("32,000").
 * Not through Intl: the first Intl formatter of a process maps megabytes of ICU data into its RSS (ADR
 * 0015), and these messages are built when the schemas load and on the limits' refusals.
 */
export function formatCount(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n));
  let out = '';
  for (let end = digits.length; end > 0; end -= 3) {
    const start = end > 3 ? end - 3 : 0;
    out = out ? `${digits.slice(start, end)},${out}` : digits.slice(start, end);
  }
  return n < 0 ? `-${out}` : out;
}
