/**
 * The count-down latch: Redisson's count at the name, a countDown as an exactly-once request, an
 * await that parks on the latch's channel through the engine until the zero message.
 */
package dev.baton.internal.latch;
