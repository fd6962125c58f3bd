-- rate_acquire: admit permits of a rate limiter at once, or reserve the earliest slot they fit
-- in, on Redis's clock (GCRA: a generic cell rate algorithm), exactly once per request id.
-- Layout is Baton's own (Redisson's RRateLimiter keeps a log stamped with client clocks; see
-- data-layout.md): one HASH per limiter, expiring by itself once it has refilled.
--
-- Time is Redis's TIME in microseconds. A limit is P permits per D microseconds with a burst of
-- B; a permit costs D/P microseconds. The hash holds the theoretical arrival time: the instant
-- the limiter would be full again, as whole microseconds (tat) plus a remainder in 1/P
-- microseconds (tatp), so every sum is exact in integers (below 2^53; the client checks that
-- burst x period and the longest wait keep it so). A request for n permits fits when the new
-- arrival time lies at most B*D/P after its slot; its slot is now if that holds now, else the
-- first instant it holds. So admissions at slots s_i..s_j add up to at most
-- (s_j - s_i) * P / D + B permits: in every window of length w, at most rate * w + burst.
-- Reservations are served in the order they were made (the arrival time only grows).
--
-- KEYS[1]  the limiter, "baton_rate:{<name>}" (HASH: tat, tatp, permits, period, burst)
-- KEYS[2]  this request's key, "baton_request:{<name>}:<id>" (id: 16 hex characters, new for
--          every call): "<slot>:<tat>:<tatp>" once the request was admitted (slot: the
--          microsecond it may go; tat/tatp: the arrival time it left, for rate_cancel),
--          "cancelled" once rate_cancel ran for it
-- KEYS[3..] request keys of this client's earlier requests on this name whose replies arrived:
--          deleted now (no copy of them can come any more)
-- ARGV[1]  permits wanted, n (1 <= n <= burst)
-- ARGV[2]  the caller's limit: permits per period, P (>= 1)
-- ARGV[3]  the caller's limit: the period in microseconds, D (>= 1)
-- ARGV[4]  the caller's limit: the burst, B (>= 1)
-- ARGV[5]  the longest the caller will wait for its slot, in microseconds: 0 = now or never,
--          -1 = however long
-- ARGV[6]  how long a request key lives, in ms
--
-- Reply    {1, wait, P, D, B}   admitted: the caller may go wait microseconds after this call
--                              ran (0: at once); a copy of an admitted request gets its slot
--                              again (wait counted from the copy's run, never below 0)
--          {0, wait, P, D, B}   refused, nothing changed: the earliest slot is wait
--                              microseconds away, beyond what the caller accepts (or n > B:
--                              never; or the sum would reach 2^52 and no longer be exact)
--          {-1, 0, P, D, B}     this request was cancelled before it ran: nothing changed
--          P, D, B: the limit in force. While the hash exists its stored limit wins over the
--          caller's; a limiter that does not exist is created with the caller's.
-- Publishes nothing: nobody waits on a channel; a reserved caller sleeps until its slot.
--
-- Re-delivery: a copy of an admitted request finds its slot and reserves nothing more; a copy
-- arriving after rate_cancel finds "cancelled" and reserves nothing.
if #KEYS > 2 then
  redis.call('del', unpack(KEYS, 3))
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local h = redis.call('hmget', KEYS[1], 'tat', 'tatp', 'permits', 'period', 'burst')
local tat, tatp, P, D, B
if h[3] then
  tat, tatp = tonumber(h[1]), tonumber(h[2])
  P, D, B = tonumber(h[3]), tonumber(h[4]), tonumber(h[5])
else
  tat, tatp = now, 0
  P, D, B = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
end
local seen = redis.call('get', KEYS[2])
if seen == 'cancelled' then
  return {-1, 0, P, D, B}
end
-- A value of another form is another kind's request key under the same name (ids are random: a
-- collision nobody will see); it is not this request's.
local slot = seen and tonumber(string.match(seen, '^(%d+):'))
if slot then
  return {1, math.max(0, slot - now), P, D, B}
end
-- a = q * b + r with 0 <= r < b, exactly (a double's division may round across an integer).
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then
    q, r = q - 1, r + b
  elseif r >= b then
    q, r = q + 1, r - b
  end
  return q, r
end
if tat < now then
  tat, tatp = now, 0
end
local n = tonumber(ARGV[1])
-- The new arrival time, relative to now, in 1/P microseconds.
local after = (tat - now) * P + tatp + n * D
-- How far it lies past the tolerance: the slot is that much later than now.
local wait = 0
local over = after - B * D
if over > 0 then
  local q, r = divmod(over, P)
  wait = q + (r > 0 and 1 or 0)
end
local longest = tonumber(ARGV[5])
-- A sum at 2^52 or more could no longer be exact (a limit stored by another client, a reservation
-- too far ahead): refused.
if n > B or (longest >= 0 and wait > longest) or after >= 4503599627370496 then
  return {0, wait, P, D, B}
end
local q, r = divmod(after, P)
tat = now + q
redis.call('hset', KEYS[1], 'tat', tat, 'tatp', r, 'permits', P, 'period', D, 'burst', B)
-- Idle from now on, the limiter is full again at tat: the hash then says nothing an absent
-- one does not, so it goes. Redis counts the expiry from the current millisecond (up to 999 us
-- before now) and deletes a key only after its last millisecond: q / 1000 + 2 ms, rounded down,
-- ends after tat, never before (it never refills early).
redis.call('pexpire', KEYS[1], math.floor(q / 1000) + 2)
redis.call('set', KEYS[2], string.format('%d:%d:%d', now + wait, tat, r), 'PX', ARGV[6])
return {1, wait, P, D, B}
