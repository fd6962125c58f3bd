package dev.baton.example;

import dev.baton.Baton;
import dev.baton.BatonLock;
import dev.baton.BatonSemaphore;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.concurrent.TimeUnit;

/**
 * Exports of a customer's data: one export per customer at a time across all instances (a
 * {@link BatonLock}), and at most {@value #CONCURRENT_EXPORTS} exports at a time in all (a
 * {@link BatonSemaphore}).
 */
@RestController
public class ExportController {
    static final int CONCURRENT_EXPORTS = 4;

    private final Baton baton;
    private final BatonSemaphore exports;
    private volatile boolean permitsSet;

    public ExportController(Baton baton) {
        // The auto-configured client connects on first use: taking it, and a synchronizer, here
        // does not need Redis, so the service starts while Redis is down and its health says so.
        this.baton = baton;
        this.exports = baton.semaphore("example:exports");
    }

    /**
     * The semaphore, its permits set on first use (the first instance sets the number; the rest
     * keep it).
     */
    private BatonSemaphore exports() {
        if (!permitsSet) {
            exports.trySetPermits(CONCURRENT_EXPORTS);
            permitsSet = true;
        }
        return exports;
    }

    // snippet spring-boot-endpoint begins
    @PostMapping("/customers/{id}/export")
    public ResponseEntity<String> export(@PathVariable("id") String id) throws InterruptedException {
        BatonLock lock = baton.lock("export:" + id);
        if (!lock.tryLock(2, TimeUnit.SECONDS)) {
            return ResponseEntity.status(HttpStatus.CONFLICT).body("an export of " + id + " is running");
        }
        try {
            BatonSemaphore exports = exports();
            if (!exports.tryAcquire(2, TimeUnit.SECONDS)) {
                return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body("too many exports; try later");
            }
            try {
                return ResponseEntity.ok("exported " + id);
            } finally {
                exports.release();
            }
        } finally {
            lock.unlock();
        }
    }
    // snippet spring-boot-endpoint ends
}
