-- semaphore_add: add (or, negative, remove) permits: what release and addPermits run.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- ARGV[1]  the change (release: >= 1; addPermits: any non-zero)
-- ARGV[2]  the largest count allowed (2147483647)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the new count
--          error "BATON_ARG ..." when the change would push the count above ARGV[2] (nothing
--          changed); error WRONGTYPE when the name holds something other than a string
-- Publishes the new count on KEYS[2] when permits were added (ARGV[1] > 0).
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
local current = tonumber(redis.call('get', KEYS[1]) or '0')
local change = tonumber(ARGV[1])
if current + change > tonumber(ARGV[2]) then
  return redis.error_reply('BATON_ARG adding ' .. change .. ' permits to ' .. current .. ' available would overflow '
    .. KEYS[1] .. ' (at most ' .. ARGV[2] .. ')')
end
local value = redis.call('incrby', KEYS[1], change)
if change > 0 then
  redis.call(ARGV[#ARGV], KEYS[2], value)
end
return value
