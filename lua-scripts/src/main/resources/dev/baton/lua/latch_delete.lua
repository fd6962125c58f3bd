-- latch_delete: delete a count-down latch and tell its waiters.
--
-- KEYS[1]  the latch name (STRING holding the count)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- ARGV[1]  the message announcing a new count or a deletion ("1")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the latch existed and was deleted (ARGV[1] published); 0 = it did not exist
--          error WRONGTYPE when the name holds something other than a string (left alone)
-- Publishes ARGV[1] on KEYS[2] when the latch existed. Baton waiters that see this message and
-- then find the latch gone fail with SynchronizerDeletedException; Redisson waiters re-check.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a count-down latch')
end
redis.call('del', KEYS[1])
redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
return 1
