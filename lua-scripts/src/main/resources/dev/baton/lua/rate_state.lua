-- rate_state: read a rate limiter's state on Redis's clock, changing nothing.
--
-- KEYS[1]  the limiter, "baton_rate:{<name>}" (HASH, see rate_acquire.lua)
-- ARGV     none
--
-- Reply    {0}                          the limiter does not exist: full, under any limit
--          {1, P, D, B, backlog, ttl}   P, D, B: the limit in force; backlog: how far its
--                                       arrival time lies after now, in 1/P microseconds (0:
--                                       full); ttl: the hash's PTTL (ms)
-- Publishes nothing.
local h = redis.call('hmget', KEYS[1], 'tat', 'tatp', 'permits', 'period', 'burst')
if not h[1] then
  return {0}
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local P = tonumber(h[3])
local backlog = (tonumber(h[1]) - now) * P + tonumber(h[2])
if backlog < 0 then
  backlog = 0
end
return {1, P, tonumber(h[4]), tonumber(h[5]), backlog, redis.call('pttl', KEYS[1])}
