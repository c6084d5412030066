/* Integration tests: signals and live changes (issue 4, item 4).
 *
 * Config reload (SIGHUP): a raised max_payload reaches new clients' INFO and existing clients'
 * parsers; debug logging turns on; ping_interval and ping_max reach an existing connection; a
 * change to an option nats-server cannot reload (port, server_name) is refused and nothing
 * changes; a file that does not parse changes nothing. Lame duck mode (SIGUSR2): the C client is
 * told (its lame-duck callback fires), is moved to the other server when the first closes it,
 * and the first server exits 0 by itself.
 *
 * Synchronisation is on log lines ("Reloaded server configuration", "Failed to reload server
 * configuration") and protocol round trips; every wait is a hang guard only.
 * Users/passwords/permissions reload belongs to the authentication issue.
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <nats/nats.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_reload, .fini = suite_fini, .timeout = 240);

#define OK(call) ND_NATS_OK(call)

/* ---- helpers ---------------------------------------------------------------------------- */

static json_int_t
info_int(const nd_integ_conn_t *c, const char *key)
{
    const char *info = nd_integ_conn_info(c);
    cr_assert(strncmp(info, "INFO ", 5) == 0, "%s", info);
    json_error_t jerr;
    json_t *j = json_loads(info + 5, JSON_DISABLE_EOF_CHECK, &jerr);
    cr_assert_not_null(j, "bad INFO json: %s", jerr.text);
    json_t *v = json_object_get(j, key);
    cr_assert(json_is_integer(v), "INFO has no integer %s: %s", key, info);
    json_int_t n = json_integer_value(v);
    json_decref(j);
    return n;
}

static void
conn_ready(nd_integ_conn_t *c)
{
    ND_SEND(c, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    ND_PING(c);
}

/* Publishes a payload of n bytes on c and expects it back on its own subscription "big". */
static void
pub_roundtrip(nd_integ_conn_t *c, size_t n)
{
    char *buf = malloc(n + 64);
    int k = snprintf(buf, n + 64, "PUB big %zu\r\n", n);
    memset(buf + k, 'x', n);
    memcpy(buf + k + n, "\r\n", 2);
    nd_integ_send(c, buf, (size_t)k + n + 2);
    char *want = malloc(n + 64);
    int w = snprintf(want, n + 64, "MSG big 1 %zu\r\n", n);
    memset(want + w, 'x', n);
    memcpy(want + w + n, "\r\n", 2);
    nd_integ_expect(c, want, (size_t)w + n + 2);
    free(buf);
    free(want);
}

static void
on_event(natsConnection *nc, void *closure)
{
    (void)nc;
    nd_integ_waiter_bump(closure);
}

/* ---- reload ------------------------------------------------------------------------------ */

Test(integ_reload, max_payload)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "max_payload: 1000\n");
    const char *extra[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);

    /* An existing raw connection and an existing C client, both from before the reload. */
    nd_integ_conn_t *old = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(old, "max_payload"), 1000);
    conn_ready(old);
    ND_SEND(old, "SUB big 1\r\n");
    ND_PING(old);
    char url[64];
    nd_integ_nats_url(srv, url, sizeof url);
    natsConnection *nc_old = NULL;
    OK(natsConnection_ConnectTo(&nc_old, url));
    cr_assert_eq(natsConnection_GetMaxPayload(nc_old), 1000);

    nd_integ_conf_write(&cf, "max_payload: 5000\n");
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: max_payload = 5000"));

    /* New connections get the new INFO ... */
    nd_integ_conn_t *fresh = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(fresh, "max_payload"), 5000);
    nd_integ_conn_close(fresh);
    natsConnection *nc = NULL;
    OK(natsConnection_ConnectTo(&nc, url));
    cr_assert_eq(natsConnection_GetMaxPayload(nc), 5000);
    natsSubscription *sub = NULL;
    OK(natsConnection_SubscribeSync(&sub, nc, "big.c"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    char payload[3000];
    memset(payload, 'y', sizeof payload);
    OK(natsConnection_Publish(nc, "big.c", payload, (int)sizeof payload));
    natsMsg *m = NULL;
    OK(natsSubscription_NextMsg(&m, sub, ND_INTEG_TIMEOUT_MS));
    cr_assert_eq(natsMsg_GetDataLength(m), (int)sizeof payload);
    natsMsg_Destroy(m);

    /* ... and the server's parser of an existing connection takes the new limit. (The old C
     * client still refuses locally: it knows the limit from its INFO, as with nats-server.) */
    pub_roundtrip(old, 3000);
    cr_assert(natsConnection_Publish(nc_old, "big.c", payload, (int)sizeof payload) ==
              NATS_MAX_PAYLOAD);
    /* The new limit still holds. */
    char over[128];
    int k = snprintf(over, sizeof over, "PUB big 6000\r\n");
    nd_integ_send(old, over, (size_t)k);
    ND_EXPECT(old, "-ERR 'Maximum Payload Violation'\r\n");

    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(nc_old);
    nd_integ_conn_close(old);
    nd_integ_conf_stop(srv, &cf);
}

/* A reload that writes 0 for a limit sets its default, as at start and as nats-server 2.9.10
 * does (checked there: "Reloaded: max_payload = 1048576"); natsd set a limit of 0. */
Test(integ_reload, zero_limits_reload_the_defaults)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "max_payload: 1000\nmax_control_line: 512\nmax_connections: 10\n");
    const char *extra[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);
    nd_integ_conn_t *old = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(old, "max_payload"), 1000);
    conn_ready(old);
    ND_SEND(old, "SUB big 1\r\n");
    ND_PING(old);

    nd_integ_conf_write(&cf, "max_payload: 0\nmax_control_line: 0\nmax_connections: 0\n");
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: max_payload = 1048576"));
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: max_control_line = 4096"));
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: max_connections = 65536"));

    /* New connections are admitted and told the default; the existing one takes it too. */
    nd_integ_conn_t *fresh = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(fresh, "max_payload"), 1048576);
    conn_ready(fresh);
    nd_integ_conn_close(fresh);
    pub_roundtrip(old, 3000);

    nd_integ_conn_close(old);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_reload, debug_toggle)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "debug: false\n");
    const char *extra[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    conn_ready(c);
    nd_integ_conn_close(c);
    cr_assert(!nd_integ_server_log_has(srv, 0, "[DBG]"), "debug lines before debug was on");

    nd_integ_conf_write(&cf, "debug: true\n");
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: debug = true"));
    c = nd_integ_conn_open(srv);
    conn_ready(c);
    nd_integ_server_wait_log(srv, mark, "[DBG]");
    nd_integ_server_wait_log(srv, mark, "Client connection created");
    /* Let its close be logged now: a debug line checked before the level changes and written
     * after it could otherwise land after the next reload's last line. */
    mark = nd_integ_server_log_mark(srv);
    nd_integ_conn_close(c);
    nd_integ_server_wait_log(srv, mark, "Client connection closed");

    /* And off again: nothing more at debug level after this reload. */
    nd_integ_conf_write(&cf, "debug: false\n");
    nd_integ_server_reload(srv, true);
    mark = nd_integ_server_log_mark(srv);
    c = nd_integ_conn_open(srv);
    conn_ready(c);
    nd_integ_conn_close(c);
    nd_integ_conn_t *probe = nd_integ_conn_open(srv); /* a round trip after the close */
    conn_ready(probe);
    nd_integ_conn_close(probe);
    cr_assert(!nd_integ_server_log_has(srv, mark, "[DBG]"), "debug lines after debug was off");
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_reload, ping_settings_reach_existing_connection)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "ping_interval: \"3s\"\nping_max: 100\n");
    const char *extra[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    conn_ready(c);

    /* With ping_max 100 this silent client would take minutes to go stale; after the reload it
     * is stale on the second unanswered ping, one new interval after its next tick. */
    nd_integ_conf_write(&cf, "ping_interval: \"1s\"\nping_max: 1\n");
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: ping_interval = 1s"));
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: ping_max = 1"));
    ND_EXPECT(c, "-ERR 'Stale Connection'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_reload, refused_changes_keep_old_config)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "host: 127.0.0.1\nport: -1\nmax_payload: 1000\nserver_name: a\n");
    const char *args[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start_args(args);
    int port = nd_integ_server_port(srv);
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    conn_ready(c);

    /* A new port (with a reloadable change beside it): refused as a whole. */
    char text[256];
    int other = port == 65000 ? 65001 : 65000;
    snprintf(text, sizeof text, "host: 127.0.0.1\nport: %d\nmax_payload: 2000\nserver_name: a\n",
             other);
    nd_integ_conf_write(&cf, text);
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    char want[160];
    snprintf(want, sizeof want,
             "Failed to reload server configuration: config reload not supported for Port: "
             "old=%d, new=%d",
             port, other);
    cr_assert(nd_integ_server_log_has(srv, mark, want), "no \"%s\" in the log", want);
    cr_assert(!nd_integ_server_log_has(srv, mark, "Reloaded: max_payload"));

    /* server_name cannot change either. */
    nd_integ_conf_write(&cf, "host: 127.0.0.1\nport: -1\nmax_payload: 2000\nserver_name: b\n");
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(srv, mark,
                                      "config reload not supported for ServerName: old=a, new=b"));

    /* A file that does not parse: nothing changes. */
    nd_integ_conf_write(&cf, "host: 127.0.0.1\nport: -1\nmax_payload: 2000\nfoo bar {\n");
    nd_integ_server_reload(srv, false);

    /* The old port still serves, with the old options. */
    nd_integ_conn_t *n = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(n, "max_payload"), 1000);
    conn_ready(n);
    nd_integ_conn_close(n);
    ND_PING(c);

    /* And a good file applies after the failures. */
    nd_integ_conf_write(&cf, "host: 127.0.0.1\nport: -1\nmax_payload: 2000\nserver_name: a\n");
    nd_integ_server_reload(srv, true);
    n = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(n, "max_payload"), 2000);
    nd_integ_conn_close(n);

    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &cf);
}

/* Nested blocks are compared field by field (issue 11, defect 4). A change inside a block of a
 * feature natsd does not run (cluster routes, jetstream) is accepted, as nats-server accepts it,
 * but never logged as reloaded ("Reloaded: cluster" is nats-server's line when it applies it):
 * natsd warns that it is not applied. A change inside a block nats-server refuses to reload
 * (websocket, leafnodes) is refused, where comparing only the presence of the block let it
 * through. A reload that changes nothing logs neither. */
Test(integ_reload, nested_blocks_compared)
{
    static const char base[] =
        "port: -1\n"
        "jetstream { max_mem: %s }\n"
        "websocket { port: 18443, no_tls: true, handshake_timeout: \"%s\" }\n"
        "leafnodes { port: 17422, reconnect: %d }\n";
    char text[512];
    nd_integ_conf_t cf = {0};
    snprintf(text, sizeof text, base, "1MB", "2s", 2);
    nd_integ_conf_write(&cf, text);
    const char *args[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start_args(args);

    /* Nothing changed: no claim, no warning. */
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(!nd_integ_server_log_has(srv, mark, "not applied"));

    /* Only a limit inside jetstream {} changes. */
    snprintf(text, sizeof text, base, "2MB", "2s", 2);
    nd_integ_conf_write(&cf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reload: jetstream {} changed; not applied"));

    /* websocket {} and leafnodes {} contents: refused, as nats-server 2.9.10 refuses them. */
    snprintf(text, sizeof text, base, "2MB", "3s", 2);
    nd_integ_conf_write(&cf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(srv, mark, "config reload not supported for Websocket"));
    snprintf(text, sizeof text, base, "2MB", "2s", 3);
    nd_integ_conf_write(&cf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(srv, mark, "config reload not supported for LeafNode"));

    nd_integ_conf_stop(srv, &cf);
}

/* The routes inside cluster {} are reloaded ("Reloaded: cluster"); its listen address is not. */
Test(integ_reload, cluster_routes)
{
    static const char base[] =
        "port: -1\n"
        "cluster { name: c1, listen: \"127.0.0.1:%d\", routes: [\"nats://127.0.0.1:%d\"] }\n";
    int cport = nd_integ_free_port(), r1 = nd_integ_free_port(), r2 = nd_integ_free_port();
    char text[512];
    nd_integ_conf_t cf = {0};
    snprintf(text, sizeof text, base, cport, r1);
    nd_integ_conf_write(&cf, text);
    const char *args[] = {"-c", cf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start_args(args);

    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(!nd_integ_server_log_has(srv, mark, "Reloaded: cluster"));

    snprintf(text, sizeof text, base, cport, r2);
    nd_integ_conf_write(&cf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(nd_integ_server_log_has(srv, mark, "Reloaded: cluster"));

    snprintf(text, sizeof text, base, nd_integ_free_port(), r2);
    nd_integ_conf_write(&cf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(srv, mark, "config reload not supported for cluster port"));
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_reload, flags_win_over_the_file)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, "max_payload: 1000\n");
    /* -D on the command line: a reload of a file without debug keeps it on. */
    const char *extra[] = {"-c", cf.path, "-D", NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);
    nd_integ_conf_write(&cf, "max_payload: 2000\ndebug: false\n");
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    cr_assert(!nd_integ_server_log_has(srv, mark, "Reloaded: debug"));
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    cr_assert_eq(info_int(c, "max_payload"), 2000);
    conn_ready(c);
    nd_integ_server_wait_log(srv, mark, "[DBG]");
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &cf);
}

Test(integ_reload, without_config_file)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(
        srv, mark, "can only reload config when a file is provided using -c or --config"));
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    conn_ready(c);
    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);
}

/* ---- lame duck mode ---------------------------------------------------------------------- */

Test(integ_reload, lame_duck_moves_client)
{
    nd_integ_conf_t cf = {0};
    /* 30 s is nats-server's minimum duration; with one client the close comes right after the
     * grace period (at most one second apart per client), so the test takes about a second. */
    nd_integ_conf_write(&cf, "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n");
    const char *extra[] = {"-c", cf.path, NULL};
    nd_integ_server_t *a = nd_integ_server_start(0, extra);
    nd_integ_server_t *b = nd_integ_server_start(0, NULL);
    char ua[64], ub[64];
    nd_integ_nats_url(a, ua, sizeof ua);
    nd_integ_nats_url(b, ub, sizeof ub);
    const char *servers[] = {ua, ub};

    nd_integ_waiter_t ldm, reco;
    nd_integ_waiter_init(&ldm);
    nd_integ_waiter_init(&reco);
    natsOptions *o = NULL;
    OK(natsOptions_Create(&o));
    OK(natsOptions_SetServers(o, servers, 2));
    OK(natsOptions_SetNoRandomize(o, true));
    OK(natsOptions_SetMaxReconnect(o, -1));
    OK(natsOptions_SetReconnectWait(o, 50));
    OK(natsOptions_SetLameDuckModeCB(o, on_event, &ldm));
    OK(natsOptions_SetReconnectedCB(o, on_event, &reco));
    natsConnection *nc = NULL;
    OK(natsConnection_Connect(&nc, o));
    char url[128];
    OK(natsConnection_GetConnectedUrl(nc, url, sizeof url));
    cr_assert_str_eq(url, ua);
    /* A raw client too, to see the INFO itself. */
    nd_integ_conn_t *raw = nd_integ_conn_open(a);
    ND_SEND(raw, "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\n");
    ND_PING(raw);

    size_t mark = nd_integ_server_log_mark(a);
    nd_integ_server_signal(a, SIGUSR2);
    nd_integ_server_wait_log(a, mark, "Entering lame duck mode, stop accepting new clients");
    cr_assert(nd_integ_waiter_wait(&ldm, 1, ND_INTEG_PROC_TIMEOUT_MS) == 1,
              "no lame duck callback");
    char *frame = nd_integ_read_frame(raw);
    cr_assert_not_null(frame);
    cr_assert(strncmp(frame, "INFO ", 5) == 0 && strstr(frame, "\"ldm\":true") != NULL,
              "want an INFO with ldm, got %s", frame);
    free(frame);

    /* After the grace period the client is closed and reconnects to the other server. */
    cr_assert(nd_integ_waiter_wait(&reco, 1, ND_INTEG_PROC_TIMEOUT_MS) == 1,
              "client did not reconnect");
    OK(natsConnection_GetConnectedUrl(nc, url, sizeof url));
    cr_assert_str_eq(url, ub);
    OK(natsConnection_PublishString(nc, "after.ldm", "x"));
    OK(natsConnection_FlushTimeout(nc, ND_INTEG_TIMEOUT_MS));
    nd_integ_expect_close(raw);
    nd_integ_conn_close(raw);

    /* The lame duck server exits 0 by itself. */
    nd_integ_server_wait_log(a, mark, "Closing existing clients");
    nd_integ_server_wait_exit(a);

    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    nd_integ_waiter_destroy(&ldm);
    nd_integ_waiter_destroy(&reco);
    nd_integ_conf_stop(b, &cf);
}

Test(integ_reload, lame_duck_without_clients_exits)
{
    nd_integ_server_t *a = nd_integ_server_start(0, NULL);
    size_t mark = nd_integ_server_log_mark(a);
    nd_integ_server_signal(a, SIGUSR2);
    nd_integ_server_wait_log(a, mark, "Entering lame duck mode, stop accepting new clients");
    nd_integ_server_wait_exit(a);
}
