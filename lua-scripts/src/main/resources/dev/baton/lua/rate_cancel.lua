-- rate_cancel: undo a rate limiter request whose caller gave up (interrupted, cancelled, timed
-- out while its slot was still ahead) or whose reply never came, once per request id.
-- Permits come back only if nothing was reserved after them: giving back permits from the
-- middle of the queue would move later callers' slots, which have already been told.
--
-- KEYS[1]  the limiter, "baton_rate:{<name>}" (HASH, see rate_acquire.lua)
-- KEYS[2]  the request's key, "baton_request:{<name>}:<id>" (see rate_acquire.lua)
-- ARGV[1]  the permits the request asked for, n
-- ARGV[2]  how long a request key lives, in ms
--
-- Reply    1   the request had been admitted and was the latest: its permits are back (the
--              arrival time moved back by n permits' cost, never before now)
--          0   the request had been admitted but a later one was reserved behind it: nothing
--              comes back (its slot goes unused: under-admission, never over-admission)
--          -1  the request had not run: it is marked, so a copy arriving later reserves nothing
--          -2  it was cancelled before (a copy of this undo): nothing changed
-- Publishes nothing.
local seen = redis.call('get', KEYS[2])
if seen == 'cancelled' then
  return -2
end
redis.call('set', KEYS[2], 'cancelled', 'PX', ARGV[2])
if not seen then
  return -1
end
local _, tat, tatp = string.match(seen, '^(%d+):(%d+):(%d+)$')
tat, tatp = tonumber(tat), tonumber(tatp)
local h = redis.call('hmget', KEYS[1], 'tat', 'tatp', 'permits', 'period')
if not h[1] or tonumber(h[1]) ~= tat or tonumber(h[2]) ~= tatp then
  return 0
end
local P, D = tonumber(h[3]), tonumber(h[4])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- The arrival time before this request: n permits' cost earlier, in 1/P microseconds.
local back = (tat - now) * P + tatp - tonumber(ARGV[1]) * D
if back <= 0 then
  -- Time has already passed those permits' cost: the limiter is as full as if it never ran.
  redis.call('del', KEYS[1])
  return 1
end
local q = math.floor(back / P)
local r = back - q * P
if r < 0 then
  q, r = q - 1, r + P
elseif r >= P then
  q, r = q + 1, r - P
end
redis.call('hset', KEYS[1], 'tat', now + q, 'tatp', r)
redis.call('pexpire', KEYS[1], math.floor(q / 1000) + 2) -- after tat, never before (rate_acquire.lua)
return 1
