-- rate_set_limit: change the limit of a rate limiter, for every client, keeping what it has
-- admitted: the permits its arrival time stands for now (its backlog, reservations included)
-- stay owed under the new limit, rounded up to the new cost of a permit.
--
-- KEYS[1]  the limiter, "baton_rate:{<name>}" (HASH, see rate_acquire.lua)
-- ARGV[1]  the new limit: permits per period, P (>= 1)
-- ARGV[2]  the new limit: the period in microseconds, D (>= 1)
-- ARGV[3]  the new limit: the burst, B (>= 1)
--
-- Reply    {0}                the limiter did not exist: nothing written (the next call's limit
--                             creates it; a client asks with its own limit)
--          {1, P, D, B}       changed; the limit it had before
-- Publishes nothing.
local h = redis.call('hmget', KEYS[1], 'tat', 'tatp', 'permits', 'period', 'burst')
if not h[1] then
  return {0}
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local oldP, oldD, oldB = tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
local P, D, B = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
-- The backlog in permits is (old backlog in 1/oldP us) / oldD; under the new limit it costs
-- that many permits * D / P us, rounded up (never admitting more than was owed).
local backlog = (tonumber(h[1]) - now) * oldP + tonumber(h[2])
local us = 0
if backlog > 0 then
  us = math.ceil(backlog / oldD * D / P)
end
redis.call('hset', KEYS[1], 'tat', now + us, 'tatp', 0, 'permits', P, 'period', D, 'burst', B)
redis.call('pexpire', KEYS[1], math.floor(us / 1000) + 2) -- after tat, never before (rate_acquire.lua)
return {1, oldP, oldD, oldB}
