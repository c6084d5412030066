/* bench_perms: ns per publish-permission decision, to choose how permission lists are matched.
 * For allow lists of N wildcard patterns ("svc.<i>.*") and of N literal subjects, it times a
 * probe that matches no entry (the worst case: every entry is looked at) with
 *  - the permission list itself (src/auth/perms.c: a token trie),
 *  - the account sublist holding the same patterns (nd_sl_match inside an epoch section),
 *  - the per-connection decision cache (a repeat subject: one hash probe).
 * Usage: bench_perms [iterations]   (single thread; numbers depend on the machine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actors/pool.h"
#include "subj/sublist.h"
#include "auth/perms.h"

static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void
unref_cb(nd_ctx_t *ctx, nd_sub_t *s, void *arg)
{
    (void)arg;
    nd_sub_unref(ctx, s);
}

static void
run(nd_ctx_t *ctx, int n, bool wild, long iters)
{
    nd_permset_t *p = nd_perms_new();
    nd_sl_t *sl = nd_sl_new();
    char buf[64];
    for (int i = 0; i < n; i++) {
        int l = snprintf(buf, sizeof buf, wild ? "svc.%d.*" : "svc.%d.x", i);
        if (nd_perms_add(p, ND_PERMS_PUB_ALLOW, buf, (size_t)l) != ND_PERMS_ADD_OK)
            abort();
        nd_sub_t *s = nd_sub_new(ctx, NULL, buf, (size_t)l, NULL, 0, "1", 1);
        if (!nd_sl_insert(ctx, sl, s))
            abort();
    }
    nd_perms_seal(p);
    const char *probe = "svc.none.x";
    size_t plen = strlen(probe);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    size_t sink = 0;
    double best_l = 1e18, best_s = 1e18, best_c = 1e18;
    for (int round = 0; round < 5; round++) {
        double t0 = now_ns();
        for (long i = 0; i < iters; i++)
            sink += nd_perms_pub_allowed(p, probe, plen);
        double t1 = now_ns();
        for (long i = 0; i < iters; i++) {
            nd_epoch_enter(ctx);
            sink += nd_sl_match(ctx, sl, probe, plen, &r);
            nd_epoch_exit(ctx);
        }
        double t2 = now_ns();
        for (long i = 0; i < iters; i++)
            sink += nd_perms_conn_pub(&c, probe, plen, 0);
        double t3 = now_ns();
        best_l = t1 - t0 < best_l ? t1 - t0 : best_l;
        best_s = t2 - t1 < best_s ? t2 - t1 : best_s;
        best_c = t3 - t2 < best_c ? t3 - t2 : best_c;
    }
    double it = (double)iters;
    printf("%5d %-8s | perms trie %8.1f | sublist %6.1f | conn cache %5.1f ns | %zu\n", n,
           wild ? "wildcard" : "literal", best_l / it, best_s / it, best_c / it, sink);
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);
    nd_sl_result_fini(&r);
    nd_sl_free(ctx, sl, unref_cb, NULL);
    nd_epoch_barrier(ctx->epoch);
}

int
main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    nd_pool_t *pool = nd_pool_new(1);
    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    static const int sizes[] = {1, 4, 16, 64, 256, 1024};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        run(ctx, sizes[i], true, sizes[i] >= 256 ? iters / 10 : iters);
        run(ctx, sizes[i], false, iters);
    }
    nd_ctx_external_free(ctx);
    nd_pool_free(pool);
    return 0;
}
