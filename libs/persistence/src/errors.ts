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
