-- fenced_acquire: take or re-enter a fenced lock and return its fencing token.
-- The lock is the reentrant lock's HASH (Redisson layout); the token counter is Redisson's
-- fenced-lock counter key.
--
-- KEYS[1]  the lock name (HASH, field = owner id, value = hold count)
-- KEYS[2]  "redisson_lock_token:{<name>}": STRING, the last fencing token issued
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner id
-- ARGV[3]  the hold count the caller believes it has before this call
--
-- Reply    {1, holds, token}  granted; token = the token of this hold (unchanged on re-entry)
--          {0, pttl, 0}       refused; pttl = the holder's remaining time to live in ms
-- Publishes nothing.
--
-- A token rises each time the lock goes from free to held: it is the larger of the last token
-- + 1 and the Redis server's clock in microseconds, so it keeps rising even after Redis lost
-- the counter (restart without persistence), as long as the server clock does not go back and
-- fewer than a million grants a second are made. Redisson clients increment the same counter
-- (also on re-entry), which keeps it rising too.
-- Re-delivery: a count already at ARGV[3] + 1 is not raised. A re-entry (ARGV[3] > 0) keeps the
-- hold's token. A first acquisition (ARGV[3] = 0) that finds the owner's hold already there gets a
-- new token all the same: the caller has seen no token for that hold, which is a copy of this
-- acquisition whose reply was lost, or a hold of the owner's that a failover to a replica behind
-- the master brought back with the counter as it stood then (handing that counter out again
-- would give a token below one granted on the old master).
local function issue()
  local time = redis.call('time')
  local clock = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local token = math.max((tonumber(redis.call('get', KEYS[2])) or 0) + 1, clock)
  redis.call('set', KEYS[2], string.format('%d', token))
  return token
end
local expected = tonumber(ARGV[3])
local held = redis.call('hget', KEYS[1], ARGV[2])
if held then
  held = tonumber(held)
  if held ~= expected + 1 then
    held = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  redis.call('pexpire', KEYS[1], ARGV[1])
  if expected == 0 then
    return {1, held, issue()}
  end
  return {1, held, tonumber(redis.call('get', KEYS[2])) or 0}
end
if redis.call('exists', KEYS[1]) == 1 then
  return {0, redis.call('pttl', KEYS[1]), 0}
end
local token = issue()
redis.call('hset', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {1, 1, token}
