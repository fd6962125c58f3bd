-- semaphore_cancel: undo an acquire whose reply never came, exactly once: if it took its
-- permits they go back; if it has not run yet, it never will.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  the acquire's request key, "baton_request:{<name>}:<id>"
-- ARGV[1]  the permits the acquire asked for
-- ARGV[2]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the acquire had taken its permits; they were given back (and published)
--          0 = it had not (or was cancelled before): its key now says "cancelled", so a late
--              copy takes nothing
--          2 = it had taken them but the semaphore was deleted since: nothing is given back
-- Publishes the new count on KEYS[2] when permits were given back.
--
-- Re-delivery: a second copy finds "cancelled" and changes nothing.
local seen = redis.call('get', KEYS[3])
if seen == 'cancelled' then
  return 0
end
redis.call('set', KEYS[3], 'cancelled', 'PX', ARGV[2])
if seen ~= 'taken' then
  return 0
end
if redis.call('exists', KEYS[1]) == 0 then
  return 2
end
local value = redis.call('incrby', KEYS[1], tonumber(ARGV[1]))
redis.call(ARGV[#ARGV], KEYS[2], value)
return 1
