/* Integration tests of JetStream's monitoring (src/js/jsmon.c through the server's hook, and
 * src/mon): /varz "jetstream", /jsz with every query parameter, the JetStream checks of
 * /healthz and the JetStream families of /metrics.
 *
 * The server runs with `jetstream { store_dir }` in a temporary directory and a monitoring port;
 * streams are created and filled over the raw protocol ($JS.API requests and publishes with a
 * reply, whose PubAck means the stream's figures are published). A tiny HTTP/1.1 client fetches
 * the endpoints; JSON bodies are parsed with jansson.
 *
 * Every case also runs against the reference nats-server 2.9.10 (`integ.jsmon.reference`):
 * values both servers agree on are asserted for both; where natsd answers as nats-server
 * 2.10/2.11 does (the 2.11 healthz checks of accounts, streams and consumers, /metrics, which
 * nats-server does not have) the test asks nd_integ_is_reference(). keys_match_reference checks
 * that every key the reference writes exists in natsd's answer; keys nats-server added later
 * (total, limits, api.level, 2.10/2.11 config fields) are extra on natsd's side and allowed.
 *
 * Synchronisation: PubAcks and API replies (protocol round trips); JetStream's start is awaited by
 * polling /healthz?js-enabled-only=true with a hang guard.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

TestSuite(integ_jsmon, .fini = nd_integ_cleanup, .timeout = 240);

/* Go's uint64 of -1 (an account without limits reserves "everything" in /jsz's details). */
#define U64_MAX_TEXT "18446744073709551615"

/* ---- a tiny HTTP/1.1 client (Content-Length and chunked bodies) ---- */

typedef struct hresp {
    int status;
    char *head, *body;
    size_t body_len;
} hresp_t;

static ssize_t
fill(int fd, char **buf, size_t *len, size_t *cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ND_INTEG_TIMEOUT_MS) <= 0)
        return -1;
    if (*cap - *len < 65536) {
        *cap = *cap * 2 + 65536;
        *buf = realloc(*buf, *cap + 1);
    }
    ssize_t n = recv(fd, *buf + *len, *cap - *len, 0);
    if (n < 0)
        return errno == ECONNRESET ? 0 : -1;
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return n;
}

static hresp_t
http_get(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
    char req[1024];
    int rl = snprintf(req, sizeof req,
                      "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    cr_assert(send(fd, req, (size_t)rl, MSG_NOSIGNAL) == rl);
    /* Connection: close: read everything, then split. */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        ssize_t n = fill(fd, &buf, &len, &cap);
        cr_assert(n >= 0, "HTTP read of %s timed out", path);
        if (n == 0)
            break;
    }
    close(fd);
    cr_assert(buf != NULL, "no response for %s", path);
    char *end = strstr(buf, "\r\n\r\n");
    cr_assert(end != NULL, "no header end: %s", buf);
    hresp_t r = {0};
    r.head = strndup(buf, (size_t)(end - buf) + 4);
    cr_assert(sscanf(r.head, "HTTP/1.1 %d", &r.status) == 1, "%s", r.head);
    const char *p = end + 4;
    size_t rest = len - (size_t)(p - buf);
    if (strcasestr(r.head, "\r\nTransfer-Encoding: chunked") != NULL) {
        r.body = malloc(rest + 1);
        for (;;) {
            size_t csz = strtoul(p, NULL, 16);
            const char *eol = strstr(p, "\r\n");
            cr_assert(eol != NULL, "bad chunk");
            p = eol + 2;
            if (csz == 0)
                break;
            memcpy(r.body + r.body_len, p, csz);
            r.body_len += csz;
            p += csz + 2;
        }
        r.body[r.body_len] = '\0';
    } else {
        r.body = strndup(p, rest);
        r.body_len = rest;
    }
    free(buf);
    return r;
}

static void
hresp_free(hresp_t *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

/* jansson refuses integers above INT64_MAX: Go's uint64 of -1 is read as -1. */
static void
u64_to_minus_one(char *body)
{
    char *p;
    while ((p = strstr(body, U64_MAX_TEXT)) != NULL) {
        size_t n = strlen(U64_MAX_TEXT);
        p[0] = '-';
        p[1] = '1';
        memmove(p + 2, p + n, strlen(p + n) + 1);
    }
}

/* GET, expect the status and a JSON object. */
static json_t *
get_json_status(int port, const char *path, int want)
{
    hresp_t r = http_get(port, path);
    cr_assert_eq(r.status, want, "%s: status %d: %s", path, r.status, r.body);
    u64_to_minus_one(r.body);
    json_error_t err;
    json_t *o = json_loads(r.body, 0, &err);
    cr_assert(json_is_object(o), "%s: not JSON (%s): %s", path, err.text, r.body);
    hresp_free(&r);
    return o;
}

static json_t *
get_json(int port, const char *path)
{
    return get_json_status(port, path, 200);
}

/* The value at a dotted path ("a.b.c"; "[N]" indexes an array), or NULL. */
static json_t *
at(json_t *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k != NULL && o != NULL;
         k = strtok_r(NULL, ".", &save)) {
        char *br = strchr(k, '[');
        size_t idx = 0;
        if (br != NULL) {
            idx = strtoul(br + 1, NULL, 10);
            *br = '\0';
        }
        o = json_object_get(o, k);
        if (br != NULL)
            o = json_array_get(o, idx);
    }
    return o;
}

static json_int_t
iat(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    cr_assert(json_is_integer(v), "%s is not an integer", path);
    return json_integer_value(v);
}

static const char *
sat(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    cr_assert(json_is_string(v), "%s is not a string", path);
    return json_string_value(v);
}

/* ---- the server and its streams ---- */

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
    int http;
    char store[256];
} env_t;

/* Waits until JetStream answers (nats-server enables it before listening, natsd right after). */
static void
wait_js(int http)
{
    for (int i = 0; i < ND_INTEG_TIMEOUT_MS / 10; i++) {
        hresp_t r = http_get(http, "/healthz?js-enabled-only=true");
        int st = r.status;
        hresp_free(&r);
        if (st == 200)
            return;
        usleep(10000);
    }
    cr_assert_fail("JetStream did not start");
}

static void
start(env_t *e, const char *binary)
{
    const char *saved = getenv("NATSD_TEST_SERVER");
    char *keep = saved ? strdup(saved) : NULL;
    if (binary != NULL)
        setenv("NATSD_TEST_SERVER", binary, 1);
    char *text = NULL;
    cr_assert(
        asprintf(&text, "http_port: %d\njetstream { store_dir: \"%s\" }\n", e->http, e->store) > 0);
    e->srv = nd_integ_conf_start(&e->conf, text);
    free(text);
    if (keep)
        setenv("NATSD_TEST_SERVER", keep, 1);
    else
        unsetenv("NATSD_TEST_SERVER");
    free(keep);
    wait_js(e->http);
    e->c = nd_integ_conn_open(e->srv);
    ND_SEND(e->c, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
                  "SUB _R.1 1\r\nPING\r\n");
    ND_EXPECT(e->c, "PONG\r\n");
}

/* Starts binary (NULL: the server under test) with JetStream in a fresh store. */
static void
up_with(env_t *e, const char *binary)
{
    memset(e, 0, sizeof *e);
    e->http = nd_integ_free_port();
    nd_integ_conf_file(&e->conf, "store", e->store, sizeof e->store);
    start(e, binary);
}

static void
up(env_t *e)
{
    up_with(e, NULL);
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* Sends subject with a reply and body; returns the reply's payload (owned). */
static char *
request(env_t *e, const char *subject, const char *body)
{
    char *line = NULL;
    cr_assert(asprintf(&line, "PUB %s _R.1 %zu\r\n%s\r\n", subject, strlen(body), body) > 0);
    ND_SENDS(e->c, line);
    free(line);
    char *f = nd_integ_read_frame(e->c);
    cr_assert(f != NULL && strncmp(f, "MSG _R.1 1 ", 11) == 0, "reply: %s", f ? f : "(eof)");
    char *payload = strstr(f, "\r\n");
    cr_assert(payload != NULL);
    char *out = strdup(payload + 2);
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    free(f);
    return out;
}

static void
create_stream(env_t *e, const char *name, const char *cfg)
{
    char subj[128];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    char *r = request(e, subj, cfg);
    cr_assert(strstr(r, "\"error\"") == NULL, "create %s: %s", name, r);
    free(r);
}

static void
publish(env_t *e, const char *subject, const char *data)
{
    char *r = request(e, subject, data);
    cr_assert(strstr(r, "\"seq\":") != NULL, "publish on %s: %s", subject, r);
    free(r);
}

/* Two streams: S1 (file, s1.>) with 3 messages, M1 (memory, m1) with 1 of 20 bytes. Two API
 * requests (the creates), none failed. */
static void
fill_streams(env_t *e)
{
    create_stream(e, "S1", "{\"name\":\"S1\",\"subjects\":[\"s1.>\"]}");
    create_stream(e, "M1", "{\"name\":\"M1\",\"subjects\":[\"m1\"],\"storage\":\"memory\"}");
    publish(e, "s1.a", "hello");
    publish(e, "s1.a", "hello");
    publish(e, "s1.b", "hello");
    publish(e, "m1", "hi");
}

/* The stream_detail entry named name. */
static json_t *
detail_of(json_t *jsz, const char *name)
{
    json_t *arr = at(jsz, "account_details[0].stream_detail"), *d;
    size_t i;
    json_array_foreach(arr, i, d)
    {
        if (strcmp(sat(d, "name"), name) == 0)
            return d;
    }
    return NULL;
}

/* ---- /varz ---- */

Test(integ_jsmon, varz_jetstream)
{
    env_t e;
    up(&e);
    fill_streams(&e);
    json_t *v = get_json(e.http, "/varz");
    json_t *js = json_object_get(v, "jetstream");
    cr_assert(json_is_object(js));
    cr_assert_gt(iat(js, "config.max_memory"), 0);
    cr_assert_gt(iat(js, "config.max_storage"), 0);
    const char *dir = sat(js, "config.store_dir");
    cr_assert(strstr(dir, e.store) == dir && strcmp(dir + strlen(e.store), "/jetstream") == 0,
              "store_dir %s", dir);
    cr_assert_eq(iat(js, "stats.memory"), 20); /* "m1" + "hi" + 16, both servers */
    cr_assert_gt(iat(js, "stats.storage"), 0);
    cr_assert_eq(iat(js, "stats.reserved_memory"), 0);
    cr_assert_eq(iat(js, "stats.reserved_storage"), 0);
    cr_assert_eq(iat(js, "stats.accounts"), 1);
    cr_assert_eq(iat(js, "stats.ha_assets"), 0);
    cr_assert_eq(iat(js, "stats.api.total"), 2);
    cr_assert_eq(iat(js, "stats.api.errors"), 0);
    if (!nd_integ_is_reference()) {
        /* 2.10/2.11 additions */
        cr_assert_eq(iat(js, "stats.api.level"), 1);
        cr_assert_eq(iat(js, "config.sync_interval"), 120000000000LL);
        cr_assert(json_is_object(json_object_get(js, "limits")));
    }
    json_decref(v);

    /* A failed API request counts as an error. */
    char *r = request(&e, "$JS.API.STREAM.INFO.NOPE", "");
    cr_assert(strstr(r, "\"code\":404") != NULL, "%s", r);
    free(r);
    v = get_json(e.http, "/varz");
    cr_assert_eq(iat(v, "jetstream.stats.api.total"), 3);
    cr_assert_eq(iat(v, "jetstream.stats.api.errors"), 1);
    json_decref(v);
    down(&e);
}

Test(integ_jsmon, varz_without_jetstream)
{
    int http = nd_integ_free_port();
    char port[16];
    snprintf(port, sizeof port, "%d", http);
    const char *args[] = {"-m", port, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, args);
    json_t *v = get_json(http, "/varz");
    cr_assert_eq(json_object_size(json_object_get(v, "jetstream")), 0);
    json_decref(v);
    v = get_json(http, "/jsz");
    cr_assert(json_is_true(json_object_get(v, "disabled")));
    json_decref(v);
    v = get_json(http, "/healthz");
    cr_assert_str_eq(sat(v, "status"), "ok");
    json_decref(v);
    nd_integ_server_stop(srv);
}

/* ---- /jsz ---- */

Test(integ_jsmon, jsz_totals)
{
    env_t e;
    up(&e);
    fill_streams(&e);
    json_t *v = get_json(e.http, "/varz");
    json_t *o = get_json(e.http, "/jsz");
    cr_assert_str_eq(sat(o, "server_id"), sat(v, "server_id"));
    cr_assert(json_is_string(json_object_get(o, "now")));
    cr_assert_str_eq(sat(o, "config.store_dir"), sat(v, "jetstream.config.store_dir"));
    cr_assert_eq(iat(o, "streams"), 2);
    cr_assert_eq(iat(o, "consumers"), 0);
    cr_assert_eq(iat(o, "messages"), 4);
    cr_assert_eq(iat(o, "memory"), 20);
    cr_assert_eq(iat(o, "bytes"), iat(o, "memory") + iat(o, "storage"));
    cr_assert_eq(iat(o, "accounts"), 1);
    cr_assert_eq(iat(o, "ha_assets"), 0);
    cr_assert_eq(iat(o, "reserved_memory"), 0);
    cr_assert_eq(iat(o, "api.total"), 2);
    cr_assert_eq(iat(o, "api.errors"), 0);
    cr_assert_null(json_object_get(o, "account_details"));
    cr_assert_null(json_object_get(o, "disabled"));
    if (!nd_integ_is_reference())
        cr_assert_eq(iat(o, "total"), 1);
    json_decref(o);
    json_decref(v);
    down(&e);
}

Test(integ_jsmon, jsz_accounts_streams_config)
{
    env_t e;
    up(&e);
    fill_streams(&e);

    /* accounts: the account's figures, no streams. */
    json_t *o = get_json(e.http, "/jsz?accounts=true");
    cr_assert_eq(json_array_size(json_object_get(o, "account_details")), 1);
    cr_assert_str_eq(sat(o, "account_details[0].name"), "$G");
    cr_assert_str_eq(sat(o, "account_details[0].id"), "$G");
    cr_assert_eq(iat(o, "account_details[0].memory"), 20);
    cr_assert_eq(iat(o, "account_details[0].storage"), iat(o, "storage"));
    /* No limits: Go's uint64 of -1. */
    cr_assert_eq(iat(o, "account_details[0].reserved_memory"), -1);
    cr_assert_eq(iat(o, "account_details[0].reserved_storage"), -1);
    cr_assert_eq(iat(o, "account_details[0].api.total"), 2);
    cr_assert_null(at(o, "account_details[0].stream_detail"));
    json_decref(o);

    /* streams (implies accounts): every stream, without its config. */
    o = get_json(e.http, "/jsz?streams=true");
    cr_assert_eq(json_array_size(at(o, "account_details[0].stream_detail")), 2);
    json_t *s1 = detail_of(o, "S1"), *m1 = detail_of(o, "M1");
    cr_assert(s1 != NULL && m1 != NULL);
    cr_assert(json_is_string(json_object_get(s1, "created")));
    cr_assert(json_is_string(at(s1, "cluster.leader")));
    cr_assert_null(json_object_get(s1, "config"));
    cr_assert_eq(iat(s1, "state.messages"), 3);
    cr_assert_eq(iat(s1, "state.first_seq"), 1);
    cr_assert_eq(iat(s1, "state.last_seq"), 3);
    cr_assert_eq(iat(s1, "state.num_subjects"), 2);
    cr_assert_eq(iat(s1, "state.consumer_count"), 0);
    cr_assert_eq(iat(m1, "state.messages"), 1);
    cr_assert_eq(iat(m1, "state.bytes"), 20);
    json_decref(o);

    /* config: the stream's configuration too. */
    o = get_json(e.http, "/jsz?streams=true&config=true");
    s1 = detail_of(o, "S1");
    cr_assert_str_eq(sat(s1, "config.name"), "S1");
    cr_assert_str_eq(sat(s1, "config.storage"), "file");
    cr_assert_str_eq(sat(s1, "config.subjects[0]"), "s1.>");
    cr_assert_str_eq(sat(detail_of(o, "M1"), "config.storage"), "memory");
    json_decref(o);

    /* consumers implies streams (and there are none yet). */
    o = get_json(e.http, "/jsz?consumers=true");
    cr_assert_eq(json_array_size(at(o, "account_details[0].stream_detail")), 2);
    cr_assert_null(json_object_get(detail_of(o, "S1"), "consumer_detail"));
    json_decref(o);

    /* acc: that account's details; an unknown one gives none. */
    o = get_json(e.http, "/jsz?acc=%24G&streams=1");
    cr_assert_eq(json_array_size(json_object_get(o, "account_details")), 1);
    cr_assert_eq(json_array_size(at(o, "account_details[0].stream_detail")), 2);
    json_decref(o);
    o = get_json(e.http, "/jsz?acc=%24G");
    cr_assert_eq(json_array_size(json_object_get(o, "account_details")), 1);
    cr_assert_null(at(o, "account_details[0].stream_detail"));
    json_decref(o);
    o = get_json(e.http, "/jsz?acc=nope&streams=1");
    /* 2.9.10 lists every account here; 2.11 implies accounts from streams only without acc. */
    if (!nd_integ_is_reference())
        cr_assert_null(json_object_get(o, "account_details"));
    cr_assert_eq(iat(o, "streams"), 2);
    json_decref(o);

    /* offset and limit page the accounts. */
    o = get_json(e.http, "/jsz?accounts=1&offset=1");
    cr_assert_null(json_object_get(o, "account_details"));
    json_decref(o);
    o = get_json(e.http, "/jsz?accounts=1&limit=1&offset=0");
    cr_assert_eq(json_array_size(json_object_get(o, "account_details")), 1);
    json_decref(o);

    /* leader-only: a server on its own is the leader. */
    o = get_json(e.http, "/jsz?leader-only=true");
    cr_assert_eq(iat(o, "streams"), 2);
    json_decref(o);
    o = get_json(e.http, "/jsz?raft=true&stream-leader-only=true&streams=true");
    cr_assert_eq(json_array_size(at(o, "account_details[0].stream_detail")), 2);
    json_decref(o);

    /* Bad values: 400 with Go's texts. */
    static const char *const bad[] = {"/jsz?accounts=x", "/jsz?config=2", "/jsz?offset=y",
                                      "/jsz?limit=1.5", "/jsz?leader-only=maybe"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hresp_t r = http_get(e.http, bad[i]);
        cr_assert_eq(r.status, 400, "%s: %d %s", bad[i], r.status, r.body);
        hresp_free(&r);
    }
    down(&e);
}

/* ---- /healthz ---- */

Test(integ_jsmon, healthz_jetstream)
{
    env_t e;
    up(&e);
    fill_streams(&e);
    static const char *const ok[] = {
        "/healthz",
        "/healthz?js-enabled-only=true",
        "/healthz?js-server-only=true",
        "/healthz?js-enabled=true",
        "/healthz?account=%24G&stream=S1",
        "/healthz?account=%24G",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        json_t *o = get_json(e.http, ok[i]);
        cr_assert_str_eq(sat(o, "status"), "ok", "%s", ok[i]);
        json_decref(o);
    }
    if (nd_integ_is_reference()) {
        /* 2.9.10 does not check accounts, streams or consumers. */
        down(&e);
        return;
    }
    /* Still 400 for a stream without its account, as without JetStream. */
    hresp_t r = http_get(e.http, "/healthz?stream=S1");
    cr_assert_eq(r.status, 400, "%s", r.body);
    hresp_free(&r);
    json_t *o = get_json_status(e.http, "/healthz?account=%24G&stream=XX", 404);
    cr_assert_str_eq(sat(o, "status"), "unavailable");
    cr_assert_str_eq(sat(o, "error"), "JetStream stream \"XX\" not found on account \"$G\"");
    json_decref(o);
    o = get_json_status(e.http, "/healthz?account=XX", 404);
    cr_assert_str_eq(sat(o, "error"), "JetStream account \"XX\" not found");
    json_decref(o);
    o = get_json_status(e.http, "/healthz?account=XX&details=true", 404);
    cr_assert_str_eq(sat(o, "status"), "error");
    cr_assert_str_eq(sat(o, "errors[0].type"), "ACCOUNT");
    cr_assert_str_eq(sat(o, "errors[0].account"), "XX");
    json_decref(o);
    o = get_json_status(e.http, "/healthz?account=%24G&stream=S1&consumer=C", 404);
    cr_assert_str_eq(sat(o, "error"),
                     "JetStream consumer \"C\" not found for stream \"S1\" on account \"$G\"");
    json_decref(o);
    /* js-server-only skips JetStream's checks entirely. */
    o = get_json(e.http, "/healthz?js-server-only=true&account=XX");
    cr_assert_str_eq(sat(o, "status"), "ok");
    json_decref(o);
    down(&e);
}

/* A stream whose directory is there but that could not come back is unhealthy (natsd: its
 * metadata file is meta.nd; nats-server 2.9.10 does not check streams). */
Test(integ_jsmon, healthz_stream_not_recovered)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server 2.9.10 does not check streams in /healthz");
    env_t e;
    up(&e);
    fill_streams(&e);
    nd_integ_conn_close(e.c);
    nd_integ_server_stop(e.srv);
    char meta[512];
    snprintf(meta, sizeof meta, "%s/jetstream/$G/streams/S1/meta.nd", e.store);
    cr_assert(access(meta, F_OK) == 0, "no %s", meta);
    nd_integ_write_file(meta, "not a stream configuration");
    start(&e, NULL);
    json_t *o = get_json_status(e.http, "/healthz", 503);
    cr_assert_str_eq(sat(o, "status"), "unavailable");
    cr_assert_str_eq(sat(o, "error"), "JetStream stream '$G > S1' could not be recovered");
    json_decref(o);
    o = get_json_status(e.http, "/healthz?details=true", 503);
    cr_assert_str_eq(sat(o, "status"), "error");
    cr_assert_str_eq(sat(o, "errors[0].type"), "STREAM");
    cr_assert_str_eq(sat(o, "errors[0].stream"), "S1");
    json_decref(o);
    /* The enabled-only probe does not look at streams. */
    o = get_json(e.http, "/healthz?js-enabled-only=true");
    json_decref(o);
    down(&e);
}

/* ---- /metrics (natsd only) ---- */

Test(integ_jsmon, metrics_jetstream)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server has no /metrics");
    env_t e;
    up(&e);
    fill_streams(&e);
    hresp_t r = http_get(e.http, "/metrics");
    cr_assert_eq(r.status, 200);
    static const char *const lines[] = {
        "\nnatsd_jetstream_enabled 1\n",
        "\nnatsd_jetstream_streams 2\n",
        "\nnatsd_jetstream_consumers 0\n",
        "\nnatsd_jetstream_messages 4\n",
        "\nnatsd_jetstream_memory_bytes 20\n",
        "\nnatsd_jetstream_accounts 1\n",
        "\nnatsd_jetstream_api_requests_total 2\n",
        "\nnatsd_jetstream_api_errors_total 0\n",
        "\n# TYPE natsd_jetstream_api_requests_total counter\n",
        "\nnatsd_jetstream_account_streams{account=\"$G\"} 2\n",
        "\nnatsd_jetstream_stream_messages{account=\"$G\",stream=\"S1\",storage=\"file\"} 3\n",
        "\nnatsd_jetstream_stream_bytes{account=\"$G\",stream=\"M1\",storage=\"memory\"} 20\n",
        "\nnatsd_jetstream_stream_last_seq{account=\"$G\",stream=\"S1\",storage=\"file\"} 3\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(strstr(r.body, lines[i]) != NULL, "missing %s in:\n%s", lines[i], r.body);
    cr_assert(strstr(r.body, "\nnatsd_jetstream_max_memory_bytes 0\n") == NULL);
    hresp_free(&r);
    down(&e);
}

/* ---- key sets against the reference ---- */

/* Collects "prefix.key" paths of o (arrays: the union over their elements, as "key[]"). */
static void
collect(json_t *o, const char *prefix, json_t *set)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *x;
        char p[512];
        snprintf(p, sizeof p, "%s[]", prefix);
        json_array_foreach(o, i, x) collect(x, p, set);
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
        collect(v, p, set);
    }
}

static json_t *
key_sets(const char *binary, json_t **values)
{
    env_t e;
    up_with(&e, binary);
    fill_streams(&e);
    static const struct {
        const char *name, *path;
    } eps[] = {
        {"varz.jetstream", "/varz"},
        {"jsz", "/jsz"},
        {"jsz_full", "/jsz?accounts=true&streams=true&consumers=true&config=true"},
        {"healthz", "/healthz"},
        {"healthz_js", "/healthz?js-enabled-only=true"},
    };
    json_t *set = json_object();
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        json_t *o = get_json(e.http, eps[i].path);
        if (i == 0) {
            collect(json_object_get(o, "jetstream"), eps[i].name, set);
        } else {
            collect(o, eps[i].name, set);
        }
        if (i == 2)
            *values = json_incref(o);
        json_decref(o);
    }
    down(&e);
    return set;
}

Test(integ_jsmon, keys_match_reference)
{
    const char *ref = nd_integ_reference_path();
    if (ref == NULL)
        cr_skip_test("no reference nats-server");
    json_t *tv = NULL, *ov = NULL;
    json_t *theirs = key_sets(ref, &tv);
    json_t *ours = key_sets(NULL, &ov);
    const char *k;
    json_t *v;
    json_object_foreach(theirs, k, v)
    {
        cr_assert(json_object_get(ours, k) != NULL, "natsd lacks %s", k);
    }
    /* The figures both servers agree on for the same streams and messages. */
    static const char *const same[] = {
        "streams",
        "consumers",
        "messages",
        "memory",
        "accounts",
        "ha_assets",
        "reserved_memory",
        "reserved_storage",
        "api.total",
        "api.errors",
        "account_details[0].name",
        "account_details[0].reserved_memory",
        "account_details[0].reserved_storage",
        "account_details[0].memory",
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        cr_assert(json_equal(at(tv, same[i]), at(ov, same[i])), "%s differs", same[i]);
    json_decref(tv);
    json_decref(ov);
    json_decref(theirs);
    json_decref(ours);
}
