-- semaphore_acquire: take permits from a semaphore if enough are available, exactly once per
-- request id.
-- Layout is Redisson's RSemaphore: a STRING at the name holding the available permits; plus
-- Baton's request memory (see data-layout.md), which Redisson never reads.
--
-- KEYS[1]  the semaphore name (STRING; absent counts as 0 permits)
-- KEYS[2]  its request memory, "baton_requests:{<name>}" (ZSET request id -> expiry, epoch ms
--          by the server's clock; "~<id>" marks a request that was cancelled)
-- ARGV[1]  permits to take (>= 1)
-- ARGV[2]  this request's id (16 hex characters, new for every attempt)
-- ARGV[3]  how long the request memory keeps an id, in ms
-- ARGV[4]  ids of this client's earlier requests on this name whose replies arrived, to forget
--          now (space-separated; may be empty)
--
-- Reply    {1, left}    taken (now or by an earlier copy of this request); left = permits
--                       available after this call
--          {0, exists}  refused, not enough permits (or this request was cancelled); exists =
--                       1 if the semaphore exists, else 0
--          error WRONGTYPE when the name holds something other than a string
-- Publishes nothing.
--
-- Re-delivery: a copy of a request that took its permits finds its id remembered and takes
-- nothing more; a copy arriving after semaphore_cancel finds "~<id>" and takes nothing.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[2], '-inf', now)
local done = {}
for id in string.gmatch(ARGV[4], '%S+') do
  done[#done + 1] = id
end
if #done > 0 then
  redis.call('zrem', KEYS[2], unpack(done))
end
local seen = redis.call('zmscore', KEYS[2], ARGV[2], '~' .. ARGV[2])
if seen[1] then
  return {1, tonumber(redis.call('get', KEYS[1]) or '0')}
end
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. kind .. ', not a semaphore')
end
if seen[2] then
  return {0, kind == 'none' and 0 or 1}
end
local available = tonumber(redis.call('get', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if available >= wanted then
  local left = redis.call('decrby', KEYS[1], wanted)
  local memory = tonumber(ARGV[3])
  redis.call('zadd', KEYS[2], now + memory, ARGV[2])
  redis.call('pexpire', KEYS[2], memory)
  return {1, left}
end
return {0, kind == 'none' and 0 or 1}
