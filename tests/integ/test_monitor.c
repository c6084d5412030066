/* Integration tests of HTTP monitoring (src/mon): natsd runs as a child with -m <port>, clients
 * speak the raw protocol (harness.h), and a tiny HTTP/1.1 client here fetches the endpoints over a
 * plain socket; JSON bodies are parsed with jansson.
 *
 * Covered: every endpoint's shape and values (/varz /connz /subsz /healthz, the empty shapes of
 * the features not built yet, /metrics checked line by line by a strict validator of the
 * Prometheus text format 0.0.4), /connz sorting by every key and limit/offset pages, closed
 * connections with their reasons (slow consumer, stale connection, client closed, parse error,
 * and an authentication failure once natsd enforces --user/--pass), bad parameters (400 with
 * nats-server's texts), hostile HTTP (100 KB URL, non-HTTP bytes, slowloris headers, 405),
 * keep-alive and pipelining, and that passwords never appear in any endpoint.
 *
 * Against the reference nats-server (NATSD_TEST_REFERENCE, else /usr/sbin/nats-server when it
 * exists): /varz /connz /subsz /healthz /routez are fetched from both servers in the same
 * situation and every key the reference has must exist in natsd's answer (recursively; arrays by
 * the union of their elements' keys), except the documented allow-list below.
 *
 * Synchronisation: protocol round trips (PING/PONG) make a state visible before it is fetched;
 * where the server acts on its own (a slow consumer or stale connection being closed), the test
 * polls /connz with a hang guard and asserts nothing about time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void
suite_init(void)
{
    /* A short header deadline, so the slowloris test does not wait 5 s (a hang guard only). */
    setenv("NATSD_MON_HEADER_TIMEOUT_MS", "300", 1);
}

TestSuite(integ_monitor, .init = suite_init, .fini = nd_integ_cleanup, .timeout = 240);

/* ---- helpers: ports, servers, clients ---- */

typedef struct mon {
    nd_integ_server_t *srv;
    int http;
    nd_integ_conf_t cf; /* the config file, when there is one */
} mon_t;

/* Starts the server under test with monitoring on a free port; extra: more arguments. */
static mon_t
mon_start_with(const char *conf_text, const char *const *extra)
{
    mon_t m = {0};
    m.http = nd_integ_free_port();
    char port[16];
    snprintf(port, sizeof port, "%d", m.http);
    const char *args[32] = {"-m", port};
    int n = 2;
    if (conf_text != NULL) {
        nd_integ_conf_write(&m.cf, conf_text);
        args[n++] = "-c";
        args[n++] = m.cf.path;
    }
    for (int i = 0; extra != NULL && extra[i] != NULL && n < 30; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    m.srv = nd_integ_server_start(0, args);
    return m;
}

static mon_t
mon_start(void)
{
    return mon_start_with(NULL, NULL);
}

static void
mon_stop(mon_t *m)
{
    nd_integ_conf_stop(m->srv, &m->cf);
}

static nd_integ_conn_t *
client(nd_integ_server_t *srv, const char *connect_json)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char line[1024];
    snprintf(line, sizeof line, "CONNECT %s\r\nPING\r\n", connect_json);
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* ---- a tiny HTTP/1.1 client ---- */

typedef struct hconn {
    int fd;
    char *buf;
    size_t len, cap;
} hconn_t;

typedef struct hresp {
    int status;
    char *head; /* status line and headers */
    char *body;
    size_t body_len;
} hresp_t;

static hconn_t
hc_open(int port)
{
    hconn_t h = {0};
    h.fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(h.fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(connect(h.fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
    return h;
}

static void
hc_close(hconn_t *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    free(h->buf);
    h->buf = NULL;
    h->len = h->cap = 0;
}

static bool
hc_send(hconn_t *h, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(h->fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads more bytes. Returns: bytes read, 0 at EOF (or a reset), -1 on the hang guard. */
static ssize_t
hc_fill(hconn_t *h)
{
    struct pollfd p = {.fd = h->fd, .events = POLLIN};
    int rc = poll(&p, 1, ND_INTEG_TIMEOUT_MS);
    if (rc <= 0)
        return -1;
    if (h->cap - h->len < 65536) {
        h->cap = h->cap * 2 + 65536;
        h->buf = realloc(h->buf, h->cap + 1);
    }
    ssize_t n = recv(h->fd, h->buf + h->len, h->cap - h->len, 0);
    if (n < 0)
        return errno == ECONNRESET ? 0 : -1;
    h->len += (size_t)n;
    h->buf[h->len] = '\0';
    return n;
}

/* Reads one response (no body for HEAD). Returns: false at EOF before a whole response. */
static bool
hc_read(hconn_t *h, hresp_t *r, bool head)
{
    memset(r, 0, sizeof(*r));
    char *end;
    while ((end = h->buf ? memmem(h->buf, h->len, "\r\n\r\n", 4) : NULL) == NULL) {
        ssize_t n = hc_fill(h);
        cr_assert(n >= 0, "HTTP read timed out");
        if (n == 0)
            return false;
    }
    size_t hl = (size_t)(end - h->buf) + 4;
    r->head = strndup(h->buf, hl);
    cr_assert(sscanf(r->head, "HTTP/1.1 %d", &r->status) == 1, "bad status line: %s", r->head);
    size_t cl = 0;
    if (!head && strcasestr(r->head, "\r\nTransfer-Encoding: chunked") != NULL) {
        /* The reference answers big bodies in chunks: <hex size>\r\n<data>\r\n ... 0\r\n\r\n */
        memmove(h->buf, h->buf + hl, h->len - hl);
        h->len -= hl;
        char *body = NULL;
        size_t blen = 0;
        for (;;) {
            char *eol;
            while ((eol = memmem(h->buf, h->len, "\r\n", 2)) == NULL)
                cr_assert(hc_fill(h) > 0, "chunk size cut short");
            size_t csz = strtoul(h->buf, NULL, 16);
            size_t skip = (size_t)(eol - h->buf) + 2;
            while (h->len < skip + csz + 2)
                cr_assert(hc_fill(h) > 0, "chunk cut short");
            body = realloc(body, blen + csz + 1);
            memcpy(body + blen, h->buf + skip, csz);
            blen += csz;
            body[blen] = '\0';
            memmove(h->buf, h->buf + skip + csz + 2, h->len - skip - csz - 2);
            h->len -= skip + csz + 2;
            if (csz == 0)
                break;
        }
        r->body = body;
        r->body_len = blen;
        return true;
    }
    const char *p = strcasestr(r->head, "\r\nContent-Length:");
    cr_assert(p != NULL, "no Content-Length: %s", r->head);
    cl = strtoul(p + 17, NULL, 10);
    if (head)
        cl = 0;
    while (h->len < hl + cl) {
        ssize_t n = hc_fill(h);
        cr_assert(n > 0, "body cut short");
    }
    r->body = strndup(h->buf + hl, cl);
    r->body_len = cl;
    memmove(h->buf, h->buf + hl + cl, h->len - hl - cl);
    h->len -= hl + cl;
    return true;
}

static void
hresp_free(hresp_t *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

/* Reads until the server closes; fails on the hang guard. */
static void
hc_expect_eof(hconn_t *h)
{
    for (;;) {
        ssize_t n = hc_fill(h);
        cr_assert(n >= 0, "the server did not close the connection");
        if (n == 0)
            return;
    }
}

static hresp_t
http_get_hdr(int port, const char *path, const char *extra_headers)
{
    hconn_t h = hc_open(port);
    char *req = NULL;
    cr_assert(asprintf(&req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sConnection: close\r\n\r\n",
                       path, extra_headers ? extra_headers : "") > 0);
    cr_assert(hc_send(&h, req, strlen(req)));
    free(req);
    hresp_t r;
    cr_assert(hc_read(&h, &r, false), "no response for %s", path);
    hc_close(&h);
    return r;
}

static hresp_t
http_get(int port, const char *path)
{
    return http_get_hdr(port, path, NULL);
}

/* GET, expect 200 and a JSON object. */
static json_t *
get_json(int port, const char *path)
{
    hresp_t r = http_get(port, path);
    cr_assert_eq(r.status, 200, "%s: status %d: %s", path, r.status, r.body);
    cr_assert(strcasestr(r.head, "Content-Type: application/json") != NULL, "%s", r.head);
    json_error_t err;
    json_t *o = json_loads(r.body, 0, &err);
    cr_assert(json_is_object(o), "%s: not JSON (%s): %s", path, err.text, r.body);
    hresp_free(&r);
    return o;
}

static json_int_t
jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "%s is not an integer", key);
    return json_integer_value(v);
}

static const char *
jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "%s is not a string", key);
    return json_string_value(v);
}

static bool
is_rfc3339(const char *s)
{
    int y, mo, d, h, mi, sec;
    return sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) == 6 &&
           s[strlen(s) - 1] == 'Z' && y > 2000;
}

/* The connection with this cid in /connz's list, or NULL. */
static json_t *
find_cid(json_t *connz, json_int_t cid)
{
    json_t *a = json_object_get(connz, "connections"), *c;
    size_t i;
    json_array_foreach(a, i, c)
    {
        if (jint(c, "cid") == cid)
            return c;
    }
    return NULL;
}

/* The client id the server put in the INFO line. */
static json_int_t
cid_of(nd_integ_conn_t *c)
{
    const char *info = nd_integ_conn_info(c);
    const char *p = strstr(info, "\"client_id\":");
    cr_assert(p != NULL);
    return strtoll(p + 12, NULL, 10);
}

/* ---- /varz ---- */

Test(integ_monitor, varz_values)
{
    mon_t m = mon_start();
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false,\"name\":\"a\"}");
    nd_integ_conn_t *b = client(m.srv, "{\"verbose\":false,\"name\":\"b\"}");
    ND_SEND(b, "SUB foo 1\r\nSUB bar 2\r\nPING\r\n");
    ND_EXPECT(b, "PONG\r\n");
    ND_SEND(a, "PUB foo 5\r\nhello\r\nPUB foo 3\r\nabc\r\nPING\r\n");
    ND_EXPECT(a, "PONG\r\n");
    ND_EXPECT(b, "MSG foo 1 5\r\nhello\r\nMSG foo 1 3\r\nabc\r\n");
    ND_PING(b);

    json_t *v = get_json(m.http, "/varz");
    cr_assert_eq(strlen(jstr(v, "server_id")), 56);
    cr_assert_eq(jint(v, "port"), nd_integ_server_port(m.srv));
    cr_assert_eq(jint(v, "http_port"), m.http);
    cr_assert_str_eq(jstr(v, "http_base_path"), "");
    cr_assert_eq(jint(v, "connections"), 2);
    cr_assert_eq(jint(v, "total_connections"), 2);
    cr_assert_eq(jint(v, "subscriptions"), 2);
    cr_assert_eq(jint(v, "in_msgs"), 2);
    cr_assert_eq(jint(v, "in_bytes"), 8);
    cr_assert_eq(jint(v, "out_msgs"), 2);
    cr_assert_eq(jint(v, "out_bytes"), 8);
    cr_assert_eq(jint(v, "slow_consumers"), 0);
    cr_assert_eq(jint(v, "max_payload"), 1024 * 1024);
    cr_assert_eq(jint(v, "ping_interval"), 120000000000LL);
    cr_assert_eq(jint(v, "write_deadline"), 10000000000LL);
    cr_assert_gt(jint(v, "mem"), 0);
    cr_assert_gt(jint(v, "cores"), 0);
    cr_assert(json_is_number(json_object_get(v, "cpu")));
    cr_assert(is_rfc3339(jstr(v, "start")));
    cr_assert(is_rfc3339(jstr(v, "now")));
    cr_assert_str_eq(jstr(v, "uptime") + strlen(jstr(v, "uptime")) - 1, "s");
    cr_assert(json_is_object(json_object_get(v, "cluster")));
    cr_assert(json_is_object(json_object_get(v, "jetstream")));
    cr_assert_eq(jint(json_object_get(v, "http_req_stats"), "/varz"), 1);
    json_decref(v);

    /* Totals survive a close: counters move from the live sum to the closed totals. */
    nd_integ_conn_close(a);
    json_t *cz = NULL;
    for (int i = 0; i < 1000; i++) {
        cz = get_json(m.http, "/connz");
        if (jint(cz, "num_connections") == 1)
            break;
        json_decref(cz);
        cz = NULL;
        usleep(10000);
    }
    cr_assert(cz != NULL, "the closed client is still listed");
    json_decref(cz);
    v = get_json(m.http, "/varz");
    cr_assert_eq(jint(v, "connections"), 1);
    cr_assert_eq(jint(v, "total_connections"), 2);
    cr_assert_eq(jint(v, "in_msgs"), 2);
    cr_assert_eq(jint(v, "out_msgs"), 2);
    json_decref(v);
    nd_integ_conn_close(b);
    mon_stop(&m);
}

/* ---- /connz ---- */

Test(integ_monitor, connz_fields_and_subs)
{
    mon_t m = mon_start();
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false,\"name\":\"alpha\",\"lang\":\"c\","
                                       "\"version\":\"9.9.9\"}");
    ND_SEND(a, "SUB foo 1\r\nSUB bar q 2\r\nSUB baz 3\r\nUNSUB 3\r\nPING\r\n");
    ND_EXPECT(a, "PONG\r\n");
    ND_SEND(a, "PUB foo 2\r\nhi\r\nPING\r\n");
    ND_EXPECT(a, "MSG foo 1 2\r\nhi\r\nPONG\r\n");
    json_int_t cid = cid_of(a);

    json_t *cz = get_json(m.http, "/connz");
    cr_assert_eq(jint(cz, "num_connections"), 1);
    cr_assert_eq(jint(cz, "total"), 1);
    cr_assert_eq(jint(cz, "offset"), 0);
    cr_assert_eq(jint(cz, "limit"), 1024);
    cr_assert(is_rfc3339(jstr(cz, "now")));
    json_t *c = find_cid(cz, cid);
    cr_assert(c != NULL);
    cr_assert_str_eq(jstr(c, "kind"), "Client");
    cr_assert_str_eq(jstr(c, "type"), "nats");
    cr_assert_str_eq(jstr(c, "ip"), "127.0.0.1");
    cr_assert_gt(jint(c, "port"), 0);
    cr_assert_str_eq(jstr(c, "name"), "alpha");
    cr_assert_str_eq(jstr(c, "lang"), "c");
    cr_assert_str_eq(jstr(c, "version"), "9.9.9");
    cr_assert_eq(jint(c, "subscriptions"), 2);
    cr_assert_eq(jint(c, "in_msgs"), 1);
    cr_assert_eq(jint(c, "in_bytes"), 2);
    cr_assert_eq(jint(c, "out_msgs"), 1);
    cr_assert_eq(jint(c, "out_bytes"), 2);
    cr_assert_geq(jint(c, "pending_bytes"), 0); /* live: the last PONG may still count */
    cr_assert(is_rfc3339(jstr(c, "start")));
    cr_assert(is_rfc3339(jstr(c, "last_activity")));
    cr_assert(json_is_string(json_object_get(c, "rtt")));
    /* Estimated at CONNECT (accept to CONNECT), before any server PING, as nats-server does. */
    cr_assert_str_neq(jstr(c, "rtt"), "0s");
    cr_assert(json_is_string(json_object_get(c, "uptime")));
    cr_assert(json_is_string(json_object_get(c, "idle")));
    cr_assert_null(json_object_get(c, "subscriptions_list"));
    cr_assert_null(json_object_get(c, "stop"));
    json_decref(cz);

    cz = get_json(m.http, "/connz?subs=1");
    c = find_cid(cz, cid);
    json_t *list = json_object_get(c, "subscriptions_list");
    cr_assert_eq(json_array_size(list), 2);
    bool foo = false, bar = false;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        foo |= strcmp(json_string_value(e), "foo") == 0;
        bar |= strcmp(json_string_value(e), "bar") == 0;
    }
    cr_assert(foo && bar);
    json_decref(cz);

    cz = get_json(m.http, "/connz?subs=detail");
    c = find_cid(cz, cid);
    list = json_object_get(c, "subscriptions_list_detail");
    cr_assert_eq(json_array_size(list), 2);
    json_array_foreach(list, i, e)
    {
        cr_assert_eq(jint(e, "cid"), cid);
        if (strcmp(jstr(e, "subject"), "foo") == 0) {
            cr_assert_str_eq(jstr(e, "sid"), "1");
            cr_assert_eq(jint(e, "msgs"), 1);
            cr_assert_null(json_object_get(e, "qgroup"));
        } else {
            cr_assert_str_eq(jstr(e, "subject"), "bar");
            cr_assert_str_eq(jstr(e, "qgroup"), "q");
            cr_assert_str_eq(jstr(e, "sid"), "2");
            cr_assert_eq(jint(e, "msgs"), 0);
        }
    }
    json_decref(cz);

    /* cid filter, and a cid that does not exist. */
    char path[64];
    snprintf(path, sizeof path, "/connz?cid=%lld", (long long)cid);
    cz = get_json(m.http, path);
    cr_assert_eq(jint(cz, "num_connections"), 1);
    json_decref(cz);
    cz = get_json(m.http, "/connz?cid=999999");
    cr_assert_eq(jint(cz, "num_connections"), 0);
    cr_assert_eq(json_array_size(json_object_get(cz, "connections")), 0);
    json_decref(cz);
    /* Filters for what natsd has none of match nothing; the global account matches all. */
    cz = get_json(m.http, "/connz?acc=$G");
    cr_assert_eq(jint(cz, "num_connections"), 1);
    json_decref(cz);
    cz = get_json(m.http, "/connz?acc=OTHER");
    cr_assert_eq(jint(cz, "num_connections"), 0);
    json_decref(cz);
    nd_integ_conn_close(a);
    mon_stop(&m);
}

/* Five clients with distinct traffic; every sort key answers, the orders nats-server defines
 * hold, and pages of two cover everything exactly once. */
Test(integ_monitor, connz_sort_and_pages)
{
    mon_t m = mon_start();
    enum { N = 5 };
    nd_integ_conn_t *c[N];
    json_int_t cids[N];
    for (int i = 0; i < N; i++) {
        c[i] = client(m.srv, "{\"verbose\":false}");
        cids[i] = cid_of(c[i]);
        /* Client i: i subscriptions and i publishes of i bytes. */
        for (int k = 0; k < i; k++) {
            char line[128];
            snprintf(line, sizeof line, "SUB s.%d.%d %d\r\n", i, k, k + 1);
            ND_SENDS(c[i], line);
        }
        for (int k = 0; k < i; k++) {
            char line[128];
            snprintf(line, sizeof line, "PUB nobody %d\r\n%.*s\r\n", i, i, "xxxxxxxx");
            ND_SENDS(c[i], line);
        }
        ND_PING(c[i]);
    }
    static const char *const keys[] = {"cid",     "start",     "subs",     "pending",
                                       "msgs_to", "msgs_from", "bytes_to", "bytes_from",
                                       "last",    "idle",      "uptime",   "rtt"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char path[128];
        snprintf(path, sizeof path, "/connz?sort=%s", keys[k]);
        json_t *cz = get_json(m.http, path);
        cr_assert_eq(jint(cz, "num_connections"), N, "%s", path);
        json_t *a = json_object_get(cz, "connections");
        for (size_t i = 1; i < N; i++) {
            json_t *p = json_array_get(a, i - 1), *q = json_array_get(a, i);
            if (strcmp(keys[k], "cid") == 0)
                cr_assert_lt(jint(p, "cid"), jint(q, "cid"));
            if (strcmp(keys[k], "subs") == 0)
                cr_assert_geq(jint(p, "subscriptions"), jint(q, "subscriptions"));
            if (strcmp(keys[k], "msgs_from") == 0)
                cr_assert_geq(jint(p, "in_msgs"), jint(q, "in_msgs"));
            if (strcmp(keys[k], "bytes_from") == 0)
                cr_assert_geq(jint(p, "in_bytes"), jint(q, "in_bytes"));
            if (strcmp(keys[k], "start") == 0)
                cr_assert(strcmp(jstr(p, "start"), jstr(q, "start")) <= 0 ||
                          strlen(jstr(p, "start")) != strlen(jstr(q, "start")));
        }
        if (strcmp(keys[k], "subs") == 0)
            cr_assert_eq(jint(json_array_get(a, 0), "cid"), cids[N - 1]);
        if (strcmp(keys[k], "msgs_from") == 0)
            cr_assert_eq(jint(json_array_get(a, 0), "in_msgs"), N - 1);
        json_decref(cz);
    }
    /* Pages. */
    bool seen[N] = {false};
    for (int off = 0; off < N; off += 2) {
        char path[128];
        snprintf(path, sizeof path, "/connz?limit=2&offset=%d", off);
        json_t *cz = get_json(m.http, path);
        cr_assert_eq(jint(cz, "total"), N);
        cr_assert_eq(jint(cz, "limit"), 2);
        cr_assert_eq(jint(cz, "offset"), off);
        size_t n = json_array_size(json_object_get(cz, "connections"));
        cr_assert_eq((int)n, off + 2 <= N ? 2 : N - off);
        cr_assert_eq(jint(cz, "num_connections"), (json_int_t)n);
        for (size_t i = 0; i < n; i++) {
            json_int_t cid = jint(json_array_get(json_object_get(cz, "connections"), i), "cid");
            for (int j = 0; j < N; j++)
                if (cids[j] == cid) {
                    cr_assert(!seen[j], "cid %lld twice", (long long)cid);
                    seen[j] = true;
                }
        }
        json_decref(cz);
    }
    for (int j = 0; j < N; j++)
        cr_assert(seen[j]);
    json_t *cz = get_json(m.http, "/connz?offset=100");
    cr_assert_eq(jint(cz, "total"), N);
    cr_assert_eq(jint(cz, "num_connections"), 0);
    json_decref(cz);
    /* Negative values fall back to the defaults, as nats-server does. */
    cz = get_json(m.http, "/connz?limit=-1&offset=-5");
    cr_assert_eq(jint(cz, "limit"), 1024);
    cr_assert_eq(jint(cz, "offset"), 0);
    cr_assert_eq(jint(cz, "num_connections"), N);
    json_decref(cz);
    cz = get_json(m.http, "/connz?limit=9223372036854775807");
    cr_assert_eq(jint(cz, "num_connections"), N);
    json_decref(cz);
    for (int i = 0; i < N; i++)
        nd_integ_conn_close(c[i]);
    mon_stop(&m);
}

/* Polls /connz?state=closed until the connection with cid shows up. Returns: its object (owned by
 * *root, which the caller frees). */
static json_t *
wait_closed(int port, json_int_t cid, json_t **root)
{
    char path[96];
    snprintf(path, sizeof path, "/connz?state=closed&subs=1&cid=%lld", (long long)cid);
    for (int i = 0; i < 2000; i++) {
        json_t *cz = get_json(port, path);
        json_t *c = find_cid(cz, cid);
        if (c != NULL) {
            *root = cz;
            return c;
        }
        json_decref(cz);
        usleep(10000);
    }
    cr_assert_fail("cid %lld never appeared among the closed connections", (long long)cid);
    return NULL;
}

Test(integ_monitor, closed_client_and_parse_error)
{
    mon_t m = mon_start();
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false,\"name\":\"leaver\"}");
    ND_SEND(a, "SUB x 7\r\nPING\r\n");
    ND_EXPECT(a, "PONG\r\n");
    json_int_t ca = cid_of(a);
    nd_integ_conn_close(a);
    json_t *root;
    json_t *c = wait_closed(m.http, ca, &root);
    cr_assert_str_eq(jstr(c, "reason"), "Client Closed");
    cr_assert(is_rfc3339(jstr(c, "stop")));
    cr_assert_str_eq(jstr(c, "name"), "leaver");
    json_t *list = json_object_get(c, "subscriptions_list");
    cr_assert_eq(json_array_size(list), 1);
    cr_assert_str_eq(json_string_value(json_array_get(list, 0)), "x");
    json_decref(root);

    nd_integ_conn_t *b = client(m.srv, "{\"verbose\":false}");
    json_int_t cb = cid_of(b);
    ND_SEND(b, "BOGUS\r\n");
    ND_EXPECT(b, "-ERR 'Unknown Protocol Operation'\r\n");
    nd_integ_expect_close(b);
    nd_integ_conn_close(b);
    c = wait_closed(m.http, cb, &root);
    cr_assert_str_eq(jstr(c, "reason"), "Parse Error");
    json_decref(root);

    /* state=all lists both; sort by stop and reason work on closed connections only. */
    json_t *cz = get_json(m.http, "/connz?state=all");
    cr_assert_eq(jint(cz, "total"), 2);
    json_decref(cz);
    cz = get_json(m.http, "/connz?state=closed&sort=stop");
    cr_assert_eq(jint(cz, "total"), 2);
    json_decref(cz);
    cz = get_json(m.http, "/connz?state=closed&sort=reason");
    cr_assert_eq(jint(cz, "total"), 2);
    json_decref(cz);
    mon_stop(&m);
}

Test(integ_monitor, closed_slow_consumer)
{
    mon_t m = mon_start_with("max_payload: 65536\nmax_pending: 131072\n", NULL);
    nd_integ_conn_t *sub = client(m.srv, "{\"verbose\":false}");
    ND_SEND(sub, "SUB big 1\r\nPING\r\n");
    ND_EXPECT(sub, "PONG\r\n");
    json_int_t cs = cid_of(sub);
    nd_integ_conn_t *pub = client(m.srv, "{\"verbose\":false}");
    /* The subscriber never reads: once the socket buffers are full, its pending bytes pass
     * max_pending (or its writes stall past the write deadline). */
    size_t payload = 60000;
    char *msg = malloc(payload + 64);
    int hl = snprintf(msg, 64, "PUB big %zu\r\n", payload);
    memset(msg + hl, 'z', payload);
    memcpy(msg + hl + payload, "\r\n", 2);
    json_t *root = NULL, *c = NULL;
    for (int round = 0; round < 50 && c == NULL; round++) {
        for (int i = 0; i < 50; i++)
            nd_integ_send(pub, msg, (size_t)hl + payload + 2);
        ND_PING(pub);
        char path[96];
        snprintf(path, sizeof path, "/connz?state=closed&cid=%lld", (long long)cs);
        json_t *cz = get_json(m.http, path);
        if (find_cid(cz, cs) != NULL) {
            root = cz;
            c = find_cid(cz, cs);
        } else {
            json_decref(cz);
        }
    }
    free(msg);
    cr_assert(c != NULL, "the subscriber was never closed as a slow consumer");
    const char *reason = jstr(c, "reason");
    cr_assert(strcmp(reason, "Slow Consumer (Pending Bytes)") == 0 ||
                  strcmp(reason, "Slow Consumer (Write Deadline)") == 0,
              "reason %s", reason);
    json_decref(root);
    json_t *v = get_json(m.http, "/varz");
    cr_assert_geq(jint(v, "slow_consumers"), 1);
    cr_assert_geq(jint(json_object_get(v, "slow_consumer_stats"), "clients"), 1);
    json_decref(v);
    nd_integ_conn_close(sub);
    nd_integ_conn_close(pub);
    mon_stop(&m);
}

Test(integ_monitor, closed_stale_connection)
{
    mon_t m = mon_start_with("ping_interval: \"100ms\"\nping_max: 1\n", NULL);
    /* This client never answers the server's PINGs. */
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false}");
    json_int_t ca = cid_of(a);
    json_t *root;
    json_t *c = wait_closed(m.http, ca, &root);
    cr_assert_str_eq(jstr(c, "reason"), "Stale Connection");
    json_decref(root);
    nd_integ_conn_close(a);
    mon_stop(&m);
}

/* With --user/--pass, a wrong password is an authentication failure. */
Test(integ_monitor, closed_auth_failure)
{
    const char *args[] = {"--user", "bob", "--pass", "s3cretpw", NULL};
    mon_t m = mon_start_with(NULL, args);
    nd_integ_conn_t *a = nd_integ_conn_open(m.srv);
    json_int_t ca = cid_of(a);
    ND_SEND(a, "CONNECT {\"verbose\":false,\"user\":\"bob\",\"pass\":\"wrong\"}\r\nPING\r\n");
    char *f = nd_integ_read_frame(a);
    cr_assert(f != NULL && strstr(f, "Authorization Violation") != NULL, "got %s",
              f ? f : "(closed)");
    free(f);
    nd_integ_conn_close(a);
    json_t *root;
    json_t *c = wait_closed(m.http, ca, &root);
    cr_assert_str_eq(jstr(c, "reason"), "Authentication Failure");
    json_decref(root);
    mon_stop(&m);
}

/* ---- /subsz and the other endpoints ---- */

Test(integ_monitor, subsz)
{
    /* Without the default system account: its internal subscriptions and the periodic STATSZ
     * publishes would add to every figure (system_account_default checks those). */
    mon_t m = mon_start_with("no_system_account: true\n", NULL);
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false}");
    ND_SEND(a, "SUB foo.* 1\r\nSUB foo.bar 2\r\nSUB other 3\r\nPING\r\n");
    ND_EXPECT(a, "PONG\r\n");
    json_int_t ca = cid_of(a);
    json_t *s = get_json(m.http, "/subsz");
    cr_assert_eq(jint(s, "num_subscriptions"), 3);
    cr_assert_eq(jint(s, "num_inserts"), 3);
    cr_assert_eq(jint(s, "num_removes"), 0);
    cr_assert_null(json_object_get(s, "subscriptions_list"));
    /* Without a list, the statistics alone (nats-server's keys, in its order). */
    static const char *const keys[] = {"num_subscriptions", "num_cache",   "num_inserts",
                                       "num_removes",       "num_matches", "cache_hit_rate",
                                       "max_fanout",        "avg_fanout"};
    cr_assert_eq(json_object_size(s), sizeof keys / sizeof keys[0]);
    {
        size_t i = 0;
        const char *k;
        json_t *v;
        json_object_foreach(s, k, v) cr_assert_str_eq(k, keys[i++]);
    }
    json_decref(s);
    /* Real figures: the first publish walks the sublist (fanout 2: foo.* and foo.bar), the
     * second is answered by the connection's cache; an UNSUB is a remove. */
    ND_SEND(a, "PUB foo.bar 1\r\nx\r\nPUB foo.bar 1\r\nx\r\nSUB gone 4\r\nUNSUB 4\r\nPING\r\n");
    ND_EXPECT(a, "MSG foo.bar 1 1\r\nx\r\nMSG foo.bar 2 1\r\nx\r\n"
                 "MSG foo.bar 1 1\r\nx\r\nMSG foo.bar 2 1\r\nx\r\nPONG\r\n");
    s = get_json(m.http, "/subsz");
    cr_assert_eq(jint(s, "num_subscriptions"), 3);
    cr_assert_eq(jint(s, "num_inserts"), 4);
    cr_assert_eq(jint(s, "num_removes"), 1);
    if (!nd_integ_is_reference()) {
        /* nats-server also counts its own lookups; natsd has none in $G here. */
        cr_assert_eq(jint(s, "num_matches"), 2);
        cr_assert(json_real_value(json_object_get(s, "cache_hit_rate")) == 0.5, "%f",
                  json_number_value(json_object_get(s, "cache_hit_rate")));
        cr_assert_eq(jint(s, "max_fanout"), 2);
        cr_assert_eq(jint(s, "avg_fanout"), 2);
    }
    json_decref(s);
    s = get_json(m.http, "/subsz?subs=1");
    cr_assert_eq(jint(s, "total"), 3);
    json_t *list = json_object_get(s, "subscriptions_list");
    cr_assert_eq(json_array_size(list), 3);
    json_t *first = json_array_get(list, 0);
    cr_assert_str_eq(jstr(first, "account"), "$G");
    cr_assert_str_eq(jstr(first, "sid"), "1");
    cr_assert_str_eq(jstr(first, "subject"), "foo.*");
    cr_assert_eq(jint(first, "cid"), ca);
    json_decref(s);
    s = get_json(m.http, "/subsz?subs=1&test=foo.bar");
    cr_assert_eq(jint(s, "total"), 2);
    json_decref(s);
    s = get_json(m.http, "/subscriptionsz?subs=1&limit=1&offset=2");
    cr_assert_eq(jint(s, "total"), 3);
    cr_assert_eq(json_array_size(json_object_get(s, "subscriptions_list")), 1);
    cr_assert_str_eq(jstr(json_array_get(json_object_get(s, "subscriptions_list"), 0), "subject"),
                     "other");
    json_decref(s);
    nd_integ_conn_close(a);
    mon_stop(&m);
}

/* With no system_account configured, $SYS is the system account, as nats-server 2.9.10 makes it
 * (SetDefaultSystemAccount): /varz and /accountz name it, its internal subscriptions (the $SYS
 * request services) are in /subsz, and a user of an accounts block named $SYS gets an answer to
 * $SYS.REQ.SERVER.PING. no_system_account turns it off. */
Test(integ_monitor, system_account_default)
{
    mon_t m = mon_start_with("accounts { $SYS { users: [{user: sys, password: sys}] }\n"
                             "           A { users: [{user: a, password: a}] } }\n",
                             NULL);
    json_t *o = get_json(m.http, "/varz");
    cr_assert_str_eq(jstr(o, "system_account"), "$SYS");
    json_decref(o);
    o = get_json(m.http, "/accountz");
    cr_assert_str_eq(jstr(o, "system_account"), "$SYS");
    {
        int seen = 0;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(o, "accounts"), i, e)
        {
            const char *n = json_string_value(e);
            seen |= (!strcmp(n, "$G") ? 1 : 0) | (!strcmp(n, "$SYS") ? 2 : 0) |
                    (!strcmp(n, "A") ? 4 : 0);
        }
        cr_assert_eq(seen, 7, "accounts: %d", seen);
    }
    json_decref(o);
    o = get_json(m.http, "/accountz?acc=$SYS");
    json_t *d = json_object_get(o, "account_detail");
    cr_assert(json_is_true(json_object_get(d, "is_system")));
    json_int_t sys_subs = jint(d, "subscriptions");
    cr_assert_gt(sys_subs, 0);
    json_decref(o);
    o = get_json(m.http, "/subsz");
    cr_assert_geq(jint(o, "num_subscriptions"), sys_subs);
    json_decref(o);
    /* A $SYS user's PING gets the server's STATSZ; another account's, no responders. */
    nd_integ_conn_t *c = client(m.srv, "{\"verbose\":false,\"headers\":true,\"no_responders\":"
                                       "true,\"user\":\"sys\",\"pass\":\"sys\"}");
    ND_SEND(c, "SUB _INBOX.p 1\r\nPUB $SYS.REQ.SERVER.PING _INBOX.p 0\r\n\r\n");
    char *f = nd_integ_read_frame(c);
    cr_assert(f != NULL && strncmp(f, "MSG _INBOX.p 1 ", 15) == 0 && strstr(f, "\"statsz\""),
              "got %s", f ? f : "(closed)");
    free(f);
    nd_integ_conn_close(c);
    c = client(m.srv, "{\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                      "\"user\":\"a\",\"pass\":\"a\"}");
    ND_SEND(c, "SUB _INBOX.p 1\r\nPUB $SYS.REQ.SERVER.PING _INBOX.p 0\r\n\r\n");
    f = nd_integ_read_frame(c);
    cr_assert(f != NULL && strstr(f, "NATS/1.0 503") != NULL, "got %s", f ? f : "(closed)");
    free(f);
    nd_integ_conn_close(c);
    mon_stop(&m);

    m = mon_start_with("no_system_account: true\n", NULL);
    o = get_json(m.http, "/varz");
    cr_assert_null(json_object_get(o, "system_account"));
    json_decref(o);
    o = get_json(m.http, "/accountz");
    cr_assert_null(json_object_get(o, "system_account"));
    cr_assert_eq(json_array_size(json_object_get(o, "accounts")), 1);
    json_decref(o);
    mon_stop(&m);
}

Test(integ_monitor, healthz_and_empty_shapes)
{
    mon_t m = mon_start();
    /* nats-server's exact bytes: compact, no status_code. */
    static const char *const probes[] = {"/healthz", "/healthz?js-enabled-only=true",
                                         "/healthz?js-server-only=true",
                                         "/healthz?js-enabled=true"};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        hresp_t r = http_get(m.http, probes[i]);
        cr_assert_eq(r.status, 200, "%s", probes[i]);
        cr_assert_str_eq(r.body, "{\"status\":\"ok\"}", "%s", probes[i]);
        cr_assert(strcasestr(r.head, "Content-Type: application/json") != NULL);
        hresp_free(&r);
    }
    /* A bad boolean: plain text, as every endpoint. */
    hresp_t hr = http_get(m.http, "/healthz?js-enabled-only=maybe");
    cr_assert_eq(hr.status, 400);
    cr_assert_str_eq(hr.body, "Error decoding boolean for 'js-enabled-only': strconv.ParseBool: "
                              "parsing \"maybe\": invalid syntax");
    hresp_free(&hr);
    json_t *o = get_json(m.http, "/routez");
    cr_assert_eq(jint(o, "num_routes"), 0);
    cr_assert_eq(json_array_size(json_object_get(o, "routes")), 0);
    json_decref(o);
    o = get_json(m.http, "/gatewayz");
    cr_assert(json_is_object(json_object_get(o, "outbound_gateways")));
    /* No gateway configured: nats-server omits these (omitempty). */
    cr_assert_null(json_object_get(o, "name"));
    cr_assert_null(json_object_get(o, "host"));
    cr_assert_null(json_object_get(o, "port"));
    json_decref(o);
    o = get_json(m.http, "/leafz");
    cr_assert_eq(jint(o, "leafnodes"), 0);
    cr_assert(json_is_null(json_object_get(o, "leafs")), "leafs is not null");
    json_decref(o);
    o = get_json(m.http, "/accountz");
    {
        /* nats-server lists them in its map's order. */
        bool g = false;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(o, "accounts"), i, e) g |=
            !strcmp(json_string_value(e), "$G");
        cr_assert(g, "no $G in /accountz");
    }
    json_decref(o);
    o = get_json(m.http, "/accstatz");
    cr_assert(json_is_array(json_object_get(o, "account_statz")));
    json_decref(o);
    o = get_json(m.http, "/jsz");
    cr_assert(json_is_true(json_object_get(o, "disabled")));
    cr_assert(json_is_object(json_object_get(o, "api")));
    json_decref(o);
    hresp_t r = http_get(m.http, "/");
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "varz") != NULL);
    hresp_free(&r);
    /* JSONP */
    r = http_get(m.http, "/varz?callback=cb");
    cr_assert_eq(r.status, 200);
    cr_assert(strncmp(r.body, "cb({", 4) == 0 && r.body[r.body_len - 1] == ')');
    hresp_free(&r);
    mon_stop(&m);
}

/* JetStream configured but not running (its store directory cannot be made): every probe but
 * js-server-only answers 503 with nats-server's text (nats-server itself refuses to start
 * then, so there is no reference to compare with: the texts are those of its healthz). */
Test(integ_monitor, healthz_jetstream_not_running)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server does not start without its JetStream store");
    mon_t m = mon_start_with("jetstream { store_dir: \"/proc/self/no-such-dir\" }\n", NULL);
    static const char unavailable[] =
        "{\"status\":\"unavailable\",\"error\":\"JetStream not enabled (10076)\"}";
    static const struct {
        const char *path;
        int status;
        const char *body;
    } cases[] = {
        {"/healthz", 503, unavailable},
        {"/healthz?js-enabled-only=true", 503, unavailable},
        {"/healthz?js-enabled=true", 503, unavailable},
        {"/healthz?js-server-only=true", 200, "{\"status\":\"ok\"}"},
        {"/healthz?details=true", 503,
         "{\"status\":\"error\",\"errors\":[{\"type\":\"JETSTREAM\",\"error\":"
         "\"JetStream not enabled (10076)\"}]}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hresp_t r = http_get(m.http, cases[i].path);
        cr_assert_eq(r.status, cases[i].status, "%s: %d", cases[i].path, r.status);
        cr_assert_str_eq(r.body, cases[i].body, "%s", cases[i].path);
        hresp_free(&r);
    }
    json_t *o = get_json(m.http, "/jsz");
    cr_assert(json_is_true(json_object_get(o, "disabled")));
    json_decref(o);
    mon_stop(&m);
}

/* ---- bad input ---- */

Test(integ_monitor, bad_parameters)
{
    mon_t m = mon_start();
    static const struct {
        const char *path, *body;
    } cases[] = {
        {"/connz?limit=abc", "Error decoding int for 'limit': strconv.Atoi: parsing \"abc\": "
                             "invalid syntax"},
        {"/connz?limit=99999999999999999999",
         "Error decoding int for 'limit': strconv.Atoi: parsing \"99999999999999999999\": value "
         "out of range"},
        {"/connz?offset=1x", "Error decoding int for 'offset': strconv.Atoi: parsing \"1x\": "
                             "invalid syntax"},
        {"/connz?cid=-1", "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"-1\": "
                          "invalid syntax"},
        {"/connz?cid=x", "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"x\": "
                         "invalid syntax"},
        {"/connz?sort=foo", "invalid sorting option: foo"},
        {"/connz?sort=stop", "sort by stop only valid on closed connections"},
        {"/connz?sort=reason", "sort by reason only valid on closed connections"},
        {"/connz?state=foo", "Error decoding state for foo"},
        {"/connz?subs=x", "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"x\": "
                          "invalid syntax"},
        {"/connz?auth=2", NULL},
        {"/subsz?limit=abc", NULL},
        {"/subsz?subs=maybe", NULL},
        {"/subsz?test=foo.*", NULL},
        {"/healthz?js-enabled-only=x", NULL},
        {"/healthz?stream=s", NULL},
        {"/healthz?account=a&consumer=c", NULL},
        {"/jsz?limit=-x", NULL},
        {"/accstatz?unused=x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hresp_t r = http_get(m.http, cases[i].path);
        cr_assert_eq(r.status, 400, "%s: %d %s", cases[i].path, r.status, r.body);
        if (cases[i].body != NULL)
            cr_assert_str_eq(r.body, cases[i].body, "%s", cases[i].path);
        hresp_free(&r);
    }
    hresp_t r = http_get(m.http, "/nope");
    cr_assert_eq(r.status, 404);
    hresp_free(&r);
    /* Still serving. */
    json_t *v = get_json(m.http, "/varz");
    json_decref(v);
    mon_stop(&m);
}

Test(integ_monitor, hostile_http)
{
    mon_t m = mon_start();

    /* A 100 KB URL: refused (414) or closed, never served, and the server lives on. */
    {
        size_t n = 100 * 1024;
        char *req = malloc(n + 64);
        int k = sprintf(req, "GET /varz?x=");
        memset(req + k, 'a', n);
        strcpy(req + k + n, " HTTP/1.1\r\nHost: x\r\n\r\n");
        hconn_t h = hc_open(m.http);
        hc_send(&h, req, strlen(req)); /* may fail midway: the server may close first */
        free(req);
        hresp_t r;
        if (hc_read(&h, &r, false)) {
            cr_assert(r.status == 414 || r.status == 400, "status %d", r.status);
            hresp_free(&r);
            hc_expect_eof(&h);
        }
        hc_close(&h);
    }
    /* Non-HTTP bytes: 400 and a close. */
    {
        hconn_t h = hc_open(m.http);
        static const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 binary\r\n\r\n";
        hc_send(&h, junk, sizeof junk - 1);
        hresp_t r;
        cr_assert(hc_read(&h, &r, false));
        cr_assert_eq(r.status, 400);
        hresp_free(&r);
        hc_expect_eof(&h);
        hc_close(&h);
    }
    {
        hconn_t h = hc_open(m.http);
        static const char nats[] = "CONNECT {}\r\nPING\r\n\r\n";
        hc_send(&h, nats, sizeof nats - 1);
        hresp_t r;
        cr_assert(hc_read(&h, &r, false));
        cr_assert_eq(r.status, 400);
        hresp_free(&r);
        hc_expect_eof(&h);
        hc_close(&h);
    }
    /* Slowloris: headers that never end are cut off by the header deadline. */
    {
        hconn_t h = hc_open(m.http);
        static const char part[] = "GET /varz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n";
        hc_send(&h, part, sizeof part - 1);
        hc_expect_eof(&h);
        hc_close(&h);
    }
    /* A connection that sends nothing at all is closed too. */
    {
        hconn_t h = hc_open(m.http);
        hc_expect_eof(&h);
        hc_close(&h);
    }
    /* Too many headers. */
    {
        hconn_t h = hc_open(m.http);
        char req[8192];
        size_t n = (size_t)sprintf(req, "GET /varz HTTP/1.1\r\n");
        for (int i = 0; i < 100; i++)
            n += (size_t)sprintf(req + n, "X-H%d: v\r\n", i);
        n += (size_t)sprintf(req + n, "\r\n");
        hc_send(&h, req, n);
        hresp_t r;
        cr_assert(hc_read(&h, &r, false));
        cr_assert_eq(r.status, 431);
        hresp_free(&r);
        hc_close(&h);
    }
    /* Methods other than GET and HEAD. */
    {
        hconn_t h = hc_open(m.http);
        static const char post[] = "POST /varz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                                   "HEAD /varz HTTP/1.1\r\nHost: x\r\n\r\n"
                                   "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        hc_send(&h, post, sizeof post - 1);
        hresp_t r;
        cr_assert(hc_read(&h, &r, false));
        cr_assert_eq(r.status, 405);
        cr_assert(strcasestr(r.head, "Allow: GET, HEAD") != NULL);
        hresp_free(&r);
        /* HEAD: headers only, on the same kept-alive connection (pipelined). */
        cr_assert(hc_read(&h, &r, true));
        cr_assert_eq(r.status, 200);
        hresp_free(&r);
        cr_assert(hc_read(&h, &r, false));
        cr_assert_eq(r.status, 200);
        cr_assert(strstr(r.body, "\"ok\"") != NULL);
        hresp_free(&r);
        hc_expect_eof(&h);
        hc_close(&h);
    }
    json_t *v = get_json(m.http, "/varz");
    json_decref(v);
    mon_stop(&m);
}

/* ---- /metrics ---- */

static bool
metric_name_ok(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
            return false;
    return true;
}

static bool
float_ok(const char *s)
{
    if (!strcmp(s, "NaN") || !strcmp(s, "+Inf") || !strcmp(s, "-Inf"))
        return true;
    char *end;
    errno = 0;
    strtod(s, &end);
    if (*s == '\0' || *end != '\0')
        return false;
    for (const char *p = s; *p; p++) /* strtod also takes hex and "inf": the format does not */
        if (!(isdigit((unsigned char)*p) || strchr("+-.eE", *p)))
            return false;
    return true;
}

/* Validates one sample line: name{label="value",...} value [timestamp]. Returns: an error or
 * NULL; *name gets the metric name. */
static const char *
sample_ok(const char *line, char *name, size_t name_cap)
{
    const char *p = line;
    size_t n = strcspn(p, "{ ");
    if (!metric_name_ok(p, n) || n >= name_cap)
        return "bad metric name";
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            size_t ln = strcspn(p, "=");
            if (ln == 0 || !(isalpha((unsigned char)p[0]) || p[0] == '_'))
                return "bad label name";
            for (size_t i = 0; i < ln; i++)
                if (!(isalnum((unsigned char)p[i]) || p[i] == '_'))
                    return "bad label name";
            p += ln;
            if (p[0] != '=' || p[1] != '"')
                return "label without a quoted value";
            p += 2;
            while (*p != '"') {
                if (*p == '\0' || *p == '\n')
                    return "unterminated label value";
                if (*p == '\\') {
                    if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                        return "bad escape in a label value";
                    p++;
                }
                p++;
            }
            p++;
            if (*p == ',')
                p++;
            else if (*p != '}')
                return "labels not separated by commas";
        }
        p++;
    }
    if (*p != ' ')
        return "no space before the value";
    p++;
    char val[64];
    size_t vl = strcspn(p, " ");
    if (vl == 0 || vl >= sizeof val)
        return "bad value";
    memcpy(val, p, vl);
    val[vl] = '\0';
    if (!float_ok(val))
        return "value is not a float";
    p += vl;
    if (*p == ' ') {
        p++;
        for (const char *q = (*p == '-' ? p + 1 : p); *q; q++)
            if (!isdigit((unsigned char)*q))
                return "bad timestamp";
        if (*p == '\0')
            return "empty timestamp";
    } else if (*p != '\0') {
        return "trailing bytes";
    }
    return NULL;
}

/* A strict check of the Prometheus text format 0.0.4 plus natsd's own rules: every family has
 * HELP then TYPE before its samples, a family's samples are contiguous, names start with natsd_
 * (or are the standard process_ ones), counters end in _total. */
static void
check_metrics(const char *body, size_t len)
{
    cr_assert(len > 0 && body[len - 1] == '\n', "the exposition must end with a newline");
    char *copy = strndup(body, len);
    char cur[256] = "", helped[256] = "";
    char types[128][256];
    int ntypes = 0;
    char *save = NULL;
    int lineno = 0;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        cr_assert(strlen(line) > 0);
        if (strncmp(line, "# HELP ", 7) == 0) {
            const char *n = line + 7;
            size_t nl = strcspn(n, " ");
            cr_assert(metric_name_ok(n, nl) && n[nl] == ' ', "line %d: %s", lineno, line);
            for (const char *q = n + nl + 1; *q; q++)
                if (*q == '\\') {
                    cr_assert(q[1] == '\\' || q[1] == 'n', "line %d: bad escape", lineno);
                    q++;
                }
            snprintf(helped, sizeof helped, "%.*s", (int)nl, n);
            continue;
        }
        if (strncmp(line, "# TYPE ", 7) == 0) {
            char n[256], t[64];
            cr_assert(sscanf(line + 7, "%255s %63s", n, t) == 2, "line %d", lineno);
            cr_assert(strcmp(t, "counter") == 0 || strcmp(t, "gauge") == 0 ||
                          strcmp(t, "histogram") == 0 || strcmp(t, "summary") == 0 ||
                          strcmp(t, "untyped") == 0,
                      "line %d: type %s", lineno, t);
            cr_assert_str_eq(n, helped, "line %d: TYPE without HELP just before", lineno);
            for (int i = 0; i < ntypes; i++)
                cr_assert_str_neq(types[i], n, "line %d: %s typed twice", lineno, n);
            cr_assert(ntypes < 128);
            snprintf(types[ntypes++], sizeof types[0], "%s", n);
            snprintf(cur, sizeof cur, "%s", n);
            cr_assert(strncmp(n, "natsd_", 6) == 0 || strncmp(n, "process_", 8) == 0, "line %d: %s",
                      lineno, n);
            if (strcmp(t, "counter") == 0)
                cr_assert(strlen(n) > 6 && strcmp(n + strlen(n) - 6, "_total") == 0,
                          "counter %s does not end in _total", n);
            continue;
        }
        cr_assert(line[0] != '#', "line %d: unknown comment %s", lineno, line);
        char name[256];
        const char *err = sample_ok(line, name, sizeof name);
        cr_assert(err == NULL, "line %d: %s: %s", lineno, err, line);
        cr_assert_str_eq(name, cur, "line %d: sample outside its family: %s", lineno, line);
    }
    cr_assert_gt(ntypes, 10);
    free(copy);
}

Test(integ_monitor, metrics)
{
    mon_t m = mon_start();
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false}");
    ND_SEND(a, "SUB m 1\r\nPUB m 4\r\nabcd\r\nPING\r\n");
    ND_EXPECT(a, "MSG m 1 4\r\nabcd\r\nPONG\r\n");
    hresp_t r = http_get(m.http, "/metrics");
    cr_assert_eq(r.status, 200);
    cr_assert(strcasestr(r.head, "Content-Type: text/plain; version=0.0.4") != NULL);
    check_metrics(r.body, r.body_len);
    cr_assert(strstr(r.body, "\nnatsd_connections 1\n") != NULL, "%s", r.body);
    cr_assert(strstr(r.body, "\nnatsd_in_msgs_total 1\n") != NULL);
    cr_assert(strstr(r.body, "\nnatsd_out_bytes_total 4\n") != NULL);
    cr_assert(strstr(r.body, "\nnatsd_subscriptions 1\n") != NULL);
    cr_assert(strstr(r.body, "natsd_account_connections{account=\"$G\"} 1\n") != NULL);
    cr_assert(strstr(r.body, "\nnatsd_connections_accepted_total 1\n") != NULL);
    cr_assert(strstr(r.body, "\nprocess_open_fds ") != NULL);
    cr_assert_null(strstr(r.body, "# EOF"));
    /* Full resolution: nine decimals, not %.9g's ten seconds. */
    const char *st = strstr(r.body, "\nnatsd_start_time_seconds ");
    cr_assert_not_null(st);
    st += strlen("\nnatsd_start_time_seconds ");
    cr_assert_eq(strcspn(st, "\n"), strcspn(st, ".") + 10, "%.30s", st);
    hresp_free(&r);
    /* OpenMetrics when asked for as Prometheus asks: a counter's family is named without _total,
     * the exposition ends with # EOF. */
    r = http_get_hdr(m.http, "/metrics",
                     "Accept: application/openmetrics-text;version=1.0.0,text/plain;"
                     "version=0.0.4;q=0.5,*/*;q=0.1\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert(strcasestr(r.head, "Content-Type: application/openmetrics-text; version=1.0.0; "
                                 "charset=utf-8") != NULL,
              "%s", r.head);
    cr_assert(r.body_len > 6 && strcmp(r.body + r.body_len - 6, "# EOF\n") == 0);
    cr_assert(strstr(r.body, "\n# TYPE natsd_in_msgs counter\nnatsd_in_msgs_total 1\n") != NULL,
              "%s", r.body);
    hresp_free(&r);
    /* The validator itself rejects what it should. */
    char name[64];
    cr_assert_not_null(sample_ok("natsd_x{a=\"b\" 1", name, sizeof name));
    cr_assert_not_null(sample_ok("natsd_x{a=\"\\q\"} 1", name, sizeof name));
    cr_assert_not_null(sample_ok("natsd_x 0x10", name, sizeof name));
    cr_assert_not_null(sample_ok("natsd-x 1", name, sizeof name));
    cr_assert_null(sample_ok("natsd_x{a=\"b\",c=\"d\\\"\"} 1.5e+09 123", name, sizeof name));
    nd_integ_conn_close(a);
    mon_stop(&m);
}

/* Both formats read by a real parser: the Prometheus Python client's (Debian's
 * python3-prometheus-client, installed by scripts/setup.sh --tests), through
 * tests/integ/check_metrics.py. JetStream on, with a stream, so the per-account and per-stream
 * families are there too. */
static void
save_body(const char *path, const hresp_t *r)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(r->body, 1, r->body_len, f), r->body_len);
    fclose(f);
}

Test(integ_monitor, metrics_parsers)
{
    if (system("/usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null") !=
        0)
        cr_assert_fail("the Prometheus Python client is missing: install python3-prometheus-client "
                       "(scripts/setup.sh --tests)");
    char dir[] = "/tmp/natsd-metrics-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char conf[512];
    snprintf(conf, sizeof conf, "jetstream { store_dir: \"%s\" }\n", dir);
    mon_t m = mon_start_with(conf, NULL);
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false,\"headers\":true}");
    static const char create[] = "{\"name\":\"S\",\"subjects\":[\"m\"],\"storage\":\"memory\"}";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "SUB _r 9\r\nPUB $JS.API.STREAM.CREATE.S _r %zu\r\n%s\r\n",
             strlen(create), create);
    ND_SENDS(a, cmd);
    char *f = nd_integ_read_frame(a);
    cr_assert(strncmp(f, "MSG _r 9 ", 9) == 0 && strstr(f, "\"config\"") != NULL, "%s", f);
    free(f);
    ND_SEND(a, "SUB m 1\r\nPUB m 4\r\nabcd\r\nPING\r\n");
    ND_EXPECT(a, "MSG m 1 4\r\nabcd\r\nPONG\r\n");
    hresp_t r = http_get(m.http, "/metrics");
    cr_assert_eq(r.status, 200);
    cr_assert(strstr(r.body, "stream=\"S\"") != NULL, "%s", r.body);
    char prom[600], om[600];
    snprintf(prom, sizeof prom, "%s/metrics.prom", dir);
    snprintf(om, sizeof om, "%s/metrics.om", dir);
    save_body(prom, &r);
    hresp_free(&r);
    r = http_get_hdr(m.http, "/metrics", "Accept: application/openmetrics-text\r\n");
    cr_assert_eq(r.status, 200);
    save_body(om, &r);
    hresp_free(&r);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/check_metrics.py %s %s", ND_INTEG_SOURCE_DIR,
             prom, om);
    int rc = system(cmd);
    cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s failed", cmd);
    nd_integ_conn_close(a);
    mon_stop(&m);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- secrets ---- */

Test(integ_monitor, passwords_never_shown)
{
    /* A password, then a token, given on the command line; the client sends them too. */
    static const char *const args_pass[] = {"--user", "bob", "--pass", "s3cretpw", NULL};
    static const char *const args_token[] = {"--auth", "s3cretpw", NULL};
    static const char *const *const arg_sets[] = {args_pass, args_token};
    static const char *const connects[] = {
        "{\"verbose\":false,\"user\":\"bob\",\"pass\":\"s3cretpw\",\"name\":\"n\"}",
        "{\"verbose\":false,\"auth_token\":\"s3cretpw\",\"name\":\"n\"}",
    };
    static const char *const paths[] = {
        "/",
        "/varz",
        "/connz?subs=detail&auth=1",
        "/connz?state=all&auth=1&subs=1",
        "/routez",
        "/gatewayz",
        "/leafz",
        "/subsz?subs=1",
        "/accountz",
        "/accountz?acc=$G",
        "/accstatz?unused=1",
        "/jsz",
        "/healthz",
        "/metrics",
    };
    for (size_t k = 0; k < 2; k++) {
        mon_t m = mon_start_with(NULL, arg_sets[k]);
        nd_integ_conn_t *a = client(m.srv, connects[k]);
        ND_SEND(a, "SUB s 1\r\nPING\r\n");
        ND_EXPECT(a, "PONG\r\n");
        nd_integ_conn_t *b = client(m.srv, connects[k]);
        nd_integ_conn_close(b); /* the closed ring must not show it either */
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
            hresp_t r = http_get(m.http, paths[i]);
            cr_assert_eq(r.status, 200, "%s: %d", paths[i], r.status);
            cr_assert_null(strstr(r.body, "s3cretpw"), "%s shows the secret", paths[i]);
            hresp_free(&r);
        }
        nd_integ_conn_close(a);
        mon_stop(&m);
    }
}

/* ---- key sets against the reference ---- */

/* Keys natsd may lack, and why. */
static const char *const allowed_missing[] = {
    NULL, /* none left: add "endpoint.key" entries with the reason */
};

/* Collects "prefix.key" paths of o (arrays: the union over their elements, as "key[]"). Maps
 * whose keys are data, not fields (http_req_stats), are not entered. */
static void
collect(json_t *o, const char *prefix, json_t *set)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *e;
        char p[512];
        snprintf(p, sizeof p, "%s[]", prefix);
        json_array_foreach(o, i, e) collect(e, p, set);
        return;
    }
    if (!json_is_object(o))
        return;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        char p[512];
        snprintf(p, sizeof p, "%s.%s", prefix, k);
        json_object_set_new(set, p, json_true());
        if (strcmp(k, "http_req_stats") != 0)
            collect(v, p, set);
    }
}

/* Starts a server (binary: the reference or ours), sets up one client with two subscriptions
 * and a message, and collects the key paths of each endpoint. */
static json_t *
key_sets(const char *binary)
{
    const char *saved = getenv("NATSD_TEST_SERVER");
    char *keep = saved ? strdup(saved) : NULL;
    if (binary != NULL)
        setenv("NATSD_TEST_SERVER", binary, 1);
    mon_t m = mon_start();
    if (keep)
        setenv("NATSD_TEST_SERVER", keep, 1);
    else
        unsetenv("NATSD_TEST_SERVER");
    free(keep);
    nd_integ_conn_t *a = client(m.srv, "{\"verbose\":false,\"name\":\"k\",\"lang\":\"c\","
                                       "\"version\":\"1\"}");
    ND_SEND(a, "SUB foo 1\r\nSUB bar q 2\r\nPUB foo 1\r\nx\r\nPING\r\n");
    ND_EXPECT(a, "MSG foo 1 1\r\nx\r\nPONG\r\n");
    nd_integ_conn_t *b = client(m.srv, "{\"verbose\":false}");
    nd_integ_conn_close(b);
    usleep(200000); /* not an assertion: gives the closed connection time to be listed */
    static const struct {
        const char *name, *path;
    } eps[] = {
        {"varz", "/varz"},
        {"connz", "/connz?subs=detail"},
        {"connz_closed", "/connz?state=closed&subs=1"},
        {"subsz", "/subsz?subs=1"},
        {"healthz", "/healthz"},
        {"routez", "/routez"},
        {"subsz_stats", "/subsz"},
        {"gatewayz", "/gatewayz"},
        {"leafz", "/leafz"},
    };
    json_t *set = json_object();
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        json_t *o = get_json(m.http, eps[i].path);
        collect(o, eps[i].name, set);
        json_decref(o);
    }
    nd_integ_conn_close(a);
    mon_stop(&m);
    return set;
}

Test(integ_monitor, keys_match_reference)
{
    const char *ref = nd_integ_reference_path();
    if (ref == NULL)
        cr_skip_test("no reference nats-server");
    json_t *theirs = key_sets(ref);
    json_t *ours = key_sets(NULL);
    const char *k;
    json_t *v;
    json_object_foreach(theirs, k, v)
    {
        bool allowed = false;
        for (size_t i = 0; allowed_missing[i] != NULL; i++)
            allowed |= strcmp(k, allowed_missing[i]) == 0;
        cr_assert(allowed || json_object_get(ours, k) != NULL, "natsd lacks %s", k);
    }
    /* Where natsd's shape is complete, no key beyond nats-server's either. */
    static const char *const strict[] = {"healthz.", "subsz_stats.", "gatewayz.", "leafz."};
    json_object_foreach(ours, k, v)
    {
        for (size_t i = 0; i < sizeof strict / sizeof strict[0]; i++)
            if (strncmp(k, strict[i], strlen(strict[i])) == 0)
                cr_assert_not_null(json_object_get(theirs, k), "natsd has %s, nats-server not", k);
    }
    json_decref(theirs);
    json_decref(ours);
}

/* ---- access control and base path (config file) ---- */

Test(integ_monitor, http_auth_and_base_path)
{
    mon_t m = mon_start_with(
        "http_base_path: \"/nats/\"\n"
        "http_auth { user: mon, password: \"pw-Secret1\", token: \"tok-Secret2\" }\n",
        NULL);
    hresp_t r = http_get(m.http, "/nats/varz");
    cr_assert_eq(r.status, 401);
    cr_assert(strcasestr(r.head, "WWW-Authenticate: Basic") != NULL);
    hresp_free(&r);
    /* mon:pw-Secret1 and mon:wrong in base64 */
    r = http_get_hdr(m.http, "/nats/varz", "Authorization: Basic bW9uOnB3LVNlY3JldDE=\r\n");
    cr_assert_eq(r.status, 200, "%s", r.body);
    cr_assert(strstr(r.body, "\"http_base_path\": \"/nats\"") != NULL, "%s", r.body);
    cr_assert_null(strstr(r.body, "Secret"));
    hresp_free(&r);
    r = http_get_hdr(m.http, "/nats/varz", "Authorization: Basic bW9uOndyb25n\r\n");
    cr_assert_eq(r.status, 401);
    hresp_free(&r);
    r = http_get_hdr(m.http, "/nats/connz", "Authorization: Bearer tok-Secret2\r\n");
    cr_assert_eq(r.status, 200);
    hresp_free(&r);
    r = http_get_hdr(m.http, "/nats/metrics", "Authorization: Bearer tok-Secret2\r\n");
    cr_assert_eq(r.status, 200);
    cr_assert_null(strstr(r.body, "Secret"));
    hresp_free(&r);
    r = http_get_hdr(m.http, "/nats/connz", "Authorization: Bearer tok-Secret\r\n");
    cr_assert_eq(r.status, 401);
    hresp_free(&r);
    /* Probes need no secret. */
    r = http_get(m.http, "/nats/healthz");
    cr_assert_eq(r.status, 200);
    hresp_free(&r);
    /* Outside the base path: nothing. */
    r = http_get(m.http, "/varz");
    cr_assert_eq(r.status, 404);
    hresp_free(&r);
    r = http_get(m.http, "/natsvarz");
    cr_assert_eq(r.status, 404);
    hresp_free(&r);
    mon_stop(&m);
}

/* http_auth {} is reloaded (issue 11, defect 4): after a new password and SIGHUP the new one is
 * let in and the old one refused, on new and on kept-alive HTTP connections alike; the token
 * can be removed; the reload says what it reloaded, without the secrets. */
static int
status_of(int port, const char *path, const char *hdr)
{
    hresp_t r = http_get_hdr(port, path, hdr);
    int st = r.status;
    hresp_free(&r);
    return st;
}

Test(integ_monitor, http_auth_reload)
{
    /* mon:old-Pass1 and mon:new-Pass2 in base64 */
    static const char old_pw[] = "Authorization: Basic bW9uOm9sZC1QYXNzMQ==\r\n";
    static const char new_pw[] = "Authorization: Basic bW9uOm5ldy1QYXNzMg==\r\n";
    static const char tok[] = "Authorization: Bearer tok-Secret3\r\n";
    mon_t m = mon_start_with(
        "http_auth { user: mon, password: \"old-Pass1\", token: \"tok-Secret3\" }\n", NULL);
    cr_assert_eq(status_of(m.http, "/varz", old_pw), 200);
    cr_assert_eq(status_of(m.http, "/varz", new_pw), 401);
    cr_assert_eq(status_of(m.http, "/connz", tok), 200);

    /* A kept-alive connection opened before the reload. */
    hconn_t h = hc_open(m.http);
    char req[256];
    snprintf(req, sizeof req, "GET /varz HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", old_pw);
    cr_assert(hc_send(&h, req, strlen(req)));
    hresp_t r;
    cr_assert(hc_read(&h, &r, false));
    cr_assert_eq(r.status, 200);
    hresp_free(&r);

    size_t mark = nd_integ_server_log_mark(m.srv);
    nd_integ_conf_write(&m.cf, "http_auth { user: mon, password: \"new-Pass2\" }\n");
    nd_integ_server_reload(m.srv, true);
    cr_assert(nd_integ_server_log_has(m.srv, mark, "Reloaded: http_auth password"));
    cr_assert(nd_integ_server_log_has(m.srv, mark, "Reloaded: http_auth token"));
    cr_assert(!nd_integ_server_log_has(m.srv, mark, "Reloaded: http_auth user"));
    cr_assert(!nd_integ_server_log_has(m.srv, mark, "Pass2"), "a secret in the log");

    cr_assert_eq(status_of(m.http, "/varz", new_pw), 200);
    cr_assert_eq(status_of(m.http, "/varz", old_pw), 401);
    cr_assert_eq(status_of(m.http, "/connz", tok), 401); /* the token is gone */
    cr_assert_eq(status_of(m.http, "/healthz", NULL), 200);
    /* The kept-alive connection: its next request is checked against the new credentials. */
    cr_assert(hc_send(&h, req, strlen(req)));
    cr_assert(hc_read(&h, &r, false));
    cr_assert_eq(r.status, 401);
    hresp_free(&r);
    hc_close(&h);

    /* http_auth removed: open again. */
    nd_integ_conf_write(&m.cf, "# no http_auth\n");
    nd_integ_server_reload(m.srv, true);
    cr_assert_eq(status_of(m.http, "/varz", NULL), 200);
    mon_stop(&m);
}

/* A monitoring port already in use fails the start, as with nats-server. */
Test(integ_monitor, port_in_use_fails_start)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    cr_assert(listen(fd, 1) == 0);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -a 127.0.0.1 -p -1 -m %d >/dev/null 2>&1", nd_integ_server_path(),
             ntohs(a.sin_port));
    int rc = system(cmd);
    cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) != 0, "natsd ran without its port");
    close(fd);
}
