-- semaphore_acquire: take permits from a semaphore if enough are available, exactly once per
-- request id.
-- Layout is Redisson's RSemaphore: a STRING at the name holding the available permits; plus
-- Baton's request keys (see data-layout.md), which Redisson never reads.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0 permits)
-- KEYS[2]  this request's key, "baton_request:{<name>}:<id>" (id: 16 hex characters, new for
--          every attempt): "taken" once the attempt took its permits, "cancelled" once
--          semaphore_cancel ran for it
-- KEYS[3..] request keys of this client's earlier requests on this name whose replies arrived:
--          deleted now (no copy of them can come any more)
-- ARGV[1]  permits to take (>= 1)
-- ARGV[2]  how long a request key lives, in ms
--
-- Reply    {1, left}    taken (now or by an earlier copy of this request); left = permits
--                       available after this call
--          {0, exists, available}  refused, not enough permits (or this request was
--                       cancelled); exists = 1 if the semaphore exists, else 0; available = the
--                       permits free now (a waiter woken for permits it cannot use passes its
--                       wake-up on when some are free)
--          error WRONGTYPE (from GET) when the name holds something other than a string
-- Publishes nothing.
--
-- Re-delivery: a copy of a request that took its permits finds "taken" and takes nothing more;
-- a copy arriving after semaphore_cancel finds "cancelled" and takes nothing.
if #KEYS > 2 then
  redis.call('del', unpack(KEYS, 3))
end
local value = redis.call('get', KEYS[1])
local wanted = tonumber(ARGV[1])
if tonumber(value or '0') >= wanted and redis.call('set', KEYS[2], 'taken', 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('decrby', KEYS[1], wanted)}
end
-- Refused, or this request was seen before: an earlier copy took the permits, or it was cancelled.
local seen = redis.call('get', KEYS[2])
if seen == 'taken' then
  return {1, tonumber(value or '0')}
end
return {0, value and 1 or 0, tonumber(value or '0')}
