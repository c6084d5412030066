/* Stress: epoch-based reclamation under a single writer and many readers.
 *
 * Two sorted singly linked lists of immutable nodes (keys 1..KEYS). Each list has exactly one
 * writer: list 0 an actor on the pool (it retires on whichever worker runs it, and that worker's
 * poll frees), list 1 a plain thread with an external ctx (it polls itself and now and then runs
 * a blocking nd_epoch_barrier). A writer never changes a node that readers can see: it replaces a
 * node by a copy with a new generation, removes one, or inserts one, in each case linking the new
 * state with one release store of a predecessor's `next`, and hands the unlinked node to
 * nd_epoch_retire.
 *
 * Readers (actors on the other workers, plus one plain thread) traverse both lists, each
 * traversal inside one nd_epoch_enter/exit section, and check every node: two canaries, a payload
 * derived from (key, generation), and strictly increasing keys. The destructor checks the canaries
 * (a node retired twice fails), then poisons canaries and payload before freeing, so a reader that
 * reaches a node freed too early fails its check even without ASan. Readers sometimes dawdle
 * inside a section, to keep grace periods honest.
 *
 * At the end (after nd_pool_free, which runs every pending destructor) every retired node must
 * have been destroyed exactly once: retired == freed, and allocated == freed + nodes still linked.
 *
 * Usage: stress_epoch_reclaim [scale]   (or ND_STRESS_SCALE); see stress_util.h.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "actors/actor.h"
#include "actors/alloc.h"
#include "actors/epoch.h"
#include "actors/pool.h"
#include "stress_util.h"

#define WORKERS         3
#define READER_ACTORS   4
#define LISTS           2
#define KEYS            96
#define PAYLOAD_WORDS   6
#define WRITES_PER_TURN 32
#define SCANS_PER_TURN  4
#define CANARY_LIVE     0x11FE11FE11FE11FEull
#define CANARY_DEAD     0xDEADDEADDEADDEADull

typedef struct enode enode_t;
struct enode {
    nd_epoch_entry_t entry; /* first: glibc's free list reuses the first bytes of a block */
    uint64_t canary;
    uint64_t key;
    uint64_t gen;
    uint64_t payload[PAYLOAD_WORDS];
    _Atomic(enode_t *) next; /* the only field written after publication (by the writer) */
    uint64_t canary2;
};

typedef struct elist {
    enode_t head; /* sentinel with key 0; never retired */
    /* writer only */
    uint32_t size;
    uint64_t gen;
} elist_t;

static elist_t g_lists[LISTS];

/* Counters, relaxed: read at the end, after every thread has been joined. */
static _Atomic uint64_t g_allocated, g_retired, g_freed, g_writes, g_scans, g_nodes_seen;
static _Atomic uint64_t g_progress;
static _Atomic int g_writers_done, g_readers_done;

static inline uint64_t
mix(uint64_t key, uint64_t gen, unsigned i)
{
    /* splitmix64 of the triple: every word depends on all three. */
    uint64_t z = key * 0x9E3779B97F4A7C15ull ^ (gen << 7) ^ (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static enode_t *
node_new(uint64_t key, uint64_t gen, enode_t *next)
{
    enode_t *n = nd_xmalloc(sizeof(*n));
    n->canary = CANARY_LIVE;
    n->canary2 = CANARY_LIVE;
    n->key = key;
    n->gen = gen;
    for (unsigned i = 0; i < PAYLOAD_WORDS; i++)
        n->payload[i] = mix(key, gen, i);
    atomic_init(&n->next, next);
    atomic_fetch_add_explicit(&g_allocated, 1, memory_order_relaxed);
    return n;
}

/* Checks one node as a reader sees it. Returns: its key. */
static uint64_t
node_check(const enode_t *n, uint64_t prev_key, const char *who)
{
    if (n->canary != CANARY_LIVE || n->canary2 != CANARY_LIVE)
        stress_fail("%s: node %p has canaries %016llx/%016llx: freed while a reader could see "
                    "it",
                    who, (const void *)n, (unsigned long long)n->canary,
                    (unsigned long long)n->canary2);
    STRESS_CHECK(n->key > prev_key && n->key <= KEYS, "%s: key %llu after %llu: list corrupted",
                 who, (unsigned long long)n->key, (unsigned long long)prev_key);
    for (unsigned i = 0; i < PAYLOAD_WORDS; i++)
        STRESS_CHECK(n->payload[i] == mix(n->key, n->gen, i),
                     "%s: node %p (key %llu gen %llu) payload word %u corrupted: freed or reused "
                     "while a reader could see it",
                     who, (const void *)n, (unsigned long long)n->key, (unsigned long long)n->gen,
                     i);
    return n->key;
}

static void
node_destroy(nd_epoch_entry_t *e)
{
    enode_t *n = ND_EPOCH_CONTAINER(e, enode_t, entry);
    STRESS_CHECK(n->canary == CANARY_LIVE && n->canary2 == CANARY_LIVE,
                 "destructor: node %p already destroyed (retired twice?)", (void *)n);
    /* Poison before freeing: a reader that still holds n sees the damage even without ASan. */
    n->canary = CANARY_DEAD;
    n->canary2 = CANARY_DEAD;
    n->key = UINT64_MAX;
    memset(n->payload, 0xDB, sizeof(n->payload));
    atomic_fetch_add_explicit(&g_freed, 1, memory_order_relaxed);
    nd_free(n);
}

static void
retire(nd_ctx_t *ctx, enode_t *n)
{
    atomic_fetch_add_explicit(&g_retired, 1, memory_order_relaxed);
    nd_epoch_retire(ctx, &n->entry, node_destroy);
}

/* One change to list l by its writer: replace, remove or insert the node of a random key. */
static void
write_step(nd_ctx_t *ctx, elist_t *l, uint64_t r)
{
    uint64_t key = 1 + r % KEYS;
    /* The writer is the only thread that stores next pointers, so relaxed loads see its own
     * latest stores. */
    enode_t *pred = &l->head;
    enode_t *cur = atomic_load_explicit(&pred->next, memory_order_relaxed);
    while (cur != NULL && cur->key < key) {
        pred = cur;
        cur = atomic_load_explicit(&cur->next, memory_order_relaxed);
    }
    enode_t *next = cur != NULL ? atomic_load_explicit(&cur->next, memory_order_relaxed) : NULL;
    if (cur != NULL && cur->key == key) {
        if (l->size > KEYS / 4 && (r >> 32) % 3 == 0) {
            /* Remove: readers on cur still find its (unchanged) next. release: pairs with the
             * readers' acquire loads of next. */
            atomic_store_explicit(&pred->next, next, memory_order_release);
            l->size--;
        } else {
            /* Replace by a copy of a new generation. release: publishes the copy's contents. */
            enode_t *copy = node_new(key, ++l->gen, next);
            atomic_store_explicit(&pred->next, copy, memory_order_release);
        }
        retire(ctx, cur);
    } else if (l->size < 3 * KEYS / 4) {
        /* Insert. release: publishes the new node's contents. */
        enode_t *n = node_new(key, ++l->gen, cur);
        atomic_store_explicit(&pred->next, n, memory_order_release);
        l->size++;
    }
    atomic_fetch_add_explicit(&g_writes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
}

/* One traversal of list l in its own read section. */
static void
scan(nd_ctx_t *ctx, elist_t *l, const char *who)
{
    uint64_t prev = 0, seen = 0;
    /* Dawdle in one traversal out of four: a long section must hold reclamation back. */
    bool slow = nd_ctx_rand(ctx) % 4 == 0;
    nd_epoch_enter(ctx);
    /* acquire: pairs with the writer's release store of next. */
    const enode_t *n = atomic_load_explicit(&l->head.next, memory_order_acquire);
    while (n != NULL) {
        prev = node_check(n, prev, who);
        seen++;
        if (slow && seen % 8 == 0)
            for (volatile int spin = 0; spin < 200; spin++)
                ;
        n = atomic_load_explicit(&n->next, memory_order_acquire);
    }
    nd_epoch_exit(ctx);
    atomic_fetch_add_explicit(&g_scans, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_nodes_seen, seen, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
}

static bool
writers_done(void)
{
    /* acquire: pairs with the writers' release increments. */
    return atomic_load_explicit(&g_writers_done, memory_order_acquire) == LISTS;
}

/* ---- actors ---- */

enum {
    MSG_WRITE = ND_MSG_USER_BASE,
    MSG_SCAN,
};

typedef struct writer {
    nd_actor_t base;
    /* owner actor only */
    elist_t *list;
    uint64_t left;
} writer_t;

static void
writer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    writer_t *w = (writer_t *)self;
    STRESS_CHECK(msg->id == MSG_WRITE, "writer: unexpected message %u", msg->id);
    for (int i = 0; i < WRITES_PER_TURN && w->left > 0; i++, w->left--)
        write_step(ctx, w->list, nd_ctx_rand(ctx));
    if (w->left > 0) {
        /* Back of the queue: the writer moves between workers and retires on each of them. */
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_WRITE));
    } else {
        /* release: pairs with the acquire in writers_done(). */
        atomic_fetch_add_explicit(&g_writers_done, 1, memory_order_release);
    }
}

static const nd_actor_type_t writer_type = {
    .name = "stress_writer",
    .size = sizeof(writer_t),
    .dispatch = writer_dispatch,
};

typedef struct reader {
    nd_actor_t base;
} reader_t;

static void
reader_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    STRESS_CHECK(msg->id == MSG_SCAN, "reader: unexpected message %u", msg->id);
    for (int i = 0; i < SCANS_PER_TURN; i++)
        scan(ctx, &g_lists[nd_ctx_rand(ctx) % LISTS], "reader actor");
    if (!writers_done())
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_SCAN));
    else
        atomic_fetch_add_explicit(&g_readers_done, 1, memory_order_release);
}

static const nd_actor_type_t reader_type = {
    .name = "stress_reader",
    .size = sizeof(reader_t),
    .dispatch = reader_dispatch,
};

/* ---- threads ---- */

typedef struct thread_arg {
    nd_pool_t *pool;
    uint64_t writes;
} thread_arg_t;

static void *
writer_thread_main(void *arg)
{
    thread_arg_t *ta = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(ta->pool);
    uint64_t scans_seen = 0;
    for (uint64_t i = 0; i < ta->writes; i++) {
        write_step(ctx, &g_lists[1], nd_ctx_rand(ctx));
        nd_epoch_poll(ctx);
        if (i % 16384 == 16383)
            nd_epoch_barrier(ctx->epoch); /* waits for every reader, then frees our retirees */
        if (i % 256 == 255) {
            /* Flow control, not timing: a few traversals per batch of writes, whatever the
             * relative speed of this thread and the workers. */
            while (atomic_load_explicit(&g_scans, memory_order_relaxed) < scans_seen + 4)
                sched_yield();
            scans_seen = atomic_load_explicit(&g_scans, memory_order_relaxed);
        }
    }
    /* release: pairs with the acquire in writers_done(). */
    atomic_fetch_add_explicit(&g_writers_done, 1, memory_order_release);
    nd_ctx_external_free(ctx); /* runs a barrier: our remaining retirees are freed here */
    return NULL;
}

static void *
reader_thread_main(void *arg)
{
    thread_arg_t *ta = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(ta->pool);
    while (!writers_done()) {
        scan(ctx, &g_lists[nd_ctx_rand(ctx) % LISTS], "reader thread");
        if (nd_ctx_rand(ctx) % 16 == 0)
            sched_yield();
    }
    atomic_fetch_add_explicit(&g_readers_done, 1, memory_order_release);
    nd_ctx_external_free(ctx);
    return NULL;
}

/* ---- main ---- */

static _Atomic int g_all_done;

static void *
done_watcher(void *arg)
{
    (void)arg;
    while (atomic_load_explicit(&g_readers_done, memory_order_acquire) < READER_ACTORS + 1 ||
           !writers_done())
        stress_sleep_us(1000);
    /* release: pairs with the acquire in stress_wait(). */
    atomic_store_explicit(&g_all_done, 1, memory_order_release);
    return NULL;
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    double t0 = stress_now_s();
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint64_t writes = stress_scaled(250000, f);

    for (int i = 0; i < LISTS; i++) {
        g_lists[i].head.canary = g_lists[i].head.canary2 = CANARY_LIVE;
        atomic_init(&g_lists[i].head.next, NULL);
    }

    nd_pool_t *pool = nd_pool_new(WORKERS);
    nd_pool_start(pool);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);

    writer_t *w = (writer_t *)nd_actor_spawn(ctx, &writer_type);
    w->list = &g_lists[0];
    w->left = writes;
    reader_t *readers[READER_ACTORS];
    for (int i = 0; i < READER_ACTORS; i++)
        readers[i] = (reader_t *)nd_actor_spawn(ctx, &reader_type);

    thread_arg_t ta = {.pool = pool, .writes = writes};
    pthread_t wt, rt, watcher;
    pthread_create(&wt, NULL, writer_thread_main, &ta);
    pthread_create(&rt, NULL, reader_thread_main, &ta);
    nd_actor_send(ctx, &w->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_WRITE));
    for (int i = 0; i < READER_ACTORS; i++)
        nd_actor_send(ctx, &readers[i]->base, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_SCAN));

    pthread_create(&watcher, NULL, done_watcher, NULL);
    stress_wait("epoch", &g_all_done, &g_progress);
    pthread_join(watcher, NULL);
    pthread_join(wt, NULL);
    pthread_join(rt, NULL);

    nd_actor_close(ctx, &w->base);
    nd_actor_unref(ctx, &w->base);
    for (int i = 0; i < READER_ACTORS; i++) {
        nd_actor_close(ctx, &readers[i]->base);
        nd_actor_unref(ctx, &readers[i]->base);
    }
    nd_pool_shutdown(pool);
    STRESS_CHECK(nd_pool_live_actors(pool) == 0, "%zu actors live after shutdown",
                 nd_pool_live_actors(pool));
    uint64_t freed_before_end = atomic_load(&g_freed);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool); /* runs every destructor still pending on the workers' records */

    /* Nothing reads any more: the nodes still linked are freed directly. */
    uint64_t linked = 0;
    for (int i = 0; i < LISTS; i++) {
        enode_t *n = atomic_load_explicit(&g_lists[i].head.next, memory_order_relaxed);
        while (n != NULL) {
            enode_t *next = atomic_load_explicit(&n->next, memory_order_relaxed);
            STRESS_CHECK(n->canary == CANARY_LIVE, "linked node %p was destroyed", (void *)n);
            nd_free(n);
            linked++;
            n = next;
        }
    }

    uint64_t allocated = atomic_load(&g_allocated), retired = atomic_load(&g_retired);
    uint64_t freed = atomic_load(&g_freed), scans = atomic_load(&g_scans);
    printf("epoch: %llu writes, %llu scans (%llu nodes checked), %llu retired, %llu freed "
           "(%llu while running), %llu still linked\n",
           (unsigned long long)atomic_load(&g_writes), (unsigned long long)scans,
           (unsigned long long)atomic_load(&g_nodes_seen), (unsigned long long)retired,
           (unsigned long long)freed, (unsigned long long)freed_before_end,
           (unsigned long long)linked);
    STRESS_CHECK(retired == freed, "%llu nodes retired but %llu destroyed",
                 (unsigned long long)retired, (unsigned long long)freed);
    STRESS_CHECK(allocated == freed + linked, "%llu nodes allocated, %llu destroyed + %llu linked",
                 (unsigned long long)allocated, (unsigned long long)freed,
                 (unsigned long long)linked);
    STRESS_CHECK(scans > 0 && retired > 0, "nothing was exercised");
    printf("stress_epoch_reclaim: OK (%.1f s)\n", stress_now_s() - t0);
    return 0;
}
