/* The sublist: literal, `*` and `>` matching, queue groups, removal and pruning, counts,
 * generations, and the big scale cases (timings printed, never asserted). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actors/pool.h"
#include "subj/sublist.h"
#include "subj/sltab.h"

static nd_pool_t *pool;
static nd_ctx_t *ctx;

static void
setup(void)
{
    pool = nd_pool_new(1);
    ctx = nd_ctx_external_new(pool);
}

static void
teardown(void)
{
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
}

TestSuite(sl, .init = setup, .fini = teardown);

static nd_sub_t *
mk(const char *subject, const char *queue, uintptr_t id)
{
    nd_sub_t *s =
        nd_sub_new(ctx, NULL, subject, strlen(subject), queue, queue ? strlen(queue) : 0, "1", 1);
    s->conn_data = (void *)id;
    return s;
}

static nd_sub_t *
add(nd_sl_t *sl, const char *subject, const char *queue, uintptr_t id)
{
    nd_sub_t *s = mk(subject, queue, id);
    cr_assert(nd_sl_insert(ctx, sl, s), "insert %s", subject);
    return s;
}

static void
drop(nd_sl_t *sl, nd_sub_t *s)
{
    cr_assert(nd_sl_remove(ctx, sl, s), "remove %s", s->subject);
    nd_sub_unref(ctx, s);
}

static void
unref_cb(nd_ctx_t *c, nd_sub_t *s, void *arg)
{
    size_t *n = arg;
    if (n != NULL)
        (*n)++;
    nd_sub_unref(c, s);
}

/* Sum of the ids of the plain subs matched (ids are distinct powers of two in small tests). */
static uintptr_t
psum(nd_sl_t *sl, const char *subject, nd_sl_result_t *r)
{
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, sl, subject, strlen(subject), r);
    uintptr_t sum = 0;
    for (uint32_t k = 0; k < r->npvecs; k++) {
        uint32_t n = nd_sl_vec_len(r->pvecs[k]);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *s = nd_sl_vec_get(r->pvecs[k], i);
            if (s != NULL)
                sum += (uintptr_t)s->conn_data;
        }
    }
    nd_epoch_exit(ctx);
    return sum;
}

static size_t
pcount(const nd_sl_result_t *r)
{
    size_t c = 0;
    for (uint32_t k = 0; k < r->npvecs; k++) {
        uint32_t n = nd_sl_vec_len(r->pvecs[k]);
        for (uint32_t i = 0; i < n; i++)
            c += nd_sl_vec_get(r->pvecs[k], i) != NULL;
    }
    return c;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

Test(sl, literal_match)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_sub_t *a = add(sl, "foo.bar", NULL, 1);
    nd_sub_t *b = add(sl, "foo.baz", NULL, 2);
    nd_sub_t *c = add(sl, "foo", NULL, 4);
    nd_sub_t *d = add(sl, "foo.bar", NULL, 8);
    cr_expect_eq(psum(sl, "foo.bar", &r), 1 + 8);
    cr_expect_eq(psum(sl, "foo.baz", &r), 2);
    cr_expect_eq(psum(sl, "foo", &r), 4);
    cr_expect_eq(psum(sl, "foo.bar.baz", &r), 0);
    cr_expect_eq(psum(sl, "bar", &r), 0);
    cr_expect_eq(psum(sl, "foo.ba", &r), 0);
    nd_epoch_enter(ctx);
    cr_expect(!nd_sl_match(ctx, sl, "nothing", 7, &r));
    cr_expect(nd_sl_result_empty(&r));
    nd_epoch_exit(ctx);
    drop(sl, a);
    drop(sl, b);
    drop(sl, c);
    drop(sl, d);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, pwc_matches_one_token)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    add(sl, "foo.*", NULL, 1);
    add(sl, "*.bar", NULL, 2);
    add(sl, "*", NULL, 4);
    add(sl, "foo.*.baz", NULL, 8);
    add(sl, "*.*.*", NULL, 16);
    add(sl, "foo.bar", NULL, 32);
    cr_expect_eq(psum(sl, "foo.bar", &r), 1 + 2 + 32);
    cr_expect_eq(psum(sl, "foo", &r), 4);
    cr_expect_eq(psum(sl, "x.bar", &r), 2);
    cr_expect_eq(psum(sl, "foo.x", &r), 1);
    cr_expect_eq(psum(sl, "foo.bar.baz", &r), 8 + 16);
    cr_expect_eq(psum(sl, "foo.bar.qux", &r), 16);
    cr_expect_eq(psum(sl, "a.b.c.d", &r), 0);
    nd_sl_result_fini(&r);
    size_t n = 0;
    nd_sl_free(ctx, sl, unref_cb, &n);
    cr_expect_eq(n, 6);
}

Test(sl, fwc_matches_one_or_more_tokens)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    add(sl, "foo.>", NULL, 1);
    add(sl, ">", NULL, 2);
    add(sl, "foo.bar.>", NULL, 4);
    add(sl, "*.>", NULL, 8);
    add(sl, "foo.*.>", NULL, 16);
    /* `>` never matches an empty remainder. */
    cr_expect_eq(psum(sl, "foo", &r), 2);
    cr_expect_eq(psum(sl, "foo.bar", &r), 1 + 2 + 8);
    cr_expect_eq(psum(sl, "foo.bar.baz", &r), 1 + 2 + 4 + 8 + 16);
    cr_expect_eq(psum(sl, "foo.x.y.z", &r), 1 + 2 + 8 + 16);
    cr_expect_eq(psum(sl, "bar", &r), 2);
    cr_expect_eq(psum(sl, "bar.baz", &r), 2 + 8);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(sl, wildcard_chars_inside_tokens_are_literal)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    add(sl, "foo*", NULL, 1);
    add(sl, "foo.>bar", NULL, 2);
    add(sl, "foo.*", NULL, 4);
    cr_expect_eq(psum(sl, "foo*", &r), 1);
    cr_expect_eq(psum(sl, "foox", &r), 0);
    cr_expect_eq(psum(sl, "foo.>bar", &r), 2 + 4);
    cr_expect_eq(psum(sl, "foo.bar", &r), 4);
    /* A publish subject is matched as given: a `*` token there is just a token. */
    cr_expect_eq(psum(sl, "foo.*", &r), 4);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(sl, empty_tokens_match_nothing)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    add(sl, ">", NULL, 1);
    add(sl, "foo.>", NULL, 2);
    add(sl, "*.*", NULL, 4);
    add(sl, "foo.*.>", NULL, 8);
    static const char *bad[] = {"",       ".",        "..",       ".foo",
                                "foo.",   "foo..bar", "foo.bar.", "foo.bar..baz",
                                "a.b.c.", "x..",      "*..*",     "foo.x..y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(psum(sl, bad[i], &r), 0, "\"%s\" matched", bad[i]);
        cr_expect(nd_sl_result_empty(&r));
    }
    cr_expect_eq(psum(sl, "foo.x.y", &r), 1 + 2 + 8);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(sl, invalid_inserts_are_rejected)
{
    nd_sl_t *sl = nd_sl_new();
    static const char *bad[] = {"",      ".",         "foo.",    ".foo",  "foo..bar",
                                ">.foo", "foo.>.bar", "foo bar", "foo\t", "a.\n"};
    uint64_t gen = nd_sl_generation(sl);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        nd_sub_t *s = mk(bad[i], NULL, 1);
        cr_expect(!nd_sl_insert(ctx, sl, s), "\"%s\" inserted", bad[i]);
        nd_sub_unref(ctx, s);
    }
    nd_sub_t *q = mk("foo", "bad queue", 1);
    cr_expect(!nd_sl_insert(ctx, sl, q));
    nd_sub_unref(ctx, q);
    cr_expect_eq(nd_sl_generation(sl), gen);
    cr_expect_eq(nd_sl_count(sl), 0);

    /* A sub can be in one sublist once. */
    nd_sl_t *other = nd_sl_new();
    nd_sub_t *s = add(sl, "foo", NULL, 1);
    cr_expect(!nd_sl_insert(ctx, sl, s));
    cr_expect(!nd_sl_insert(ctx, other, s));
    cr_expect(!nd_sl_remove(ctx, other, s));
    cr_expect_eq(nd_sl_count(sl), 1);
    drop(sl, s);
    cr_expect(!nd_sl_remove(ctx, sl, s = mk("foo", NULL, 1)));
    nd_sub_unref(ctx, s);
    nd_sl_free(ctx, other, NULL, NULL);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, counts_and_generation)
{
    nd_sl_t *sl = nd_sl_new();
    uint64_t g0 = nd_sl_generation(sl);
    nd_sub_t *a = add(sl, "a.b", NULL, 1);
    cr_expect_eq(nd_sl_generation(sl), g0 + 1);
    nd_sub_t *b = add(sl, "a.*", "q", 2);
    cr_expect_eq(nd_sl_generation(sl), g0 + 2);
    nd_sub_t *c = add(sl, "a.>", NULL, 3);
    cr_expect_eq(nd_sl_count(sl), 3);
    cr_expect_eq(nd_sl_generation(sl), g0 + 3);
    drop(sl, b);
    cr_expect_eq(nd_sl_count(sl), 2);
    cr_expect_eq(nd_sl_generation(sl), g0 + 4);
    nd_sub_t *batch[] = {a, c, NULL};
    bool removed[3];
    cr_expect_eq(nd_sl_remove_batch(ctx, sl, batch, 3, removed), 2);
    cr_expect(removed[0] && removed[1] && !removed[2]);
    cr_expect_eq(nd_sl_generation(sl), g0 + 5, "a batch bumps once");
    cr_expect_eq(nd_sl_count(sl), 0);
    cr_expect_eq(nd_sl_remove_batch(ctx, sl, batch, 2, NULL), 0);
    cr_expect_eq(nd_sl_generation(sl), g0 + 5, "an empty batch does not bump");
    nd_sub_unref(ctx, a);
    nd_sub_unref(ctx, c);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, removal_prunes_every_empty_node)
{
    nd_sl_t *sl = nd_sl_new();
    static const char *subjects[] = {"a",       "a.b",   "a.b.c", "a.*.c", "a.>",   "*.>",
                                     ">",       "x.y.z", "x.*",   "*.*.*", "a.b.c", "q.r.s.t",
                                     "q.r.s.u", "*",     "a.*",   "a.b.>", "x.y.*"};
    size_t n = sizeof(subjects) / sizeof(subjects[0]);
    nd_sub_t *subs[2 * sizeof(subjects) / sizeof(subjects[0])];
    for (size_t i = 0; i < n; i++) {
        subs[i] = add(sl, subjects[i], NULL, i);
        subs[n + i] = add(sl, subjects[i], (i & 1) ? "q1" : "q2", i);
    }
    cr_expect_eq(nd_sl_count(sl), 2 * n);
    cr_expect_gt(nd_sl_node_count(sl), 10);
    /* Remove in an order that empties leaves before and after their parents. */
    for (size_t i = 0; i < 2 * n; i += 2)
        drop(sl, subs[i]);
    for (size_t i = 1; i < 2 * n; i += 2)
        drop(sl, subs[i]);
    cr_expect_eq(nd_sl_count(sl), 0);
    cr_expect_eq(nd_sl_node_count(sl), 1, "only the root is left, got %lu",
                 (unsigned long)nd_sl_node_count(sl));
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    cr_expect_eq(psum(sl, "a.b.c", &r), 0);
    cr_expect(nd_sl_result_empty(&r));
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, queue_groups_merge_by_name)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_sub_t *q1a = add(sl, "foo.bar", "q1", 1);
    nd_sub_t *q1b = add(sl, "foo.*", "q1", 2);
    nd_sub_t *q2 = add(sl, "foo.bar", "q2", 4);
    nd_sub_t *q3 = add(sl, ">", "q3", 8);
    nd_sub_t *p = add(sl, "foo.bar", NULL, 16);
    nd_epoch_enter(ctx);
    cr_assert(nd_sl_match(ctx, sl, "foo.bar", 7, &r));
    cr_expect_eq(pcount(&r), 1);
    cr_expect_eq(r.nqgroups, 3);
    bool seen[3] = {false, false, false};
    for (uint32_t g = 0; g < r.nqgroups; g++) {
        const nd_sl_qres_t *q = &r.qgroups[g];
        if (q->name_len == 2 && memcmp(q->name, "q1", 2) == 0) {
            cr_expect_eq(q->nvecs, 2, "q1 merges the groups of foo.bar and foo.*");
            seen[0] = true;
            bool got_a = false, got_b = false;
            for (int i = 0; i < 200; i++) {
                nd_sub_t *m = nd_sl_result_qpick(ctx, &r, g);
                got_a |= m == q1a;
                got_b |= m == q1b;
                cr_assert(m == q1a || m == q1b);
            }
            cr_expect(got_a && got_b);
        } else if (q->name_len == 2 && memcmp(q->name, "q2", 2) == 0) {
            cr_expect_eq(nd_sl_result_qpick(ctx, &r, g), q2);
            seen[1] = true;
        } else if (q->name_len == 2 && memcmp(q->name, "q3", 2) == 0) {
            cr_expect_eq(nd_sl_result_qpick(ctx, &r, g), q3);
            seen[2] = true;
        }
    }
    cr_expect(seen[0] && seen[1] && seen[2]);
    /* foo.baz: q1 only through foo.*, q3 through >. */
    cr_assert(nd_sl_match(ctx, sl, "foo.baz", 7, &r));
    cr_expect_eq(r.nqgroups, 2);
    cr_expect_eq(pcount(&r), 0);
    nd_epoch_exit(ctx);
    drop(sl, q1a);
    drop(sl, q1b);
    drop(sl, q2);
    drop(sl, q3);
    drop(sl, p);
    cr_expect_eq(nd_sl_node_count(sl), 1);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, queue_pick_is_roughly_uniform)
{
    nd_sl_t *sl = nd_sl_new();
    enum { M = 8, PICKS = 80000 };
    for (int i = 0; i < M; i++)
        add(sl, "work", "pool", (uintptr_t)i);
    /* Punch holes so rejection sampling is exercised. */
    nd_sub_t *extra[M];
    for (int i = 0; i < M; i++)
        extra[i] = add(sl, "work", "pool", 100);
    for (int i = 0; i < M; i += 2)
        drop(sl, extra[i]);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    unsigned hits[M + 1] = {0};
    nd_epoch_enter(ctx);
    cr_assert(nd_sl_match(ctx, sl, "work", 4, &r));
    cr_assert_eq(r.nqgroups, 1);
    for (int i = 0; i < PICKS; i++) {
        nd_sub_t *s = nd_sl_result_qpick(ctx, &r, 0);
        cr_assert_not_null(s);
        uintptr_t id = (uintptr_t)s->conn_data;
        hits[id == 100 ? M : id]++;
    }
    nd_epoch_exit(ctx);
    /* 12 live members, each expected 1/12 of the picks: allow a wide band (not a timing test;
     * the chance of a false failure is astronomically small). */
    for (int i = 0; i < M; i++)
        cr_expect(hits[i] > PICKS / 12 / 2 && hits[i] < PICKS / 12 * 2, "member %d: %u", i,
                  hits[i]);
    cr_expect(hits[M] > (PICKS / 12) * 4 / 2 && hits[M] < (PICKS / 12) * 4 * 2);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

typedef struct offers {
    unsigned n[16];   /* offers per member id */
    uintptr_t take;   /* the id that takes, or 99: none */
    uintptr_t first;  /* the id offered first */
    unsigned total;
} offers_t;

static bool
offer_cb(nd_sub_t *s, void *arg)
{
    offers_t *o = arg;
    uintptr_t id = (uintptr_t)s->conn_data;
    if (o->total++ == 0)
        o->first = id;
    o->n[id]++;
    return id == o->take;
}

/* The fallback of a queue delivery (deliver.c): every member but the skipped one is offered
 * the message once, from a random start, until one takes it; members spread over several
 * vectors (a wildcard and a literal node) and holes left by removals are all covered. */
Test(sl, queue_each_offers_every_member_once)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sub_t *m[10];
    for (uintptr_t i = 0; i < 10; i++)
        m[i] = add(sl, i % 2 ? "job.*" : "job.run", "pool", i);
    drop(sl, m[4]);
    drop(sl, m[7]);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    cr_assert(nd_sl_match(ctx, sl, "job.run", 7, &r));
    cr_assert_eq(r.nqgroups, 1);
    cr_assert_eq(r.qgroups[0].nvecs, 2);
    bool first_seen[10] = {false};
    for (int round = 0; round < 400; round++) {
        offers_t o = {.take = 99};
        cr_assert_null(nd_sl_result_qeach(ctx, &r, 0, m[3], offer_cb, &o), "nobody takes it");
        cr_assert_eq(o.total, 7, "the 8 live members but the skipped one");
        for (int i = 0; i < 10; i++)
            cr_assert_eq(o.n[i], i == 3 || i == 4 || i == 7 ? 0u : 1u, "member %d", i);
        first_seen[o.first] = true;
        /* A taker ends the walk at once. */
        offers_t t = {.take = 8};
        cr_assert_eq(nd_sl_result_qeach(ctx, &r, 0, NULL, offer_cb, &t), m[8]);
        cr_assert_eq(t.n[8], 1u);
        cr_assert_leq(t.total, 8u);
    }
    for (int i = 0; i < 10; i++)
        cr_expect_eq(first_seen[i], i != 3 && i != 4 && i != 7, "random start at member %d", i);
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(sl, compaction_keeps_every_live_sub)
{
    nd_sl_t *sl = nd_sl_new();
    enum { N = 2000 };
    nd_sub_t **s = calloc(N, sizeof(*s));
    for (int i = 0; i < N; i++)
        s[i] = add(sl, "one.subject", (i % 3 == 0) ? "g" : NULL, (uintptr_t)i);
    /* Remove a scattered 90%: many compactions and trailing pops happen on the way. */
    uint64_t x = 88172645463325252ull;
    int left = N;
    while (left > N / 10) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int i = (int)(x % N);
        if (s[i] == NULL)
            continue;
        drop(sl, s[i]);
        s[i] = NULL;
        left--;
    }
    cr_expect_eq(nd_sl_count(sl), (uint64_t)left);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, sl, "one.subject", 11, &r);
    unsigned char *seen = calloc(N, 1);
    int got = 0;
    for (uint32_t k = 0; k < r.npvecs; k++)
        for (uint32_t i = 0; i < nd_sl_vec_len(r.pvecs[k]); i++) {
            nd_sub_t *m = nd_sl_vec_get(r.pvecs[k], i);
            if (m == NULL)
                continue;
            uintptr_t id = (uintptr_t)m->conn_data;
            cr_assert(s[id] == m && !seen[id], "stale or duplicate sub %lu", (unsigned long)id);
            seen[id] = 1;
            got++;
        }
    for (uint32_t g = 0; g < r.nqgroups; g++)
        for (uint32_t k = 0; k < r.qgroups[g].nvecs; k++) {
            const nd_sl_vec_t *v = r.qvecs[r.qgroups[g].first + k];
            for (uint32_t i = 0; i < nd_sl_vec_len(v); i++) {
                nd_sub_t *m = nd_sl_vec_get(v, i);
                if (m == NULL)
                    continue;
                uintptr_t id = (uintptr_t)m->conn_data;
                cr_assert(s[id] == m && !seen[id]);
                seen[id] = 1;
                got++;
            }
        }
    nd_epoch_exit(ctx);
    cr_expect_eq(got, left);
    /* The remaining subs are still removable one by one (their indices were kept right). */
    for (int i = 0; i < N; i++)
        if (s[i] != NULL)
            drop(sl, s[i]);
    cr_expect_eq(nd_sl_node_count(sl), 1);
    free(seen);
    free(s);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, removed_slot_reads_null_in_an_open_result)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sub_t *a = add(sl, "s", NULL, 1);
    nd_sub_t *b = add(sl, "s", NULL, 2);
    nd_sub_t *c = add(sl, "s", NULL, 4);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, sl, "s", 1, &r);
    cr_expect_eq(pcount(&r), 3);
    /* The writer acts in place while this reader's result is open (same thread here). */
    cr_assert(nd_sl_remove(ctx, sl, a));
    cr_expect_eq(pcount(&r), 2);
    nd_epoch_exit(ctx);
    nd_sub_unref(ctx, a);
    drop(sl, b);
    drop(sl, c);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

Test(sl, results_grow_beyond_inline_buffers)
{
    nd_sl_t *sl = nd_sl_new();
    char subj[64];
    /* 2^5 patterns match a.b.c.d.e (each token literal or `*`), each with a plain sub and a sub
     * in its own queue group plus one shared group. */
    int n = 0;
    for (int mask = 0; mask < 32; mask++) {
        char *p = subj;
        for (int t = 0; t < 5; t++) {
            if (t)
                *p++ = '.';
            *p++ = (mask >> t & 1) ? '*' : (char)('a' + t);
        }
        *p = '\0';
        char q[16];
        snprintf(q, sizeof(q), "q%d", mask);
        add(sl, subj, NULL, 1);
        add(sl, subj, q, 1);
        add(sl, subj, "shared", 1);
        n++;
    }
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    cr_assert(nd_sl_match(ctx, sl, "a.b.c.d.e", 9, &r));
    cr_expect_eq(r.npvecs, 32);
    cr_expect_eq(pcount(&r), 32);
    cr_expect_eq(r.nqgroups, 33);
    cr_expect_eq(r.nqvecs, 64);
    for (uint32_t g = 0; g < r.nqgroups; g++) {
        const nd_sl_qres_t *q = &r.qgroups[g];
        bool shared = q->name_len == 6 && memcmp(q->name, "shared", 6) == 0;
        cr_expect_eq(q->nvecs, shared ? 32u : 1u);
        nd_sub_t *m = nd_sl_result_qpick(ctx, &r, g);
        cr_assert_not_null(m);
        cr_expect(m->queue_len == q->name_len && memcmp(m->queue, q->name, q->name_len) == 0);
    }
    /* Reuse: a second match into the same result gives the same answer. */
    cr_assert(nd_sl_match(ctx, sl, "a.b.c.d.e", 9, &r));
    cr_expect_eq(r.npvecs, 32);
    cr_expect_eq(r.nqgroups, 33);
    cr_assert(nd_sl_match(ctx, sl, "a.x.c.d.e", 9, &r));
    cr_expect_eq(r.npvecs, 16);
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);
    size_t removed = 0;
    nd_sl_free(ctx, sl, unref_cb, &removed);
    cr_expect_eq(removed, 3u * (size_t)n);
}

Test(sl, fini_leaves_an_empty_usable_sublist)
{
    nd_sl_t sl;
    nd_sl_init(&sl);
    add(&sl, "a.b", NULL, 1);
    add(&sl, "a.*", "q", 2);
    uint64_t g = nd_sl_generation(&sl);
    size_t n = 0;
    nd_sl_fini(ctx, &sl, unref_cb, &n);
    cr_expect_eq(n, 2);
    cr_expect_gt(nd_sl_generation(&sl), g);
    cr_expect_eq(nd_sl_count(&sl), 0);
    cr_expect_eq(nd_sl_node_count(&sl), 0);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    cr_expect_eq(psum(&sl, "a.b", &r), 0);
    nd_sl_result_fini(&r);
}

/* ---- scale: each case must stay linear; times are printed for the report ---- */

enum { BIG = 100000 };

static void
scale_case(const char *name, const char *(*subject_of)(int i, char *buf), const char *queue,
           const char *probe, size_t expect_p, uint32_t expect_groups)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sub_t **s = malloc(BIG * sizeof(*s));
    char buf[64];
    double t0 = now_s();
    for (int i = 0; i < BIG; i++) {
        s[i] = mk(subject_of(i, buf), queue, (uintptr_t)i);
        cr_assert(nd_sl_insert(ctx, sl, s[i]));
    }
    double t1 = now_s();
    cr_expect_eq(nd_sl_count(sl), BIG);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, sl, probe, strlen(probe), &r);
    cr_expect_eq(pcount(&r), expect_p);
    cr_expect_eq(r.nqgroups, expect_groups);
    if (expect_groups != 0) {
        uint64_t total = 0;
        for (uint32_t k = 0; k < r.qgroups[0].nvecs; k++)
            total += nd_sl_vec_len(r.qvecs[r.qgroups[0].first + k]);
        cr_expect_eq(total, BIG);
        cr_expect_not_null(nd_sl_result_qpick(ctx, &r, 0));
    }
    nd_epoch_exit(ctx);
    double t2 = now_s();
    /* Remove from the front (the worst order for a vector: holes first, then compactions). */
    for (int i = 0; i < BIG; i++) {
        cr_assert(nd_sl_remove(ctx, sl, s[i]));
        nd_sub_unref(ctx, s[i]);
        if ((i & 4095) == 0)
            nd_epoch_barrier(ctx->epoch); /* keep the retire backlog small */
    }
    double t3 = now_s();
    cr_expect_eq(nd_sl_count(sl), 0);
    cr_expect_eq(nd_sl_node_count(sl), 1);
    fprintf(stderr, "sl scale %-28s insert %6.1f ms, match %6.2f ms, remove %6.1f ms\n", name,
            (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3);
    nd_sl_result_fini(&r);
    free(s);
    nd_sl_free(ctx, sl, NULL, NULL);
}

static const char *
same_subject(int i, char *buf)
{
    (void)i;
    (void)buf;
    return "orders.created";
}

static const char *
distinct_subject(int i, char *buf)
{
    snprintf(buf, 64, "orders.%d.created", i);
    return buf;
}

Test(sl, scale_100k_subs_on_one_subject, .timeout = 120)
{
    scale_case("100k on one subject", same_subject, NULL, "orders.created", BIG, 0);
}

Test(sl, scale_100k_distinct_subjects, .timeout = 120)
{
    scale_case("100k distinct subjects", distinct_subject, NULL, "orders.4242.created", 1, 0);
}

Test(sl, scale_100k_in_one_queue_group, .timeout = 120)
{
    scale_case("100k in one queue group", same_subject, "workers", "orders.created", 0, 1);
}

/* The reader hashes a token while scanning a whole subject (word at a time, overlapping loads
 * near the end); the writer hashes the token alone. Both must agree for every length and
 * position, and the scan must stop exactly at the separator. */
Test(sl, token_scan_agrees_with_token_hash)
{
    char tok[48], subj[160];
    for (int tl = 1; tl <= 40; tl++) {
        for (int i = 0; i < tl; i++)
            tok[i] = (char)('a' + (i * 7 + tl) % 26);
        uint32_t want = nd_sl_tok_hash(tok, (size_t)tl);
        for (int pre = 0; pre <= 17; pre++) {
            for (int post = 0; post <= 17; post++) {
                /* subject = [pre bytes "x"] [.] tok [.] [post bytes "y"] with empty parts left
                 * out together with their separator. */
                int n = 0;
                for (int i = 0; i < pre; i++)
                    subj[n++] = 'x';
                if (pre)
                    subj[n++] = '.';
                int at = n;
                memcpy(subj + n, tok, (size_t)tl);
                n += tl;
                if (post)
                    subj[n++] = '.';
                for (int i = 0; i < post; i++)
                    subj[n++] = 'y';
                uint32_t h;
                const char *q = nd_sl_tok_scan(subj + at, subj + n, subj, &h);
                cr_assert_eq(q, subj + at + tl, "scan end: tl %d pre %d post %d", tl, pre, post);
                cr_assert_eq(h, want, "hash: tl %d pre %d post %d", tl, pre, post);
            }
        }
    }
    uint32_t h;
    const char *s = "a..b";
    cr_expect_eq(nd_sl_tok_scan(s + 2, s + 4, s, &h), s + 2, "an empty token ends at once");
    cr_expect_eq(nd_sl_tok_scan(s + 4, s + 4, s, &h), s + 4);
}

Test(sl, long_tokens_match)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    char a[48], b[48], subj[128];
    for (int la = 1; la <= 20; la++) {
        for (int lb = 1; lb <= 20; lb += 3) {
            memset(a, 'k', (size_t)la);
            a[la] = '\0';
            memset(b, 'v', (size_t)lb);
            b[lb] = '\0';
            snprintf(subj, sizeof(subj), "%s.%s", a, b);
            nd_sub_t *s = add(sl, subj, NULL, 1);
            snprintf(subj, sizeof(subj), "%s.*", a);
            nd_sub_t *w = add(sl, subj, NULL, 2);
            snprintf(subj, sizeof(subj), "%s.%s", a, b);
            cr_assert_eq(psum(sl, subj, &r), 3, "%s", subj);
            snprintf(subj, sizeof(subj), "%s.%sz", a, b);
            cr_assert_eq(psum(sl, subj, &r), 2, "%s", subj);
            snprintf(subj, sizeof(subj), "%s.%s.c", a, b);
            cr_assert_eq(psum(sl, subj, &r), 0, "%s", subj);
            drop(sl, s);
            drop(sl, w);
        }
    }
    cr_expect_eq(nd_sl_node_count(sl), 1);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}

/* /subsz's figures: inserts, removes, walks and their fanout (plain subscriptions plus queue
 * groups); cache hits are counted by the caller (nd_sl_count_cache_hit). */
Test(sl, stats)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_sub_t *a = add(sl, "foo.*", NULL, 1);
    nd_sub_t *b = add(sl, "foo.bar", NULL, 2);
    nd_sub_t *c = add(sl, "foo.bar", "q", 4);
    nd_sub_t *d = add(sl, "foo.bar", "q", 8);
    drop(sl, d);
    nd_epoch_enter(ctx);
    cr_expect(nd_sl_match(ctx, sl, "foo.bar", 7, &r)); /* fanout 2 plain + 1 group */
    cr_expect(nd_sl_match(ctx, sl, "foo.x", 5, &r));   /* fanout 1 */
    cr_expect(!nd_sl_match(ctx, sl, "none", 4, &r));   /* fanout 0 */
    nd_epoch_exit(ctx);
    nd_sl_count_cache_hit(sl);
    nd_sl_stats_t st = {0};
    nd_sl_stats_add(sl, &st);
    cr_expect_eq(st.count, 3);
    cr_expect_eq(st.inserts, 4);
    cr_expect_eq(st.removes, 1);
    cr_expect_eq(st.walks, 3);
    cr_expect_eq(st.cache_hits, 1);
    cr_expect_eq(st.matches, 4);
    cr_expect_eq(st.fanout_max, 3);
    cr_expect_eq(st.fanout_sum, 4);
    /* Summed over several sublists (accounts); the maximum stays a maximum. */
    nd_sl_stats_add(sl, &st);
    cr_expect_eq(st.inserts, 8);
    cr_expect_eq(st.fanout_max, 3);
    drop(sl, a);
    drop(sl, b);
    drop(sl, c);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, NULL, NULL);
}
