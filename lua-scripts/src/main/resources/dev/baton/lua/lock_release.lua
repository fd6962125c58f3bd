-- lock_release: give back one hold of a reentrant lock; the last hold deletes the lock.
--
-- KEYS[1]  the lock name (HASH, field = owner id, value = hold count)
-- KEYS[2]  the lock's channel, "redisson_lock__channel:{<name>}"
-- ARGV[1]  lease in milliseconds, applied again while holds remain
-- ARGV[2]  owner id, "<clientId>:<threadId>"
-- ARGV[3]  the hold count the caller believes the owner has before this call (>= 1)
-- ARGV[4]  the message published when the lock becomes free ("0")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    -1      the owner holds nothing: never held, lease expired, lock deleted, or a
--                  re-delivered copy of a final release that was applied already (the client
--                  tells these apart; see RedisLock)
--          n >= 0  holds the owner has left; 0 means the lock was deleted and ARGV[4] was
--                  published on KEYS[2]
-- Publishes ARGV[4] on KEYS[2] when the last hold is released.
--
-- Re-delivery: when the owner's count already equals ARGV[3] - 1 this request was applied
-- before, so nothing changes; a second copy never takes away a hold the owner still has.
local held = redis.call('hget', KEYS[1], ARGV[2])
if not held then
  return -1
end
held = tonumber(held)
if held == tonumber(ARGV[3]) - 1 then
  return held
end
held = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if held > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return held
end
redis.call('del', KEYS[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[4])
return 0
