-- expirable_permits: return expired permits to the pool, then read or change the count.
--
-- KEYS[1..3]  as expirable_acquire.lua: count, "{<name>}:timeout", channel
-- ARGV[1]     what to do: "available" | "set" | "try_set" (addPermits runs semaphore_add.lua,
--             exactly once per request id)
-- ARGV[2]     the number for set (total permits: available + taken) or try_set (available, only
--             if the semaphore does not exist)
-- ARGV[3]     the largest count allowed (2147483647)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    available: the available permits; set: the new available count; try_set: 1 = set,
--          0 = exists already
--          WRONGTYPE for a name of another type
-- Publishes the new count on KEYS[3] when expired permits were returned, and when set or
-- try_set made permits available.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, 1000)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  redis.call(ARGV[#ARGV], KEYS[3], value)
end
local op = ARGV[1]
local n = tonumber(ARGV[2])
local available = tonumber(redis.call('get', KEYS[1]) or '0')
if op == 'available' then
  return available
end
if op == 'try_set' then
  if redis.call('exists', KEYS[1]) == 1 then
    return 0
  end
  redis.call('set', KEYS[1], n)
  redis.call(ARGV[#ARGV], KEYS[3], n)
  return 1
end
if op == 'set' then
  local taken = redis.call('zcard', KEYS[2])
  local value = n - taken
  redis.call('set', KEYS[1], value)
  if value > 0 then
    redis.call(ARGV[#ARGV], KEYS[3], value)
  end
  return value
end
return redis.error_reply('BATON_ARG unknown operation ' .. tostring(op))
