/* The worker pool: run loop, work stealing, parking and shutdown.
 *
 * Finding work, in order: every 61st look the inject queue first (so actors made runnable by the
 * poller or timers are not starved by a busy local queue), then the own queue, the inject queue,
 * and stealing from the other workers starting at a random one. A worker that finds nothing
 * becomes the poller (see the idle hook below) or parks at once.
 *
 * Parking without lost wake-ups (a Dekker pattern on `sleepers`): a worker announces itself
 * (sleepers++), issues a seq_cst fence and re-checks every queue while holding park_lock, and only
 * then waits on the condition variable. A pusher makes its work visible, issues a seq_cst fence
 * and reads sleepers: either the parker's re-check sees the work, or the pusher sees the sleeper
 * and signals under park_lock, which cannot slip between the re-check and the wait.
 * Wake policy: a push from a non-worker thread always notifies; a worker's push notifies only when
 * it makes its queue exactly two actors long, because the pushing worker itself runs the first
 * one soon (this keeps request/response chains on one core without a futex call per message),
 * and longer queues need no fence per push: a worker that parked saw this queue empty in its
 * re-check, and only the owner adds to it, one at a time, so the queue can only become longer
 * than two again through a push that makes it exactly two, which notifies. (A size read that
 * races with a thief can skip that notify; the owner still runs its whole queue, so work is
 * delayed, never lost.) Measured with bench_actors fanout (1,000 receivers, 2 workers): 12% less
 * CPU per delivery than notifying on every push at length >= 2, other benchmarks unchanged. The
 * `waking` token lets only one wake-up be in progress at a time, so a burst of pushes costs one
 * signal, not one per push; the woken worker returns the token before it looks for work. The
 * holder of the token signals under park_lock only if a sleeper is still counted there; if none
 * is, it returns the token itself (otherwise a token taken for a sleeper that had just found
 * work and left would never come back, and every later notify would be silenced).
 *
 * Idle hook (nd_pool_set_idle): a worker that would park first tries to become the one worker
 * blocked in the hook (the poller), which the same Dekker pattern protects: it sets poll_blocked,
 * fences and re-checks the queues before blocking; notify() wakes it through hook.wake when no
 * parked worker is there to signal. Every FAIR_INTERVAL looks for work, a busy worker polls the
 * hook without blocking, so its events are picked up even when no worker is ever idle.
 *
 * Shutdown: send ND_MSG_CLOSE to every registered actor, wait until the registry is empty
 * (repeating for actors spawned meanwhile), then stop and join the workers and the timer thread,
 * and run every pending epoch destructor.
 */
#include "actors/pool.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "actors/runq.h"
#include "actors/sched.h"

#define REG_SHARDS     16
#define FAIR_INTERVAL  61
#define SHUTDOWN_TRIES 50 /* of 100 ms each without progress */

typedef struct nd_worker {
    nd_runq_t q; /* cache aligned inside */
    nd_ctx_t ctx;
    nd_pool_t *pool;
    pthread_t thread;
    uint32_t tick;
} ND_CACHE_ALIGNED nd_worker_t;

typedef struct reg_shard {
    pthread_mutex_t lock;
    nd_actor_t *head;
} ND_CACHE_ALIGNED reg_shard_t;

struct nd_pool {
    /* immutable after new */
    unsigned n;
    nd_worker_t *workers;
    nd_epoch_t *epoch;
    nd_timers_t *timers;
    bool started;

    nd_inject_t inject;
    nd_msgcache_depot_t depot;

    /* parking */
    pthread_mutex_t park_lock;
    pthread_cond_t park_cond;
    _Atomic int sleepers ND_CACHE_ALIGNED;
    _Atomic int waking;
    _Atomic bool stopping;

    /* the idle hook (immutable after start) and who is in it */
    nd_pool_idle_t idle;
    _Atomic int polling;      /* a worker owns the hook (blocking or not) */
    _Atomic int poll_blocked; /* that worker may be blocked in it: wake it through idle.wake */

    /* registry of live actors */
    reg_shard_t shards[REG_SHARDS];
    _Atomic size_t live ND_CACHE_ALIGNED;
    pthread_mutex_t empty_lock;
    pthread_cond_t empty_cond;
};

static uint64_t
seed_for(const void *p)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t s = (uint64_t)(uintptr_t)p ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
    return s ? s : 0x9E3779B97F4A7C15ull;
}

static void
ctx_init(nd_ctx_t *ctx, nd_pool_t *pool, int worker, nd_worker_t *self)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->pool = pool;
    ctx->worker = worker;
    ctx->self = self;
    ctx->epoch = nd_epoch_register(pool->epoch);
    ctx->rng = seed_for(ctx);
    nd_msgcache_init(&ctx->msgs, &pool->depot);
}

nd_ctx_t *
nd_ctx_external_new(nd_pool_t *pool)
{
    nd_ctx_t *ctx = nd_xaligned(sizeof(*ctx));
    ctx_init(ctx, pool, -1, NULL);
    return ctx;
}

void
nd_ctx_external_free(nd_ctx_t *ctx)
{
    /* Unregistering drops pending destructors, so run them first. */
    nd_epoch_barrier(ctx->epoch);
    ck_epoch_unregister(ctx->epoch);
    nd_msgcache_flush(&ctx->msgs);
    nd_free(ctx);
}

/* ---- waking and parking ---- */

static bool
work_visible(nd_pool_t *pool)
{
    if (!nd_inject_empty(&pool->inject))
        return true;
    for (unsigned i = 0; i < pool->n; i++)
        if (nd_runq_size(&pool->workers[i].q) != 0)
            return true;
    return false;
}

/* Wakes the worker blocked in the idle hook, if one is (called after the Dekker fence/RMW of
 * notify(); poll_blocked is set before the poller's own re-check, see idle_poll()). Only the
 * notifier that clears the flag calls wake, so a burst of pushes costs one wake-up. */
static void
wake_poller(nd_pool_t *pool)
{
    if (pool->idle.wake == NULL ||
        atomic_load_explicit(&pool->poll_blocked, memory_order_seq_cst) == 0)
        return;
    if (atomic_exchange_explicit(&pool->poll_blocked, 0, memory_order_acq_rel) == 1)
        pool->idle.wake(pool->idle.arg);
}

static void
notify(nd_pool_t *pool)
{
#ifdef ND_TSAN
    /* TSan cannot model fences (GCC rejects atomic_thread_fence under -fsanitize=thread with
     * -Wtsan), so TSan builds use a seq_cst read-modify-write of sleepers instead: an RMW reads
     * the latest value, and when it precedes park()'s increment in sleepers' modification order,
     * that increment synchronises with it, so the parker's re-check sees our push. */
    if (atomic_fetch_add_explicit(&pool->sleepers, 0, memory_order_seq_cst) == 0) {
        wake_poller(pool);
        return;
    }
#else
    /* seq_cst: pairs with the fence in park(); orders our push before reading sleepers. */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&pool->sleepers, memory_order_relaxed) == 0) {
        wake_poller(pool);
        return;
    }
#endif
    int expect = 0;
    if (!atomic_compare_exchange_strong_explicit(&pool->waking, &expect, 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return; /* a wake-up is already under way; that worker will look at the queues */
    pthread_mutex_lock(&pool->park_lock);
    /* sleepers only changes under park_lock, so every worker counted here is inside
     * pthread_cond_wait (or woken and waiting for the lock) and will return the token after we
     * unlock. When none is counted (the sleeper we saw re-checked, found work and left before
     * we locked), nobody would ever return the token, and a token stuck at 1 silences every later
     * notify: all workers could then park with work queued. So we return it ourselves; a worker
     * that parks after our unlock re-checks the queues and sees our push. */
    if (atomic_load_explicit(&pool->sleepers, memory_order_relaxed) != 0)
        pthread_cond_signal(&pool->park_cond);
    else
        atomic_store_explicit(&pool->waking, 0, memory_order_relaxed);
    pthread_mutex_unlock(&pool->park_lock);
}

static void
park(nd_worker_t *w)
{
    nd_pool_t *pool = w->pool;
    pthread_mutex_lock(&pool->park_lock);
#ifdef ND_TSAN
    /* seq_cst RMW: pairs with the RMW of sleepers in notify() (TSan builds have no fences). */
    atomic_fetch_add_explicit(&pool->sleepers, 1, memory_order_seq_cst);
#else
    atomic_fetch_add_explicit(&pool->sleepers, 1, memory_order_relaxed);
    /* seq_cst: pairs with the fence in notify(); orders the announcement before the re-check. */
    atomic_thread_fence(memory_order_seq_cst);
#endif
    if (!atomic_load_explicit(&pool->stopping, memory_order_relaxed) && !work_visible(pool)) {
        w->ctx.stats.parks++;
        pthread_cond_wait(&pool->park_cond, &pool->park_lock);
    }
    atomic_fetch_sub_explicit(&pool->sleepers, 1, memory_order_relaxed);
    pthread_mutex_unlock(&pool->park_lock);
    /* Return the wake-up token (we may not be the one it was meant for: harmless, the holder of
     * a token only suppresses further signals), then look for work. seq_cst: pairs with the fence
     * in notify(), so a pusher that saw the token set is seen by our next search. */
    atomic_store_explicit(&pool->waking, 0, memory_order_seq_cst);
}

/* ---- scheduling ---- */

void
nd_sched_push(nd_ctx_t *ctx, nd_actor_t *a)
{
    nd_worker_t *w = ctx->self;
    nd_pool_t *pool = ctx->pool;
    if (w != NULL && nd_runq_push_owner(&w->q, a)) {
        /* Only the push that makes the queue two long: see the wake policy at the top. */
        if (nd_runq_size(&w->q) == 2)
            notify(pool);
        return;
    }
    nd_inject_push(&pool->inject, a);
    notify(pool);
}

static nd_actor_t *
steal(nd_worker_t *w)
{
    nd_pool_t *pool = w->pool;
    unsigned n = pool->n;
    if (n < 2)
        return NULL;
    unsigned start = (unsigned)(nd_ctx_rand(&w->ctx) % n);
    for (unsigned i = 0; i < n; i++) {
        nd_worker_t *victim = &pool->workers[(start + i) % n];
        if (victim == w)
            continue;
        nd_actor_t *a = nd_runq_steal(&w->q, &victim->q);
        if (a != NULL) {
            w->ctx.stats.steals++;
            return a;
        }
    }
    return NULL;
}

/* Becomes the worker in the idle hook. Returns: false when another worker is in it. */
static bool
take_poller(nd_pool_t *pool)
{
    int expect = 0;
    return pool->idle.poll != NULL &&
           atomic_load_explicit(&pool->polling, memory_order_relaxed) == 0 &&
           atomic_compare_exchange_strong_explicit(&pool->polling, &expect, 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

static void
release_poller(nd_pool_t *pool)
{
    atomic_store_explicit(&pool->polling, 0, memory_order_release);
}

/* Blocks in the idle hook until an event or a notify(); the caller holds the hook. */
static void
idle_poll(nd_worker_t *w)
{
    nd_pool_t *pool = w->pool;
    /* seq_cst: the Dekker pair of notify()'s fence: announce, then re-check the queues. */
    atomic_store_explicit(&pool->poll_blocked, 1, memory_order_seq_cst);
#ifndef ND_TSAN
    atomic_thread_fence(memory_order_seq_cst);
#endif
    int timeout = -1;
    if (atomic_load_explicit(&pool->stopping, memory_order_acquire) || work_visible(pool))
        timeout = 0;
    else
        w->ctx.stats.parks++;
    pool->idle.poll(&w->ctx, pool->idle.arg, timeout);
    atomic_store_explicit(&pool->poll_blocked, 0, memory_order_relaxed);
    release_poller(pool);
}

static nd_actor_t *
find_work(nd_worker_t *w)
{
    nd_pool_t *pool = w->pool;
    nd_actor_t *a;
    if (++w->tick % FAIR_INTERVAL == 0) {
        if (take_poller(pool)) {
            /* A busy worker looks at the idle hook's events too (no blocking). */
            pool->idle.poll(&w->ctx, pool->idle.arg, 0);
            release_poller(pool);
        }
        if ((a = nd_inject_pop(&pool->inject)) != NULL)
            return a;
    }
    if ((a = nd_runq_pop_owner(&w->q)) != NULL)
        return a;
    if ((a = nd_inject_pop(&pool->inject)) != NULL)
        return a;
    return steal(w);
}

static void *
worker_main(void *arg)
{
    nd_worker_t *w = arg;
    nd_pool_t *pool = w->pool;
    nd_ctx_t *ctx = &w->ctx;
    bool woken = false;

    for (;;) {
        /* No spinning before parking: measured on 2 cores with request/reply, 64 rounds of
         * spinning cost 44 us of server CPU per request and doubled p50 latency (52 us against
         * 16 us without), because spinning workers take the CPU the clients need; throughput
         * (pub/sub, fan-out) was the same either way. */
        nd_actor_t *a = find_work(w);
        if (a == NULL) {
            if (atomic_load_explicit(&pool->stopping, memory_order_acquire))
                break;
            nd_epoch_poll(ctx);
            if (take_poller(pool)) {
                idle_poll(w);
                continue;
            }
            park(w);
            woken = true;
            continue;
        }
        /* Pass the wake-up on (as Go's scheduler does after a spinning M finds work): pushes made
         * while our wake-up token was held did not signal anyone, so if we leave work behind, a
         * sleeping worker must be woken for it. Otherwise a burst of actors made runnable by a
         * non-worker thread would wait in the inject queue behind the one we run while the other
         * workers sleep (found by tests/unit/actors/test_pool.c, every_worker_runs_actors). */
        if (woken) {
            woken = false;
            if (work_visible(pool))
                notify(pool);
        }
        if (nd_actor_run(ctx, a))
            nd_sched_push(ctx, a);
        nd_epoch_poll(ctx);
    }
    nd_msgcache_flush(&ctx->msgs);
    return NULL;
}

/* ---- registry ---- */

void
nd_sched_register(nd_ctx_t *ctx, nd_actor_t *a)
{
    nd_pool_t *pool = ctx->pool;
    uint32_t s = (uint32_t)(ctx->worker + 1) % REG_SHARDS;
    reg_shard_t *sh = &pool->shards[s];
    a->reg_shard = s;
    a->reg_prev = NULL;
    atomic_fetch_add_explicit(&pool->live, 1, memory_order_relaxed);
    pthread_mutex_lock(&sh->lock);
    a->reg_next = sh->head;
    if (sh->head != NULL)
        sh->head->reg_prev = a;
    sh->head = a;
    pthread_mutex_unlock(&sh->lock);
}

void
nd_sched_unregister(nd_pool_t *pool, nd_actor_t *a)
{
    reg_shard_t *sh = &pool->shards[a->reg_shard];
    pthread_mutex_lock(&sh->lock);
    if (a->reg_prev != NULL)
        a->reg_prev->reg_next = a->reg_next;
    else
        sh->head = a->reg_next;
    if (a->reg_next != NULL)
        a->reg_next->reg_prev = a->reg_prev;
    pthread_mutex_unlock(&sh->lock);
    if (atomic_fetch_sub_explicit(&pool->live, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&pool->empty_lock);
        pthread_cond_broadcast(&pool->empty_cond);
        pthread_mutex_unlock(&pool->empty_lock);
    }
}

nd_msgcache_depot_t *
nd_sched_depot(nd_pool_t *pool)
{
    return &pool->depot;
}

static bool
try_ref(nd_actor_t *a)
{
    uint32_t r = atomic_load_explicit(&a->refs, memory_order_relaxed);
    while (r != 0)
        if (atomic_compare_exchange_weak_explicit(&a->refs, &r, r + 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* Sends ND_MSG_CLOSE to every live actor that is not closed yet. */
static void
close_all(nd_pool_t *pool, nd_ctx_t *ctx)
{
    for (unsigned s = 0; s < REG_SHARDS; s++) {
        reg_shard_t *sh = &pool->shards[s];
        size_t n = 0, cap = 0;
        nd_actor_t **batch = NULL;
        pthread_mutex_lock(&sh->lock);
        for (nd_actor_t *a = sh->head; a != NULL; a = a->reg_next) {
            if (nd_actor_closed(a) || !try_ref(a))
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                batch = nd_xrealloc(batch, cap * sizeof(*batch));
            }
            batch[n++] = a;
        }
        pthread_mutex_unlock(&sh->lock);
        for (size_t i = 0; i < n; i++) {
            nd_actor_close(ctx, batch[i]);
            nd_actor_unref(ctx, batch[i]);
        }
        nd_free(batch);
    }
}

/* ---- lifecycle ---- */

nd_pool_t *
nd_pool_new(unsigned workers)
{
    if (workers == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cpus > 0 ? (unsigned)cpus : 1;
    }
    nd_pool_t *pool = nd_xaligned(sizeof(*pool));
    pool->n = workers;
    pool->epoch = nd_epoch_new();
    nd_inject_init(&pool->inject);
    nd_msgcache_depot_init(&pool->depot);
    pthread_mutex_init(&pool->park_lock, NULL);
    pthread_cond_init(&pool->park_cond, NULL);
    pthread_mutex_init(&pool->empty_lock, NULL);
    pthread_cond_init(&pool->empty_cond, NULL);
    for (unsigned s = 0; s < REG_SHARDS; s++)
        pthread_mutex_init(&pool->shards[s].lock, NULL);
    pool->workers = nd_xaligned(workers * sizeof(nd_worker_t));
    for (unsigned i = 0; i < workers; i++) {
        nd_worker_t *w = &pool->workers[i];
        nd_runq_init(&w->q);
        w->pool = pool;
        ctx_init(&w->ctx, pool, (int)i, w);
    }
    return pool;
}

void
nd_pool_start(nd_pool_t *pool)
{
    pool->timers = nd_timers_new(pool);
    for (unsigned i = 0; i < pool->n; i++)
        if (pthread_create(&pool->workers[i].thread, NULL, worker_main, &pool->workers[i]) != 0)
            nd_fatal("cannot start worker thread %u", i);
    pool->started = true;
}

bool
nd_pool_wait_empty(nd_pool_t *pool, unsigned timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&pool->empty_lock);
    while (atomic_load_explicit(&pool->live, memory_order_acquire) != 0)
        if (pthread_cond_timedwait(&pool->empty_cond, &pool->empty_lock, &deadline) != 0)
            break;
    bool empty = atomic_load_explicit(&pool->live, memory_order_acquire) == 0;
    pthread_mutex_unlock(&pool->empty_lock);
    return empty;
}

void
nd_pool_shutdown(nd_pool_t *pool)
{
    if (!pool->started)
        return;
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    size_t live, fewest = SIZE_MAX;
    for (int tries = 0; (live = atomic_load(&pool->live)) != 0; tries++) {
        /* Give up only after SHUTDOWN_TRIES rounds in a row that freed nothing: a slow machine
         * (or a sanitizer build) with many actors to close must not be cut off while it is still
         * making progress (tests/stress/stress_actor_churn.c closes ~40000 at shutdown). */
        if (live < fewest) {
            fewest = live;
            tries = 0;
        }
        if (tries == SHUTDOWN_TRIES) {
            fprintf(stderr, "natsd: shutdown: %zu actors are still referenced\n", live);
            break;
        }
        close_all(pool, ctx);
        nd_pool_wait_empty(pool, 100);
    }
    nd_ctx_external_free(ctx);

    atomic_store_explicit(&pool->stopping, true, memory_order_release);
    pthread_mutex_lock(&pool->park_lock);
    pthread_cond_broadcast(&pool->park_cond);
    pthread_mutex_unlock(&pool->park_lock);
    if (pool->idle.wake != NULL)
        pool->idle.wake(pool->idle.arg);
    for (unsigned i = 0; i < pool->n; i++)
        pthread_join(pool->workers[i].thread, NULL);
    nd_timers_free(pool->timers);
    pool->timers = NULL;
    pool->started = false;
}

void
nd_pool_free(nd_pool_t *pool)
{
    nd_pool_shutdown(pool);
    nd_epoch_free(pool->epoch);
    nd_msgcache_depot_destroy(&pool->depot);
    nd_inject_destroy(&pool->inject);
    pthread_mutex_destroy(&pool->park_lock);
    pthread_cond_destroy(&pool->park_cond);
    pthread_mutex_destroy(&pool->empty_lock);
    pthread_cond_destroy(&pool->empty_cond);
    for (unsigned s = 0; s < REG_SHARDS; s++)
        pthread_mutex_destroy(&pool->shards[s].lock);
    nd_free(pool->workers);
    nd_free(pool);
}

void
nd_pool_set_idle(nd_pool_t *pool, const nd_pool_idle_t *idle)
{
    pool->idle = *idle;
}

unsigned
nd_pool_workers(const nd_pool_t *pool)
{
    return pool->n;
}

size_t
nd_pool_live_actors(nd_pool_t *pool)
{
    return atomic_load_explicit(&pool->live, memory_order_relaxed);
}

nd_timers_t *
nd_pool_timers(nd_pool_t *pool)
{
    return pool->timers;
}

nd_epoch_t *
nd_pool_epoch(nd_pool_t *pool)
{
    return pool->epoch;
}

nd_ctx_stats_t
nd_pool_stats(nd_pool_t *pool)
{
    nd_ctx_stats_t s = {0};
    for (unsigned i = 0; i < pool->n; i++) {
        s.msgs += pool->workers[i].ctx.stats.msgs;
        s.turns += pool->workers[i].ctx.stats.turns;
        s.steals += pool->workers[i].ctx.stats.steals;
        s.parks += pool->workers[i].ctx.stats.parks;
    }
    return s;
}
