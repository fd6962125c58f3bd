-- expirable_release: return one permit, by id, to a permit-expirable semaphore.
--
-- KEYS[1..3]  as expirable_acquire.lua: count, "{<name>}:timeout", channel
-- ARGV[1]     the permit id, 32 hex characters (stored as its 16 raw bytes)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = released; 0 = no such permit (never issued, released already, or expired and
--          returned to the pool)
-- Publishes the new count on KEYS[3] when a permit was returned.
local id = (ARGV[1]:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local expiry = redis.call('zscore', KEYS[2], id)
if not expiry then
  return 0
end
redis.call('zrem', KEYS[2], id)
local value = redis.call('incrby', KEYS[1], 1)
redis.call(ARGV[#ARGV], KEYS[3], value)
if tonumber(expiry) <= now then
  return 0
end
return 1
