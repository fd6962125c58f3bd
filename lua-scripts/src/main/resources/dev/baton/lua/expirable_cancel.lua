-- expirable_cancel: undo an attempt of expirable_acquire whose caller will never have its
-- permits (its reply never came, or a refusal came from a copy written again while an earlier
-- copy may still be on its way), exactly once: if it took its permits, those still taken go back;
-- if it has not run yet, it never will.
--
-- KEYS[1..3]  as expirable_acquire.lua: count, "{<name>}:timeout", channel
-- KEYS[4]  the attempt's request key, "baton_request:{<name>}:<first permit id>"
-- ARGV[1 .. #ARGV-2]  the attempt's permit ids, 32 hex characters each
-- ARGV[#ARGV-1]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    how many of the attempt's permits were given back (0 if it had taken none, was
--          cancelled before, or its permits had expired already)
-- Publishes the new count on KEYS[3] when permits were given back.
--
-- Re-delivery: a second copy finds "cancelled" and changes nothing.
local seen = redis.call('get', KEYS[4])
if seen == 'cancelled' then
  return 0
end
redis.call('set', KEYS[4], 'cancelled', 'PX', ARGV[#ARGV - 1])
if seen ~= 'taken' then
  return 0
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local returned = 0
local released = 0
for i = 1, #ARGV - 2 do
  local id = (ARGV[i]:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
  local expiry = redis.call('zscore', KEYS[2], id)
  if expiry then
    redis.call('zrem', KEYS[2], id)
    returned = returned + 1
    if tonumber(expiry) > now then
      released = released + 1
    end
  end
end
if returned > 0 then
  local value = redis.call('incrby', KEYS[1], returned)
  redis.call(ARGV[#ARGV], KEYS[3], value)
end
return released
