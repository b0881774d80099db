// The console's own small component set (no UI kit): fields, buttons, a modal dialog on the native
// <dialog> element, a bar chart in SVG with a table alternative for screen readers.
import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { utc } from './format.js';

export function Field(props: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  error?: string | undefined;
  type?: string;
  required?: boolean;
  autoComplete?: string;
  options?: readonly string[];
  hint?: string;
}) {
  const id = useId();
  const errId = `${id}-err`;
  const common = {
    id,
    name: props.name,
    value: props.value,
    'aria-invalid': props.error ? true : undefined,
    'aria-describedby': props.error ? errId : undefined,
    required: props.required,
  };
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.options ? (
        <select {...common} onChange={(e) => props.onChange(e.target.value)}>
          {props.options.map((o) => (
            <option key={o} value={o}>
              {o || '(any)'}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          type={props.type ?? 'text'}
          autoComplete={props.autoComplete}
          onChange={(e) => props.onChange(e.target.value)}
        />
      )}
      {props.hint && !props.error ? <small>{props.hint}</small> : null}
      {props.error ? (
        <small id={errId} className="error" role="alert">
          {props.error}
        </small>
      ) : null}
    </div>
  );
}

export function Button(props: {
  children: ReactNode;
  onClick?: () => void;
  type?: 'button' | 'submit';
  kind?: 'primary' | 'danger' | 'plain';
  disabled?: boolean;
  /** Why the button is disabled (shown as its title and read by screen readers). */
  reason?: string | undefined;
  /** The accessible name, when the visible text alone is ambiguous (it must start with that text). */
  label?: string;
}) {
  return (
    <button
      type={props.type ?? 'button'}
      className={`btn ${props.kind ?? 'plain'}`}
      onClick={props.onClick}
      disabled={props.disabled}
      title={props.disabled ? props.reason : undefined}
      aria-disabled={props.disabled || undefined}
      aria-label={props.label}
    >
      {props.children}
    </button>
  );
}

/**
 * Previous / Next of a keyset-paged list whose cursor (`after`) and the cursors of the pages before
 * it (`trail`, '-' for the first page) are in the URL, so "Previous" works without offsets.
 */
export function UrlPager(props: {
  params: URLSearchParams;
  nextAfter: string | null | undefined;
  go: (p: { after: string | undefined; trail: string | undefined }) => void;
}) {
  const after = props.params.get('after') ?? '';
  const trail = (props.params.get('trail') ?? '').split(',').filter(Boolean);
  return (
    <div className="pager">
      <Button
        disabled={!after}
        onClick={() =>
          props.go({
            after: trail.at(-1) === '-' ? undefined : trail.at(-1),
            trail: trail.slice(0, -1).join(',') || undefined,
          })
        }
      >
        Previous
      </Button>
      <Button
        disabled={!props.nextAfter}
        onClick={() =>
          props.go({ after: props.nextAfter ?? undefined, trail: [...trail, after || '-'].join(',') })
        }
      >
        Next
      </Button>
    </div>
  );
}

/** A modal dialog; `dismissable=false` ignores Escape (for the one-time key display). */
export function Dialog(props: {
  open: boolean;
  title: ReactNode;
  onClose: () => void;
  children: ReactNode;
  dismissable?: boolean;
  /** Wider than a form (a table of fields). */
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog
      ref={ref}
      className={props.wide ? 'roomy' : undefined}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        if (props.dismissable !== false) props.onClose();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      {props.open ? props.children : null}
    </dialog>
  );
}

export function ErrorNote(props: { error: unknown }) {
  if (!props.error) return null;
  const message = props.error instanceof Error ? props.error.message : String(props.error);
  return (
    <p className="error" role="alert">
      {message}
    </p>
  );
}

export interface Bar {
  label: string;
  value: number;
  /** The part of `value` still filling (e.g. the current hour so far), drawn light after the rest. */
  partial?: number;
}

/**
 * Horizontal bars, one HTML row each (label, bar, value), so that the text keeps its size at any width
 * (one SVG scaled to a phone drew its labels 9 px tall); on narrow screens each label sits above its
 * bar, in full. Each bar is a small SVG sized by its attributes (no style attributes, which the CSP's
 * style-src 'self' would refuse). The same numbers are in a table for assistive tech.
 */
export function BarChart(props: {
  title: string;
  bars: Bar[];
  unit?: string;
  /** What the light part of a bar is (legend and table column), when some bar has a `partial`. */
  partialLabel?: string;
}) {
  const max = Math.max(1, ...props.bars.map((b) => b.value));
  const showPartial = Boolean(props.partialLabel) && props.bars.some((b) => (b.partial ?? 0) > 0);
  return (
    <figure className="chart">
      <figcaption>{props.title}</figcaption>
      {props.bars.length === 0 ? (
        <p>No data for this range.</p>
      ) : (
        <>
          <div
            className="hbars"
            role="img"
            aria-label={`${props.title} (bar chart; the table below has the numbers)`}
          >
            {props.bars.map((b) => {
              const part = Math.min(b.value, Math.max(0, b.partial ?? 0));
              const whole = (100 * (b.value - part)) / max;
              return (
                <div className="hbar" key={b.label}>
                  <span className="hbar-label" title={b.label}>
                    {b.label}
                  </span>
                  <svg
                    className="hbar-track"
                    viewBox="0 0 100 10"
                    preserveAspectRatio="none"
                    aria-hidden="true"
                  >
                    <rect x={0} y={0} width={Math.max(0.5, whole)} height={10} className="chart-bar" />
                    {part > 0 ? (
                      <rect
                        x={whole}
                        y={0.5}
                        width={(100 * part) / max}
                        height={9}
                        className="chart-bar partial"
                      />
                    ) : null}
                  </svg>
                  <span className="hbar-value">{b.value.toLocaleString('en')}</span>
                </div>
              );
            })}
          </div>
          {showPartial ? (
            <p className="chart-note" aria-hidden="true">
              <span className="swatch partial" />
              {props.partialLabel}
            </p>
          ) : null}
          {/* The box is hidden, not the table: a table ignores width: 1px and would widen the page. */}
          <div className="sr-only">
            <table>
              <caption>{props.title}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">{props.unit ?? 'Value'}</th>
                  {showPartial ? <th scope="col">{`of which ${props.partialLabel}`}</th> : null}
                </tr>
              </thead>
              <tbody>
                {props.bars.map((b) => (
                  <tr key={b.label}>
                    <td>{b.label}</td>
                    <td>{b.value}</td>
                    {showPartial ? <td>{b.partial ?? 0}</td> : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </figure>
  );
}

export interface Series {
  label: string;
  /** One value per x position; null = no data there (a gap in the line). */
  values: Array<number | null>;
}

/** Up to 6 distinguishable series colours (CSS classes series-0 … series-5); more repeat. */
const SERIES_CLASSES = 6;

/**
 * A time-series line chart in SVG (one line per series, shared y axis from 0), with a legend, and a
 * visually hidden table of each series' latest, highest and total values for screen readers.
 */
export function LineChart(props: {
  title: string;
  series: Series[];
  /** Labels of the first and last x positions (e.g. `11:02` and `12:01`). */
  xLabels: [string, string];
  unit: string;
  /** A dashed line at this value (an alert's threshold), named in the legend. */
  threshold?: { value: number; label: string };
  /** The label of x position i, for the values read out on hover or keyboard focus. */
  xLabel?: (i: number) => string;
}) {
  // The x position whose values are shown (hover, or arrow keys while the chart has focus).
  const [at, setAt] = useState<number | null>(null);
  const width = 640;
  const height = 180;
  // Room for a y label of 6 characters ("999.5k") at the larger tick size of narrow screens.
  const left = 80;
  const bottom = 26;
  const n = Math.max(...props.series.map((s) => s.values.length), 0);
  const max = Math.max(
    1,
    props.threshold?.value ?? 0,
    ...props.series.flatMap((s) => s.values.filter((v): v is number => v !== null)),
  );
  const x = (i: number) => left + (n <= 1 ? 0 : ((width - left - 8) * i) / (n - 1));
  const y = (v: number) => 6 + (height - bottom - 6) * (1 - v / max);
  // With a threshold, a flat zero line is data too (no 5xx is the news).
  const hasData = props.series.some((s) =>
    s.values.some((v) => v !== null && (v > 0 || props.threshold !== undefined)),
  );
  return (
    <figure className="chart">
      <figcaption>{props.title}</figcaption>
      {!hasData ? (
        <p>No data for this range.</p>
      ) : (
        <>
          {/* Focusable: arrow keys move along the minutes, the values are read out below. */}
          <svg
            viewBox={`0 0 ${width} ${height}`}
            role="img"
            aria-label={`${props.title} (line chart; arrow keys read the values; the table below has the numbers)`}
            preserveAspectRatio="xMinYMin meet"
            // biome-ignore lint/a11y/noNoninteractiveTabindex: the chart is explored with the arrow keys
            tabIndex={0}
            onKeyDown={(e) => {
              if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight' && e.key !== 'Home' && e.key !== 'End')
                return;
              e.preventDefault();
              const cur = at ?? n - 1;
              const next =
                e.key === 'Home' ? 0 : e.key === 'End' ? n - 1 : cur + (e.key === 'ArrowLeft' ? -1 : 1);
              setAt(Math.max(0, Math.min(n - 1, next)));
            }}
            onFocus={() => setAt((a) => a ?? n - 1)}
            onBlur={() => setAt(null)}
            onMouseMove={(e) => {
              const r = e.currentTarget.getBoundingClientRect();
              const vx = ((e.clientX - r.left) / r.width) * width;
              const i = n <= 1 ? 0 : Math.round(((vx - left) / (width - left - 8)) * (n - 1));
              setAt(Math.max(0, Math.min(n - 1, i)));
            }}
            onMouseLeave={() => setAt(null)}
          >
            <line x1={left} x2={width - 8} y1={y(0)} y2={y(0)} className="chart-axis" />
            <line x1={left} x2={width - 8} y1={y(max)} y2={y(max)} className="chart-grid" />
            <text x={left - 6} y={y(max) + 4} textAnchor="end" className="chart-tick">
              {compact(max)}
            </text>
            <text x={left - 6} y={y(0) + 4} textAnchor="end" className="chart-tick">
              0
            </text>
            {props.threshold ? (
              <line
                x1={left}
                x2={width - 8}
                y1={y(props.threshold.value)}
                y2={y(props.threshold.value)}
                className="chart-threshold"
              />
            ) : null}
            {at !== null ? (
              <line x1={x(at)} x2={x(at)} y1={y(max)} y2={y(0)} className="chart-cursor" />
            ) : null}
            <text x={left} y={height - 4} className="chart-tick">
              {props.xLabels[0]}
            </text>
            <text x={width - 8} y={height - 4} textAnchor="end" className="chart-tick">
              {props.xLabels[1]}
            </text>
            {props.series.map((s, si) => {
              // Split at nulls into runs, each one polyline.
              const runs: string[][] = [[]];
              s.values.forEach((v, i) => {
                if (v === null) runs.push([]);
                else runs[runs.length - 1]?.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
              });
              return (
                <g key={s.label} className={`series-${si % SERIES_CLASSES}`}>
                  {runs
                    .filter((r) => r.length)
                    .map((r) =>
                      r.length === 1 ? (
                        <circle
                          key={r[0]}
                          cx={r[0]?.split(',')[0]}
                          cy={r[0]?.split(',')[1]}
                          r={2.5}
                          className="chart-dot"
                        />
                      ) : (
                        <polyline key={r[0]} points={r.join(' ')} className="chart-line" />
                      ),
                    )}
                </g>
              );
            })}
          </svg>
          <ul className="legend" aria-hidden="true">
            {props.series.map((s, si) => (
              <li key={s.label}>
                <span className={`swatch series-${si % SERIES_CLASSES}`} />
                {s.label}
              </li>
            ))}
            {props.threshold ? (
              <li>
                <span className="swatch threshold" />
                {props.threshold.label}
              </li>
            ) : null}
          </ul>
          <p className="chart-readout" aria-live="polite">
            {at !== null
              ? `${props.xLabel ? props.xLabel(at) : `#${at + 1}`}: ${props.series
                  .map((s) => `${s.label} ${s.values[at] ?? '-'}`)
                  .join(', ')}`
              : ''}
          </p>
          <div className="sr-only">
            <table>
              <caption>{props.title}</caption>
              <thead>
                <tr>
                  <th scope="col">Series</th>
                  <th scope="col">{`Latest (${props.unit})`}</th>
                  <th scope="col">{`Highest (${props.unit})`}</th>
                </tr>
              </thead>
              <tbody>
                {props.series.map((s) => {
                  const vals = s.values.filter((v): v is number => v !== null);
                  return (
                    <tr key={s.label}>
                      <td>{s.label}</td>
                      <td>{vals.at(-1) ?? '-'}</td>
                      <td>{vals.length ? Math.max(...vals) : '-'}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
    </figure>
  );
}

function compact(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(Math.round(n * 10) / 10);
}

/** A UTC time (`2026-11-24 03:16 UTC`) that never breaks at its date's hyphens. */
export function Time(props: { t: number | null | undefined }) {
  return <span className="nowrap">{utc(props.t)}</span>;
}

/**
 * Text whose hyphenated words (service names, instance ids, `embed-model`) stay whole when they fit on
 * a line: a browser may break after a hyphen ("probe- / service") on a phone. A word longer than the
 * line (a pod's host name in an instance id) still breaks rather than widen the page (`.word`).
 */
export function Words(props: { text: string }) {
  return (
    <>
      {props.text.split(/(\s+)/).map((w, i) =>
        w.includes('-') ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: the words of one fixed text
          <span className="word" key={i}>
            {w}
          </span>
        ) : (
          w
        ),
      )}
    </>
  );
}
