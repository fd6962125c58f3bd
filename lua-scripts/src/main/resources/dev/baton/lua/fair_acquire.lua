-- fair_acquire: take a fair lock in arrival order, or join (and stay alive in) its queue.
-- Baton's own layout; not interoperable with Redisson's RFairLock (see docs/data-layout.md).
--
-- KEYS[1]  the lock name: HASH, field = owner id, value = hold count (as the reentrant lock)
-- KEYS[2]  "baton_fair_queue:{<name>}": ZSET, member = waiting owner id, score = its ticket
-- KEYS[3]  "baton_fair_waiters:{<name>}": HASH, owner id -> liveness deadline (server ms)
-- KEYS[4]  "baton_fair_lock:{<name>}": channel; message = "<owner>#<ticket>" of the waiter the
--          lock was handed to (the ticket makes each hand-off message unique)
-- KEYS[5]  "baton_fair_ticket:{<name>}": STRING, the last ticket handed out; a new ticket is
--          max(last + 1, server time in microseconds), so tickets never repeat for a name
--          (KEYS[2], KEYS[3], KEYS[5] and an election's KEYS[7] expire a waiter timeout, ARGV[4],
--          after the last call that queued or refreshed a waiter)
-- ARGV[1]  lease in milliseconds for a grant to the caller
-- ARGV[2]  owner id, "<clientId>:<threadId>"
-- ARGV[3]  the hold count the caller believes it has before this call
-- ARGV[4]  waiter lease in ms: a queued owner that has not called again within it is dead
-- ARGV[5]  claim timeout in ms: the PEXPIRE of a lock handed to a waiter until it claims it
-- ARGV[6]  1 = queue the caller if refused (it will wait); 0 = do not (tryLock without wait)
--
-- A leader election (docs/guide/leader-election.md) is a fair lock with two more keys and one
-- more argument; with them the lock hash also carries the leader's "baton:identity",
-- "baton:epoch" and "baton:since" (server ms) fields, which go with the hash:
-- KEYS[6]  "baton_leader_epoch:{<name>}": STRING, the last epoch issued: each claim of the
--          leadership (a grant that finds the caller holding nothing it knew of) issues
--          max(last + 1, server time in microseconds), as the fenced lock's token
-- KEYS[7]  "baton_leader_identity:{<name>}": HASH, queued owner id -> its identity
-- ARGV[7]  the caller's identity (shown to everyone as the leader's once it leads)
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    {1, holds, 0}      granted (also when the lock had been handed to the caller); an
--                             election's has the epoch in place of the 0
--          {0, retry, ticket} refused; retry = ms until the caller should call again at the
--                             latest (the holder's TTL, capped by the caller's need to stay
--                             alive); ticket = the caller's place in the queue (0 if not queued)
-- Publishes "<owner>#<ticket>" on KEYS[4] when the call hands a free lock to the live queue head.
--
-- Deadlines come from the Redis server's clock (TIME). Work per call is O(log N) in the queue
-- length, plus the removal of dead heads found on the way (each removed once).
-- Re-delivery: the caller's ticket is kept, and a count already at ARGV[3] + 1 is not raised.
local name, queue, waiters, channel, tickets = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease, owner, expected = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local waiterLease, claimTimeout, mayQueue = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
local identities = KEYS[7]
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local nowMicros = tonumber(time[1]) * 1000000 + tonumber(time[2])

local function forget(who)
  redis.call('zrem', queue, who)
  redis.call('hdel', waiters, who)
  if identities then
    redis.call('hdel', identities, who)
  end
end

-- An election's new epoch, written to the hash: max(last + 1, server clock in microseconds).
local function issue()
  local epoch = math.max((tonumber(redis.call('get', KEYS[6])) or 0) + 1, nowMicros)
  epoch = string.format('%d', epoch)
  redis.call('set', KEYS[6], epoch)
  redis.call('hset', name, 'baton:epoch', epoch)
  return tonumber(epoch)
end

local function liveHead()
  for _ = 1, 100 do
    local first = redis.call('zrange', queue, 0, 0, 'withscores')
    if not first[1] then
      return nil
    end
    local deadline = tonumber(redis.call('hget', waiters, first[1]))
    if deadline and deadline >= now then
      return first[1], first[2]
    end
    forget(first[1])
  end
  return nil
end

local function tidy()
  if redis.call('zcard', queue) == 0 then
    redis.call('del', queue, waiters, tickets)
    if identities then
      redis.call('del', identities)
    end
  end
end

local function enqueue()
  local ticket = redis.call('zscore', queue, owner)
  if not ticket then
    -- Tickets only ever rise, also across an emptied queue (whose counter is deleted): a counter
    -- starts again from the server clock in microseconds, so the late hand-off message of an
    -- earlier wait can never carry a ticket that is current again. Integers below 2^53: exact
    -- as scores; written with %d so that no exponent notation reaches Redis.
    local last = tonumber(redis.call('get', tickets) or 0)
    ticket = string.format('%d', math.max(last + 1, nowMicros))
    redis.call('set', tickets, ticket)
    redis.call('zadd', queue, ticket, owner)
  end
  redis.call('hset', waiters, owner, now + waiterLease)
  -- The line's keys live a waiter timeout past the last call of anyone in it: every live waiter
  -- calls again within a third of it, so they stay while anyone waits, and go once nobody does
  -- (waiters a data loss brought back, or whose leave was lost, are not left behind for ever).
  redis.call('pexpire', queue, waiterLease)
  redis.call('pexpire', waiters, waiterLease)
  redis.call('pexpire', tickets, waiterLease)
  if identities then
    redis.call('hset', identities, owner, ARGV[7])
    redis.call('pexpire', identities, waiterLease)
  end
  return tonumber(ticket)
end

local held = redis.call('hget', name, owner)
if held then
  held = tonumber(held)
  if held ~= expected + 1 then
    held = redis.call('hincrby', name, owner, 1)
  end
  redis.call('pexpire', name, lease)
  forget(owner)
  tidy()
  if identities then
    -- The claim of a hand-off, or a first acquisition whose reply was lost: a new epoch (the
    -- caller has seen none for this hold). A re-entry keeps the hold's.
    local epoch = redis.call('hget', name, 'baton:epoch')
    if expected == 0 or not epoch then
      epoch = issue() -- also a hold with no epoch: handed on and never claimed, or counted up twice
    else
      epoch = tonumber(epoch)
    end
    if not redis.call('hget', name, 'baton:since') then
      redis.call('hset', name, 'baton:identity', ARGV[7], 'baton:since', now)
    end
    return {1, held, epoch}
  end
  return {1, held, 0}
end

local refreshBy = math.floor(waiterLease / 3)
if redis.call('exists', name) == 1 then
  local ticket = 0
  if mayQueue then
    ticket = enqueue()
  end
  local ttl = redis.call('pttl', name)
  if ttl < 0 or ttl > refreshBy then
    ttl = refreshBy
  end
  return {0, ttl, ticket}
end

local head, headTicket = liveHead()
if head == nil or head == owner then
  redis.call('hset', name, owner, 1)
  redis.call('pexpire', name, lease)
  forget(owner)
  tidy()
  if identities then
    redis.call('hset', name, 'baton:identity', ARGV[7], 'baton:since', now)
    return {1, 1, issue()}
  end
  return {1, 1, 0}
end

-- The lock is free but someone else is first in line: it is theirs.
redis.call('hset', name, head, 1)
if identities then
  redis.call('hset', name, 'baton:identity', redis.call('hget', identities, head) or '', 'baton:since', now)
end
redis.call('pexpire', name, claimTimeout)
forget(head)
redis.call(ARGV[#ARGV], channel, head .. '#' .. string.format('%d', tonumber(headTicket)))
local ticket = 0
if mayQueue then
  ticket = enqueue()
end
tidy()
return {0, math.min(claimTimeout, refreshBy), ticket}
