import type { Logger } from '@infer/telemetry';

/** One request's access line (the gateway's `request` log line). */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  code: string | undefined;
  ms: number;
  keyId: string | undefined;
  trace_id: string | undefined;
}

interface Repeats {
  /** The last line of the group not written. */
  last: AccessLine;
  /** Lines of the group not written since the group's first. */
  count: number;
}

/**
 * Writes the access lines of answers that did not succeed (ADR 0014, "Logging and ids"), at most one line
 * per second for each group of like answers: the same key, route, status and error code. A client over
 * its limit or a model with no replica answers thousands of 429s / 503s a second; written one by one,
 * those lines would flood the log and cost more than deciding the refusal (bench/stack.ts's 429 row and
 * 503 burst show what a refusal costs).
 * The first answer of a group is written at once, as before; the others in the same second are counted,
 * and when the second ends one `request (repeated)` line gives their number with the last one's fields
 * (its request id, trace id and duration), so the log still names every key, route and reason that was
 * refused, and how often. A 500 (a fault someone should look at) is always written. The metrics count
 * every answer either way.
 */
export class AccessLog {
  private groups = new Map<string, Repeats | null>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    private readonly windowMs = 1_000,
    /** Groups kept per window; past it lines are written one by one (a bounded map, never a lost line). */
    private readonly maxGroups = 10_000,
  ) {}

  /** An answer of status 400 or more (a 499 is a client that left). */
  refused(line: AccessLine): void {
    if (line.status === 500) {
      this.log.info(line, 'request');
      return;
    }
    const key = `${line.keyId ?? ''}\u0000${line.route}\u0000${line.status}\u0000${line.code ?? ''}`;
    const group = this.groups.get(key);
    if (group === undefined) {
      if (this.groups.size < this.maxGroups) {
        this.groups.set(key, null);
        this.timer ??= setTimeout(() => this.flush(), this.windowMs).unref();
      }
      this.log.info(line, 'request');
    } else if (group === null) this.groups.set(key, { last: line, count: 1 });
    else {
      group.last = line;
      group.count++;
    }
  }

  /** Ends the window: one `request (repeated)` line per group with lines not written. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const groups = this.groups;
    this.groups = new Map();
    for (const g of groups.values()) {
      if (g) this.log.info({ ...g.last, repeated: g.count }, 'request (repeated)');
    }
  }
}
