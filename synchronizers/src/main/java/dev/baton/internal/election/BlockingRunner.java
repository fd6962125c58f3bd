package dev.baton.internal.election;

import dev.baton.LeadershipWork;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Runs a blocking {@link LeadershipWork} on a daemon thread of the candidacy's own, one term at a
 * time; stops it by interrupting that thread, only while it runs that term's work (the interrupt
 * status is cleared before the thread takes the next term).
 */
final class BlockingRunner implements Candidate.Runner {
    private static final Job SHUTDOWN = new Job(null, null, null);

    /** A term's work (with the call before it), or a listeners' call ({@code term} null). */
    private record Job(Candidate.Term term, Runnable first, CompletableFuture<Void> done) {
    }

    private final LeadershipWork work;
    private final String threadName;
    private final LinkedBlockingQueue<Job> jobs = new LinkedBlockingQueue<>();
    private final ReentrantLock lock = new ReentrantLock();
    private Thread worker;
    private Candidate.Term running;
    private Candidate.Term stoppedBeforeStart;

    BlockingRunner(LeadershipWork work, String threadName) {
        this.work = work;
        this.threadName = threadName;
    }

    private void ensureWorker() {
        lock.lock();
        try {
            if (worker == null) {
                worker = new Thread(this::loop, threadName);
                worker.setDaemon(true);
                worker.start();
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void onWorkThread(Runnable call) {
        ensureWorker();
        jobs.add(new Job(null, call, null));
    }

    @Override
    public CompletableFuture<Void> start(Candidate.Term term, Runnable first) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        ensureWorker();
        // The lease-scoped work's stop cancels this stage: interrupt the work.
        done.whenComplete((ok, e) -> {
            if (done.isCancelled()) {
                stop(term);
            }
        });
        jobs.add(new Job(term, first, done));
        return done;
    }

    private void loop() {
        while (true) {
            Job job;
            try {
                job = jobs.take();
            } catch (InterruptedException e) {
                continue; // a stop that came late: nothing runs
            }
            if (job == SHUTDOWN) {
                return;
            }
            if (job.term() == null) {
                try {
                    job.first().run();
                } catch (RuntimeException | Error e) {
                    org.slf4j.LoggerFactory.getLogger(BlockingRunner.class).warn("a call on {} failed", threadName, e);
                }
                Thread.interrupted();
                continue;
            }
            lock.lock();
            try {
                if (stoppedBeforeStart == job.term() || job.done().isDone()) {
                    // Stopped before its work began: the listeners still hear of the leadership
                    // (and of its end next), the work does not run.
                    lock.unlock();
                    try {
                        job.first().run();
                    } finally {
                        lock.lock();
                    }
                    job.done().complete(null);
                    continue;
                }
                running = job.term();
            } finally {
                lock.unlock();
            }
            try {
                job.first().run();
                work.lead(job.term().leadership());
                job.done().complete(null);
            } catch (Throwable e) {
                job.done().completeExceptionally(e);
            } finally {
                lock.lock();
                try {
                    running = null;
                    Thread.interrupted(); // an interrupt meant for this term ends with it
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    @Override
    public void stop(Candidate.Term term) {
        lock.lock();
        try {
            if (running == term) {
                worker.interrupt();
            } else {
                stoppedBeforeStart = term;
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean isWorkThread() {
        return Thread.currentThread() == worker;
    }

    @Override
    public void shutdown() {
        jobs.add(SHUTDOWN);
    }
}
