import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export interface ThrottleLimits {
  perAccount: number;
  perIp: number;
  windowS: number;
}

const h = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 32);

/**
 * Counts failed sign-ins per account and per client IP in Redis (shared by every gateway replica),
 * each in a fixed window that starts at the first failure. A sign-in is refused while either count
 * has reached its limit; a successful sign-in clears the account's count.
 */
export class LoginThrottle {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly limits: ThrottleLimits,
  ) {}

  private keys(email: string, ip: string) {
    return [`${this.prefix}login:acct:${h(email)}`, `${this.prefix}login:ip:${h(ip)}`] as const;
  }

  /** Seconds to wait, or 0 when a sign-in attempt may proceed. */
  async blockedFor(email: string, ip: string): Promise<number> {
    const [a, i] = this.keys(email, ip);
    // One transaction per key: the two keys may live in different Redis Cluster slots.
    const [ra, ri] = await Promise.all([
      this.redis.multi().get(a).ttl(a).exec(),
      this.redis.multi().get(i).ttl(i).exec(),
    ]);
    const r = [...(ra ?? []), ...(ri ?? [])];
    const val = (n: number) => Number((r[n]?.[1] as string | null) ?? 0);
    let wait = 0;
    if (val(0) >= this.limits.perAccount) wait = Math.max(wait, val(1));
    if (val(2) >= this.limits.perIp) wait = Math.max(wait, val(3));
    return wait;
  }

  async failed(email: string, ip: string): Promise<void> {
    await Promise.all(
      this.keys(email, ip).map((k) => this.redis.multi().incr(k).expire(k, this.limits.windowS, 'NX').exec()),
    );
  }

  async succeeded(email: string): Promise<void> {
    await this.redis.del(this.keys(email, '')[0]);
  }
}
