-- semaphore_cancel: undo an acquire whose reply never came, exactly once: if it took its
-- permits they go back; if it has not run yet, it never will.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  its request memory, "baton_requests:{<name>}"
-- ARGV[1]  the permits the acquire asked for
-- ARGV[2]  the acquire's request id
-- ARGV[3]  how long the request memory keeps an id, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the acquire had taken its permits; they were given back (and published)
--          0 = it had not (or was cancelled before): it is now marked cancelled, "~<id>", so a
--              late copy takes nothing
--          2 = it had taken them but the semaphore was deleted since: nothing is given back
-- Publishes the new count on KEYS[2] when permits were given back.
--
-- Re-delivery: a second copy finds "~<id>" and changes nothing.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
local seen = redis.call('zmscore', KEYS[3], ARGV[2], '~' .. ARGV[2])
if seen[2] then
  return 0
end
local memory = tonumber(ARGV[3])
redis.call('zadd', KEYS[3], now + memory, '~' .. ARGV[2])
redis.call('pexpire', KEYS[3], memory)
if not seen[1] then
  return 0
end
redis.call('zrem', KEYS[3], ARGV[2])
if redis.call('exists', KEYS[1]) == 0 then
  return 2
end
local value = redis.call('incrby', KEYS[1], tonumber(ARGV[1]))
redis.call(ARGV[#ARGV], KEYS[2], value)
return 1
