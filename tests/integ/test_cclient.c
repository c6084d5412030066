/* Integration tests with the NATS C client (libnats, nats.c 3.4): the server under test (harness.h:
 * NATSD_TEST_SERVER, default this build's natsd) driven by a real client library, as
 * applications use it. Each test was first checked against the reference nats-server 2.9.10.
 *
 * Synchronisation is natsConnection_Flush (a PING/PONG round trip: after it returns, the server
 * has processed everything published before, and every message it queued to this connection
 * before the PONG has been handed to the subscriptions) and condition variables signalled from
 * the library's callbacks. Every wait has a hang guard; nothing depends on timing otherwise.
 * nats.c's reconnect wait (set to 50 ms here) is a retry interval, not a synchronisation.
 */
#include <criterion/criterion.h>

#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    /* Releases the library's threads and memory, so a sanitizer build sees no leak. */
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_nats_c, .fini = suite_fini, .timeout = 180);

#define OK(call) ND_NATS_OK(call)

static natsConnection *
connect_to(nd_integ_server_t *srv)
{
    char url[64];
    nd_integ_nats_url(srv, url, sizeof url);
    natsConnection *nc = NULL;
    OK(natsConnection_ConnectTo(&nc, url));
    return nc;
}

/* Receives the next message of a synchronous subscription and checks its data. */
static void
expect_msg(natsSubscription *sub, const char *data)
{
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert(natsMsg_GetDataLength(m) == (int)strlen(data) &&
                  memcmp(natsMsg_GetData(m), data, strlen(data)) == 0,
              "got \"%.*s\", want \"%s\"", natsMsg_GetDataLength(m), natsMsg_GetData(m), data);
    natsMsg_Destroy(m);
}

/* Asserts that a synchronous subscription has nothing queued. Only meaningful after a flush of
 * its connection, which guarantees that anything the server sent earlier has been queued. */
static void
expect_none_queued(natsSubscription *sub)
{
    int msgs = -1, bytes = -1;
    OK(natsSubscription_GetPending(sub, &msgs, &bytes));
    cr_assert(msgs == 0, "%d unexpected messages queued", msgs);
}

/* ---- tests -------------------------------------------------------------------------------- */

Test(integ_nats_c, pub_sub)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *sc = connect_to(srv), *pc = connect_to(srv);
    natsSubscription *sub = NULL, *wild = NULL;
    OK(natsConnection_SubscribeSync(&sub, sc, "greet.joe"));
    OK(natsConnection_SubscribeSync(&wild, sc, "greet.*"));
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));

    OK(natsConnection_PublishString(pc, "greet.joe", "hello joe"));
    OK(natsConnection_PublishString(pc, "greet.sue", "hello sue"));
    OK(natsConnection_Publish(pc, "greet.empty", NULL, 0));
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));

    expect_msg(sub, "hello joe");
    expect_msg(wild, "hello joe");
    expect_msg(wild, "hello sue");
    expect_msg(wild, "");
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));
    expect_none_queued(sub);

    /* After Unsubscribe (and a flush to make the server see it) nothing more arrives. */
    OK(natsSubscription_Unsubscribe(wild));
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_PublishString(pc, "greet.joe", "again"));
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));
    expect_msg(sub, "again");
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));
    expect_none_queued(sub);

    natsSubscription_Destroy(sub);
    natsSubscription_Destroy(wild);
    natsConnection_Destroy(sc);
    natsConnection_Destroy(pc);
    nd_integ_server_stop(srv);
}

Test(integ_nats_c, flush_after_many_publishes)
{
    enum { N = 2000 };
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *nc = connect_to(srv);
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "many"));
    OK(natsSubscription_SetPendingLimits(sub, -1, -1));
    for (int i = 0; i < N; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", i);
        OK(natsConnection_PublishString(nc, "many", buf));
    }
    /* One flush: every message is then queued to the subscription, in order. */
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    int msgs = 0, bytes = 0;
    OK(natsSubscription_GetPending(sub, &msgs, &bytes));
    cr_assert(msgs == N, "after flush %d of %d messages are queued", msgs, N);
    for (int i = 0; i < N; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", i);
        expect_msg(sub, buf);
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    nd_integ_server_stop(srv);
}

static void
on_request(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, "re:%.*s", natsMsg_GetDataLength(msg), natsMsg_GetData(msg));
    if (natsMsg_GetReply(msg) != NULL)
        natsConnection_Publish(nc, natsMsg_GetReply(msg), buf, n);
    natsMsg_Destroy(msg);
}

Test(integ_nats_c, request_reply)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *rc = connect_to(srv), *nc = connect_to(srv);
    natsSubscription *svc = NULL;
    OK(natsConnection_Subscribe(&svc, rc, "svc.echo", on_request, NULL));
    OK(natsConnection_FlushTimeout(rc, ND_INTEG_TIMEOUT_MS));

    for (int i = 0; i < 20; i++) {
        char req[32], want[40];
        snprintf(req, sizeof req, "ping %d", i);
        snprintf(want, sizeof want, "re:%s", req);
        natsMsg *reply = NULL;
        OK(natsConnection_RequestString(&reply, nc, "svc.echo", req, ND_INTEG_TIMEOUT_MS));
        cr_assert(natsMsg_GetDataLength(reply) == (int)strlen(want) &&
                      memcmp(natsMsg_GetData(reply), want, strlen(want)) == 0,
                  "reply \"%.*s\", want \"%s\"", natsMsg_GetDataLength(reply),
                  natsMsg_GetData(reply), want);
        natsMsg_Destroy(reply);
    }

    /* The old style: an explicit inbox subscription and PublishRequest. */
    natsInbox *inbox = NULL;
    natsSubscription *isub = NULL;
    OK(natsInbox_Create(&inbox));
    OK(natsConnection_SubscribeSync(&isub, nc, inbox));
    OK(natsConnection_PublishRequestString(nc, "svc.echo", inbox, "manual"));
    expect_msg(isub, "re:manual");
    natsSubscription_Destroy(isub);
    natsInbox_Destroy(inbox);

    natsSubscription_Destroy(svc);
    natsConnection_Destroy(rc);
    natsConnection_Destroy(nc);
    nd_integ_server_stop(srv);
}

Test(integ_nats_c, no_responders)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *nc = connect_to(srv);
    natsMsg *reply = NULL;
    /* The server answers the request at once with a 503 status, which the library turns into
     * NATS_NO_RESPONDERS instead of waiting for the timeout. */
    natsStatus s =
        natsConnection_RequestString(&reply, nc, "nobody.home", "hi", ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_NO_RESPONDERS, "request without responders: %s, want %s",
              natsStatus_GetText(s), natsStatus_GetText(NATS_NO_RESPONDERS));
    cr_assert(reply == NULL);
    /* The connection is still usable, and a responder then answers. */
    natsSubscription *svc = NULL;
    OK(natsConnection_Subscribe(&svc, nc, "nobody.home", on_request, NULL));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_RequestString(&reply, nc, "nobody.home", "hi", ND_INTEG_TIMEOUT_MS));
    natsMsg_Destroy(reply);
    natsSubscription_Destroy(svc);
    natsConnection_Destroy(nc);
    nd_integ_server_stop(srv);
}

Test(integ_nats_c, queue_group)
{
    enum { MEMBERS = 3, N = 300 };
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *mc[MEMBERS], *pc = connect_to(srv);
    natsSubscription *member[MEMBERS], *plain = NULL;
    for (int i = 0; i < MEMBERS; i++) {
        mc[i] = connect_to(srv);
        OK(natsConnection_QueueSubscribeSync(&member[i], mc[i], "jobs", "workers"));
        OK(natsSubscription_SetPendingLimits(member[i], -1, -1));
        OK(natsConnection_FlushTimeout(mc[i], ND_INTEG_TIMEOUT_MS));
    }
    OK(natsConnection_SubscribeSync(&plain, pc, "jobs"));
    OK(natsSubscription_SetPendingLimits(plain, -1, -1));
    for (int k = 0; k < N; k++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", k);
        OK(natsConnection_PublishString(pc, "jobs", buf));
    }
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));

    int seen[N] = {0}, total = 0;
    for (int i = 0; i < MEMBERS; i++) {
        /* After this flush every message the server gave this member is queued. */
        OK(natsConnection_FlushTimeout(mc[i], ND_INTEG_TIMEOUT_MS));
        int msgs = 0, bytes = 0;
        OK(natsSubscription_GetPending(member[i], &msgs, &bytes));
        cr_assert(msgs > 0, "queue member %d got none of %d messages", i, N);
        for (int j = 0; j < msgs; j++) {
            natsMsg *m = NULL;
            OK(natsSubscription_NextMsg(&m, member[i], ND_INTEG_TIMEOUT_MS));
            int k = atoi(natsMsg_GetData(m));
            cr_assert(k >= 0 && k < N);
            seen[k]++;
            natsMsg_Destroy(m);
        }
        total += msgs;
    }
    cr_assert(total == N, "queue members got %d messages in all, want %d", total, N);
    for (int k = 0; k < N; k++)
        cr_assert(seen[k] == 1, "message %d delivered %d times to the group", k, seen[k]);
    /* The non-queue subscriber got every message. */
    int msgs = 0, bytes = 0;
    OK(natsSubscription_GetPending(plain, &msgs, &bytes));
    cr_assert(msgs == N, "plain subscriber got %d, want %d", msgs, N);

    for (int i = 0; i < MEMBERS; i++) {
        natsSubscription_Destroy(member[i]);
        natsConnection_Destroy(mc[i]);
    }
    natsSubscription_Destroy(plain);
    natsConnection_Destroy(pc);
    nd_integ_server_stop(srv);
}

Test(integ_nats_c, auto_unsubscribe)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *sc = connect_to(srv), *pc = connect_to(srv);
    natsSubscription *sub = NULL, *watch = NULL;
    OK(natsConnection_SubscribeSync(&sub, sc, "limited"));
    OK(natsSubscription_AutoUnsubscribe(sub, 3));
    /* A second subscription on another connection counts what the server publishes. */
    OK(natsConnection_SubscribeSync(&watch, pc, "limited"));
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));
    for (int i = 0; i < 6; i++) {
        char buf[8];
        snprintf(buf, sizeof buf, "%d", i);
        OK(natsConnection_PublishString(pc, "limited", buf));
    }
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_FlushTimeout(sc, ND_INTEG_TIMEOUT_MS));
    expect_msg(sub, "0");
    expect_msg(sub, "1");
    expect_msg(sub, "2");
    natsMsg *m = NULL;
    natsStatus s = natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS);
    cr_assert(s == NATS_MAX_DELIVERED_MSGS || s == NATS_INVALID_SUBSCRIPTION,
              "after the limit NextMsg returned %s", natsStatus_GetText(s));
    cr_assert(!natsSubscription_IsValid(sub));
    int msgs = 0, bytes = 0;
    OK(natsSubscription_GetPending(watch, &msgs, &bytes));
    cr_assert(msgs == 6, "watcher got %d, want 6", msgs);
    natsSubscription_Destroy(sub);
    natsSubscription_Destroy(watch);
    natsConnection_Destroy(sc);
    natsConnection_Destroy(pc);
    nd_integ_server_stop(srv);
}

static void
on_count(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    nd_integ_waiter_bump(closure);
    natsMsg_Destroy(msg);
}

Test(integ_nats_c, drain)
{
    enum { N = 200 };
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *nc = connect_to(srv);
    nd_integ_waiter_t got;
    nd_integ_waiter_init(&got);
    natsSubscription *sub = NULL;
    OK(natsConnection_Subscribe(&sub, nc, "drain.me", on_count, &got));
    OK(natsSubscription_SetPendingLimits(sub, -1, -1));
    for (int i = 0; i < N; i++)
        OK(natsConnection_PublishString(nc, "drain.me", "x"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    /* Draining unsubscribes, flushes, and completes once every queued message was handled. */
    OK(natsSubscription_Drain(sub));
    OK(natsSubscription_WaitForDrainCompletion(sub, ND_INTEG_TIMEOUT_MS));
    OK(natsSubscription_DrainCompletionStatus(sub));
    cr_assert(nd_integ_waiter_get(&got) == N, "drained subscription handled %d, want %d",
              nd_integ_waiter_get(&got), N);
    /* The server no longer delivers to it. */
    OK(natsConnection_PublishString(nc, "drain.me", "late"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    cr_assert(nd_integ_waiter_get(&got) == N);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    nd_integ_waiter_destroy(&got);
    nd_integ_server_stop(srv);
}

static void
on_closed(natsConnection *nc, void *closure)
{
    nd_integ_waiter_bump(closure);
}

Test(integ_nats_c, connection_drain)
{
    enum { N = 200 };
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    nd_integ_waiter_t got, closed;
    nd_integ_waiter_init(&got);
    nd_integ_waiter_init(&closed);
    natsOptions *o = NULL;
    char url[64];
    nd_integ_nats_url(srv, url, sizeof url);
    OK(natsOptions_Create(&o));
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetClosedCB(o, on_closed, &closed));
    natsConnection *nc = NULL, *pc = connect_to(srv);
    OK(natsConnection_Connect(&nc, o));
    natsSubscription *sub = NULL;
    OK(natsConnection_Subscribe(&sub, nc, "cdrain", on_count, &got));
    OK(natsSubscription_SetPendingLimits(sub, -1, -1));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    for (int i = 0; i < N; i++)
        OK(natsConnection_PublishString(pc, "cdrain", "x"));
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));
    /* Draining the connection lets every message the server already sent be handled, then
     * closes it. */
    OK(natsConnection_DrainTimeout(nc, ND_INTEG_TIMEOUT_MS));
    cr_assert(nd_integ_waiter_wait(&closed, 1, ND_INTEG_TIMEOUT_MS) == 1,
              "drained connection not closed");
    cr_assert(nd_integ_waiter_get(&got) == N, "drained connection handled %d, want %d",
              nd_integ_waiter_get(&got), N);
    cr_assert(natsConnection_IsClosed(nc));
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(pc);
    natsOptions_Destroy(o);
    nd_integ_waiter_destroy(&got);
    nd_integ_waiter_destroy(&closed);
    nd_integ_server_stop(srv);
}

Test(integ_nats_c, headers)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    natsConnection *nc = connect_to(srv);
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "with.headers"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));

    natsMsg *out = NULL;
    OK(natsMsg_Create(&out, "with.headers", NULL, "body", 4));
    OK(natsMsgHeader_Set(out, "X-Single", "one"));
    OK(natsMsgHeader_Add(out, "X-Multi", "a"));
    OK(natsMsgHeader_Add(out, "X-Multi", "b"));
    OK(natsConnection_PublishMsg(nc, out));
    natsMsg_Destroy(out);
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));

    natsMsg *in = NULL;
    OK(natsSubscription_NextMsg(&in, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert(natsMsg_GetDataLength(in) == 4 && memcmp(natsMsg_GetData(in), "body", 4) == 0);
    const char *v = NULL;
    OK(natsMsgHeader_Get(in, "X-Single", &v));
    cr_assert(v != NULL && strcmp(v, "one") == 0, "X-Single: %s", v ? v : "(null)");
    const char **vals = NULL;
    int count = 0;
    OK(natsMsgHeader_Values(in, "X-Multi", &vals, &count));
    cr_assert(count == 2 && strcmp(vals[0], "a") == 0 && strcmp(vals[1], "b") == 0,
              "X-Multi has %d values", count);
    free((void *)vals);
    natsMsg_Destroy(in);

    /* A request with headers, answered by a responder that echoes one header back. */
    natsSubscription *svc = NULL;
    OK(natsConnection_SubscribeSync(&svc, nc, "hdr.svc"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    natsInbox *inbox = NULL;
    natsSubscription *isub = NULL;
    OK(natsInbox_Create(&inbox));
    OK(natsConnection_SubscribeSync(&isub, nc, inbox));
    OK(natsMsg_Create(&out, "hdr.svc", inbox, "q", 1));
    OK(natsMsgHeader_Set(out, "X-Trace", "t-42"));
    OK(natsConnection_PublishMsg(nc, out));
    natsMsg_Destroy(out);
    natsMsg *got = NULL;
    OK(natsSubscription_NextMsg(&got, svc, ND_INTEG_TIMEOUT_MS));
    OK(natsMsgHeader_Get(got, "X-Trace", &v));
    natsMsg *rep = NULL;
    OK(natsMsg_Create(&rep, natsMsg_GetReply(got), NULL, "r", 1));
    OK(natsMsgHeader_Set(rep, "X-Trace", v));
    OK(natsConnection_PublishMsg(nc, rep));
    natsMsg_Destroy(rep);
    natsMsg_Destroy(got);
    natsMsg *ans = NULL;
    OK(natsSubscription_NextMsg(&ans, isub, ND_INTEG_TIMEOUT_MS));
    OK(natsMsgHeader_Get(ans, "X-Trace", &v));
    cr_assert(strcmp(v, "t-42") == 0);
    natsMsg_Destroy(ans);

    natsSubscription_Destroy(isub);
    natsInbox_Destroy(inbox);
    natsSubscription_Destroy(svc);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    nd_integ_server_stop(srv);
}

static void
on_disconnected(natsConnection *nc, void *closure)
{
    nd_integ_waiter_bump(closure);
}

static void
on_reconnected(natsConnection *nc, void *closure)
{
    nd_integ_waiter_bump(closure);
}

Test(integ_nats_c, reconnect_after_restart)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    int port = nd_integ_server_port(srv);
    nd_integ_waiter_t disc, reco;
    nd_integ_waiter_init(&disc);
    nd_integ_waiter_init(&reco);
    natsOptions *o = NULL;
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", port);
    OK(natsOptions_Create(&o));
    OK(natsOptions_SetURL(o, url));
    OK(natsOptions_SetMaxReconnect(o, -1));
    OK(natsOptions_SetReconnectWait(o, 50));
    OK(natsOptions_SetDisconnectedCB(o, on_disconnected, &disc));
    OK(natsOptions_SetReconnectedCB(o, on_reconnected, &reco));
    natsConnection *nc = NULL;
    OK(natsConnection_Connect(&nc, o));
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "survives"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    OK(natsConnection_PublishString(nc, "survives", "before"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    expect_msg(sub, "before");

    /* Stop with SIGINT (clean exit asserted), then start again on the same port. */
    nd_integ_server_stop(srv);
    cr_assert(nd_integ_waiter_wait(&disc, 1, ND_INTEG_TIMEOUT_MS) >= 1,
              "client did not see the disconnect");
    srv = nd_integ_server_start(port, NULL);
    cr_assert(nd_integ_server_port(srv) == port);
    cr_assert(nd_integ_waiter_wait(&reco, 1, ND_INTEG_PROC_TIMEOUT_MS) >= 1,
              "client did not reconnect to the restarted server");

    /* The library re-sent its SUB on reconnect; after a flush the new server has it, so a
     * publish from another connection reaches the old subscription. */
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    natsConnection *pc = connect_to(srv);
    OK(natsConnection_PublishString(pc, "survives", "after"));
    OK(natsConnection_FlushTimeout(pc, ND_INTEG_TIMEOUT_MS));
    expect_msg(sub, "after");

    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(pc);
    natsOptions_Destroy(o);
    nd_integ_waiter_destroy(&disc);
    nd_integ_waiter_destroy(&reco);
    nd_integ_server_stop(srv);
}
