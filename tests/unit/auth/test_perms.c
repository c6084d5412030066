/* Unit tests of publish/subscribe permissions (src/auth/perms.c).
 *
 * The fixed cases are what the reference nats-server 2.9.10 answered over raw TCP to a user with
 * subscribe {allow: ["foo.*", "bar.> q1", "baz"], deny: ["foo.secret", "baz q2"]} and publish
 * {allow: ["x.>"], deny: ["x.no"]} (probed 2026-11-29). The randomized matrix checks every
 * decision against a brute-force oracle written here from nats-server's client.go rules with its
 * own token matcher, and checks reliability.md S-2 at this level: a message that matches a
 * plain subscribe deny entry is never delivered to any subscription that was allowed (a
 * queue-qualified entry refuses SUBs in its queue and filters no delivery, as in nats-server
 * 2.9.10).
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "auth/jwt.h"
#include "auth/perms.h"

static void
add(nd_permset_t *p, nd_perms_kind_t k, const char *e)
{
    cr_assert_eq(nd_perms_add(p, k, e, strlen(e)), ND_PERMS_ADD_OK, "entry %s", e);
}

static bool
pub(const nd_permset_t *p, const char *s)
{
    return nd_perms_pub_allowed(p, s, strlen(s));
}

static bool
sub(const nd_permset_t *p, const char *s, const char *q)
{
    return nd_perms_sub_allowed(p, s, strlen(s), q, q ? strlen(q) : 0);
}

static nd_permset_t *
reference_user(void)
{
    nd_permset_t *p = nd_perms_new();
    add(p, ND_PERMS_SUB_ALLOW, "foo.*");
    add(p, ND_PERMS_SUB_ALLOW, "bar.> q1");
    add(p, ND_PERMS_SUB_ALLOW, "baz");
    add(p, ND_PERMS_SUB_DENY, "foo.secret");
    add(p, ND_PERMS_SUB_DENY, "baz q2");
    add(p, ND_PERMS_PUB_ALLOW, "x.>");
    add(p, ND_PERMS_PUB_DENY, "x.no");
    nd_perms_seal(p);
    return p;
}

Test(perms, reference_server_answers)
{
    nd_permset_t *p = reference_user();
    /* SUB lines sent to nats-server 2.9.10 and whether it refused them. */
    cr_expect(sub(p, "foo.>", NULL), "allowed by the reference: `>` is one token to `*`");
    cr_expect(sub(p, "foo.*", NULL));
    cr_expect(!sub(p, "foo.secret", NULL));
    cr_expect(sub(p, "foo.a", NULL));
    cr_expect(!sub(p, "bar.x", NULL), "only queue q1 may subscribe under bar.>");
    cr_expect(sub(p, "bar.x", "q1"));
    cr_expect(!sub(p, "bar.x", "q2"));
    cr_expect(sub(p, "bar.>", "q1"));
    cr_expect(sub(p, "baz", NULL));
    cr_expect(!sub(p, "baz", "q2"));
    cr_expect(sub(p, "baz", "q3"));
    cr_expect(!sub(p, "*", NULL));
    cr_expect(!sub(p, ">", NULL));
    cr_expect(sub(p, "foo.*", "q*"));
    /* PUB lines. */
    cr_expect(!pub(p, "x.no"));
    cr_expect(pub(p, "x.y"));
    cr_expect(!pub(p, "y"));
    nd_perms_unref(p);
}

Test(perms, error_texts)
{
    char buf[256];
    cr_expect_eq(nd_perms_err_pub(buf, sizeof buf, "x.no", 4), 43);
    cr_expect_str_eq(buf, "Permissions Violation for Publish to \"x.no\"");
    nd_perms_err_sub(buf, sizeof buf, "foo.secret", 10, NULL, 0);
    cr_expect_str_eq(buf, "Permissions Violation for Subscription to \"foo.secret\"");
    nd_perms_err_sub(buf, sizeof buf, "bar.x", 5, "q2", 2);
    cr_expect_str_eq(buf, "Permissions Violation for Subscription to \"bar.x\" using queue \"q2\"");
    nd_perms_err_reply(buf, sizeof buf, "_R_.x", 5);
    cr_expect_str_eq(buf, "Permissions Violation for Publish with Reply of \"_R_.x\"");
    char small[10];
    size_t n = nd_perms_err_pub(small, sizeof small, "abc", 3);
    cr_expect_eq(n, 42, "the full length is returned");
    cr_expect_eq(strlen(small), 9, "truncated and terminated");
}

Test(perms, publish_rules)
{
    nd_permset_t *none = nd_perms_new();
    nd_perms_seal(none);
    cr_expect(pub(none, "anything"), "no lists: all allowed");
    cr_expect(pub(NULL, "anything"));
    nd_perms_unref(none);

    nd_permset_t *empty_allow = nd_perms_new();
    nd_perms_set_pub_allow_present(empty_allow);
    nd_perms_seal(empty_allow);
    cr_expect(!pub(empty_allow, "a"), "an empty allow list that is present allows nothing");
    nd_perms_unref(empty_allow);

    nd_permset_t *deny_only = nd_perms_new();
    add(deny_only, ND_PERMS_PUB_DENY, "a.*");
    add(deny_only, ND_PERMS_PUB_DENY, "b.>");
    nd_perms_seal(deny_only);
    cr_expect(pub(deny_only, "a"));
    cr_expect(!pub(deny_only, "a.b"));
    cr_expect(pub(deny_only, "a.b.c"));
    cr_expect(!pub(deny_only, "b.c.d"));
    cr_expect(pub(deny_only, "b"));
    /* Subjects with empty tokens match nothing, so no deny catches them (the parser refuses or
     * flags them before; this is the sublist's rule). */
    cr_expect(pub(deny_only, "a."));
    nd_perms_unref(deny_only);

    nd_permset_t *p = nd_perms_new();
    add(p, ND_PERMS_PUB_ALLOW, ">");
    add(p, ND_PERMS_PUB_DENY, "$SYS.>");
    nd_perms_seal(p);
    cr_expect(pub(p, "a.b"));
    cr_expect(!pub(p, "$SYS.REQ.SERVER.PING"));
    cr_expect(pub(p, "$SYS"), "`>` needs at least one more token");
    nd_perms_unref(p);

    /* Entries that are not subjects are refused; a publish deny with a queue keeps its subject. */
    p = nd_perms_new();
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "a b", 3), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "a..b", 4), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "a.>.b", 5), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "", 0), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_DENY, "d.* q", 5), ND_PERMS_ADD_QUEUE_IGNORED);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_ALLOW, "a b c", 5), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_ALLOW, "  a\tb  ", 7), ND_PERMS_ADD_OK);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_DENY, "a q..x", 6), ND_PERMS_ADD_INVALID);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_DENY, "   ", 3), ND_PERMS_ADD_INVALID);
    nd_perms_seal(p);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "z", 1), ND_PERMS_ADD_INVALID, "sealed");
    cr_expect(!pub(p, "a"), "the allow list exists (its entries were invalid): nothing allowed");
    cr_expect(sub(p, "a", "b"));
    cr_expect(!sub(p, "a", NULL));
    nd_perms_unref(p);

    /* Subjects are binary-safe: a NUL is an ordinary byte (found by fuzz_jwt). */
    p = nd_perms_new();
    cr_expect_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, "a\0b.>", 5), ND_PERMS_ADD_OK);
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_DENY, "x\0.> q\0", 7), ND_PERMS_ADD_OK);
    nd_perms_seal(p);
    cr_expect(nd_perms_pub_allowed(p, "a\0b.c", 5));
    cr_expect(!nd_perms_pub_allowed(p, "a.c", 3));
    cr_expect(!nd_perms_sub_allowed(p, "x\0.y", 4, "q\0", 2));
    cr_expect(nd_perms_sub_allowed(p, "x\0.y", 4, "q", 1));
    nd_perms_unref(p);

    /* A subscribe allow list whose only entry was invalid allows nothing (fails closed). */
    p = nd_perms_new();
    cr_expect_eq(nd_perms_add(p, ND_PERMS_SUB_ALLOW, "a..b", 4), ND_PERMS_ADD_INVALID);
    nd_perms_seal(p);
    cr_expect(!sub(p, "a", NULL));
    cr_expect(!sub(p, "x.y", "q"));
    nd_perms_unref(p);
}

Test(perms, queue_rules)
{
    nd_permset_t *p = nd_perms_new();
    /* A plain and a queue allow on the same subject: queue subscriptions are decided by the
     * queue entries (client.go: allowed = queueMatches when qsubs matched). */
    add(p, ND_PERMS_SUB_ALLOW, "foo");
    add(p, ND_PERMS_SUB_ALLOW, "foo v1");
    add(p, ND_PERMS_SUB_ALLOW, "svc.* g.*");
    add(p, ND_PERMS_SUB_DENY, "svc.bad g.x");
    nd_perms_seal(p);
    cr_expect(sub(p, "foo", NULL));
    cr_expect(sub(p, "foo", "v1"));
    cr_expect(!sub(p, "foo", "v2"));
    cr_expect(!sub(p, "svc.a", NULL));
    cr_expect(sub(p, "svc.a", "g.y"), "wildcard queue pattern");
    cr_expect(!sub(p, "svc.a", "g"));
    cr_expect(!sub(p, "svc.a", "g.y.z"));
    cr_expect(sub(p, "svc.bad", "g.y"));
    cr_expect(!sub(p, "svc.bad", "g.x"));
    cr_expect(sub(p, "svc.*", "g.*"), "a queue named like the pattern is a subset of it");
    nd_perms_unref(p);
}

Test(perms, delivery_filter)
{
    nd_permset_t *p = nd_perms_new();
    add(p, ND_PERMS_SUB_DENY, "foo.bar");
    add(p, ND_PERMS_SUB_DENY, "q.* grp");
    nd_perms_seal(p);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    cr_expect(!nd_perms_conn_deliver_denied(&c, "foo.bar", 7), "no filter yet");
    cr_expect(nd_perms_conn_sub(&c, "foo.baz", 7, NULL, 0));
    cr_expect(!c.deny_filter, "a literal plain subscription needs no filter");
    cr_expect(!nd_perms_conn_sub(&c, "foo.bar", 7, NULL, 0));
    cr_expect(nd_perms_conn_sub(&c, "foo.*", 5, NULL, 0));
    cr_expect(c.deny_filter);
    for (int rep = 0; rep < 2; rep++) { /* second round from the cache */
        cr_expect(nd_perms_conn_deliver_denied(&c, "foo.bar", 7));
        cr_expect(!nd_perms_conn_deliver_denied(&c, "foo.baz", 7));
        /* A queue-qualified entry refuses SUBs in its queue but filters no delivery (as
         * nats-server 2.9.10, whose filter holds "q.* grp" as a subject with a space). */
        cr_expect(!nd_perms_conn_deliver_denied(&c, "q.x", 3));
    }
    nd_perms_conn_fini(&c);
    /* A queue subscription to a literal subject does not turn the filter on, nor does a wildcard
     * one that collides only with the queue-qualified entry: the filter would drop none of their
     * deliveries. A wildcard that collides with a plain entry does. */
    nd_perms_conn_init(&c, p);
    cr_expect(nd_perms_conn_sub(&c, "q.y", 3, "other", 5));
    cr_expect(!nd_perms_conn_sub(&c, "q.y", 3, "grp", 3));
    cr_expect(nd_perms_conn_sub(&c, "q.*", 3, "other", 5));
    cr_expect(!c.deny_filter);
    cr_expect(nd_perms_conn_sub(&c, "*.bar", 5, "other", 5));
    cr_expect(c.deny_filter);
    nd_perms_conn_fini(&c);
    cr_expect(!nd_perms_sub_needs_deny_filter(p, "zzz.*", 5));
    cr_expect(nd_perms_sub_needs_deny_filter(p, ">", 1));
    cr_expect(nd_perms_sub_needs_deny_filter(p, "*.bar", 5));
    cr_expect(nd_perms_sub_needs_deny_filter(p, "foo.*", 5));
    cr_expect(!nd_perms_sub_needs_deny_filter(p, "*.bar.x", 7));
    cr_expect(!nd_perms_sub_needs_deny_filter(p, "foo.bar", 7), "literal");
    cr_expect(!nd_perms_sub_needs_deny_filter(p, "q.*", 3), "only the queue entry collides");
    nd_perms_unref(p);
}

Test(perms, pub_cache_is_bounded_and_consistent)
{
    nd_permset_t *p = nd_perms_new();
    add(p, ND_PERMS_PUB_ALLOW, "ok.>");
    add(p, ND_PERMS_PUB_DENY, "ok.*.no");
    nd_perms_seal(p);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    char s[64];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 1000; i++) {
            int n = snprintf(s, sizeof s,
                             i % 3 == 0   ? "ok.%d.no"
                             : i % 3 == 1 ? "ok.%d"
                                          : "bad.%d",
                             i);
            bool want = i % 3 == 1;
            cr_assert_eq(nd_perms_conn_pub(&c, s, (size_t)n, 0), want, "%s", s);
        }
    }
    int cached = 0;
    cr_assert_not_null(c.pub);
    for (int i = 0; i < ND_PERMS_PUB_CACHE; i++)
        cached += c.pub[i].key != NULL;
    cr_expect_leq(cached, ND_PERMS_PUB_CACHE);
    cr_expect_gt(c.pub_misses, 0);
    /* A hot subject is answered from the cache. */
    uint64_t h0 = c.pub_hits;
    for (int i = 0; i < 100; i++)
        cr_assert(nd_perms_conn_pub(&c, "ok.hot", 6, 0));
    cr_expect_geq(c.pub_hits - h0, 99);
    nd_perms_conn_fini(&c);
    /* No permissions at all: everything allowed, nothing cached. */
    nd_perms_conn_init(&c, NULL);
    cr_expect(nd_perms_conn_pub(&c, "x", 1, 0));
    cr_expect_null(c.pub, "nothing allocated");
    cr_expect(nd_perms_conn_sub(&c, "x", 1, NULL, 0));
    cr_expect(!nd_perms_conn_deliver_denied(&c, "x", 1));
    nd_perms_conn_track_reply(&c, "r", 1, 0);
    cr_expect_eq(nd_perms_conn_replies(&c), 0);
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);
}

/* ---- allow_responses ------------------------------------------------------------------------ */

#define SEC 1000000000LL

Test(perms, responses_max_and_expiry)
{
    nd_permset_t *p = nd_perms_new();
    nd_perms_set_responses(p, 0, 0); /* defaults: 1 message, 2 minutes */
    add(p, ND_PERMS_PUB_ALLOW, "pub.ok");
    nd_perms_seal(p);
    cr_expect_eq(p->resp_max, 1);
    cr_expect_eq(p->resp_ttl_ns, 120 * SEC);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    int64_t t = 1000 * SEC;
    cr_expect(!nd_perms_conn_pub(&c, "_INBOX.a", 8, t), "not yet received");
    nd_perms_conn_track_reply(&c, "_INBOX.a", 8, t);
    cr_expect_eq(nd_perms_conn_replies(&c), 1);
    cr_expect(nd_perms_conn_pub(&c, "_INBOX.a", 8, t + SEC), "one response");
    cr_expect(!nd_perms_conn_pub(&c, "_INBOX.a", 8, t + SEC), "max 1");
    cr_expect_eq(nd_perms_conn_replies(&c), 0, "used up and dropped");
    /* Expiry. */
    nd_perms_conn_track_reply(&c, "_INBOX.b", 8, t);
    cr_expect(!nd_perms_conn_pub(&c, "_INBOX.b", 8, t + 121 * SEC));
    nd_perms_conn_track_reply(&c, "_INBOX.c", 8, t);
    cr_expect(nd_perms_conn_pub(&c, "_INBOX.c", 8, t + 120 * SEC), "at the limit still ok");
    /* A publishable reply is not tracked; ordinary publishes keep working. */
    uint32_t before = nd_perms_conn_replies(&c);
    nd_perms_conn_track_reply(&c, "pub.ok", 6, t);
    cr_expect_eq(nd_perms_conn_replies(&c), before);
    cr_expect(nd_perms_conn_pub(&c, "pub.ok", 6, t));
    cr_expect(!nd_perms_conn_pub(&c, "pub.no", 6, t));
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);

    /* max 3, no time limit; a second delivery of the same reply spends one use (deliverMsg's
     * full check) rather than restarting the count while uses remain. */
    p = nd_perms_new();
    nd_perms_set_responses(p, 3, -1);
    nd_perms_seal(p);
    nd_perms_conn_init(&c, p);
    nd_perms_conn_track_reply(&c, "r.1", 3, 0);
    nd_perms_conn_track_reply(&c, "r.1", 3, 0);
    cr_expect(nd_perms_conn_pub(&c, "r.1", 3, 1000 * SEC));
    cr_expect(nd_perms_conn_pub(&c, "r.1", 3, 1000 * SEC));
    cr_expect(!nd_perms_conn_pub(&c, "r.1", 3, 1000 * SEC));
    /* Once used up, a new delivery starts it afresh. */
    nd_perms_conn_track_reply(&c, "r.1", 3, 2000 * SEC);
    cr_expect(nd_perms_conn_pub(&c, "r.1", 3, 2000 * SEC));
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);
}

Test(perms, responses_pruning)
{
    nd_permset_t *p = nd_perms_new();
    nd_perms_set_responses(p, 1, 10 * SEC);
    nd_perms_seal(p);
    nd_perms_conn_t c;
    nd_perms_conn_init(&c, p);
    char s[32];
    /* 5000 replies within one second: a prune after 4096 additions drops nothing live. */
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(s, sizeof s, "_INBOX.%d", i);
        nd_perms_conn_track_reply(&c, s, (size_t)n, 1);
    }
    cr_expect_eq(nd_perms_conn_replies(&c), 5000);
    for (int i = 0; i < 5000; i += 2) {
        int n = snprintf(s, sizeof s, "_INBOX.%d", i);
        cr_assert(nd_perms_conn_pub(&c, s, (size_t)n, 2));
    }
    cr_expect_eq(nd_perms_conn_replies(&c), 5000, "used entries wait for the prune");
    /* A prune drops the used ones. */
    nd_perms_conn_prune_replies(&c, 3);
    cr_expect_eq(nd_perms_conn_replies(&c), 2500);
    /* After the TTL a new tracking call (more than a second later) prunes the expired rest. */
    nd_perms_conn_track_reply(&c, "_INBOX.new", 10, 20 * SEC);
    cr_expect_eq(nd_perms_conn_replies(&c), 1);
    nd_perms_conn_fini(&c);
    nd_perms_unref(p);
}

/* ---- randomized matrix against an oracle ---------------------------------------------------- */

/* The oracle's own token matcher: pattern tokens `*` (one) and `>` (one or more, last); subject
 * tokens literal; empty tokens match nothing. */
static size_t
tokenize(const char *s, char tok[16][16])
{
    size_t n = 0, k = 0;
    for (const char *c = s;; c++) {
        if (*c == '.' || *c == '\0') {
            tok[n][k] = '\0';
            n++;
            k = 0;
            if (*c == '\0')
                break;
        } else {
            tok[n][k++] = *c;
        }
    }
    return n;
}

static bool
omatch(const char *pattern, const char *subj)
{
    char pt[16][16], st[16][16];
    size_t np = tokenize(pattern, pt), ns = tokenize(subj, st);
    for (size_t i = 0; i < ns; i++)
        if (st[i][0] == '\0')
            return false;
    for (size_t i = 0; i < np; i++) {
        if (strcmp(pt[i], ">") == 0)
            return ns > i;
        if (i >= ns)
            return false;
        if (strcmp(pt[i], "*") != 0 && strcmp(pt[i], st[i]) != 0)
            return false;
    }
    return np == ns;
}

typedef struct oent {
    char subj[32], queue[16]; /* queue "" = plain */
} oent_t;

typedef struct olist {
    oent_t v[12];
    int n;
} olist_t;

/* Queue names in subscriptions are literal here, so "subset of a wildcard queue" is a match. */
static bool
oqueue(const char *pattern, const char *q)
{
    return strcmp(pattern, q) == 0 || omatch(pattern, q);
}

static void
omatch_list(const olist_t *l, const char *s, const char *q, bool *plain, bool *queued, bool *qok)
{
    *plain = *queued = *qok = false;
    for (int i = 0; i < l->n; i++) {
        if (!omatch(l->v[i].subj, s))
            continue;
        if (l->v[i].queue[0] == '\0') {
            *plain = true;
        } else {
            *queued = true;
            if (q != NULL && oqueue(l->v[i].queue, q))
                *qok = true;
        }
    }
}

static bool
osub(const olist_t *allow, const olist_t *deny, const char *s, const char *q)
{
    bool plain, queued, qok, ok = true;
    if (allow->n > 0) {
        omatch_list(allow, s, q, &plain, &queued, &qok);
        ok = plain;
        if (q != NULL && queued)
            ok = qok;
    }
    if (ok && deny->n > 0) {
        omatch_list(deny, s, q, &plain, &queued, &qok);
        ok = !plain;
        if (ok && q != NULL && queued)
            ok = !qok;
    }
    return ok;
}

static bool
opub(const olist_t *allow, bool allow_set, const olist_t *deny, const char *s)
{
    bool plain, queued, qok;
    if (allow_set) {
        omatch_list(allow, s, NULL, &plain, &queued, &qok);
        if (!plain)
            return false;
    }
    omatch_list(deny, s, NULL, &plain, &queued, &qok);
    return !plain;
}

/* The delivery filter (checkDenySub): plain entries only; the same for every subscription. */
static bool
odeliver_denied(const olist_t *deny, const char *s)
{
    bool plain, queued, qok;
    omatch_list(deny, s, NULL, &plain, &queued, &qok);
    return plain;
}

static const char *const TOKS[] = {"a", "b", "c"};
static const char *const QUEUES[] = {"q1", "q2", "g.a", "g.b"};
static const char *const QPATS[] = {"q1", "q2", "g.a", "g.*", "g.>", "*"};

static void
rand_subject(unsigned *seed, char *out, bool wild)
{
    int n = 1 + (int)(rand_r(seed) % 3);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *t = TOKS[rand_r(seed) % 3];
        if (wild) {
            unsigned r = rand_r(seed) % 10;
            if (r < 2)
                t = "*";
            else if (r < 3 && i == n - 1)
                t = ">";
        }
        strcat(out, i ? "." : "");
        strcat(out, t);
    }
}

static void
rand_list(unsigned *seed, olist_t *l, bool queues)
{
    l->n = (int)(rand_r(seed) % 5);
    for (int i = 0; i < l->n; i++) {
        rand_subject(seed, l->v[i].subj, true);
        l->v[i].queue[0] = '\0';
        if (queues && rand_r(seed) % 3 == 0)
            strcpy(l->v[i].queue, QPATS[rand_r(seed) % 6]);
    }
}

static void
load(nd_permset_t *p, nd_perms_kind_t k, const olist_t *l)
{
    for (int i = 0; i < l->n; i++) {
        char e[64];
        snprintf(e, sizeof e, "%s%s%s", l->v[i].subj, l->v[i].queue[0] ? " " : "", l->v[i].queue);
        add(p, k, e);
    }
}

/* Every literal subject of up to 3 tokens over TOKS. */
static int
all_literals(char out[][16])
{
    int n = 0;
    for (int len = 1; len <= 3; len++) {
        int total = len == 1 ? 3 : len == 2 ? 9 : 27;
        for (int k = 0; k < total; k++) {
            int x = k;
            out[n][0] = '\0';
            for (int i = 0; i < len; i++) {
                strcat(out[n], i ? "." : "");
                strcat(out[n], TOKS[x % 3]);
                x /= 3;
            }
            n++;
        }
    }
    return n;
}

Test(perms, random_matrix_against_oracle)
{
    unsigned seed = 20261129;
    static char lits[39][16];
    int nlits = all_literals(lits);
    cr_assert_eq(nlits, 39);
    long checks = 0, denied_deliveries = 0;
    for (int it = 0; it < 1500; it++) {
        olist_t pa, pd, sa, sd;
        rand_list(&seed, &pa, false);
        rand_list(&seed, &pd, false);
        rand_list(&seed, &sa, true);
        rand_list(&seed, &sd, true);
        bool pa_set = pa.n > 0 || rand_r(&seed) % 4 == 0;
        nd_permset_t *p = nd_perms_new();
        load(p, ND_PERMS_PUB_ALLOW, &pa);
        load(p, ND_PERMS_PUB_DENY, &pd);
        load(p, ND_PERMS_SUB_ALLOW, &sa);
        load(p, ND_PERMS_SUB_DENY, &sd);
        if (pa_set)
            nd_perms_set_pub_allow_present(p);
        nd_perms_seal(p);
        nd_perms_conn_t c;
        nd_perms_conn_init(&c, p);

        /* Publish: every literal subject, twice (the second time from the cache). */
        for (int rep = 0; rep < 2; rep++) {
            for (int i = 0; i < nlits; i++) {
                bool want = opub(&pa, pa_set, &pd, lits[i]);
                cr_assert_eq(nd_perms_conn_pub(&c, lits[i], strlen(lits[i]), 0), want,
                             "it %d pub %s", it, lits[i]);
                checks++;
            }
        }
        /* Subscribe: random subjects (with wildcards), plain and in random queues; then S-2:
         * each allowed subscription never receives a message matching a deny. */
        for (int k = 0; k < 12; k++) {
            char s[32];
            rand_subject(&seed, s, true);
            const char *q = rand_r(&seed) % 2 ? NULL : QUEUES[rand_r(&seed) % 4];
            bool want = osub(&sa, &sd, s, q);
            bool got = nd_perms_conn_sub(&c, s, strlen(s), q, q ? strlen(q) : 0);
            cr_assert_eq(got, want, "it %d sub %s %s", it, s, q ? q : "");
            cr_assert_eq(nd_perms_sub_allowed(p, s, strlen(s), q, q ? strlen(q) : 0), want);
            checks++;
            if (!got)
                continue;
            for (int i = 0; i < nlits; i++) {
                if (!omatch(s, lits[i]))
                    continue;
                bool deny = odeliver_denied(&sd, lits[i]);
                bool filtered = nd_perms_conn_deliver_denied(&c, lits[i], strlen(lits[i]));
                /* Deny wins: a message matching a plain deny entry is never delivered (a
                 * queue-qualified one only refuses SUBs in its queue, as in nats-server). */
                if (deny) {
                    cr_assert(filtered, "it %d: %s delivered to sub %s %s", it, lits[i], s,
                              q ? q : "");
                    denied_deliveries++;
                }
                /* And nothing else is withheld. */
                if (!deny)
                    cr_assert(!filtered, "it %d: %s withheld from sub %s %s", it, lits[i], s,
                              q ? q : "");
                checks++;
            }
        }
        nd_perms_conn_fini(&c);
        nd_perms_unref(p);
    }
    cr_log_info("%ld checks, %ld deliveries filtered by deny", checks, denied_deliveries);
    cr_expect_gt(denied_deliveries, 100, "the matrix exercises the delivery filter");
}

Test(perms, large_lists)
{
    /* 20000 literal and 2000 wildcard entries: built in linear time, matched by the trie. */
    nd_permset_t *p = nd_perms_new();
    char s[64];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(s, sizeof s, "svc.%d.x", i);
        cr_assert_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, s, (size_t)n), ND_PERMS_ADD_OK);
    }
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(s, sizeof s, "w.%d.*.>", i);
        cr_assert_eq(nd_perms_add(p, ND_PERMS_PUB_ALLOW, s, (size_t)n), ND_PERMS_ADD_OK);
    }
    add(p, ND_PERMS_PUB_DENY, "svc.777.x");
    nd_perms_seal(p);
    cr_expect(pub(p, "svc.0.x"));
    cr_expect(pub(p, "svc.19999.x"));
    cr_expect(!pub(p, "svc.20000.x"));
    cr_expect(!pub(p, "svc.777.x"));
    cr_expect(pub(p, "w.1999.a.b"));
    cr_expect(pub(p, "w.5.a.b.c.d"));
    cr_expect(!pub(p, "w.5.a"));
    cr_expect(!pub(p, "w.2000.a.b"));
    nd_perms_unref(p);
}

Test(perms, very_deep_patterns)
{
    /* 60000 tokens in one entry (a JWT can carry that much): built, matched and freed without
     * recursion that deep. */
    size_t ntok = 60000, len = ntok * 2 - 1;
    char *deep = nd_xmalloc(len + 1);
    for (size_t i = 0; i < ntok; i++) {
        deep[2 * i] = 'a';
        if (i + 1 < ntok)
            deep[2 * i + 1] = '.';
    }
    deep[len] = '\0';
    nd_permset_t *p = nd_perms_new();
    cr_assert_eq(nd_perms_add(p, ND_PERMS_SUB_ALLOW, deep, len), ND_PERMS_ADD_OK);
    deep[len - 1] = '*';
    cr_assert_eq(nd_perms_add(p, ND_PERMS_SUB_DENY, deep, len), ND_PERMS_ADD_OK);
    add(p, ND_PERMS_PUB_DENY, "a.>");
    nd_perms_seal(p);
    deep[len - 1] = 'a';
    cr_expect(!nd_perms_sub_allowed(p, deep, len, NULL, 0), "the deny a.a...* matches");
    deep[len - 1] = 'b';
    cr_expect(!nd_perms_sub_allowed(p, deep, len, NULL, 0), "not in the allow list");
    cr_expect(!nd_perms_pub_allowed(p, deep, len));
    cr_expect(nd_perms_pub_allowed(p, "a", 1));
    nd_perms_unref(p);
    nd_free(deep);
}

Test(perms, shared_between_connections)
{
    nd_permset_t *p = reference_user();
    nd_perms_conn_t a, b;
    nd_perms_conn_init(&a, p);
    nd_perms_conn_init(&b, p);
    nd_perms_unref(p); /* the connections hold it now */
    cr_expect(nd_perms_conn_pub(&a, "x.y", 3, 0));
    cr_expect(!nd_perms_conn_pub(&b, "x.no", 4, 0));
    nd_perms_conn_fini(&a);
    cr_expect(nd_perms_conn_sub(&b, "baz", 3, NULL, 0));
    nd_perms_conn_fini(&b);
}

Test(perms, from_jwt)
{
    char *pa[] = {"ok.>", "bad subject"}, *pd[] = {"ok.no"}, *sa[] = {"in.* grp"};
    nd_jwt_perms_t jp = {0};
    cr_expect_null(nd_perms_from_jwt(&jp, NULL), "no restrictions: no permissions");
    cr_expect_null(nd_perms_from_jwt(NULL, NULL));
    jp.pub.allow = (nd_jwt_strlist_t){pa, 2};
    jp.pub.deny = (nd_jwt_strlist_t){pd, 1};
    jp.sub.allow = (nd_jwt_strlist_t){sa, 1};
    size_t skipped;
    nd_permset_t *p = nd_perms_from_jwt(&jp, &skipped);
    cr_assert_not_null(p);
    cr_expect_eq(skipped, 1);
    cr_expect(pub(p, "ok.yes"));
    cr_expect(!pub(p, "ok.no"));
    cr_expect(!pub(p, "other"));
    cr_expect(sub(p, "in.x", "grp"));
    cr_expect(!sub(p, "in.x", NULL));
    nd_perms_unref(p);
    /* Only "resp": publishing is limited to replies (the allow list becomes present and empty),
     * with the defaults for zero values. */
    nd_jwt_perms_t r = {0};
    r.has_resp = true;
    p = nd_perms_from_jwt(&r, NULL);
    cr_assert_not_null(p);
    cr_expect(!pub(p, "anything"));
    cr_expect(sub(p, "anything", NULL));
    cr_expect_eq(p->resp_max, ND_PERMS_RESP_DEFAULT_MAX);
    cr_expect_eq(p->resp_ttl_ns, ND_PERMS_RESP_DEFAULT_TTL_NS);
    nd_perms_unref(p);
}
