/* The per-connection L1 match cache: hit, miss, invalidation by generation, eviction. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "actors/pool.h"
#include "subj/slcache.h"

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

TestSuite(slcache, .init = setup, .fini = teardown);

static nd_sub_t *
add(nd_sl_t *sl, const char *subject, const char *queue)
{
    nd_sub_t *s =
        nd_sub_new(ctx, NULL, subject, strlen(subject), queue, queue ? strlen(queue) : 0, "1", 1);
    cr_assert(nd_sl_insert(ctx, sl, s));
    return s;
}

static void
unref_cb(nd_ctx_t *c, nd_sub_t *s, void *arg)
{
    (void)arg;
    nd_sub_unref(c, s);
}

static size_t
members(const nd_sl_result_t *r)
{
    size_t c = 0;
    for (uint32_t k = 0; k < r->npvecs; k++)
        for (uint32_t i = 0; i < nd_sl_vec_len(r->pvecs[k]); i++)
            c += nd_sl_vec_get(r->pvecs[k], i) != NULL;
    return c;
}

Test(slcache, hit_and_miss)
{
    nd_sl_t *sl = nd_sl_new();
    add(sl, "foo.bar", NULL);
    add(sl, "foo.*", NULL);
    add(sl, "foo.>", "q");
    nd_slcache_t c;
    nd_slcache_init(&c);
    nd_sl_result_t scratch;
    nd_sl_result_init(&scratch);

    nd_epoch_enter(ctx);
    const nd_sl_result_t *r1 = nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch);
    cr_expect_eq(c.misses, 1);
    cr_expect_eq(c.hits, 0);
    cr_expect_eq(members(r1), 2);
    cr_expect_eq(r1->nqgroups, 1);
    const nd_sl_result_t *r2 = nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch);
    cr_expect_eq(c.hits, 1);
    cr_expect_eq(r2, r1, "a hit returns the cached entry");
    cr_expect_eq(members(r2), 2);
    cr_expect_eq(r2->nqgroups, 1);
    cr_expect_eq(r2->qgroups[0].name_len, 1);
    cr_expect_eq(r2->qgroups[0].name[0], 'q');
    /* A different subject misses, even one that collides on length. */
    const nd_sl_result_t *r3 = nd_slcache_match(ctx, &c, sl, "foo.baz", 7, &scratch);
    cr_expect_eq(c.misses, 2);
    cr_expect_eq(members(r3), 1);
    /* Subjects that match nothing are cached too. */
    nd_slcache_match(ctx, &c, sl, "nope", 4, &scratch);
    const nd_sl_result_t *r4 = nd_slcache_match(ctx, &c, sl, "nope", 4, &scratch);
    cr_expect(nd_sl_result_empty(r4));
    cr_expect_eq(c.hits, 2);
    cr_expect_eq(nd_slcache_count(&c), 3);
    /* The low-level lookup only answers for the current generation. */
    uint32_t h = nd_slcache_hash("foo.bar", 7);
    cr_expect_eq(nd_slcache_lookup(&c, nd_sl_generation(sl), "foo.bar", 7, h), r1);
    cr_expect_null(nd_slcache_lookup(&c, nd_sl_generation(sl) + 1, "foo.bar", 7, h));
    cr_expect_null(
        nd_slcache_lookup(&c, nd_sl_generation(sl), "foo.bax", 7, nd_slcache_hash("foo.bax", 7)));
    nd_epoch_exit(ctx);

    nd_slcache_fini(&c);
    nd_sl_result_fini(&scratch);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(slcache, invalidated_by_generation)
{
    nd_sl_t *sl = nd_sl_new();
    nd_sub_t *a = add(sl, "foo.bar", NULL);
    nd_slcache_t c;
    nd_slcache_init(&c);
    nd_sl_result_t scratch;
    nd_sl_result_init(&scratch);

    nd_epoch_enter(ctx);
    cr_expect_eq(members(nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch)), 1);
    nd_epoch_exit(ctx);

    /* An insert elsewhere bumps the generation: the next lookup must miss and see the new sub. */
    nd_sub_t *b = add(sl, "*.bar", NULL);
    nd_epoch_enter(ctx);
    uint64_t misses = c.misses;
    cr_expect_eq(members(nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch)), 2);
    cr_expect_eq(c.misses, misses + 1);
    cr_expect_eq(members(nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch)), 2);
    cr_expect_eq(c.misses, misses + 1);
    nd_epoch_exit(ctx);

    /* A removal too; the stale entry is refreshed in place (the count does not grow). */
    cr_assert(nd_sl_remove(ctx, sl, a));
    nd_sub_unref(ctx, a);
    cr_assert(nd_sl_remove(ctx, sl, b));
    nd_sub_unref(ctx, b);
    nd_epoch_enter(ctx);
    const nd_sl_result_t *r = nd_slcache_match(ctx, &c, sl, "foo.bar", 7, &scratch);
    cr_expect(nd_sl_result_empty(r));
    cr_expect_eq(c.misses, misses + 2);
    cr_expect_eq(nd_slcache_count(&c), 1);
    nd_epoch_exit(ctx);

    /* Another sublist empties the cache first. */
    nd_sl_t *other = nd_sl_new();
    nd_epoch_enter(ctx);
    nd_slcache_match(ctx, &c, other, "foo.bar", 7, &scratch);
    cr_expect_eq(nd_slcache_count(&c), 1);
    cr_expect_eq(c.sl, other);
    nd_epoch_exit(ctx);

    nd_slcache_fini(&c);
    nd_sl_result_fini(&scratch);
    nd_sl_free(ctx, other, unref_cb, NULL);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(slcache, bounded_with_eviction)
{
    nd_sl_t *sl = nd_sl_new();
    add(sl, "s.>", NULL);
    nd_slcache_t c;
    nd_slcache_init(&c);
    nd_sl_result_t scratch;
    nd_sl_result_init(&scratch);
    char buf[32];
    enum { N = 5000 };
    nd_epoch_enter(ctx);
    for (int i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof(buf), "s.%d", i);
        const nd_sl_result_t *r = nd_slcache_match(ctx, &c, sl, buf, (size_t)n, &scratch);
        cr_assert_eq(members(r), 1);
        cr_assert_leq(nd_slcache_count(&c), ND_SLCACHE_MAX);
    }
    cr_expect_eq(c.misses, N);
    cr_expect_gt(nd_slcache_count(&c), ND_SLCACHE_MAX / 2, "the cache fills up: %u",
                 nd_slcache_count(&c));
    /* The most recent subject is still there; not all old ones can be. */
    int n = snprintf(buf, sizeof(buf), "s.%d", N - 1);
    nd_slcache_match(ctx, &c, sl, buf, (size_t)n, &scratch);
    cr_expect_eq(c.hits, 1);
    uint64_t hits = c.hits;
    for (int i = 0; i < N; i++) {
        n = snprintf(buf, sizeof(buf), "s.%d", i);
        cr_assert_eq(members(nd_slcache_match(ctx, &c, sl, buf, (size_t)n, &scratch)), 1);
    }
    cr_expect_lt(c.hits - hits, (uint64_t)N, "some entries were evicted");
    nd_epoch_exit(ctx);
    nd_slcache_fini(&c);
    nd_sl_result_fini(&scratch);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}

Test(slcache, big_results_are_copied_whole)
{
    nd_sl_t *sl = nd_sl_new();
    /* 16 patterns of a.b.c.d: plain and queue subs; more vectors than the inline buffers. */
    char subj[16], q[8];
    for (int mask = 0; mask < 16; mask++) {
        char *p = subj;
        for (int t = 0; t < 4; t++) {
            if (t)
                *p++ = '.';
            *p++ = (mask >> t & 1) ? '*' : (char)('a' + t);
        }
        *p = '\0';
        snprintf(q, sizeof(q), "q%d", mask);
        add(sl, subj, NULL);
        add(sl, subj, q);
    }
    nd_slcache_t c;
    nd_slcache_init(&c);
    nd_sl_result_t scratch;
    nd_sl_result_init(&scratch);
    nd_epoch_enter(ctx);
    nd_slcache_match(ctx, &c, sl, "a.b.c.d", 7, &scratch);
    /* Scribble over the scratch result: the cached copy must not share its arrays. */
    nd_sl_match(ctx, sl, "x.y.z.w", 7, &scratch);
    const nd_sl_result_t *r = nd_slcache_match(ctx, &c, sl, "a.b.c.d", 7, &scratch);
    cr_expect_eq(c.hits, 1);
    cr_expect_eq(r->npvecs, 16);
    cr_expect_eq(members(r), 16);
    cr_expect_eq(r->nqgroups, 16);
    for (uint32_t g = 0; g < r->nqgroups; g++) {
        nd_sub_t *m = nd_sl_result_qpick(ctx, r, g);
        cr_assert_not_null(m);
        cr_expect(memcmp(m->queue, r->qgroups[g].name, r->qgroups[g].name_len) == 0);
    }
    nd_epoch_exit(ctx);
    nd_slcache_fini(&c);
    nd_sl_result_fini(&scratch);
    nd_sl_free(ctx, sl, unref_cb, NULL);
}
