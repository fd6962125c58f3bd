-- semaphore_delete: delete a semaphore (plain or permit-expirable) and wake its waiters.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  "{<name>}:timeout", the permit-expirable semaphore's permits (absent otherwise)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = it existed and was deleted; 0 = it did not exist
--          error WRONGTYPE when the name holds something other than a string (left alone)
-- Publishes "0" on KEYS[2] when it existed: Redisson's waiters wake no one for it, Baton's
-- re-check, find the semaphore gone, and fail with SynchronizerDeletedException.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return redis.call('del', KEYS[3])
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
redis.call('del', KEYS[1], KEYS[3])
redis.call(ARGV[#ARGV], KEYS[2], '0')
return 1
