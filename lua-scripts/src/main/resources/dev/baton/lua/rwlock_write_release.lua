-- rwlock_write_release: give back one write hold; the last one frees the lock, or leaves the
-- writer's own read holds in place (a finished downgrade) and wakes the waiting readers.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  the lock's channel, "redisson_rwlock:{<name>}"
-- ARGV[1]  lease in milliseconds, applied again while write holds remain
-- ARGV[2]  the caller's writer field ("<owner>:write")
-- ARGV[3]  the caller's write hold count before this call (>= 1)
-- ARGV[4]  the message published when the write side is released ("1": wakes every waiter)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    -1      the caller holds no write (never held, expired, or a re-delivered final release)
--          n >= 0  write holds left; 0 = released
-- Publishes ARGV[4] on KEYS[2] when the last write hold is released, also when the writer's
-- reads remain (Redisson publishes nothing then, and its readers wait for a TTL).
-- Re-delivery: a count already at ARGV[3] - 1 is left alone.
local name, channel = KEYS[1], KEYS[2]
local writer, expected = ARGV[2], tonumber(ARGV[3])
if redis.call('hget', name, 'mode') ~= 'write' then
  return -1
end
local held = tonumber(redis.call('hget', name, writer))
if not held then
  return -1
end
if held == expected - 1 then
  return held
end
held = redis.call('hincrby', name, writer, -1)
if held > 0 then
  redis.call('pexpire', name, ARGV[1])
  return held
end
redis.call('hdel', name, writer)
if redis.call('hlen', name) == 1 then
  redis.call('del', name)
else
  redis.call('hset', name, 'mode', 'read')
end
redis.call(ARGV[#ARGV], channel, ARGV[4])
return 0
