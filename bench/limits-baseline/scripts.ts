/**
 * The Lua scripts of the limits. Each runs atomically inside Redis, so a check and its take are one
 * step: N gateway replicas sharing one Redis admit exactly what one would.
 *
 * Check kinds (one KEY each), ARGV after the header is 8 fields per check:
 *   type  limit  cost  p1  p2  ttl  flags  hold
 * `cost` is what the check compares with the limit; `cost + hold` is what it takes: a token budget
 * also holds the request's possible output (its max tokens) until settle replaces it with the real use.
 *   W  fixed-window counter (requests or tokens): p1 = window end (epoch ms), flags 1 = the counter must
 *      exist (a quota counter that is rebuilt from the ledger when Redis lost it)
 *   L  concurrency leases: a sorted set of lease ids scored by their expiry; expired leases are dropped
 *   R  rolling window: a hash of bucket index -> amount; p1 = bucket length (ms), p2 = buckets per window
 * `ttl` is the key's time to live (ms) once taken.
 */

/**
 * ADMIT  ARGV: now, leaseId, leaseExpiry, n, then the checks.
 * Returns {-1, i...}      counters that must be rebuilt first (nothing taken)
 *         {0, i, retryMs, used_i} check i refused (nothing taken)
 *         {1, 0, 0, used_1, reset_1, ..., used_n, reset_n} all taken; used_i after the take,
 *                         reset_i = ms until a rolling window's oldest use drops out (0 otherwise)
 */
export const ADMIT_LUA = `
local now = tonumber(ARGV[1])
local lease = ARGV[2]
local leaseExp = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local missing = {}
for i = 1, n do
  local b = 4 + (i - 1) * 8
  if ARGV[b + 7] == '1' and redis.call('EXISTS', KEYS[i]) == 0 then missing[#missing + 1] = i end
end
if #missing > 0 then
  local out = {-1}
  for _, i in ipairs(missing) do out[#out + 1] = i end
  return out
end
local used = {}
local reset = {}
local bucket = {}
for i = 1, n do
  local b = 4 + (i - 1) * 8
  local t = ARGV[b + 1]
  local limit = tonumber(ARGV[b + 2])
  local cost = tonumber(ARGV[b + 3])
  reset[i] = 0
  if t == 'W' then
    local u = tonumber(redis.call('GET', KEYS[i]) or '0')
    used[i] = u
    if u + cost > limit then return {0, i, tonumber(ARGV[b + 4]) - now, u} end
  elseif t == 'L' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    local u = redis.call('ZCARD', KEYS[i])
    used[i] = u
    if u + cost > limit then
      -- A slot frees when a running request ends; the earliest possible moment is unknown: 1 s.
      return {0, i, 1000, u}
    end
  elseif t == 'R' then
    local bms = tonumber(ARGV[b + 4])
    local nb = tonumber(ARGV[b + 5])
    local cur = math.floor(now / bms)
    bucket[i] = cur
    local h = redis.call('HGETALL', KEYS[i])
    local u = 0
    local idx = {}
    local val = {}
    for j = 1, #h, 2 do
      local f = tonumber(h[j])
      local v = tonumber(h[j + 1])
      if f <= cur - nb then
        redis.call('HDEL', KEYS[i], h[j])
      else
        u = u + v
        idx[#idx + 1] = f
        val[f] = v
      end
    end
    table.sort(idx)
    used[i] = u
    if #idx > 0 then reset[i] = (idx[1] + nb) * bms - now end
    if u + cost > limit then
      local need = u + cost - limit
      local freed = 0
      local retry = nb * bms
      for _, f in ipairs(idx) do
        freed = freed + val[f]
        if freed >= need then
          retry = (f + nb) * bms - now
          break
        end
      end
      return {0, i, retry, u}
    end
  end
end
local out = {1, 0, 0}
for i = 1, n do
  local b = 4 + (i - 1) * 8
  local t = ARGV[b + 1]
  local cost = tonumber(ARGV[b + 3]) + tonumber(ARGV[b + 8])
  local ttl = ARGV[b + 6]
  if t == 'W' then
    if cost > 0 then
      redis.call('INCRBY', KEYS[i], cost)
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  elseif t == 'L' then
    if cost > 0 then
      redis.call('ZADD', KEYS[i], leaseExp, lease)
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  elseif t == 'R' then
    if cost > 0 then
      redis.call('HINCRBY', KEYS[i], bucket[i], cost)
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
    if reset[i] == 0 and cost > 0 then
      reset[i] = (bucket[i] + tonumber(ARGV[b + 5])) * tonumber(ARGV[b + 4]) - now
    end
  end
  out[#out + 1] = used[i] + cost
  out[#out + 1] = reset[i]
end
return out
`;

/**
 * SETTLE  ARGV: leaseId, n, then 4 fields per operation: type delta field ttl, flags in the type:
 *   L   release the lease
 *   W   add delta (may be negative) to a counter, never below 0 (creates it with ttl when missing)
 *   WX  the same, but only when the counter exists (a quota counter: if Redis lost it, it is rebuilt
 *       from the ledger instead)
 *   R   add delta to bucket `field` of a rolling window, never below 0
 */
export const SETTLE_LUA = `
local lease = ARGV[1]
local n = tonumber(ARGV[2])
for i = 1, n do
  local b = 2 + (i - 1) * 4
  local t = ARGV[b + 1]
  local delta = tonumber(ARGV[b + 2])
  if t == 'L' then
    redis.call('ZREM', KEYS[i], lease)
  elseif t == 'W' or t == 'WX' then
    if delta ~= 0 and (t == 'W' or redis.call('EXISTS', KEYS[i]) == 1) then
      local v = redis.call('INCRBY', KEYS[i], delta)
      if v < 0 then redis.call('SET', KEYS[i], 0, 'KEEPTTL') end
      if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[b + 4]) end
    end
  elseif t == 'R' then
    if delta ~= 0 then
      local v = redis.call('HINCRBY', KEYS[i], ARGV[b + 3], delta)
      if v < 0 then redis.call('HSET', KEYS[i], ARGV[b + 3], 0) end
      if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[b + 4]) end
    end
  end
end
return n
`;

/** RENEW  ARGV: expiry, ttl, then one lease id per KEY: pushes the expiry of leases still held. */
export const RENEW_LUA = `
local exp = ARGV[1]
local ttl = ARGV[2]
local renewed = 0
for i = 1, #KEYS do
  renewed = renewed + redis.call('ZADD', KEYS[i], 'XX', 'CH', exp, ARGV[i + 2])
  redis.call('PEXPIRE', KEYS[i], ttl)
end
return renewed
`;

/** SEED  a rebuilt quota counter: set only if still missing (another replica may have done it). */
export const SEED_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;
