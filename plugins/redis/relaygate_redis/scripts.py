"""The Lua scripts of the Redis rate limiter (:mod:`relaygate_redis.limiter`).

Each subject has a hash of its buckets (``r``, ``t``: requests and tokens left, a
missing field is a full bucket; ``at``: when they were counted) and a sorted set
of its requests in flight (one lease each, scored by its expiry). The time is
Redis's own (``TIME``).
"""

from __future__ import annotations

from gateway_core.ratelimit.rules import WINDOW

# Shared by both scripts: the subject's buckets refilled to ``now`` (a missing
# field is full), and their writing back with an expiry at the time they are
# full again (plus a second).
BUCKETS = f"""
local WINDOW = {WINDOW!r}
local EPSILON = 1e-9
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000

local function refill(key, rpm, tpm)
  local r, t = rpm, tpm
  if rpm > 0 or tpm > 0 then
    local h = redis.call('HMGET', key, 'r', 't', 'at')
    local elapsed = math.max(0, now - (tonumber(h[3]) or now))
    if rpm > 0 and h[1] then r = math.min(rpm, tonumber(h[1]) + elapsed * rpm / WINDOW) end
    if tpm > 0 and h[2] then t = math.min(tpm, tonumber(h[2]) + elapsed * tpm / WINDOW) end
  end
  return r, t
end

-- one dimension's level into ``fields`` (or its field dropped when not limited);
-- returns the seconds until it is full again
local function put(key, fields, name, limit, level)
  if limit > 0 then
    table.insert(fields, name); table.insert(fields, string.format('%.17g', level))
    return (limit - level) * WINDOW / limit
  end
  redis.call('HDEL', key, name)
  return 0
end

local function store(key, rpm, tpm, r, t)
  local fields = {{'at', string.format('%.17g', now)}}
  local wait = math.max(put(key, fields, 'r', rpm, r), put(key, fields, 't', tpm, t))
  redis.call('HSET', key, unpack(fields))
  redis.call('PEXPIRE', key, math.ceil(wait * 1000) + 1000)
end
"""

# KEYS: bucket and lease keys, two per subject. ARGV: tokens, lease id, lease
# seconds, then rpm, tpm, slots per subject. Returns admitted (1/0), now, then
# requests left, tokens left, requests in flight per subject (after the take
# when admitted).
ACQUIRE = (
    BUCKETS
    + """
local tokens = tonumber(ARGV[1])
local lease, ttl = ARGV[2], tonumber(ARGV[3])
local n = #KEYS / 2
local seen = {}
local admitted = 1
for i = 1, n do
  local rpm, tpm, slots = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2]), tonumber(ARGV[3 * i + 3])
  local r, t = refill(KEYS[2 * i - 1], rpm, tpm)
  local busy = 0
  if slots > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[2 * i], '-inf', now)
    busy = redis.call('ZCARD', KEYS[2 * i])
  end
  if (rpm > 0 and r < 1 - EPSILON) or (tpm > 0 and t < math.min(tokens, tpm) - EPSILON)
      or (slots > 0 and busy >= slots) then
    admitted = 0
  end
  seen[i] = {rpm, tpm, slots, r, t, busy}
end
local out = {admitted, string.format('%.17g', now)}
for i = 1, n do
  local rpm, tpm, slots, r, t, busy = unpack(seen[i])
  if admitted == 1 then
    if rpm > 0 then r = r - 1 end
    if tpm > 0 then t = t - tokens end
    if rpm > 0 or tpm > 0 then store(KEYS[2 * i - 1], rpm, tpm, r, t) end
    if slots > 0 then
      redis.call('ZADD', KEYS[2 * i], now + ttl, lease)
      redis.call('PEXPIRE', KEYS[2 * i], math.ceil(ttl * 1000) + 1000)
      busy = busy + 1
    end
  end
  table.insert(out, string.format('%.17g', r))
  table.insert(out, string.format('%.17g', t))
  table.insert(out, busy)
end
return out
"""
)

# KEYS as for acquire. ARGV: lease id, tokens to give back (negative: to take),
# then rpm, tpm, slots per subject.
RELEASE = (
    BUCKETS
    + """
local lease, refund = ARGV[1], tonumber(ARGV[2])
for i = 1, #KEYS / 2 do
  local rpm, tpm, slots = tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  if slots > 0 then redis.call('ZREM', KEYS[2 * i], lease) end
  if refund ~= 0 and tpm > 0 then
    local r, t = refill(KEYS[2 * i - 1], rpm, tpm)
    store(KEYS[2 * i - 1], rpm, tpm, r, math.min(tpm, t + refund))
  end
end
return 1
"""
)

# KEYS: sets of leases; ARGV: lease seconds, then the lease to extend in each set.
REFRESH = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local ttl = tonumber(ARGV[1])
for i = 1, #KEYS do
  if redis.call('ZSCORE', KEYS[i], ARGV[i + 1]) then
    redis.call('ZADD', KEYS[i], 'XX', now + ttl, ARGV[i + 1])
    redis.call('PEXPIRE', KEYS[i], math.ceil(ttl * 1000) + 1000)
  end
end
return 1
"""

__all__ = ["ACQUIRE", "REFRESH", "RELEASE"]
