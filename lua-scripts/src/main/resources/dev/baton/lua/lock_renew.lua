-- lock_renew: the watchdog's batched renewal of many reentrant-lock holds in one call.
--
-- KEYS[1..n]   lock names (HASHes); in Redis Cluster every key of one call is in one slot
-- ARGV[1]      lease in milliseconds (the watchdog timeout)
-- ARGV[1 + i]  the owner id whose hold on KEYS[i] is renewed
--
-- Reply    an array of n integers: 1 = KEYS[i] is still held by its owner and its PEXPIRE was
--          set to ARGV[1]; 0 = the owner no longer holds KEYS[i] (the lease was lost)
-- Publishes nothing.
--
-- A key that now holds another type counts as lost instead of failing the whole batch.
local lease = ARGV[1]
local renewed = {}
for i = 1, #KEYS do
  local present = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
  if present == 1 then
    redis.call('pexpire', KEYS[i], lease)
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
