/**
 * An error caused by the caller's input (unknown member, unknown tier, bad catalog file ...): its
 * message is meant for a person and the CLI prints it without a stack trace.
 */
export class PersistenceUserError extends Error {
  constructor(
    message: string,
    readonly code: 'not_found' | 'invalid_input' | 'conflict',
  ) {
    super(message);
    this.name = 'PersistenceUserError';
  }
}

export class NotFoundError extends PersistenceUserError {
  constructor(what: string, id: string) {
    super(`${what} not found: ${id}`, 'not_found');
    this.name = 'NotFoundError';
  }
}

export class InvalidInputError extends PersistenceUserError {
  constructor(message: string) {
    super(message, 'invalid_input');
    this.name = 'InvalidInputError';
  }
}

export function isUserError(error: unknown): error is PersistenceUserError {
  return error instanceof PersistenceUserError;
}

/** Prisma's known-request error code (P2002 unique violation, P2003 foreign key ...), if any. */
export function prismaErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^P\d{4}$/.test(code) ? code : undefined;
}

/** Prisma's codes for a database it cannot reach or lost the connection to. */
const UNREACHABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** @prisma/adapter-pg's error kinds for the same (DriverAdapterError cause.kind). */
const UNREACHABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
]);
/** node-postgres / socket error codes of a server that is gone, refuses or does not answer. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  '57P01',
  '57P03',
]);

/**
 * True when an error says the database could not be reached (down, restarting, connection lost, pool
 * exhausted): a condition to answer with 503 and retry, not a fault (500). Reads Prisma's error code,
 * the driver adapter's error kind it wraps, and the pg driver's own codes, through `cause` chains.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let e = error as Record<string, unknown> | null | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 6; depth++) {
    const code = e.code;
    if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || SOCKET_CODES.has(code))) return true;
    const kind = (e as { kind?: unknown }).kind;
    if (typeof kind === 'string' && UNREACHABLE_KINDS.has(kind)) return true;
    const meta = e.meta as { driverAdapterError?: unknown } | undefined;
    e = (meta?.driverAdapterError ?? e.cause) as Record<string, unknown> | null | undefined;
  }
  return false;
}
