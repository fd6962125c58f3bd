-- latch_count_down: count a latch down by one, exactly once per request id; at zero the latch
-- is deleted and announced.
--
-- KEYS[1]  the latch name (STRING holding the count)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  its request memory, "baton_requests:{<name>}" (ZSET request id -> expiry, epoch ms
--          by the server's clock), which Redisson never reads
-- ARGV[1]  the message announcing zero ("0")
-- ARGV[2]  this request's id (16 hex characters; the same for every copy of one countDown)
-- ARGV[3]  how long the request memory keeps an id, in ms
-- ARGV[4]  ids of this client's earlier requests on this name whose replies arrived, to forget
--          now (space-separated; may be empty)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the count after this call; 0 = it just reached zero (key deleted, ARGV[1] published);
--          -1 = the latch was absent or already at zero (nothing changed, nothing published);
--          -2 = an earlier copy of this request counted already (nothing changed)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[1] on KEYS[2] when the count reaches zero.
--
-- Re-delivery: the id is remembered even when the latch was absent, so a copy arriving after
-- the latch was armed again never counts down the new round.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
local done = {}
for id in string.gmatch(ARGV[4], '%S+') do
  done[#done + 1] = id
end
if #done > 0 then
  redis.call('zrem', KEYS[3], unpack(done))
end
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a count-down latch')
end
if redis.call('zscore', KEYS[3], ARGV[2]) then
  return -2
end
local memory = tonumber(ARGV[3])
redis.call('zadd', KEYS[3], now + memory, ARGV[2])
redis.call('pexpire', KEYS[3], memory)
if kind == 'none' then
  return -1
end
local count = redis.call('decr', KEYS[1])
if count > 0 then
  return count
end
redis.call('del', KEYS[1])
if count == 0 then
  redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
  return 0
end
return -1
