-- fair_release: give back one hold of a fair lock; the last hold hands the lock straight to
-- the live head of the queue and wakes that waiter alone. Also how a waiter leaves (timed out,
-- interrupted, cancelled): its queue entry is removed, and a lock handed to it that it never
-- learnt about (ARGV[3] = 1 for an owner holding nothing locally) is passed on.
--
-- KEYS[1..5]  as fair_acquire.lua: lock hash, queue, waiters, channel, ticket counter
-- KEYS[6..7]  a leader election's only (as fair_acquire.lua): epoch counter, identities
-- ARGV[1]  lease in milliseconds, applied again while holds remain
-- ARGV[2]  owner id
-- ARGV[3]  the hold count the caller believes it has before this call (>= 1)
-- ARGV[4]  claim timeout in ms: the PEXPIRE of the lock handed to the next waiter
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    -1      the owner holds nothing (never held, lease lost, or a re-delivered final
--                  release that was applied already)
--          n >= 0  holds the owner has left; 0 = released (handed on, or free)
-- Publishes "<next owner>#<its ticket>" on KEYS[4] when the lock is handed on (an election's
-- hand-off also writes the next leader's identity and since to the hash, as fair_acquire.lua).
--
-- Dead waiters (liveness deadline passed, server clock) at the head are removed on the way.
-- Re-delivery: a count already at ARGV[3] - 1 is left alone.
local name, queue, waiters, channel, tickets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, expected, claimTimeout = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('zrem', queue, owner)
redis.call('hdel', waiters, owner)
if KEYS[7] then
  redis.call('hdel', KEYS[7], owner)
end
local held = redis.call('hget', name, owner)
if not held then
  if redis.call('zcard', queue) == 0 then
    redis.call('del', queue, waiters, tickets)
    if KEYS[7] then
      redis.call('del', KEYS[7])
    end
  end
  return -1
end
held = tonumber(held)
if held == expected - 1 then
  return held
end
held = redis.call('hincrby', name, owner, -1)
if held > 0 then
  redis.call('pexpire', name, ARGV[1])
  return held
end
redis.call('del', name)

-- hand-off: begin (the same text in fair_release.lua and fair_force_unlock.lua, checked by FairHandOffCopiesTest)
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for _ = 1, 100 do
  local head = redis.call('zrange', queue, 0, 0, 'withscores')
  local first = head[1]
  if not first then
    break
  end
  redis.call('zrem', queue, first)
  local deadline = tonumber(redis.call('hget', waiters, first))
  redis.call('hdel', waiters, first)
  local identity = false
  if KEYS[7] then
    identity = redis.call('hget', KEYS[7], first)
    redis.call('hdel', KEYS[7], first)
  end
  if deadline and deadline >= now then
    redis.call('hset', name, first, 1)
    if KEYS[7] then
      -- an election: the new leader's identity and since when (its epoch comes with its claim)
      redis.call('hset', name, 'baton:identity', identity or '', 'baton:since', now)
    end
    redis.call('pexpire', name, claimTimeout)
    redis.call(ARGV[#ARGV], channel, first .. '#' .. string.format('%d', tonumber(head[2])))
    break
  end
end
if redis.call('zcard', queue) == 0 then
  redis.call('del', queue, waiters, tickets)
  if KEYS[7] then
    redis.call('del', KEYS[7])
  end
end
-- hand-off: end
return 0
