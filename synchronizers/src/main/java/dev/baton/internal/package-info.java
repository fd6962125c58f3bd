/**
 * Baton's implementation, one sub-package per layer; none of it is exported by the module
 * {@code dev.baton}. From the bottom up: {@code time} and {@code support} (used by all);
 * {@code command} (the only way to Redis); {@code pubsub} (the one subscription connection and
 * its parked waiters); {@code engine} (the one wait loop); {@code lease} and {@code unconfirmed}
 * (held leases, and work Redis did not confirm); this package's {@link dev.baton.internal.Services},
 * what every synchronizer is given; the kinds, {@code lock}, {@code semaphore}, {@code latch};
 * {@code composite} (multi-lock, RedLock) over the kinds; {@code runtime}, which wires a client.
 * A package uses only packages below it (docs/architecture.md; ADR 0010).
 */
package dev.baton.internal;
