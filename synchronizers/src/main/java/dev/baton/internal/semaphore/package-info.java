/**
 * The two semaphores. {@code RedisSemaphore} (Redisson's count at the name, exactly-once
 * requests, the in-client hand-off {@code PermitHandOff}) and
 * {@code RedisPermitExpirableSemaphore} (permits with ids and expiries decided by the server's
 * clock). Both wait through the engine.
 */
package dev.baton.internal.semaphore;
