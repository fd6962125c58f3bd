-- semaphore_acquire: take permits from a semaphore if enough are available.
-- Layout is Redisson's RSemaphore: a STRING at the name holding the available permits.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0 permits)
-- ARGV[1]  permits to take (>= 1)
--
-- Reply    {1, left}    taken; left = permits available after this call
--          {0, exists}  refused, not enough permits; exists = 1 if the semaphore exists, else 0
--          error WRONGTYPE when the name holds something other than a string
-- Publishes nothing.
--
-- Not idempotent: a copy re-sent after a lost reply takes the permits twice (Redisson's layout
-- has nowhere to remember a request; see guarantees.md). The permit-expirable semaphore is.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
local available = tonumber(redis.call('get', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if available >= wanted then
  return {1, redis.call('decrby', KEYS[1], wanted)}
end
return {0, kind == 'none' and 0 or 1}
