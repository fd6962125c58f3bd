-- fair_force_unlock: delete a fair lock whoever holds it, and hand it to the live queue head.
--
-- KEYS[1..5]  as fair_acquire.lua: lock hash, queue, waiters, channel, ticket counter
-- KEYS[6..7]  a leader election's only (as fair_acquire.lua): epoch counter, identities
-- ARGV[1]  claim timeout in ms for the hand-on to the next waiter
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    1 = the lock was held and was deleted; 0 = it was not held
--          error WRONGTYPE when the name holds something other than a HASH (left alone)
-- Publishes "<next owner>#<its ticket>" on KEYS[4] when the lock is handed on.
local name, queue, waiters, channel, tickets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local kind = redis.call('type', name).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. name .. ' holds a ' .. kind .. ', not a lock')
end
if kind == 'none' then
  return 0
end
redis.call('del', name)
local claimTimeout = tonumber(ARGV[1])
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
return 1
