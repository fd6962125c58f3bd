-- semaphore_try_set: give a semaphore its initial permits, only if it does not exist.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- ARGV[1]  the permits (>= 0)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = set (and published); 0 = the semaphore exists already (unchanged)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[1] on KEYS[2] when set.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'string' then
  return 0
end
if kind ~= 'none' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
return 1
