-- semaphore_drain: take every available permit at once.
--
-- KEYS[1]  the semaphore name (STRING)
--
-- Reply    the permits taken (0 if none, or if the semaphore does not exist)
--          error WRONGTYPE when the name holds something other than a string
-- Publishes nothing. The semaphore keeps existing with 0 permits.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
local available = tonumber(redis.call('get', KEYS[1]))
if available <= 0 then
  return 0
end
redis.call('set', KEYS[1], 0)
return available
