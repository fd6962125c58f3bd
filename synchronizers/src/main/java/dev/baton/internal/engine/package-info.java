/**
 * The one wait loop for every acquisition, composite ones included:
 * {@link dev.baton.internal.engine.AcquireEngine} tries, parks on the channel until a message, the
 * holder's TTL or the deadline, and tries again; connection failures are retried inside a budget;
 * a caller that gives up abandons the acquisition and a late grant is given back. A kind says
 * what one attempt is ({@code AcquireEngine.Attempt}). {@code Blocking} is the blocking view over
 * the async calls (the one sync-over-async wait), {@code Observer} what the application's
 * observer hears of each acquisition.
 */
package dev.baton.internal.engine;
