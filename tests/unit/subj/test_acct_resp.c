/* Service-import response routes (src/subj/acct_resp.c): the `_R_` subject's shape, a singleton
 * route taken once, a stream route taken many times, expiry at the threshold (a route that has
 * expired is never handed out; expired routes are swept by later insertions), growth past many
 * routes, and that everything is freed (ASan). Expiry is checked with a threshold of 1 ns (past
 * by the lookup or after a 2 ms pause) and of one hour (never reached), so nothing depends on the
 * machine's speed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "subj/account.h"
#include "actors/pool.h"
#include "subj/acct_resp.h"

static nd_pool_t *pool;
static nd_ctx_t *ctx;
static nd_acct_t *imp;

static void
setup(void)
{
    pool = nd_pool_new(1);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
    imp = nd_acct_new(ctx, "B", 1);
}

static void
teardown(void)
{
    nd_actor_unref(ctx, &imp->actor);
    nd_ctx_external_free(ctx);
    nd_pool_shutdown(pool);
    nd_pool_free(pool);
}

TestSuite(acct_resp, .init = setup, .fini = teardown, .timeout = 60);

#define HOUR (3600LL * 1000000000LL)

static bool
take(nd_acct_resp_t *t, const char *subj, const char *want_reply)
{
    char *reply = NULL;
    size_t rlen = 0;
    nd_acct_t *a = nd_acct_resp_take(t, subj, ND_ACCT_RESP_SUBJ_LEN, &reply, &rlen);
    if (a == NULL)
        return false;
    cr_assert_eq(a, imp);
    cr_assert_eq(rlen, strlen(want_reply));
    cr_assert_str_eq(reply, want_reply);
    nd_free(reply);
    return true;
}

Test(acct_resp, singleton_taken_once)
{
    nd_acct_resp_t *t = nd_acct_resp_new("A");
    char subj[ND_ACCT_RESP_SUBJ_LEN + 1] = {0};
    nd_acct_resp_add(ctx, t, subj, imp, "_INBOX.x", 8, true, HOUR);
    cr_assert(strncmp(subj, "_R_.", 4) == 0);
    cr_assert_eq(subj[14], '.');
    for (int i = 4; i < ND_ACCT_RESP_SUBJ_LEN; i++)
        cr_assert(i == 14 || (subj[i] != '.' && subj[i] != '*' && subj[i] != '>' && subj[i] > ' '));
    cr_assert(take(t, subj, "_INBOX.x"));
    cr_assert(!take(t, subj, "_INBOX.x"));
    cr_assert_eq(nd_acct_resp_count(t), 0);
    /* Wrong length or unknown subjects find nothing. */
    char *reply = NULL;
    size_t rlen;
    cr_assert_null(nd_acct_resp_take(t, "_R_.x", 5, &reply, &rlen));
    nd_acct_resp_free(t);
}

Test(acct_resp, stream_taken_many_times)
{
    nd_acct_resp_t *t = nd_acct_resp_new("A");
    char subj[ND_ACCT_RESP_SUBJ_LEN + 1] = {0};
    nd_acct_resp_add(ctx, t, subj, imp, "r", 1, false, HOUR);
    for (int i = 0; i < 5; i++)
        cr_assert(take(t, subj, "r"));
    cr_assert_eq(nd_acct_resp_count(t), 1);
    nd_acct_resp_free(t); /* frees the live route */
}

Test(acct_resp, expired_never_handed_out)
{
    nd_acct_resp_t *t = nd_acct_resp_new("A");
    char s1[ND_ACCT_RESP_SUBJ_LEN + 1] = {0}, s2[ND_ACCT_RESP_SUBJ_LEN + 1] = {0};
    nd_acct_resp_add(ctx, t, s1, imp, "r1", 2, false, 1);
    cr_assert(!take(t, s1, "r1"));
    cr_assert_eq(nd_acct_resp_count(t), 0, "an expired route found by a lookup is removed");
    /* Expired routes nobody asks for are swept by insertions (the 1 ns threshold makes every
     * insertion sweep): after a pause in which the clock surely moved on, the next insertion
     * leaves only itself. */
    for (int i = 0; i < 100; i++)
        nd_acct_resp_add(ctx, t, s2, imp, "r2", 2, true, 1);
    usleep(2000);
    nd_acct_resp_add(ctx, t, s2, imp, "r2", 2, true, HOUR);
    cr_assert_eq(nd_acct_resp_count(t), 1);
    cr_assert(take(t, s2, "r2"));
    nd_acct_resp_free(t);
}

Test(acct_resp, many_routes)
{
    nd_acct_resp_t *t = nd_acct_resp_new("A");
    enum { N = 5000 };
    static char subs[N][ND_ACCT_RESP_SUBJ_LEN + 1];
    for (int i = 0; i < N; i++) {
        char reply[32];
        int n = snprintf(reply, sizeof reply, "reply.%d", i);
        nd_acct_resp_add(ctx, t, subs[i], imp, reply, (size_t)n, true, HOUR);
    }
    cr_assert_eq(nd_acct_resp_count(t), N);
    for (int i = N - 1; i >= 0; i--) {
        char reply[32];
        snprintf(reply, sizeof reply, "reply.%d", i);
        cr_assert(take(t, subs[i], reply), "route %d", i);
    }
    cr_assert_eq(nd_acct_resp_count(t), 0);
    nd_acct_resp_free(t);
}
