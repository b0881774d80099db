import { PRIORITY_CLASSES, type PriorityClass } from '@infer/contracts';

/** Rank of a class in the queue: 0 (premium) is served first. */
export const CLASS_RANK: Readonly<Record<PriorityClass, number>> = Object.freeze({
  premium: 0,
  inference: 1,
  community: 2,
  batch: 3,
});

export interface Queued {
  cls: PriorityClass;
  /** Who asks (member id): members of one class take turns. */
  member: string;
  /** Set when the entry left the queue some other way (timeout, abort): skipped by shift(). */
  gone: boolean;
}

/**
 * The wait queue of a saturated pool. Classes in strict order (premium, inference, community, batch);
 * inside a class, members take turns (round robin over the members that wait, each member's own
 * requests first come first served), so one member's burst cannot starve the others of its class.
 *
 * Each class keeps a Map from member to that member's FIFO; Map order is the turn order: the member
 * served goes to the back (delete + set) while it still has requests waiting.
 */
export class FairQueue<T extends Queued> {
  private readonly classes: Array<Map<string, T[]>> = PRIORITY_CLASSES.map(() => new Map());
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(item: T): void {
    const byMember = this.classes[CLASS_RANK[item.cls]] as Map<string, T[]>;
    const fifo = byMember.get(item.member);
    if (fifo) fifo.push(item);
    else byMember.set(item.member, [item]);
    this.count++;
  }

  /** The next entry to serve, without taking it (entries marked gone are dropped on the way). */
  peek(): T | null {
    for (const byMember of this.classes) {
      for (const [member, fifo] of byMember) {
        while (fifo.length && (fifo[0] as T).gone) {
          fifo.shift();
          this.count--;
        }
        if (fifo.length) return fifo[0] as T;
        byMember.delete(member);
      }
    }
    return null;
  }

  /** Takes the entry peek() returned; its member goes to the back of its class's turn order. */
  shift(): T | null {
    const head = this.peek();
    if (!head) return null;
    const byMember = this.classes[CLASS_RANK[head.cls]] as Map<string, T[]>;
    const fifo = byMember.get(head.member) as T[];
    fifo.shift();
    this.count--;
    byMember.delete(head.member);
    if (fifo.length) byMember.set(head.member, fifo);
    return head;
  }

  /** Marks an entry gone (it timed out or its caller left); its slot is reclaimed lazily. */
  remove(item: T): void {
    if (item.gone) return;
    item.gone = true;
    const fifo = this.classes[CLASS_RANK[item.cls]]?.get(item.member);
    const at = fifo ? fifo.indexOf(item) : -1;
    if (fifo && at >= 0) {
      fifo.splice(at, 1);
      this.count--;
    }
  }

  /** Entries waiting per class (status and metrics). */
  depthByClass(): Record<PriorityClass, number> {
    const out = { premium: 0, inference: 0, community: 0, batch: 0 };
    PRIORITY_CLASSES.forEach((c, i) => {
      for (const fifo of (this.classes[i] as Map<string, T[]>).values()) out[c] += fifo.length;
    });
    return out;
  }
}
