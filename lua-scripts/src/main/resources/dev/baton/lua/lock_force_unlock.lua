-- lock_force_unlock: delete a reentrant lock whoever holds it, and wake its waiters.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  the lock's channel, "redisson_lock__channel:{<name>}"
-- ARGV[1]  the message published when a lock was deleted ("0")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the lock existed and was deleted; 0 = it did not exist
--          error WRONGTYPE when the name holds something other than a HASH (it is left alone)
-- Publishes ARGV[1] on KEYS[2] when the lock existed.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a lock')
end
redis.call('del', KEYS[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
return 1
