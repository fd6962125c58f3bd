/**
 * Work Redis did not confirm: a change sent whose reply never came within the command timeout
 * (the connection dropped, Redis paused), so it may or may not have run. Nothing may be lost and
 * nothing counted twice, yet each kind answers differently, because what an unconfirmed change
 * leaves behind differs. The three policies side by side:
 *
 * <table>
 * <caption>What happens to a change Redis did not confirm, by kind</caption>
 * <tr><th>what was sent</th><th>policy</th><th>why this one</th><th>where</th></tr>
 * <tr><td>a lock's release (every lock kind, the RedLock's per master)</td>
 *     <td><b>keep the hold</b>: the lease stays in the client's table marked unconfirmed, the
 *     unlock throws {@code RedisUnavailableException}, and the owner's next unlock sends the same
 *     release again, taking "nothing held" as the first copy having landed. A final hold stops
 *     being renewed before its release is sent, so it ends with its lease at the latest; the
 *     owner's next acquisition of the lock waits for the release's answer.</td>
 *     <td>A lock has an owner and a lease: the hold count makes a repeated release harmless, and
 *     an abandoned one costs at most the lease, never a lock held for ever. The owner keeps the
 *     decision; a release sent behind its back could land after its next acquisition.</td>
 *     <td>{@code lock.RedisLock#release}, {@code lease.Lease#releaseUnconfirmed},
 *     {@code lease.Leases#releasing}</td></tr>
 * <tr><td>a semaphore's release or addPermits, a latch's countDown, a trySet</td>
 *     <td><b>finish it in the background</b>: the change goes as one exactly-once request (a
 *     random id remembered by its script in a key beside the synchronizer); the caller hears
 *     {@code DoNotRetryException} (the retry rule: Baton is finishing it, do not call again) and
 *     Baton keeps sending the same request until Redis answers or the horizon (the larger of
 *     60 s and ten command timeouts) passes, then logs it at ERROR as possibly lost.</td>
 *     <td>Redisson's layout has no owner and no expiry here: a permit or a count not given back
 *     is gone for good, and a caller that retried by hand would count twice. So Baton, not the
 *     caller, repeats it, and the request id makes every copy count once.</td>
 *     <td>{@link dev.baton.internal.unconfirmed.Requests}, {@code semaphore.RedisSemaphore},
 *     {@code latch.RedisCountDownLatch}</td></tr>
 * <tr><td>an expirable permit's release</td>
 *     <td><b>mark and re-send on the caller's call</b>: the permit id is marked unconfirmed, the
 *     release throws {@code RedisUnavailableException}, and releasing the same id again
 *     completes it, taking "not held" as landed when the id was marked.</td>
 *     <td>A permit has its own id and expiry, as a lock's hold has a lease: one never released
 *     comes back when it expires, so nothing is lost, and its id makes a second release of it
 *     harmless.</td>
 *     <td>{@code semaphore.RedisPermitExpirableSemaphore#sendRelease},
 *     {@code Requests#markUnconfirmed}</td></tr>
 * </table>
 *
 * <p>Acquisitions are the other half: an acquire whose reply never came is undone, never
 * repeated blindly. A lock's by a clean-up release sent in the connection's order
 * ({@code CommandExecutor#evalCleanup}); a semaphore's and an expirable permit's by their
 * request id ({@code semaphore_cancel.lua}, {@code expirable_cancel.lua}), which also makes a
 * copy that runs later take nothing. guarantees.md ("Exactly once") states the promises and
 * names their tests.
 */
package dev.baton.internal.unconfirmed;
