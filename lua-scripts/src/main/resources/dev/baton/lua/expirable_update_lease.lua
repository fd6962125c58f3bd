-- expirable_update_lease: give a held permit a new lease, counted from now (server clock, in ms
-- rounded up).
--
-- KEYS[1..3]  as expirable_acquire.lua: count, "{<name>}:timeout", channel
-- ARGV[1]     the permit id, 32 hex characters (stored as its 16 raw bytes)
-- ARGV[2]     the new lease in ms, or -1 for never
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = updated; 0 = no such live permit (expired permits are returned to the pool first)
-- Publishes the new count on KEYS[3] when expired permits were returned to the pool.
local NEVER = 922337203685477
local id = (ARGV[1]:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local nowUp = tonumber(time[1]) * 1000 + math.ceil(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, 1000)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  redis.call(ARGV[#ARGV], KEYS[3], value)
end
local expiry = redis.call('zscore', KEYS[2], id)
if not expiry or tonumber(expiry) <= now then
  return 0
end
local lease = tonumber(ARGV[2])
redis.call('zadd', KEYS[2], lease < 0 and NEVER or nowUp + lease, id)
return 1
