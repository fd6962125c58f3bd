-- rwlock_read_acquire: take, or re-enter, the read side of a read-write lock.
-- Layout is Redisson's RReadWriteLock: one HASH at the name with field "mode" = read | write,
-- a reader's field = its owner id -> read hold count, the writer's field "<owner>:write" ->
-- write hold count; each read hold n has its own key "{<name>}:<owner>:rwlock_timeout:<n>" (value
-- 1, PX = lease) and the hash lives as long as its longest hold.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  "baton_rwlock_writer:{<name>}": a waiting writer's mark (Baton's own; see below)
-- KEYS[3]  "{<name>}:<owner>:rwlock_timeout": prefix of the caller's per-hold keys (":<n>" added;
--          same hash tag, so the same cluster slot)
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the caller's reader field (its owner id)
-- ARGV[3]  the caller's writer field ("<owner>:write")
-- ARGV[4]  the caller's read hold count before this call, as the client knows it
--
-- Reply    {1, holds}  granted; holds = the caller's read holds after this call
--          {0, retry}  refused: a writer holds the lock (retry = its TTL), or a writer is waiting
--                      and the caller holds no read yet (retry = the mark's TTL)
-- Publishes nothing.
--
-- No writer starvation: while a writer's mark exists, a caller without a read hold is refused,
-- so the readers drain and the writer gets in. Reentrant reads are always let in (refusing them
-- could deadlock their holder). Redisson's readers do not know the mark.
-- Re-delivery: a count already at ARGV[4] + 1 is not raised again, if that hold is still alive;
-- its key and the hash are given the lease again, as for a grant (the hold may be one a give-back
-- never released, now the caller's again: it must not end sooner than the caller was told).
-- Expired holds: a read hold whose own key has expired (its lease ran out while the hash lived on
-- for other holds) is gone; the caller's field is dropped before anything else, so neither a
-- re-delivered copy nor a new acquire reports a hold that has no lease left (the simulation found
-- both: a late copy "granted" a hold that other readers' releases then deleted with the hash).
local name, mark, prefix = KEYS[1], KEYS[2], KEYS[3]
local lease, reader, writer, expected = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local held = tonumber(redis.call('hget', name, reader)) or 0
if held > 0 and redis.call('exists', prefix .. ':' .. held) == 0 then
  redis.call('hdel', name, reader)
  held = 0
end
if held > 0 and held == expected + 1 then
  redis.call('pexpire', prefix .. ':' .. held, lease)
  redis.call('pexpire', name, math.max(redis.call('pttl', name), lease))
  return {1, held}
end
local mode = redis.call('hget', name, 'mode')
local mine = mode == 'write' and redis.call('hexists', name, writer) == 1
if mode == 'write' and not mine then
  return {0, redis.call('pttl', name)}
end
if held == 0 and not mine and redis.call('exists', mark) == 1 then
  return {0, redis.call('pttl', mark)}
end
if not mode then
  redis.call('hset', name, 'mode', 'read')
end
held = redis.call('hincrby', name, reader, 1)
redis.call('set', prefix .. ':' .. held, 1, 'px', lease)
redis.call('pexpire', name, math.max(redis.call('pttl', name), lease))
return {1, held}
