/* The account actor: a sub is visible once its notify arrives; unsub; unsub_all; messages after
 * close; shutdown frees everything (ASan-clean); the interest it reports to routes and gateways. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "subj/account.h"
#include "subj/interest.h"
#include "actors/pool.h"

#define NOTIFY_ID (ND_MSG_USER_BASE + 7)

/* A stand-in for a connection actor: counts the notify messages it receives. */
typedef struct probe {
    nd_actor_t actor;
    _Atomic unsigned notified;
} probe_t;

static void
probe_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    (void)ctx;
    cr_assert_eq(msg->id, NOTIFY_ID);
    /* release: pairs with wait_notified's acquire, so the test thread sees what the account did
     * before notifying (the insert) as well. */
    atomic_fetch_add_explicit(&((probe_t *)self)->notified, 1, memory_order_release);
}

static const nd_actor_type_t probe_type = {
    .name = "probe",
    .size = sizeof(probe_t),
    .dispatch = probe_dispatch,
};

static nd_pool_t *pool;
static nd_ctx_t *ctx;

static void
setup(void)
{
    pool = nd_pool_new(2);
    nd_pool_start(pool);
    ctx = nd_ctx_external_new(pool);
}

/* Shuts everything down inside the test, so a failure is reported by the test itself: the
 * external ctx goes first (its barrier frees what it retired, dropping the probes' references),
 * then the pool closes every actor; every actor (and so every sub, which references its probe)
 * must be gone. Criterion does not fail a test for what LeakSanitizer reports after it. */
static void
finish(void)
{
    nd_ctx_external_free(ctx);
    ctx = NULL;
    nd_pool_shutdown(pool);
    cr_assert_eq(nd_pool_live_actors(pool), 0, "every actor (and sub) was freed");
    nd_pool_free(pool);
    pool = NULL;
}

static void
teardown(void)
{
    if (pool != NULL)
        finish();
}

TestSuite(acct, .init = setup, .fini = teardown, .timeout = 60);

/* Hang guard only: waits up to 20 s for the probe to have seen n notifies. */
static void
wait_notified(probe_t *p, unsigned n)
{
    for (int i = 0; i < 20000; i++) {
        /* acquire: pairs with probe_dispatch's release. */
        if (atomic_load_explicit(&p->notified, memory_order_acquire) >= n)
            return;
        usleep(1000);
    }
    cr_assert_fail("notify %u never arrived", n);
}

static nd_sub_t *
mk(nd_actor_t *conn, const char *subject, const char *queue, const char *sid)
{
    return nd_sub_new(ctx, conn, subject, strlen(subject), queue, queue ? strlen(queue) : 0, sid,
                      strlen(sid));
}

/* Number of subs (plain, plus every queue member) a match of subject finds. */
static size_t
visible(nd_acct_t *a, const char *subject, nd_sub_t *which, bool *found)
{
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    size_t n = 0;
    if (found != NULL)
        *found = false;
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, nd_acct_sublist(a), subject, strlen(subject), &r);
    for (uint32_t k = 0; k < r.npvecs; k++)
        for (uint32_t i = 0; i < nd_sl_vec_len(r.pvecs[k]); i++) {
            nd_sub_t *s = nd_sl_vec_get(r.pvecs[k], i);
            if (s == NULL)
                continue;
            cr_assert_eq(s->magic, ND_SUB_MAGIC);
            n++;
            if (found != NULL && s == which)
                *found = true;
        }
    for (uint32_t k = 0; k < r.nqvecs; k++)
        for (uint32_t i = 0; i < nd_sl_vec_len(r.qvecs[k]); i++) {
            nd_sub_t *s = nd_sl_vec_get(r.qvecs[k], i);
            if (s == NULL)
                continue;
            n++;
            if (found != NULL && s == which)
                *found = true;
        }
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);
    return n;
}

Test(acct, new_and_name)
{
    cr_expect_null(nd_acct_new(ctx, "", 0));
    char longname[ND_ACCT_NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname));
    cr_expect_null(nd_acct_new(ctx, longname, ND_ACCT_NAME_MAX + 1));
    nd_acct_t *a = nd_acct_new(ctx, "$G", 2);
    cr_assert_not_null(a);
    cr_expect_str_eq(nd_acct_name(a), "$G");
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 0);
    nd_acct_count_in(a, 2, 100);
    nd_acct_count_out(a, 3, 150);
    cr_expect_eq(atomic_load(&a->stats.msgs_in), 2);
    cr_expect_eq(atomic_load(&a->stats.bytes_in), 100);
    cr_expect_eq(atomic_load(&a->stats.msgs_out), 3);
    cr_expect_eq(atomic_load(&a->stats.bytes_out), 150);
    nd_actor_unref(ctx, &a->actor);
    finish();
}

Test(acct, sub_visible_when_notified_then_unsub)
{
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    nd_sub_t *s = mk(&p->actor, "orders.*", NULL, "1");
    nd_acct_send_sub(ctx, a, s, &p->actor, NOTIFY_ID);
    wait_notified(p, 1);
    bool found;
    cr_expect_eq(visible(a, "orders.new", s, &found), 1);
    cr_expect(found, "the sub is visible once its notify arrived");
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 1);

    /* Unsubscribe (handing our reference over), then prove it was processed with a second SUB:
     * one sender's messages arrive in order. */
    nd_acct_send_unsub(ctx, a, s);
    nd_sub_t *s2 = mk(&p->actor, "orders.new", "q", "2");
    nd_acct_send_sub(ctx, a, s2, &p->actor, NOTIFY_ID);
    wait_notified(p, 2);
    cr_expect_eq(visible(a, "orders.new", s2, &found), 1);
    cr_expect(found);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 1);

    nd_acct_send_unsub(ctx, a, s2);
    nd_acct_send_sub(ctx, a, s2 = mk(NULL, "sync", NULL, "3"), &p->actor, NOTIFY_ID);
    wait_notified(p, 3);
    cr_expect_eq(visible(a, "orders.new", NULL, NULL), 0);
    nd_sub_unref(ctx, s2);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    finish();
}

Test(acct, invalid_sub_is_not_inserted_but_notified)
{
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    nd_sub_t *s = mk(&p->actor, "bad..subject", NULL, "1");
    nd_acct_send_sub(ctx, a, s, &p->actor, NOTIFY_ID);
    wait_notified(p, 1);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 0);
    /* Subscribing the same sub twice keeps it once. */
    nd_sub_t *t = mk(&p->actor, "good", NULL, "2");
    nd_acct_send_sub(ctx, a, t, NULL, 0);
    nd_acct_send_sub(ctx, a, t, &p->actor, NOTIFY_ID);
    wait_notified(p, 2);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 1);
    /* An unsub of a sub that was never inserted only drops the reference it carries. */
    nd_acct_send_unsub(ctx, a, s);
    nd_acct_send_unsub(ctx, a, t);
    nd_acct_send_sub(ctx, a, t = mk(NULL, "sync", NULL, "3"), &p->actor, NOTIFY_ID);
    wait_notified(p, 3);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 1);
    nd_sub_unref(ctx, t);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    finish();
}

Test(acct, unsub_all)
{
    enum { N = 300 };
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    nd_sub_t **subs = nd_xmalloc(N * sizeof(*subs));
    char sid[16];
    for (int i = 0; i < N; i++) {
        snprintf(sid, sizeof(sid), "%d", i);
        subs[i] = mk(&p->actor, (i % 3) ? "a.b" : "a.*", (i % 2) ? "workers" : NULL, sid);
        nd_acct_send_sub(ctx, a, subs[i], i == N - 1 ? &p->actor : NULL, NOTIFY_ID);
    }
    wait_notified(p, 1);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), N);
    cr_expect_eq(visible(a, "a.b", NULL, NULL), N);
    /* A connection closing: all its subs in one message, which owns the array and our refs. */
    nd_acct_send_unsub_all(ctx, a, subs, N);
    nd_sub_t *t = mk(NULL, "sync", NULL, "x");
    nd_acct_send_sub(ctx, a, t, &p->actor, NOTIFY_ID);
    wait_notified(p, 2);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)), 1);
    cr_expect_eq(visible(a, "a.b", NULL, NULL), 0);
    cr_expect_eq(nd_sl_node_count(nd_acct_sublist(a)), 2, "root + sync left");
    nd_sub_unref(ctx, t);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    finish();
}

Test(acct, messages_after_close_release_their_references)
{
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    nd_sub_t *s = mk(&p->actor, "x", NULL, "1");
    nd_acct_send_sub(ctx, a, s, &p->actor, NOTIFY_ID);
    wait_notified(p, 1);
    nd_actor_close(ctx, &a->actor);
    /* These may be discarded (or, racing with the close, handled): either way every reference
     * they carry is dropped and the notify still comes. */
    nd_sub_t *late = mk(&p->actor, "y", NULL, "2");
    nd_acct_send_sub(ctx, a, late, &p->actor, NOTIFY_ID);
    wait_notified(p, 2);
    nd_sub_t **all = nd_xmalloc(2 * sizeof(*all));
    all[0] = s;
    all[1] = late;
    nd_acct_send_unsub_all(ctx, a, all, 2);
    /* The sublist was emptied by final(), so late readers see nothing. */
    for (int i = 0; i < 20000 && !nd_actor_closed(&a->actor); i++)
        usleep(1000);
    cr_expect(nd_actor_closed(&a->actor));
    cr_expect_eq(visible(a, "x", NULL, NULL), 0);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    finish();
}

Test(acct, shutdown_frees_everything)
{
    /* Subs left inside accounts at shutdown: final() drops the sublist's references, the epoch
     * frees the subs, which drop their references on the probe; ASan's leak check and the live
     * actor count in teardown verify it. */
    enum { N = 200 };
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    nd_acct_t *b = nd_acct_new(ctx, "B", 1);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    char subj[32];
    for (int i = 0; i < N; i++) {
        snprintf(subj, sizeof(subj), "s.%d.>", i % 17);
        nd_sub_t *s = mk(&p->actor, subj, (i & 1) ? "q" : NULL, "sid");
        nd_acct_send_sub(ctx, (i & 2) ? a : b, s, i >= N - 4 ? &p->actor : NULL, NOTIFY_ID);
        nd_sub_unref(ctx, s); /* the accounts keep them */
    }
    wait_notified(p, 4);
    cr_expect_eq(nd_sl_count(nd_acct_sublist(a)) + nd_sl_count(nd_acct_sublist(b)), N);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    nd_actor_unref(ctx, &b->actor);
    finish();
}

/* ---- interest: routes hear of local subscriptions, gateways of the whole cluster's ---- */

typedef struct ilog {
    pthread_mutex_t mu;
    char text[1024];
} ilog_t;

static void
ilog_fn(nd_ctx_t *c, nd_acct_t *acct, const char *subj, size_t slen, const char *queue,
        size_t qlen, uint32_t weight, void *arg)
{
    (void)c, (void)acct;
    ilog_t *l = arg;
    pthread_mutex_lock(&l->mu);
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, "%.*s%s%.*s=%u;", (int)slen, subj, qlen ? " " : "",
             (int)qlen, queue ? queue : "", weight);
    pthread_mutex_unlock(&l->mu);
}

static void
ilog_expect(ilog_t *l, const char *want)
{
    pthread_mutex_lock(&l->mu);
    cr_expect_str_eq(l->text, want);
    l->text[0] = '\0';
    pthread_mutex_unlock(&l->mu);
}

Test(acct, route_and_gateway_interest)
{
    static ilog_t rl = {PTHREAD_MUTEX_INITIALIZER, ""}, gl = {PTHREAD_MUTEX_INITIALIZER, ""};
    static const nd_interest_hook_t rh = {ilog_fn, &rl, NULL}, gh = {ilog_fn, &gl, NULL};
    nd_acct_t *a = nd_acct_new(ctx, "A", 1);
    nd_interest_attach(a, &rh);
    nd_interest_attach_gw(a, &gh);
    probe_t *p = (probe_t *)nd_actor_spawn(ctx, &probe_type);
    nd_sub_t *local = mk(&p->actor, "a", NULL, "1");
    nd_sub_t *routed_a = mk(&p->actor, "a", NULL, "2");
    nd_sub_t *routed_b = mk(&p->actor, "b", NULL, "3");
    nd_sub_t *q1 = mk(&p->actor, "q", "grp", "4");
    nd_sub_t *q2 = mk(&p->actor, "q", "grp", "5");
    nd_sub_t *remote = mk(&p->actor, "c", NULL, "6");
    routed_a->origin = routed_b->origin = ND_SUB_ROUTE;
    remote->origin = ND_SUB_GATEWAY;
    nd_sub_t *all[] = {local, routed_a, routed_b, q1, q2, remote};
    for (size_t i = 0; i < 6; i++)
        nd_acct_send_sub(ctx, a, all[i], i == 5 ? &p->actor : NULL, NOTIFY_ID);
    wait_notified(p, 1);
    /* Routes: local subscriptions only, every queue weight. Gateways: routed ones too, a queue
     * group once; another cluster's interest never. */
    ilog_expect(&rl, "a=1;q grp=1;q grp=2;");
    ilog_expect(&gl, "a=1;b=1;q grp=1;");
    nd_acct_send_unsub(ctx, a, q1);
    nd_acct_send_unsub(ctx, a, local);
    nd_acct_send_unsub(ctx, a, routed_b);
    nd_sub_t *t = mk(NULL, "sync", NULL, "x");
    nd_acct_send_sub(ctx, a, t, &p->actor, NOTIFY_ID);
    wait_notified(p, 2);
    ilog_expect(&rl, "q grp=1;a=0;sync=1;");
    ilog_expect(&gl, "b=0;sync=1;");
    nd_acct_send_unsub(ctx, a, q2);
    nd_acct_send_unsub(ctx, a, routed_a);
    nd_acct_send_unsub(ctx, a, remote);
    nd_acct_send_unsub(ctx, a, t);
    nd_acct_send_sub(ctx, a, t = mk(NULL, "sync2", NULL, "y"), &p->actor, NOTIFY_ID);
    wait_notified(p, 3);
    ilog_expect(&rl, "q grp=0;sync=0;sync2=1;");
    ilog_expect(&gl, "q grp=0;a=0;sync=0;sync2=1;");
    nd_acct_send_unsub(ctx, a, t);
    nd_actor_unref(ctx, &p->actor);
    nd_actor_unref(ctx, &a->actor);
    finish();
}
