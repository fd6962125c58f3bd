-- expirable_acquire: take one or more permits of a permit-expirable semaphore, each under its
-- own permit id, all or none, exactly once per attempt.
-- Layout is Redisson's RPermitExpirableSemaphore: available permits in a STRING at the name,
-- taken permits in the ZSET "{<name>}:timeout" as permit id -> expiry in epoch ms; plus Baton's
-- request keys (see data-layout.md), which Redisson never reads.
--
-- KEYS[1]  the semaphore name (STRING, available permits)
-- KEYS[2]  "{<name>}:timeout" (ZSET, permit id -> expiry epoch ms; 922337203685477 = never)
-- KEYS[3]  its channel, "redisson_sc:{<name>}"
-- KEYS[4]  this attempt's request key, "baton_request:{<name>}:<first permit id>": "taken" once
--          the attempt took its permits, "cancelled" once expirable_cancel ran for it
-- KEYS[5..] request keys of this client's earlier requests on this name whose replies arrived:
--          deleted now (no copy of them can come any more)
-- ARGV[1 .. #ARGV-3]  the permit ids, one per permit taken, each 32 hex characters chosen by the
--          client (new for every attempt); stored as their 16 raw bytes, as Redisson stores its
--          permit ids
-- ARGV[#ARGV-2]  lease in ms, or -1 for permits that never expire
-- ARGV[#ARGV-1]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    {1, 0}      taken (now, or by an earlier copy of this attempt, whose permits are
--                      all still taken and live)
--          {0, wait, exists}  refused: not enough permits, this attempt was cancelled, or an
--                      earlier copy took its permits and some were released or expired since
--                      (a copy answered that late must not report permits nobody holds, nor
--                      take them again, even once its request key has expired);
--                      wait = ms until the earliest permit expires (-1 if none will); exists =
--                      1 if the semaphore exists, else 0
-- Publishes the new count on KEYS[3] when expired permits were returned to the pool.
--
-- Re-delivery: a copy of an attempt that took its permits finds "taken" and takes nothing more
-- (answered as taken while they are, as refused once they were released or expired); a copy
-- arriving after expirable_cancel finds "cancelled" and takes nothing.
--
-- Expiry is decided with the Redis server's clock (TIME): every call first returns the permits
-- whose expiry has passed (up to 1,000 per call; a permit whose expiry has passed counts as not
-- held even before it is returned). A lease counts from the server's now in ms rounded up.
-- Redisson clients compare the same scores with their own clocks.
local NEVER = 922337203685477
local function raw(hex)
  return (hex:gsub('..', function(pair) return string.char(tonumber(pair, 16)) end))
end
if #KEYS > 4 then
  redis.call('del', unpack(KEYS, 5))
end
local count = #ARGV - 3
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local nowUp = tonumber(time[1]) * 1000 + math.ceil(tonumber(time[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[2], 0, now, 'limit', 0, 1000)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  redis.call(ARGV[#ARGV], KEYS[3], value)
end
local seen = redis.call('get', KEYS[4])
-- Whether this attempt's ids are all taken and live (a copy of it ran), and whether any is there.
local live, present = true, false
for i = 1, count do
  local expiry = redis.call('zscore', KEYS[2], raw(ARGV[i]))
  if expiry then
    present = true
  end
  if not expiry or tonumber(expiry) <= now then
    live = false
  end
end
if live and seen ~= 'cancelled' then
  return {1, 0}
end
local available = tonumber(redis.call('get', KEYS[1]) or '0')
if not seen and not present and available >= count then
  redis.call('decrby', KEYS[1], count)
  redis.call('set', KEYS[4], 'taken', 'PX', ARGV[#ARGV - 1])
  local lease = tonumber(ARGV[#ARGV - 2])
  -- The lease counts from the server's now rounded up, so it never ends before lease ms have passed.
  local expiry = lease < 0 and NEVER or nowUp + lease
  for i = 1, count do
    redis.call('zadd', KEYS[2], expiry, raw(ARGV[i]))
  end
  return {1, 0}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
local exists = redis.call('exists', KEYS[1])
if first[1] and tonumber(first[2]) < NEVER then
  return {0, tonumber(first[2]) - now, exists}
end
return {0, -1, exists}
