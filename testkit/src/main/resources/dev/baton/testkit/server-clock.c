/*
 * Baton testkit: a wall clock a test sets, for a redis-server or valkey-server it starts.
 *
 * Preloaded (LD_PRELOAD) into the server process. When BATON_CLOCK_FILE names a file of 8 bytes,
 * the wall clock the server reads (gettimeofday, time, clock_gettime with a CLOCK_REALTIME
 * clock) is the little-endian count of microseconds since the epoch in that file, read at
 * every call: the test writes it, the server's clock stands still in between. Every other
 * clock (the monotonic one its event loop runs on) is the kernel's, read by a system call, so
 * nothing here calls back into the C library while it starts (a preloaded library that looks
 * the real functions up with dlsym can be re-entered by the allocator and hang or fail).
 * Without BATON_CLOCK_FILE, or while the file holds 0, every call is the kernel's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *fake_micros;
static volatile int state; /* 0: not looked at yet, 1: a file is mapped, 2: none */

static int64_t fake_now(void) {
    if (state == 0) {
        const char *path = getenv("BATON_CLOCK_FILE");
        int fd = path == NULL ? -1 : (int) syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
        void *mapped = MAP_FAILED;
        if (fd >= 0) {
            mapped = (void *) syscall(SYS_mmap, NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
            syscall(SYS_close, fd);
        }
        if (mapped != MAP_FAILED && (long) mapped > 0) {
            fake_micros = (volatile int64_t *) mapped;
            __atomic_store_n(&state, 1, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
        }
    }
    if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 1) {
        return 0;
    }
    return __atomic_load_n(fake_micros, __ATOMIC_ACQUIRE);
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE) {
        int64_t now = fake_now();
        if (now > 0) {
            ts->tv_sec = now / 1000000;
            ts->tv_nsec = (now % 1000000) * 1000;
            return 0;
        }
    }
    return (int) syscall(SYS_clock_gettime, clock, ts);
}

int gettimeofday(struct timeval *tv, void *tz) {
    int64_t now = fake_now();
    if (now > 0) {
        if (tv != NULL) {
            tv->tv_sec = now / 1000000;
            tv->tv_usec = now % 1000000;
        }
        return 0;
    }
    return (int) syscall(SYS_gettimeofday, tv, tz);
}

time_t time(time_t *out) {
    int64_t now = fake_now();
    time_t seconds;
    if (now > 0) {
        seconds = (time_t) (now / 1000000);
    } else {
        struct timespec ts;
        syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
        seconds = ts.tv_sec;
    }
    if (out != NULL) {
        *out = seconds;
    }
    return seconds;
}
