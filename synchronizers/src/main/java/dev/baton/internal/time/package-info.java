/**
 * Time as a seam: {@link dev.baton.internal.time.Scheduler} (every timeout, park deadline and
 * renewal tick, so tests and the simulation drive time), {@code NettyScheduler} for a client's
 * timers and {@code SystemScheduler} for what spans clients (RedLock, multi-lock).
 */
package dev.baton.internal.time;
