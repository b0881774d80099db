/**
 * Intl.DateTimeFormat objects made while an app's modules load are built on their first use.
 *
 * Why: @nestjs/common makes two `Intl.DateTimeFormat`s when its logger modules load (for its console
 * logger, which our apps do not print with), and the first Intl formatter of a process maps about 5 MiB
 * of ICU data from the node binary into every idle process's RSS (ADR 0015; bench/gateway-rss.ts).
 *
 * Use: through `runMain` (`@infer/runtime/main`, run-main.ts), which imports this module first
 * (ES modules evaluate in import order, so it runs before Nest's), loads the app, then calls
 * `endIntlDeferral()` before starting it. Formatters made
 * after that are the real ones, so a bad option still throws where it is passed; those made during the
 * load check their arguments on first use instead, and otherwise answer exactly as the real ones do.
 * This module imports nothing, so that importing it loads nothing else first. ADR 0015.
 */
const Native = Intl.DateTimeFormat;

/** The prototype's members (format is a getter returning a bound function; the rest are methods). */
const MEMBERS = Object.getOwnPropertyNames(Native.prototype).filter((name) => name !== 'constructor');

function deferredFormat(args: ConstructorParameters<typeof Intl.DateTimeFormat>): Intl.DateTimeFormat {
  let real: Intl.DateTimeFormat | undefined;
  const made = (): Intl.DateTimeFormat => {
    real ??= new Native(...args);
    return real;
  };
  const own: PropertyDescriptorMap = {};
  for (const name of MEMBERS) {
    const d = Object.getOwnPropertyDescriptor(Native.prototype, name);
    if (d?.get) {
      own[name] = { get: () => Reflect.get(Native.prototype, name, made()), configurable: true };
    } else if (typeof d?.value === 'function') {
      const method = d.value as (...a: unknown[]) => unknown;
      own[name] = { value: (...a: unknown[]) => method.apply(made(), a), configurable: true, writable: true };
    }
  }
  return Object.create(Native.prototype, own) as Intl.DateTimeFormat;
}

const Deferring: typeof Intl.DateTimeFormat = new Proxy(Native, {
  construct: (target, args, newTarget): object =>
    newTarget === Deferring
      ? deferredFormat(args as ConstructorParameters<typeof Intl.DateTimeFormat>)
      : Reflect.construct(target, args, newTarget),
  apply: (_target, _self, args) => deferredFormat(args as ConstructorParameters<typeof Intl.DateTimeFormat>),
});

let deferring = false;

/** From now until `endIntlDeferral()`, `new Intl.DateTimeFormat(...)` is built on first use. */
export function beginIntlDeferral(): void {
  if (deferring) return;
  deferring = true;
  Intl.DateTimeFormat = Deferring;
}

/** Formatters made from now on are real again. */
export function endIntlDeferral(): void {
  if (!deferring) return;
  deferring = false;
  Intl.DateTimeFormat = Native;
}

beginIntlDeferral();
