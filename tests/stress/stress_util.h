/* Helpers shared by the stress programs in tests/stress: failure reporting, the iteration scale,
 * a progress watchdog and a small thread-safe random generator.
 *
 * Stress programs are plain main() programs so that they run under TSan. They must not depend on
 * machine speed: nothing here asserts on timing. The only clock is the watchdog, a hang guard that
 * fails a run when a counter the program names has made no progress for a long time (default
 * 120 s, ND_STRESS_STALL_S overrides), which only a lost message or a lost wake-up can cause.
 *
 * Scale: every program multiplies its iteration counts by a factor read from argv[1] or, when
 * absent, from the environment variable ND_STRESS_SCALE (default 1.0). The defaults are sized to
 * run for 5-20 s under TSan on two cores and far less in a normal build.
 */
#ifndef ND_STRESS_UTIL_H
#define ND_STRESS_UTIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Prints "FAIL: <what>" and ends the process at once. _exit, not exit: other threads may still be
 * running actors, and a leak report about their state would only hide the real message. */
static void stress_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void
stress_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

#define STRESS_CHECK(cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond))                                                                               \
            stress_fail(__VA_ARGS__);                                                              \
    } while (0)

/* The iteration factor: argv[1], else $ND_STRESS_SCALE, else 1.0; never below 0.01. */
static inline double
stress_scale(int argc, char **argv)
{
    const char *s = argc > 1 ? argv[1] : getenv("ND_STRESS_SCALE");
    double f = s != NULL ? strtod(s, NULL) : 1.0;
    return f < 0.01 ? 0.01 : f;
}

/* n scaled by f, at least 1. */
static inline uint64_t
stress_scaled(uint64_t n, double f)
{
    double v = (double)n * f;
    return v < 1.0 ? 1 : (uint64_t)v;
}

static inline double
stress_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void
stress_sleep_us(unsigned us)
{
    struct timespec ts = {.tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000L};
    nanosleep(&ts, NULL);
}

static inline double
stress_stall_limit_s(void)
{
    const char *s = getenv("ND_STRESS_STALL_S");
    double v = s != NULL ? strtod(s, NULL) : 120.0;
    return v > 0 ? v : 120.0;
}

/* Waits until *done is non-zero. Fails the run when *progress has not changed for the stall limit:
 * `what` names the phase in the message. Ctx: a thread that is not a worker. */
static inline void
stress_wait(const char *what, _Atomic int *done, _Atomic uint64_t *progress)
{
    double limit = stress_stall_limit_s();
    uint64_t last = atomic_load_explicit(progress, memory_order_relaxed);
    double since = stress_now_s();
    /* acquire: pairs with the release store of *done, so that the results are visible. */
    while (!atomic_load_explicit(done, memory_order_acquire)) {
        stress_sleep_us(2000);
        uint64_t p = atomic_load_explicit(progress, memory_order_relaxed);
        if (p != last) {
            last = p;
            since = stress_now_s();
        } else if (stress_now_s() - since > limit) {
            stress_fail("%s: no progress for %.0f s (stuck at %llu): lost message or wake-up", what,
                        limit, (unsigned long long)p);
        }
    }
}

/* xorshift64* for threads that have no nd_ctx_t. */
static inline uint64_t
stress_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

#endif
