/* Integration tests: cross-account routing (issue 6, item 3; inventory §5.4) with the C client.
 *
 * Mappings: a plain mapping, a wildcard reorder with $N, top-level mappings for $G, weighted
 * destinations at 100/0 (every message to one side) and 50/50 (1000 messages, each side between
 * 350 and 650: the chance of leaving that band with a fair draw is below 1e-20, so it never
 * flakes).
 * Stream exports/imports: a public export imported with a prefix and with `to` (literal and
 * wildcard), a private export imported by a listed account; an account without an import and
 * the exporter (when an importer publishes on the exported or imported subject: nothing flows
 * back) receive nothing; an import of a private export by an account it does not list refuses
 * the configuration. Queue groups in the importer get each imported message once.
 * Service exports/imports: B requests through an import remapped with `to` and gets A's answers
 * (A sees an `_R_` reply); B on A's own subject and an account without an import get no
 * responders; a singleton export passes one response of three, a stream export all three; past
 * a 200 ms response threshold (the responder waits 1.5 s) the response is dropped.
 * Nats-Request-Info (issue 11): a header forged by the requester never reaches the exporter; the
 * server's replaces it, with the fields both servers set (key order checked; "rtt" only in form,
 * since round trips differ): "acc", the details with `share: true`, "server" for the system
 * account, and through a chained import (C <- B <- A) the first hop's header plus "svc"; the
 * answer travels back through the chain. Two-way stream imports with prefixes are accepted and
 * do not loop. An account importing its own export gets each request twice, as nats-server does.
 * Every case passes unchanged against nats-server 2.9.10 (NATSD_TEST_SERVER), which is how the
 * expectations were checked; tests/CMakeLists.txt registers that run.
 *
 * "Receives nothing" is checked without timing: after the publish that must not arrive, the
 * receiving connection gets a marker from its own account, and the first message it receives
 * must be the marker. A correct server never delivers anything else, so the check cannot flake.
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "harness.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_accounts, .fini = suite_fini, .timeout = 240);

/* ---- helpers ---------------------------------------------------------------------------- */

#define OK(call) ND_NATS_OK(call)

/* Connects the C client as user (password "p"), or without credentials when user is NULL. */
static natsConnection *
cconnect(nd_integ_server_t *srv, const char *user)
{
    natsOptions *o = NULL;
    char url[64];
    nd_integ_nats_url(srv, url, sizeof url);
    OK(natsOptions_Create(&o));
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetAllowReconnect(o, false));
    OK(natsOptions_SetTimeout(o, ND_INTEG_TIMEOUT_MS));
    if (user != NULL)
        OK(natsOptions_SetUserInfo(o, user, "p"));
    natsConnection *nc = NULL;
    OK(natsConnection_Connect(&nc, o));
    natsOptions_Destroy(o);
    return nc;
}

static natsSubscription *
csub(natsConnection *nc, const char *subject)
{
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, subject));
    OK(natsConnection_Flush(nc));
    return sub;
}

static void
cpub(natsConnection *nc, const char *subject, const char *data)
{
    OK(natsConnection_PublishString(nc, subject, data));
    OK(natsConnection_Flush(nc));
}

/* Receives the next message on sub (hang guard) and checks its subject and data. */
#define expect_msg(sub, subj, data) expect_msg_at(__FILE__, __LINE__, (sub), (subj), (data))

static void
expect_msg_at(const char *file, int line, natsSubscription *sub, const char *subject,
              const char *data)
{
    natsMsg *m = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_OK, "%s:%d: no message (wanted %s %s): %s", file, line, subject, data,
              natsStatus_GetText(s));
    cr_assert(strcmp(natsMsg_GetSubject(m), subject) == 0 && strcmp(natsMsg_GetData(m), data) == 0,
              "%s:%d: got %s '%s', wanted %s '%s'", file, line, natsMsg_GetSubject(m),
              natsMsg_GetData(m), subject, data);
    natsMsg_Destroy(m);
}

/* Checks that sub (a `>` subscription) has received nothing: marker (a connection of the same
 * account) publishes "marker", which must be the next message. */
#define expect_nothing(sub, marker) expect_nothing_at(__FILE__, __LINE__, (sub), (marker))

static void
expect_nothing_at(const char *file, int line, natsSubscription *sub, natsConnection *marker)
{
    cpub(marker, "zz.marker", "marker");
    expect_msg_at(file, line, sub, "zz.marker", "marker");
}

/* ---- mappings ---------------------------------------------------------------------------- */

Test(integ_accounts, mapping_simple_and_wildcard)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv =
        nd_integ_conf_start(&cf, "accounts {\n"
                                 "  A {\n"
                                 "    users: [ {user: a, password: p} ]\n"
                                 "    mappings: {\n"
                                 "      \"foo\": \"bar\"\n"
                                 "      \"in.*.*\": \"out.$2.$1\"\n"
                                 "      \"fn.*.*\": \"fnout.{{wildcard(2)}}.{{wildcard(1)}}\"\n"
                                 "    }\n"
                                 "  }\n"
                                 "  B { users: [ {user: b, password: p} ] }\n"
                                 "}\n");
    natsConnection *sa = cconnect(srv, "a");
    natsConnection *pa = cconnect(srv, "a");
    natsConnection *sb = cconnect(srv, "b");
    natsSubscription *all = csub(sa, ">");
    natsSubscription *ball = csub(sb, ">");
    cpub(pa, "foo", "1");
    cpub(pa, "in.x.y", "2");
    cpub(pa, "fn.p.q", "3");
    cpub(pa, "other", "4");
    cpub(pa, "in.x", "5"); /* no mapping matches: as published */
    expect_msg(all, "bar", "1");
    expect_msg(all, "out.y.x", "2");
    expect_msg(all, "fnout.q.p", "3");
    expect_msg(all, "other", "4");
    expect_msg(all, "in.x", "5");
    /* B's traffic is not mapped by A's mappings, and A's mapped traffic stays in A. */
    natsConnection *pb = cconnect(srv, "b");
    cpub(pb, "foo", "6");
    expect_msg(ball, "foo", "6");
    expect_nothing(all, pa);
    natsSubscription_Destroy(all);
    natsSubscription_Destroy(ball);
    natsConnection_Destroy(sa);
    natsConnection_Destroy(pa);
    natsConnection_Destroy(sb);
    natsConnection_Destroy(pb);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_accounts, mapping_global_account)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, "mappings: { \"g.foo\": \"g.bar\" }\n");
    natsConnection *s = cconnect(srv, NULL);
    natsConnection *p = cconnect(srv, NULL);
    natsSubscription *all = csub(s, "g.>");
    cpub(p, "g.foo", "1");
    expect_msg(all, "g.bar", "1");
    natsSubscription_Destroy(all);
    natsConnection_Destroy(s);
    natsConnection_Destroy(p);
    nd_integ_conf_stop(srv, &cf);
}

/* Publishes n messages on "w" and counts those arriving on w.a and w.b. */
static void
weighted_counts(const char *conf, int n, int *na, int *nb)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, conf);
    natsConnection *s = cconnect(srv, NULL);
    natsConnection *p = cconnect(srv, NULL);
    natsSubscription *all = csub(s, "w.>");
    natsSubscription *end = csub(s, "end");
    OK(natsSubscription_SetPendingLimits(all, -1, -1));
    for (int i = 0; i < n; i++)
        OK(natsConnection_PublishString(p, "w", "x"));
    cpub(p, "end", "e");
    expect_msg(end, "end", "e");
    /* Every "w" was processed before "end" (one publisher): the mapped ones are all queued. */
    OK(natsConnection_Flush(s));
    *na = *nb = 0;
    for (int i = 0; i < n; i++) {
        natsMsg *m = NULL;
        natsStatus st = natsSubscription_NextMsg(&m, all, ND_INTEG_TIMEOUT_MS);
        cr_assert(st == NATS_OK, "message %d of %d: %s", i, n, natsStatus_GetText(st));
        if (strcmp(natsMsg_GetSubject(m), "w.a") == 0)
            (*na)++;
        else if (strcmp(natsMsg_GetSubject(m), "w.b") == 0)
            (*nb)++;
        else
            cr_assert_fail("unexpected subject %s", natsMsg_GetSubject(m));
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(all);
    natsSubscription_Destroy(end);
    natsConnection_Destroy(s);
    natsConnection_Destroy(p);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_accounts, mapping_weighted_100_0)
{
    int na, nb;
    weighted_counts("mappings: { \"w\": [ {destination: \"w.a\", weight: 100%},"
                    " {destination: \"w.b\", weight: 0%} ] }\n",
                    1000, &na, &nb);
    cr_assert_eq(na, 1000);
    cr_assert_eq(nb, 0);
}

Test(integ_accounts, mapping_weighted_50_50)
{
    int na, nb;
    weighted_counts("mappings: { \"w\": [ {destination: \"w.a\", weight: 50%},"
                    " {destination: \"w.b\", weight: 50%} ] }\n",
                    1000, &na, &nb);
    cr_assert_eq(na + nb, 1000);
    cr_assert(na >= 350 && na <= 650, "w.a got %d of 1000", na);
    cr_assert(nb >= 350 && nb <= 650, "w.b got %d of 1000", nb);
}

/* ---- stream exports and imports ------------------------------------------------------------ */

#define STREAM_CONF                                                                                \
    "accounts {\n"                                                                                 \
    "  A {\n"                                                                                      \
    "    users: [ {user: a, password: p} ]\n"                                                      \
    "    exports: [ {stream: \"foo.>\"}, {stream: \"priv.>\", accounts: [B]} ]\n"                  \
    "  }\n"                                                                                        \
    "  B {\n"                                                                                      \
    "    users: [ {user: b, password: p} ]\n"                                                      \
    "    imports: [ {stream: {account: A, subject: \"foo.>\"}, prefix: \"fromA\"},\n"              \
    "               {stream: {account: A, subject: \"priv.>\"}} ]\n"                               \
    "  }\n"                                                                                        \
    "  C {\n"                                                                                      \
    "    users: [ {user: c, password: p} ]\n"                                                      \
    "    imports: [ {stream: {account: A, subject: \"foo.x\"}, to: \"bar.x\"},\n"                  \
    "               {stream: {account: A, subject: \"foo.*.w\"}, to: \"w.*\"} ]\n"                 \
    "  }\n"                                                                                        \
    "  D { users: [ {user: d, password: p} ] }\n"

Test(integ_accounts, stream_import_prefix_to_and_private)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, STREAM_CONF "}\n");
    natsConnection *pa = cconnect(srv, "a"), *sa = cconnect(srv, "a");
    natsConnection *sb = cconnect(srv, "b"), *mb = cconnect(srv, "b");
    natsConnection *sc = cconnect(srv, "c"), *mc = cconnect(srv, "c");
    natsConnection *sd = cconnect(srv, "d"), *md = cconnect(srv, "d");
    natsSubscription *a_all = csub(sa, ">");
    natsSubscription *b_all = csub(sb, ">");
    natsSubscription *c_all = csub(sc, ">");
    natsSubscription *d_all = csub(sd, ">");

    cpub(pa, "foo.x", "1");
    expect_msg(a_all, "foo.x", "1");
    expect_msg(b_all, "fromA.foo.x", "1");
    expect_msg(c_all, "bar.x", "1");

    cpub(pa, "foo.q.w", "2");
    expect_msg(a_all, "foo.q.w", "2");
    expect_msg(b_all, "fromA.foo.q.w", "2");
    expect_msg(c_all, "w.q", "2");

    /* The private export reaches the listed account only. */
    cpub(pa, "priv.k", "3");
    expect_msg(a_all, "priv.k", "3");
    expect_msg(b_all, "priv.k", "3");
    /* Not exported at all. */
    cpub(pa, "bar.x", "4");
    expect_msg(a_all, "bar.x", "4");
    expect_nothing(b_all, mb);
    expect_nothing(c_all, mc);
    expect_nothing(d_all, md);

    /* Nothing flows back: the importers publishing on the exported and the imported subjects. */
    cpub(mb, "foo.x", "5");
    cpub(mb, "fromA.foo.x", "6");
    cpub(mc, "bar.x", "7");
    expect_msg(b_all, "foo.x", "5");
    expect_msg(b_all, "fromA.foo.x", "6");
    expect_msg(c_all, "bar.x", "7");
    expect_nothing(a_all, pa);
    expect_nothing(d_all, md);

    natsSubscription *subs[] = {a_all, b_all, c_all, d_all};
    for (size_t i = 0; i < 4; i++)
        natsSubscription_Destroy(subs[i]);
    natsConnection *conns[] = {pa, sa, sb, mb, sc, mc, sd, md};
    for (size_t i = 0; i < 8; i++)
        natsConnection_Destroy(conns[i]);
    nd_integ_conf_stop(srv, &cf);
}

/* Queue groups and request/reply in the importer: one member of a queue group gets each
 * imported message, and the reply subject comes along unchanged. */
Test(integ_accounts, stream_import_queue_and_reply)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, STREAM_CONF "}\n");
    natsConnection *pa = cconnect(srv, "a");
    natsConnection *b1 = cconnect(srv, "b"), *b2 = cconnect(srv, "b");
    natsSubscription *q1 = NULL, *q2 = NULL;
    OK(natsConnection_QueueSubscribeSync(&q1, b1, "fromA.foo.y", "q"));
    OK(natsConnection_QueueSubscribeSync(&q2, b2, "fromA.foo.y", "q"));
    OK(natsConnection_Flush(b1));
    OK(natsConnection_Flush(b2));
    natsSubscription *e1 = csub(b1, "fromA.foo.end"), *e2 = csub(b2, "fromA.foo.end");
    for (int i = 0; i < 20; i++)
        OK(natsConnection_PublishRequestString(pa, "foo.y", "reply.to", "m"));
    /* One publisher: each member receives the marker after every imported message it got. */
    cpub(pa, "foo.end", "e");
    expect_msg(e1, "fromA.foo.end", "e");
    expect_msg(e2, "fromA.foo.end", "e");
    int p1 = 0, p2 = 0;
    OK(natsSubscription_GetPending(q1, &p1, NULL));
    OK(natsSubscription_GetPending(q2, &p2, NULL));
    cr_assert(p1 + p2 == 20, "the queue group got %d + %d of 20", p1, p2);
    natsSubscription *qs[] = {q1, q2};
    for (int k = 0; k < 2; k++) {
        natsMsg *m = NULL;
        if ((k == 0 ? p1 : p2) == 0)
            continue;
        OK(natsSubscription_NextMsg(&m, qs[k], ND_INTEG_TIMEOUT_MS));
        cr_assert_str_eq(natsMsg_GetSubject(m), "fromA.foo.y");
        cr_assert_str_eq(natsMsg_GetReply(m), "reply.to");
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(q1);
    natsSubscription_Destroy(q2);
    natsSubscription_Destroy(e1);
    natsSubscription_Destroy(e2);
    natsConnection_Destroy(pa);
    natsConnection_Destroy(b1);
    natsConnection_Destroy(b2);
    nd_integ_conf_stop(srv, &cf);
}

/* An import that no export authorizes refuses the configuration, as in nats-server (the config
 * parser checks it; acct_route.c would skip such an import too). */
Test(integ_accounts, stream_import_not_authorized)
{
    nd_integ_conf_t cf = {0};
    snprintf(cf.dir, sizeof cf.dir, "/tmp/nd_integ_acct_XXXXXX");
    cr_assert_not_null(mkdtemp(cf.dir));
    snprintf(cf.path, sizeof cf.path, "%s/server.conf", cf.dir);
    FILE *f = fopen(cf.path, "w");
    cr_assert_not_null(f);
    fputs(STREAM_CONF "  E {\n"
                      "    users: [ {user: e, password: p} ]\n"
                      "    imports: [ {stream: {account: A, subject: \"priv.>\"}} ]\n"
                      "  }\n"
                      "}\n",
          f);
    cr_assert(fclose(f) == 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' -t -c '%s' 2>&1 | grep -q 'stream import not authorized'",
             nd_integ_server_path(), cf.path);
    cr_assert(system(cmd) == 0, "the configuration was not refused: %s", cmd);
    nd_integ_conf_remove(&cf);
}

/* ---- service exports and imports ----------------------------------------------------------- */

#define SERVICE_CONF                                                                               \
    "accounts {\n"                                                                                 \
    "  A {\n"                                                                                      \
    "    users: [ {user: a, password: p} ]\n"                                                      \
    "    exports: [ {service: \"req.>\"},\n"                                                       \
    "               {service: \"multi\", response_type: stream},\n"                                \
    "               {service: \"short\", response_threshold: \"200ms\"} ]\n"                       \
    "  }\n"                                                                                        \
    "  B {\n"                                                                                      \
    "    users: [ {user: b, password: p} ]\n"                                                      \
    "    imports: [ {service: {account: A, subject: \"req.>\"}, to: \"breq.>\"},\n"                \
    "               {service: {account: A, subject: \"multi\"}},\n"                                \
    "               {service: {account: A, subject: \"short\"}} ]\n"                               \
    "  }\n"                                                                                        \
    "  C { users: [ {user: c, password: p} ] }\n"                                                  \
    "}\n"

/* A's responder: answers "<subject> <R|?>" (R when the reply is an `_R_` subject) on the reply. */
static void
on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *arg)
{
    (void)sub;
    (void)arg;
    const char *reply = natsMsg_GetReply(m);
    if (reply != NULL) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s %s", natsMsg_GetSubject(m),
                 strncmp(reply, "_R_.", 4) == 0 ? "R" : "?");
        natsConnection_PublishString(nc, reply, buf);
    }
    natsMsg_Destroy(m);
}

Test(integ_accounts, service_request_reply)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, SERVICE_CONF);
    natsConnection *ra = cconnect(srv, "a");
    natsConnection *nb = cconnect(srv, "b");
    natsConnection *nc = cconnect(srv, "c");
    natsSubscription *resp = NULL;
    OK(natsConnection_Subscribe(&resp, ra, "req.>", on_request, NULL));
    OK(natsConnection_Flush(ra));
    for (int i = 0; i < 20; i++) {
        natsMsg *m = NULL;
        OK(natsConnection_RequestString(&m, nb, "breq.x", "hi", ND_INTEG_TIMEOUT_MS));
        cr_assert_str_eq(natsMsg_GetData(m), "req.x R");
        natsMsg_Destroy(m);
    }
    /* B's remapped subject only: B publishing on A's subject reaches nobody in A. */
    natsMsg *m = NULL;
    natsStatus s = natsConnection_RequestString(&m, nb, "req.x", "hi", ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_NO_RESPONDERS, "B's req.x: %s", natsStatus_GetText(s));
    /* No import, no service. */
    s = natsConnection_RequestString(&m, nc, "breq.x", "hi", ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_NO_RESPONDERS, "C's breq.x: %s", natsStatus_GetText(s));
    s = natsConnection_RequestString(&m, nc, "req.x", "hi", ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_NO_RESPONDERS, "C's req.x: %s", natsStatus_GetText(s));
    natsSubscription_Destroy(resp);
    natsConnection_Destroy(ra);
    natsConnection_Destroy(nb);
    natsConnection_Destroy(nc);
    nd_integ_conf_stop(srv, &cf);
}

/* Sends one request from B on subject (A's asubject) with reply "inbox.b"; A's synchronous
 * responder answers it
 * n times ("r0", "r1", ...) after sleeping delay_ms. Returns: the responses B received before
 * the marker (a message B sends itself on "inbox.marker"). */
static int
responses(const char *subject, const char *asubject, int n, int delay_ms)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, SERVICE_CONF);
    natsConnection *ra = cconnect(srv, "a");
    natsConnection *sb = cconnect(srv, "b"), *mb = cconnect(srv, "b");
    natsSubscription *req = csub(ra, asubject);
    natsSubscription *inbox = csub(sb, "inbox.>");
    OK(natsConnection_PublishRequestString(mb, subject, "inbox.b", "q"));
    OK(natsConnection_Flush(mb));
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, req, ND_INTEG_TIMEOUT_MS));
    cr_assert_str_eq(natsMsg_GetSubject(m), asubject);
    char reply[128];
    snprintf(reply, sizeof reply, "%s", natsMsg_GetReply(m));
    natsMsg_Destroy(m);
    if (delay_ms > 0)
        usleep((useconds_t)delay_ms * 1000);
    for (int i = 0; i < n; i++) {
        char data[16];
        snprintf(data, sizeof data, "r%d", i);
        OK(natsConnection_PublishString(ra, reply, data));
    }
    OK(natsConnection_Flush(ra));
    cpub(mb, "inbox.marker", "marker");
    int got = 0;
    for (;;) {
        OK(natsSubscription_NextMsg(&m, inbox, ND_INTEG_TIMEOUT_MS));
        bool marker = strcmp(natsMsg_GetSubject(m), "inbox.marker") == 0;
        if (!marker) {
            char want[16];
            snprintf(want, sizeof want, "r%d", got);
            cr_assert_str_eq(natsMsg_GetSubject(m), "inbox.b");
            cr_assert_str_eq(natsMsg_GetData(m), want);
            got++;
        }
        natsMsg_Destroy(m);
        if (marker)
            break;
    }
    natsSubscription_Destroy(req);
    natsSubscription_Destroy(inbox);
    natsConnection_Destroy(ra);
    natsConnection_Destroy(sb);
    natsConnection_Destroy(mb);
    nd_integ_conf_stop(srv, &cf);
    return got;
}

Test(integ_accounts, service_singleton_one_response)
{
    cr_assert_eq(responses("breq.one", "req.one", 3, 0), 1);
}

Test(integ_accounts, service_stream_many_responses)
{
    cr_assert_eq(responses("multi", "multi", 3, 0), 3);
}

/* Past the response threshold (200 ms; the responder waits 1.5 s) the route is gone. */
Test(integ_accounts, service_response_threshold)
{
    cr_assert_eq(responses("short", "short", 1, 1500), 0);
}

/* ---- Nats-Request-Info through service imports ------------------------------------------- */

#define FORGED "{\"acc\":\"SYS\",\"user\":\"admin\"}"

/* Publishes a request from nc on subject with reply, an X-A header and a forged
 * Nats-Request-Info header (or no headers at all). */
static void
forged_request(natsConnection *nc, const char *subject, const char *reply, bool headers)
{
    natsMsg *m = NULL;
    OK(natsMsg_Create(&m, subject, reply, "hi", 2));
    if (headers) {
        OK(natsMsgHeader_Set(m, "X-A", "1"));
        OK(natsMsgHeader_Set(m, "Nats-Request-Info", FORGED));
    }
    OK(natsConnection_PublishMsg(nc, m));
    OK(natsConnection_Flush(nc));
    natsMsg_Destroy(m);
}

/* Receives the next request on sub, checks its subject, that X-A came through when sent, and
 * that it carries exactly one Nats-Request-Info header; returns that header parsed (owned by
 * the caller), its reply subject copied into reply (may be NULL). */
static json_t *
request_info(natsSubscription *sub, const char *subject, bool xa, char *reply, size_t rlen)
{
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert_str_eq(natsMsg_GetSubject(m), subject);
    cr_assert_str_eq(natsMsg_GetData(m), "hi");
    const char *v = NULL;
    if (xa) {
        OK(natsMsgHeader_Get(m, "X-A", &v));
        cr_assert_str_eq(v, "1");
    }
    const char **vals = NULL;
    int n = 0;
    OK(natsMsgHeader_Values(m, "Nats-Request-Info", &vals, &n));
    cr_assert_eq(n, 1, "%d Nats-Request-Info headers on %s", n, subject);
    json_error_t err;
    json_t *o = json_loads(vals[0], 0, &err);
    cr_assert_not_null(o, "Nats-Request-Info on %s is not JSON: %s", subject, vals[0]);
    cr_assert(strcmp(vals[0], FORGED) != 0);
    free((void *)vals);
    if (reply != NULL)
        snprintf(reply, rlen, "%s", natsMsg_GetReply(m) ? natsMsg_GetReply(m) : "");
    natsMsg_Destroy(m);
    return o;
}

/* Checks that o has exactly the keys of want (space-separated, in this order) besides "rtt",
 * which is present while the server knows the requester's round trip: then a positive integer
 * (nanoseconds). The values differ between servers, so only its form is checked. */
static void
expect_keys(json_t *o, const char *want)
{
    char got[512] = "";
    for (void *it = json_object_iter(o); it != NULL; it = json_object_iter_next(o, it)) {
        const char *k = json_object_iter_key(it);
        if (strcmp(k, "rtt") == 0) {
            json_t *rtt = json_object_iter_value(it);
            cr_assert(json_is_integer(rtt) && json_integer_value(rtt) > 0, "rtt is not a duration");
            continue;
        }
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", got[0] ? " " : "", k);
    }
    cr_assert_str_eq(got, want);
}

static void
expect_str(json_t *o, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(o, key));
    cr_assert(v != NULL && strcmp(v, want) == 0, "%s: %s, wanted %s", key, v ? v : "(none)", want);
}

/* The details a `share: true` import passes on: who connected, from where, with what. */
static void
expect_details(json_t *o, natsConnection *requester, const char *user)
{
    expect_str(o, "user", user);
    expect_str(o, "host", "127.0.0.1");
    expect_str(o, "lang", "C");
    expect_str(o, "ver", nats_GetVersion());
    expect_str(o, "kind", "Client");
    expect_str(o, "client_type", "nats");
    char id[128];
    OK(natsConnection_GetConnectedServerId(requester, id, sizeof id));
    expect_str(o, "server", id); /* the server's name is its id when none is configured */
    json_t *cid = json_object_get(o, "id");
    cr_assert(json_is_integer(cid) && json_integer_value(cid) > 0);
    const char *start = json_string_value(json_object_get(o, "start"));
    cr_assert(start != NULL && strlen(start) >= 20 && start[4] == '-' && start[10] == 'T' &&
                  start[strlen(start) - 1] == 'Z',
              "start: %s", start ? start : "(none)");
}

#define REQINFO_CONF                                                                               \
    "system_account: SYS\n"                                                                        \
    "accounts {\n"                                                                                 \
    "  A {\n"                                                                                      \
    "    users: [ {user: a, password: p} ]\n"                                                      \
    "    exports: [ {service: \"svc\"}, {service: \"shr\"} ]\n"                                    \
    "  }\n"                                                                                        \
    "  B {\n"                                                                                      \
    "    users: [ {user: b, password: p} ]\n"                                                      \
    "    imports: [ {service: {account: A, subject: \"svc\"}},\n"                                  \
    "               {service: {account: A, subject: \"shr\"}, share: true},\n"                     \
    "               {service: {account: SYS, subject: \"sys.svc\"}} ]\n"                           \
    "  }\n"                                                                                        \
    "  SYS {\n"                                                                                    \
    "    users: [ {user: s, password: p} ]\n"                                                      \
    "    exports: [ {service: \"sys.svc\"} ]\n"                                                    \
    "  }\n"                                                                                        \
    "}\n"

/* A client of B cannot speak for another account: the exporter's responder sees the server's
 * Nats-Request-Info ({"acc":"B"...}), never the one B sent, and B's other headers unchanged. A
 * request without headers gets the header too. `share: true` adds the requester's details, an
 * import from the system account the server's name. */
Test(integ_accounts, service_request_info_not_forgeable)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, REQINFO_CONF);
    natsConnection *ra = cconnect(srv, "a"), *rs = cconnect(srv, "s");
    natsConnection *nb = cconnect(srv, "b");
    natsSubscription *svc = csub(ra, "svc"), *shr = csub(ra, "shr"), *sys = csub(rs, "sys.svc");

    forged_request(nb, "svc", "inbox.b", true);
    json_t *o = request_info(svc, "svc", true, NULL, 0);
    expect_keys(o, "acc");
    expect_str(o, "acc", "B");
    json_decref(o);

    forged_request(nb, "svc", NULL, false);
    o = request_info(svc, "svc", false, NULL, 0);
    expect_keys(o, "acc");
    expect_str(o, "acc", "B");
    json_decref(o);

    forged_request(nb, "shr", "inbox.b", true);
    o = request_info(shr, "shr", true, NULL, 0);
    expect_keys(o, "start host id acc user lang ver server kind client_type");
    expect_str(o, "acc", "B");
    expect_details(o, nb, "b");
    json_decref(o);

    forged_request(nb, "sys.svc", "inbox.b", true);
    o = request_info(sys, "sys.svc", true, NULL, 0);
    expect_keys(o, "acc server");
    expect_str(o, "acc", "B");
    char id[128];
    OK(natsConnection_GetConnectedServerId(nb, id, sizeof id));
    expect_str(o, "server", id);
    json_decref(o);

    natsSubscription *subs[] = {svc, shr, sys};
    for (size_t i = 0; i < 3; i++)
        natsSubscription_Destroy(subs[i]);
    natsConnection_Destroy(ra);
    natsConnection_Destroy(rs);
    natsConnection_Destroy(nb);
    nd_integ_conf_stop(srv, &cf);
}

/* natsd removes a forged header whatever the case of its name (and every copy of it): clients
 * that canonicalize header names (nats.go) would otherwise read a forged `nats-request-info` line,
 * which comes first. nats-server 2.9.10 removes only the first exact-case line, so this case is
 * skipped against it. */
Test(integ_accounts, service_request_info_any_case)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server keeps a forged header in another case");
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, REQINFO_CONF);
    natsConnection *ra = cconnect(srv, "a"), *nb = cconnect(srv, "b");
    natsSubscription *svc = csub(ra, "svc");
    natsMsg *m = NULL;
    OK(natsMsg_Create(&m, "svc", "inbox.b", "hi", 2));
    OK(natsMsgHeader_Add(m, "nats-request-info", FORGED));
    OK(natsMsgHeader_Add(m, "NATS-REQUEST-INFO", FORGED));
    OK(natsMsgHeader_Add(m, "Nats-Request-Info", FORGED));
    OK(natsMsgHeader_Add(m, "Nats-Request-Info", FORGED));
    OK(natsMsgHeader_Set(m, "X-A", "1"));
    OK(natsConnection_PublishMsg(nb, m));
    natsMsg_Destroy(m);
    OK(natsSubscription_NextMsg(&m, svc, ND_INTEG_TIMEOUT_MS));
    const char **keys = NULL;
    int n = 0;
    OK(natsMsgHeader_Keys(m, &keys, &n));
    int infos = 0;
    for (int i = 0; i < n; i++)
        if (strcasecmp(keys[i], "Nats-Request-Info") == 0)
            infos++;
    free((void *)keys);
    cr_assert_eq(infos, 1, "%d Nats-Request-Info keys", infos);
    const char **vals = NULL;
    OK(natsMsgHeader_Values(m, "Nats-Request-Info", &vals, &n));
    cr_assert(n == 1 && strstr(vals[0], "\"acc\":\"B\"") != NULL, "got %s", n ? vals[0] : "");
    free((void *)vals);
    natsMsg_Destroy(m);
    natsSubscription_Destroy(svc);
    natsConnection_Destroy(ra);
    natsConnection_Destroy(nb);
    nd_integ_conf_stop(srv, &cf);
}

#define CHAIN_CONF                                                                                 \
    "accounts {\n"                                                                                 \
    "  A {\n"                                                                                      \
    "    users: [ {user: a, password: p} ]\n"                                                      \
    "    exports: [ {service: \"a.svc\"}, {service: \"a.shr\"} ]\n"                                \
    "  }\n"                                                                                        \
    "  B {\n"                                                                                      \
    "    users: [ {user: b, password: p} ]\n"                                                      \
    "    imports: [ {service: {account: A, subject: \"a.svc\"}, to: \"b.svc\"},\n"                 \
    "               {service: {account: A, subject: \"a.shr\"}, to: \"b.shr\", share: true} ]\n"   \
    "    exports: [ {service: \"b.svc\"}, {service: \"b.shr\"} ]\n"                                \
    "  }\n"                                                                                        \
    "  C {\n"                                                                                      \
    "    users: [ {user: c, password: p} ]\n"                                                      \
    "    imports: [ {service: {account: B, subject: \"b.svc\"}, to: \"c.svc\", share: true},\n"    \
    "               {service: {account: B, subject: \"b.shr\"}, to: \"c.shr\"} ]\n"                \
    "  }\n"                                                                                        \
    "}\n"

/* A chained import (C imports from B what B imports from A): the request reaches B's
 * subscribers with the header of the first hop (C's import) and A's with that header kept, plus
 * "svc":"B"; the second hop adds the server's name when it shares and the first did not. A's
 * answer on its `_R_` reply goes back through B to C's reply subject. */
Test(integ_accounts, service_request_info_chained)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CHAIN_CONF);
    natsConnection *ra = cconnect(srv, "a"), *rb = cconnect(srv, "b");
    natsConnection *nc = cconnect(srv, "c");
    natsSubscription *a_all = csub(ra, "a.*"), *b_all = csub(rb, "b.*");
    natsSubscription *inbox = csub(nc, "inbox.c");

    /* c.svc: C's import shares, B's does not. */
    forged_request(nc, "c.svc", "inbox.c", true);
    json_t *o = request_info(b_all, "b.svc", true, NULL, 0);
    expect_keys(o, "start host id acc user lang ver server kind client_type");
    expect_str(o, "acc", "C");
    expect_details(o, nc, "c");
    json_decref(o);
    char reply[128];
    o = request_info(a_all, "a.svc", true, reply, sizeof reply);
    expect_keys(o, "start host id acc svc user lang ver server kind client_type");
    expect_str(o, "acc", "C");
    expect_str(o, "svc", "B");
    expect_details(o, nc, "c");
    json_decref(o);
    cr_assert(strncmp(reply, "_R_.", 4) == 0, "A's reply: %s", reply);
    cpub(ra, reply, "answer 1");
    expect_msg(inbox, "inbox.c", "answer 1");

    /* c.shr: C's import does not share, B's does: only the server's name is added. */
    forged_request(nc, "c.shr", "inbox.c", true);
    o = request_info(b_all, "b.shr", true, NULL, 0);
    expect_keys(o, "acc");
    expect_str(o, "acc", "C");
    json_decref(o);
    o = request_info(a_all, "a.shr", true, reply, sizeof reply);
    expect_keys(o, "acc svc server");
    expect_str(o, "acc", "C");
    expect_str(o, "svc", "B");
    json_decref(o);
    cpub(ra, reply, "answer 2");
    expect_msg(inbox, "inbox.c", "answer 2");

    natsSubscription_Destroy(a_all);
    natsSubscription_Destroy(b_all);
    natsSubscription_Destroy(inbox);
    natsConnection_Destroy(ra);
    natsConnection_Destroy(rb);
    natsConnection_Destroy(nc);
    nd_integ_conf_stop(srv, &cf);
}

/* Two accounts importing each other's whole stream export with prefixes: not a cycle (nats-server
 * accepts it), and an imported message is not passed back, so nothing loops. */
Test(integ_accounts, stream_import_two_way_prefixes)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(
        &cf, "accounts {\n"
             "  A { users: [ {user: a, password: p} ]\n"
             "      exports: [ {stream: \">\"} ]\n"
             "      imports: [ {stream: {account: B, subject: \">\"}, prefix: fromb} ] }\n"
             "  B { users: [ {user: b, password: p} ]\n"
             "      exports: [ {stream: \">\"} ]\n"
             "      imports: [ {stream: {account: A, subject: \">\"}, prefix: froma} ] }\n"
             "}\n");
    natsConnection *pa = cconnect(srv, "a"), *sa = cconnect(srv, "a");
    natsConnection *pb = cconnect(srv, "b"), *sb = cconnect(srv, "b");
    natsSubscription *a_all = csub(sa, ">"), *b_all = csub(sb, ">");
    cpub(pa, "x", "1");
    expect_msg(a_all, "x", "1");
    expect_msg(b_all, "froma.x", "1");
    cpub(pb, "y", "2");
    expect_msg(b_all, "y", "2");
    expect_msg(a_all, "fromb.y", "2");
    /* Each marker also crosses to the other account: it comes next there, with nothing (such as
     * fromb.froma.x) before it. */
    cpub(pa, "zz.marker", "marker");
    expect_msg(a_all, "zz.marker", "marker");
    expect_msg(b_all, "froma.zz.marker", "marker");
    cpub(pb, "zz.marker", "marker");
    expect_msg(b_all, "zz.marker", "marker");
    expect_msg(a_all, "fromb.zz.marker", "marker");
    natsSubscription_Destroy(a_all);
    natsSubscription_Destroy(b_all);
    natsConnection *conns[] = {pa, sa, pb, sb};
    for (size_t i = 0; i < 4; i++)
        natsConnection_Destroy(conns[i]);
    nd_integ_conf_stop(srv, &cf);
}

/* ---- reload ------------------------------------------------------------------------------ */

/* A reload replaces the routes: a changed mapping applies to connected clients, and a removed
 * import stops the flow. */
Test(integ_accounts, reload_routes)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv =
        nd_integ_conf_start(&cf, "accounts {\n"
                                 "  A { users: [ {user: a, password: p} ]\n"
                                 "      exports: [ {stream: \"foo.>\"} ]\n"
                                 "      mappings: { \"m\": \"m.one\" } }\n"
                                 "  B { users: [ {user: b, password: p} ]\n"
                                 "      imports: [ {stream: {account: A, subject: \"foo.>\"}} ] }\n"
                                 "}\n");
    natsConnection *pa = cconnect(srv, "a"), *sa = cconnect(srv, "a");
    natsConnection *sb = cconnect(srv, "b"), *mb = cconnect(srv, "b");
    natsSubscription *a_all = csub(sa, ">");
    natsSubscription *b_all = csub(sb, ">");
    cpub(pa, "m", "1");
    cpub(pa, "foo.x", "2");
    expect_msg(a_all, "m.one", "1");
    expect_msg(a_all, "foo.x", "2");
    expect_msg(b_all, "foo.x", "2");
    nd_integ_conf_write(&cf, "accounts {\n"
                             "  A { users: [ {user: a, password: p} ]\n"
                             "      mappings: { \"m\": \"m.two\" } }\n"
                             "  B { users: [ {user: b, password: p} ] }\n"
                             "}\n");
    nd_integ_server_reload(srv, true);
    cpub(pa, "m", "3");
    cpub(pa, "foo.x", "4");
    expect_msg(a_all, "m.two", "3");
    expect_msg(a_all, "foo.x", "4");
    expect_nothing(b_all, mb);
    natsSubscription_Destroy(a_all);
    natsSubscription_Destroy(b_all);
    natsConnection *conns[] = {pa, sa, sb, mb};
    for (size_t i = 0; i < 4; i++)
        natsConnection_Destroy(conns[i]);
    nd_integ_conf_stop(srv, &cf);
}

/* An account importing its own export (the same subject): a request reaches A's responder
 * twice, as nats-server 2.9.10 delivers it, once directly (reply as sent) and once through the
 * import (an `_R_` reply that leads back to the requester). Raw protocol without headers, so
 * the copy through the import has no Nats-Request-Info header on either server. Issue 11,
 * defect 7. */
Test(integ_accounts, service_import_of_own_export)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv =
        nd_integ_conf_start(&cf, "accounts {\n"
                                 "  A { users: [ {user: a, password: p} ]\n"
                                 "      exports: [ {service: \"svc\"} ]\n"
                                 "      imports: [ {service: {account: A, subject: \"svc\"}} ] }\n"
                                 "}\n");
    nd_integ_conn_t *r = nd_integ_conn_open(srv), *q = nd_integ_conn_open(srv);
    ND_SEND(r, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"p\"}\r\nSUB svc 1\r\n"
               "PING\r\n");
    ND_EXPECT(r, "PONG\r\n");
    ND_SEND(q, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"p\"}\r\nSUB inbox 9\r\n"
               "PUB svc inbox 1\r\ny\r\nPING\r\n");
    ND_EXPECT(q, "PONG\r\n");
    char rsubj[128] = "";
    bool direct = false;
    for (int i = 0; i < 2; i++) {
        char *f = nd_integ_read_frame(r);
        cr_assert_not_null(f);
        if (strcmp(f, "MSG svc 1 inbox 1\r\ny\r\n") == 0) {
            cr_assert(!direct, "the direct copy twice");
            direct = true;
        } else {
            int n = 0;
            cr_assert(sscanf(f, "MSG svc 1 %127s 1\r\n%n", rsubj, &n) == 1 &&
                          strncmp(rsubj, "_R_.", 4) == 0 && strcmp(f + n, "y\r\n") == 0,
                      "not the copy through the import: %s", f);
        }
        free(f);
    }
    cr_assert(direct && rsubj[0] != '\0');
    ND_PING(r); /* and no third copy */
    /* Answers on both replies reach the requester. */
    char buf[192];
    snprintf(buf, sizeof buf, "PUB inbox 1\r\n1\r\nPUB %s 1\r\n2\r\nPING\r\n", rsubj);
    ND_SENDS(r, buf);
    ND_EXPECT(r, "PONG\r\n");
    ND_SEND(q, "PING\r\n");
    ND_EXPECT(q, "MSG inbox 9 1\r\n1\r\nMSG inbox 9 1\r\n2\r\nPONG\r\n");
    nd_integ_conn_close(r);
    nd_integ_conn_close(q);
    nd_integ_conf_stop(srv, &cf);
}
