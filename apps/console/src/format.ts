// Formatting shared by the pages (pure functions, unit-tested in format.spec.ts).

/** Unix seconds or milliseconds (ms when > 1e12) as `2026-11-24 03:16 UTC`. */
export function utc(t: number | null | undefined): string {
  if (t === null || t === undefined) return '-';
  const d = new Date(t > 1e12 ? t : t * 1000);
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** `3 s ago`, `5 min ago`, `2 h ago`, `4 d ago` relative to `now` (ms). */
export function ago(t: number | null | undefined, now = Date.now()): string {
  if (t === null || t === undefined) return 'never';
  const ms = now - (t > 1e12 ? t : t * 1000);
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86_400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}

/** 1234567 -> `1.23M`, 1234 -> `1.23k`. */
export function compactNumber(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${trim(n / 1e9)}B`;
  if (abs >= 1e6) return `${trim(n / 1e6)}M`;
  if (abs >= 1e3) return `${trim(n / 1e3)}k`;
  return String(n);
}
const trim = (x: number) => x.toFixed(2).replace(/\.?0+$/, '');

/** RFC 4180 CSV: fields with a comma, quote or line break are quoted, quotes doubled. Formula-looking cells are prefixed with `'`. */
export function toCsv(header: string[], rows: Array<Array<string | number | null>>): string {
  const cell = (v: string | number | null) => {
    let s = v === null ? '' : String(v);
    if (/^[=+\-@\t\r]/.test(s) && typeof v === 'string') s = `'${s}`;
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${[header, ...rows].map((r) => r.map(cell).join(',')).join('\r\n')}\r\n`;
}

/** A span of time in the largest whole unit: `45 s`, `12 min`, `5 h`, `3 d`. */
export function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** A key's expiry (unix seconds) relative to `now` (ms): `never`, `expires in 3 d`, `expired 2 h ago`. */
export function expiryText(expiresAt: number | null | undefined, now = Date.now()): string {
  if (expiresAt === null || expiresAt === undefined) return 'never';
  const ms = expiresAt * 1000 - now;
  return ms > 0 ? `expires in ${span(ms)}` : `expired ${span(-ms)} ago`;
}
