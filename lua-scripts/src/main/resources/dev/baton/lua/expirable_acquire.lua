-- expirable_acquire: take one permit of a permit-expirable semaphore under a permit id.
-- Layout is Redisson's RPermitExpirableSemaphore: available permits in a STRING at the name,
-- taken permits in the ZSET "{<name>}:timeout" as permit id -> expiry in epoch ms.
--
-- KEYS[1]  the semaphore name (STRING, available permits)
-- KEYS[2]  "{<name>}:timeout" (ZSET, permit id -> expiry epoch ms; 922337203685477 = never)
-- KEYS[3]  its channel, "redisson_sc:{<name>}"
-- ARGV[1]  the permit id as 32 hex characters, chosen by the client; stored as its 16 raw
--          bytes, as Redisson stores its permit ids
-- ARGV[2]  lease in ms, or -1 for a permit that never expires
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    {1, 0}      taken (or taken already by this very id: a re-sent copy)
--          {0, wait, exists}  refused; wait = ms until the earliest permit expires (-1 if none
--                      will); exists = 1 if the semaphore exists, else 0
-- Publishes the new count on KEYS[3] when expired permits were returned to the pool.
--
-- Expiry is decided with the Redis server's clock (TIME): every call first returns the permits
-- whose expiry has passed. Redisson clients compare the same scores with their own clocks.
local NEVER = 922337203685477
local id = (ARGV[1]:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, 1000)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  redis.call(ARGV[#ARGV], KEYS[3], value)
end
if redis.call('zscore', KEYS[2], id) then
  return {1, 0}
end
local available = tonumber(redis.call('get', KEYS[1]) or '0')
if available >= 1 then
  redis.call('decrby', KEYS[1], 1)
  local lease = tonumber(ARGV[2])
  redis.call('zadd', KEYS[2], lease < 0 and NEVER or now + lease, id)
  return {1, 0}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local exists = redis.call('exists', KEYS[1])
if first[1] and tonumber(first[2]) < NEVER then
  return {0, tonumber(first[2]) - now, exists}
end
return {0, -1, exists}
