/* stress_sublist: a writer actor inserts and removes subscriptions while reader actors match
 * concurrently (directly and through their own L1 caches), checking every result:
 *  - every sub returned is alive (its magic canary is intact: a premature free shows up here,
 *    and under ASan as a use-after-free), really matches the subject, and sits in the right
 *    queue group; no plain sub is returned twice;
 *  - every "stable" sub (inserted before the readers start and never removed) that matches the
 *    subject is returned, exactly once, whatever the writer is doing to the same vectors and
 *    maps (growth, compaction, tombstones, pruning);
 *  - a queue pick returns a member of the group, and a walk of the group (the fallback when the
 *    pick cannot take a message) offers every stable member exactly once.
 * Run it under TSan and ASan (scripts/test.sh --sanitize thread|address). Exits non-zero on the
 * first inconsistency. ND_STRESS_OPS overrides the number of writer operations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/pool.h"
#include "subj/slcache.h"
#include "subj/subject.h"
#include "subj/sublist.h"

#define WORKERS    4
#define READERS    3
#define STABLE     64
#define CHURN      768
#define BATCH      64 /* writer operations per message */
#define MATCHES    32 /* matches per reader message */
#define MSG_STEP   (ND_MSG_USER_BASE + 1)
#define STABLE_TAG ((uintptr_t)1 << 40)

#ifdef ND_SANITIZED
#define DEFAULT_OPS 60000
#else
#define DEFAULT_OPS 400000
#endif

static nd_sl_t *sl;
static nd_sub_t *stable[STABLE];
static _Atomic bool writer_done;
static _Atomic int readers_left = READERS;
static _Atomic uint64_t total_matches, total_hits, total_checked;
static long ops_target;

static const char *const toks[] = {"a", "b", "c", "d"};

static void
fail(const char *what, const char *subject, const nd_sub_t *s)
{
    fprintf(stderr, "stress_sublist: FAIL: %s (subject %s, sub %s q=%s)\n", what, subject,
            s ? s->subject : "-", s && s->queue ? s->queue : "-");
    exit(1);
}

static uint64_t
rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A random subscribe pattern of 1-4 tokens over {a,b,c,d,*}, maybe ending in `>`; one in four
 * is the hot subject "a.b", so one vector and one queue group see heavy churn. */
static int
rand_pattern(uint64_t *x, char *buf)
{
    if (rnd(x) % 4 == 0)
        return sprintf(buf, "a.b");
    int n = 1 + (int)(rnd(x) % 4), len = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            buf[len++] = '.';
        uint64_t r = rnd(x) % 6;
        if (i == n - 1 && r == 5)
            buf[len++] = '>';
        else
            buf[len++] = r >= 4 ? '*' : toks[r][0];
    }
    buf[len] = '\0';
    return len;
}

static int
rand_subject(uint64_t *x, char *buf)
{
    int n = 1 + (int)(rnd(x) % 4), len = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            buf[len++] = '.';
        buf[len++] = toks[rnd(x) % 4][0];
    }
    buf[len] = '\0';
    return len;
}

static nd_sub_t *
new_sub(nd_ctx_t *ctx, uint64_t *x, uintptr_t id)
{
    char pat[16], sid[32];
    int n = rand_pattern(x, pat);
    uint64_t q = rnd(x) % 3;
    const char *queue = q == 0 ? "q1" : q == 1 ? "q2" : NULL;
    int sn = snprintf(sid, sizeof(sid), "sid-%lu", (unsigned long)id);
    nd_sub_t *s = nd_sub_new(ctx, NULL, pat, (size_t)n, queue, queue ? 2 : 0, sid, (size_t)sn);
    s->conn_data = (void *)id;
    return s;
}

/* ---- writer ---- */

typedef struct writer {
    nd_actor_t actor;
    uint64_t rng;
    long ops;
    uintptr_t next_id;
    nd_sub_t *slots[CHURN];
} writer_t;

static void
writer_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    writer_t *w = (writer_t *)self;
    (void)msg;
    for (int i = 0; i < BATCH && w->ops < ops_target; i++, w->ops++) {
        uint32_t k = (uint32_t)(rnd(&w->rng) % CHURN);
        if (w->slots[k] == NULL) {
            nd_sub_t *s = new_sub(ctx, &w->rng, w->next_id++);
            if (!nd_sl_insert(ctx, sl, s))
                fail("insert refused", s->subject, s);
            w->slots[k] = s;
        } else {
            if (!nd_sl_remove(ctx, sl, w->slots[k]))
                fail("remove refused", w->slots[k]->subject, w->slots[k]);
            nd_sub_unref(ctx, w->slots[k]); /* retired: readers may still hold it */
            w->slots[k] = NULL;
        }
    }
    if (w->ops < ops_target)
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_STEP));
    else
        atomic_store_explicit(&writer_done, true, memory_order_release);
}

static const nd_actor_type_t writer_type = {
    .name = "stress-writer", .size = sizeof(writer_t), .dispatch = writer_dispatch};

/* ---- readers ---- */

typedef struct reader {
    nd_actor_t actor;
    uint64_t rng;
    nd_slcache_t cache;
    nd_sl_result_t scratch;
    nd_sub_t *seen[4 * CHURN + STABLE];
} reader_t;

static int
cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (nd_sub_t *const *)a, y = (uintptr_t) * (nd_sub_t *const *)b;
    return x < y ? -1 : x > y;
}

static void
check_sub(const nd_sub_t *s, const char *subj, size_t len, const char *queue, size_t qlen)
{
    if (s->magic != ND_SUB_MAGIC)
        fail("freed sub returned (canary)", subj, NULL);
    if (!nd_subj_valid_sub(s->subject, s->subject_len))
        fail("sub subject corrupt", subj, s);
    if (!nd_subj_match(s->subject, s->subject_len, subj, len))
        fail("returned sub does not match", subj, s);
    if ((queue == NULL) != (s->queue == NULL))
        fail("plain/queue mix-up", subj, s);
    if (queue != NULL && (s->queue_len != qlen || memcmp(s->queue, queue, qlen) != 0))
        fail("member in the wrong queue group", subj, s);
}

/* The queue group members nd_sl_result_qeach offers: each must be a live member. */
typedef struct offer_check {
    const char *subj, *queue;
    size_t len, qlen;
    const nd_sub_t *skip;
    uint32_t stable; /* stable members offered */
} offer_check_t;

static bool
offer_cb(nd_sub_t *s, void *arg)
{
    offer_check_t *o = arg;
    check_sub(s, o->subj, o->len, o->queue, o->qlen);
    if (s == o->skip)
        fail("queue walk offered the skipped member", o->subj, s);
    /* By address: a removed sub's other fields may already hold its retirement record. */
    for (int i = 0; i < STABLE; i++)
        if (stable[i] == s)
            o->stable++;
    return false; /* nobody takes it: the whole group is walked */
}

static void
check_result(reader_t *rd, nd_ctx_t *ctx, const nd_sl_result_t *r, const char *subj, size_t len)
{
    size_t nseen = 0;
    for (uint32_t k = 0; k < r->npvecs; k++) {
        const nd_sl_vec_t *v = r->pvecs[k];
        uint32_t n = nd_sl_vec_len(v);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *s = nd_sl_vec_get(v, i);
            if (s == NULL)
                continue;
            check_sub(s, subj, len, NULL, 0);
            if (nseen == sizeof(rd->seen) / sizeof(rd->seen[0]))
                fail("more plain subs than exist", subj, s);
            rd->seen[nseen++] = s;
        }
    }
    qsort(rd->seen, nseen, sizeof(rd->seen[0]), cmp_ptr);
    for (size_t i = 1; i < nseen; i++)
        if (rd->seen[i] == rd->seen[i - 1])
            fail("plain sub returned twice", subj, rd->seen[i]);
    for (uint32_t g = 0; g < r->nqgroups; g++) {
        const nd_sl_qres_t *q = &r->qgroups[g];
        for (uint32_t k = 1; k < r->nqgroups; k++)
            if (k != g && r->qgroups[k].name_len == q->name_len &&
                memcmp(r->qgroups[k].name, q->name, q->name_len) == 0)
                fail("queue group listed twice", subj, NULL);
        for (uint32_t k = 0; k < q->nvecs; k++) {
            const nd_sl_vec_t *v = r->qvecs[q->first + k];
            uint32_t n = nd_sl_vec_len(v);
            for (uint32_t i = 0; i < n; i++) {
                nd_sub_t *s = nd_sl_vec_get(v, i);
                if (s != NULL)
                    check_sub(s, subj, len, q->name, q->name_len);
            }
        }
        nd_sub_t *pick = nd_sl_result_qpick(ctx, r, g);
        if (pick != NULL)
            check_sub(pick, subj, len, q->name, q->name_len);
        /* The walk of a delivery whose pick could not take the message: every stable member
         * (never removed) of the group is offered once, whatever the writer does meanwhile. */
        offer_check_t oc = {subj, q->name, len, q->name_len, pick, 0};
        if (nd_sl_result_qeach(ctx, r, g, pick, offer_cb, &oc) != NULL)
            fail("queue walk took a member nobody took", subj, NULL);
        uint32_t want = 0;
        for (int i = 0; i < STABLE; i++)
            want += stable[i]->queue != NULL && stable[i] != pick &&
                    stable[i]->queue_len == q->name_len &&
                    memcmp(stable[i]->queue, q->name, q->name_len) == 0 &&
                    nd_subj_match(stable[i]->subject, stable[i]->subject_len, subj, len);
        if (oc.stable != want)
            fail("queue walk missed or repeated a stable member", subj, NULL);
    }
    /* Completeness for the stable subs. */
    for (int i = 0; i < STABLE; i++) {
        const nd_sub_t *s = stable[i];
        if (!nd_subj_match(s->subject, s->subject_len, subj, len))
            continue;
        bool found = false;
        if (s->queue == NULL) {
            found = bsearch(&s, rd->seen, nseen, sizeof(rd->seen[0]), cmp_ptr) != NULL;
        } else {
            for (uint32_t g = 0; g < r->nqgroups && !found; g++) {
                const nd_sl_qres_t *q = &r->qgroups[g];
                if (q->name_len != s->queue_len || memcmp(q->name, s->queue, q->name_len) != 0)
                    continue;
                for (uint32_t k = 0; k < q->nvecs && !found; k++) {
                    const nd_sl_vec_t *v = r->qvecs[q->first + k];
                    uint32_t n = nd_sl_vec_len(v);
                    for (uint32_t j = 0; j < n && !found; j++)
                        found = nd_sl_vec_get(v, j) == s;
                }
            }
        }
        if (!found)
            fail("a stable sub was missed", subj, s);
    }
    atomic_fetch_add_explicit(&total_checked, nseen, memory_order_relaxed);
}

static void
reader_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    reader_t *rd = (reader_t *)self;
    (void)msg;
    char subj[16];
    uint64_t hits0 = rd->cache.hits;
    for (int i = 0; i < MATCHES; i++) {
        size_t len = (size_t)rand_subject(&rd->rng, subj);
        nd_epoch_enter(ctx);
        const nd_sl_result_t *r;
        if (i & 1) {
            r = nd_slcache_match(ctx, &rd->cache, sl, subj, len, &rd->scratch);
        } else {
            nd_sl_match(ctx, sl, subj, len, &rd->scratch);
            r = &rd->scratch;
        }
        check_result(rd, ctx, r, subj, len);
        nd_epoch_exit(ctx);
    }
    atomic_fetch_add_explicit(&total_matches, MATCHES, memory_order_relaxed);
    atomic_fetch_add_explicit(&total_hits, rd->cache.hits - hits0, memory_order_relaxed);
    /* acquire: pairs with the writer's release of writer_done. */
    if (!atomic_load_explicit(&writer_done, memory_order_acquire)) {
        nd_actor_send(ctx, self, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_STEP));
        return;
    }
    nd_slcache_fini(&rd->cache);
    nd_sl_result_fini(&rd->scratch);
    /* release: pairs with main's acquire, publishing this reader's last checks. */
    atomic_fetch_sub_explicit(&readers_left, 1, memory_order_release);
}

static const nd_actor_type_t reader_type = {
    .name = "stress-reader", .size = sizeof(reader_t), .dispatch = reader_dispatch};

static void
unref_cb(nd_ctx_t *ctx, nd_sub_t *s, void *arg)
{
    (void)arg;
    nd_sub_unref(ctx, s);
}

int
main(void)
{
    const char *env = getenv("ND_STRESS_OPS");
    ops_target = env != NULL ? atol(env) : DEFAULT_OPS;
    nd_pool_t *pool = nd_pool_new(WORKERS);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    sl = nd_sl_new();
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < STABLE; i++) {
        stable[i] = new_sub(ctx, &x, STABLE_TAG | (uintptr_t)i);
        if (!nd_sl_insert(ctx, sl, stable[i]))
            fail("stable insert", stable[i]->subject, stable[i]);
    }
    nd_pool_start(pool);

    writer_t *w = (writer_t *)nd_actor_spawn(ctx, &writer_type);
    w->rng = 0x2545F4914F6CDD1Dull;
    reader_t *rd[READERS];
    for (int i = 0; i < READERS; i++) {
        rd[i] = (reader_t *)nd_actor_spawn(ctx, &reader_type);
        rd[i]->rng = 0x1234567ull * (uint64_t)(i + 1);
        nd_slcache_init(&rd[i]->cache);
        nd_sl_result_init(&rd[i]->scratch);
    }
    /* The sends publish the stable inserts and the actors' initial state to the workers. */
    nd_actor_send(ctx, &w->actor, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_STEP));
    for (int i = 0; i < READERS; i++)
        nd_actor_send(ctx, &rd[i]->actor, nd_msg_new(ctx, sizeof(nd_msg_t), MSG_STEP));

    /* Hang guard only (10 minutes); the run's length depends on ops, not on time. */
    for (int t = 0; atomic_load_explicit(&readers_left, memory_order_acquire) != 0; t++) {
        if (t == 600000) {
            fprintf(stderr, "stress_sublist: FAIL: hang\n");
            return 1;
        }
        usleep(1000);
    }

    /* The writer is done: check the final state from here, then tear down. */
    uint64_t churn_live = 0;
    for (int i = 0; i < CHURN; i++)
        churn_live += w->slots[i] != NULL;
    if (nd_sl_count(sl) != STABLE + churn_live) {
        fprintf(stderr, "stress_sublist: FAIL: count %lu, expected %lu\n",
                (unsigned long)nd_sl_count(sl), (unsigned long)(STABLE + churn_live));
        return 1;
    }
    printf("stress_sublist: %ld writer ops, %lu matches (%lu cache hits), %lu subs checked, "
           "%lu subs and %lu nodes at the end\n",
           ops_target, (unsigned long)atomic_load(&total_matches),
           (unsigned long)atomic_load(&total_hits), (unsigned long)atomic_load(&total_checked),
           (unsigned long)nd_sl_count(sl), (unsigned long)nd_sl_node_count(sl));
    for (int i = 0; i < CHURN; i++)
        w->slots[i] = NULL; /* the sublist's teardown below drops them */
    nd_sl_free(ctx, sl, unref_cb, NULL);
    nd_actor_unref(ctx, &w->actor);
    for (int i = 0; i < READERS; i++)
        nd_actor_unref(ctx, &rd[i]->actor);
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
    return 0;
}
