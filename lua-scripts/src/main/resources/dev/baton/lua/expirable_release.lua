-- expirable_release: return permits, by id, to a permit-expirable semaphore.
--
-- KEYS[1..3]  as expirable_acquire.lua: count, "{<name>}:timeout", channel
-- ARGV[1 .. #ARGV-1]  the permit ids, 32 hex characters each (stored as their 16 raw bytes)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    how many of the ids were released: for one id, 1 = released, 0 = no such permit
--          (never issued, released already, or expired and returned to the pool)
-- Publishes the new count on KEYS[3] when a permit was returned.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local returned = 0
local released = 0
for i = 1, #ARGV - 1 do
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
