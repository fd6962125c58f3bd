-- semaphore_add: add (or, negative, remove) permits, exactly once per request id: what
-- release and addPermits run.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  its request memory, "baton_requests:{<name>}"
-- ARGV[1]  the change (release: >= 1; addPermits: any non-zero)
-- ARGV[2]  the largest count allowed (2147483647)
-- ARGV[3]  this request's id (16 hex characters; the same for every copy of one release)
-- ARGV[4]  how long the request memory keeps an id, in ms
-- ARGV[5]  ids of this client's earlier requests on this name whose replies arrived, to forget
--          now (space-separated; may be empty)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the count after this call (for a request applied before: the count now)
--          error "BATON_ARG ..." when the change would push the count above ARGV[2] (nothing
--          changed); error WRONGTYPE when the name holds something other than a string
-- Publishes the new count on KEYS[2] when permits were added (ARGV[1] > 0).
--
-- Re-delivery: a copy of a request that was applied finds its id remembered and changes
-- nothing.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
local done = {}
for id in string.gmatch(ARGV[5], '%S+') do
  done[#done + 1] = id
end
if #done > 0 then
  redis.call('zrem', KEYS[3], unpack(done))
end
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
local current = tonumber(redis.call('get', KEYS[1]) or '0')
if redis.call('zscore', KEYS[3], ARGV[3]) then
  return current
end
local change = tonumber(ARGV[1])
if current + change > tonumber(ARGV[2]) then
  return redis.error_reply('BATON_ARG adding ' .. change .. ' permits to ' .. current .. ' available would overflow '
    .. KEYS[1] .. ' (at most ' .. ARGV[2] .. ')')
end
local value = redis.call('incrby', KEYS[1], change)
local memory = tonumber(ARGV[4])
redis.call('zadd', KEYS[3], now + memory, ARGV[3])
redis.call('pexpire', KEYS[3], memory)
if change > 0 then
  redis.call(ARGV[#ARGV], KEYS[2], value)
end
return value
