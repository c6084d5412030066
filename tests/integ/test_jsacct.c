/* Integration tests of JetStream's per-account limits over the raw protocol (issue 13, item 1):
 * accounts {} with jetstream limits (max_mem, max_file, max_streams, max_consumers,
 * max_bytes_required, per-stream byte maximums), the server's max_memory_store/max_file_store,
 * and in operator mode an account JWT's jetstream limits (flat and tiered).
 *
 * What is checked: stream creates and updates refused with nats-server's error (10026, 10027,
 * 10028, 10047, 10113, 10122), byte for byte; the publish that would take the account over its
 * memory limit refused with 10002 (memory streams count subject + payload + 16 bytes per
 * message in both servers); $JS.API.INFO's limits and usage.
 *
 * The static-account cases also run against the reference nats-server 2.9.10
 * (integ.jsacct.reference). 2.9.10 does not write account info's reserved_memory/reserved_storage
 * (2.10 added them): those values are checked on natsd only. The operator-mode cases run on natsd
 * only (tiered limits and the 2.11 account info shape).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "auth/jwt.h"
#include "util/nkey.h"

TestSuite(integ_jsacct, .fini = nd_integ_cleanup, .timeout = 240);

#define REPLY "_R.1"

/* ---- connections and requests ---------------------------------------------------------------- */

static nd_integ_conn_t *
connect_as(nd_integ_server_t *srv, const char *user)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char line[256];
    snprintf(line, sizeof line,
             "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,"
             "\"user\":\"%s\",\"pass\":\"%s\"}\r\nSUB " REPLY " 1\r\nPING\r\n",
             user, user);
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Publishes body on subj with reply REPLY and returns the reply's payload (malloc'd). */
static char *
request_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    char *buf = NULL;
    int n = asprintf(&buf, "PUB %s " REPLY " %zu\r\n%s\r\n", subj, strlen(body), body);
    cr_assert(n > 0);
    nd_integ_send_at(file, line, c, buf, (size_t)n);
    free(buf);
    char *f = nd_integ_read_frame_at(file, line, c);
    cr_assert_not_null(f, "%s:%d: no reply to %s", file, line, subj);
    char *eol = strstr(f, "\r\n");
    cr_assert(eol != NULL && strncmp(f, "MSG " REPLY " ", 4 + strlen(REPLY) + 1) == 0,
              "%s:%d: expected a MSG on " REPLY ", got %s", file, line, f);
    const char *sp = eol;
    while (sp > f && sp[-1] != ' ')
        sp--;
    size_t len = strtoul(sp, NULL, 10);
    char *out = strndup(eol + 2, len);
    free(f);
    return out;
}
#define request(c, subj, body) request_at(__FILE__, __LINE__, (c), (subj), (body))

/* The request's reply must be exactly want. */
static void
exact_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
         const char *want)
{
    char *got = request_at(file, line, c, subj, body);
    cr_assert_str_eq(got, want, "%s:%d: %s\n  expected: %s\n  actual:   %s", file, line, subj,
                     want, got);
    free(got);
}
#define EXACT(c, subj, body, want) exact_at(__FILE__, __LINE__, (c), (subj), (body), (want))

/* The request's reply as JSON (an object). */
static json_t *
api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    char *got = request_at(file, line, c, subj, body);
    json_t *j = json_loads(got, 0, NULL);
    cr_assert(json_is_object(j), "%s:%d: not JSON: %s", file, line, got);
    free(got);
    return j;
}
#define API(c, subj, body) api_at(__FILE__, __LINE__, (c), (subj), (body))

/* A create that must succeed. */
static void
create_ok_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *cfg)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = api_at(file, line, c, subj, cfg);
    cr_assert(json_object_get(j, "error") == NULL && json_is_true(json_object_get(j, "did_create")),
              "%s:%d: create %s: %s", file, line, name, json_dumps(j, JSON_COMPACT));
    json_decref(j);
}
#define CREATE_OK(c, name, cfg) create_ok_at(__FILE__, __LINE__, (c), (name), (cfg))

static json_int_t
jint(json_t *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *v = o;
    for (char *save = NULL, *t = strtok_r(buf, ".", &save); t != NULL; t = strtok_r(NULL, ".", &save))
        v = json_object_get(v, t);
    cr_assert(json_is_integer(v), "%s: not an integer in %s", path, json_dumps(o, JSON_COMPACT));
    return json_integer_value(v);
}

#define ERR(what, code, err_code, desc)                                                            \
    "{\"type\":\"io.nats.jetstream.api.v1." what "\",\"error\":{\"code\":" #code                   \
    ",\"err_code\":" #err_code ",\"description\":\"" desc "\"}}"

#define E10026 ERR("stream_create_response", 400, 10026, "maximum consumers limit reached")
#define E10027 ERR("stream_create_response", 400, 10027, "maximum number of streams reached")
#define E10028 ERR("stream_create_response", 500, 10028, "insufficient memory resources available")
#define E10047 ERR("stream_create_response", 500, 10047, "insufficient storage resources available")
#define E10113                                                                                     \
    ERR("stream_create_response", 400, 10113, "account requires a stream config to have max bytes set")
#define E10122                                                                                     \
    ERR("stream_create_response", 400, 10122,                                                      \
        "stream max bytes exceeds account limit max stream bytes")

/* ---- servers ----------------------------------------------------------------------------------- */

static const char *ACCOUNTS =
    "accounts {\n"
    "  A { jetstream: { max_mem: 2000, max_file: 5000, max_streams: 3, max_consumers: 5 },\n"
    "      users: [{user: a, password: a}] }\n"
    "  B { jetstream: { max_bytes_required: true, mem_max_stream_bytes: 1000,\n"
    "                   disk_max_stream_bytes: 2000 }, users: [{user: b, password: b}] }\n"
    "  C { jetstream: enabled, users: [{user: c, password: c}] }\n"
    "  D { users: [{user: d, password: d}] }\n"
    "}\n";

static nd_integ_server_t *
up(nd_integ_conf_t *conf)
{
    memset(conf, 0, sizeof *conf);
    char store[256];
    nd_integ_conf_file(conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text,
                       "jetstream { store_dir: \"%s\", max_memory_store: 10MB, "
                       "max_file_store: 20MB }\n%s",
                       store, ACCOUNTS) > 0);
    nd_integ_server_t *srv = nd_integ_conf_start(conf, text);
    free(text);
    return srv;
}

/* ---- static accounts --------------------------------------------------------------------------- */

Test(integ_jsacct, account_info_limits)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    nd_integ_conn_t *a = connect_as(srv, "a");
    json_t *j = API(a, "$JS.API.INFO", "");
    json_t *want = json_loads("{\"max_memory\":2000,\"max_storage\":5000,\"max_streams\":3,"
                              "\"max_consumers\":5,\"max_ack_pending\":-1,"
                              "\"memory_max_stream_bytes\":-1,\"storage_max_stream_bytes\":-1,"
                              "\"max_bytes_required\":false}",
                              0, NULL);
    cr_assert(json_equal(json_object_get(j, "limits"), want), "%s", json_dumps(j, JSON_COMPACT));
    json_decref(want);
    json_decref(j);
    nd_integ_conn_t *b = connect_as(srv, "b");
    j = API(b, "$JS.API.INFO", "");
    cr_assert_eq(jint(j, "limits.memory_max_stream_bytes"), 1000);
    cr_assert_eq(jint(j, "limits.storage_max_stream_bytes"), 2000);
    cr_assert(json_is_true(json_object_get(json_object_get(j, "limits"), "max_bytes_required")));
    json_decref(j);
    /* an account without jetstream in an accounts {} block */
    nd_integ_conn_t *d = connect_as(srv, "d");
    EXACT(d, "$JS.API.INFO", "",
          ERR("account_info_response", 503, 10039, "JetStream not enabled for account"));
    nd_integ_conn_close(a);
    nd_integ_conn_close(b);
    nd_integ_conn_close(d);
    nd_integ_conf_stop(srv, &conf);
}

Test(integ_jsacct, stream_limits_and_reservations)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    nd_integ_conn_t *a = connect_as(srv, "a");
    CREATE_OK(a, "M1", "{\"name\":\"M1\",\"subjects\":[\"m1\"],\"storage\":\"memory\",\"max_bytes\":1500}");
    if (!nd_integ_is_reference()) { /* 2.10+: reserved_memory */
        json_t *j = API(a, "$JS.API.INFO", "");
        cr_assert_eq(jint(j, "reserved_memory"), 1500);
        cr_assert_eq(jint(j, "reserved_storage"), 0);
        cr_assert_eq(jint(j, "streams"), 1);
        json_decref(j);
    }
    /* 1500 reserved + 600 > max_mem 2000 */
    EXACT(a, "$JS.API.STREAM.CREATE.M2",
          "{\"name\":\"M2\",\"subjects\":[\"m2\"],\"storage\":\"memory\",\"max_bytes\":600}", E10028);
    /* a stream without max_bytes reserves nothing */
    CREATE_OK(a, "M3", "{\"name\":\"M3\",\"subjects\":[\"m3\"],\"storage\":\"memory\"}");
    EXACT(a, "$JS.API.STREAM.CREATE.M4",
          "{\"name\":\"M4\",\"subjects\":[\"m4\"],\"storage\":\"memory\",\"max_consumers\":9}",
          E10026);
    EXACT(a, "$JS.API.STREAM.CREATE.F1", "{\"name\":\"F1\",\"subjects\":[\"f1\"],\"max_bytes\":6000}",
          E10047);
    EXACT(a, "$JS.API.STREAM.UPDATE.M1",
          "{\"name\":\"M1\",\"subjects\":[\"m1\"],\"storage\":\"memory\",\"max_bytes\":2001}",
          ERR("stream_update_response", 500, 10028, "insufficient memory resources available"));
    json_t *j;
    if (!nd_integ_is_reference()) {
        /* 2.11: an update reserves only the growth of max_bytes (2.9.10 counted the stream's old
         * max_bytes twice and refused both) */
        j = API(a, "$JS.API.STREAM.UPDATE.M1",
                "{\"name\":\"M1\",\"subjects\":[\"m1\"],\"storage\":\"memory\",\"max_bytes\":2000}");
        cr_assert_null(json_object_get(j, "error"), "%s", json_dumps(j, JSON_COMPACT));
        json_decref(j);
        j = API(a, "$JS.API.STREAM.UPDATE.M1",
                "{\"name\":\"M1\",\"subjects\":[\"m1\"],\"storage\":\"memory\",\"max_bytes\":1000}");
        cr_assert_null(json_object_get(j, "error"), "%s", json_dumps(j, JSON_COMPACT));
        json_decref(j);
    }
    CREATE_OK(a, "F2", "{\"name\":\"F2\",\"subjects\":[\"f2\"]}");
    /* three streams: the fourth is refused, a repeated create of one of them is not */
    EXACT(a, "$JS.API.STREAM.CREATE.F3", "{\"name\":\"F3\",\"subjects\":[\"f3\"]}", E10027);
    if (nd_integ_is_reference()) {
        /* 2.9.10 counted the stream itself */
        EXACT(a, "$JS.API.STREAM.CREATE.F2", "{\"name\":\"F2\",\"subjects\":[\"f2\"]}", E10027);
    } else {
        j = API(a, "$JS.API.STREAM.CREATE.F2", "{\"name\":\"F2\",\"subjects\":[\"f2\"]}");
        cr_assert_null(json_object_get(j, "error"), "%s", json_dumps(j, JSON_COMPACT));
        json_decref(j);
    }
    /* a delete frees a slot and its reservation */
    EXACT(a, "$JS.API.STREAM.DELETE.M1", "",
          "{\"type\":\"io.nats.jetstream.api.v1.stream_delete_response\",\"success\":true}");
    CREATE_OK(a, "M5", "{\"name\":\"M5\",\"subjects\":[\"m5\"],\"storage\":\"memory\",\"max_bytes\":2000}");
    if (!nd_integ_is_reference()) {
        j = API(a, "$JS.API.INFO", "");
        cr_assert_eq(jint(j, "reserved_memory"), 2000);
        cr_assert_eq(jint(j, "streams"), 3);
        json_decref(j);
    }
    nd_integ_conn_close(a);
    nd_integ_conf_stop(srv, &conf);
}

Test(integ_jsacct, publish_over_account_memory)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    nd_integ_conn_t *a = connect_as(srv, "a");
    CREATE_OK(a, "M3", "{\"name\":\"M3\",\"subjects\":[\"m3\"],\"storage\":\"memory\"}");
    char body[101];
    memset(body, 'x', 100);
    body[100] = '\0';
    /* 2 + 100 + 16 = 118 bytes a message: 16 fit in 2000, the 17th does not */
    for (int i = 1; i <= 16; i++) {
        char want[64];
        snprintf(want, sizeof want, "{\"stream\":\"M3\", \"seq\":%d}", i);
        EXACT(a, "m3", body, want);
    }
    EXACT(a, "m3", body,
          "{\"error\":{\"code\":400,\"err_code\":10002,\"description\":\"resource limits exceeded "
          "for account\"},\"stream\":\"M3\",\"seq\":0}");
    json_t *j = API(a, "$JS.API.INFO", "");
    cr_assert_eq(jint(j, "memory"), 16 * 118);
    json_decref(j);
    /* a purge gives the room back */
    j = API(a, "$JS.API.STREAM.PURGE.M3", "");
    cr_assert(json_is_true(json_object_get(j, "success")), "%s", json_dumps(j, JSON_COMPACT));
    json_decref(j);
    /* 2.11 checks before storing, so the refused message took no sequence; 2.9.10 stored and
     * removed it (seq 17 is a gap there) */
    EXACT(a, "m3", body,
          nd_integ_is_reference() ? "{\"stream\":\"M3\", \"seq\":18}"
                                  : "{\"stream\":\"M3\", \"seq\":17}");
    nd_integ_conn_close(a);
    nd_integ_conf_stop(srv, &conf);
}

Test(integ_jsacct, per_stream_byte_limits)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    nd_integ_conn_t *b = connect_as(srv, "b");
    EXACT(b, "$JS.API.STREAM.CREATE.X", "{\"name\":\"X\",\"subjects\":[\"x\"]}", E10113);
    EXACT(b, "$JS.API.STREAM.CREATE.X", "{\"name\":\"X\",\"subjects\":[\"x\"],\"max_bytes\":3000}",
          E10122);
    EXACT(b, "$JS.API.STREAM.CREATE.X",
          "{\"name\":\"X\",\"subjects\":[\"x\"],\"storage\":\"memory\",\"max_bytes\":1001}", E10122);
    CREATE_OK(b, "X", "{\"name\":\"X\",\"subjects\":[\"x\"],\"storage\":\"memory\",\"max_bytes\":1000}");
    CREATE_OK(b, "Y", "{\"name\":\"Y\",\"subjects\":[\"y\"],\"max_bytes\":2000}");
    EXACT(b, "$JS.API.STREAM.UPDATE.Y", "{\"name\":\"Y\",\"subjects\":[\"y\"],\"max_bytes\":2001}",
          ERR("stream_update_response", 400, 10122,
              "stream max bytes exceeds account limit max stream bytes"));
    nd_integ_conn_close(b);
    nd_integ_conf_stop(srv, &conf);
}

Test(integ_jsacct, server_limits)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    nd_integ_conn_t *c = connect_as(srv, "c");
    /* max_memory_store 10MB, max_file_store 20MB */
    EXACT(c, "$JS.API.STREAM.CREATE.Y",
          "{\"name\":\"Y\",\"subjects\":[\"y\"],\"storage\":\"memory\",\"max_bytes\":20000000}", E10028);
    EXACT(c, "$JS.API.STREAM.CREATE.Y", "{\"name\":\"Y\",\"subjects\":[\"y\"],\"max_bytes\":30000000}",
          E10047);
    /* reservations of all accounts count against the server */
    CREATE_OK(c, "Y", "{\"name\":\"Y\",\"subjects\":[\"y\"],\"storage\":\"memory\",\"max_bytes\":9000000}");
    EXACT(c, "$JS.API.STREAM.CREATE.Z",
          "{\"name\":\"Z\",\"subjects\":[\"z\"],\"storage\":\"memory\",\"max_bytes\":2000000}", E10028);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &conf);
}

/* A reload that adds accounts: the one with jetstream gets it (with its limits), the other the
 * 10039 answer, as nats-server's reload does. */
Test(integ_jsacct, reload_adds_accounts)
{
    nd_integ_conf_t conf;
    nd_integ_server_t *srv = up(&conf);
    char store[256];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text,
                       "jetstream { store_dir: \"%s\", max_memory_store: 10MB, "
                       "max_file_store: 20MB }\n%s"
                       "accounts { E { jetstream: { max_streams: 1 }, users: [{user: e, password: e}] }\n"
                       "F { users: [{user: f, password: f}] } }\n",
                       store, ACCOUNTS) > 0);
    nd_integ_conf_write(&conf, text);
    free(text);
    nd_integ_server_reload(srv, true);
    nd_integ_conn_t *e = connect_as(srv, "e");
    json_t *j = API(e, "$JS.API.INFO", "");
    cr_assert_eq(jint(j, "limits.max_streams"), 1, "%s", json_dumps(j, JSON_COMPACT));
    json_decref(j);
    CREATE_OK(e, "E1", "{\"name\":\"E1\",\"subjects\":[\"e1\"]}");
    EXACT(e, "$JS.API.STREAM.CREATE.E2", "{\"name\":\"E2\",\"subjects\":[\"e2\"]}", E10027);
    nd_integ_conn_t *f = connect_as(srv, "f");
    EXACT(f, "$JS.API.INFO", "",
          ERR("account_info_response", 503, 10039, "JetStream not enabled for account"));
    nd_integ_conn_close(e);
    nd_integ_conn_close(f);
    nd_integ_conf_stop(srv, &conf);
}

/* ---- operator mode (natsd only) ---------------------------------------------------------------- */

typedef struct key {
    char seed[ND_NKEY_SEED_LEN + 1];
    char pub[ND_NKEY_PUBLIC_LEN + 1];
} tkey_t;

static tkey_t
key_new(uint8_t role)
{
    tkey_t k;
    uint8_t raw[32], pub[32];
    cr_assert(nd_nkey_random(raw, sizeof raw));
    cr_assert(nd_nkey_seed_public(raw, pub));
    nd_nkey_encode_seed(role, raw, k.seed);
    nd_nkey_encode_public(role, pub, k.pub);
    return k;
}

static char *
sign(json_t *claims, const char *seed)
{
    char *tok = NULL;
    cr_assert_eq(nd_jwt_encode(claims, seed, strlen(seed), 0, &tok), ND_OK);
    json_decref(claims);
    char *out = strdup(tok);
    free(tok);
    return out;
}

typedef struct opw {
    tkey_t op, acc, user;
    nd_integ_conf_t cf;
    nd_integ_server_t *srv;
} opw_t;

/* Starts a server in operator mode with one preloaded account whose "limits" are `limits`
 * (JSON) and JetStream on. */
static void
op_start(opw_t *w, const char *limits)
{
    memset(w, 0, sizeof *w);
    w->op = key_new(ND_NKEY_PREFIX_OPERATOR);
    w->acc = key_new(ND_NKEY_PREFIX_ACCOUNT);
    w->user = key_new(ND_NKEY_PREFIX_USER);
    char *opj = sign(json_pack("{s:s, s:s, s:{s:s, s:i}}", "sub", w->op.pub, "name", "O", "nats",
                               "type", "operator", "version", 2),
                     w->op.seed);
    json_t *lim = json_loads(limits, 0, NULL);
    cr_assert_not_null(lim, "%s", limits);
    char *accj = sign(json_pack("{s:s, s:s, s:{s:s, s:i, s:o}}", "sub", w->acc.pub, "name", "A",
                                "nats", "type", "account", "version", 2, "limits", lim),
                      w->op.seed);
    char opath[128], store[256];
    nd_integ_conf_file(&w->cf, "op.jwt", opath, sizeof opath);
    nd_integ_write_file(opath, opj);
    nd_integ_conf_file(&w->cf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text,
                       "operator: \"%s\"\nresolver: MEMORY\nresolver_preload: {\n  %s: \"%s\"\n}\n"
                       "jetstream { store_dir: \"%s\" }\n",
                       opath, w->acc.pub, accj, store) > 0);
    w->srv = nd_integ_conf_start(&w->cf, text);
    free(text);
    free(opj);
    free(accj);
}

static nd_integ_conn_t *
op_login(opw_t *w)
{
    char *jwt = sign(json_pack("{s:s, s:s, s:{s:s, s:i, s:I, s:I, s:I}}", "sub", w->user.pub,
                               "name", "u", "nats", "type", "user", "version", 2, "subs",
                               (json_int_t)-1, "data", (json_int_t)-1, "payload", (json_int_t)-1),
                     w->acc.seed);
    nd_integ_conn_t *c = nd_integ_conn_open(w->srv);
    const char *info = nd_integ_conn_info(c);
    const char *p = strstr(info, "\"nonce\":\"");
    cr_assert_not_null(p, "INFO without a nonce: %s", info);
    p += 9;
    const char *e = strchr(p, '"');
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(w->user.seed, strlen(w->user.seed), p, (size_t)(e - p), &sig));
    char *line = NULL;
    cr_assert(asprintf(&line,
                       "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                       "\"jwt\":\"%s\",\"sig\":\"%s\"}\r\nSUB " REPLY " 1\r\nPING\r\n",
                       jwt, sig) > 0);
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    free(line);
    free(sig);
    free(jwt);
    return c;
}

Test(integ_jsacct, operator_account_limits)
{
    if (nd_integ_is_reference())
        return; /* natsd only (see the top) */
    opw_t w;
    op_start(&w, "{\"mem_storage\":2000,\"disk_storage\":-1,\"streams\":2,\"consumer\":-1,"
                 "\"max_bytes_required\":true,\"mem_max_stream_bytes\":1500}");
    nd_integ_conn_t *c = op_login(&w);
    json_t *j = API(c, "$JS.API.INFO", "");
    json_t *want = json_loads("{\"max_memory\":2000,\"max_storage\":-1,\"max_streams\":2,"
                              "\"max_consumers\":-1,\"max_ack_pending\":-1,"
                              "\"memory_max_stream_bytes\":1500,\"storage_max_stream_bytes\":-1,"
                              "\"max_bytes_required\":true}",
                              0, NULL);
    cr_assert(json_equal(json_object_get(j, "limits"), want), "%s", json_dumps(j, JSON_COMPACT));
    json_decref(want);
    json_decref(j);
    EXACT(c, "$JS.API.STREAM.CREATE.S1", "{\"name\":\"S1\",\"subjects\":[\"s1\"],\"storage\":\"memory\"}",
          E10113);
    EXACT(c, "$JS.API.STREAM.CREATE.S1",
          "{\"name\":\"S1\",\"subjects\":[\"s1\"],\"storage\":\"memory\",\"max_bytes\":1600}", E10122);
    CREATE_OK(c, "S1", "{\"name\":\"S1\",\"subjects\":[\"s1\"],\"storage\":\"memory\",\"max_bytes\":1000}");
    EXACT(c, "$JS.API.STREAM.CREATE.S2",
          "{\"name\":\"S2\",\"subjects\":[\"s2\"],\"storage\":\"memory\",\"max_bytes\":1001}", E10028);
    CREATE_OK(c, "S2", "{\"name\":\"S2\",\"subjects\":[\"s2\"],\"max_bytes\":1000000}");
    EXACT(c, "$JS.API.STREAM.CREATE.S3",
          "{\"name\":\"S3\",\"subjects\":[\"s3\"],\"max_bytes\":1000}", E10027);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(w.srv, &w.cf);
}

Test(integ_jsacct, operator_account_without_jetstream)
{
    if (nd_integ_is_reference())
        return;
    opw_t w;
    op_start(&w, "{\"subs\":-1}");
    nd_integ_conn_t *c = op_login(&w);
    EXACT(c, "$JS.API.INFO", "",
          ERR("account_info_response", 503, 10039, "JetStream not enabled for account"));
    nd_integ_conn_close(c);
    nd_integ_conf_stop(w.srv, &w.cf);
}

Test(integ_jsacct, operator_tiered_limits)
{
    if (nd_integ_is_reference())
        return;
    opw_t w;
    op_start(&w, "{\"tiered_limits\":{\"R1\":{\"mem_storage\":1000,\"disk_storage\":2000,"
                 "\"streams\":1},\"R3\":{\"mem_storage\":-1,\"disk_storage\":-1}}}");
    nd_integ_conn_t *c = op_login(&w);
    CREATE_OK(c, "T1", "{\"name\":\"T1\",\"subjects\":[\"t1\"],\"max_bytes\":500}");
    json_t *j = API(c, "$JS.API.INFO", "");
    /* tiered: the flat limits are zero, each tier carries its own, R1 the usage */
    cr_assert_eq(jint(j, "limits.max_memory"), 0);
    cr_assert_eq(jint(j, "streams"), 1);
    cr_assert_eq(jint(j, "reserved_storage"), 500);
    cr_assert_eq(jint(j, "tiers.R1.limits.max_memory"), 1000);
    cr_assert_eq(jint(j, "tiers.R1.limits.max_storage"), 2000);
    cr_assert_eq(jint(j, "tiers.R1.limits.max_streams"), 1);
    cr_assert_eq(jint(j, "tiers.R1.streams"), 1);
    cr_assert_eq(jint(j, "tiers.R1.reserved_storage"), 500);
    cr_assert_eq(jint(j, "tiers.R3.limits.max_memory"), -1);
    cr_assert_eq(jint(j, "tiers.R3.streams"), 0);
    json_decref(j);
    EXACT(c, "$JS.API.STREAM.CREATE.T2", "{\"name\":\"T2\",\"subjects\":[\"t2\"]}", E10027);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(w.srv, &w.cf);
}
