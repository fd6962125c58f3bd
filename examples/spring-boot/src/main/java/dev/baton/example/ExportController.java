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
    private volatile BatonSemaphore exports;

    public ExportController(Baton baton) {
        this.baton = baton; // the auto-configured client is lazy: nothing here may use it yet
    }

    /**
     * The semaphore, its permits set on first use (the first instance sets the number; the rest
     * keep it), so the service starts while Redis is down and its health says so.
     */
    private BatonSemaphore exports() {
        BatonSemaphore semaphore = exports;
        if (semaphore == null) {
            semaphore = baton.semaphore("example:exports");
            semaphore.trySetPermits(CONCURRENT_EXPORTS);
            exports = semaphore;
        }
        return semaphore;
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
