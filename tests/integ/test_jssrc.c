/* Integration tests of stream mirrors and sources on one server (src/js/stream_source.c): a
 * mirror catching up and then following live (keeping the origin's sequences, gaps included),
 * sources with a filter and with subject transforms, two sources into one stream, the
 * Nats-Stream-Source header, a restart that resumes every origin without gaps or duplicates,
 * the mirror/sources info in STREAM.INFO, and the `external.api` prefix of a JetStream domain.
 *
 * Also run against the reference nats-server 2.9.10 (integ.jssrc.reference). Where 2.9.10 and
 * 2.11 differ, natsd follows 2.11 and the test asks nd_integ_is_reference():
 * - Nats-Stream-Source: 2.9.10 writes "<name> <seq>", 2.10+ "<name> <seq> <filter> <dest>" (">"
 *   for none): the tests check the first two fields on both and the rest on natsd.
 * - Sources' subject_transforms and the info's filter_subject/subject_transforms are 2.10+.
 * Messages are read back with direct get (allow_direct), so the stored headers come as they are.
 * Mirrors and sources are asynchronous: tests poll STREAM.INFO until the expected count, with a
 * generous deadline.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jsproto.h"

TestSuite(integ_jssrc, .fini = nd_integ_cleanup, .timeout = 120);

#define API "_R.1"

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static json_t *
api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    return js_request_json_at(file, line, c, subj, API, body);
}
#define api(c, subj, body) api_at(__FILE__, __LINE__, (c), (subj), (body))

static void
stream_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *cfg)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = api_at(file, line, c, subj, cfg);
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "stream %s: %s", name, d);
    }
    json_decref(j);
}
#define stream(c, name, cfg) stream_at(__FILE__, __LINE__, (c), (name), (cfg))

static json_t *
info_at(const char *file, int line, nd_integ_conn_t *c, const char *name)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
    return api_at(file, line, c, subj, "");
}
#define info(c, name) info_at(__FILE__, __LINE__, (c), (name))

/* Polls the stream's info until state.messages is n (10 s at most). Returns: the info. */
static json_t *
wait_msgs_at(const char *file, int line, nd_integ_conn_t *c, const char *name, long long n)
{
    json_t *j = NULL;
    for (int i = 0; i < 200; i++) {
        if (j != NULL)
            json_decref(j);
        j = info_at(file, line, c, name);
        if (jint_at(file, line, j, "state.messages") == n)
            return j;
        sleep_ms(50);
    }
    char *d = json_dumps(j, JSON_COMPACT);
    jfail(file, line, "stream %s never had %lld messages: %s", name, n, d);
}
#define wait_msgs(c, name, n) wait_msgs_at(__FILE__, __LINE__, (c), (name), (n))

/* Publishes with an acknowledgement that must name stream and seq. */
static void
pub_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *data,
       const char *stream, long long seq)
{
    js_msg_t m = js_request_at(file, line, c, subj, API, data);
    json_t *j = json_loads(m.data, 0, NULL);
    const char *s = json_string_value(json_object_get(j, "stream"));
    if (j == NULL || s == NULL || strcmp(s, stream) != 0 ||
        json_integer_value(json_object_get(j, "seq")) != seq)
        jfail(file, line, "publish on %s: expected %s/%lld, got %s", subj, stream, seq, m.data);
    json_decref(j);
    js_msg_free(&m);
}
#define pub(c, subj, data, stream, seq)                                                            \
    pub_at(__FILE__, __LINE__, (c), (subj), (data), (stream), (seq))

/* Direct get of seq from stream: the message (HMSG with the Nats-* headers). Returns: owned. */
static js_msg_t
dget_at(const char *file, int line, nd_integ_conn_t *c, const char *stream, long long seq)
{
    char subj[256], body[64];
    snprintf(subj, sizeof subj, "$JS.API.DIRECT.GET.%s", stream);
    snprintf(body, sizeof body, "{\"seq\":%lld}", seq);
    js_msg_t m = js_request_at(file, line, c, subj, API, body);
    if (m.hdr == NULL || strstr(m.hdr, "NATS/1.0 40") == m.hdr)
        jfail(file, line, "direct get %s %lld: %s", stream, seq, m.hdr ? m.hdr : m.data);
    return m;
}

/* The value of header key in m (malloc'd), or NULL. */
static char *
hdr_val(const js_msg_t *m, const char *key)
{
    if (m->hdr == NULL)
        return NULL;
    char k[128];
    snprintf(k, sizeof k, "\r\n%s:", key);
    const char *p = strstr(m->hdr, k);
    if (p == NULL)
        return NULL;
    p += strlen(k);
    while (*p == ' ')
        p++;
    const char *e = strstr(p, "\r\n");
    return strndup(p, (size_t)(e - p));
}

/* Checks the message at seq of stream: its subject (Nats-Subject), data and, when src is set,
 * its Nats-Stream-Source: the reference's "<name> <seq>" must be src's first two fields; natsd
 * must have src whole. */
static void
check_msg_at(const char *file, int line, nd_integ_conn_t *c, const char *stream, long long seq,
             const char *subject, const char *data, const char *src)
{
    js_msg_t m = dget_at(file, line, c, stream, seq);
    char *subj = hdr_val(&m, "Nats-Subject");
    if (subj == NULL || strcmp(subj, subject) != 0 || strcmp(m.data, data) != 0)
        jfail(file, line, "%s %lld: expected %s \"%s\", got %s \"%s\" (%s)", stream, seq, subject,
              data, subj ? subj : "(none)", m.data, m.hdr);
    char *got = hdr_val(&m, "Nats-Stream-Source");
    if (src != NULL) {
        bool ok = got != NULL;
        if (ok && nd_integ_is_reference()) {
            /* "<name> <seq>" of src */
            const char *sp = strchr(src, ' ');
            const char *sp2 = sp != NULL ? strchr(sp + 1, ' ') : NULL;
            size_t n = sp2 != NULL ? (size_t)(sp2 - src) : strlen(src);
            ok = strlen(got) == n && strncmp(got, src, n) == 0;
        } else if (ok) {
            ok = strcmp(got, src) == 0;
        }
        if (!ok)
            jfail(file, line, "%s %lld: Nats-Stream-Source \"%s\", expected \"%s\"", stream, seq,
                  got ? got : "(none)", src);
    } else if (got != NULL) {
        jfail(file, line, "%s %lld: unexpected Nats-Stream-Source \"%s\"", stream, seq, got);
    }
    free(got);
    free(subj);
    js_msg_free(&m);
}
#define check_msg(c, stream, seq, subject, data, src)                                              \
    check_msg_at(__FILE__, __LINE__, (c), (stream), (seq), (subject), (data), (src))

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} env_t;

static void
up(env_t *e, const char *js_extra)
{
    memset(e, 0, sizeof *e);
    e->srv = js_server_start(&e->conf, js_extra, NULL);
    e->c = js_conn_open(e->srv, API);
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* ---- mirrors ----------------------------------------------------------------------------------
 */

/* A mirror catches up with what the origin holds (its sequences and the gap of a deleted
 * message kept), then follows new messages; its info names the origin with lag 0. */
Test(integ_jssrc, mirror_catch_up_then_live)
{
    env_t e;
    up(&e, NULL);
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"],\"storage\":\"memory\"}");
    for (int i = 1; i <= 5; i++) {
        char d[16];
        snprintf(d, sizeof d, "m%d", i);
        pub(e.c, i % 2 ? "o.odd" : "o.even", d, "ORIG", i);
    }
    json_t *j = api(e.c, "$JS.API.STREAM.MSG.DELETE.ORIG", "{\"seq\":2}");
    cr_assert(json_is_true(json_object_get(j, "success")));
    json_decref(j);

    /* A mirror may not have subjects of its own (10034). */
    j = api(e.c, "$JS.API.STREAM.CREATE.BAD",
            "{\"name\":\"BAD\",\"subjects\":[\"b\"],\"mirror\":{\"name\":\"ORIG\"}}");
    cr_assert_eq(jint(j, "error.err_code"), 10034);
    json_decref(j);

    stream(e.c, "M",
           "{\"name\":\"M\",\"storage\":\"memory\",\"allow_direct\":true,"
           "\"mirror\":{\"name\":\"ORIG\"}}");
    j = wait_msgs(e.c, "M", 4);
    cr_assert_eq(jint(j, "state.first_seq"), 1);
    cr_assert_eq(jint(j, "state.last_seq"), 5);
    cr_assert_eq(jint(j, "state.num_deleted"), 1);
    cr_assert_str_eq(jstr(j, "mirror.name"), "ORIG");
    cr_assert_eq(jint(j, "mirror.lag"), 0);
    cr_assert(jint(j, "mirror.active") >= 0);
    cr_assert_null(json_object_get(j, "sources"));
    json_decref(j);
    check_msg(e.c, "M", 1, "o.odd", "m1", NULL);
    check_msg(e.c, "M", 4, "o.even", "m4", NULL);

    /* live */
    pub(e.c, "o.x", "m6", "ORIG", 6);
    pub(e.c, "o.y", "m7", "ORIG", 7);
    j = wait_msgs(e.c, "M", 6);
    cr_assert_eq(jint(j, "state.last_seq"), 7);
    json_decref(j);
    check_msg(e.c, "M", 7, "o.y", "m7", NULL);
    /* The origin's subjects stay the origin's: the mirror has none of its own. */
    j = info(e.c, "ORIG");
    cr_assert_eq(jint(j, "state.messages"), 6);
    json_decref(j);
    down(&e);
}

/* A mirror of an origin whose first messages are gone starts at the origin's first sequence. */
Test(integ_jssrc, mirror_of_purged_origin)
{
    env_t e;
    up(&e, NULL);
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    for (int i = 1; i <= 6; i++)
        pub(e.c, "o.a", "x", "ORIG", i);
    json_t *j = api(e.c, "$JS.API.STREAM.PURGE.ORIG", "{\"seq\":5}");
    cr_assert(json_is_true(json_object_get(j, "success")));
    json_decref(j);
    stream(e.c, "M", "{\"name\":\"M\",\"mirror\":{\"name\":\"ORIG\"}}");
    j = wait_msgs(e.c, "M", 2);
    cr_assert_eq(jint(j, "state.first_seq"), 5);
    cr_assert_eq(jint(j, "state.last_seq"), 6);
    json_decref(j);
    pub(e.c, "o.a", "x", "ORIG", 7);
    j = wait_msgs(e.c, "M", 3);
    cr_assert_eq(jint(j, "state.last_seq"), 7);
    json_decref(j);
    down(&e);
}

/* ---- sources ----------------------------------------------------------------------------------
 */

/* A source with a filter takes only the matching messages, appended under its own sequences,
 * each with the Nats-Stream-Source header of its origin sequence. */
Test(integ_jssrc, source_with_filter)
{
    env_t e;
    up(&e, NULL);
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    pub(e.c, "o.a", "1", "ORIG", 1);
    pub(e.c, "o.b", "2", "ORIG", 2);
    pub(e.c, "o.a", "3", "ORIG", 3);
    stream(e.c, "S",
           "{\"name\":\"S\",\"allow_direct\":true,"
           "\"sources\":[{\"name\":\"ORIG\",\"filter_subject\":\"o.a\"}]}");
    json_t *j = wait_msgs(e.c, "S", 2);
    cr_assert_eq(jint(j, "state.last_seq"), 2);
    json_t *srcs = json_object_get(j, "sources");
    cr_assert_eq(json_array_size(srcs), 1);
    cr_assert_str_eq(jstr(json_array_get(srcs, 0), "name"), "ORIG");
    cr_assert_eq(jint(json_array_get(srcs, 0), "lag"), 0);
    if (!nd_integ_is_reference())
        cr_assert_str_eq(jstr(json_array_get(srcs, 0), "filter_subject"), "o.a");
    json_decref(j);
    check_msg(e.c, "S", 1, "o.a", "1", "ORIG 1 o.a >");
    check_msg(e.c, "S", 2, "o.a", "3", "ORIG 3 o.a >");
    pub(e.c, "o.b", "4", "ORIG", 4);
    pub(e.c, "o.a", "5", "ORIG", 5);
    json_decref(wait_msgs(e.c, "S", 3));
    check_msg(e.c, "S", 3, "o.a", "5", "ORIG 5 o.a >");
    down(&e);
}

/* Subject transforms of a source (2.10+): the filter is the transform's source, the stored
 * subject its destination. */
Test(integ_jssrc, source_with_transform)
{
    if (nd_integ_is_reference())
        cr_skip_test("subject transforms of sources are 2.10+");
    env_t e;
    up(&e, NULL);
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    pub(e.c, "o.a.1", "1", "ORIG", 1);
    pub(e.c, "o.b.2", "2", "ORIG", 2);
    pub(e.c, "o.a.3", "3", "ORIG", 3);
    stream(e.c, "S",
           "{\"name\":\"S\",\"allow_direct\":true,\"sources\":[{\"name\":\"ORIG\","
           "\"subject_transforms\":[{\"src\":\"o.a.*\",\"dest\":\"s.{{wildcard(1)}}\"}]}]}");
    json_t *j = wait_msgs(e.c, "S", 2);
    json_t *s0 = json_array_get(json_object_get(j, "sources"), 0);
    cr_assert_str_eq(jstr(s0, "name"), "ORIG");
    cr_assert_null(json_object_get(s0, "filter_subject"));
    cr_assert_str_eq(jstr(json_array_get(json_object_get(s0, "subject_transforms"), 0), "src"),
                     "o.a.*");
    cr_assert_str_eq(jstr(json_array_get(json_object_get(s0, "subject_transforms"), 0), "dest"),
                     "s.{{wildcard(1)}}");
    json_decref(j);
    check_msg(e.c, "S", 1, "s.1", "1", "ORIG 1 o.a.* s.{{wildcard(1)}}");
    check_msg(e.c, "S", 2, "s.3", "3", "ORIG 3 o.a.* s.{{wildcard(1)}}");
    down(&e);
}

/* Two origins into one stream that also takes publishes of its own; a sourced message that
 * carried a Nats-Stream-Source header (daisy chain) gets the new one instead. */
Test(integ_jssrc, two_sources_into_one)
{
    env_t e;
    up(&e, NULL);
    stream(e.c, "A", "{\"name\":\"A\",\"subjects\":[\"a.>\"]}");
    stream(e.c, "B", "{\"name\":\"B\",\"subjects\":[\"b.>\"]}");
    pub(e.c, "a.1", "a1", "A", 1);
    pub(e.c, "b.1", "b1", "B", 1);
    pub(e.c, "b.2", "b2", "B", 2);
    stream(e.c, "S",
           "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"allow_direct\":true,"
           "\"sources\":[{\"name\":\"A\"},{\"name\":\"B\"}]}");
    json_t *j = wait_msgs(e.c, "S", 3);
    json_t *srcs = json_object_get(j, "sources");
    cr_assert_eq(json_array_size(srcs), 2);
    json_decref(j);
    pub(e.c, "s.own", "own", "S", 4);
    pub(e.c, "a.2", "a2", "A", 2);
    json_decref(wait_msgs(e.c, "S", 5));
    /* Order across the two origins is not fixed; each message once, with its header. */
    int seen = 0;
    for (int seq = 1; seq <= 5; seq++) {
        js_msg_t m = dget_at(__FILE__, __LINE__, e.c, "S", seq);
        char *src = hdr_val(&m, "Nats-Stream-Source");
        char *subj = hdr_val(&m, "Nats-Subject");
        char want[64];
        if (strcmp(subj, "s.own") == 0) {
            cr_assert_null(src);
            seen |= 1;
        } else {
            const char *name = subj[0] == 'a' ? "A" : "B";
            snprintf(want, sizeof want, "%s %s%s", name, subj + 2,
                     nd_integ_is_reference() ? "" : " > >");
            cr_assert_str_eq(src, want, "seq %d", seq);
            seen |= 1 << (subj[0] == 'a' ? atoi(subj + 2) : 2 + atoi(subj + 2));
        }
        free(src);
        free(subj);
        js_msg_free(&m);
    }
    cr_assert_eq(seen, 0x1f, "each message once: %x", seen);
    /* A stream sourcing S: the header names S now. */
    stream(e.c, "T", "{\"name\":\"T\",\"allow_direct\":true,\"sources\":[{\"name\":\"S\"}]}");
    json_decref(wait_msgs(e.c, "T", 5));
    js_msg_t m = dget_at(__FILE__, __LINE__, e.c, "T", 2);
    char *src = hdr_val(&m, "Nats-Stream-Source");
    cr_assert_str_eq(src, nd_integ_is_reference() ? "S 2" : "S 2 > >");
    const char *first = strstr(m.hdr, "Nats-Stream-Source");
    cr_assert_null(strstr(first + 1, "Nats-Stream-Source"), "one header: %s", m.hdr);
    free(src);
    js_msg_free(&m);
    down(&e);
}

/* ---- restart ----------------------------------------------------------------------------------
 */

/* File streams: after a restart the mirror and the source resume where they were, so that what
 * the origin took meanwhile arrives once, without gaps or duplicates. */
Test(integ_jssrc, restart_resumes)
{
    nd_integ_conf_t conf = {0};
    char store[256];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\" }\n", store) > 0);
    nd_integ_conf_write(&conf, text);
    free(text);
    const char *args[] = {"-c", conf.path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, args);
    nd_integ_conn_t *c = js_conn_open(srv, API);
    stream(c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    stream(c, "M", "{\"name\":\"M\",\"mirror\":{\"name\":\"ORIG\"}}");
    stream(c, "S",
           "{\"name\":\"S\",\"allow_direct\":true,"
           "\"sources\":[{\"name\":\"ORIG\",\"filter_subject\":\"o.s\"}]}");
    long long seq = 0;
    for (int i = 0; i < 10; i++) {
        char d[24];
        snprintf(d, sizeof d, "%lld", seq + 1);
        pub(c, i % 2 ? "o.s" : "o.m", d, "ORIG", ++seq);
    }
    json_decref(wait_msgs(c, "M", 10));
    json_decref(wait_msgs(c, "S", 5));
    for (int round = 0; round < 2; round++) {
        nd_integ_conn_close(c);
        nd_integ_server_stop(srv);
        srv = nd_integ_server_start(0, args);
        c = js_conn_open(srv, API);
        for (int i = 0; i < 10; i++) {
            char d[24];
            snprintf(d, sizeof d, "%lld", seq + 1);
            pub(c, i % 2 ? "o.s" : "o.m", d, "ORIG", ++seq);
        }
        json_t *j = wait_msgs(c, "M", seq);
        cr_assert_eq(jint(j, "state.last_seq"), seq);
        json_decref(j);
        j = wait_msgs(c, "S", seq / 2);
        cr_assert_eq(jint(j, "state.last_seq"), seq / 2);
        json_decref(j);
    }
    /* every o.s message once, in order */
    for (long long i = 1; i <= seq / 2; i++) {
        char want[64], d[24];
        snprintf(want, sizeof want, "ORIG %lld o.s >", 2 * i);
        snprintf(d, sizeof d, "%lld", 2 * i);
        check_msg(c, "S", i, "o.s", d, want);
    }
    sleep_ms(300);
    json_t *j = info(c, "S");
    cr_assert_eq(jint(j, "state.messages"), seq / 2, "no duplicates later");
    json_decref(j);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &conf);
}

/* ---- external API prefix ----------------------------------------------------------------------
 */

/* Connects as user (password = user name) with headers, subscribed to API. */
static nd_integ_conn_t *
user_conn(nd_integ_server_t *srv, const char *user)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true,"
                     "\"user\":\"%s\",\"pass\":\"%s\"}\r\nSUB " API " 1\r\nPING\r\n",
                     user, user);
    nd_integ_send(c, buf, (size_t)n);
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* Across accounts: B sources and mirrors A's stream through A's API imported under
 * $JS.A.API, deliveries coming back on A's exported dlv.> and flow control replies going to
 * A's $JS.FC.> (what nats-server documents for cross-account sourcing). */
Test(integ_jssrc, external_cross_account)
{
    nd_integ_conf_t conf = {0};
    nd_integ_server_t *srv = js_server_start(
        &conf, NULL,
        "accounts {\n"
        "  A: { jetstream: enabled, users: [{user: a, password: a}],\n"
        "       exports: [{service: \"$JS.API.>\"}, {service: \"$JS.FC.>\"}, {stream: \"dlv.>\"}] "
        "}\n"
        "  B: { jetstream: enabled, users: [{user: b, password: b}],\n"
        "       imports: [{service: {account: A, subject: \"$JS.API.>\"}, to: \"$JS.A.API.>\"},\n"
        "                 {service: {account: A, subject: \"$JS.FC.>\"}},\n"
        "                 {stream: {account: A, subject: \"dlv.>\"}}] }\n"
        "}\n");
    nd_integ_conn_t *a = user_conn(srv, "a"), *b = user_conn(srv, "b");
    stream(a, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    pub(a, "o.a", "1", "ORIG", 1);
    pub(a, "o.b", "2", "ORIG", 2);
    stream(b, "S",
           "{\"name\":\"S\",\"allow_direct\":true,\"sources\":[{\"name\":\"ORIG\","
           "\"external\":{\"api\":\"$JS.A.API\",\"deliver\":\"dlv\"}}]}");
    stream(b, "M",
           "{\"name\":\"M\",\"mirror\":{\"name\":\"ORIG\","
           "\"external\":{\"api\":\"$JS.A.API\",\"deliver\":\"dlv\"}}}");
    json_t *j = wait_msgs(b, "S", 2);
    json_t *s0 = json_array_get(json_object_get(j, "sources"), 0);
    cr_assert_str_eq(jstr(s0, "external.api"), "$JS.A.API");
    cr_assert_str_eq(jstr(s0, "external.deliver"), "dlv");
    json_decref(j);
    j = wait_msgs(b, "M", 2);
    cr_assert_str_eq(jstr(j, "mirror.external.api"), "$JS.A.API");
    json_decref(j);
    pub(a, "o.c", "3", "ORIG", 3);
    json_decref(wait_msgs(b, "S", 3));
    json_decref(wait_msgs(b, "M", 3));
    js_msg_t m = dget_at(__FILE__, __LINE__, b, "S", 3);
    char *src = hdr_val(&m, "Nats-Stream-Source");
    /* "ORIG:<8 characters> 3[ > >]" */
    cr_assert(src != NULL && strncmp(src, "ORIG:", 5) == 0 && strlen(src) >= 15 && src[13] == ' ' &&
                  strcmp(src + 14, nd_integ_is_reference() ? "3" : "3 > >") == 0,
              "%s", src ? src : "(none)");
    free(src);
    js_msg_free(&m);
    nd_integ_conn_close(a);
    nd_integ_conn_close(b);
    nd_integ_conf_stop(srv, &conf);
}

/* A source and a mirror through the JetStream domain's API prefix ($JS.<domain>.API) in the
 * same account (natsd answers it there as 2.10+ do; 2.9.10 does not map it locally). */
Test(integ_jssrc, external_api_prefix)
{
    if (nd_integ_is_reference())
        cr_skip_test("2.9.10 answers $JS.<domain>.API only through leaf nodes");
    env_t e;
    up(&e, "domain: hub");
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    pub(e.c, "o.a", "1", "ORIG", 1);
    pub(e.c, "o.a", "2", "ORIG", 2);
    stream(e.c, "S",
           "{\"name\":\"S\",\"allow_direct\":true,\"sources\":[{\"name\":\"ORIG\","
           "\"external\":{\"api\":\"$JS.hub.API\",\"deliver\":\"\"}}]}");
    stream(e.c, "M",
           "{\"name\":\"M\",\"mirror\":{\"name\":\"ORIG\","
           "\"external\":{\"api\":\"$JS.hub.API\",\"deliver\":\"\"}}}");
    json_t *j = wait_msgs(e.c, "S", 2);
    json_t *s0 = json_array_get(json_object_get(j, "sources"), 0);
    cr_assert_str_eq(jstr(s0, "external.api"), "$JS.hub.API");
    json_decref(j);
    j = wait_msgs(e.c, "M", 2);
    cr_assert_str_eq(jstr(j, "mirror.external.api"), "$JS.hub.API");
    json_decref(j);
    js_msg_t m = dget_at(__FILE__, __LINE__, e.c, "S", 2);
    char *src = hdr_val(&m, "Nats-Stream-Source");
    /* "ORIG:<8 characters> 2[ > >]" */
    cr_assert(src != NULL && strncmp(src, "ORIG:", 5) == 0 && strlen(src) >= 15 && src[13] == ' ' &&
                  strcmp(src + 14, nd_integ_is_reference() ? "2" : "2 > >") == 0,
              "%s", src ? src : "(none)");
    free(src);
    js_msg_free(&m);
    down(&e);
}

/* ---- recovery of a lost consumer ----------------------------------------------------------------
 */

/* The origin's consumer goes (deleted here): without heartbeats the mirror and the source
 * recreate it after the stall interval (10 s) and catch up from where they were. */
Test(integ_jssrc, consumer_lost_recreated, .timeout = 60)
{
    env_t e;
    up(&e, NULL);
    stream(e.c, "ORIG", "{\"name\":\"ORIG\",\"subjects\":[\"o.>\"]}");
    pub(e.c, "o.a", "1", "ORIG", 1);
    stream(e.c, "M", "{\"name\":\"M\",\"mirror\":{\"name\":\"ORIG\"}}");
    stream(e.c, "S", "{\"name\":\"S\",\"sources\":[{\"name\":\"ORIG\"}]}");
    json_decref(wait_msgs(e.c, "M", 1));
    json_decref(wait_msgs(e.c, "S", 1));
    json_t *names = api(e.c, "$JS.API.CONSUMER.NAMES.ORIG", "");
    json_t *list = json_object_get(names, "consumers");
    if (json_array_size(list) == 0) {
        json_decref(names);
        down(&e);
        cr_skip_test("the server does not list its mirror/source consumers");
    }
    cr_assert_eq(json_array_size(list), 2);
    for (size_t i = 0; i < 2; i++) {
        char subj[256];
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DELETE.ORIG.%s",
                 json_string_value(json_array_get(list, i)));
        json_t *j = api(e.c, subj, "");
        cr_assert(json_is_true(json_object_get(j, "success")));
        json_decref(j);
    }
    json_decref(names);
    pub(e.c, "o.a", "2", "ORIG", 2);
    pub(e.c, "o.a", "3", "ORIG", 3);
    json_t *j = NULL;
    for (int i = 0; i < 400; i++) { /* up to 20 s + the throttle */
        if (j != NULL)
            json_decref(j);
        j = info(e.c, "S");
        if (jint(j, "state.messages") == 3)
            break;
        sleep_ms(50);
    }
    cr_assert_eq(jint(j, "state.messages"), 3);
    json_decref(j);
    j = wait_msgs(e.c, "M", 3);
    cr_assert_eq(jint(j, "state.last_seq"), 3);
    json_decref(j);
    sleep_ms(300);
    j = info(e.c, "S");
    cr_assert_eq(jint(j, "state.messages"), 3, "no duplicates");
    json_decref(j);
    down(&e);
}
