package dev.baton;

/**
 * Work done while holding a lock, given the {@link LeaseScope} it runs under
 * ({@link BatonLock#withLock(LeaseWork)}).
 *
 * @param <T> what the work returns
 * @param <E> what it may throw (a lambda that throws no checked exception makes this
 *            {@link RuntimeException})
 */
@FunctionalInterface
public interface LeaseWork<T, E extends Exception> {
    /**
     * Does the work.
     *
     * @param scope the lease it runs under
     * @return the work's result
     * @throws E as the work does
     */
    T run(LeaseScope scope) throws E;
}
