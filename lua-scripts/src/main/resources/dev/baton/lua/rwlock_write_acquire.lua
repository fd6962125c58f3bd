-- rwlock_write_acquire: take, or re-enter, the write side of a read-write lock.
--
-- KEYS[1]  the lock name (HASH; see rwlock_read_acquire.lua for the layout)
-- KEYS[2]  "baton_rwlock_writer:{<name>}": the waiting writer's mark (STRING: writer field, PX)
-- KEYS[3]  "{<name>}:<owner>:rwlock_timeout": prefix of the caller's own read-hold keys
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  the caller's writer field ("<owner>:write")
-- ARGV[3]  the caller's reader field (its owner id)
-- ARGV[4]  the caller's write hold count before this call, as the client knows it
-- ARGV[5]  the mark's time to live in ms (the caller calls again well within it while waiting)
-- ARGV[6]  1 = the caller will wait if refused (leave the mark); 0 = it will not
--
-- Reply    {1, holds}  granted; holds = the caller's write holds after this call
--          {0, retry}  refused; retry = ms until the caller should call again at the latest
--          {-1, 0}     refused for good: the caller holds read locks only, and an upgrade can
--                      never succeed while it does (Redisson would wait forever)
-- Publishes nothing.
--
-- A refused writer that will wait leaves its mark (or refreshes its own), which keeps new
-- Baton readers out until it gets in; a granted writer removes its mark.
-- Re-delivery: a count already at ARGV[4] + 1 is not raised again.
-- Expired reads: a read field of the caller whose top hold's own key has expired (the hash lived
-- on for other readers) is gone, not an upgrade: it is dropped (with the hash if only "mode" is
-- left) before the caller is judged, so a stray field cannot refuse its owner's write for ever.
local name, mark, readPrefix = KEYS[1], KEYS[2], KEYS[3]
local lease, writer, reader, expected = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
local markTtl, willWait = tonumber(ARGV[5]), ARGV[6] == '1'
local mode = redis.call('hget', name, 'mode')
local held = tonumber(redis.call('hget', name, writer)) or 0
if held > 0 then
  if held ~= expected + 1 then
    held = redis.call('hincrby', name, writer, 1)
  end
  redis.call('pexpire', name, math.max(redis.call('pttl', name), lease))
  return {1, held}
end
local reads = tonumber(redis.call('hget', name, reader))
if mode == 'read' and reads and redis.call('exists', readPrefix .. ':' .. reads) == 0 then
  redis.call('hdel', name, reader)
  if redis.call('hlen', name) == 1 then
    redis.call('del', name)
    mode = nil
  end
end
if not mode then
  redis.call('hset', name, 'mode', 'write')
  redis.call('hset', name, writer, 1)
  redis.call('pexpire', name, lease)
  if redis.call('get', mark) == writer then
    redis.call('del', mark)
  end
  return {1, 1}
end
if mode == 'read' and redis.call('hexists', name, reader) == 1 then
  return {-1, 0}
end
if willWait then
  local current = redis.call('get', mark)
  if not current or current == writer then
    redis.call('set', mark, writer, 'px', markTtl)
  end
end
local ttl = redis.call('pttl', name)
local refresh = math.floor(markTtl / 3)
if ttl < 0 or ttl > refresh then
  ttl = refresh
end
return {0, ttl}
