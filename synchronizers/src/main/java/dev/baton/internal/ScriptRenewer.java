package dev.baton.internal;

import dev.baton.lua.Layout;
import dev.baton.lua.Script;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Renews batches of leases with the renewal script of each lease's kind: the lock hash's owner
 * field for every exclusive kind (lock_renew.lua), the read holds' timeout keys for a read lock
 * (rwlock_read_renew.lua). One script call per kind present in a batch; the flags come back in
 * the batch's order.
 */
final class ScriptRenewer implements RenewalRegistry.Renewer {
    private final CommandExecutor executor;

    ScriptRenewer(CommandExecutor executor) {
        this.executor = executor;
    }

    /** Renews one lease at once (a fair lock's claim); whether it is still held. */
    CompletableFuture<Boolean> renewNow(Lease lease) {
        return renew(List.of(lease), lease.leaseMs).thenApply(renewed -> renewed.get(0));
    }

    /**
     * Sets one fixed lease to {@code leaseMs} from now, if its owner still holds it (the owner's
     * updateLease); whether it is still held. Unlike the watchdog's batches this is re-sent on
     * connection failures within the command timeout: the owner-checked PEXPIRE is idempotent.
     */
    CompletableFuture<Boolean> update(Lease lease, long leaseMs) {
        boolean read = lease.renewal == LockRecipe.Renewal.READ_HOLDS;
        List<String> keys = read ? List.of(lease.key, Layout.readHoldPrefix(lease.key, lease.owner)) : List.of(lease.key);
        return executor.<List<Object>>eval(read ? Script.RWLOCK_READ_RENEW : Script.LOCK_RENEW, CommandExecutor.Reply.ARRAY,
                keys, List.of(Long.toString(leaseMs), lease.owner)).thenApply(reply -> Long.valueOf(1L).equals(reply.get(0)));
    }

    @Override
    public CompletableFuture<List<Boolean>> renew(List<Lease> batch, long leaseMs) {
        List<Lease> fields = new ArrayList<>();
        List<Lease> reads = new ArrayList<>();
        for (Lease lease : batch) {
            (lease.renewal == LockRecipe.Renewal.READ_HOLDS ? reads : fields).add(lease);
        }
        CompletableFuture<List<Boolean>> fieldFlags = fields.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : call(Script.LOCK_RENEW, fields, leaseMs, false);
        CompletableFuture<List<Boolean>> readFlags = reads.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : call(Script.RWLOCK_READ_RENEW, reads, leaseMs, true);
        return fieldFlags.thenCombine(readFlags, (f, r) -> {
            List<Boolean> flags = new ArrayList<>(batch.size());
            int fi = 0;
            int ri = 0;
            for (Lease lease : batch) {
                flags.add(lease.renewal == LockRecipe.Renewal.READ_HOLDS ? r.get(ri++) : f.get(fi++));
            }
            return flags;
        });
    }

    private CompletableFuture<List<Boolean>> call(Script script, List<Lease> leases, long leaseMs, boolean withPrefixes) {
        List<String> keys = new ArrayList<>();
        List<String> args = new ArrayList<>(leases.size() + 1);
        args.add(Long.toString(leaseMs));
        for (Lease lease : leases) {
            keys.add(lease.key);
            if (withPrefixes) {
                keys.add(Layout.readHoldPrefix(lease.key, lease.owner));
            }
            args.add(lease.owner);
        }
        return executor.<List<Object>>evalRenewal(script, CommandExecutor.Reply.ARRAY, keys, args)
                .thenApply(reply -> {
                    List<Boolean> renewed = new ArrayList<>(reply.size());
                    for (Object flag : reply) {
                        renewed.add(Long.valueOf(1L).equals(flag));
                    }
                    return renewed;
                });
    }
}
