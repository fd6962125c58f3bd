-- lock_pass: the final release of a reentrant lock by a client that has another thread
-- waiting for it: hand the lock to that thread in place, or release it as lock_release does.
-- The layout stays Redisson's (a HASH at the lock name, field = owner id, value = hold count);
-- a hand-off only changes which field holds the count, so Redisson clients see a held lock.
--
-- KEYS[1]  the lock name (HASH)
-- KEYS[2]  the lock's channel, "redisson_lock__channel:{<name>}"
-- ARGV[1]  the releasing owner id, "<clientId>:<threadId>" (it believes it holds exactly 1)
-- ARGV[2]  the receiving owner id, a thread of the same client
-- ARGV[3]  the receiver's lease in milliseconds; the key's PEXPIRE after a hand-off
-- ARGV[4]  1: the client's turn is over, hand off only if nobody else listens on KEYS[2];
--          0: hand off
-- ARGV[5]  the message published when the lock is released instead ("0")
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub); the subscriber count is read the same way (NUMSUB, SHARDNUMSUB)
-- Reply    1   handed off: the receiver holds the lock with 1 hold (also the reply to a
--              re-delivered copy of a hand-off that was applied already)
--          0   released: the lock was deleted and ARGV[5] published on KEYS[2], because the
--              turn was over and another client (Baton or Redisson) waits on KEYS[2]
--          -1  the releaser holds nothing (lease expired, lock deleted, or a re-delivered copy
--              of a release that was applied already): nothing changed
--          -2  the releaser holds more than one hold: nothing changed (the client releases
--              with lock_release instead)
-- Publishes ARGV[5] on KEYS[2] when it releases (reply 0), nothing on a hand-off.
local name, channel = KEYS[1], KEYS[2]
local releaser, receiver, lease, turnOver = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local publish = ARGV[#ARGV]
local held = redis.call('hget', name, releaser)
if not held then
  if redis.call('hget', name, receiver) == '1' then
    return 1
  end
  return -1
end
if tonumber(held) ~= 1 then
  return -2
end
if turnOver then
  local numsub = publish == 'spublish' and 'shardnumsub' or 'numsub'
  local listening = redis.call('pubsub', numsub, channel)[2]
  if listening > 0 then
    redis.call('del', name)
    redis.call(publish, channel, ARGV[5])
    return 0
  end
end
redis.call('hdel', name, releaser)
redis.call('hset', name, receiver, 1)
redis.call('pexpire', name, lease)
return 1
