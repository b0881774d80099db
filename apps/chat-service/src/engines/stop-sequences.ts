/**
 * Cuts generated text before the first stop sequence, as text streams in. Text that could still turn
 * out to be the start of a stop sequence is held back until the next push decides it, so nothing past
 * a stop is ever emitted. Engine-neutral: for engines that generate text themselves (the simulator,
 * embedded llama.cpp); an upstream server applies `stop` on its side.
 */
export class StopSequenceFilter {
  private held = '';
  private done = false;
  private hit: string | null = null;
  private readonly stops: string[];

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** True once a stop sequence was seen: the engine should finish with reason 'stop'. */
  get stopped(): boolean {
    return this.done;
  }

  /** The stop sequence that ended the text (the earliest match), or null while none did. */
  get matched(): string | null {
    return this.hit;
  }

  /** Feeds generated text; returns the part that is safe to emit now (maybe ''). */
  push(text: string): string {
    if (this.done) return '';
    if (!this.stops.length) return text;
    const buf = this.held + text;
    let cut = -1;
    let hit = '';
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) {
        cut = i;
        hit = s;
      }
    }
    if (cut >= 0) {
      this.done = true;
      this.hit = hit;
      this.held = '';
      return buf.slice(0, cut);
    }
    // Hold back the longest tail of buf that is a proper prefix of some stop sequence.
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, buf.length); k > hold; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    this.held = buf.slice(buf.length - hold);
    return buf.slice(0, buf.length - hold);
  }

  /** At the end of generation: the held-back text, which turned out not to be a stop sequence. */
  flush(): string {
    const h = this.held;
    this.held = '';
    return this.done ? '' : h;
  }
}
