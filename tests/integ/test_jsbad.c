/* Integration tests of JetStream with bad input (issue 13, "Bad input"): malformed JSON bodies of
 * every stream API, strict mode, invalid names, overlapping subjects, updates that may not change a
 * field, a body where none is allowed, huge subject lists and metadata, 10,000 streams, a store
 * directory that cannot be used, a corrupt store at start, and malformed publishes.
 *
 * Like test_js.c this is raw protocol, and `integ.jsbad.reference` runs the same binary against
 * nats-server 2.9.10. The expectations are nats-server's. Where 2.9.10 and 2.10/2.11 differ (natsd
 * follows 2.10/2.11), the case asks nd_integ_is_reference() and says what each version answers:
 * - "invalid JSON" (10025): 2.9.10 says exactly that; 2.10+ append ": <decoder error>". On natsd
 *   the description must start with "invalid JSON: " and the rest of the response must be
 *   byte-for-byte the 2.9.10 envelope.
 * - strict mode (`jetstream { strict: true }`) does not exist in 2.9.10: those cases run on natsd
 *   only and pin the 2.11 texts (server/jetstream_api.go unmarshalRequest: a decoder with
 *   DisallowUnknownFields, so `invalid JSON: json: unknown field "x"` for every request type).
 *
 * Soft checks: the table-driven cases use cr_expect_fail (the test goes on), so one run lists every
 * difference instead of stopping at the first.
 *
 * Nothing here asserts on time; the 10,000-stream test prints how long each phase took.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jsproto.h"

TestSuite(integ_jsbad, .fini = nd_integ_cleanup, .timeout = 300);

#define REPLY "_R.1"

#define T_CREATE "io.nats.jetstream.api.v1.stream_create_response"
#define T_UPDATE "io.nats.jetstream.api.v1.stream_update_response"
#define T_INFO   "io.nats.jetstream.api.v1.stream_info_response"
#define T_NAMES  "io.nats.jetstream.api.v1.stream_names_response"
#define T_LIST   "io.nats.jetstream.api.v1.stream_list_response"
#define T_DELETE "io.nats.jetstream.api.v1.stream_delete_response"
#define T_PURGE  "io.nats.jetstream.api.v1.stream_purge_response"
#define T_MSGGET "io.nats.jetstream.api.v1.stream_msg_get_response"
#define T_MSGDEL "io.nats.jetstream.api.v1.stream_msg_delete_response"

/* ---- failing with the caller's line ---------------------------------------------------------- */

/* A failure that lets the test go on (the difference is recorded, the next case still runs). */
static void jsoft(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
jsoft(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    cr_expect_fail("%s:%d: %s", file, line, msg ? msg : fmt);
    free(msg);
}

/* ---- servers, connections, messages (as in test_js.c) -----------------------------------------
 */

typedef struct js_env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} js_env_t;

static nd_integ_conn_t *
js_connect(nd_integ_server_t *srv)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
               "SUB " REPLY " 1\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Writes the config `jetstream { store_dir: <conf dir>/store <extra> }` (store_dir given: that
 * one) into e->conf without starting anything. */
static void
js_conf_write(js_env_t *e, const char *store_dir, const char *js_extra)
{
    char store[256];
    if (store_dir == NULL)
        nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    else
        snprintf(store, sizeof store, "%s", store_dir);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\"%s%s }\n", store, js_extra ? ", " : "",
                       js_extra ? js_extra : "") > 0);
    nd_integ_conf_write(&e->conf, text);
    free(text);
}

static void
js_start(js_env_t *e)
{
    const char *args[] = {"-c", e->conf.path, NULL};
    e->srv = nd_integ_server_start(0, args);
    e->c = js_connect(e->srv);
}

static void
js_up_with(js_env_t *e, const char *js_extra)
{
    memset(e, 0, sizeof *e);
    js_conf_write(e, NULL, js_extra);
    js_start(e);
}

static void
js_up(js_env_t *e)
{
    js_up_with(e, NULL);
}

static void
js_down(js_env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}




/* Publishes body on subj with reply (NULL: none). raw_hdr: NULL for a PUB, else the whole header
 * block as sent (status line and final blank line included), so that malformed blocks can be
 * written. */
static void
js_pub_raw_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *reply,
              const char *raw_hdr, const char *body, size_t bl)
{
    char *head = NULL;
    int n;
    size_t hl = raw_hdr ? strlen(raw_hdr) : 0;
    if (raw_hdr == NULL)
        n = asprintf(&head, "PUB %s%s%s %zu\r\n", subj, reply ? " " : "", reply ? reply : "", bl);
    else
        n = asprintf(&head, "HPUB %s%s%s %zu %zu\r\n%s", subj, reply ? " " : "", reply ? reply : "",
                     hl, hl + bl, raw_hdr);
    cr_assert(n > 0);
    size_t total = (size_t)n + bl + 2;
    char *buf = malloc(total);
    memcpy(buf, head, (size_t)n);
    memcpy(buf + n, body, bl);
    memcpy(buf + n + bl, "\r\n", 2);
    nd_integ_send_at(file, line, c, buf, total);
    free(buf);
    free(head);
}

/* A request: publishes with reply REPLY and returns the reply. */
static js_msg_t
js_req_raw_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *raw_hdr,
              const char *body)
{
    js_pub_raw_at(file, line, c, subj, REPLY, raw_hdr, body, strlen(body));
    js_msg_t m = js_read_msg_at(file, line, c);
    if (strcmp(m.subject, REPLY) != 0)
        jfail(file, line, "reply on %s, expected %s: %s", m.subject, REPLY, m.line);
    return m;
}

/* The header block for one header line "K: V\r\n" (or several). Returns: owned. */
static char *
hdr_block(const char *lines)
{
    char *h = NULL;
    cr_assert(asprintf(&h, "NATS/1.0\r\n%s\r\n", lines) > 0);
    return h;
}

/* Sends the request and checks (softly) that the reply is a MSG with exactly `want`. */
static void
js_exact_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *raw_hdr,
            const char *body, const char *want)
{
    js_msg_t m = js_req_raw_at(file, line, c, subj, raw_hdr, body);
    if (m.hdr != NULL)
        jsoft(file, line, "%s: expected a MSG, got \"%s\" with headers \"%s\"", subj, m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    else if (strcmp(m.data, want) != 0)
        jsoft(file, line, "%s %.80s: unexpected reply\n  expected: %s\n  actual:   %.2000s", subj,
              body, want, m.data);
    js_msg_free(&m);
}
#define JS_EXACT(c, subj, body, want)                                                              \
    js_exact_at(__FILE__, __LINE__, (c), (subj), NULL, (body), (want))

/* Sends an API request and returns the reply parsed (owned). */
static json_t *
js_api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    js_msg_t m = js_req_raw_at(file, line, c, subj, NULL, body);
    if (m.hdr != NULL)
        jfail(file, line, "%s: expected a JSON reply, got \"%s\" with headers \"%s\"", subj, m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    json_error_t err;
    json_t *j = json_loadb(m.data, m.data_len, 0, &err);
    if (!json_is_object(j))
        jfail(file, line, "%s: reply is not a JSON object (%s): %.500s", subj, err.text, m.data);
    js_msg_free(&m);
    return j;
}
#define js_api(c, subj, body) js_api_at(__FILE__, __LINE__, (c), (subj), (body))

/* Sends the request and checks (softly) that the reply equals the JSON text `want` (as JSON, for
 * responses where Go escapes '>' as \u003e or key order is not the point). */
static void
js_json_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
           const char *want)
{
    json_t *got = js_api_at(file, line, c, subj, body);
    json_error_t err;
    json_t *w = json_loads(want, 0, &err);
    if (w == NULL)
        jfail(file, line, "bad template (%s): %s", err.text, want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT);
        jsoft(file, line, "%s %.80s: unexpected reply\n  expected: %s\n  actual:   %.2000s", subj,
              body, want, g);
        free(g);
    }
    json_decref(got);
    json_decref(w);
}
#define JS_JSON(c, subj, body, want) js_json_at(__FILE__, __LINE__, (c), (subj), (body), (want))



/* Creates a stream; fails unless the reply has did_create. */
static void
js_create_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *body)
{
    char subj[300];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = js_api_at(file, line, c, subj, body);
    if (json_object_get(j, "error") != NULL || !json_is_true(json_object_get(j, "did_create"))) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "create %s failed: %.1000s", name, d);
    }
    json_decref(j);
}
#define js_create(c, name, body) js_create_at(__FILE__, __LINE__, (c), (name), (body))

static long long
js_msgs_at(const char *file, int line, nd_integ_conn_t *c, const char *name)
{
    char subj[300];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
    json_t *j = js_api_at(file, line, c, subj, "");
    long long n = jint_at(file, line, j, "state.messages");
    json_decref(j);
    return n;
}
#define js_msgs(c, name) js_msgs_at(__FILE__, __LINE__, (c), (name))

/* ---- bad JSON bodies of every API ------------------------------------------------------------ */

/* One malformed request and the envelope of its error: the exact 2.9.10 bytes with `"invalid JSON"`
 * as description (natsd: "invalid JSON: <why>", same envelope otherwise). */
typedef struct bad_case {
    const char *subj;
    const char *body;
    const char *want; /* 2.9.10 bytes */
} bad_case_t;

#define INVALID_JSON(type, tail)                                                                   \
    "{\"type\":\"" type "\",\"error\":{\"code\":400,\"err_code\":10025,\"description\":\"invalid " \
    "JSON\"}" tail "}"
#define BAD_CREATE INVALID_JSON(T_CREATE, "")
#define BAD_UPDATE INVALID_JSON(T_UPDATE, "")
#define BAD_INFO   INVALID_JSON(T_INFO, ",\"total\":0,\"offset\":0,\"limit\":0")
#define BAD_NAMES  INVALID_JSON(T_NAMES, ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":null")
#define BAD_LIST   INVALID_JSON(T_LIST, ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":[]")
#define BAD_PURGE  INVALID_JSON(T_PURGE, ",\"purged\":0")
#define BAD_MSGGET INVALID_JSON(T_MSGGET, "")
#define BAD_MSGDEL INVALID_JSON(T_MSGDEL, "")

/* Checks one reply against an "invalid JSON" expectation: exact bytes on the reference; on natsd
 * the description must be "invalid JSON: <something>" and, with it replaced by "invalid JSON", the
 * response must equal the 2.9.10 one as JSON (same keys, same values). */
static void
check_invalid_json_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                      const char *body, const char *want)
{
    js_msg_t m = js_req_raw_at(file, line, c, subj, NULL, body);
    if (m.hdr != NULL) {
        jsoft(file, line, "%s %.60s: expected a MSG, got \"%s\"", subj, body, m.line);
        js_msg_free(&m);
        return;
    }
    if (nd_integ_is_reference()) {
        if (strcmp(m.data, want) != 0)
            jsoft(file, line, "%s %.60s:\n  expected: %s\n  actual:   %.1000s", subj, body, want,
                  m.data);
        js_msg_free(&m);
        return;
    }
    json_t *got = json_loadb(m.data, m.data_len, 0, NULL);
    json_t *w = json_loads(want, 0, NULL);
    cr_assert(w != NULL, "bad template %s", want);
    json_t *desc = jget(got, "error.description");
    bool ok = json_is_string(desc) && strncmp(json_string_value(desc), "invalid JSON: ", 14) == 0 &&
              strlen(json_string_value(desc)) > 14;
    if (ok) {
        json_object_set_new(json_object_get(got, "error"), "description",
                            json_string("invalid JSON"));
        ok = json_equal(got, w);
    }
    if (!ok)
        jsoft(
            file, line,
            "%s %.60s:\n  expected: %s (description \"invalid JSON: <why>\")\n  actual:   %.1000s",
            subj, body, want, m.data);
    json_decref(got);
    json_decref(w);
    js_msg_free(&m);
}
#define CHECK_INVALID_JSON(c, subj, body, want)                                                    \
    check_invalid_json_at(__FILE__, __LINE__, (c), (subj), (body), (want))

/* A body nested `depth` arrays deep inside a create request. Returns: owned. */
static char *
deep_body(size_t depth)
{
    const char *pre = "{\"name\":\"S\",\"x\":";
    size_t pl = strlen(pre), n = pl + 2 * depth + 2;
    char *b = malloc(n);
    memcpy(b, pre, pl);
    memset(b + pl, '[', depth);
    memset(b + pl + depth, ']', depth);
    b[pl + 2 * depth] = '}';
    b[pl + 2 * depth + 1] = '\0';
    return b;
}

/* Truncated bodies, bodies that are not an object, fields of the wrong type, and (for create) a
 * nesting far beyond any decoder's limit: every stream API answers 10025 with its own envelope,
 * and nothing is changed by the bad request (a purge with a bad "seq" must not purge). */
Test(integ_jsbad, bad_json_every_api)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"allow_direct\":true}");
    JS_EXACT(e.c, "s.a", "one", "{\"stream\":\"S\", \"seq\":1}");

    char *deep = deep_body(100000);
    const bad_case_t cases[] = {
        {"$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "[1,2]", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "\"S\"", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "{\"name\":5}", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":\"s.>\"}", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[1]}", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"max_msgs\":1.5}", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"storage\":\"disk\"}", BAD_CREATE},
        {"$JS.API.STREAM.CREATE.S", deep, BAD_CREATE},
        {"$JS.API.STREAM.UPDATE.S", "{\"name\":\"S\",", BAD_UPDATE},
        {"$JS.API.STREAM.UPDATE.S", "[]", BAD_UPDATE},
        {"$JS.API.STREAM.UPDATE.S", "", BAD_UPDATE},
        {"$JS.API.STREAM.UPDATE.S", "{\"name\":\"S\",\"max_msgs\":\"x\"}", BAD_UPDATE},
        {"$JS.API.STREAM.INFO.S", "{", BAD_INFO},
        {"$JS.API.STREAM.INFO.S", "[]", BAD_INFO},
        {"$JS.API.STREAM.INFO.S", "garbage", BAD_INFO},
        {"$JS.API.STREAM.INFO.S", "{\"subjects_filter\":5}", BAD_INFO},
        {"$JS.API.STREAM.INFO.S", "{\"offset\":\"x\"}", BAD_INFO},
        {"$JS.API.STREAM.NAMES", "{", BAD_NAMES},
        {"$JS.API.STREAM.NAMES", "[]", BAD_NAMES},
        {"$JS.API.STREAM.NAMES", "garbage", BAD_NAMES},
        {"$JS.API.STREAM.NAMES", "{\"offset\":\"x\"}", BAD_NAMES},
        {"$JS.API.STREAM.NAMES", "{\"subject\":5}", BAD_NAMES},
        {"$JS.API.STREAM.LIST", "{", BAD_LIST},
        {"$JS.API.STREAM.LIST", "[]", BAD_LIST},
        {"$JS.API.STREAM.LIST", "garbage", BAD_LIST},
        {"$JS.API.STREAM.LIST", "{\"offset\":\"x\"}", BAD_LIST},
        {"$JS.API.STREAM.PURGE.S", "{", BAD_PURGE},
        {"$JS.API.STREAM.PURGE.S", "[]", BAD_PURGE},
        {"$JS.API.STREAM.PURGE.S", "garbage", BAD_PURGE},
        {"$JS.API.STREAM.PURGE.S", "{\"seq\":\"x\"}", BAD_PURGE},
        {"$JS.API.STREAM.PURGE.S", "{\"filter\":5}", BAD_PURGE},
        {"$JS.API.STREAM.PURGE.S", "{\"keep\":-1}", BAD_PURGE},
        {"$JS.API.STREAM.MSG.GET.S", "{", BAD_MSGGET},
        {"$JS.API.STREAM.MSG.GET.S", "[]", BAD_MSGGET},
        {"$JS.API.STREAM.MSG.GET.S", "garbage", BAD_MSGGET},
        {"$JS.API.STREAM.MSG.GET.S", "{\"seq\":\"x\"}", BAD_MSGGET},
        {"$JS.API.STREAM.MSG.GET.S", "{\"seq\":-1}", BAD_MSGGET},
        {"$JS.API.STREAM.MSG.DELETE.S", "{", BAD_MSGDEL},
        {"$JS.API.STREAM.MSG.DELETE.S", "[]", BAD_MSGDEL},
        {"$JS.API.STREAM.MSG.DELETE.S", "garbage", BAD_MSGDEL},
        {"$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":\"x\"}", BAD_MSGDEL},
        {"$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":1,\"no_erase\":\"yes\"}", BAD_MSGDEL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_INVALID_JSON(e.c, cases[i].subj, cases[i].body, cases[i].want);
    free(deep);

    /* A message-delete request without a sequence is a bad request (10003), as an empty one. */
    static const char bad_request[] = "{\"type\":\"" T_MSGDEL "\",\"error\":{\"code\":400,"
                                      "\"err_code\":10003,\"description\":\"bad request\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "", bad_request);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{}", bad_request);

    /* Direct get answers with a status header, not JSON. */
    static const char *const malformed[] = {"{", "[]", "garbage", "{\"seq\":\"x\"}"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        js_msg_t m =
            js_req_raw_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S", NULL, malformed[i]);
        if (m.hdr == NULL || strcmp(m.hdr, "NATS/1.0 408 Malformed Request\r\n\r\n") != 0)
            jsoft(__FILE__, __LINE__, "direct get %s: expected 408 Malformed Request, got %s",
                  malformed[i], m.hdr ? nd_integ_escape(m.hdr, m.hdr_len, 200) : m.data);
        js_msg_free(&m);
    }
    static const char *const empty[] = {"", "{}"};
    for (size_t i = 0; i < 2; i++) {
        js_msg_t m = js_req_raw_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S", NULL, empty[i]);
        if (m.hdr == NULL || strcmp(m.hdr, "NATS/1.0 408 Empty Request\r\n\r\n") != 0)
            jsoft(__FILE__, __LINE__, "direct get '%s': expected 408 Empty Request, got %s",
                  empty[i], m.hdr ? nd_integ_escape(m.hdr, m.hdr_len, 200) : m.data);
        js_msg_free(&m);
    }
    /* The subject form takes no body. */
    js_msg_t m =
        js_req_raw_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S.s.a", NULL, "garbage");
    if (m.hdr == NULL || strcmp(m.hdr, "NATS/1.0 408 Bad Request\r\n\r\n") != 0)
        jsoft(__FILE__, __LINE__, "direct get by subject with a body: expected 408 Bad Request");
    js_msg_free(&m);

    /* None of it changed the stream. */
    cr_assert_eq(js_msgs(e.c, "S"), 1, "a malformed request changed the stream");
    json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 1);
    json_decref(j);
    js_down(&e);
}

/* A negative offset on LIST: nats-server 2.9.10 panics on it (slice bounds out of range [-1:],
 * the whole server exits), newer versions clamp it to 0. natsd only. */
Test(integ_jsbad, list_negative_offset)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server 2.9.10 crashes on a negative LIST offset");
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\"}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.LIST", "{\"offset\":-1}");
    cr_assert_eq(jint(j, "total"), 1);
    cr_assert_eq(jint(j, "offset"), 0);
    cr_assert_eq(json_array_size(json_object_get(j, "streams")), 1);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.NAMES", "{\"offset\":-1}");
    cr_assert_eq(jint(j, "offset"), 0);
    json_decref(j);
    js_down(&e);
}

/* ---- strict mode ----------------------------------------------------------------------------- */

/* Not strict (the default, and all 2.9.10 knows): unknown fields are ignored by every API. */
Test(integ_jsbad, unknown_fields_ignored_when_not_strict)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"no_such\":{\"a\":[1,2]}}");
    JS_EXACT(e.c, "s.a", "x", "{\"stream\":\"S\", \"seq\":1}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.UPDATE.S",
                       "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"max_msgs\":10,\"bogus\":true}");
    cr_assert_eq(jint(j, "config.max_msgs"), 10);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.NAMES", "{\"x\":1}");
    cr_assert_eq(jint(j, "total"), 1);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.LIST", "{\"x\":1}");
    cr_assert_eq(jint(j, "total"), 1);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.INFO.S", "{\"x\":1}");
    cr_assert_eq(jint(j, "state.messages"), 1);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1,\"x\":1}");
    cr_assert_eq(jint(j, "message.seq"), 1);
    json_decref(j);
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"x\":1}",
             "{\"type\":\"" T_PURGE "\",\"success\":true,\"purged\":1}");
    js_down(&e);
}

/* Strict: 2.11's decoder with DisallowUnknownFields, for every request type (jetstream_api.go
 * unmarshalRequest), so each names the first unknown field. natsd only (2.9.10 has no strict). */
Test(integ_jsbad, strict_rejects_unknown_fields)
{
    if (nd_integ_is_reference())
        cr_skip_test("nats-server 2.9.10 has no jetstream { strict }");
    js_env_t e;
    js_up_with(&e, "strict: true");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"x\":1}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10025,"
             "\"description\":\"invalid JSON: json: unknown field \\\"x\\\"\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.S",
             "{\"name\":\"S\",\"mirror\":{\"name\":\"Z\",\"bogus\":1}}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10025,"
             "\"description\":\"invalid JSON: json: unknown field \\\"bogus\\\"\"}}");
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"allow_direct\":true}");
    JS_EXACT(e.c, "s.a", "x", "{\"stream\":\"S\", \"seq\":1}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.S", "{\"name\":\"S\",\"x\":1}",
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":400,\"err_code\":10025,"
             "\"description\":\"invalid JSON: json: unknown field \\\"x\\\"\"}}");
#define UNKNOWN_X(type, tail)                                                                      \
    "{\"type\":\"" type "\",\"error\":{\"code\":400,\"err_code\":10025,\"description\":\"invalid " \
    "JSON: json: unknown field \\\"x\\\"\"}" tail "}"
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "{\"x\":1}",
             UNKNOWN_X(T_NAMES, ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":null"));
    JS_EXACT(e.c, "$JS.API.STREAM.LIST", "{\"x\":1}",
             UNKNOWN_X(T_LIST, ",\"total\":0,\"offset\":0,\"limit\":0,\"streams\":[]"));
    JS_EXACT(e.c, "$JS.API.STREAM.INFO.S", "{\"x\":1}",
             UNKNOWN_X(T_INFO, ",\"total\":0,\"offset\":0,\"limit\":0"));
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"x\":1}", UNKNOWN_X(T_PURGE, ",\"purged\":0"));
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1,\"x\":1}", UNKNOWN_X(T_MSGGET, ""));
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":1,\"x\":1}", UNKNOWN_X(T_MSGDEL, ""));
    cr_assert_eq(js_msgs(e.c, "S"), 1, "a rejected request changed the stream");
    /* Direct get decodes with plain json.Unmarshal even in strict mode (stream.go
     * processDirectGetRequest): the unknown field is ignored and the message comes back. Last,
     * because natsd has answered nothing here (the read then fails on its hang guard). */
    js_msg_t m =
        js_req_raw_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S", NULL, "{\"seq\":1,\"x\":1}");
    cr_assert(m.hdr != NULL && strstr(m.hdr, "Nats-Sequence: 1\r\n") != NULL,
              "direct get in strict mode: %s", m.line);
    cr_assert_str_eq(m.data, "x");
    js_msg_free(&m);
    js_down(&e);
}

/* ---- names ----------------------------------------------------------------------------------- */

/* Complements create_invalid_names in test_js.c: what each API does with names that cannot be
 * streams. A '.' in the name adds a subject token that no API matches: no reply at all (the
 * $JS.API.> import swallows it, so not even no-responders). */
Test(integ_jsbad, invalid_names_every_api)
{
    js_env_t e;
    js_up(&e);
    ND_SEND(e.c, "PUB $JS.API.STREAM.CREATE.a.b " REPLY " 14\r\n{\"name\":\"a.b\"}\r\n");
    ND_PING(e.c);
    /* Whitespace cannot be in the request subject, so the body never matches it. */
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.a", "{\"name\":\"a b\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10056,"
             "\"description\":\"stream name in subject does not match request\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.a", "{\"name\":\"a\\tb\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10056,"
             "\"description\":\"stream name in subject does not match request\"}}");

    char name[257], subj[300], body[300];
    memset(name, 'x', 256);
    name[256] = '\0';
    snprintf(subj, sizeof subj, "$JS.API.STREAM.UPDATE.%s", name);
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    JS_EXACT(e.c, subj, body,
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"stream name is too long, maximum allowed is 255\"}}");
    static const char *const apis[] = {"INFO.%s", "DELETE.%s", "PURGE.%s"};
    static const char *const nf[] = {
        "{\"type\":\"" T_INFO "\",\"error\":{\"code\":404,\"err_code\":10059,\"description\":"
        "\"stream not found\"},\"total\":0,\"offset\":0,\"limit\":0}",
        "{\"type\":\"" T_DELETE "\",\"error\":{\"code\":404,\"err_code\":10059,\"description\":"
        "\"stream not found\"}}",
        "{\"type\":\"" T_PURGE "\",\"error\":{\"code\":404,\"err_code\":10059,\"description\":"
        "\"stream not found\"},\"purged\":0}",
    };
    static const char *const odd[] = {NULL, "a*b", "a>b", "a/b", "a\\b"};
    for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
        const char *n = odd[k] ? odd[k] : name;
        for (size_t i = 0; i < 3; i++) {
            char s[400];
            char fmt[64];
            snprintf(fmt, sizeof fmt, "$JS.API.STREAM.%s", apis[i]);
            snprintf(s, sizeof s, fmt, n);
            JS_EXACT(e.c, s, "", nf[i]);
        }
    }
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.a*b", "{\"seq\":1}",
             "{\"type\":\"" T_MSGGET "\",\"error\":{\"code\":404,\"err_code\":10059,"
             "\"description\":\"stream not found\"}}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 0);
    json_decref(j);
    js_down(&e);
}

/* ---- overlapping subjects ---------------------------------------------------------------------
 */

Test(integ_jsbad, overlapping_subjects)
{
    js_env_t e;
    js_up(&e);
    /* Within one stream. */
    JS_JSON(e.c, "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.*\",\"a.b\"]}",
            "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
            "\"description\":\"subject \\\"a.*\\\" overlaps with \\\"a.b\\\"\"}}");
    JS_JSON(e.c, "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.>\",\"a.*\"]}",
            "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
            "\"description\":\"subject \\\"a.>\\\" overlaps with \\\"a.*\\\"\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.A", "{\"name\":\"A\",\"subjects\":[\"a.b\",\"a.b\"]}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"duplicate subjects detected\"}}");
    static const char *const invalid[] = {"a..b", "a b", "", ".a", "a."};
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{\"name\":\"A\",\"subjects\":[\"%s\"]}", invalid[i]);
        JS_EXACT(e.c, "$JS.API.STREAM.CREATE.A", body,
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                 "\"description\":\"invalid subject\"}}");
    }
    /* Between streams, on create and on update. */
    js_create(e.c, "A", "{\"name\":\"A\",\"subjects\":[\"a.>\"]}");
    js_create(e.c, "C", "{\"name\":\"C\",\"subjects\":[\"c\"]}");
    static const char overlap_create[] =
        "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10065,"
        "\"description\":\"subjects overlap with an existing stream\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"b\",\"a.x.>\"]}",
             overlap_create);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"a.*.c\"]}",
             overlap_create);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"c\"]}",
             overlap_create);
    /* 2.11 refuses a leading wildcard first (it overlaps $JS.API.>) unless no_ack. */
    if (nd_integ_is_reference())
        JS_EXACT(e.c, "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"*.x\"]}",
                 overlap_create);
    else
        JS_EXACT(e.c, "$JS.API.STREAM.CREATE.B", "{\"name\":\"B\",\"subjects\":[\"*.x\"]}",
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                 "\"description\":\"subjects that overlap with jetstream api require no-ack to be "
                 "true\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.C", "{\"name\":\"C\",\"subjects\":[\"c\",\"a.q\"]}",
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":400,\"err_code\":10065,"
             "\"description\":\"subjects overlap with an existing stream\"}}");
    /* A subject moved from one stream to another is only free once the first lets go of it. */
    js_create(e.c, "B", "{\"name\":\"B\",\"subjects\":[\"b\"]}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 3);
    json_decref(j);
    js_down(&e);
}

/* ---- updates that may not change a field ------------------------------------------------------
 */

#define UPD_ERR(code, err, text)                                                                   \
    "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":" #code ",\"err_code\":" #err                  \
    ",\"description\":\"" text "\"}}"

Test(integ_jsbad, update_immutable_fields)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "A", "{\"name\":\"A\",\"subjects\":[\"a.>\"]}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
             "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"storage\":\"memory\"}",
             UPD_ERR(500, 10052, "stream configuration update can not change storage type"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
             "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"max_consumers\":5}",
             UPD_ERR(500, 10052, "stream configuration update can not change MaxConsumers"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
             "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"template_owner\":\"T\"}",
             UPD_ERR(500, 10052, "stream configuration update can not be owned by a template"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
             "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"mirror\":{\"name\":\"Z\"}}",
             UPD_ERR(400, 10034, "stream mirrors can not contain subjects"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A", "{\"name\":\"B\",\"subjects\":[\"a.>\"]}",
             UPD_ERR(400, 10056, "stream name in subject does not match request"));
    /* 2.9.10 takes num_replicas 3 on update without a cluster (and reports 3); 2.10+ check it as
     * on create. */
    if (!nd_integ_is_reference())
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
                 "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"num_replicas\":3}",
                 UPD_ERR(500, 10074, "replicas > 1 not supported in non-clustered mode"));

    /* Retention: 2.9.10 allows no change at all; 2.10+ allow limits <-> interest and refuse only
     * to/from workqueue. */
    js_create(e.c, "W", "{\"name\":\"W\",\"subjects\":[\"w\"],\"retention\":\"workqueue\"}");
    if (nd_integ_is_reference()) {
        const char *no = UPD_ERR(500, 10052,
                                 "stream configuration update can not change "
                                 "retention policy");
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
                 "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"retention\":\"workqueue\"}", no);
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
                 "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"retention\":\"interest\"}", no);
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.W",
                 "{\"name\":\"W\",\"subjects\":[\"w\"],\"retention\":\"limits\"}", no);
    } else {
        const char *no = UPD_ERR(500, 10052,
                                 "stream configuration update can not change "
                                 "retention policy to/from workqueue");
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.A",
                 "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"retention\":\"workqueue\"}", no);
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.W",
                 "{\"name\":\"W\",\"subjects\":[\"w\"],\"retention\":\"limits\"}", no);
        JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.W",
                 "{\"name\":\"W\",\"subjects\":[\"w\"],\"retention\":\"interest\"}", no);
        json_t *j = js_api(e.c, "$JS.API.STREAM.UPDATE.A",
                           "{\"name\":\"A\",\"subjects\":[\"a.>\"],\"retention\":\"interest\"}");
        cr_assert_str_eq(json_string_value(jget(j, "config.retention")), "interest");
        json_decref(j);
    }

    /* A mirror's origin can not change, nor can it be dropped. */
    js_create(e.c, "M", "{\"name\":\"M\",\"mirror\":{\"name\":\"A\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\",\"mirror\":{\"name\":\"W\"}}",
             UPD_ERR(400, 10055, "stream mirror configuration can not be updated"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.M", "{\"name\":\"M\"}",
             UPD_ERR(400, 10055, "stream mirror configuration can not be updated"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.M",
             "{\"name\":\"M\",\"mirror\":{\"name\":\"A\"},\"subjects\":[\"m\"]}",
             UPD_ERR(400, 10034, "stream mirrors can not contain subjects"));

    /* deny_delete / deny_purge can be set, not cancelled; a sealed stream stays sealed. */
    js_create(e.c, "D",
              "{\"name\":\"D\",\"subjects\":[\"d\"],\"deny_delete\":true,"
              "\"deny_purge\":true}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.D",
             "{\"name\":\"D\",\"subjects\":[\"d\"],\"deny_delete\":false,\"deny_purge\":true}",
             UPD_ERR(500, 10052,
                     "stream configuration update can not cancel deny message "
                     "deletes"));
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.D",
             "{\"name\":\"D\",\"subjects\":[\"d\"],\"deny_delete\":true,\"deny_purge\":false}",
             UPD_ERR(500, 10052, "stream configuration update can not cancel deny purge"));
    js_create(e.c, "E", "{\"name\":\"E\",\"subjects\":[\"e\"]}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.UPDATE.E",
                       "{\"name\":\"E\",\"subjects\":[\"e\"],\"sealed\":true}");
    cr_assert(json_is_true(jget(j, "config.sealed")));
    json_decref(j);
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.E", "{\"name\":\"E\",\"subjects\":[\"e\"]}",
             UPD_ERR(500, 10052, "stream configuration update can not unseal a sealed stream"));
    /* Sealed on create is refused. */
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.F", "{\"name\":\"F\",\"sealed\":true}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"stream configuration for create can not be sealed\"}}");
    js_down(&e);
}

/* ---- a body where none is allowed ------------------------------------------------------------ */

Test(integ_jsbad, delete_with_body)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\"}");
    static const char not_empty[] =
        "{\"type\":\"" T_DELETE "\",\"error\":{\"code\":400,\"err_code\":10038,"
        "\"description\":\"expected an empty request payload\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.S", "garbage", not_empty);
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.S", "{\"name\":\"S\"}", not_empty);
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.S", " ", not_empty);
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.NOPE", "x", not_empty); /* checked before the lookup */
    cr_assert_eq(js_msgs(e.c, "S"), 0);
    /* "{}" counts as empty (jetstream_api.go isEmptyRequest): the stream is deleted. */
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.S", "{}", "{\"type\":\"" T_DELETE "\",\"success\":true}");
    js_down(&e);
}

/* ---- huge subject lists and metadata ----------------------------------------------------------
 */

/* A create body with n subjects "<prefix>.<i>" (plus `extra` appended as the last one when not
 * NULL). Returns: owned. */
static char *
subjects_body(const char *name, const char *prefix, int n, const char *extra)
{
    size_t cap = (size_t)n * (strlen(prefix) + 16) + 256;
    char *b = malloc(cap);
    size_t o = (size_t)snprintf(b, cap, "{\"name\":\"%s\",\"subjects\":[", name);
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(b + o, cap - o, "%s\"%s.%d\"", i ? "," : "", prefix, i);
    if (extra != NULL)
        o += (size_t)snprintf(b + o, cap - o, ",\"%s\"", extra);
    snprintf(b + o, cap - o, "]}");
    return b;
}

Test(integ_jsbad, huge_subject_lists, .timeout = 400)
{
    /* 2.9.10's overlap check is quadratic: 10,000 subjects take it about 19 s, beyond the
     * harness's 10 s reply guard, so the reference gets 2,000. */
    int n = nd_integ_is_reference() ? 2000 : 10000;
    js_env_t e;
    js_up(&e);
    char *b = subjects_body("BIG", "s", n, NULL);
    json_t *j = js_api(e.c, "$JS.API.STREAM.CREATE.BIG", b);
    free(b);
    cr_assert(json_is_true(json_object_get(j, "did_create")), "create with %d subjects failed", n);
    cr_assert_eq(json_array_size(jget(j, "config.subjects")), (size_t)n);
    json_decref(j);
    char last[32], want[64];
    snprintf(last, sizeof last, "s.%d", n - 1);
    snprintf(want, sizeof want, "{\"stream\":\"BIG\", \"seq\":1}");
    JS_EXACT(e.c, last, "x", want);

    /* The same list plus one duplicate at the very end. */
    b = subjects_body("DUP", "d", n, "d.0");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.DUP", b,
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"duplicate subjects detected\"}}");
    free(b);
    /* A list whose last subject overlaps the first stream. (1,000 + 1: the check is subjects
     * times existing subjects, 10,000 x 10,000 takes natsd about 9 s here and 2.9.10 longer,
     * beyond the reply guard.) */
    b = subjects_body("OVL", "o", 1000, last);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.OVL", b,
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10065,"
             "\"description\":\"subjects overlap with an existing stream\"}}");
    free(b);
    j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 1);
    json_decref(j);
    js_down(&e);
}

/* A create body with metadata of one key "k" and a value making key + value exactly `bytes`.
 * Returns: owned. */
static char *
metadata_body(const char *name, size_t bytes)
{
    size_t vl = bytes - 1;
    char *b = malloc(vl + 128);
    int o = snprintf(b, 128, "{\"name\":\"%s\",\"metadata\":{\"k\":\"", name);
    memset(b + o, 'v', vl);
    snprintf(b + o + vl, 16, "\"}}");
    return b;
}

/* Metadata over 128 KiB (key + value bytes summed, stream.go checkStreamCfg): 10052 in 2.10+;
 * 2.9.10 does not know the field and ignores it. */
Test(integ_jsbad, huge_metadata)
{
    js_env_t e;
    js_up(&e);
    /* Just under the limit (2.11 counts the `_nats.*` keys it adds itself before checking, so
     * exactly 128 KiB of user metadata is already over there). */
    char *b = metadata_body("OK", 128 * 1024 - 1024);
    js_create(e.c, "OK", b);
    free(b);
    b = metadata_body("BIG", 128 * 1024 + 1);
    if (nd_integ_is_reference())
        js_create(e.c, "BIG", b);
    else
        JS_EXACT(e.c, "$JS.API.STREAM.CREATE.BIG", b,
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                 "\"description\":\"stream metadata exceeds maximum size of 131072 bytes\"}}");
    free(b);
    /* Many small keys add up the same way. */
    size_t cap = 1500 * 120 + 128;
    char *m = malloc(cap);
    size_t o = (size_t)snprintf(m, cap, "{\"name\":\"MANY\",\"metadata\":{");
    for (int i = 0; i < 1400; i++) {
        o += (size_t)snprintf(m + o, cap - o, "%s\"k%d\":\"", i ? "," : "", i);
        memset(m + o, 'v', 100);
        o += 100;
        o += (size_t)snprintf(m + o, cap - o, "\"");
    }
    snprintf(m + o, cap - o, "}}");
    if (nd_integ_is_reference())
        js_create(e.c, "MANY", m);
    else
        JS_EXACT(e.c, "$JS.API.STREAM.CREATE.MANY", m,
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                 "\"description\":\"stream metadata exceeds maximum size of 131072 bytes\"}}");
    free(m);
    js_down(&e);
}

/* ---- 10,000 streams ----------------------------------------------------------------------------
 */

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sends `n` API requests built by fmt (with the index), at most `window` in flight, and counts the
 * replies that have no "error". Replies are matched by count, not order. */
static int
pipelined(nd_integ_conn_t *c, int n, int window, const char *subj_fmt, const char *body_fmt)
{
    int sent = 0, got = 0, ok = 0;
    while (got < n) {
        while (sent < n && sent - got < window) {
            char subj[128], body[256];
            snprintf(subj, sizeof subj, subj_fmt, sent);
            snprintf(body, sizeof body, body_fmt, sent, sent);
            js_pub_raw_at(__FILE__, __LINE__, c, subj, REPLY, NULL, body, strlen(body));
            sent++;
        }
        js_msg_t m = js_read_msg_at(__FILE__, __LINE__, c);
        if (m.hdr == NULL && strstr(m.data, "\"error\"") == NULL)
            ok++;
        else if (got - ok < 3)
            fprintf(stderr, "request failed: %.300s\n", m.hdr ? m.hdr : m.data);
        js_msg_free(&m);
        got++;
    }
    return ok;
}

/* 10,000 memory streams created (32 requests in flight, as an async client does), listed with
 * paging (names 1024 a page, list 256), and deleted. Memory, because file streams keep file
 * descriptors open: with `ulimit -n` 20000 both servers run out a few thousand streams in
 * (2.9.10: 10049 "error creating store for stream"; natsd: 10049 "i/o error"). */
Test(integ_jsbad, ten_thousand_streams, .timeout = 900)
{
    enum { N = 10000 };
    js_env_t e;
    js_up(&e);
    double t0 = now_s();
    int ok = pipelined(e.c, N, 32, "$JS.API.STREAM.CREATE.S%05d",
                       "{\"name\":\"S%05d\",\"subjects\":[\"s.%05d\"],\"storage\":\"memory\"}");
    double t1 = now_s();
    cr_assert_eq(ok, N, "%d of %d creates failed", N - ok, N);

    /* Names, 1024 a page: every name exactly once, in order. */
    char *seen = calloc(N, 1);
    int pages = 0;
    for (int off = 0; off < N; off += 1024, pages++) {
        char body[64];
        snprintf(body, sizeof body, "{\"offset\":%d}", off);
        json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", body);
        cr_assert_eq(jint(j, "total"), N);
        cr_assert_eq(jint(j, "offset"), off);
        cr_assert_eq(jint(j, "limit"), 1024);
        json_t *arr = json_object_get(j, "streams");
        size_t want = (size_t)(N - off < 1024 ? N - off : 1024);
        cr_assert_eq(json_array_size(arr), want, "page at %d", off);
        for (size_t i = 0; i < want; i++) {
            int k = atoi(json_string_value(json_array_get(arr, i)) + 1);
            cr_assert(k >= 0 && k < N && !seen[k], "name %zu of page %d", i, off);
            seen[k] = 1;
        }
        json_decref(j);
    }
    for (int k = 0; k < N; k++)
        cr_assert(seen[k], "S%05d missing from the names", k);
    double t2 = now_s();

    /* List, 256 a page. */
    memset(seen, 0, N);
    for (int off = 0; off < N; off += 256) {
        char body[64];
        snprintf(body, sizeof body, "{\"offset\":%d}", off);
        json_t *j = js_api(e.c, "$JS.API.STREAM.LIST", body);
        cr_assert_eq(jint(j, "total"), N);
        cr_assert_eq(jint(j, "limit"), 256);
        json_t *arr = json_object_get(j, "streams");
        size_t want = (size_t)(N - off < 256 ? N - off : 256);
        cr_assert_eq(json_array_size(arr), want, "page at %d", off);
        for (size_t i = 0; i < want; i++) {
            int k = atoi(json_string_value(jget(json_array_get(arr, i), "config.name")) + 1);
            cr_assert(k >= 0 && k < N && !seen[k]);
            seen[k] = 1;
        }
        json_decref(j);
    }
    for (int k = 0; k < N; k++)
        cr_assert(seen[k], "S%05d missing from the list", k);
    free(seen);
    double t3 = now_s();
    /* Past the end: an empty page, not an error. */
    json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", "{\"offset\":20000}");
    cr_assert_eq(jint(j, "total"), N);
    cr_assert(json_array_size(json_object_get(j, "streams")) == 0);
    json_decref(j);
    JS_EXACT(e.c, "s.09999", "x", "{\"stream\":\"S09999\", \"seq\":1}");

    ok = pipelined(e.c, N, 32, "$JS.API.STREAM.DELETE.S%05d", "");
    double t4 = now_s();
    cr_assert_eq(ok, N, "%d of %d deletes failed", N - ok, N);
    j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 0);
    json_decref(j);
    fprintf(stderr,
            "ten_thousand_streams (%s): create %.2f s, names (%d pages) %.2f s, list %.2f s, "
            "delete %.2f s\n",
            nd_integ_is_reference() ? "nats-server" : "natsd", t1 - t0, pages, t2 - t1, t3 - t2,
            t4 - t3);
    js_down(&e);
}

/* ---- a store directory that cannot be used ----------------------------------------------------
 */

/* Runs the server under test with args until it exits (hang guard ND_INTEG_PROC_TIMEOUT_MS), its
 * output into out (owned). Returns: the wait status, or -1 if it had to be killed. */
static int
run_to_exit(const char *const *args, char **out)
{
    char tmpl[] = "/tmp/jsbad-out-XXXXXX";
    int fd = mkstemp(tmpl);
    cr_assert(fd >= 0);
    const char *argv[16];
    int n = 0;
    argv[n++] = nd_integ_server_path();
    argv[n++] = "-a";
    argv[n++] = "127.0.0.1";
    argv[n++] = "-p";
    argv[n++] = "-1";
    for (int i = 0; args[i] != NULL && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = -1;
    for (int waited = 0; waited < ND_INTEG_PROC_TIMEOUT_MS; waited += 20) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        status = -1;
    }
    if (status == -1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    off_t len = lseek(fd, 0, SEEK_END);
    *out = calloc(1, (size_t)len + 1);
    if (pread(fd, *out, (size_t)len, 0) < 0)
        (*out)[0] = '\0';
    close(fd);
    unlink(tmpl);
    return status;
}

/* store_dir under a regular file (ENOTDIR for every mkdir; chmod 0500 would not do, tests may run
 * as root). nats-server refuses to start: "[FTL] Can't start JetStream: storage directory is not a
 * directory", exit status 1. natsd starts without JetStream instead: it logs an [ERR] line naming
 * the directory and the reason, every $JS.API request gets no-responders (503), and core NATS
 * works. (A documented difference: the brief allows starting with a clear error.) */
Test(integ_jsbad, store_dir_unusable)
{
    js_env_t e;
    memset(&e, 0, sizeof e);
    char file[256], store[300];
    nd_integ_conf_file(&e.conf, "afile", file, sizeof file);
    nd_integ_write_file(file, "not a directory\n");
    snprintf(store, sizeof store, "%s/store", file);
    js_conf_write(&e, store, NULL);
    if (nd_integ_is_reference()) {
        const char *args[] = {"-c", e.conf.path, NULL};
        char *out = NULL;
        int st = run_to_exit(args, &out);
        cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d: %s", st, out);
        cr_assert(
            strstr(out, "[FTL] Can't start JetStream: storage directory is not a directory") !=
                NULL,
            "%s", out);
        free(out);
        nd_integ_conf_remove(&e.conf);
        return;
    }
    js_start(&e);
    cr_assert(nd_integ_server_log_has(e.srv, 0,
                                      "[ERR] Could not create or write the JetStream "
                                      "storage directory"),
              "no clear error in the log");
    cr_assert(nd_integ_server_log_has(e.srv, 0, "Not a directory"));
    js_pub_raw_at(__FILE__, __LINE__, e.c, "$JS.API.STREAM.CREATE.S", REPLY, NULL,
                  "{\"name\":\"S\"}", 12);
    ND_EXPECT(e.c, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    js_pub_raw_at(__FILE__, __LINE__, e.c, "$JS.API.INFO", REPLY, NULL, "", 0);
    ND_EXPECT(e.c, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    ND_SEND(e.c, "SUB core 2\r\nPUB core 2\r\nhi\r\n");
    ND_EXPECT(e.c, "MSG core 2 2\r\nhi\r\n");
    js_down(&e);
}

/* ---- a corrupt store at start -----------------------------------------------------------------
 */

/* The first file matching pattern (glob) under dir; fails if none. */
static void
find_file(const char *dir, const char *pattern, char *out, size_t cap)
{
    char pat[512];
    snprintf(pat, sizeof pat, "%s/%s", dir, pattern);
    glob_t g;
    cr_assert(glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0, "no file %s", pat);
    snprintf(out, cap, "%s", g.gl_pathv[0]);
    globfree(&g);
}

/* Three streams of five messages; then, with the server stopped, stream A's metadata is replaced
 * by garbage and the last record of stream B's block is damaged (mode 0: bytes flipped inside it;
 * mode 1: the block cut in the middle of it). At restart: the server starts, A is gone (logged),
 * B comes up with its first four messages, C with all five, and all of it takes new writes. */
static void
corrupt_store(int mode)
{
    js_env_t e;
    js_up(&e);
    static const char *const names[] = {"A", "B", "C"};
    for (int s = 0; s < 3; s++) {
        char body[64];
        snprintf(body, sizeof body, "{\"name\":\"%s\"}", names[s]);
        js_create(e.c, names[s], body);
        for (int i = 0; i < 5; i++) {
            char data[32], want[64];
            snprintf(data, sizeof data, "msg-%s-%d", names[s], i);
            snprintf(want, sizeof want, "{\"stream\":\"%s\", \"seq\":%d}", names[s], i + 1);
            JS_EXACT(e.c, names[s], data, want);
        }
    }
    nd_integ_conn_close(e.c);
    nd_integ_server_stop(e.srv);

    char store[256], streams[400], meta[600], blk[600];
    nd_integ_conf_file(&e.conf, "store", store, sizeof store);
    snprintf(streams, sizeof streams, "%s/jetstream/$G/streams", store);
    bool ref = nd_integ_is_reference();
    find_file(streams, ref ? "A/meta.inf" : "A/meta.nd", meta, sizeof meta);
    find_file(streams, ref ? "B/msgs/1.blk" : "B/msgs/msgs/1.blk", blk, sizeof blk);
    nd_integ_write_file(meta, "{garbage");
    int fd = open(blk, O_RDWR);
    cr_assert(fd >= 0);
    off_t len = lseek(fd, 0, SEEK_END);
    if (mode == 0) {
        unsigned char b[8];
        cr_assert(pread(fd, b, sizeof b, len - 12) == (ssize_t)sizeof b);
        for (size_t i = 0; i < sizeof b; i++)
            b[i] ^= 0xff;
        cr_assert(pwrite(fd, b, sizeof b, len - 12) == (ssize_t)sizeof b);
    } else {
        cr_assert(ftruncate(fd, len - 10) == 0);
    }
    close(fd);

    js_start(&e);
    JS_JSON(e.c, "$JS.API.STREAM.NAMES", "",
            "{\"type\":\"" T_NAMES "\",\"total\":2,\"offset\":0,\"limit\":1024,"
            "\"streams\":[\"B\",\"C\"]}");
    JS_EXACT(e.c, "$JS.API.STREAM.INFO.A", "",
             "{\"type\":\"" T_INFO "\",\"error\":{\"code\":404,\"err_code\":10059,"
             "\"description\":\"stream not found\"},\"total\":0,\"offset\":0,\"limit\":0}");
    cr_assert_eq(js_msgs(e.c, "B"), 4);
    cr_assert_eq(js_msgs(e.c, "C"), 5);
    /* base64 of "msg-B-0" .. "msg-B-3". */
    static const char *const b64[] = {
        "bXNnLUItMA==", "bXNnLUItMQ==", "bXNnLUItMg==", "bXNnLUItMw=="};
    for (int i = 1; i <= 4; i++) {
        char body[32];
        snprintf(body, sizeof body, "{\"seq\":%d}", i);
        json_t *g = js_api(e.c, "$JS.API.STREAM.MSG.GET.B", body);
        const char *d = json_string_value(jget(g, "message.data"));
        cr_assert(d != NULL && strcmp(d, b64[i - 1]) == 0, "B seq %d lost or changed", i);
        json_decref(g);
    }
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.B", "{\"seq\":5}",
             "{\"type\":\"" T_MSGGET "\",\"error\":{\"code\":404,\"err_code\":10037,"
             "\"description\":\"no message found\"}}");
    /* New writes: B continues after what it had (2.9.10 keeps last_seq 5 when only the record is
     * damaged, so the next is 6; a store that lost the record's trace reuses 5), C after 5. */
    json_t *ack = js_api(e.c, "B", "new");
    cr_assert(json_object_get(ack, "error") == NULL);
    cr_assert(jint(ack, "seq") >= 5);
    json_decref(ack);
    JS_EXACT(e.c, "C", "new", "{\"stream\":\"C\", \"seq\":6}");
    /* A can be created again. 2.9.10 then picks up the message blocks its old directory still
     * holds (the next sequence is 6); a store that starts it afresh says 1. */
    js_create(e.c, "A", "{\"name\":\"A\"}");
    ack = js_api(e.c, "A", "new");
    cr_assert(json_object_get(ack, "error") == NULL);
    long long aseq = jint(ack, "seq");
    cr_assert(aseq == 1 || aseq == 6, "A's next sequence %lld", aseq);
    json_decref(ack);
    js_down(&e);
}

Test(integ_jsbad, corrupt_store_flipped_bytes)
{
    corrupt_store(0);
}

Test(integ_jsbad, corrupt_store_truncated_block)
{
    corrupt_store(1);
}

/* ---- malformed publishes ----------------------------------------------------------------------
 */

/* Publishes with raw header block hdr on subject p.a and checks the exact reply. */
static void
pub_expect_at(const char *file, int line, nd_integ_conn_t *c, const char *raw_hdr, const char *want)
{
    js_exact_at(file, line, c, "p.a", raw_hdr, "x", want);
}
#define PUB_EXPECT(c, raw_hdr, want) pub_expect_at(__FILE__, __LINE__, (c), (raw_hdr), (want))

Test(integ_jsbad, malformed_publishes)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "P", "{\"name\":\"P\",\"subjects\":[\"p.>\"],\"allow_msg_ttl\":true}");
    int seq = 0;
    char want[256];
#define ACK_NEXT() (snprintf(want, sizeof want, "{\"stream\":\"P\", \"seq\":%d}", ++seq), want)

    /* A sequence that is not a number is no sequence at all: it never matches. */
    static const char wrong_last[] = "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":"
                                     "\"wrong last sequence: 0\"},\"stream\":\"P\",\"seq\":0}";
    char *h = hdr_block("Nats-Expected-Last-Sequence: abc\r\n");
    PUB_EXPECT(e.c, h, wrong_last);
    free(h);
    h = hdr_block("Nats-Expected-Last-Sequence: -1\r\n");
    PUB_EXPECT(e.c, h, wrong_last);
    free(h);

    /* A 10 KB message id works as any other: stored, then a duplicate. */
    char *id = malloc(10240 + 32);
    strcpy(id, "Nats-Msg-Id: ");
    memset(id + 13, 'i', 10240);
    strcpy(id + 13 + 10240, "\r\n");
    h = hdr_block(id);
    PUB_EXPECT(e.c, h, ACK_NEXT());
    snprintf(want, sizeof want, "{\"stream\":\"P\", \"seq\":%d,\"duplicate\": true}", seq);
    PUB_EXPECT(e.c, h, want);
    free(h);
    free(id);

    /* Header blocks with garbage lines: stored, the garbage kept as it came. */
    PUB_EXPECT(e.c, "NATS/1.0\r\ngarbage-without-colon\r\n\r\n", ACK_NEXT());
    PUB_EXPECT(e.c, "NATS/1.0\r\n:\r\n\r\n", ACK_NEXT());
    PUB_EXPECT(e.c, "NATS/1.0\r\n\x01\x02\xff: \xfe\r\n\r\n", ACK_NEXT());
    PUB_EXPECT(e.c, "NATS/1.0\r\nNats-Expected-Stream:\r\n\r\n", ACK_NEXT());
    PUB_EXPECT(e.c, "NATS/1.0\r\nNats-Rollup: \r\n\r\n", ACK_NEXT());

    /* Nats-TTL: 2.9.10 does not know it (stored, TTL ignored); 2.11 refuses garbage with 10165. */
    static const char *const ttls[] = {"garbage", "-5", "1ms", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof ttls / sizeof ttls[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "Nats-TTL: %s\r\n", ttls[i]);
        h = hdr_block(line);
        if (nd_integ_is_reference())
            PUB_EXPECT(e.c, h, ACK_NEXT());
        else
            PUB_EXPECT(e.c, h,
                       "{\"error\":{\"code\":400,\"err_code\":10165,\"description\":\"invalid "
                       "per-message TTL\"},\"stream\":\"P\",\"seq\":0}");
        free(h);
    }
    h = hdr_block("Nats-TTL: 1h\r\n");
    PUB_EXPECT(e.c, h, ACK_NEXT());
    free(h);
    cr_assert_eq(js_msgs(e.c, "P"), seq, "a rejected publish was stored or an ack lost");

    /* A non-numeric Nats-Expected-Last-Subject-Sequence: parsed as -1 by nats-server, which
     * never matches, so 10071 with the subject's last sequence (here 0: p.b is new). Last,
     * because natsd stores the message instead. */
    h = hdr_block("Nats-Expected-Last-Subject-Sequence: 1x\r\n");
    js_exact_at(__FILE__, __LINE__, e.c, "p.b", h, "x", wrong_last);
    free(h);
    js_down(&e);
}
