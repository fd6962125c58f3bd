/**
 * Locks over locks: {@code MultiLock} sequences its locks' own acquisitions in one canonical
 * order and undoes a partial one on every failure path; {@code RedLock} asks independent masters
 * in rounds, each round one attempt of the engine.
 */
package dev.baton.internal.composite;
