-- semaphore_add: add (or, negative, remove) permits, exactly once per request id: what
-- release and addPermits run.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0)
-- KEYS[2]  its channel, "redisson_sc:{<name>}"
-- KEYS[3]  this request's key, "baton_request:{<name>}:<id>" (the same for every copy of one
--          release); set once the change was made
-- KEYS[4..] request keys of this client's earlier requests on this name whose replies arrived:
--          deleted now
-- ARGV[1]  the change (release: >= 1; addPermits: any non-zero)
-- ARGV[2]  the largest count allowed (2147483647)
-- ARGV[3]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the count after this call (for a request applied before: the count now)
--          error "BATON_ARG ..." when the change would push the count above ARGV[2] (nothing
--          changed); error WRONGTYPE (from INCRBY) when the name holds something other than a
--          string (nothing changed)
-- Publishes the new count on KEYS[2] when permits were added (ARGV[1] > 0).
--
-- Re-delivery: a copy of a request that was applied finds its key and changes nothing.
-- The request key is set first (SET NX) and the change made only when that set it, so a copy
-- that arrives after the semaphore was deleted does not bring the name back (not even as "0",
-- which trySetPermits would take for a set semaphore). What the change refuses (WRONGTYPE, or
-- the overflow) takes the key back in the same script, so nothing is left written. The common
-- path is SET, INCRBY and PUBLISH, with no read.
if #KEYS > 3 then
  redis.call('del', unpack(KEYS, 4))
end
local change = tonumber(ARGV[1])
if not redis.call('set', KEYS[3], '1', 'NX', 'PX', ARGV[3]) then
  return tonumber(redis.call('get', KEYS[1]) or '0') -- applied before: change nothing
end
local value = redis.pcall('incrby', KEYS[1], change)
if type(value) == 'table' then
  redis.call('del', KEYS[3]) -- not applied (WRONGTYPE): a later copy must be judged again
  return value
end
if change > 0 and value > tonumber(ARGV[2]) then
  redis.call('incrby', KEYS[1], -change)
  redis.call('del', KEYS[3]) -- refused, so not applied: a later copy must be judged again
  return redis.error_reply('BATON_ARG adding ' .. change .. ' permits to ' .. (value - change) .. ' available would overflow '
    .. KEYS[1] .. ' (at most ' .. ARGV[2] .. ')')
end
if change > 0 then
  redis.call(ARGV[#ARGV], KEYS[2], value)
end
return value
