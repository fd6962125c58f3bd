-- lock_acquire: take, or re-enter, a reentrant lock.
-- Layout is Redisson's: a HASH at the lock name, field = owner id, value = hold count.
--
-- KEYS[1]  the lock name (HASH)
-- ARGV[1]  lease in milliseconds; the key's PEXPIRE after a grant
-- ARGV[2]  owner id, "<clientId>:<threadId>"
-- ARGV[3]  the hold count the caller believes the owner has before this call (0 = first hold)
--
-- Reply    {1, holds}  granted; holds = the owner's hold count after this call
--          {0, pttl}   refused, another owner holds the lock; pttl = its remaining time to
--                      live in ms (-1 when the key has no expiry)
-- Publishes nothing.
--
-- Re-delivery: a client that lost the reply re-sends the same request. When the owner's count
-- already equals ARGV[3] + 1 the request was applied before, so the count is left as it is and
-- the grant is reported again. A second copy of a request therefore never adds a phantom hold.
local lease = tonumber(ARGV[1])
local expected = tonumber(ARGV[3])
local held = redis.call('hget', KEYS[1], ARGV[2])
if held then
  held = tonumber(held)
  if held ~= expected + 1 then
    held = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  redis.call('pexpire', KEYS[1], lease)
  return {1, held}
end
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, 1}
end
return {0, redis.call('pttl', KEYS[1])}
