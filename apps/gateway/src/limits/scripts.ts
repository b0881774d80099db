/**
 * The Lua script of the limits. It runs atomically inside Redis, so a check and its take are one step:
 * N gateway replicas sharing one Redis (or one slot of a Redis Cluster) admit exactly what one would.
 *
 * One call carries a batch: the settlements and admissions a gateway collected since its previous call
 * to the same Redis slot (see LimitsEngine: one call in flight per slot, the next batch builds up
 * meanwhile). Settlements run first, then each admission in order, each all or nothing. Batching pays
 * the script call, the network read and write once for many requests; at low load a batch is a single
 * request and nothing waits.
 *
 * ARGV[1] = number of records; then records, each consuming the next KEYS in order:
 *
 *   'S' leaseId n   then n ops of 4 fields (kind delta field ttl), one KEY each:
 *       L   release the lease
 *       W   add delta (may be negative) to a counter, never below 0 (sets the ttl when it creates it)
 *       WX  the same, but only when the counter exists (a quota counter: if Redis lost it, it is rebuilt
 *           from the ledger instead)
 *       R   add delta to bucket `field` of a rolling window (and to its total), never below 0
 *
 *   'A' leaseId leaseExpiry now n   then n checks of 7 fields (kind limit cost take ttl p q), one KEY each.
 *       `cost` is what the check compares with the limit; `take` (cost + the held output on a token quota)
 *       is what it takes.
 *       W  fixed-window counter; p = 1: the counter must exist (a quota counter rebuilt from the ledger)
 *       L  concurrency leases: a sorted set of lease ids scored by their expiry. Expired leases are only
 *          dropped when they would cause a refusal (the common case costs ZCARD + ZADD + PEXPIRE).
 *       R  rolling window: a hash of bucket index -> amount plus `t` (the total of the live buckets) and
 *          `o` (the oldest bucket counted); p = bucket length (ms), q = buckets per window. Buckets that
 *          left the window are subtracted from `t` once, when `o` shows there are some.
 *       `ttl` is the key's time to live (ms) when taken.
 *
 * Returns one entry per 'A' record, in order:
 *   {-1, i...}               counters that must be rebuilt first (nothing taken)
 *   {0, i, retryMs, used_i}  check i refused (nothing taken); retryMs is 0 for fixed windows (the
 *                            gateway knows the window's end)
 *   {1, used_1, reset_1, ..., used_n, reset_n}  all taken; used_i after the take, reset_i = ms until a
 *                            rolling window's oldest use drops out (0 otherwise)
 */
export const BATCH_LUA = `
local nrec = tonumber(ARGV[1])
local a = 2
local k = 1
local out = {}

local function rollExpire(key, cur, nb)
  local h = redis.call('HGETALL', key)
  local t = 0
  local o = nil
  local drop = {}
  for j = 1, #h, 2 do
    local f = tonumber(h[j])
    if f then
      if f <= cur - nb then
        drop[#drop + 1] = h[j]
      else
        t = t + tonumber(h[j + 1])
        if o == nil or f < o then o = f end
      end
    end
  end
  if #drop > 0 then redis.call('HDEL', key, unpack(drop)) end
  if o == nil then
    redis.call('DEL', key)
    return 0, nil
  end
  redis.call('HSET', key, 't', t, 'o', o)
  return t, o
end

local function rollRetry(key, need, cur, nb, bms, now)
  local h = redis.call('HGETALL', key)
  local idx = {}
  local val = {}
  for j = 1, #h, 2 do
    local f = tonumber(h[j])
    if f and f > cur - nb then
      idx[#idx + 1] = f
      val[f] = tonumber(h[j + 1])
    end
  end
  table.sort(idx)
  local freed = 0
  for _, f in ipairs(idx) do
    freed = freed + val[f]
    if freed >= need then return (f + nb) * bms - now end
  end
  return nb * bms
end

for r = 1, nrec do
  local t = ARGV[a]
  if t == 'S' then
    local lease = ARGV[a + 1]
    local n = tonumber(ARGV[a + 2])
    a = a + 3
    for i = 1, n do
      local kind = ARGV[a]
      local key = KEYS[k]
      if kind == 'L' then
        redis.call('ZREM', key, lease)
      elseif kind == 'W' or kind == 'WX' then
        local delta = tonumber(ARGV[a + 1])
        if kind == 'W' or redis.call('EXISTS', key) == 1 then
          local v = redis.call('INCRBY', key, delta)
          if v < 0 then redis.call('SET', key, 0, 'KEEPTTL') end
          if kind == 'W' and v == delta then redis.call('PEXPIRE', key, ARGV[a + 3]) end
        end
      elseif kind == 'R' then
        local delta = tonumber(ARGV[a + 1])
        local f = ARGV[a + 2]
        local v = redis.call('HINCRBY', key, f, delta)
        if v < 0 then
          redis.call('HSET', key, f, 0)
          delta = delta - v
        end
        local tot = redis.call('HINCRBY', key, 't', delta)
        if tot < 0 then redis.call('HSET', key, 't', 0) end
        if delta > 0 then redis.call('HSETNX', key, 'o', f) end
        redis.call('PEXPIRE', key, ARGV[a + 3])
      end
      a = a + 4
      k = k + 1
    end
  else
    local lease = ARGV[a + 1]
    local leaseExp = ARGV[a + 2]
    local now = tonumber(ARGV[a + 3])
    local n = tonumber(ARGV[a + 4])
    local base = a + 5
    a = base + n * 7
    local k0 = k
    k = k + n
    -- Quota counters that must exist: all present, or nothing is taken.
    local known = {}
    local missing = nil
    for i = 1, n do
      local b = base + (i - 1) * 7
      if ARGV[b] == 'W' and ARGV[b + 5] == '1' then
        local v = redis.call('GET', KEYS[k0 + i - 1])
        if v then
          known[i] = tonumber(v)
        else
          missing = missing or {-1}
          missing[#missing + 1] = i
        end
      end
    end
    if missing then
      out[#out + 1] = missing
    else
      -- Check and take in order; a refusal gives back what the earlier checks took.
      local res = {1}
      local refused = nil
      local done = 0
      for i = 1, n do
        local b = base + (i - 1) * 7
        local kind = ARGV[b]
        local key = KEYS[k0 + i - 1]
        local limit = tonumber(ARGV[b + 1])
        local cost = tonumber(ARGV[b + 2])
        local take = tonumber(ARGV[b + 3])
        local used = 0
        local reset = 0
        if kind == 'W' then
          if known[i] ~= nil then
            used = known[i]
            if used + cost > limit then
              refused = {0, i, 0, used}
            elseif take > 0 then
              used = redis.call('INCRBY', key, take)
            end
          elseif take > 0 then
            used = redis.call('INCRBY', key, take)
            if used == take then redis.call('PEXPIRE', key, ARGV[b + 4]) end
            if used - take + cost > limit then
              redis.call('DECRBY', key, take)
              refused = {0, i, 0, used - take}
            end
          else
            used = tonumber(redis.call('GET', key) or '0')
            if used + cost > limit then refused = {0, i, 0, used} end
          end
        elseif kind == 'L' then
          used = redis.call('ZCARD', key)
          if used + cost > limit then
            redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
            used = redis.call('ZCARD', key)
          end
          if used + cost > limit then
            -- A slot frees when a running request ends; the earliest possible moment is unknown: 1 s.
            refused = {0, i, 1000, used}
          elseif take > 0 then
            redis.call('ZADD', key, leaseExp, lease)
            redis.call('PEXPIRE', key, ARGV[b + 4])
            used = used + 1
          end
        else
          local bms = tonumber(ARGV[b + 5])
          local nb = tonumber(ARGV[b + 6])
          local cur = math.floor(now / bms)
          local st = redis.call('HMGET', key, 't', 'o')
          local tot = tonumber(st[1] or '0')
          local o = tonumber(st[2])
          if o ~= nil and o <= cur - nb then tot, o = rollExpire(key, cur, nb) end
          used = tot
          if used + cost > limit then
            refused = {0, i, rollRetry(key, used + cost - limit, cur, nb, bms, now), used}
          elseif take > 0 then
            redis.call('HINCRBY', key, cur, take)
            used = redis.call('HINCRBY', key, 't', take)
            if o == nil then
              redis.call('HSET', key, 'o', cur)
              o = cur
            end
            redis.call('PEXPIRE', key, ARGV[b + 4])
          end
          if o ~= nil then reset = (o + nb) * bms - now end
        end
        if refused then break end
        done = i
        res[#res + 1] = used
        res[#res + 1] = reset
      end
      if refused then
        for i = 1, done do
          local b = base + (i - 1) * 7
          local kind = ARGV[b]
          local key = KEYS[k0 + i - 1]
          local take = tonumber(ARGV[b + 3])
          if take > 0 then
            if kind == 'W' then
              redis.call('DECRBY', key, take)
            elseif kind == 'L' then
              redis.call('ZREM', key, lease)
            else
              local cur = math.floor(now / tonumber(ARGV[b + 5]))
              redis.call('HINCRBY', key, cur, -take)
              redis.call('HINCRBY', key, 't', -take)
            end
          end
        end
        out[#out + 1] = refused
      else
        out[#out + 1] = res
      end
    end
  end
end
return out
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
