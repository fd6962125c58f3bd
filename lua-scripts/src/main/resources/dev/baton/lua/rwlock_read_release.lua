-- rwlock_read_release: give back one read hold; the last hold of all frees the lock.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  the lock's channel, "redisson_rwlock:{<name>}"
-- KEYS[3]  "{<name>}:<owner>:rwlock_timeout": prefix of the caller's per-hold keys
-- KEYS[4]  "{<name>}": prefix of every owner's per-hold keys ("<prefix>:<owner>:rwlock_timeout:<n>")
-- ARGV[1]  the caller's reader field (its owner id)
-- ARGV[2]  the caller's read hold count before this call (>= 1)
-- ARGV[3]  the message published when the lock becomes free ("0")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    -1      the caller holds no read (never held, expired, or a re-delivered final release)
--          n >= 0  the caller's read holds left
-- Publishes ARGV[3] on KEYS[2] when the lock becomes free.
--
-- While other holds remain, the hash is kept alive as long as the longest of them.
-- Re-delivery: a count already at ARGV[2] - 1 is left alone.
local name, channel, prefix, everyone = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local reader, expected = ARGV[1], tonumber(ARGV[2])
local held = tonumber(redis.call('hget', name, reader))
if not held then
  return -1
end
if held == expected - 1 then
  return held
end
local left = redis.call('hincrby', name, reader, -1)
if left == 0 then
  redis.call('hdel', name, reader)
end
redis.call('del', prefix .. ':' .. (left + 1))
if redis.call('hlen', name) > 1 then
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', name)) do
    local holds = tonumber(redis.call('hget', name, field))
    if holds then
      for i = holds, 1, -1 do
        longest = math.max(longest, redis.call('pttl', everyone .. ':' .. field .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', name, longest)
    return left
  end
  if redis.call('hget', name, 'mode') == 'write' then
    return left
  end
end
redis.call('del', name)
redis.call(ARGV[#ARGV], channel, ARGV[3])
return left
