-- rwlock_read_renew: the watchdog's batched renewal of read holds.
--
-- KEYS[2i-1]  a lock name (HASH); KEYS[2i] the owner's per-hold key prefix
--             "{<name>}:<owner>:rwlock_timeout"; in Redis Cluster all keys of one call share a slot
-- ARGV[1]     lease in milliseconds (the watchdog timeout)
-- ARGV[1 + i] the reader field (owner id) of pair i
--
-- Reply    an array with one integer per pair: 1 = still held, and every one of the owner's
--          per-hold keys and the hash now live at least ARGV[1] ms; 0 = the owner holds no read
-- Publishes nothing. A key of another type counts as lost instead of failing the batch.
local lease = tonumber(ARGV[1])
local renewed = {}
for i = 1, #KEYS / 2 do
  local name, prefix = KEYS[2 * i - 1], KEYS[2 * i]
  local holds = redis.pcall('hget', name, ARGV[i + 1])
  holds = type(holds) == 'string' and tonumber(holds) or nil
  if holds and holds > 0 then
    for n = 1, holds do
      redis.call('pexpire', prefix .. ':' .. n, lease)
    end
    redis.call('pexpire', name, math.max(redis.call('pttl', name), lease))
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
