package dev.baton;

import dev.baton.testkit.RedisServer;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Baton under a Redis ACL user allowed exactly the commands it needs (the line in
 * docs/security.md); a user without script rights gets a clear error; passwords never appear in
 * messages.
 */
class AclTest {
    /** The ACL rules of docs/security.md, without the user name and password. */
    static final String BATON_RULES = "on ~* &* -@all "
            + "+hello +auth +client|setname +ping +info "
            + "+evalsha +eval "
            + "+get +set +del +exists +type +pttl +pexpire +incr +incrby +decr +decrby "
            + "+hget +hset +hincrby +hdel +hexists +hlen +hkeys "
            + "+zadd +zrem +zscore +zrange +zrangebyscore +zcard +time "
            + "+publish +spublish +subscribe +unsubscribe +ssubscribe +sunsubscribe +wait";

    @Test
    void everySynchronizerWorksUnderTheDocumentedAclUser() throws Exception {
        try (RedisServer redis = RedisServer.start()) {
            redis.command(("ACL SETUSER baton >s3cret " + BATON_RULES).split(" "));
            String uri = "redis://baton:s3cret@" + redis.host() + ":" + redis.port();
            try (Baton baton = Baton.create(uri)) {
                BatonLock lock = baton.lock("acl-lock");
                lock.lock();
                lock.unlock();
                baton.fairLock("acl-fair").lock();
                baton.fairLock("acl-fair").unlock();
                baton.readWriteLock("acl-rw").readLock().lock();
                baton.readWriteLock("acl-rw").readLock().unlock();
                assertTrue(baton.fencedLock("acl-fenced").lockAndGetToken() > 0);
                baton.fencedLock("acl-fenced").unlock();
                baton.semaphore("acl-sem").trySetPermits(1);
                assertTrue(baton.semaphore("acl-sem").tryAcquire(1, TimeUnit.SECONDS));
                baton.permitExpirableSemaphore("acl-pes").trySetPermits(1);
                baton.permitExpirableSemaphore("acl-pes").release(baton.permitExpirableSemaphore("acl-pes").acquire(5, TimeUnit.SECONDS));
                baton.countDownLatch("acl-latch").trySetCount(1);
                baton.countDownLatch("acl-latch").countDown();
                assertTrue(baton.countDownLatch("acl-latch").await(1, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void aForbiddenCommandIsAClearErrorAndPasswordsStayOutOfMessages() {
        try (RedisServer redis = RedisServer.start()) {
            redis.command("ACL", "SETUSER", "reader", "on", ">t0psecret", "~*", "&*", "-@all", "+hello", "+auth",
                    "+client|setname", "+ping", "+info", "+get", "+subscribe", "+unsubscribe");
            try (Baton baton = Baton.create("redis://reader:t0psecret@" + redis.host() + ":" + redis.port())) {
                BatonException e = assertThrows(BatonException.class, () -> baton.lock("forbidden").tryLock());
                assertTrue(e.getMessage().contains("NOPERM"), e.getMessage());
                assertTrue(e.getMessage().contains("lock_acquire.lua"), "says which operation: " + e.getMessage());
                assertFalse(e.getMessage().contains("t0psecret"));
            }
            RedisUnavailableException wrong = assertThrows(RedisUnavailableException.class,
                    () -> Baton.create("redis://reader:wrongpassword@" + redis.host() + ":" + redis.port()));
            assertFalse(wrong.getMessage().contains("wrongpassword"), wrong.getMessage());
            assertEquals(0L, redis.command("EXISTS", "forbidden"));
        }
    }
}
