-- semaphore_try_set: give a semaphore its initial permits, only if it does not exist.
--
-- KEYS[1]  the semaphore name (STRING)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  its request memory, "baton_requests:{<name>}"
-- ARGV[1]  the permits (>= 0)
-- ARGV[2]  this request's id (16 hex characters)
-- ARGV[3]  how long the request memory keeps an id, in ms
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
if redis.call('zscore', KEYS[3], ARGV[2]) then
  return 1
end
if kind == 'string' then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local memory = tonumber(ARGV[3])
redis.call('set', KEYS[1], ARGV[1])
redis.call('zadd', KEYS[3], now + memory, ARGV[2])
redis.call('pexpire', KEYS[3], memory)
redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
return 1
