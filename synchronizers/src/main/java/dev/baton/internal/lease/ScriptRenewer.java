package dev.baton.internal.lease;

import dev.baton.internal.command.CommandExecutor;
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
public final class ScriptRenewer implements RenewalRegistry.Renewer {
    private final CommandExecutor executor;

    public ScriptRenewer(CommandExecutor executor) {
        this.executor = executor;
    }

    /**
     * Sets one fixed lease to {@code leaseMs} from now, if its owner still holds it (the owner's
     * updateLease); whether it is still held. Unlike the watchdog's batches it is a change the
     * owner asked for, so with replica sync on, too few acknowledgements fail it.
     */
    public CompletableFuture<Boolean> update(Lease lease, long leaseMs) {
        boolean read = lease.renewal == Lease.Renewal.READ_HOLDS;
        return call(read ? Script.RWLOCK_READ_RENEW : Script.LOCK_RENEW, List.of(lease), leaseMs, read, true)
                .thenApply(renewed -> renewed.get(0));
    }

    @Override
    public CompletableFuture<List<Boolean>> renew(List<Lease> batch, long leaseMs) {
        List<Lease> fields = new ArrayList<>();
        List<Lease> reads = new ArrayList<>();
        for (Lease lease : batch) {
            (lease.renewal == Lease.Renewal.READ_HOLDS ? reads : fields).add(lease);
        }
        CompletableFuture<List<Boolean>> fieldFlags = fields.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : call(Script.LOCK_RENEW, fields, leaseMs, false, false);
        CompletableFuture<List<Boolean>> readFlags = reads.isEmpty()
                ? CompletableFuture.completedFuture(List.of()) : call(Script.RWLOCK_READ_RENEW, reads, leaseMs, true, false);
        return fieldFlags.thenCombine(readFlags, (f, r) -> {
            List<Boolean> flags = new ArrayList<>(batch.size());
            int fi = 0;
            int ri = 0;
            for (Lease lease : batch) {
                flags.add(lease.renewal == Lease.Renewal.READ_HOLDS ? r.get(ri++) : f.get(fi++));
            }
            return flags;
        });
    }

    /**
     * One renewal script call for {@code leases}: an owner's update ({@code byOwner}), a change
     * like any other, or the watchdog's batch, which too few replica acknowledgements never fail.
     */
    private CompletableFuture<List<Boolean>> call(Script script, List<Lease> leases, long leaseMs, boolean withPrefixes,
                                                  boolean byOwner) {
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
        CompletableFuture<List<Object>> sent = byOwner
                ? executor.eval(script, CommandExecutor.Reply.ARRAY, keys, args)
                : executor.evalRenewal(script, CommandExecutor.Reply.ARRAY, keys, args);
        return sent.thenApply(reply -> {
            List<Boolean> renewed = new ArrayList<>(reply.size());
            for (Object flag : reply) {
                renewed.add(Long.valueOf(1L).equals(flag));
            }
            return renewed;
        });
    }
}
