/**
 * Held leases: {@link dev.baton.internal.lease.Leases} is the client's table (an owner's
 * acquisitions of one lock take turns; a lost lease is remembered for the owner's next unlock),
 * {@code RenewalRegistry} the one timer that renews them in batches per slot,
 * {@code ScriptRenewer} each kind's renewal script, {@code LeaseScopedWork} the work run under a
 * lease and stopped when it is lost.
 */
package dev.baton.internal.lease;
