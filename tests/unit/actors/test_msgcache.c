/* Unit tests for natsd/msgcache.h: size classes, LIFO reuse within a class, magazines handed
 * between two thread caches through the shared depot, flushing, and the depot bound.
 *
 * Sanitizer builds compile the free lists out (every block comes from malloc, class BIG) so that
 * ASan sees each allocation; the reuse tests only make sense without that and are skipped there,
 * while a separate test checks the bypass itself.
 */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actors/msgcache.h"

/* Mirrors DEPOT_MAX in src/actors/msgcache.c: full magazines the depot keeps per class. */
#define DEPOT_BOUND 256

#ifdef ND_SANITIZED
#define SKIP_IF_SANITIZED() cr_skip_test("the free lists are compiled out in sanitizer builds")
#else
#define SKIP_IF_SANITIZED() ((void)0)
#endif

static uint8_t
expected_class(size_t size)
{
#ifdef ND_SANITIZED
    (void)size;
    return ND_MSGCACHE_BIG;
#else
    static const size_t class_max[ND_MSGCACHE_CLASSES] = {64, 128, 256, 512};
    for (uint8_t k = 0; k < ND_MSGCACHE_CLASSES; k++)
        if (size <= class_max[k])
            return k;
    return ND_MSGCACHE_BIG;
#endif
}

static bool
contains(void *const *set, size_t n, const void *p)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == p)
            return true;
    return false;
}

Test(msgcache, size_classes)
{
    nd_msgcache_depot_t d;
    nd_msgcache_t c;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&c, &d);
    static const size_t sizes[] = {1, 16, 64, 65, 128, 129, 256, 257, 512, 513, 4096, 1 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint8_t cls = 0x77;
        unsigned char *p = nd_msgcache_alloc(&c, sizes[i], &cls);
        cr_assert_eq(cls, expected_class(sizes[i]), "size %zu: class %u", sizes[i], cls);
        /* Every byte the caller asked for is usable (ASan checks the bound in its build). */
        memset(p, 0x5A, sizes[i]);
        nd_msgcache_release(&c, p, cls);
    }
    nd_msgcache_flush(&c);
    nd_msgcache_depot_destroy(&d);
}

Test(msgcache, sanitizer_bypass)
{
#ifndef ND_SANITIZED
    cr_skip_test("only sanitizer builds bypass the cache");
#else
    nd_msgcache_depot_t d;
    nd_msgcache_t c;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&c, &d);
    uint8_t cls;
    void *p = nd_msgcache_alloc(&c, 32, &cls);
    cr_assert_eq(cls, ND_MSGCACHE_BIG);
    nd_msgcache_release(&c, p, cls);
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++)
        cr_assert_eq(c.n[k], 0, "nothing is cached in sanitizer builds");
    nd_msgcache_flush(&c);
    nd_msgcache_depot_destroy(&d);
#endif
}

Test(msgcache, class_reuse_is_lifo)
{
    SKIP_IF_SANITIZED();
    nd_msgcache_depot_t d;
    nd_msgcache_t c;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&c, &d);
    uint8_t ca, cb, cc, cx;
    void *a = nd_msgcache_alloc(&c, 100, &ca);
    void *b = nd_msgcache_alloc(&c, 110, &cb);
    void *x = nd_msgcache_alloc(&c, 300, &cx);
    cr_assert_eq(ca, 1);
    cr_assert_eq(cb, 1);
    cr_assert_eq(cx, 3);
    cr_assert_neq(a, b);
    nd_msgcache_release(&c, a, ca);
    nd_msgcache_release(&c, b, cb);
    nd_msgcache_release(&c, x, cx);
    cr_assert_eq(c.n[1], 2);
    cr_assert_eq(c.n[3], 1);

    /* Another class never hands out these blocks. */
    void *small = nd_msgcache_alloc(&c, 10, &cc);
    cr_assert_eq(cc, 0);
    cr_assert(small != a && small != b && small != x);

    /* Any size of class 1 reuses class 1 blocks, newest first. */
    uint8_t k1, k2;
    void *r1 = nd_msgcache_alloc(&c, 65, &k1);
    void *r2 = nd_msgcache_alloc(&c, 128, &k2);
    cr_assert_eq(r1, b);
    cr_assert_eq(r2, a);
    cr_assert_eq(c.n[1], 0);
    void *rx = nd_msgcache_alloc(&c, 512, &cx);
    cr_assert_eq(rx, x);

    nd_msgcache_release(&c, small, cc);
    nd_msgcache_release(&c, r1, k1);
    nd_msgcache_release(&c, r2, k2);
    nd_msgcache_release(&c, rx, cx);
    nd_msgcache_flush(&c);
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++)
        cr_assert_eq(c.n[k], 0);
    nd_msgcache_depot_destroy(&d);
}

Test(msgcache, magazine_handoff_through_depot)
{
    SKIP_IF_SANITIZED();
    enum { K = 2, N = 2 * ND_MSGCACHE_MAG + 1 };
    nd_msgcache_depot_t d;
    nd_msgcache_t producer, consumer;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&producer, &d);
    nd_msgcache_init(&consumer, &d);

    /* One cache allocates N blocks of class K (all from malloc: the depot is empty). */
    void **blocks = calloc(N, sizeof(void *));
    for (size_t i = 0; i < N; i++) {
        uint8_t cls;
        blocks[i] = nd_msgcache_alloc(&producer, 200, &cls);
        cr_assert_eq(cls, K);
    }
    cr_assert_eq(d.count[K], 0);

    /* Releasing them on the other cache fills magazines; each full one goes to the depot when the
     * next release finds the stack full. */
    for (size_t i = 0; i < N; i++) {
        nd_msgcache_release(&consumer, blocks[i], K);
        size_t expect_mags = i / ND_MSGCACHE_MAG; /* magazines handed over so far */
        cr_assert_eq(d.count[K], expect_mags, "after %zu releases", i + 1);
    }
    cr_assert_eq(d.count[K], 2);
    cr_assert_eq(consumer.n[K], 1);
    cr_assert_eq(producer.n[K], 0);

    /* The producer now takes whole magazines back: newest magazine first, its blocks in LIFO
     * order, all of them blocks the consumer released. */
    void **again = calloc(N, sizeof(void *));
    for (size_t i = 0; i < 2 * ND_MSGCACHE_MAG; i++) {
        uint8_t cls;
        again[i] = nd_msgcache_alloc(&producer, 129, &cls);
        cr_assert_eq(cls, K);
        cr_assert(contains(blocks, N, again[i]), "block %zu did not come from the depot", i);
        cr_assert(!contains(again, i, again[i]), "block %zu handed out twice", i);
        cr_assert_eq(d.count[K], i < ND_MSGCACHE_MAG ? 1 : 0, "after %zu allocations", i + 1);
    }
    cr_assert_eq(again[0], blocks[2 * ND_MSGCACHE_MAG - 1]);
    cr_assert_eq(again[ND_MSGCACHE_MAG], blocks[ND_MSGCACHE_MAG - 1]);
    cr_assert_eq(producer.n[K], 0);

    /* Depot empty: the next block is fresh from malloc, not one still in use or cached. */
    uint8_t cls;
    again[N - 1] = nd_msgcache_alloc(&producer, 256, &cls);
    cr_assert(!contains(blocks, N, again[N - 1]));

    for (size_t i = 0; i < N; i++)
        nd_msgcache_release(&producer, again[i], K);
    nd_msgcache_flush(&producer);
    nd_msgcache_flush(&consumer);
    nd_msgcache_depot_destroy(&d);
    free(blocks);
    free(again);
}

Test(msgcache, flush_keeps_only_full_magazines)
{
    SKIP_IF_SANITIZED();
    nd_msgcache_depot_t d;
    nd_msgcache_t full, partial;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&full, &d);
    nd_msgcache_init(&partial, &d);

    for (int i = 0; i < ND_MSGCACHE_MAG; i++) {
        uint8_t cls;
        void *p = nd_msgcache_alloc(&full, 40, &cls);
        nd_msgcache_release(&full, p, cls);
        cr_assert_eq(full.n[0], 1); /* the same block comes back each time */
    }
    /* Fill a whole magazine with distinct blocks. */
    void *mag[ND_MSGCACHE_MAG];
    for (int i = 0; i < ND_MSGCACHE_MAG; i++) {
        uint8_t cls;
        mag[i] = nd_msgcache_alloc(&full, 40, &cls);
        cr_assert(!contains(mag, (size_t)i, mag[i]));
    }
    for (int i = 0; i < ND_MSGCACHE_MAG; i++)
        nd_msgcache_release(&full, mag[i], 0);
    cr_assert_eq(full.n[0], ND_MSGCACHE_MAG);
    nd_msgcache_flush(&full);
    cr_assert_eq(full.n[0], 0);
    cr_assert_eq(d.count[0], 1, "a full magazine is kept in the depot");

    void *part[5];
    for (int i = 0; i < 5; i++) {
        uint8_t cls;
        part[i] = nd_msgcache_alloc(&partial, 500, &cls);
        cr_assert_eq(cls, 3);
    }
    for (int i = 0; i < 5; i++)
        nd_msgcache_release(&partial, part[i], 3);
    cr_assert_eq(partial.n[3], 5);
    nd_msgcache_flush(&partial);
    cr_assert_eq(partial.n[3], 0);
    cr_assert_eq(d.count[3], 0, "a partial magazine is freed, not kept");
    cr_assert_eq(d.count[0], 1);

    /* The kept magazine serves the next allocation of its class, on another cache: its top
     * block is the last one released. */
    uint8_t cls;
    void *p = nd_msgcache_alloc(&partial, 1, &cls);
    cr_assert_eq(p, mag[ND_MSGCACHE_MAG - 1]);
    cr_assert_eq(d.count[0], 0);
    cr_assert_eq(partial.n[0], ND_MSGCACHE_MAG - 1);
    nd_msgcache_release(&partial, p, cls);
    nd_msgcache_flush(&partial);
    nd_msgcache_depot_destroy(&d);
}

Test(msgcache, depot_is_bounded)
{
    SKIP_IF_SANITIZED();
    enum { MAGS = DEPOT_BOUND + 3 };
    const size_t n = (size_t)MAGS * ND_MSGCACHE_MAG + 1;
    nd_msgcache_depot_t d;
    nd_msgcache_t c;
    nd_msgcache_depot_init(&d);
    nd_msgcache_init(&c, &d);
    void **blocks = malloc(n * sizeof(void *));
    for (size_t i = 0; i < n; i++)
        blocks[i] = malloc(64); /* class-0 blocks may come from plain malloc */
    for (size_t i = 0; i < n; i++) {
        nd_msgcache_release(&c, blocks[i], 0);
        cr_assert_leq(d.count[0], DEPOT_BOUND);
    }
    cr_assert_eq(d.count[0], DEPOT_BOUND);
    cr_assert_eq(c.n[0], 1);
    nd_msgcache_flush(&c);
    nd_msgcache_depot_destroy(&d);
    free(blocks);
}

Test(msgcache, no_depot_frees_full_magazines)
{
    nd_msgcache_t c;
    nd_msgcache_init(&c, NULL);
    enum { N = 3 * ND_MSGCACHE_MAG + 7 };
    void **blocks = malloc(N * sizeof(void *));
    uint8_t *cls = malloc(N);
    for (size_t i = 0; i < N; i++)
        blocks[i] = nd_msgcache_alloc(&c, 64, &cls[i]);
    for (size_t i = 0; i < N; i++) {
        nd_msgcache_release(&c, blocks[i], cls[i]);
        cr_assert_leq(c.n[0], ND_MSGCACHE_MAG);
    }
#ifndef ND_SANITIZED
    cr_assert_eq(c.n[0], 7); /* 3 full magazines went back to malloc, 7 blocks kept */
#endif
    nd_msgcache_flush(&c);
    cr_assert_eq(c.n[0], 0);
    free(blocks);
    free(cls);
}

/* ---- two threads passing blocks one way, as a sender and a receiver worker do ---- */

#define XFER_N    100000
#define XFER_RING 1024

typedef struct xfer {
    nd_msgcache_depot_t depot;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    void *ring[XFER_RING];
    uint8_t cls[XFER_RING];
    size_t head, tail; /* under lock */
    size_t bad;        /* receiver only */
} xfer_t;

static void *
xfer_producer(void *arg)
{
    xfer_t *x = arg;
    nd_msgcache_t c;
    nd_msgcache_init(&c, &x->depot);
    for (size_t i = 0; i < XFER_N; i++) {
        uint8_t cls;
        size_t size = 16 + (i % 4) * 100; /* classes 0..3 */
        uint32_t *p = nd_msgcache_alloc(&c, size, &cls);
        p[0] = (uint32_t)i;
        p[1] = (uint32_t)size;
        pthread_mutex_lock(&x->lock);
        while (x->tail - x->head == XFER_RING)
            pthread_cond_wait(&x->cond, &x->lock);
        x->ring[x->tail % XFER_RING] = p;
        x->cls[x->tail % XFER_RING] = cls;
        x->tail++;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->lock);
    }
    nd_msgcache_flush(&c);
    return NULL;
}

Test(msgcache, cross_thread_release)
{
    xfer_t *x = calloc(1, sizeof(*x));
    nd_msgcache_depot_init(&x->depot);
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->cond, NULL);
    nd_msgcache_t c;
    nd_msgcache_init(&c, &x->depot);

    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, xfer_producer, x), 0);
    for (size_t i = 0; i < XFER_N; i++) {
        pthread_mutex_lock(&x->lock);
        while (x->tail == x->head)
            pthread_cond_wait(&x->cond, &x->lock);
        uint32_t *p = x->ring[x->head % XFER_RING];
        uint8_t cls = x->cls[x->head % XFER_RING];
        x->head++;
        pthread_cond_broadcast(&x->cond);
        pthread_mutex_unlock(&x->lock);
        if (p[0] != (uint32_t)i || p[1] != 16 + (i % 4) * 100 ||
            cls != expected_class(16 + (i % 4) * 100))
            x->bad++;
        nd_msgcache_release(&c, p, cls);
    }
    pthread_join(th, NULL);
    cr_assert_eq(x->bad, 0);
    nd_msgcache_flush(&c);
    nd_msgcache_depot_destroy(&x->depot);
    pthread_mutex_destroy(&x->lock);
    pthread_cond_destroy(&x->cond);
    free(x);
}
