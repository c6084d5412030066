/* Unit tests of internal clients (src/net/iclient.h) on a server running in this process
 * (test_inproc.h): the $SYS request service answers from the moment natsd_start returns, a
 * `$SYS.REQ.` subject it does not serve gets no-responders like any other subject, and a
 * service whose mailbox is full answers a request with the 503 status instead of queuing it. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdlib.h>

#include "auth/auth.h"
#include "net/iclient.h"
#include "test_inproc.h"

TestSuite(iclient, .fini = nd_integ_cleanup, .timeout = 120);

static const char SYSCONF[] = "system_account: SYS\n"
                              "accounts {\n"
                              "  SYS { users: [{user: sys, password: sys}] }\n"
                              "  A { users: [{user: a, password: a}] }\n"
                              "}\n";
static const char SYSUSER[] = "{\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                              "\"user\":\"sys\",\"pass\":\"sys\"}";

/* The first request, sent right after the server started, is answered (the service's
 * subscriptions are in place before natsd_start returns): a JSON object naming the server. */
Test(iclient, server_ping_answered)
{
    inproc_t p = inproc_start(SYSCONF);
    nd_integ_conn_t *c = inproc_client(&p, SYSUSER);
    ND_SEND(c, "SUB _INBOX.t 1\r\nPUB $SYS.REQ.SERVER.PING _INBOX.t 0\r\n\r\n");
    char *f = nd_integ_read_frame(c);
    cr_assert_not_null(f);
    cr_assert(strncmp(f, "MSG _INBOX.t 1 ", 15) == 0, "not an answer: %.200s", f);
    const char *body = strstr(f, "\r\n");
    cr_assert(body != NULL && body[2] == '{', "%.200s", f);
    cr_assert_not_null(strstr(body, "\"server\":{"), "%.300s", f);
    cr_assert_not_null(strstr(body, "\"statsz\":{"), "%.300s", f);
    free(f);
    ND_PING(c);
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* The service subscribes to what it serves and nothing else: another `$SYS.REQ.` subject gets
 * the no-responders status as any unserved subject does. */
Test(iclient, unserved_request_gets_no_responders)
{
    inproc_t p = inproc_start(SYSCONF);
    nd_integ_conn_t *c = inproc_client(&p, SYSUSER);
    ND_SEND(c, "SUB _INBOX.t 1\r\nPUB $SYS.REQ.NO.SUCH.SERVICE _INBOX.t 0\r\n\r\nPING\r\n");
    ND_EXPECT(c, "HMSG _INBOX.t 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* A test service: its handler holds the worker until the test releases it, so the test controls
 * exactly how many requests wait in the mailbox. */
typedef struct svc {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started; /* handler calls begun */
    bool released;
} svc_t;

static void
on_svc(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    svc_t *s = arg;
    pthread_mutex_lock(&s->mu);
    s->started++;
    pthread_cond_broadcast(&s->cv);
    while (!s->released)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    if (m->reply_len > 0)
        nd_iclient_publish(ctx, ic, m->reply, NULL, NULL, 0, m->data, m->data_len);
}

/* With queue_limit 1: the first request is being handled, the second waits in the mailbox, and
 * the third finds the mailbox full: it is answered at once with the 503 status, not queued. Once
 * released, the service answers the first two, and nothing comes for the third. */
Test(iclient, queue_limit_answers_503)
{
    inproc_bare_t b = inproc_bare_start(4); /* the handler holds one worker */
    nd_server_t *srv = b.srv;

    svc_t s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    const char *subjects[] = {"svc.echo"};
    nd_iclient_t *ic = nd_iclient_start(srv, srv->gacct, ND_CONN_SYSTEM, "test service", subjects,
                                        1, 1, on_svc, &s);
    cr_assert_eq(nd_iclient_overloaded(ic), 0);

    nd_integ_conn_t *c = nd_integ_conn_open_port(srv->port);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
               "SUB r.* 1\r\nPUB svc.echo r.1 1\r\n1\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    pthread_mutex_lock(&s.mu);
    while (s.started < 1)
        pthread_cond_wait(&s.cv, &s.mu); /* the handler has the first one */
    pthread_mutex_unlock(&s.mu);
    /* The PONG after the second PUB means the server has queued it for the service. */
    ND_SEND(c, "PUB svc.echo r.2 1\r\n2\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    ND_SEND(c, "PUB svc.echo r.3 1\r\n3\r\nPING\r\n");
    ND_EXPECT(c, "HMSG r.3 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\n");
    cr_assert_eq(nd_iclient_overloaded(ic), 1);

    pthread_mutex_lock(&s.mu);
    s.released = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    ND_EXPECT(c, "MSG r.1 1 1\r\n1\r\nMSG r.2 1 1\r\n2\r\n");
    ND_PING(c);
    pthread_mutex_lock(&s.mu);
    cr_assert_eq(s.started, 2);
    pthread_mutex_unlock(&s.mu);
    nd_integ_conn_close(c);

    inproc_bare_stop(&b);
}

/* What a service receives: the payload bytes as published, with the header block apart (HPUB;
 * an empty block "NATS/1.0\r\n\r\n" is handed over too, as to a client with headers), and
 * who sent it. The service echoes the data and the header length to the reply. */
static void
on_echo(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)arg;
    char out[256];
    int n = snprintf(out, sizeof out, "%.*s|%zu|%s|%s", (int)m->data_len, m->data, m->hdr_len,
                     m->from->user, m->from->kind == ND_CONN_CLIENT ? "client" : "other");
    nd_iclient_publish(ctx, ic, m->reply, NULL, NULL, 0, out, (size_t)n);
}

Test(iclient, receives_payload_and_sender)
{
    inproc_bare_t b = inproc_bare_start(0);
    nd_server_t *srv = b.srv;
    const char *subjects[] = {"svc.>"};
    (void)nd_iclient_start(srv, srv->gacct, ND_CONN_SYSTEM, "echo", subjects, 1, 0, on_echo, NULL);

    nd_integ_conn_t *c = nd_integ_conn_open_port(srv->port);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB r 1\r\n"
               "PUB svc.a r 5\r\nhello\r\nPUB svc.b r 0\r\n\r\n"
               "HPUB svc.c r 18 21\r\nNATS/1.0\r\nA: B\r\n\r\nxyz\r\n"
               "HPUB svc.d r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n");
    ND_EXPECT(c, "MSG r 1 15\r\nhello|0||client\r\nMSG r 1 10\r\n|0||client\r\n"
                 "MSG r 1 14\r\nxyz|18||client\r\nMSG r 1 13\r\nhi|12||client\r\n");
    nd_integ_conn_close(c);

    inproc_bare_stop(&b);
}

/* A service in account B reached through A's import of B's export: the sender is A's client,
 * and the delivery says it came through the import of "svc.>" (nd_sender_t.imported/.import).
 * The answer travels back through the import's `_R_` route to A's inbox. */
static void
on_via(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)arg;
    char out[256];
    int n = snprintf(out, sizeof out, "%s|%s|%s|%d", m->from->import, nd_acct_name(m->from->acct),
                     m->from->user, m->from->imported ? 1 : 0);
    nd_iclient_publish(ctx, ic, m->reply, NULL, NULL, 0, out, (size_t)n);
}

Test(iclient, sender_through_service_import)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    char err[512];
    cr_assert(nd_opts_apply_config_string(
                  &o,
                  "accounts {\n"
                  "  A { users: [{user: a, password: a}],\n"
                  "      imports: [{service: {account: B, subject: \"svc.>\"}}] }\n"
                  "  B { users: [{user: b, password: b}], exports: [{service: \"svc.>\"}] }\n"
                  "}\n",
                  "test.conf", err, sizeof err) >= 0,
              "%s", err);
    nd_free(o.host);
    o.host = nd_xstrdup("127.0.0.1");
    o.port = -1;
    nd_pool_t *pool = nd_pool_new(o.workers);
    nd_server_t *srv = nd_server_start(&o, pool);
    nd_opts_free(&o);
    cr_assert_not_null(srv);
    nd_pool_start(pool);
    nd_server_accept(srv);

    nd_ctx_t *ctx = nd_ctx_external_new(pool);
    nd_auth_t *a = nd_auth_slot_get(srv->auth);
    nd_acct_t *b = NULL;
    for (size_t i = 0; i < a->naccts; i++)
        if (strcmp(a->accts[i].name, "B") == 0)
            b = a->accts[i].acct;
    cr_assert_not_null(b);
    const char *subjects[] = {"svc.>"};
    (void)nd_iclient_start(srv, b, ND_CONN_SYSTEM, "via", subjects, 1, 0, on_via, NULL);
    nd_auth_unref(ctx, a);
    nd_ctx_external_free(ctx);

    nd_integ_conn_t *c = nd_integ_conn_open_port(srv->port);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"a\"}\r\nSUB r 1\r\n"
               "PUB svc.x r 2\r\nhi\r\n");
    ND_EXPECT(c, "MSG r 1 11\r\nsvc.>|A|a|1\r\n");
    nd_integ_conn_close(c);

    nd_server_stop_accepting(srv);
    nd_pool_shutdown(pool);
    nd_server_free(srv);
    nd_pool_free(pool);
}
