/**
 * The lock kinds. {@link dev.baton.internal.lock.RedisLock} holds what every lock shares (the API,
 * hold counts, leases, the release that keeps an unconfirmed hold); a
 * {@link dev.baton.internal.lock.LockRecipe} says what differs per kind: its scripts and how to
 * read them, its channel and wake rule. Reentrant, fair, fenced, and the read and write halves
 * of a read-write lock.
 */
package dev.baton.internal.lock;
