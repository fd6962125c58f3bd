-- latch_try_set_count: arm a count-down latch, only if it is not armed (absent, or at zero).
-- Layout is Redisson's: a STRING at the latch name holding the count.
--
-- KEYS[1]  the latch name (STRING)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  this request's key, "baton_request:{<name>}:<id>"; set when this request armed it
-- ARGV[1]  the new count (>= 1)
-- ARGV[2]  the message announcing a new count ("1")
-- ARGV[3]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the count was set and announced, by this call or an earlier copy of it;
--          0 = the latch was armed already (unchanged)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[2] on KEYS[2] when the count was set.
--
-- Re-delivery: a copy of the request that armed the latch replies 1 again and changes nothing,
-- even if the latch has been counted down to zero meanwhile.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a count-down latch')
end
if redis.call('exists', KEYS[3]) == 1 then
  return 1
end
local current = tonumber(redis.call('get', KEYS[1]))
if current ~= nil and current > 0 then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], '1', 'PX', ARGV[3])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[2])
return 1
