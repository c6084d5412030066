/* Micro-benchmarks of the actor runtime: send + dispatch, fan-out, many producers into one
 * mailbox, spawn + close, and the single-thread floors of the mailbox and the message cache.
 *
 * Usage: bench_actors [-w workers] [-n scale] [-r repeats] [name ...]
 *   -w  worker threads of the pool (default 2, at most FANOUT_MAX_WORKERS)
 *   -n  multiplies every message/actor count (default 1; e.g. 0.1 for a quick smoke run)
 *   -r  runs each benchmark this many times and reports the best run (default 1)
 *   name  runs only the benchmarks whose names start with one of these words
 *
 * Output: one line per benchmark, `name msgs_per_s ns_per_msg cpu_ns_per_msg`, where ns_per_msg
 * is wall time divided by the number of operations (so for the parallel ones it is the inverse
 * throughput, not a latency) and cpu_ns_per_msg is the CPU time of all the process's threads
 * (spinning and parking included) per operation, which is steadier than wall time on a machine
 * shared with other work. Lines starting with '#' are comments (parameters, pool counters).
 *
 * Benchmarks:
 *   mbox_push_pop_1    push one preallocated message and pop it, one thread (the Vyukov stub
 *                      re-push on every pop is included: this is the empty-queue case)
 *   mbox_push_pop_64   push 64, then pop 64, one thread
 *   msg_new_free_1     nd_msg_new + nd_msg_free of one 64-byte message, one thread
 *   msg_new_free_512   512 nd_msg_new then 512 nd_msg_free (crosses magazines and the depot)
 *   pingpong           two actors bounce one message: send + dispatch with one message in flight
 *   fanout             one actor sends N messages to each of 1,000 actors, one round at a time,
 *                      with at most FANOUT_WINDOW messages in flight; total deliveries/s
 *   mpsc_actors        two producer actors send bursts into one consumer actor
 *   mpsc_threads       two producer threads (external ctxs) send bursts into one consumer actor
 *   spawn_close        an actor spawns and closes 1 M actors; spawns/s until all are freed
 *
 * The producers of the mpsc benchmarks keep at most MPSC_WINDOW messages unconsumed, so memory
 * stays bounded and the message cache recycles blocks instead of growing the heap. A producer
 * actor that finds the window full parks and is woken by the consumer (credit-based flow
 * control, as a real throttled publisher would be), so it never burns its worker spinning; a
 * producer thread yields the CPU instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "actors/ctx.h"
#include "actors/mbox.h"
#include "actors/pool.h"

#define MSG_WORK     (ND_MSG_USER_BASE + 0)
#define MSG_GO       (ND_MSG_USER_BASE + 1)
#define FANOUT_SINKS 1000u
#define FANOUT_WINDOW 16000u /* messages in flight, > FANOUT_CHECK * workers */
#define FANOUT_CHECK  64u
#define MPSC_BURST   64u
#define MPSC_WINDOW  8192u
#define SPAWN_BURST  32u

typedef struct bench_msg {
    nd_msg_t hdr;
    uint64_t left; /* pingpong: hops still to go */
} bench_msg_t;

/* ---- options and reporting ---- */

static unsigned opt_workers = 2;
static double opt_scale = 1.0;
static unsigned opt_repeats = 1;
static char **opt_names;
static int opt_nnames;

static uint64_t
clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall and process CPU time (all threads) at the start of a timed region. */
typedef struct stamp {
    uint64_t wall, cpu;
} stamp_t;

static uint64_t last_cpu_ns; /* CPU time of the last run, scaled like its wall time */

static stamp_t
stamp(void)
{
    return (stamp_t){clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID)};
}

/* Ends a timed region that did `done` operations; returns its wall time scaled to `ops`. */
static uint64_t
elapsed(stamp_t t0, uint64_t done, uint64_t ops)
{
    stamp_t t1 = stamp();
    last_cpu_ns = (t1.cpu - t0.cpu) * ops / done;
    return (t1.wall - t0.wall) * ops / done;
}

static uint64_t
scaled(uint64_t n)
{
    uint64_t v = (uint64_t)((double)n * opt_scale);
    return v ? v : 1;
}

static bool
selected(const char *name)
{
    if (opt_nnames == 0)
        return true;
    for (int i = 0; i < opt_nnames; i++)
        if (strncmp(name, opt_names[i], strlen(opt_names[i])) == 0)
            return true;
    return false;
}

static void
report(const char *name, uint64_t ops, uint64_t best_ns, uint64_t cpu_ns)
{
    double secs = (double)best_ns / 1e9;
    printf("%s %.0f %.2f %.2f\n", name, (double)ops / secs, (double)best_ns / (double)ops,
           (double)cpu_ns / (double)ops);
    fflush(stdout);
}

static void
report_stats(const char *name, nd_pool_t *pool)
{
    nd_ctx_stats_t s = nd_pool_stats(pool);
    printf("# %s: msgs=%llu turns=%llu steals=%llu parks=%llu\n", name,
           (unsigned long long)s.msgs, (unsigned long long)s.turns,
           (unsigned long long)s.steals, (unsigned long long)s.parks);
}

/* A run of a benchmark: returns the elapsed nanoseconds for `ops` operations. */
typedef uint64_t (*bench_fn)(uint64_t ops);

static void
run_bench(const char *name, bench_fn fn, uint64_t ops)
{
    if (!selected(name))
        return;
    uint64_t best = UINT64_MAX, best_cpu = 0;
    for (unsigned r = 0; r < opt_repeats; r++) {
        uint64_t t = fn(ops);
        if (t < best) {
            best = t;
            best_cpu = last_cpu_ns;
        }
    }
    report(name, ops, best, best_cpu);
}

/* Completion signal from an actor to the main thread. */
static sem_t done;

static void
wait_done(void)
{
    while (sem_wait(&done) != 0 && errno == EINTR)
        ;
}

/* Shuts a benchmark's pool down after its actors went quiet. The counters are read after the
 * workers stopped: they are plain per-worker fields. */
static void
pool_end(const char *name, nd_pool_t *pool, nd_ctx_t *ext)
{
    nd_ctx_external_free(ext);
    nd_pool_shutdown(pool);
    report_stats(name, pool);
    nd_pool_free(pool);
}

/* ---- single-thread floors ---- */

static uint64_t
bench_mbox_1(uint64_t ops)
{
    nd_mbox_t mb;
    bench_msg_t m;
    memset(&m, 0, sizeof(m));
    nd_mbox_init(&mb);
    /* The first push finds the idle bit; the consumer role is ours from here on. */
    (void)nd_mbox_push(&mb, &m.hdr);
    (void)nd_mbox_pop_sc(&mb);
    stamp_t t0 = stamp();
    for (uint64_t i = 0; i < ops; i++) {
        (void)nd_mbox_push(&mb, &m.hdr);
        if (nd_mbox_pop_sc(&mb) != &m.hdr)
            nd_fatal("mbox: lost message");
    }
    return elapsed(t0, ops, ops);
}

static uint64_t
bench_mbox_64(uint64_t ops)
{
    enum { B = 64 };
    static bench_msg_t m[B];
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    (void)nd_mbox_push(&mb, &m[0].hdr);
    (void)nd_mbox_pop_sc(&mb);
    uint64_t rounds = ops / B ? ops / B : 1;
    stamp_t t0 = stamp();
    for (uint64_t r = 0; r < rounds; r++) {
        for (int i = 0; i < B; i++)
            (void)nd_mbox_push(&mb, &m[i].hdr);
        for (int i = 0; i < B; i++)
            if (nd_mbox_pop_sc(&mb) != &m[i].hdr)
                nd_fatal("mbox: out of order");
    }
    return elapsed(t0, rounds * B, ops);
}

static uint64_t
bench_msg_1(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(1);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    stamp_t t0 = stamp();
    for (uint64_t i = 0; i < ops; i++) {
        nd_msg_t *m = nd_msg_new(ctx, sizeof(bench_msg_t), MSG_WORK);
        __asm__ __volatile__("" : : "r"(m) : "memory"); /* keep the pair from being elided */
        nd_msg_free(ctx, m);
    }
    uint64_t t = elapsed(t0, ops, ops);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
    return t;
}

static uint64_t
bench_msg_512(uint64_t ops)
{
    enum { B = 512 };
    nd_msg_t *m[B];
    nd_pool_t *pool = nd_pool_new(1);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    uint64_t rounds = ops / B ? ops / B : 1;
    stamp_t t0 = stamp();
    for (uint64_t r = 0; r < rounds; r++) {
        for (int i = 0; i < B; i++)
            m[i] = nd_msg_new(ctx, sizeof(bench_msg_t), MSG_WORK);
        for (int i = 0; i < B; i++)
            nd_msg_free(ctx, m[i]);
    }
    uint64_t t = elapsed(t0, rounds * B, ops);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
    return t;
}

/* ---- pingpong ---- */

typedef struct pp_actor {
    nd_actor_t base;
    nd_actor_t *peer;
} pp_actor_t;

static void
pp_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    bench_msg_t *in = (bench_msg_t *)msg;
    if (in->left == 0) {
        sem_post(&done);
        return;
    }
    bench_msg_t *out = ND_MSG_NEW(ctx, bench_msg_t, MSG_WORK);
    out->left = in->left - 1;
    nd_actor_send(ctx, ((pp_actor_t *)self)->peer, &out->hdr);
}

static const nd_actor_type_t pp_type = {
    .name = "bench.pingpong", .size = sizeof(pp_actor_t), .dispatch = pp_dispatch};

static uint64_t
bench_pingpong(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(opt_workers);
    nd_pool_start(pool);
    nd_ctx_t *ext = nd_ctx_external_new(pool);
    pp_actor_t *a = (pp_actor_t *)nd_actor_spawn(ext, &pp_type);
    pp_actor_t *b = (pp_actor_t *)nd_actor_spawn(ext, &pp_type);
    a->peer = &b->base;
    b->peer = &a->base;

    bench_msg_t *m = ND_MSG_NEW(ext, bench_msg_t, MSG_WORK);
    m->left = ops;
    stamp_t t0 = stamp();
    nd_actor_send(ext, &a->base, &m->hdr);
    wait_done();
    uint64_t t = elapsed(t0, ops, ops);

    nd_actor_unref(ext, &a->base);
    nd_actor_unref(ext, &b->base);
    pool_end("pingpong", pool, ext);
    return t;
}

/* ---- fanout ---- */

typedef struct fan_sink {
    nd_actor_t base;
    uint64_t got;
} fan_sink_t;

typedef struct fan_src {
    nd_actor_t base;
    nd_actor_t **sinks;
    uint64_t rounds_left;
    uint64_t sent;
    /* any thread: set by the source when it stopped on a full window; a worker wakes it */
    _Atomic bool parked ND_CACHE_ALIGNED;
} fan_src_t;

/* Deliveries per worker: `n` is the worker's own count, `published` what it last showed the
 * source (every FANOUT_CHECK deliveries), each on the worker's own cache line. */
typedef struct fan_count {
    uint64_t n;
    _Atomic uint64_t published;
} ND_CACHE_ALIGNED fan_count_t;

#define FANOUT_MAX_WORKERS 64
static fan_count_t fan_count[FANOUT_MAX_WORKERS];
static uint64_t fan_per_sink;
static _Atomic uint32_t fan_sinks_left;
static fan_src_t *fan_source;

static uint64_t
fan_delivered(memory_order mo)
{
    uint64_t sum = 0;
    for (unsigned w = 0; w < opt_workers; w++)
        sum += atomic_load_explicit(&fan_count[w].published, mo);
    return sum;
}

static bool
fan_window_full(fan_src_t *src, memory_order mo)
{
    return src->sent - fan_delivered(mo) >= FANOUT_WINDOW;
}

static void
fan_sink_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    fan_sink_t *s = (fan_sink_t *)self;
    fan_count_t *c = &fan_count[ctx->worker];
    if ((++c->n % FANOUT_CHECK) == 0) {
        /* seq_cst store, then seq_cst load of parked: a Dekker pair with the source's store of
         * parked and its re-check of the counts, so either it sees our count or we see it
         * parked. A worker shows its count every FANOUT_CHECK deliveries, so the source sees
         * all but fewer than FANOUT_CHECK per worker; the window is larger than that for every
         * worker together, so after a park some worker always checks again and wakes it. */
        atomic_store_explicit(&c->published, c->n, memory_order_seq_cst);
        if (atomic_load_explicit(&fan_source->parked, memory_order_seq_cst) &&
            atomic_exchange_explicit(&fan_source->parked, false, memory_order_relaxed))
            nd_actor_send(ctx, &fan_source->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_GO));
    }
    /* relaxed: a plain countdown; sem_post orders the main thread's wake-up. */
    if (++s->got == fan_per_sink &&
        atomic_fetch_sub_explicit(&fan_sinks_left, 1, memory_order_relaxed) == 1)
        sem_post(&done);
}

static const nd_actor_type_t fan_sink_type = {
    .name = "bench.fan_sink", .size = sizeof(fan_sink_t), .dispatch = fan_sink_dispatch};

/* One round per GO message: one message to every sink, then a GO to itself, so the source
 * yields to the sinks between batches like any well-behaved actor. At most about
 * FANOUT_WINDOW messages are in flight, so the benchmark measures delivery rather than the
 * heap: a source that finds the window full parks until a worker wakes it. */
static void
fan_src_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    fan_src_t *src = (fan_src_t *)self;
    if (fan_window_full(src, memory_order_relaxed)) {
        /* seq_cst: the Dekker pair with the workers (see fan_sink_dispatch). */
        atomic_store_explicit(&src->parked, true, memory_order_seq_cst);
        if (fan_window_full(src, memory_order_seq_cst))
            return;
        if (!atomic_exchange_explicit(&src->parked, false, memory_order_relaxed))
            return; /* a worker took it first: its GO is on the way */
    }
    for (unsigned i = 0; i < FANOUT_SINKS; i++)
        nd_actor_send(ctx, src->sinks[i], nd_msg_new(ctx, sizeof(bench_msg_t), MSG_WORK));
    src->sent += FANOUT_SINKS;
    if (--src->rounds_left > 0)
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_GO));
}

static const nd_actor_type_t fan_src_type = {
    .name = "bench.fan_src", .size = sizeof(fan_src_t), .dispatch = fan_src_dispatch};

static uint64_t
bench_fanout(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(opt_workers);
    nd_pool_start(pool);
    nd_ctx_t *ext = nd_ctx_external_new(pool);
    nd_actor_t **sinks = nd_xmalloc(FANOUT_SINKS * sizeof(*sinks));
    for (unsigned i = 0; i < FANOUT_SINKS; i++)
        sinks[i] = nd_actor_spawn(ext, &fan_sink_type);
    fan_src_t *src = (fan_src_t *)nd_actor_spawn(ext, &fan_src_type);
    src->sinks = sinks;
    fan_source = src;
    for (unsigned w = 0; w < FANOUT_MAX_WORKERS; w++) {
        fan_count[w].n = 0;
        atomic_store(&fan_count[w].published, 0);
    }
    fan_per_sink = ops / FANOUT_SINKS;
    src->rounds_left = fan_per_sink;
    atomic_store(&fan_sinks_left, FANOUT_SINKS);

    stamp_t t0 = stamp();
    nd_actor_send(ext, &src->base, nd_msg_new(ext, sizeof(nd_msg_t), MSG_GO));
    wait_done();
    uint64_t t = elapsed(t0, fan_per_sink * FANOUT_SINKS, ops);

    for (unsigned i = 0; i < FANOUT_SINKS; i++)
        nd_actor_unref(ext, sinks[i]);
    nd_actor_unref(ext, &src->base);
    pool_end("fanout", pool, ext);
    nd_free(sinks);
    return t;
}

/* ---- mpsc: two producers, one consumer ---- */

typedef struct mpsc_producer mpsc_producer_t;

typedef struct mpsc_consumer {
    nd_actor_t base;
    uint64_t got;
    uint64_t total;
    mpsc_producer_t *prod[2]; /* producer actors to wake; NULL for producer threads */
    /* any thread: the consumer's count, read by producers for flow control */
    _Atomic uint64_t consumed ND_CACHE_ALIGNED;
} mpsc_consumer_t;

struct mpsc_producer {
    nd_actor_t base;
    mpsc_consumer_t *to;
    uint64_t left;
    /* any thread: set by a producer that stopped on a full window; the consumer takes it and
     * sends the producer a GO, so a throttled producer costs nothing instead of spinning. */
    _Atomic bool parked ND_CACHE_ALIGNED;
};

/* any thread: messages sent by all producers (for the window) */
static _Atomic uint64_t mpsc_sent ND_CACHE_ALIGNED;

static bool
mpsc_window_full(mpsc_consumer_t *to, memory_order mo)
{
    uint64_t sent = atomic_load_explicit(&mpsc_sent, memory_order_relaxed);
    return sent - atomic_load_explicit(&to->consumed, mo) >= MPSC_WINDOW;
}

static void
mpsc_consumer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    mpsc_consumer_t *c = (mpsc_consumer_t *)self;
    c->got++;
    /* Publishing the count once per burst keeps the consumer's line from bouncing per message.
     * While the window is full at least MPSC_WINDOW >= MPSC_BURST messages are pending, so a
     * publish always follows a producer parking: nobody is left parked. seq_cst store, then
     * seq_cst load of parked: a Dekker pair with the producer's store of parked and its re-check
     * of consumed, so either the producer sees the new count or we see it parked. */
    if ((c->got & (MPSC_BURST - 1)) == 0 || c->got == c->total) {
        atomic_store_explicit(&c->consumed, c->got, memory_order_seq_cst);
        for (int i = 0; i < 2; i++) {
            mpsc_producer_t *p = c->prod[i];
            if (p != NULL && atomic_load_explicit(&p->parked, memory_order_seq_cst) &&
                atomic_exchange_explicit(&p->parked, false, memory_order_relaxed))
                nd_actor_send(ctx, &p->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_GO));
        }
    }
    if (c->got == c->total)
        sem_post(&done);
}

static const nd_actor_type_t mpsc_consumer_type = {
    .name = "bench.mpsc_consumer", .size = sizeof(mpsc_consumer_t),
    .dispatch = mpsc_consumer_dispatch};

/* Sends one burst if the window allows. Returns the number sent. */
static uint64_t
mpsc_burst(nd_ctx_t *ctx, mpsc_consumer_t *to, uint64_t left)
{
    if (mpsc_window_full(to, memory_order_relaxed))
        return 0;
    uint64_t n = left < MPSC_BURST ? left : MPSC_BURST;
    atomic_fetch_add_explicit(&mpsc_sent, n, memory_order_relaxed);
    for (uint64_t i = 0; i < n; i++)
        nd_actor_send(ctx, &to->base, nd_msg_new(ctx, sizeof(bench_msg_t), MSG_WORK));
    return n;
}

/* One burst per GO, then a GO to itself; on a full window it parks until the consumer wakes it. */
static void
mpsc_producer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    mpsc_producer_t *p = (mpsc_producer_t *)self;
    uint64_t n = mpsc_burst(ctx, p->to, p->left);
    if (n == 0) {
        /* seq_cst: the Dekker pair with the consumer (see mpsc_consumer_dispatch). */
        atomic_store_explicit(&p->parked, true, memory_order_seq_cst);
        if (mpsc_window_full(p->to, memory_order_seq_cst))
            return; /* the consumer will see parked and send a GO */
        if (!atomic_exchange_explicit(&p->parked, false, memory_order_relaxed))
            return; /* the consumer took it first: its GO is on the way */
    }
    p->left -= n;
    if (p->left > 0)
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_GO));
}

static const nd_actor_type_t mpsc_producer_type = {
    .name = "bench.mpsc_producer", .size = sizeof(mpsc_producer_t),
    .dispatch = mpsc_producer_dispatch};

static mpsc_consumer_t *
mpsc_setup(nd_ctx_t *ext, uint64_t total)
{
    mpsc_consumer_t *c = (mpsc_consumer_t *)nd_actor_spawn(ext, &mpsc_consumer_type);
    c->total = total;
    atomic_store(&c->consumed, 0);
    atomic_store(&mpsc_sent, 0);
    return c;
}

static uint64_t
bench_mpsc_actors(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(opt_workers);
    nd_pool_start(pool);
    nd_ctx_t *ext = nd_ctx_external_new(pool);
    mpsc_consumer_t *c = mpsc_setup(ext, ops / 2 * 2);
    mpsc_producer_t *p[2];
    for (int i = 0; i < 2; i++) {
        p[i] = (mpsc_producer_t *)nd_actor_spawn(ext, &mpsc_producer_type);
        p[i]->to = c;
        p[i]->left = ops / 2;
        atomic_init(&p[i]->parked, false);
        c->prod[i] = p[i];
    }
    stamp_t t0 = stamp();
    for (int i = 0; i < 2; i++)
        nd_actor_send(ext, &p[i]->base, nd_msg_new(ext, sizeof(nd_msg_t), MSG_GO));
    wait_done();
    uint64_t t = elapsed(t0, ops, ops);

    for (int i = 0; i < 2; i++)
        nd_actor_unref(ext, &p[i]->base);
    nd_actor_unref(ext, &c->base);
    pool_end("mpsc_actors", pool, ext);
    return t;
}

typedef struct mpsc_thread_arg {
    nd_pool_t *pool;
    mpsc_consumer_t *to;
    uint64_t count;
    pthread_barrier_t *start;
} mpsc_thread_arg_t;

static void *
mpsc_thread_main(void *argp)
{
    mpsc_thread_arg_t *arg = argp;
    nd_ctx_t *ctx = nd_ctx_external_new(arg->pool);
    pthread_barrier_wait(arg->start);
    uint64_t left = arg->count;
    while (left > 0) {
        uint64_t n = mpsc_burst(ctx, arg->to, left);
        if (n == 0)
            sched_yield(); /* the window is full: let the consumer's worker run */
        left -= n;
    }
    nd_ctx_external_free(ctx);
    return NULL;
}

static uint64_t
bench_mpsc_threads(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(opt_workers);
    nd_pool_start(pool);
    nd_ctx_t *ext = nd_ctx_external_new(pool);
    mpsc_consumer_t *c = mpsc_setup(ext, ops / 2 * 2);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 3);
    pthread_t th[2];
    mpsc_thread_arg_t arg = {.pool = pool, .to = c, .count = ops / 2, .start = &start};
    for (int i = 0; i < 2; i++)
        if (pthread_create(&th[i], NULL, mpsc_thread_main, &arg) != 0)
            nd_fatal("cannot start producer thread");
    pthread_barrier_wait(&start);
    stamp_t t0 = stamp();
    wait_done();
    uint64_t t = elapsed(t0, ops, ops);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);

    nd_actor_unref(ext, &c->base);
    pool_end("mpsc_threads", pool, ext);
    return t;
}

/* ---- spawn + close ---- */

typedef struct spawner {
    nd_actor_t base;
    uint64_t left;
} spawner_t;

static const nd_actor_type_t spawnee_type = {
    .name = "bench.spawnee", .size = sizeof(nd_actor_t) + 64, .dispatch = NULL};

/* SPAWN_BURST spawns per GO message, then a GO to itself; the last one closes the spawner, so
 * "the pool is empty" means every spawned actor has been finalised and freed. */
static void
spawner_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    spawner_t *s = (spawner_t *)self;
    uint64_t n = s->left < SPAWN_BURST ? s->left : SPAWN_BURST;
    for (uint64_t i = 0; i < n; i++) {
        nd_actor_t *a = nd_actor_spawn(ctx, &spawnee_type);
        nd_actor_close(ctx, a);
        nd_actor_unref(ctx, a);
    }
    s->left -= n;
    if (s->left > 0)
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_GO));
    else
        nd_actor_close(ctx, self);
}

static const nd_actor_type_t spawner_type = {
    .name = "bench.spawner", .size = sizeof(spawner_t), .dispatch = spawner_dispatch};

static uint64_t
bench_spawn_close(uint64_t ops)
{
    nd_pool_t *pool = nd_pool_new(opt_workers);
    nd_pool_start(pool);
    nd_ctx_t *ext = nd_ctx_external_new(pool);
    spawner_t *s = (spawner_t *)nd_actor_spawn(ext, &spawner_type);
    s->left = ops;
    stamp_t t0 = stamp();
    nd_actor_send(ext, &s->base, nd_msg_new(ext, sizeof(nd_msg_t), MSG_GO));
    nd_actor_unref(ext, &s->base);
    if (!nd_pool_wait_empty(pool, 600000))
        nd_fatal("spawn_close: actors still live after 10 minutes");
    uint64_t t = elapsed(t0, ops, ops);
    pool_end("spawn_close", pool, ext);
    return t;
}

/* ---- main ---- */

static void
usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-w workers] [-n scale] [-r repeats] [name ...]\n", argv0);
    exit(2);
}

int
main(int argc, char **argv)
{
    int c;
    while ((c = getopt(argc, argv, "w:n:r:h")) != -1) {
        switch (c) {
        case 'w':
            opt_workers = (unsigned)strtoul(optarg, NULL, 10);
            if (opt_workers == 0 || opt_workers > FANOUT_MAX_WORKERS)
                usage(argv[0]);
            break;
        case 'n':
            opt_scale = strtod(optarg, NULL);
            if (!(opt_scale > 0))
                usage(argv[0]);
            break;
        case 'r':
            opt_repeats = (unsigned)strtoul(optarg, NULL, 10);
            if (opt_repeats == 0)
                opt_repeats = 1;
            break;
        default:
            usage(argv[0]);
        }
    }
    opt_names = argv + optind;
    opt_nnames = argc - optind;
    if (sem_init(&done, 0, 0) != 0)
        nd_fatal("sem_init failed");

    printf("# bench_actors workers=%u scale=%g repeats=%u (best run reported)\n", opt_workers,
           opt_scale, opt_repeats);
    printf("# name msgs_per_s ns_per_msg cpu_ns_per_msg\n");
    run_bench("mbox_push_pop_1", bench_mbox_1, scaled(50000000));
    run_bench("mbox_push_pop_64", bench_mbox_64, scaled(50000000));
    run_bench("msg_new_free_1", bench_msg_1, scaled(50000000));
    run_bench("msg_new_free_512", bench_msg_512, scaled(50000000));
    run_bench("pingpong", bench_pingpong, scaled(5000000));
    run_bench("fanout", bench_fanout, scaled(5000000) < FANOUT_SINKS ? FANOUT_SINKS
                                                                     : scaled(5000000));
    /* Two producers of at least one message each. */
    uint64_t mpsc_ops = scaled(20000000) < 2 ? 2 : scaled(20000000) / 2 * 2;
    run_bench("mpsc_actors", bench_mpsc_actors, mpsc_ops);
    run_bench("mpsc_threads", bench_mpsc_threads, mpsc_ops);
    run_bench("spawn_close", bench_spawn_close, scaled(1000000));
    sem_destroy(&done);
    return 0;
}
