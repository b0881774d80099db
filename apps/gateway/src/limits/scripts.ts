/**
 * The Lua script of the limits. It runs atomically inside Redis, so a check and its take are one step:
 * N gateway replicas sharing one Redis (or one slot of a Redis Cluster) admit exactly what one would.
 *
 * One call carries a batch: the settlements and admissions a gateway collected since its previous call
 * to the same Redis slot (see LimitsStore: at most two calls in flight per slot, the next batch builds
 * up meanwhile). Settlements run first, then each admission in order, each all or nothing. Batching
 * pays the script call, the network read and write once for many requests; at low load a batch is a
 * single request and nothing waits.
 *
 * Arguments are kept few (Redis turns each into a Lua string): what can be derived in the script (the
 * cost and take of a check from its kind, key lifetimes from the clock) is not sent.
 *
 * ARGV[1] = number of records, ARGV[2] = lease TTL (ms), ARGV[3] = grace (ms) a fixed-window counter
 * outlives its window, ARGV[4] = lifetime (ms) of a lease set without renewals; then records, each
 * consuming the next KEYS in order:
 *
 *   'S' leaseId n   then n ops, one KEY each:
 *       'L'                   release the lease
 *       'W' delta             add delta (may be negative) to a per-minute counter, never below 0
 *       'X' delta             the same on a quota counter, only when it exists (if Redis lost it, it
 *                             is rebuilt from the ledger instead). Quota counters hold use + 1: a
 *                             kept counter is never 0, so INCRBY alone tells a missing one.
 *       'R' delta field ttl   add delta to bucket `field` of a rolling window (and its total), never
 *                             below 0
 *
 *   'A' leaseId now estimate hold need mtake mneed n   then n checks, one KEY each:
 *       'r' limit             requests in the current minute (takes 1)
 *       't' limit             tokens in the current minute (takes the estimate and holds `hold`, the
 *                             output reserved, until settle)
 *       'q' limit             a request quota counter that must exist (day, month; takes 1), kept as
 *                             use + 1
 *       'Q' limit             a token quota counter that must exist (takes the estimate and holds
 *                             `hold`, the possible output, until settle)
 *       'M' limit             a money quota counter that must exist (a budget in nano-dollars, month;
 *                             kept as use + 1): takes `mtake` (the request's cost reserved: its prompt
 *                             estimate and held output at the model's prices) and compares the use plus
 *                             `mneed`, at least 1, with the limit (a spent budget refuses even a request
 *                             whose cost is not known in advance)
 *       'L' limit             concurrency leases: a sorted set of lease ids scored by their expiry;
 *                             expired leases are only dropped when they would cause a refusal
 *       'R' limit bms nb      a rolling token window (takes the estimate, holds `hold`): a hash of
 *                             bucket index -> amount plus `t` (the total of the live buckets) and `o`
 *                             (the oldest bucket counted); bms = bucket length (ms), nb = buckets
 *       A check compares its cost (1, or the estimate + `need`: the output that must fit) with the limit;
 *       it takes 1, or the estimate + hold. With an estimate of 0 a token check takes nothing.
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
local leaseTtl = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local leaseKeyTtl = tonumber(ARGV[4])
local a = 5
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
  if ARGV[a] == 'S' then
    local lease = ARGV[a + 1]
    local n = tonumber(ARGV[a + 2])
    a = a + 3
    for i = 1, n do
      local kind = ARGV[a]
      local key = KEYS[k]
      k = k + 1
      if kind == 'L' then
        redis.call('ZREM', key, lease)
        a = a + 1
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
        a = a + 4
      else
        local delta = tonumber(ARGV[a + 1])
        local v = redis.call('INCRBY', key, delta)
        if kind == 'W' then
          if v < 0 then redis.call('SET', key, 0, 'KEEPTTL') end
          if v == delta then redis.call('PEXPIRE', key, 60000 + grace) end
        elseif v == delta then
          -- A quota counter (kept as use + 1) that Redis lost: it is rebuilt from the ledger instead.
          redis.call('DEL', key)
        elseif v < 1 then
          redis.call('SET', key, 1, 'KEEPTTL')
        end
        a = a + 2
      end
    end
  else
    local lease = ARGV[a + 1]
    local now = tonumber(ARGV[a + 2])
    local est = tonumber(ARGV[a + 3])
    local hold = 0
    local need = 0
    if est > 0 then
      hold = tonumber(ARGV[a + 4])
      need = tonumber(ARGV[a + 5])
    end
    local mtake = tonumber(ARGV[a + 6])
    local mneed = tonumber(ARGV[a + 7])
    local n = tonumber(ARGV[a + 8])
    a = a + 9
    local base = a
    local k0 = k
    -- Where each check's arguments start (a rolling window has two more).
    local at = {}
    for i = 1, n do
      at[i] = a
      if ARGV[a] == 'R' then a = a + 4 else a = a + 2 end
    end
    k = k + n
    do
      -- Check and take in order; a refusal (or a quota counter Redis does not have) gives back what
      -- the earlier checks took.
      local res = {1}
      local refused = nil
      local done = 0
      local takes = {}
      for i = 1, n do
        local b = at[i]
        local kind = ARGV[b]
        local key = KEYS[k0 + i - 1]
        local limit = tonumber(ARGV[b + 1])
        local cost = 1
        local take = 1
        if kind == 't' or kind == 'Q' or kind == 'R' then
          cost = est + need
          take = est + hold
        elseif kind == 'M' then
          cost = math.max(mneed, 1)
          take = mtake
        end
        takes[i] = take
        local used = 0
        local reset = 0
        if kind == 'q' or kind == 'Q' or kind == 'M' then
          -- Quota counters are kept as use + 1, so that a missing one shows in the same call.
          if take > 0 then
            local v = redis.call('INCRBY', key, take)
            if v == take then
              redis.call('DEL', key)
              refused = {-1, i}
            else
              used = v - 1 - take
              if used + cost > limit then
                redis.call('DECRBY', key, take)
                refused = {0, i, 0, used}
              else
                used = v - 1
              end
            end
          else
            local v = redis.call('GET', key)
            if not v then
              refused = {-1, i}
            else
              used = tonumber(v) - 1
              if used + cost > limit then refused = {0, i, 0, used} end
            end
          end
        elseif kind == 'r' or kind == 't' then
          if take > 0 then
            used = redis.call('INCRBY', key, take)
            if used == take then
              redis.call('PEXPIRE', key, (math.floor(now / 60000) + 1) * 60000 - now + grace)
            end
            if used - take + cost > limit then
              redis.call('DECRBY', key, take)
              refused = {0, i, 0, used - take}
            end
          else
            used = tonumber(redis.call('GET', key) or '0')
            if used > limit then refused = {0, i, 0, used} end
          end
        elseif kind == 'L' then
          used = redis.call('ZCARD', key)
          if used + 1 > limit then
            redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
            used = redis.call('ZCARD', key)
          end
          if used + 1 > limit then
            -- A slot frees when a running request ends; the earliest possible moment is unknown: 1 s.
            refused = {0, i, 1000, used}
          else
            redis.call('ZADD', key, now + leaseTtl, lease)
            -- The set's own lifetime (renewals push it): only set when the set is new.
            if used == 0 then redis.call('PEXPIRE', key, leaseKeyTtl) end
            used = used + 1
          end
        else
          local bms = tonumber(ARGV[b + 2])
          local nb = tonumber(ARGV[b + 3])
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
            redis.call('PEXPIRE', key, bms * (nb + 1))
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
          local kind = ARGV[at[i]]
          local key = KEYS[k0 + i - 1]
          local take = takes[i]
          if take > 0 then
            if kind == 'L' then
              redis.call('ZREM', key, lease)
            elseif kind == 'R' then
              local cur = math.floor(now / tonumber(ARGV[at[i] + 2]))
              redis.call('HINCRBY', key, cur, -take)
              redis.call('HINCRBY', key, 't', -take)
            else
              redis.call('DECRBY', key, take)
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

/**
 * SEED  a rebuilt quota counter (ARGV: the ledger's total, ttl), kept as total + 1: set only if still
 * missing (another replica may have done it).
 */
export const SEED_LUA = `
if redis.call('SET', KEYS[1], tonumber(ARGV[1]) + 1, 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;
