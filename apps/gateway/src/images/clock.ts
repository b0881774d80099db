/** DI token of the clock the image routes read (epoch ms): tests replace `now` to move time. */
export const CLOCK = Symbol('CLOCK');

export interface Clock {
  now(): number;
}

/** A new system clock per gateway instance (so that a test moving one gateway's time moves no other). */
export function systemClock(): Clock {
  return { now: () => Date.now() };
}
