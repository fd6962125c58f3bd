-- rwlock_writer_leave: a waiting writer gives up (timed out, interrupted, cancelled) and takes
-- its mark away, so readers are not kept out for a writer that is no longer coming.
--
-- KEYS[1]  "baton_rwlock_writer:{<name>}": the waiting writer's mark
-- KEYS[2]  the lock name (HASH)
-- KEYS[3]  its channel, "redisson_rwlock:{<name>}"
-- ARGV[1]  the writer field ("<owner>:write") that gives up
-- ARGV[2]  the message that wakes every waiter ("1")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later
-- Reply    1 = the mark was this writer's and is gone; 0 = it was someone else's, or none
-- Publishes ARGV[2] on KEYS[3] when the mark went and nobody holds the lock for writing: readers
--          the mark refused may come in now, and would otherwise wait for the mark's TTL (up to
--          3 s) on a free lock (the simulation found it, read-write seed 282).
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  if redis.call('hget', KEYS[2], 'mode') ~= 'write' then
    redis.call(ARGV[#ARGV], KEYS[3], ARGV[2])
  end
  return 1
end
return 0
