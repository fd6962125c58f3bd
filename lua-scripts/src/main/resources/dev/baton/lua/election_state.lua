-- election_state: read a leader election (a fair lock in election mode, see fair_acquire.lua):
-- who leads, with which epoch and since when, and the live candidates in line. Changes nothing.
--
-- KEYS[1]  "baton_leader:{<name>}": HASH, the leader's owner id -> 1, plus "baton:identity",
--          "baton:epoch" (absent until the leader claimed a hand-off) and "baton:since"
-- KEYS[2]  "baton_leader_queue:{<name>}": ZSET, waiting owner id -> ticket
-- KEYS[3]  "baton_leader_waiters:{<name>}": HASH, waiting owner id -> liveness deadline (ms)
-- KEYS[4]  "baton_leader_identity:{<name>}": HASH, waiting owner id -> identity
-- ARGV     none
--
-- Reply    {owner, identity, epoch, since, pttl, now, n, owner1, identity1, ..., ownerN, identityN}
--          owner = '' when nobody leads (then identity, epoch, since and pttl are '', 0, 0, -2);
--          epoch = 0 while a hand-off is not claimed yet; since and now in server ms; the n
--          candidates whose liveness deadline has not passed, in line order (at most 100)
-- Publishes nothing.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local owner = ''
for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
  if string.sub(field, 1, 6) ~= 'baton:' then
    owner = field
  end
end
local info = redis.call('hmget', KEYS[1], 'baton:identity', 'baton:epoch', 'baton:since')
local identity, epoch, since = info[1] or '', tonumber(info[2] or 0), tonumber(info[3] or 0)
local reply = {owner, identity, epoch, since, redis.call('pttl', KEYS[1]), now, 0}
local queued = redis.call('zrange', KEYS[2], 0, 99)
local n = 0
for _, who in ipairs(queued) do
  local deadline = tonumber(redis.call('hget', KEYS[3], who))
  if deadline and deadline >= now then
    n = n + 1
    reply[#reply + 1] = who
    reply[#reply + 1] = redis.call('hget', KEYS[4], who) or ''
  end
end
reply[7] = n
return reply
