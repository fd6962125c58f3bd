-- rwlock_force_unlock: delete a read-write lock held in the given mode, whoever holds it.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  the lock's channel, "redisson_rwlock:{<name>}"
-- ARGV[1]  the mode this force-unlock is for: "read" or "write"
-- ARGV[2]  the message to publish ("1": wakes every waiter)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the lock was held in that mode and was deleted; 0 = it was not
--          error WRONGTYPE when the name holds something other than a HASH (left alone)
-- Publishes ARGV[2] on KEYS[2] when deleted. Per-hold timeout keys expire on their own.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a read-write lock')
end
if redis.call('hget', KEYS[1], 'mode') ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[2])
return 1
