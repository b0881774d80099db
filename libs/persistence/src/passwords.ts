import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Operator passwords, hashed with scrypt (node:crypto; RFC 7914) at N=2^15, r=8, p=1: the OWASP
 * password-storage minimum for scrypt, ~50 ms and 32 MiB per hash here. Stored as
 * `scrypt$<log2 N>$<r>$<p>$<salt b64>$<hash b64>` so the cost can be raised later and old hashes
 * still verify. See docs/adr/0007-operator-console-auth.md for why scrypt and not argon2id.
 */
const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 1024;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LEN, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, LOG_N, R, P);
  return `scrypt$${LOG_N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** True when `password` matches `stored` (constant-time compare); false for a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [logN, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![logN, r, p].every((n) => Number.isInteger(n) && n > 0) || logN > 20) return false;
  const salt = Buffer.from(parts[4] ?? '', 'base64');
  const expected = Buffer.from(parts[5] ?? '', 'base64');
  if (expected.length !== KEY_LEN) return false;
  const key = await derive(password, salt, logN, r, p);
  return timingSafeEqual(key, expected);
}

/** A reason the password is refused, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH)
    return `the password must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH)
    return `the password must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return null;
}
