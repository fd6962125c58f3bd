-- rate_delete: delete a rate limiter: it is full again, under whatever limit the next call brings.
-- Reservations already told keep their slots (their callers are asleep on their own timers).
--
-- KEYS[1]  the limiter, "baton_rate:{<name>}" (HASH, see rate_acquire.lua)
-- ARGV     none
--
-- Reply    1 if it existed, 0 if not
-- Publishes nothing.
return redis.call('del', KEYS[1])
