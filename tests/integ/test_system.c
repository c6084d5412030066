/* Integration tests: the system account (issue 6, item 3; inventory §5.5), over the raw protocol.
 *
 * With `system_account: SYS`, a SYS client subscribed to `$SYS.ACCOUNT.*.CONNECT` and
 * `.DISCONNECT` sees a user of account A connect and disconnect (type, account, user, name,
 * server id, reason); `$SYS.REQ.SERVER.PING`, `.PING.STATSZ` and `.PING.VARZ` and
 * `$SYS.REQ.SERVER.<id>.VARZ` and `$SYS.REQ.ACCOUNT.A.CONNZ` are answered with this server's id (an
 * unknown request gets the no-responders status); a client of A subscribed to
 * `$SYS.>` sees none of the system account's traffic, and its `$SYS.REQ.SERVER.PING` gets the
 * no-responders status. The periodic `$SYS.SERVER.<id>.STATSZ` reaches a subscribed system
 * client, and `$SYS.ACCOUNT.A.SERVER.CONNS` counts A's client in (1) and out (0).
 * Every case passes unchanged against nats-server 2.9.10 (NATSD_TEST_SERVER), which is how the
 * JSON fields were checked; tests/CMakeLists.txt registers that run.
 *
 * "Sees nothing" is checked without timing: after the traffic that must not arrive, the client
 * gets a marker from its own account and the first frame it reads must be the marker.
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(integ_system, .fini = nd_integ_cleanup, .timeout = 240);

static const char CONF[] = "system_account: SYS\n"
                           "accounts {\n"
                           "  SYS { users: [{user: sys, password: sys}] }\n"
                           "  A { users: [{user: a, password: a}, {user: a2, password: a2}] }\n"
                           "}\n";

/* Connects as user (password = user name) and waits for the PONG. */
static nd_integ_conn_t *
login(nd_integ_server_t *srv, const char *user)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char buf[256];
    snprintf(buf, sizeof buf,
             "CONNECT {\"user\":\"%s\",\"pass\":\"%s\",\"verbose\":false,\"headers\":true,"
             "\"no_responders\":true,\"name\":\"n_%s\",\"lang\":\"c\",\"version\":\"1.0\"}\r\n",
             user, user, user);
    ND_SENDS(c, buf);
    ND_PING(c);
    return c;
}

/* The server_id of c's INFO; owned by the caller. */
static char *
info_id(nd_integ_conn_t *c)
{
    const char *info = nd_integ_conn_info(c);
    const char *brace = strchr(info, '{');
    cr_assert_not_null(brace);
    json_t *j = json_loads(brace, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(j, "INFO: %s", info);
    char *id = strdup(json_string_value(json_object_get(j, "server_id")));
    json_decref(j);
    return id;
}

/* Reads the next frame, checks it is a MSG on subject, and returns its JSON payload. */
static json_t *
read_json(nd_integ_conn_t *c, const char *subject)
{
    char *f = nd_integ_read_frame(c);
    while (f != NULL && strcmp(f, "PING\r\n") == 0) { /* the server's keep-alive */
        free(f);
        f = nd_integ_read_frame(c);
    }
    cr_assert_not_null(f);
    char want[300];
    snprintf(want, sizeof want, "MSG %s ", subject);
    cr_assert(strncmp(f, want, strlen(want)) == 0, "expected %s, got: %.300s", subject, f);
    const char *body = strstr(f, "\r\n");
    cr_assert_not_null(body);
    json_error_t err;
    json_t *j = json_loads(body + 2, JSON_DISABLE_EOF_CHECK, &err);
    cr_assert(json_is_object(j), "bad JSON (%s): %.300s", err.text, body + 2);
    free(f);
    return j;
}

static const char *
jpath(json_t *j, const char *obj, const char *key)
{
    json_t *o = obj != NULL ? json_object_get(j, obj) : j;
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

Test(integ_system, connect_disconnect_advisories)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *sys = login(srv, "sys");
    char *id = info_id(sys);
    /* Account A only: nats-server announces the system client itself after its SUBs. */
    ND_SEND(sys, "SUB $SYS.ACCOUNT.A.CONNECT 1\r\nSUB $SYS.ACCOUNT.*.DISCONNECT 2\r\n");
    ND_PING(sys);

    nd_integ_conn_t *a = login(srv, "a");
    json_t *j = read_json(sys, "$SYS.ACCOUNT.A.CONNECT");
    cr_assert_str_eq(jpath(j, NULL, "type"), "io.nats.server.advisory.v1.client_connect");
    cr_assert_str_eq(jpath(j, "server", "id"), id);
    cr_assert_str_eq(jpath(j, "client", "acc"), "A");
    cr_assert_str_eq(jpath(j, "client", "user"), "a");
    cr_assert_str_eq(jpath(j, "client", "name"), "n_a");
    cr_assert_str_eq(jpath(j, "client", "lang"), "c");
    cr_assert_str_eq(jpath(j, "client", "ver"), "1.0");
    cr_assert_str_eq(jpath(j, "client", "host"), "127.0.0.1");
    cr_assert(json_is_integer(json_object_get(json_object_get(j, "client"), "id")));
    cr_assert(strlen(jpath(j, NULL, "id")) > 0);
    json_decref(j);

    ND_SEND(a, "PUB x 2\r\nhi\r\n");
    ND_PING(a);
    nd_integ_conn_close(a);
    j = read_json(sys, "$SYS.ACCOUNT.A.DISCONNECT");
    cr_assert_str_eq(jpath(j, NULL, "type"), "io.nats.server.advisory.v1.client_disconnect");
    cr_assert_str_eq(jpath(j, "server", "id"), id);
    cr_assert_str_eq(jpath(j, "client", "acc"), "A");
    cr_assert_str_eq(jpath(j, "client", "user"), "a");
    cr_assert_str_eq(jpath(j, NULL, "reason"), "Client Closed");
    cr_assert(strlen(jpath(j, "client", "stop")) > 0);
    /* As nats-server: "sent" is what the client sent (our in_msgs). */
    json_t *rcv = json_object_get(j, "sent");
    cr_assert_eq(json_integer_value(json_object_get(rcv, "msgs")), 1);
    cr_assert_eq(json_integer_value(json_object_get(rcv, "bytes")), 2);
    json_decref(j);

    free(id);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}

/* Sends a request on subj from the system client and returns the reply's JSON. */
static json_t *
request(nd_integ_conn_t *sys, const char *subj)
{
    char buf[300];
    snprintf(buf, sizeof buf, "PUB %s _INBOX.sys 0\r\n\r\n", subj);
    ND_SENDS(sys, buf);
    return read_json(sys, "_INBOX.sys");
}

Test(integ_system, ping_statsz_and_varz)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *sys = login(srv, "sys");
    char *id = info_id(sys);
    ND_SEND(sys, "SUB _INBOX.sys 1\r\n");
    ND_PING(sys);

    const char *statsz[] = {"$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.STATSZ"};
    for (size_t i = 0; i < 2; i++) {
        json_t *j = request(sys, statsz[i]);
        cr_assert_str_eq(jpath(j, "server", "id"), id, "%s", statsz[i]);
        json_t *z = json_object_get(j, "statsz");
        cr_assert(json_is_object(z), "%s: no statsz", statsz[i]);
        cr_assert(json_integer_value(json_object_get(z, "connections")) >= 1);
        cr_assert(json_integer_value(json_object_get(z, "total_connections")) >= 1);
        cr_assert(strlen(jpath(z, NULL, "start")) > 0);
        json_decref(j);
    }

    char byid[128];
    snprintf(byid, sizeof byid, "$SYS.REQ.SERVER.%s.VARZ", id);
    const char *varz[] = {"$SYS.REQ.SERVER.PING.VARZ", byid};
    for (size_t i = 0; i < 2; i++) {
        json_t *j = request(sys, varz[i]);
        cr_assert_str_eq(jpath(j, "server", "id"), id, "%s", varz[i]);
        cr_assert_str_eq(jpath(j, "data", "server_id"), id, "%s", varz[i]);
        json_decref(j);
    }

    /* One account's connections: only A's client. */
    nd_integ_conn_t *a = login(srv, "a");
    json_t *j = request(sys, "$SYS.REQ.ACCOUNT.A.CONNZ");
    cr_assert_str_eq(jpath(j, "server", "id"), id);
    json_t *data = json_object_get(j, "data");
    cr_assert_eq(json_integer_value(json_object_get(data, "num_connections")), 1);
    cr_assert_eq(json_array_size(json_object_get(data, "connections")), 1);
    json_decref(j);
    nd_integ_conn_close(a);

    /* A request nobody answers: the no-responders status. */
    ND_SEND(sys, "PUB $SYS.REQ.SERVER.PING.BOGUS _INBOX.sys 0\r\n\r\n");
    ND_EXPECT(sys, "HMSG _INBOX.sys 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");

    free(id);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_system, other_accounts_see_nothing)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *a = login(srv, "a");
    ND_SEND(a, "SUB $SYS.> 1\r\nSUB marker 2\r\n");
    ND_PING(a);

    /* System traffic: another client comes and goes, the system client asks for STATSZ. */
    nd_integ_conn_t *sys = login(srv, "sys");
    ND_SEND(sys, "SUB _INBOX.sys 1\r\n");
    ND_PING(sys);
    nd_integ_conn_t *a2 = login(srv, "a2");
    nd_integ_conn_close(a2);
    json_t *j = request(sys, "$SYS.REQ.SERVER.PING");
    json_decref(j);

    ND_SEND(a, "PUB marker 1\r\nm\r\n");
    ND_EXPECT(a, "MSG marker 2 1\r\nm\r\n");

    /* A's own request is no system request: nobody answers it. */
    ND_SEND(a, "UNSUB 1\r\nSUB _INBOX.a 3\r\nPUB $SYS.REQ.SERVER.PING _INBOX.a 0\r\n\r\n");
    ND_EXPECT(a, "HMSG _INBOX.a 3 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");

    nd_integ_conn_close(a);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}

/* The periodic STATSZ: a system client subscribed to `$SYS.SERVER.<id>.STATSZ` gets one with this
 * server's id (nats-server sends the first after 250 ms, then at doubling intervals: the read's
 * hang guard covers several). */
Test(integ_system, periodic_statsz)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *sys = login(srv, "sys");
    char *id = info_id(sys);
    char subj[128];
    snprintf(subj, sizeof subj, "$SYS.SERVER.%s.STATSZ", id);
    char buf[200];
    snprintf(buf, sizeof buf, "SUB %s 1\r\n", subj);
    ND_SENDS(sys, buf);
    ND_PING(sys);

    json_t *j = read_json(sys, subj);
    cr_assert_str_eq(jpath(j, "server", "id"), id);
    json_t *z = json_object_get(j, "statsz");
    cr_assert(json_is_object(z), "no statsz");
    cr_assert(json_integer_value(json_object_get(z, "connections")) >= 1);
    cr_assert(strlen(jpath(z, NULL, "start")) > 0);
    json_decref(j);

    free(id);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}

/* The account connection count: `$SYS.ACCOUNT.A.SERVER.CONNS` says 1 when A's client connects
 * and 0 when it leaves (type account_connections, this server's id). */
Test(integ_system, account_conns)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *sys = login(srv, "sys");
    char *id = info_id(sys);
    ND_SEND(sys, "SUB $SYS.ACCOUNT.A.SERVER.CONNS 1\r\n");
    ND_PING(sys);

    nd_integ_conn_t *a = login(srv, "a");
    for (int want = 1; want >= 0; want--) {
        json_t *j = read_json(sys, "$SYS.ACCOUNT.A.SERVER.CONNS");
        cr_assert_str_eq(jpath(j, NULL, "type"), "io.nats.server.advisory.v1.account_connections");
        cr_assert_str_eq(jpath(j, "server", "id"), id);
        cr_assert_str_eq(jpath(j, NULL, "acc"), "A");
        cr_assert_eq(json_integer_value(json_object_get(j, "conns")), want);
        cr_assert_eq(json_integer_value(json_object_get(j, "total_conns")), want);
        json_decref(j);
        if (want == 1)
            nd_integ_conn_close(a);
    }

    free(id);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}

/* Every account imports the server's account-scoped services (nats-server's registerSystemImports):
 * a client of A asking `$SYS.REQ.SERVER.PING.CONNZ` or `$SYS.REQ.ACCOUNT.PING.CONNZ` sees A's
 * connections only (not the system client's), `$SYS.REQ.ACCOUNT.PING.STATZ` gives A's statistics,
 * and (2.10, natsd only: 2.9.10 has no such import) `$SYS.REQ.USER.INFO` says who asks. The
 * services are internal clients of the system account; the requests reach them only through
 * the imports. */
Test(integ_system, account_system_imports)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *srv = nd_integ_conf_start(&cf, CONF);
    nd_integ_conn_t *sys = login(srv, "sys");
    nd_integ_conn_t *a = login(srv, "a");
    char *id = info_id(a);
    ND_SEND(a, "SUB _INBOX.a 1\r\n");
    ND_PING(a);

    const char *connz[] = {"$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ"};
    for (size_t i = 0; i < 2; i++) {
        char buf[200];
        snprintf(buf, sizeof buf, "PUB %s _INBOX.a 0\r\n\r\n", connz[i]);
        ND_SENDS(a, buf);
        json_t *j = read_json(a, "_INBOX.a");
        cr_assert_str_eq(jpath(j, "server", "id"), id, "%s", connz[i]);
        json_t *data = json_object_get(j, "data");
        cr_assert_eq(json_integer_value(json_object_get(data, "num_connections")), 1, "%s",
                     connz[i]);
        json_t *conns = json_object_get(data, "connections");
        cr_assert_eq(json_array_size(conns), 1);
        json_decref(j);
    }

    ND_SEND(a, "PUB $SYS.REQ.ACCOUNT.PING.STATZ _INBOX.a 0\r\n\r\n");
    json_t *j = read_json(a, "_INBOX.a");
    json_t *list = json_object_get(json_object_get(j, "data"), "account_statz");
    cr_assert_eq(json_array_size(list), 1);
    json_t *st = json_array_get(list, 0);
    cr_assert_str_eq(jpath(st, NULL, "acc"), "A");
    cr_assert_eq(json_integer_value(json_object_get(st, "conns")), 1);
    cr_assert(json_is_object(json_object_get(st, "sent")));
    json_decref(j);

    if (!nd_integ_is_reference()) {
        ND_SEND(a, "PUB $SYS.REQ.USER.INFO _INBOX.a 0\r\n\r\n");
        j = read_json(a, "_INBOX.a");
        cr_assert_str_eq(jpath(j, "data", "user"), "a");
        cr_assert_str_eq(jpath(j, "data", "account"), "A");
        json_decref(j);
    }

    free(id);
    nd_integ_conn_close(a);
    nd_integ_conn_close(sys);
    nd_integ_conf_stop(srv, &cf);
}
