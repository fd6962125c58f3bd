-- latch_count_down: count a latch down by one, exactly once per request id; at zero the latch
-- is deleted and announced.
--
-- KEYS[1]  the latch name (STRING holding the count)
-- KEYS[2]  the latch's channel, "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  this request's key, "baton_request:{<name>}:<id>" (the same for every copy of one
--          countDown), which Redisson never reads; set by the first copy
-- KEYS[4..] request keys of this client's earlier requests on this name whose replies arrived:
--          deleted now
-- ARGV[1]  the message announcing zero ("0")
-- ARGV[2]  how long a request key lives, in ms
--
-- ARGV[#ARGV] the publish command, added to every call by the client: PUBLISH, or SPUBLISH
--          (sharded pub/sub) in a Redis Cluster of version 7 or later, as Redisson chooses
-- Reply    the count after this call; 0 = it just reached zero (key deleted, ARGV[1] published);
--          -1 = the latch was absent or already at zero (nothing changed, nothing published);
--          -2 = an earlier copy of this request counted already (nothing changed)
--          error WRONGTYPE (from GET) when the name holds something other than a string
-- Publishes ARGV[1] on KEYS[2] when the count reaches zero.
--
-- Re-delivery: the request key is set even when the latch was absent, so a copy arriving after
-- the latch was armed again never counts down the new round.
if #KEYS > 3 then
  redis.call('del', unpack(KEYS, 4))
end
local value = redis.call('get', KEYS[1])
if not redis.call('set', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then
  return -2
end
if not value then
  return -1
end
local count = redis.call('decr', KEYS[1])
if count > 0 then
  return count
end
redis.call('del', KEYS[1])
if count == 0 then
  redis.call(ARGV[#ARGV], KEYS[2], ARGV[1])
  return 0
end
return -1
