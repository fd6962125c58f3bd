-- latch_count_down: count a latch down by one; at zero the latch is deleted and announced.
--
-- KEYS[1]  the latch name (STRING holding the count)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- ARGV[1]  the message announcing zero ("0")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the count after this call; 0 = it just reached zero (key deleted, ARGV[1] published);
--          -1 = the latch was absent or already at zero (nothing changed, nothing published)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes ARGV[1] on KEYS[2] when the count reaches zero.
--
-- Not idempotent: a count-down re-sent after a lost reply counts twice (see guarantees.md).
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return -1
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a count-down latch')
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
