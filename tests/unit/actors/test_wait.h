/* Waiting helpers shared by the runtime unit tests. Deadlines are hang guards only (10 s): they
 * never decide whether a test passes on a slow machine. */
#ifndef ND_TEST_WAIT_H
#define ND_TEST_WAIT_H

#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <time.h>

#include "actors/timer.h"

/* Returns: true when s was posted within 10 s. */
static inline bool
sem_wait_10s(sem_t *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    int r;
    while ((r = sem_timedwait(s, &ts)) != 0 && errno == EINTR)
        ;
    return r == 0;
}

/* Polls cond with a 10 s hang guard (a Criterion assertion when it expires). */
#define WAIT_UNTIL(cond)                                                                           \
    do {                                                                                           \
        uint64_t deadline_ = nd_now_ns() + 10000000000ull;                                         \
        while (!(cond)) {                                                                          \
            cr_assert(nd_now_ns() < deadline_, "timed out waiting for %s", #cond);                 \
            sched_yield();                                                                         \
        }                                                                                          \
    } while (0)

#endif
