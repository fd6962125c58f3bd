-- semaphore_try_set: give a semaphore its initial permits, only if it does not exist.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  this request's key, "baton_request:{<name>}:<id>"; set when this request set the
--          permits
-- ARGV[1]  the permits (>= 0)
-- ARGV[2]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = set (and published), by this call or an earlier copy of it; 0 = the semaphore
--          existed already (unchanged)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[1] on KEYS[2] when set.
--
-- Re-delivery: a copy of the request that set the permits replies 1 again, not 0.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
if redis.call('exists', KEYS[3]) == 1 then
  return 1
end
if kind == 'string' then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], '1', 'PX', ARGV[2])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
return 1
