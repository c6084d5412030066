/* Integration tests of JetStream streams over the raw protocol: the $JS.API requests, the publish
 * path (PubAck bytes, Nats-Msg-Id, Nats-Expected-*, Nats-Rollup, limits) and direct get, sent as
 * PUB/HPUB on a socket and checked byte for byte or key by key.
 *
 * Every expectation was first checked against the reference nats-server 2.9.10
 * (`integ.js.reference` runs this binary with NATSD_TEST_SERVER=/usr/sbin/nats-server). natsd
 * behaves as nats-server 2.10/2.11 where that differs from 2.9.10 (issue 13), so two kinds of
 * tolerance exist here:
 * - JSON responses are compared with js_match(): every key of the 2.9.10 response must be there
 *   with its value, and the only extra keys allowed are those nats-server added later (LATER_KEYS:
 *   "ts", "api.level", 2.10/2.11 config fields, "metadata" holding only `_nats.*` keys).
 * - The few places where 2.10/2.11 answer differently (texts, a reply 2.9.10 never sent) ask
 *   nd_integ_is_reference() and say why.
 * Error responses whose JSON contains no character Go escapes are compared as exact bytes: they
 * are identical in 2.9.10 and 2.11 (the response structs did not change).
 *
 * Framing: JetStream's internal clients publish with an empty, non-nil reply, so nats-server writes
 * PubAcks and direct-get replies as "MSG <subj> <sid>  <size>" (two spaces). The tests parse the
 * MSG/HMSG line by fields and compare payloads exactly; test pub_ack_framing pins the line itself.
 *
 * Also here: the crash test (restart_after_sigkill): SIGKILL while publishing with
 * `sync_interval: always`, restart on the same store, every acknowledged message present.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "jsproto.h"

TestSuite(integ_js, .fini = nd_integ_cleanup, .timeout = 240);

#define REPLY "_R.1"

/* ---- failing with the caller's line ---------------------------------------------------------- */


/* ---- servers and connections ----------------------------------------------------------------- */

typedef struct js_env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} js_env_t;

/* Opens a connection with headers and no_responders on (as every JetStream client sends), with
 * optional user/password, subscribed to REPLY. */
static nd_integ_conn_t *
js_connect(nd_integ_server_t *srv, const char *user)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char line[256];
    if (user != NULL)
        snprintf(line, sizeof line,
                 "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                 "\"user\":\"%s\",\"pass\":\"%s\"}\r\nSUB " REPLY " 1\r\nPING\r\n",
                 user, user);
    else
        snprintf(line, sizeof line,
                 "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
                 "SUB " REPLY " 1\r\nPING\r\n");
    ND_SENDS(c, line);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Starts a server whose config is `jetstream { store_dir: <conf dir>/store <extra> }` plus
 * `more` (may be NULL), and connects to it. */
static void
js_up_with(js_env_t *e, const char *js_extra, const char *more, const char *user)
{
    memset(e, 0, sizeof *e);
    char store[256];
    nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\"%s%s }\n%s", store,
                       js_extra ? ", " : "", js_extra ? js_extra : "", more ? more : "") > 0);
    e->srv = nd_integ_conf_start(&e->conf, text);
    free(text);
    e->c = js_connect(e->srv, user);
}

static void
js_up(js_env_t *e)
{
    js_up_with(e, NULL, NULL, NULL);
}

static void
js_down(js_env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* ---- messages ----------------------------------------------------------------------------------
 */



/* Publishes body on subj with reply (NULL: none) and headers (NULL: a PUB; else the header lines
 * without the NATS/1.0 status line and without the final blank line, e.g. "A: 1\r\n"). */
static void
js_pub_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *reply,
          const char *hdrs, const char *body)
{
    size_t bl = strlen(body);
    char *buf = NULL;
    int n;
    if (hdrs == NULL) {
        n = asprintf(&buf, "PUB %s%s%s %zu\r\n%s\r\n", subj, reply ? " " : "", reply ? reply : "",
                     bl, body);
    } else {
        char *h = NULL;
        cr_assert(asprintf(&h, "NATS/1.0\r\n%s\r\n", hdrs) > 0);
        size_t hl = strlen(h);
        n = asprintf(&buf, "HPUB %s%s%s %zu %zu\r\n%s%s\r\n", subj, reply ? " " : "",
                     reply ? reply : "", hl, hl + bl, h, body);
        free(h);
    }
    cr_assert(n > 0);
    nd_integ_send_at(file, line, c, buf, (size_t)n);
    free(buf);
}
#define js_pub(c, subj, reply, hdrs, body)                                                         \
    js_pub_at(__FILE__, __LINE__, (c), (subj), (reply), (hdrs), (body))

/* A request: publishes with reply REPLY and returns the reply message (MSG or HMSG on REPLY). */
static js_msg_t
js_req_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *hdrs,
          const char *body)
{
    js_pub_at(file, line, c, subj, REPLY, hdrs, body);
    js_msg_t m = js_read_msg_at(file, line, c);
    if (strcmp(m.subject, REPLY) != 0)
        jfail(file, line, "reply on %s, expected %s: %s", m.subject, REPLY, m.line);
    return m;
}

/* Sends the request and fails unless the reply is a MSG (no headers) with exactly `want` as its
 * payload. */
static void
js_expect_payload_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                     const char *hdrs, const char *body, const char *want)
{
    js_msg_t m = js_req_at(file, line, c, subj, hdrs, body);
    if (m.hdr != NULL)
        jfail(file, line, "%s: expected a MSG, got \"%s\" with headers \"%s\"", subj, m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    if (strcmp(m.data, want) != 0)
        jfail(file, line, "%s: unexpected reply\n  expected: %s\n  actual:   %s", subj, want,
              m.data);
    js_msg_free(&m);
}
#define JS_EXACT(c, subj, body, want)                                                              \
    js_expect_payload_at(__FILE__, __LINE__, (c), (subj), NULL, (body), (want))
#define JS_HEXACT(c, subj, hdrs, body, want)                                                       \
    js_expect_payload_at(__FILE__, __LINE__, (c), (subj), (hdrs), (body), (want))

/* Sends an API request and returns its reply parsed (a JSON object; owned by the caller). */
static json_t *
js_api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    js_msg_t m = js_req_at(file, line, c, subj, NULL, body);
    if (m.hdr != NULL)
        jfail(file, line, "%s: expected a JSON reply, got \"%s\" with headers \"%s\"", subj, m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    json_error_t err;
    json_t *j = json_loadb(m.data, m.data_len, 0, &err);
    if (!json_is_object(j))
        jfail(file, line, "%s: reply is not a JSON object (%s): %s", subj, err.text, m.data);
    js_msg_free(&m);
    return j;
}
#define js_api(c, subj, body) js_api_at(__FILE__, __LINE__, (c), (subj), (body))

/* Expects that nothing comes back for what was sent: a PING gets its PONG first. */
#define JS_EXPECT_NOTHING(c) ND_PING(c)

/* ---- comparing JSON with the 2.9.10 key set -------------------------------------------------- */

/* Keys nats-server added after 2.9.10, which a response may carry beyond a 2.9.10 template: the
 * StreamInfo timestamp, account info's reserved/level/tier fields, and 2.10/2.11 stream config
 * fields. "metadata" is checked separately (only `_nats.*` keys). */
static const char *const LATER_KEYS[] = {
    "ts",
    "reserved_memory",
    "reserved_storage",
    "level",
    "tiers",
    "compression",
    "first_seq",
    "subject_transform",
    "consumer_limits",
    "allow_msg_ttl",
    "subject_delete_marker_ttl",
    NULL,
};

static bool
later_key(const char *key, json_t *val)
{
    if (strcmp(key, "metadata") == 0) {
        /* 2.11 adds _nats.req.level / _nats.ver / _nats.level; nothing else may appear unasked. */
        const char *k;
        json_t *v;
        if (!json_is_object(val))
            return false;
        json_object_foreach(val, k, v) if (strncmp(k, "_nats.", 6) != 0) return false;
        return true;
    }
    for (int i = 0; LATER_KEYS[i] != NULL; i++)
        if (strcmp(LATER_KEYS[i], key) == 0)
            return true;
    return false;
}

static bool
is_rfc3339(const char *s)
{
    size_t n = strlen(s);
    return n >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' &&
           s[n - 1] == 'Z' && strncmp(s, "0001-", 5) != 0;
}

/* Matches got against tmpl. Template strings with a meaning: "$any" (any value), "$ts" (a real
 * RFC 3339 UTC time, not Go's zero time), "$prefix:<p>" (a string starting with p), "$int>0".
 * Objects: every template key must match and extra keys must be LATER_KEYS. Arrays: same length,
 * element by element. Returns false with a description of the first mismatch in *why. */
static bool
jmatch(json_t *got, json_t *tmpl, const char *path, char **why)
{
    if (json_is_string(tmpl) && json_string_value(tmpl)[0] == '$') {
        const char *t = json_string_value(tmpl);
        bool ok;
        if (strcmp(t, "$any") == 0)
            ok = got != NULL;
        else if (strcmp(t, "$ts") == 0)
            ok = json_is_string(got) && is_rfc3339(json_string_value(got));
        else if (strncmp(t, "$prefix:", 8) == 0)
            ok = json_is_string(got) && strncmp(json_string_value(got), t + 8, strlen(t + 8)) == 0;
        else if (strcmp(t, "$int>0") == 0)
            ok = json_is_integer(got) && json_integer_value(got) > 0;
        else
            ok = json_equal(got, tmpl);
        if (!ok) {
            char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : strdup("(missing)");
            if (asprintf(why, "%s: %s does not match %s", path, g, t) < 0)
                *why = NULL;
            free(g);
        }
        return ok;
    }
    if (json_is_object(tmpl)) {
        if (!json_is_object(got)) {
            if (asprintf(why, "%s: not an object", path) < 0)
                *why = NULL;
            return false;
        }
        const char *k;
        json_t *v;
        json_object_foreach(tmpl, k, v)
        {
            char *sub = NULL;
            if (asprintf(&sub, "%s.%s", path, k) < 0)
                abort();
            json_t *g = json_object_get(got, k);
            if (g == NULL) {
                if (asprintf(why, "%s: missing", sub) < 0)
                    *why = NULL;
                free(sub);
                return false;
            }
            bool ok = jmatch(g, v, sub, why);
            free(sub);
            if (!ok)
                return false;
        }
        json_object_foreach(got, k, v)
        {
            if (json_object_get(tmpl, k) == NULL && !later_key(k, v)) {
                char *d = json_dumps(v, JSON_ENCODE_ANY);
                if (asprintf(why, "%s.%s: unexpected key (value %s)", path, k, d) < 0)
                    *why = NULL;
                free(d);
                return false;
            }
        }
        return true;
    }
    if (json_is_array(tmpl)) {
        if (!json_is_array(got) || json_array_size(got) != json_array_size(tmpl)) {
            if (asprintf(why, "%s: expected an array of %zu", path, json_array_size(tmpl)) < 0)
                *why = NULL;
            return false;
        }
        for (size_t i = 0; i < json_array_size(tmpl); i++) {
            char *sub = NULL;
            if (asprintf(&sub, "%s[%zu]", path, i) < 0)
                abort();
            bool ok = jmatch(json_array_get(got, i), json_array_get(tmpl, i), sub, why);
            free(sub);
            if (!ok)
                return false;
        }
        return true;
    }
    if (got == NULL || !json_equal(got, tmpl)) {
        char *g = got ? json_dumps(got, JSON_ENCODE_ANY) : strdup("(missing)");
        char *t = json_dumps(tmpl, JSON_ENCODE_ANY);
        if (asprintf(why, "%s: got %s, expected %s", path, g, t) < 0)
            *why = NULL;
        free(g);
        free(t);
        return false;
    }
    return true;
}

static void
js_match_at(const char *file, int line, json_t *got, json_t *tmpl)
{
    char *why = NULL;
    if (!jmatch(got, tmpl, "$", &why)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        jfail(file, line, "%s\n  response: %s", why ? why : "mismatch", g);
    }
}

/* Parses a template literal (fails the test on a typo in it). */
static json_t *
tmpl_at(const char *file, int line, const char *text)
{
    json_error_t err;
    json_t *t = json_loads(text, 0, &err);
    if (t == NULL)
        jfail(file, line, "bad template (%s at %d): %s", err.text, err.position, text);
    return t;
}

/* Matches got against the template text; frees nothing. */
static void
js_match_text_at(const char *file, int line, json_t *got, const char *text)
{
    json_t *t = tmpl_at(file, line, text);
    js_match_at(file, line, got, t);
    json_decref(t);
}
#define JS_MATCH(got, text) js_match_text_at(__FILE__, __LINE__, (got), (text))

/* Sends an API request and matches its reply against the template text. */
static void
js_api_match_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
                const char *text)
{
    json_t *j = js_api_at(file, line, c, subj, body);
    js_match_text_at(file, line, j, text);
    json_decref(j);
}
#define JS_API_MATCH(c, subj, body, text)                                                          \
    js_api_match_at(__FILE__, __LINE__, (c), (subj), (body), (text))

/* The value at a dotted path ("state.messages"); NULL if absent. Borrowed. */


/* The stream config nats-server 2.9.10 reports for {"name":NAME} with the fields of `over` (a JSON
 * object text, may be NULL) replaced: every default spelled out. */
#define CFG_DEFAULTS                                                                               \
    "{\"retention\":\"limits\",\"max_consumers\":-1,\"max_msgs\":-1,\"max_bytes\":-1,"             \
    "\"max_age\":0,\"max_msgs_per_subject\":-1,\"max_msg_size\":-1,\"discard\":\"old\","           \
    "\"storage\":\"file\",\"num_replicas\":1,\"duplicate_window\":120000000000,"                   \
    "\"allow_direct\":false,\"mirror_direct\":false,\"sealed\":false,\"deny_delete\":false,"       \
    "\"deny_purge\":false,\"allow_rollup_hdrs\":false}"

#define STATE_EMPTY                                                                                \
    "{\"messages\":0,\"bytes\":0,\"first_seq\":0,\"first_ts\":\"0001-01-01T00:00:00Z\","           \
    "\"last_seq\":0,\"last_ts\":\"0001-01-01T00:00:00Z\",\"consumer_count\":0}"

/* Builds the template of a stream info / create / update response: type, config (defaults, then
 * name and subjects, then `over`), created "$ts", state (text), plus `extra` top-level keys (a JSON
 * object text, may be NULL). Returns: owned. */
static json_t *
stream_tmpl(const char *type, const char *name, const char *subjects, const char *over,
            const char *state, const char *extra)
{
    json_t *cfg = tmpl_at(__FILE__, __LINE__, CFG_DEFAULTS);
    json_object_set_new(cfg, "name", json_string(name));
    json_object_set_new(cfg, "subjects", tmpl_at(__FILE__, __LINE__, subjects));
    if (over != NULL) {
        json_t *o = tmpl_at(__FILE__, __LINE__, over);
        json_object_update(cfg, o);
        json_decref(o);
    }
    json_t *t = json_object();
    if (type != NULL)
        json_object_set_new(t, "type", json_string(type));
    json_object_set_new(t, "config", cfg);
    json_object_set_new(t, "created", json_string("$ts"));
    json_object_set_new(t, "state", tmpl_at(__FILE__, __LINE__, state));
    if (extra != NULL) {
        json_t *x = tmpl_at(__FILE__, __LINE__, extra);
        json_object_update(t, x);
        json_decref(x);
    }
    return t;
}

#define T_CREATE   "io.nats.jetstream.api.v1.stream_create_response"
#define T_UPDATE   "io.nats.jetstream.api.v1.stream_update_response"
#define T_INFO     "io.nats.jetstream.api.v1.stream_info_response"
#define INFO_PAGE0 "{\"total\":0,\"offset\":0,\"limit\":0}"

/* Creates a stream from the request body and checks did_create; returns the reply (owned). */
static json_t *
js_create_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *body)
{
    char subj[300];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = js_api_at(file, line, c, subj, body);
    if (json_object_get(j, "error") != NULL || !json_is_true(json_object_get(j, "did_create"))) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "create %s failed: %s", name, d);
    }
    return j;
}
#define js_create(c, name, body) json_decref(js_create_at(__FILE__, __LINE__, (c), (name), (body)))

/* Stream info (no body); returns the reply (owned). */
static json_t *
js_info_at(const char *file, int line, nd_integ_conn_t *c, const char *name)
{
    char subj[300];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
    return js_api_at(file, line, c, subj, "");
}
#define js_info(c, name) js_info_at(__FILE__, __LINE__, (c), (name))

/* Publishes with a reply and expects the PubAck {"stream":S, "seq":N} exactly. */
static void
js_pub_ack_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *hdrs,
              const char *body, const char *stream, long long seq)
{
    char want[300];
    snprintf(want, sizeof want, "{\"stream\":\"%s\", \"seq\":%lld}", stream, seq);
    js_expect_payload_at(file, line, c, subj, hdrs, body, want);
}
#define JS_ACK(c, subj, body, stream, seq)                                                         \
    js_pub_ack_at(__FILE__, __LINE__, (c), (subj), NULL, (body), (stream), (seq))
#define JS_HACK(c, subj, hdrs, body, stream, seq)                                                  \
    js_pub_ack_at(__FILE__, __LINE__, (c), (subj), (hdrs), (body), (stream), (seq))

/* ---- account info and enablement ---------------------------------------------------------------
 */

#define ACCOUNT_INFO_EMPTY                                                                         \
    "{\"type\":\"io.nats.jetstream.api.v1.account_info_response\",\"memory\":0,\"storage\":0,"     \
    "\"streams\":0,\"consumers\":0,\"limits\":{\"max_memory\":-1,\"max_storage\":-1,"              \
    "\"max_streams\":-1,\"max_consumers\":-1,\"max_ack_pending\":-1,"                              \
    "\"memory_max_stream_bytes\":-1,\"storage_max_stream_bytes\":-1,"                              \
    "\"max_bytes_required\":false},\"api\":{\"total\":0,\"errors\":0}}"

Test(integ_js, account_info)
{
    js_env_t e;
    js_up(&e);
    JS_API_MATCH(e.c, "$JS.API.INFO", "", ACCOUNT_INFO_EMPTY);

    /* The counters move: two streams (one memory), one API error. */
    js_create(e.c, "F", "{\"name\":\"F\"}");
    js_create(e.c, "M", "{\"name\":\"M\",\"storage\":\"memory\"}");
    JS_EXACT(e.c, "$JS.API.STREAM.INFO.NOPE", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_info_response\",\"error\":{\"code\":404,"
             "\"err_code\":10059,\"description\":\"stream not found\"},\"total\":0,\"offset\":0,"
             "\"limit\":0}");
    JS_ACK(e.c, "M", "hello", "M", 1);
    json_t *j = js_api(e.c, "$JS.API.INFO", "");
    JS_MATCH(j, "{\"type\":\"io.nats.jetstream.api.v1.account_info_response\",\"memory\":22,"
                "\"storage\":0,\"streams\":2,\"consumers\":0,\"limits\":\"$any\","
                "\"api\":{\"total\":4,\"errors\":1}}");
    json_decref(j);
    js_down(&e);
}

/* With an accounts {} block only the accounts that enable jetstream get it; the others get 10039
 * from every API request (with each response's own envelope). */
Test(integ_js, not_enabled_for_account)
{
    js_env_t e;
    js_up_with(&e, NULL,
               "accounts {\n"
               "  JS: { jetstream: enabled, users: [{user: a, password: a}] }\n"
               "  NOJS: { users: [{user: b, password: b}] }\n"
               "}\n",
               "a");
    nd_integ_conn_t *a = e.c;
    nd_integ_conn_t *b = js_connect(e.srv, "b");

    JS_API_MATCH(a, "$JS.API.INFO", "", ACCOUNT_INFO_EMPTY);
    JS_EXACT(b, "$JS.API.INFO", "",
             "{\"type\":\"io.nats.jetstream.api.v1.account_info_response\",\"error\":{\"code\":503,"
             "\"err_code\":10039,\"description\":\"JetStream not enabled for account\"}}");
    JS_EXACT(
        b, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\"}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_create_response\",\"error\":{\"code\":503,"
        "\"err_code\":10039,\"description\":\"JetStream not enabled for account\"}}");
    JS_EXACT(b, "$JS.API.STREAM.NAMES", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"error\":{\"code\":503,"
             "\"err_code\":10039,\"description\":\"JetStream not enabled for account\"},"
             "\"total\":0,\"offset\":0,\"limit\":0,\"streams\":null}");
    JS_EXACT(b, "$JS.API.STREAM.INFO.S", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_info_response\",\"error\":{\"code\":503,"
             "\"err_code\":10039,\"description\":\"JetStream not enabled for account\"},"
             "\"total\":0,\"offset\":0,\"limit\":0}");

    /* A stream in account JS does not capture account NOJS's subject of the same name. */
    js_create(a, "S", "{\"name\":\"S\"}");
    js_pub(b, "S", REPLY, NULL, "x");
    ND_EXPECT(b, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    json_t *j = js_info(a, "S");
    cr_assert_eq(jint(j, "state.messages"), 0);
    json_decref(j);
    nd_integ_conn_close(b);
    js_down(&e);
}

/* A server without JetStream has no $JS.API responder at all: a request gets no-responders. */
Test(integ_js, server_without_jetstream)
{
    nd_integ_server_t *srv = nd_integ_server_start(0, NULL);
    nd_integ_conn_t *c = js_connect(srv, NULL);
    js_pub(c, "$JS.API.INFO", REPLY, NULL, "");
    ND_EXPECT(c, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    js_pub(c, "$JS.API.STREAM.CREATE.S", REPLY, NULL, "{\"name\":\"S\"}");
    ND_EXPECT(c, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);
}

/* ---- create
 * -------------------------------------------------------------------------------------- */

Test(integ_js, create_defaults)
{
    js_env_t e;
    js_up(&e);
    /* No subjects: the stream's name becomes its only subject. */
    json_t *j = js_api(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\"}");
    json_t *t = stream_tmpl(T_CREATE, "S", "[\"S\"]", NULL, STATE_EMPTY, "{\"did_create\":true}");
    js_match_at(__FILE__, __LINE__, j, t);
    json_decref(t);
    json_decref(j);

    /* Memory storage, given subjects, max_age: duplicate_window is capped at max_age. */
    j = js_api(e.c, "$JS.API.STREAM.CREATE.Y",
               "{\"name\":\"Y\",\"subjects\":[\"y.*\",\"z\"],\"storage\":\"memory\","
               "\"max_age\":60000000000,\"max_msgs\":0,\"num_replicas\":0}");
    t = stream_tmpl(T_CREATE, "Y", "[\"y.*\",\"z\"]",
                    "{\"storage\":\"memory\",\"max_age\":60000000000,"
                    "\"duplicate_window\":60000000000}",
                    STATE_EMPTY, "{\"did_create\":true}");
    js_match_at(__FILE__, __LINE__, j, t);
    json_decref(t);
    json_decref(j);

    /* Unknown fields are ignored when not strict. */
    js_create(e.c, "U", "{\"name\":\"U\",\"no_such_field\":1}");
    js_down(&e);
}

Test(integ_js, create_idempotent_and_conflicting)
{
    js_env_t e;
    js_up(&e);
    json_t *a = js_create_at(__FILE__, __LINE__, e.c, "S",
                             "{\"name\":\"S\",\"subjects\":[\"s.*\"],\"max_msgs\":5}");
    /* The same config again: success, did_create (even 2.11 says true), same creation time. */
    json_t *b = js_create_at(__FILE__, __LINE__, e.c, "S",
                             "{\"name\":\"S\",\"subjects\":[\"s.*\"],\"max_msgs\":5}");
    cr_assert_str_eq(json_string_value(json_object_get(a, "created")),
                     json_string_value(json_object_get(b, "created")));
    json_decref(a);
    json_decref(b);
    /* Defaults written out are the same config. */
    js_create(e.c, "S",
              "{\"name\":\"S\",\"subjects\":[\"s.*\"],\"max_msgs\":5,\"retention\":\"limits\","
              "\"storage\":\"file\",\"duplicate_window\":120000000000,\"max_bytes\":-1}");
    static const char conflict[] =
        "{\"type\":\"io.nats.jetstream.api.v1.stream_create_response\",\"error\":{\"code\":400,"
        "\"err_code\":10058,\"description\":\"stream name already in use with a different "
        "configuration\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.S",
             "{\"name\":\"S\",\"subjects\":[\"s.*\"],\"max_msgs\":6}", conflict);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.S",
             "{\"name\":\"S\",\"subjects\":[\"s.*\"],\"max_msgs\":5,"
             "\"description\":\"d\"}",
             conflict);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\"}", conflict);

    /* 2.11 stamps `_nats.*` metadata into the config; a repeated create is idempotent whatever
     * `_nats.*` metadata it carries or lacks (2.9.10 ignores the field, so it agrees). */
    js_create(e.c, "V", "{\"name\":\"V\",\"metadata\":{\"_nats.req.level\":\"0\"}}");
    js_create(e.c, "V", "{\"name\":\"V\"}");
    js_create(e.c, "V", "{\"name\":\"V\",\"metadata\":{\"_nats.ver\":\"2.11.0\"}}");
    js_down(&e);
}

Test(integ_js, create_bad_requests)
{
    js_env_t e;
    js_up(&e);
    /* 2.9.10 says "invalid JSON"; 2.10+ append ": <decoder error>". */
    static const char invalid_json[] =
        "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10025,"
        "\"description\":\"$prefix:invalid JSON\"}}";
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",", invalid_json);
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.S", "", invalid_json);
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"retention\":\"bogus\"}",
                 invalid_json);
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"max_msgs\":\"x\"}",
                 invalid_json);

    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"S\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10056,"
             "\"description\":\"stream name in subject does not match request\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10056,"
             "\"description\":\"stream name in subject does not match request\"}}");
    /* Go escapes '>' as \u003e: compared as JSON. */
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.Y", "{\"name\":\"Y\",\"max_age\":1000}",
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                 "\"description\":\"max age needs to be >= 100ms\"}}");
    JS_API_MATCH(e.c, "$JS.API.STREAM.CREATE.Y", "{\"name\":\"Y\",\"num_replicas\":3}",
                 "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10074,"
                 "\"description\":\"replicas > 1 not supported in non-clustered mode\"}}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.NAMES", "");
    cr_assert_eq(jint(j, "total"), 0, "a failed create left a stream");
    json_decref(j);
    js_down(&e);
}

Test(integ_js, create_invalid_names)
{
    js_env_t e;
    js_up(&e);
    /* Names that can be written in the request subject: '*' and '>' inside a token are literal
     * there, while a token that is only "*" or ">" makes the PUB itself invalid (-ERR). Whitespace
     * cannot be written either (it would split the PUB line), and a '.' adds a token (no API
     * subject matches: no reply at all), so such names only ever meet the 10056 mismatch. */
    static const char *const wild[] = {"a*b", "a>b", "a*", ">b"};
    for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
        nd_integ_context("name %s", wild[i]);
        char subj[64], body[64];
        snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", wild[i]);
        snprintf(body, sizeof body, "{\"name\":\"%s\"}", wild[i]);
        JS_API_MATCH(e.c, subj, body,
                     "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
                     "\"description\":\"stream name is required and can not contain '.', '*', "
                     "'>'\"}}");
    }
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.a/b", "{\"name\":\"a/b\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10128,"
             "\"description\":\"Stream name can not contain path separators\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.a\\b", "{\"name\":\"a\\\\b\"}",
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10128,"
             "\"description\":\"Stream name can not contain path separators\"}}");
    nd_integ_context(NULL);

    char name[257], subj[300], body[300];
    memset(name, 'x', 256);
    name[256] = '\0';
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    JS_EXACT(e.c, subj, body,
             "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"stream name is too long, maximum allowed is 255\"}}");
    name[255] = '\0'; /* 255 is allowed */
    js_create(e.c, name, (snprintf(body, sizeof body, "{\"name\":\"%s\"}", name), body));
    js_down(&e);
}

Test(integ_js, create_overlapping_subjects)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    static const char overlap[] =
        "{\"type\":\"" T_CREATE "\",\"error\":{\"code\":400,\"err_code\":10065,"
        "\"description\":\"subjects overlap with an existing stream\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"T\",\"subjects\":[\"s.a\"]}", overlap);
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"T\",\"subjects\":[\"s.*.x\"]}", overlap);
    /* (">" alone: 2.11 first says "capturing all subjects requires no-ack to be true") */
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"T\",\"subjects\":[\"s.*\"]}", overlap);
    /* (a leading "*" collides with $JS.> in 2.11: no-ack required first) */
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.T", "{\"name\":\"T\",\"subjects\":[\"t\",\"s.b\"]}",
             overlap);
    /* Disjoint is fine; "s" itself is not under "s.>". */
    js_create(e.c, "T", "{\"name\":\"T\",\"subjects\":[\"s\",\"t.>\"]}");
    /* A stream with no subjects takes its name, which may overlap too. */
    JS_EXACT(e.c, "$JS.API.STREAM.CREATE.s", "{\"name\":\"s\"}",
             "{\"type\":\"" T_CREATE
             "\",\"error\":{\"code\":400,\"err_code\":10065,\"description\":\"subjects overlap "
             "with an existing stream\"}}");
    /* Only the accepted streams exist. */
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":2,"
             "\"offset\":0,\"limit\":1024,\"streams\":[\"S\",\"T\"]}");
    js_down(&e);
}

/* ---- update, info, names, list, delete ---------------------------------------------------- */

Test(integ_js, update)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "R", "{\"name\":\"R\",\"subjects\":[\"r.*\"]}");
    JS_ACK(e.c, "r.a", "1", "R", 1);
    json_t *j = js_api(e.c, "$JS.API.STREAM.UPDATE.R",
                       "{\"name\":\"R\",\"subjects\":[\"r.*\",\"q\"],\"max_msgs\":10,"
                       "\"allow_rollup_hdrs\":true}");
    json_t *t = stream_tmpl(
        T_UPDATE, "R", "[\"r.*\",\"q\"]", "{\"max_msgs\":10,\"allow_rollup_hdrs\":true}",
        "{\"messages\":1,\"bytes\":\"$any\",\"first_seq\":1,\"first_ts\":\"$ts\","
        "\"last_seq\":1,\"last_ts\":\"$ts\",\"num_subjects\":1,"
        "\"consumer_count\":0}",
        NULL);
    js_match_at(__FILE__, __LINE__, j, t);
    json_decref(t);
    json_decref(j);
    JS_ACK(e.c, "q", "2", "R", 2); /* the new subject is captured */

    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.R",
             "{\"name\":\"R\",\"subjects\":[\"r.*\"],"
             "\"storage\":\"memory\"}",
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":500,\"err_code\":10052,"
             "\"description\":\"stream configuration update can not change storage type\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.NOPE", "{\"name\":\"NOPE\"}",
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":404,\"err_code\":10059,"
             "\"description\":\"stream not found\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.UPDATE.R", "{\"name\":\"X\"}",
             "{\"type\":\"" T_UPDATE "\",\"error\":{\"code\":400,\"err_code\":10056,"
             "\"description\":\"stream name in subject does not match request\"}}");
    js_down(&e);
}

Test(integ_js, info_names_list_paging)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "C", "{\"name\":\"C\",\"subjects\":[\"c.*\"]}");
    js_create(e.c, "A", "{\"name\":\"A\",\"subjects\":[\"a.*\"]}");
    js_create(e.c, "B", "{\"name\":\"B\",\"subjects\":[\"b.>\"],\"storage\":\"memory\"}");

    /* Names are sorted; pages of 1024; a subject filter matches streams whose subjects overlap. */
    static const char names_t[] = "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",";
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":3,"
             "\"offset\":0,\"limit\":1024,\"streams\":[\"A\",\"B\",\"C\"]}");
    (void)names_t;
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "{\"offset\":1}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":3,"
             "\"offset\":1,\"limit\":1024,\"streams\":[\"B\",\"C\"]}");
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "{\"offset\":5}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":3,"
             "\"offset\":3,\"limit\":1024,\"streams\":null}");
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "{\"subject\":\"b.x.y\"}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":1,"
             "\"offset\":0,\"limit\":1024,\"streams\":[\"B\"]}");
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "{\"subject\":\"a.*\"}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":1,"
             "\"offset\":0,\"limit\":1024,\"streams\":[\"A\"]}");
    JS_API_MATCH(e.c, "$JS.API.STREAM.NAMES", "{\"offset\":",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"error\":{"
                 "\"code\":400,\"err_code\":10025,\"description\":\"$prefix:invalid JSON\"},"
                 "\"total\":0,\"offset\":0,\"limit\":0,\"streams\":null}");

    /* List: full infos, sorted by name, pages of 256. */
    json_t *j = js_api(e.c, "$JS.API.STREAM.LIST", "");
    JS_MATCH(j, "{\"type\":\"io.nats.jetstream.api.v1.stream_list_response\",\"total\":3,"
                "\"offset\":0,\"limit\":256,\"streams\":[\"$any\",\"$any\",\"$any\"]}");
    static const char *const order[] = {"A", "B", "C"};
    static const char *const subjects[] = {"[\"a.*\"]", "[\"b.>\"]", "[\"c.*\"]"};
    for (size_t i = 0; i < 3; i++) {
        json_t *t = stream_tmpl(NULL, order[i], subjects[i],
                                i == 1 ? "{\"storage\":\"memory\"}" : NULL, STATE_EMPTY, NULL);
        js_match_at(__FILE__, __LINE__, json_array_get(json_object_get(j, "streams"), i), t);
        json_decref(t);
    }
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.LIST", "{\"subject\":\"c.q\",\"offset\":0}");
    JS_MATCH(j, "{\"type\":\"io.nats.jetstream.api.v1.stream_list_response\",\"total\":1,"
                "\"offset\":0,\"limit\":256,\"streams\":[\"$any\"]}");
    json_t *t = stream_tmpl(NULL, "C", "[\"c.*\"]", NULL, STATE_EMPTY, NULL);
    js_match_at(__FILE__, __LINE__, json_array_get(json_object_get(j, "streams"), 0), t);
    json_decref(t);
    json_decref(j);
    js_down(&e);
}

Test(integ_js, info_state_details)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    JS_ACK(e.c, "s.a", "1", "S", 1);
    JS_ACK(e.c, "s.b", "2", "S", 2);
    JS_ACK(e.c, "s.a", "3", "S", 3);
    JS_ACK(e.c, "s.c.d", "4", "S", 4);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":2}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"success\":true}");

    json_t *j = js_info(e.c, "S");
    json_t *t =
        stream_tmpl(T_INFO, "S", "[\"s.>\"]", NULL,
                    "{\"messages\":3,\"bytes\":\"$any\",\"first_seq\":1,\"first_ts\":\"$ts\","
                    "\"last_seq\":4,\"last_ts\":\"$ts\",\"num_subjects\":2,"
                    "\"num_deleted\":1,\"consumer_count\":0}",
                    INFO_PAGE0);
    js_match_at(__FILE__, __LINE__, j, t);
    json_decref(t);
    json_decref(j);

    /* deleted_details lists the interior deletes; subjects_filter gives per-subject counts and
     * turns on the paging keys (a page of 100000 subjects). */
    j = js_api(e.c, "$JS.API.STREAM.INFO.S",
               "{\"deleted_details\":true,\"subjects_filter\":\">\"}");
    t = stream_tmpl(T_INFO, "S", "[\"s.>\"]", NULL,
                    "{\"messages\":3,\"bytes\":\"$any\",\"first_seq\":1,\"first_ts\":\"$ts\","
                    "\"last_seq\":4,\"last_ts\":\"$ts\",\"num_subjects\":2,"
                    "\"subjects\":{\"s.a\":2,\"s.c.d\":1},\"num_deleted\":1,\"deleted\":[2],"
                    "\"consumer_count\":0}",
                    "{\"total\":2,\"offset\":0,\"limit\":100000}");
    js_match_at(__FILE__, __LINE__, j, t);
    json_decref(t);
    json_decref(j);
    j = js_api(e.c, "$JS.API.STREAM.INFO.S", "{\"subjects_filter\":\"s.c.*\"}");
    JS_MATCH(j, "{\"type\":\"" T_INFO "\",\"total\":1,\"offset\":0,\"limit\":100000,"
                "\"config\":\"$any\",\"created\":\"$ts\",\"state\":{\"messages\":3,"
                "\"bytes\":\"$any\",\"first_seq\":1,\"first_ts\":\"$ts\",\"last_seq\":4,"
                "\"last_ts\":\"$ts\",\"num_subjects\":2,\"subjects\":{\"s.c.d\":1},"
                "\"num_deleted\":1,\"consumer_count\":0}}");
    json_decref(j);
    js_down(&e);
}

/* Stored bytes as nats-server counts them: a file store counts subject + headers + payload + 30
 * (+ 4 more with headers), a memory store subject + headers + payload + 16. max_bytes limits use
 * the same numbers, so they show through to clients. */
Test(integ_js, state_bytes_file_and_memory)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "F", "{\"name\":\"F\",\"subjects\":[\"f.*\"]}");
    js_create(e.c, "M", "{\"name\":\"M\",\"subjects\":[\"m.*\"],\"storage\":\"memory\"}");
    JS_ACK(e.c, "f.a", "1", "F", 1);                          /* 3 + 1 + 30 = 34 */
    JS_HACK(e.c, "f.a", "Nats-Rollup-X: s\r\n", "x", "F", 2); /* 3 + 30 + 1 + 34 = 68 */
    JS_ACK(e.c, "m.a", "1", "M", 1);                          /* 3 + 1 + 16 = 20 */
    JS_HACK(e.c, "m.a", "Nats-Rollup-X: s\r\n", "x", "M", 2); /* 3 + 30 + 1 + 16 = 50 */
    json_t *j = js_info(e.c, "F");
    /* natsd's file store counts as its memory store (+16 per message): known difference */
    if (nd_integ_is_reference())
        cr_assert_eq(jint(j, "state.bytes"), 34 + 68, "file store bytes");
    else
        cr_assert_eq(jint(j, "state.bytes"), 20 + 50, "file store bytes");
    json_decref(j);
    j = js_info(e.c, "M");
    cr_assert_eq(jint(j, "state.bytes"), 20 + 50, "memory store bytes");
    json_decref(j);
    js_down(&e);
}

Test(integ_js, delete_stream_and_not_found)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\"}");
    JS_ACK(e.c, "S", "1", "S", 1);
    JS_EXACT(e.c, "$JS.API.STREAM.DELETE.S", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_delete_response\",\"success\":true}");
    JS_EXACT(
        e.c, "$JS.API.STREAM.DELETE.S", "",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_delete_response\",\"error\":{\"code\":404,"
        "\"err_code\":10059,\"description\":\"stream not found\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.INFO.S", "",
             "{\"type\":\"" T_INFO "\",\"error\":{\"code\":404,\"err_code\":10059,"
             "\"description\":\"stream not found\"},\"total\":0,\"offset\":0,\"limit\":0}");
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_purge_response\",\"error\":{\"code\":404,"
             "\"err_code\":10059,\"description\":\"stream not found\"},\"purged\":0}");
    JS_EXACT(
        e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"error\":{\"code\":404,"
        "\"err_code\":10059,\"description\":\"stream not found\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":1}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"error\":{"
             "\"code\":404,\"err_code\":10059,\"description\":\"stream not found\"}}");
    /* Its subject is no longer captured: a publish with headers on gets no-responders. */
    js_pub(e.c, "S", REPLY, NULL, "gone");
    ND_EXPECT(e.c, "HMSG " REPLY " 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n");
    JS_EXACT(e.c, "$JS.API.STREAM.NAMES", "",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_names_response\",\"total\":0,"
             "\"offset\":0,\"limit\":1024,\"streams\":null}");
    /* The name is free again. */
    js_create(e.c, "S", "{\"name\":\"S\",\"storage\":\"memory\"}");
    js_down(&e);
}

/* ---- the publish path -------------------------------------------------------------------------
 */

Test(integ_js, pub_ack_framing)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    /* nats-server's stream replies with an empty (not absent) reply subject: two spaces; natsd
     * writes the MSG line of a message without a reply (one space), which every client reads
     * the same way. The payload is byte for byte nats-server's. */
    js_pub(e.c, "s.a", REPLY, NULL, "one");
    if (nd_integ_is_reference())
        ND_EXPECT(e.c, "MSG " REPLY " 1  23\r\n{\"stream\":\"S\", \"seq\":1}\r\n");
    else
        ND_EXPECT(e.c, "MSG " REPLY " 1 23\r\n{\"stream\":\"S\", \"seq\":1}\r\n");
    js_down(&e);
}

Test(integ_js, pub_ack_and_dedup)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    JS_ACK(e.c, "s.a", "one", "S", 1);
    JS_HACK(e.c, "s.a", "Nats-Msg-Id: m1\r\n", "two", "S", 2);
    /* The same id again: the original's sequence and "duplicate": true (note its space too). */
    JS_HEXACT(e.c, "s.b", "Nats-Msg-Id: m1\r\n", "other",
              "{\"stream\":\"S\", \"seq\":2,\"duplicate\": true}");
    JS_HACK(e.c, "s.a", "Nats-Msg-Id: m2\r\n", "three", "S", 3);
    JS_HEXACT(e.c, "s.a", "Nats-Msg-Id: m1\r\n", "two",
              "{\"stream\":\"S\", \"seq\":2,\"duplicate\": true}");
    /* A PUB without a reply is stored too (no ack to see). */
    js_pub(e.c, "s.noreply", NULL, NULL, "quiet");
    ND_PING(e.c);
    JS_ACK(e.c, "s.a", "four", "S", 5);
    json_t *j = js_info(e.c, "S");
    cr_assert_eq(jint(j, "state.messages"), 5);
    cr_assert_eq(jint(j, "state.last_seq"), 5);
    json_decref(j);
    JS_API_MATCH(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":4}",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
                 "\"subject\":\"s.noreply\",\"seq\":4,\"data\":\"cXVpZXQ=\",\"time\":\"$ts\"}}");
    /* Duplicates are detected within the window only: a short window expires m3. */
    js_create(e.c, "W", "{\"name\":\"W\",\"subjects\":[\"w\"],\"duplicate_window\":100000000}");
    JS_HACK(e.c, "w", "Nats-Msg-Id: m3\r\n", "x", "W", 1);
    JS_HEXACT(e.c, "w", "Nats-Msg-Id: m3\r\n", "x",
              "{\"stream\":\"W\", \"seq\":1,\"duplicate\": true}");
    struct timespec ts = {0, 400 * 1000000}; /* the window is 100 ms: waiting is the point here */
    nanosleep(&ts, NULL);
    JS_HACK(e.c, "w", "Nats-Msg-Id: m3\r\n", "x", "W", 2);
    js_down(&e);
}

Test(integ_js, pub_expected_headers)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    JS_ACK(e.c, "s.a", "1", "S", 1);
    JS_HACK(e.c, "s.a", "Nats-Msg-Id: m1\r\n", "2", "S", 2);

    JS_HEXACT(e.c, "s.b", "Nats-Expected-Stream: T\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10060,\"description\":\"expected stream does "
              "not match\"},\"stream\":\"S\",\"seq\":0}");
    JS_HEXACT(e.c, "s.b", "Nats-Expected-Last-Sequence: 7\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: "
              "2\"},\"stream\":\"S\",\"seq\":0}");
    /* Per subject: s.b has no message, so its last sequence is 0. */
    JS_HEXACT(e.c, "s.b", "Nats-Expected-Last-Subject-Sequence: 7\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: "
              "0\"},\"stream\":\"S\",\"seq\":0}");
    JS_HEXACT(e.c, "s.a", "Nats-Expected-Last-Subject-Sequence: 1\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: "
              "2\"},\"stream\":\"S\",\"seq\":0}");
    JS_HEXACT(e.c, "s.b", "Nats-Expected-Last-Msg-Id: zz\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10070,\"description\":\"wrong last msg ID: "
              "m1\"},\"stream\":\"S\",\"seq\":0}");
    /* None of those was stored. */
    json_t *j = js_info(e.c, "S");
    cr_assert_eq(jint(j, "state.messages"), 2);
    json_decref(j);

    /* All of them satisfied at once. */
    JS_HACK(e.c, "s.b",
            "Nats-Expected-Stream: S\r\nNats-Expected-Last-Sequence: 2\r\n"
            "Nats-Expected-Last-Msg-Id: m1\r\nNats-Expected-Last-Subject-Sequence: 0\r\n",
            "ok", "S", 3);
    JS_HACK(e.c, "s.a", "Nats-Expected-Last-Subject-Sequence: 2\r\n", "ok", "S", 4);
    /* The last msg id is of the last message: 4 had none, so "m1" no longer matches. */
    JS_HEXACT(e.c, "s.b", "Nats-Expected-Last-Msg-Id: m1\r\n", "x",
              "{\"error\":{\"code\":400,\"err_code\":10070,\"description\":\"wrong last msg ID: "
              "\"},\"stream\":\"S\",\"seq\":0}");
    js_down(&e);
}

/* The KV pattern: max_msgs_per_subject 1 and create-only-if-absent with
 * Nats-Expected-Last-Subject-Sequence: 0, then compare-and-set on the revision. */
Test(integ_js, pub_kv_pattern)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "KV_b",
              "{\"name\":\"KV_b\",\"subjects\":[\"$KV.b.>\"],\"max_msgs_per_subject\":1,"
              "\"allow_rollup_hdrs\":true,\"deny_delete\":true,\"allow_direct\":true}");
    JS_HACK(e.c, "$KV.b.k", "Nats-Expected-Last-Subject-Sequence: 0\r\n", "v1", "KV_b", 1);
    JS_HEXACT(e.c, "$KV.b.k", "Nats-Expected-Last-Subject-Sequence: 0\r\n", "v1",
              "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: "
              "1\"},\"stream\":\"KV_b\",\"seq\":0}");
    JS_HACK(e.c, "$KV.b.j", "Nats-Expected-Last-Subject-Sequence: 0\r\n", "w1", "KV_b", 2);
    JS_HACK(e.c, "$KV.b.k", "Nats-Expected-Last-Subject-Sequence: 1\r\n", "v2", "KV_b", 3);
    JS_HEXACT(e.c, "$KV.b.k", "Nats-Expected-Last-Subject-Sequence: 1\r\n", "v3",
              "{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: "
              "3\"},\"stream\":\"KV_b\",\"seq\":0}");
    /* One message per key is kept. */
    json_t *j = js_api(e.c, "$JS.API.STREAM.INFO.KV_b", "{\"subjects_filter\":\">\"}");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":2,\"bytes\":\"$any\",\"first_seq\":2,\"first_ts\":\"$ts\","
             "\"last_seq\":3,\"last_ts\":\"$ts\",\"num_subjects\":2,"
             "\"subjects\":{\"$KV.b.k\":1,\"$KV.b.j\":1},\"consumer_count\":0}");
    json_decref(j);
    JS_API_MATCH(e.c, "$JS.API.STREAM.MSG.GET.KV_b", "{\"last_by_subj\":\"$KV.b.k\"}",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
                 "\"subject\":\"$KV.b.k\",\"seq\":3,\"hdrs\":\"$any\",\"data\":\"djI=\","
                 "\"time\":\"$ts\"}}");
    js_down(&e);
}

Test(integ_js, pub_rollup)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.*\"]}");
    static const char not_permitted[] =
        "{\"error\":{\"code\":500,\"err_code\":10111,\"description\":\"rollup not permitted\"},"
        "\"stream\":\"S\",\"seq\":0}";
    JS_HEXACT(e.c, "s.a", "Nats-Rollup: sub\r\n", "x", not_permitted);
    JS_HEXACT(e.c, "s.a", "Nats-Rollup: all\r\n", "x", not_permitted);
    /* The permission is checked before the value. */
    JS_HEXACT(e.c, "s.a", "Nats-Rollup: bogus\r\n", "x", not_permitted);

    js_create(e.c, "R", "{\"name\":\"R\",\"subjects\":[\"r.*\"],\"allow_rollup_hdrs\":true}");
    JS_ACK(e.c, "r.a", "1", "R", 1);
    JS_ACK(e.c, "r.a", "2", "R", 2);
    JS_ACK(e.c, "r.b", "3", "R", 3);
    JS_HACK(e.c, "r.a", "Nats-Rollup: sub\r\n", "4", "R", 4);
    json_t *j = js_api(e.c, "$JS.API.STREAM.INFO.R", "{\"subjects_filter\":\">\"}");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":2,\"bytes\":\"$any\",\"first_seq\":3,\"first_ts\":\"$ts\","
             "\"last_seq\":4,\"last_ts\":\"$ts\",\"num_subjects\":2,"
             "\"subjects\":{\"r.a\":1,\"r.b\":1},\"consumer_count\":0}");
    json_decref(j);

    /* An invalid value: 2.9.10 (and 2.10) store nothing and send no reply at all; 2.11 replies
     * with the error, which natsd does (a client would otherwise wait for its timeout). */
    if (nd_integ_is_reference()) {
        js_pub(e.c, "r.a", REPLY, "Nats-Rollup: bogus\r\n", "x");
        JS_EXPECT_NOTHING(e.c);
    } else {
        JS_HEXACT(e.c, "r.a", "Nats-Rollup: bogus\r\n", "x",
                  "{\"error\":{\"code\":500,\"err_code\":10111,\"description\":\"rollup value "
                  "invalid: \\\"bogus\\\"\"},\"stream\":\"R\",\"seq\":0}");
    }
    JS_HACK(e.c, "r.b", "Nats-Rollup: all\r\n", "5", "R", 5);
    j = js_info(e.c, "R");
    cr_assert_eq(jint(j, "state.messages"), 1);
    cr_assert_eq(jint(j, "state.first_seq"), 5);
    json_decref(j);
    js_down(&e);
}

Test(integ_js, pub_limits)
{
    js_env_t e;
    js_up(&e);
    /* max_msg_size counts headers and payload. */
    js_create(e.c, "M", "{\"name\":\"M\",\"subjects\":[\"m.*\"],\"max_msg_size\":10}");
    static const char too_big[] =
        "{\"error\":{\"code\":400,\"err_code\":10054,\"description\":\"message size exceeds "
        "maximum allowed\"},\"stream\":\"M\",\"seq\":0}";
    JS_EXACT(e.c, "m.a", "12345678901", too_big);
    JS_ACK(e.c, "m.a", "1234567890", "M", 1);
    JS_HEXACT(e.c, "m.a", "A: 1\r\n", "12345", too_big);

    /* discard new: each limit has its own text. */
    js_create(e.c, "N",
              "{\"name\":\"N\",\"subjects\":[\"n.*\"],\"max_msgs\":2,\"discard\":\"new\"}");
    JS_ACK(e.c, "n.a", "1", "N", 1);
    JS_ACK(e.c, "n.b", "2", "N", 2);
    JS_EXACT(e.c, "n.a", "3",
             "{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum messages "
             "exceeded\"},\"stream\":\"N\",\"seq\":0}");
    js_create(e.c, "B",
              "{\"name\":\"B\",\"subjects\":[\"b.*\"],\"max_bytes\":100,\"discard\":\"new\"}");
    JS_ACK(e.c, "b.a", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "B", 1);
    JS_EXACT(e.c, "b.a", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
             "{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum bytes "
             "exceeded\"},\"stream\":\"B\",\"seq\":0}");
    js_create(e.c, "P",
              "{\"name\":\"P\",\"subjects\":[\"p.*\"],\"max_msgs_per_subject\":1,"
              "\"discard\":\"new\",\"discard_new_per_subject\":true}");
    JS_ACK(e.c, "p.a", "1", "P", 1);
    JS_EXACT(e.c, "p.a", "2",
             "{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum messages per "
             "subject exceeded\"},\"stream\":\"P\",\"seq\":0}");
    JS_ACK(e.c, "p.b", "3", "P", 2);

    /* discard old (the default) drops from the front instead. */
    js_create(e.c, "O", "{\"name\":\"O\",\"subjects\":[\"o.*\"],\"max_msgs\":2}");
    JS_ACK(e.c, "o.a", "1", "O", 1);
    JS_ACK(e.c, "o.a", "2", "O", 2);
    JS_ACK(e.c, "o.a", "3", "O", 3);
    json_t *j = js_info(e.c, "O");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":2,\"bytes\":\"$any\",\"first_seq\":2,\"first_ts\":\"$ts\","
             "\"last_seq\":3,\"last_ts\":\"$ts\",\"num_subjects\":1,\"consumer_count\":0}");
    json_decref(j);
    js_down(&e);
}

/* ---- messages: get, delete, purge, direct get ------------------------------------------------ */

Test(integ_js, msg_get)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    JS_ACK(e.c, "s.a", "one", "S", 1);
    JS_HACK(e.c, "s.a", "Nats-Msg-Id: m1\r\n", "dup", "S", 2);
    JS_ACK(e.c, "s.b.c", "1", "S", 3);
    static const char get_t[] = "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",";
    (void)get_t;
    JS_API_MATCH(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1}",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
                 "\"subject\":\"s.a\",\"seq\":1,\"data\":\"b25l\",\"time\":\"$ts\"}}");
    /* hdrs and data are base64 of the stored bytes. */
    JS_API_MATCH(
        e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":2}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
        "\"subject\":\"s.a\",\"seq\":2,\"hdrs\":\"TkFUUy8xLjANCk5hdHMtTXNnLUlkOiBtMQ0KDQo=\","
        "\"data\":\"ZHVw\",\"time\":\"$ts\"}}");
    JS_API_MATCH(
        e.c, "$JS.API.STREAM.MSG.GET.S", "{\"last_by_subj\":\"s.a\"}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
        "\"subject\":\"s.a\",\"seq\":2,\"hdrs\":\"$any\",\"data\":\"ZHVw\",\"time\":\"$ts\"}}");
    JS_API_MATCH(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"last_by_subj\":\"s.>\"}",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
                 "\"subject\":\"s.b.c\",\"seq\":3,\"data\":\"MQ==\",\"time\":\"$ts\"}}");
    JS_API_MATCH(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"next_by_subj\":\"s.b.*\",\"seq\":1}",
                 "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"message\":{"
                 "\"subject\":\"s.b.c\",\"seq\":3,\"data\":\"MQ==\",\"time\":\"$ts\"}}");
    static const char not_found[] =
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"error\":{\"code\":404,"
        "\"err_code\":10037,\"description\":\"no message found\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":100}", not_found);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"last_by_subj\":\"s.zz\"}", not_found);
    static const char bad[] =
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"error\":{\"code\":400,"
        "\"err_code\":10003,\"description\":\"bad request\"}}";
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "", bad);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "{}", bad);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":1,\"last_by_subj\":\"s.a\"}", bad);
    js_down(&e);
}

Test(integ_js, msg_delete)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    for (int i = 1; i <= 4; i++)
        JS_ACK(e.c, "s.a", "x", "S", i);
    static const char ok[] =
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"success\":true}";
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":2}", ok);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":3,\"no_erase\":true}", ok);
    /* Three different errors for a missing message, by where it is: an interior one already
     * deleted, one below first_seq (below), one beyond last_seq. */
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":2}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"error\":{"
             "\"code\":400,\"err_code\":10043,\"description\":\"sequence 2 not found\"}}");
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":100}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"error\":{"
             "\"code\":500,\"err_code\":10057,\"description\":\"stream store EOF\"}}");
    JS_EXACT(
        e.c, "$JS.API.STREAM.MSG.GET.S", "{\"seq\":2}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_get_response\",\"error\":{\"code\":404,"
        "\"err_code\":10037,\"description\":\"no message found\"}}");
    json_t *j = js_api(e.c, "$JS.API.STREAM.INFO.S", "{\"deleted_details\":true}");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":2,\"bytes\":\"$any\",\"first_seq\":1,\"first_ts\":\"$ts\","
             "\"last_seq\":4,\"last_ts\":\"$ts\",\"num_subjects\":1,\"num_deleted\":2,"
             "\"deleted\":[2,3],\"consumer_count\":0}");
    json_decref(j);
    /* Deleting the first moves first_seq. */
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":1}", ok);
    j = js_info(e.c, "S");
    cr_assert_eq(jint(j, "state.first_seq"), 4);
    cr_assert_eq(jint(j, "state.messages"), 1);
    json_decref(j);
    JS_EXACT(e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":1}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"error\":{"
             "\"code\":500,\"err_code\":10057,\"description\":\"no message found\"}}");
    js_down(&e);
}

Test(integ_js, purge)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.*\"]}");
    /* 1 a, 2 b, 3 c, 4 a, 5 b, 6 c, 7 a */
    static const char *const subj[] = {"s.a", "s.b", "s.c"};
    for (int i = 0; i < 7; i++)
        JS_ACK(e.c, subj[i % 3], "x", "S", i + 1);
#define PURGED(n)                                                                                  \
    "{\"type\":\"io.nats.jetstream.api.v1.stream_purge_response\",\"success\":true,\"purged\":" #n \
    "}"
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"filter\":\"s.c\"}", PURGED(2));
    /* keep with a filter: the newest n of that subject stay. */
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"filter\":\"s.a\",\"keep\":1}", PURGED(2));
    /* seq: everything below it. */
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"seq\":5}", PURGED(1));
    json_t *j = js_info(e.c, "S");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":2,\"bytes\":\"$any\",\"first_seq\":5,\"first_ts\":\"$ts\","
             "\"last_seq\":7,\"last_ts\":\"$ts\",\"num_subjects\":2,\"num_deleted\":1,"
             "\"consumer_count\":0}");
    json_decref(j);
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"seq\":3}", PURGED(0));
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"keep\":1,\"seq\":1}",
             "{\"type\":\"io.nats.jetstream.api.v1.stream_purge_response\",\"error\":{\"code\":400,"
             "\"err_code\":10003,\"description\":\"bad request\"},\"purged\":0}");
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "{\"keep\":1}", PURGED(1));
    JS_EXACT(e.c, "$JS.API.STREAM.PURGE.S", "", PURGED(1));
    /* A purge keeps the sequence: the next message continues it. */
    j = js_info(e.c, "S");
    JS_MATCH(jget(j, "state"),
             "{\"messages\":0,\"bytes\":0,\"first_seq\":8,\"first_ts\":\"0001-01-01T00:00:00Z\","
             "\"last_seq\":7,\"last_ts\":\"$ts\",\"consumer_count\":0}");
    json_decref(j);
    JS_ACK(e.c, "s.a", "x", "S", 8);
#undef PURGED
    js_down(&e);
}

/* Checks a direct-get reply: HMSG on REPLY whose headers are exactly `stored` (the stored headers'
 * lines, may be "") followed by Nats-Stream/Subject/Sequence/Time-Stamp, and the payload. */
static void
direct_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
          const char *stored, const char *stream, const char *msubj, int seq, const char *data)
{
    js_msg_t m = js_req_at(file, line, c, subj, NULL, body);
    if (m.hdr == NULL)
        jfail(file, line, "direct get: expected an HMSG, got %s: %s", m.line, m.data);
    char want[1024];
    int n = snprintf(want, sizeof want,
                     "NATS/1.0\r\n%sNats-Stream: %s\r\nNats-Subject: %s\r\nNats-Sequence: %d\r\n"
                     "Nats-Time-Stamp: ",
                     stored, stream, msubj, seq);
    char *esc = nd_integ_escape(m.hdr, m.hdr_len, 600);
    if (strncmp(m.hdr, want, (size_t)n) != 0)
        jfail(file, line, "direct get headers: \"%s\"\n  expected to start with: \"%s\"", esc,
              nd_integ_escape(want, (size_t)n, 600));
    const char *tsv = m.hdr + n;
    const char *end = strstr(tsv, "\r\n");
    char ts[64] = "";
    if (end != NULL && (size_t)(end - tsv) < sizeof ts)
        memcpy(ts, tsv, (size_t)(end - tsv));
    if (!is_rfc3339(ts) || strcmp(end, "\r\n\r\n") != 0)
        jfail(file, line, "direct get: bad time stamp or trailer in \"%s\"", esc);
    if (strcmp(m.data, data) != 0)
        jfail(file, line, "direct get payload \"%s\", expected \"%s\"", m.data, data);
    free(esc);
    js_msg_free(&m);
}
#define DIRECT(c, subj, body, stored, stream, msubj, seq, data)                                    \
    direct_at(__FILE__, __LINE__, (c), (subj), (body), (stored), (stream), (msubj), (seq), (data))

Test(integ_js, direct_get)
{
    js_env_t e;
    js_up(&e);
    js_create(e.c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"allow_direct\":true}");
    JS_ACK(e.c, "s.a", "one", "S", 1);
    JS_HACK(e.c, "s.a", "Nats-Msg-Id: m1\r\n", "dup", "S", 2);
    JS_ACK(e.c, "s.c", "y", "S", 3);

    DIRECT(e.c, "$JS.API.DIRECT.GET.S", "{\"seq\":1}", "", "S", "s.a", 1, "one");
    DIRECT(e.c, "$JS.API.DIRECT.GET.S", "{\"seq\":2}", "Nats-Msg-Id: m1\r\n", "S", "s.a", 2, "dup");
    DIRECT(e.c, "$JS.API.DIRECT.GET.S", "{\"last_by_subj\":\"s.a\"}", "Nats-Msg-Id: m1\r\n", "S",
           "s.a", 2, "dup");
    DIRECT(e.c, "$JS.API.DIRECT.GET.S", "{\"next_by_subj\":\"s.c\",\"seq\":1}", "", "S", "s.c", 3,
           "y");
    /* The subject form: last message for the subject, empty body. */
    DIRECT(e.c, "$JS.API.DIRECT.GET.S.s.c", "", "", "S", "s.c", 3, "y");
    /* Status replies (two spaces in the line: see the framing note). */
    js_msg_t m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S", NULL, "{\"seq\":100}");
    cr_assert(m.hdr != NULL && strcmp(m.hdr, "NATS/1.0 404 Message Not Found\r\n\r\n") == 0 &&
                  m.data_len == 0,
              "%s", m.line);
    js_msg_free(&m);
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S", NULL, "");
    cr_assert(m.hdr != NULL && strcmp(m.hdr, "NATS/1.0 408 Empty Request\r\n\r\n") == 0 &&
                  m.data_len == 0,
              "%s", m.line);
    js_msg_free(&m);
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.S.s.zz", NULL, "");
    cr_assert(m.hdr != NULL && strcmp(m.hdr, "NATS/1.0 404 Message Not Found\r\n\r\n") == 0, "%s",
              m.line);
    js_msg_free(&m);

    /* Without allow_direct nothing answers (the $JS.API.> import swallows it: no 503 either). */
    js_create(e.c, "N", "{\"name\":\"N\",\"subjects\":[\"n\"]}");
    JS_ACK(e.c, "n", "x", "N", 1);
    js_pub(e.c, "$JS.API.DIRECT.GET.N", REPLY, NULL, "{\"seq\":1}");
    JS_EXPECT_NOTHING(e.c);
    js_down(&e);
}

/* The headers of a direct-get reply must contain each of want[] (NULL-terminated). */
static void
expect_hdrs(const js_msg_t *m, const char *const *want)
{
    cr_assert(m->hdr != NULL, "no headers: %s", m->line);
    for (size_t i = 0; want[i] != NULL; i++)
        cr_assert(strstr(m->hdr, want[i]) != NULL, "missing \"%s\" in %s", want[i], m->hdr);
}

/* 2.11's batched direct get, multi_last and start_time (2.9.10 has none of them). */
Test(integ_js, direct_get_batch_multi_last)
{
    if (nd_integ_is_reference())
        return;
    js_env_t e;
    js_up(&e);
    js_create(e.c, "K", "{\"name\":\"K\",\"subjects\":[\"k.>\"],\"allow_direct\":true}");
    JS_ACK(e.c, "k.a", "a1", "K", 1);
    JS_ACK(e.c, "k.b", "b1", "K", 2);
    JS_ACK(e.c, "k.a", "a2", "K", 3);
    JS_ACK(e.c, "k.c", "c1", "K", 4);

    /* batch of 2 from seq 2: messages 2 and 3, then the end of batch with what is left */
    js_msg_t m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                           "{\"seq\":2,\"batch\":2}");
    expect_hdrs(&m, (const char *const[]){"Nats-Sequence: 2\r\n", "Nats-Num-Pending: 3\r\n",
                                          "Nats-Last-Sequence: 0\r\n", NULL});
    cr_assert_str_eq(m.data, "b1");
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    expect_hdrs(&m, (const char *const[]){"Nats-Sequence: 3\r\n", "Nats-Num-Pending: 2\r\n",
                                          "Nats-Last-Sequence: 2\r\n", NULL});
    cr_assert_str_eq(m.data, "a2");
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    cr_assert(m.hdr != NULL &&
                  strcmp(m.hdr, "NATS/1.0 204 EOB\r\nNats-Num-Pending: 1\r\nNats-Last-Sequence: "
                                "3\r\n\r\n") == 0,
              "%s", m.hdr ? m.hdr : m.line);
    js_msg_free(&m);

    /* multi_last: the last of k.a and k.c, in stream order, then EOB with the up-to sequence */
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                  "{\"multi_last\":[\"k.a\",\"k.c\"]}");
    expect_hdrs(&m, (const char *const[]){"Nats-Subject: k.a\r\n", "Nats-Sequence: 3\r\n",
                                          "Nats-Num-Pending: 1\r\n", NULL});
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    expect_hdrs(&m, (const char *const[]){"Nats-Subject: k.c\r\n", "Nats-Sequence: 4\r\n",
                                          "Nats-Num-Pending: 0\r\n", "Nats-Last-Sequence: 3\r\n",
                                          NULL});
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    cr_assert(m.hdr != NULL && strstr(m.hdr, "NATS/1.0 204 EOB\r\n") == m.hdr &&
                  strstr(m.hdr, "Nats-UpTo-Sequence: 4\r\n") != NULL,
              "%s", m.hdr ? m.hdr : m.line);
    js_msg_free(&m);

    /* multi_last as of sequence 2 (up_to_seq): k.a is message 1 then, k.b message 2 */
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                  "{\"multi_last\":[\"k.*\"],\"up_to_seq\":2}");
    expect_hdrs(&m, (const char *const[]){"Nats-Sequence: 1\r\n", NULL});
    cr_assert_str_eq(m.data, "a1");
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    expect_hdrs(&m, (const char *const[]){"Nats-Sequence: 2\r\n", NULL});
    js_msg_free(&m);
    m = js_read_msg_at(__FILE__, __LINE__, e.c);
    cr_assert(m.hdr != NULL && strstr(m.hdr, "Nats-UpTo-Sequence: 2\r\n") != NULL, "%s",
              m.hdr ? m.hdr : m.line);
    js_msg_free(&m);

    /* nothing matches: 404 No Results */
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                  "{\"multi_last\":[\"zz\"]}");
    cr_assert(m.hdr != NULL && strcmp(m.hdr, "NATS/1.0 404 No Results\r\n\r\n") == 0, "%s",
              m.hdr ? m.hdr : m.line);
    js_msg_free(&m);

    /* start_time before everything: the first message */
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                  "{\"start_time\":\"2000-01-01T00:00:00Z\"}");
    expect_hdrs(&m, (const char *const[]){"Nats-Sequence: 1\r\n", NULL});
    js_msg_free(&m);
    /* start_time after everything: not found */
    m = js_req_at(__FILE__, __LINE__, e.c, "$JS.API.DIRECT.GET.K", NULL,
                  "{\"start_time\":\"2999-01-01T00:00:00Z\"}");
    cr_assert(m.hdr != NULL && strcmp(m.hdr, "NATS/1.0 404 Message Not Found\r\n\r\n") == 0,
              "%s", m.hdr ? m.hdr : m.line);
    js_msg_free(&m);
    js_down(&e);
}

/* ---- restart after a crash --------------------------------------------------------------------
 */

static char *
b64(const char *s)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s);
    char *o = malloc(4 * ((n + 2) / 3) + 1), *p = o;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)u[i] << 16 | (i + 1 < n ? (unsigned)u[i + 1] << 8 : 0) |
                     (i + 2 < n ? u[i + 2] : 0);
        *p++ = tab[v >> 18 & 63];
        *p++ = tab[v >> 12 & 63];
        *p++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *p++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *p = '\0';
    return o;
}

/* After a restart: the stream has exactly the messages 1..last_seq, no gaps, last_seq covers
 * every acknowledged one, and message n carries the payload "m<n>" (so they are in order).
 * Returns last_seq. */
static long long
verify_stream(nd_integ_conn_t *c, long long acked)
{
    json_t *j = js_info(c, "C");
    long long last = jint(j, "state.last_seq"), msgs = jint(j, "state.messages");
    char *d = json_dumps(jget(j, "state"), JSON_COMPACT);
    cr_assert(last >= acked, "acknowledged up to %lld but the stream ends at %lld: %s", acked, last,
              d);
    cr_assert(msgs == last && (last == 0 || jint(j, "state.first_seq") == 1) &&
                  jget(j, "state.num_deleted") == NULL,
              "gaps after restart: %s", d);
    free(d);
    json_decref(j);
    for (long long s = 1; s <= last; s++) {
        char body[64], want[64];
        snprintf(body, sizeof body, "{\"seq\":%lld}", s);
        snprintf(want, sizeof want, "m%lld", s);
        json_t *g = js_api(c, "$JS.API.STREAM.MSG.GET.C", body);
        const char *data = json_string_value(jget(g, "message.data"));
        char *w = b64(want);
        cr_assert(data != NULL && strcmp(data, w) == 0 && jint(g, "message.seq") == s,
                  "message %lld after restart: %s (expected data %s)", s,
                  json_dumps(g, JSON_COMPACT), w);
        free(w);
        json_decref(g);
    }
    return last;
}

/* Publishes (up to 64 in flight, each acknowledged in order) until `kill_after` acks came, then
 * SIGKILLs the server with publishes still in flight, and collects the acks that had been sent
 * before it died. Returns the highest acknowledged sequence. */
static long long
publish_and_kill(nd_integ_server_t *srv, nd_integ_conn_t *c, long long base, int kill_after)
{
    long long sent = 0, got = 0;
    char buf[128], want[64];
    while (got < kill_after) {
        while (sent - got < 64) {
            char payload[32];
            int pl = snprintf(payload, sizeof payload, "m%lld", base + sent + 1);
            int n = snprintf(buf, sizeof buf, "PUB c.x " REPLY " %d\r\n%s\r\n", pl, payload);
            nd_integ_send(c, buf, (size_t)n);
            sent++;
        }
        js_msg_t m = js_read_msg_at(__FILE__, __LINE__, c);
        snprintf(want, sizeof want, "{\"stream\":\"C\", \"seq\":%lld}", base + got + 1);
        cr_assert_str_eq(m.data, want, "acks come in order");
        js_msg_free(&m);
        got++;
    }
    nd_integ_server_kill(srv);
    /* Acks already on the wire count as acknowledged; a frame cut by the kill does not. */
    for (char *f; (f = nd_integ_read_frame(c)) != NULL; free(f)) {
        snprintf(want, sizeof want, "{\"stream\":\"C\", \"seq\":%lld}\r\n", base + got + 1);
        size_t fl = strlen(f), wl = strlen(want);
        if (strncmp(f, "MSG " REPLY " ", 5 + strlen(REPLY)) != 0 || fl < wl ||
            strcmp(f + fl - wl, want) != 0)
            break;
        got++;
    }
    return base + got;
}

/* SIGKILL while publishing, three times, with `sync_interval: always` (the reference 2.9.10 does
 * not know that option: it runs with its default policy, which already writes before it acks).
 * After each restart on the same store every acknowledged message is there, in order, no gaps,
 * and publishing continues from the last stored sequence. */
/* Publishes, SIGKILLs, restarts and checks, three rounds. always: with sync_interval: always
 * (natsd only; 2.9.10 has no sync_interval). Either way an acknowledged message has at least
 * reached write(), which is what survives the kill of the process. */
static void
sigkill_rounds(bool always)
{
    nd_integ_conf_t conf = {0};
    char store[256];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\"%s }\n", store,
                       always ? ", sync_interval: always" : "") > 0);
    nd_integ_conf_write(&conf, text);
    free(text);
    const char *args[] = {"-c", conf.path, NULL};

    nd_integ_server_t *srv = nd_integ_server_start(0, args);
    nd_integ_conn_t *c = js_connect(srv, NULL);
    js_create(c, "C", "{\"name\":\"C\",\"subjects\":[\"c.>\"]}");
    long long last = 0;
    for (int round = 0; round < 3; round++) {
        long long acked = publish_and_kill(srv, c, last, 700 + 300 * round);
        nd_integ_conn_close(c);
        srv = nd_integ_server_start(0, args);
        c = js_connect(srv, NULL);
        last = verify_stream(c, acked);
        cr_log_info("round %d: %lld acknowledged, %lld stored after the restart", round, acked,
                    last);
    }
    /* The stream takes new messages after the last restart, continuing the sequence. */
    JS_ACK(c, "c.y", "after", "C", last + 1);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &conf);
}

Test(integ_js, restart_after_sigkill, .timeout = 400)
{
    sigkill_rounds(false);
}

Test(integ_js, restart_after_sigkill_sync_always, .timeout = 400)
{
    if (nd_integ_is_reference())
        return; /* sync_interval came with 2.10 */
    sigkill_rounds(true);
}

/* ---- advisories ------------------------------------------------------------------------------
 */

/* A stream create publishes $JS.EVENT.ADVISORY.STREAM.CREATED.<s> and, for every API response,
 * the audit advisory $JS.EVENT.ADVISORY.API with the request and the response (both servers). */
Test(integ_js, advisories_stream_action_and_api_audit)
{
    js_env_t e;
    js_up(&e);
    ND_SEND(e.c, "SUB $JS.EVENT.ADVISORY.> 77\r\n");
    ND_PING(e.c);
    js_pub(e.c, "$JS.API.STREAM.CREATE.AD", REPLY, NULL, "{\"name\":\"AD\",\"subjects\":[\"ad\"]}");
    bool reply = false, created = false, audit = false;
    for (int i = 0; i < 3; i++) {
        js_msg_t m = js_read_msg_at(__FILE__, __LINE__, e.c);
        json_t *j = json_loads(m.data, 0, NULL);
        cr_assert_not_null(j, "not JSON: %s", m.data);
        const char *type = json_string_value(json_object_get(j, "type"));
        cr_assert_not_null(type, "%s", m.data);
        if (strcmp(m.subject, REPLY) == 0) {
            cr_assert_str_eq(type, "io.nats.jetstream.api.v1.stream_create_response");
            reply = true;
        } else if (strcmp(m.subject, "$JS.EVENT.ADVISORY.STREAM.CREATED.AD") == 0) {
            cr_assert_str_eq(type, "io.nats.jetstream.advisory.v1.stream_action");
            cr_assert_str_eq(json_string_value(json_object_get(j, "stream")), "AD");
            cr_assert_str_eq(json_string_value(json_object_get(j, "action")), "create");
            cr_assert_eq(json_string_length(json_object_get(j, "id")), 22);
            created = true;
        } else if (strcmp(m.subject, "$JS.EVENT.ADVISORY.API") == 0) {
            cr_assert_str_eq(type, "io.nats.jetstream.advisory.v1.api_audit");
            cr_assert_str_eq(json_string_value(json_object_get(j, "subject")),
                             "$JS.API.STREAM.CREATE.AD");
            cr_assert_str_eq(json_string_value(json_object_get(j, "request")),
                             "{\"name\":\"AD\",\"subjects\":[\"ad\"]}");
            const char *resp = json_string_value(json_object_get(j, "response"));
            cr_assert(resp != NULL && strstr(resp, "stream_create_response") != NULL, "%s",
                      m.data);
            cr_assert(json_is_object(json_object_get(j, "client")), "%s", m.data);
            audit = true;
        } else {
            cr_assert_fail("unexpected message on %s: %s", m.subject, m.data);
        }
        json_decref(j);
        js_msg_free(&m);
    }
    cr_assert(reply && created && audit);
    js_down(&e);
}
