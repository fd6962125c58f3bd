/**
 * One client's wiring: {@link dev.baton.internal.runtime.ClientRuntime} opens nothing itself but
 * wires the services on the connections {@code LettuceConnections} opened (the only class that
 * opens Lettuce connections, every topology), makes the synchronizers and closes everything in
 * order. {@code LettuceVersion} refuses an unsupported Lettuce line; {@code TopologyRefresh}
 * asks a cluster for a fresh slot map.
 */
package dev.baton.internal.runtime;
