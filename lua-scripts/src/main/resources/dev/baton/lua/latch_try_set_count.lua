-- latch_try_set_count: arm a count-down latch, only if it is not armed (absent, or at zero).
-- Layout is Redisson's: a STRING at the latch name holding the count.
--
-- KEYS[1]  the latch name (STRING)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  its request memory, "baton_requests:{<name>}"
-- ARGV[1]  the new count (>= 1)
-- ARGV[2]  the message announcing a new count ("1")
-- ARGV[3]  this request's id (16 hex characters)
-- ARGV[4]  how long the request memory keeps an id, in ms
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
if redis.call('zscore', KEYS[3], ARGV[3]) then
  return 1
end
local current = tonumber(redis.call('get', KEYS[1]))
if current ~= nil and current > 0 then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local memory = tonumber(ARGV[4])
redis.call('set', KEYS[1], ARGV[1])
redis.call('zadd', KEYS[3], now + memory, ARGV[3])
redis.call('pexpire', KEYS[3], memory)
redis.call(ARGV[#ARGV], KEYS[2], ARGV[2])
return 1
