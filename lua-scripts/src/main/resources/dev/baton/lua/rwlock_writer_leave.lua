-- rwlock_writer_leave: a waiting writer gives up (timed out, interrupted, cancelled) and takes
-- its mark away, so readers are not kept out for a writer that is no longer coming.
--
-- KEYS[1]  "baton_rwlock_writer:{<name>}": the waiting writer's mark
-- ARGV[1]  the writer field ("<owner>:write") that gives up
--
-- Reply    1 = the mark was this writer's and is gone; 0 = it was someone else's, or none
-- Publishes nothing.
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  return 1
end
return 0
