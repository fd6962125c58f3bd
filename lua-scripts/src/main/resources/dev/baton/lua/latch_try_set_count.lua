-- latch_try_set_count: arm a count-down latch, only if it is not armed (absent, or at zero).
-- Layout is Redisson's: a STRING at the latch name holding the count.
--
-- KEYS[1]  the latch name (STRING)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- ARGV[1]  the new count (>= 1)
-- ARGV[2]  the message announcing a new count ("1")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the count was set and announced; 0 = the latch is armed already (unchanged)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[2] on KEYS[2] when the count was set.
--
-- Re-delivery: a re-sent copy finds the latch armed (by its first copy) and replies 0.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a count-down latch')
end
local current = tonumber(redis.call('get', KEYS[1]))
if current ~= nil and current > 0 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[2])
return 1
