/* Timer service: a binary min-heap of deadlines served by one thread.
 *
 * Invariants: heap[1..n] is ordered by deadline_ns; every armed timer t sits at heap[t->heap_index]
 * and only armed timers have a non-zero heap_index. All heap state is under `lock`. A firing is
 * sent while the lock is held, so once nd_timer_cancel() returns, the service will not touch that
 * timer again (the owner may then free it). Messages carry the timer's seq at firing; start and
 * cancel bump seq, which is how the owner recognises stale messages (nd_timer_fired).
 * A periodic timer's next deadline is computed from the previous deadline (no drift); when the
 * service is behind by more than one period it skips to now + period instead of bursting.
 */
#include "actors/timer.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "actors/alloc.h"
#include "actors/pool.h"

struct nd_timers {
    nd_pool_t *pool;
    nd_ctx_t *ctx; /* the service thread's own ctx, for sending */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    nd_timer_t **heap; /* 1-based */
    uint32_t n, cap;
    bool stop;
    pthread_t thread;
};

uint64_t
nd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
heap_set(nd_timers_t *ts, uint32_t i, nd_timer_t *t)
{
    ts->heap[i] = t;
    t->heap_index = i;
}

static void
sift_up(nd_timers_t *ts, uint32_t i)
{
    nd_timer_t *t = ts->heap[i];
    while (i > 1 && ts->heap[i / 2]->deadline_ns > t->deadline_ns) {
        heap_set(ts, i, ts->heap[i / 2]);
        i /= 2;
    }
    heap_set(ts, i, t);
}

static void
sift_down(nd_timers_t *ts, uint32_t i)
{
    nd_timer_t *t = ts->heap[i];
    for (;;) {
        uint32_t c = 2 * i;
        if (c > ts->n)
            break;
        if (c + 1 <= ts->n && ts->heap[c + 1]->deadline_ns < ts->heap[c]->deadline_ns)
            c++;
        if (ts->heap[c]->deadline_ns >= t->deadline_ns)
            break;
        heap_set(ts, i, ts->heap[c]);
        i = c;
    }
    heap_set(ts, i, t);
}

static void
heap_insert(nd_timers_t *ts, nd_timer_t *t)
{
    if (ts->n + 1 >= ts->cap) {
        ts->cap = ts->cap ? ts->cap * 2 : 64;
        ts->heap = nd_xrealloc(ts->heap, ts->cap * sizeof(*ts->heap));
    }
    ts->heap[++ts->n] = t;
    sift_up(ts, ts->n);
}

static void
heap_remove(nd_timers_t *ts, nd_timer_t *t)
{
    uint32_t i = t->heap_index;
    nd_timer_t *last = ts->heap[ts->n--];
    t->heap_index = 0;
    if (i <= ts->n && last != t) {
        heap_set(ts, i, last);
        sift_up(ts, i);
        sift_down(ts, last->heap_index);
    }
}

static void
fire(nd_timers_t *ts, nd_timer_t *t)
{
    nd_timer_msg_t *m = ND_MSG_NEW(ts->ctx, nd_timer_msg_t, t->msg_id);
    m->timer = t;
    m->seq = atomic_load_explicit(&t->seq, memory_order_relaxed);
    nd_actor_send(ts->ctx, t->owner, &m->hdr);
}

static void *
service_main(void *arg)
{
    nd_timers_t *ts = arg;
    ts->ctx = nd_ctx_external_new(ts->pool);
    pthread_mutex_lock(&ts->lock);
    while (!ts->stop) {
        uint64_t now = nd_now_ns();
        while (ts->n > 0 && ts->heap[1]->deadline_ns <= now) {
            nd_timer_t *t = ts->heap[1];
            if (t->period_ns == 0) {
                heap_remove(ts, t);
                fire(ts, t);
                continue;
            }
            t->deadline_ns += t->period_ns;
            if (t->deadline_ns <= now)
                t->deadline_ns = now + t->period_ns;
            sift_down(ts, 1);
            /* At most one periodic firing in flight; nd_timer_fired() clears the flag. */
            if (!atomic_exchange_explicit(&t->in_flight, true, memory_order_relaxed))
                fire(ts, t);
        }
        if (ts->n == 0) {
            pthread_cond_wait(&ts->cond, &ts->lock);
        } else {
            uint64_t d = ts->heap[1]->deadline_ns;
            struct timespec abs = {.tv_sec = (time_t)(d / 1000000000ull),
                                   .tv_nsec = (long)(d % 1000000000ull)};
            pthread_cond_timedwait(&ts->cond, &ts->lock, &abs);
        }
    }
    pthread_mutex_unlock(&ts->lock);
    nd_ctx_external_free(ts->ctx);
    return NULL;
}

nd_timers_t *
nd_timers_new(nd_pool_t *pool)
{
    nd_timers_t *ts = nd_new(nd_timers_t);
    ts->pool = pool;
    pthread_mutex_init(&ts->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ts->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&ts->thread, NULL, service_main, ts) != 0)
        nd_fatal("cannot start the timer thread");
    return ts;
}

void
nd_timers_free(nd_timers_t *ts)
{
    pthread_mutex_lock(&ts->lock);
    ts->stop = true;
    pthread_cond_signal(&ts->cond);
    pthread_mutex_unlock(&ts->lock);
    pthread_join(ts->thread, NULL);
    for (uint32_t i = 1; i <= ts->n; i++)
        ts->heap[i]->heap_index = 0;
    pthread_mutex_destroy(&ts->lock);
    pthread_cond_destroy(&ts->cond);
    nd_free(ts->heap);
    nd_free(ts);
}

void
nd_timer_init(nd_timer_t *t, nd_actor_t *owner, uint32_t msg_id)
{
    t->owner = owner;
    t->msg_id = msg_id;
    t->heap_index = 0;
    t->deadline_ns = 0;
    t->period_ns = 0;
    atomic_init(&t->seq, 0);
    atomic_init(&t->in_flight, false);
}

void
nd_timer_start(nd_ctx_t *ctx, nd_timer_t *t, uint64_t delay_ns, uint64_t period_ns)
{
    nd_timers_t *ts = nd_pool_timers(ctx->pool);
    pthread_mutex_lock(&ts->lock);
    if (t->heap_index != 0)
        heap_remove(ts, t);
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&t->in_flight, false, memory_order_relaxed);
    t->deadline_ns = nd_now_ns() + delay_ns;
    t->period_ns = period_ns;
    heap_insert(ts, t);
    if (t->heap_index == 1)
        pthread_cond_signal(&ts->cond); /* new earliest deadline: the service must re-arm */
    pthread_mutex_unlock(&ts->lock);
}

void
nd_timer_cancel(nd_ctx_t *ctx, nd_timer_t *t)
{
    nd_timers_t *ts = nd_pool_timers(ctx->pool);
    pthread_mutex_lock(&ts->lock);
    if (t->heap_index != 0)
        heap_remove(ts, t);
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&t->in_flight, false, memory_order_relaxed);
    pthread_mutex_unlock(&ts->lock);
}

bool
nd_timer_armed(nd_ctx_t *ctx, nd_timer_t *t)
{
    nd_timers_t *ts = nd_pool_timers(ctx->pool);
    pthread_mutex_lock(&ts->lock);
    bool armed = t->heap_index != 0;
    pthread_mutex_unlock(&ts->lock);
    return armed;
}

bool
nd_timer_fired(nd_timer_t *t, const nd_msg_t *msg)
{
    const nd_timer_msg_t *m = (const nd_timer_msg_t *)msg;
    if (m->timer != t || m->seq != atomic_load_explicit(&t->seq, memory_order_relaxed))
        return false;
    if (t->period_ns != 0)
        atomic_store_explicit(&t->in_flight, false, memory_order_relaxed);
    return true;
}
