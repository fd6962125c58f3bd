/**
 * The one subscription connection of a client: {@link dev.baton.internal.pubsub.PubSubService}
 * reference-counts channels and rings the parked {@link dev.baton.internal.pubsub.Waiter}s a
 * message concerns, as its {@code WakeRule} says; {@code ShardedSubscriber} follows a sharded
 * channel's slot in a Redis 7+ cluster. A re-subscription wakes every waiter to re-check.
 */
package dev.baton.internal.pubsub;
