/**
 * Leader election: a fair lock in election mode (the leader's identity, epoch and since kept in
 * its hash) and a candidate thread per candidacy that waits, leads with lease-scoped work, hands
 * on and waits again.
 */
package dev.baton.internal.election;
