/**
 * The rate limiter: one script call per acquisition on Redis's clock, a reservation slept out on
 * the client's timer, and the request memory of the {@code unconfirmed} package for calls whose
 * reply never came. It uses the command executor and the scheduler; it has no channel and never
 * parks in the acquire engine.
 */
package dev.baton.internal.ratelimit;
