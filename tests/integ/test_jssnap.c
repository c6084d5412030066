/* Integration tests of stream snapshot and restore over the raw protocol
 * ($JS.API.STREAM.SNAPSHOT.<s>, $JS.API.STREAM.RESTORE.<s>, src/js/stream_snap.c).
 *
 * natsd only: the snapshot's bytes are natsd's own format (nats-server's is a tar/s2 archive),
 * so a snapshot taken here restores only into natsd. What clients read was checked against
 * nats-server 2.9.10 by hand and is asserted here: the error responses (exact bytes), the
 * responses' keys (snapshot: config and state; restore: deliver_subject, "" on errors; the final
 * answer: a stream_create_response without did_create), the chunk framing (each chunk a MSG whose
 * reply is $JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>, acknowledged by an empty message there),
 * the end of a snapshot (an empty message; nats-server 2.11 adds the header "NATS/1.0 204") and
 * the restore's acknowledgements (one empty MSG per chunk) and advisories.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TestSuite(integ_jssnap, .fini = nd_integ_cleanup, .timeout = 240);

#define REPLY   "_R.1"
#define DELIVER "snap.dlv"

typedef struct js_msg {
    char *subject, *reply; /* reply NULL when none */
    char *hdr;             /* NULL for MSG */
    size_t hdr_len;
    char *data;
    size_t data_len;
} js_msg_t;

static void
js_msg_free(js_msg_t *m)
{
    free(m->subject);
    free(m->reply);
    free(m->hdr);
    free(m->data);
    memset(m, 0, sizeof *m);
}

/* Reads the next MSG/HMSG (fields split on one or more spaces). */
static js_msg_t
read_msg(nd_integ_conn_t *c)
{
    char *f = nd_integ_read_frame(c);
    cr_assert(f != NULL, "the server closed the connection");
    char *eol = strstr(f, "\r\n");
    bool hmsg = strncmp(f, "HMSG ", 5) == 0;
    cr_assert(eol != NULL && (hmsg || strncmp(f, "MSG ", 4) == 0), "expected a MSG, got %.200s", f);
    char *line = strndup(f, (size_t)(eol - f));
    char *tok[8], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " ", &save); t != NULL && n < 8; t = strtok_r(NULL, " ", &save))
        tok[n++] = t;
    int want = hmsg ? 5 : 4;
    cr_assert(n == want || n == want + 1, "malformed line");
    js_msg_t m = {0};
    m.subject = strdup(tok[1]);
    m.reply = n == want + 1 ? strdup(tok[3]) : NULL;
    size_t total = strtoul(tok[n - 1], NULL, 10);
    size_t hl = hmsg ? strtoul(tok[n - 2], NULL, 10) : 0;
    const char *body = eol + 2;
    if (hmsg) {
        m.hdr = strndup(body, hl);
        m.hdr_len = hl;
    }
    m.data_len = total - hl;
    m.data = malloc(m.data_len + 1);
    memcpy(m.data, body + hl, m.data_len);
    m.data[m.data_len] = '\0';
    free(line);
    free(f);
    return m;
}

/* PUB/HPUB of len bytes (hdrs: header lines without the status line, or NULL). */
static void
pub(nd_integ_conn_t *c, const char *subj, const char *reply, const char *hdrs, const void *data,
    size_t len)
{
    char *head = NULL, *h = NULL;
    size_t hl = 0;
    if (hdrs != NULL) {
        cr_assert(asprintf(&h, "NATS/1.0\r\n%s\r\n", hdrs) > 0);
        hl = strlen(h);
        cr_assert(asprintf(&head, "HPUB %s %s %zu %zu\r\n%s", subj, reply ? reply : "", hl,
                           hl + len, h) > 0);
    } else {
        cr_assert(asprintf(&head, "PUB %s %s %zu\r\n", subj, reply ? reply : "", len) > 0);
    }
    nd_integ_send(c, head, strlen(head));
    nd_integ_send(c, data, len);
    nd_integ_send(c, "\r\n", 2);
    free(head);
    free(h);
}

/* A request on REPLY; returns the JSON reply. */
static json_t *
api(nd_integ_conn_t *c, const char *subj, const char *body)
{
    pub(c, subj, REPLY, NULL, body, strlen(body));
    js_msg_t m = read_msg(c);
    cr_assert_str_eq(m.subject, REPLY);
    json_t *j = json_loadb(m.data, m.data_len, 0, NULL);
    cr_assert(json_is_object(j), "not JSON: %s", m.data);
    js_msg_free(&m);
    return j;
}

/* A request whose reply must be exactly want. */
static void
api_exact(nd_integ_conn_t *c, const char *subj, const char *body, const char *want)
{
    pub(c, subj, REPLY, NULL, body, strlen(body));
    js_msg_t m = read_msg(c);
    cr_assert_str_eq(m.data, want, "%s %s", subj, body);
    js_msg_free(&m);
}

static int64_t
jint(json_t *o, const char *path)
{
    char *p = strdup(path), *save = NULL;
    json_t *v = o;
    for (char *t = strtok_r(p, ".", &save); t != NULL; t = strtok_r(NULL, ".", &save))
        v = json_object_get(v, t);
    free(p);
    cr_assert(json_is_integer(v), "%s is not an integer", path);
    return json_integer_value(v);
}

typedef struct env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c, *adv;
    char text[512];
} env_t;

static nd_integ_conn_t *
connect_sub(nd_integ_server_t *srv, const char *subs)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n");
    ND_SENDS(c, subs);
    ND_SEND(c, "PING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

static void
up(env_t *e)
{
    memset(e, 0, sizeof *e);
    char store[256];
    nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    snprintf(e->text, sizeof e->text, "jetstream { store_dir: \"%s\" }\n", store);
    e->srv = nd_integ_conf_start(&e->conf, e->text);
    e->c = connect_sub(e->srv, "SUB " REPLY " 1\r\nSUB " DELIVER " 2\r\n");
    e->adv = connect_sub(e->srv, "SUB $JS.EVENT.ADVISORY.STREAM.> 1\r\n");
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conn_close(e->adv);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* The next advisory on e->adv must be of type (io.nats.jetstream.advisory.v1.<type>) on
 * $JS.EVENT.ADVISORY.STREAM.<verb>.<stream>. Returns it. */
static json_t *
expect_adv(env_t *e, const char *verb, const char *stream, const char *type)
{
    js_msg_t m = read_msg(e->adv);
    char subj[256], t[128];
    snprintf(subj, sizeof subj, "$JS.EVENT.ADVISORY.STREAM.%s.%s", verb, stream);
    snprintf(t, sizeof t, "io.nats.jetstream.advisory.v1.%s", type);
    cr_assert_str_eq(m.subject, subj);
    json_t *j = json_loadb(m.data, m.data_len, 0, NULL);
    cr_assert_str_eq(json_string_value(json_object_get(j, "type")), t);
    cr_assert_str_eq(json_string_value(json_object_get(j, "stream")), stream);
    cr_assert(json_is_string(json_object_get(j, "id")));
    cr_assert(json_is_string(json_object_get(j, "timestamp")));
    if (strcmp(type, "stream_action") != 0) /* nats-server's action advisories have none */
        cr_assert(json_is_object(json_object_get(j, "client")));
    js_msg_free(&m);
    return j;
}

/* Takes a snapshot of stream into *out (malloc'd, *len bytes), acknowledging every chunk.
 * Returns the snapshot response. */
static json_t *
snapshot(env_t *e, const char *stream, int chunk, char **out, size_t *len)
{
    char subj[256], body[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.SNAPSHOT.%s", stream);
    snprintf(body, sizeof body, "{\"deliver_subject\":\"" DELIVER "\",\"chunk_size\":%d}", chunk);
    pub(e->c, subj, REPLY, NULL, body, strlen(body));
    json_t *resp = NULL;
    size_t n = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    char ackp[256];
    snprintf(ackp, sizeof ackp, "$JS.SNAPSHOT.ACK.%s.", stream);
    uint64_t index = 0;
    for (;;) {
        js_msg_t m = read_msg(e->c);
        if (strcmp(m.subject, REPLY) == 0) {
            cr_assert_null(resp);
            resp = json_loadb(m.data, m.data_len, 0, NULL);
            cr_assert_not_null(resp);
            js_msg_free(&m);
            continue;
        }
        cr_assert_str_eq(m.subject, DELIVER);
        if (m.data_len == 0) {
            cr_assert_null(m.reply);
            cr_assert_str_eq(m.hdr, "NATS/1.0 204\r\n\r\n");
            js_msg_free(&m);
            break;
        }
        /* $JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index> */
        cr_assert_not_null(m.reply);
        cr_assert(strncmp(m.reply, ackp, strlen(ackp)) == 0, "ack subject %s", m.reply);
        const char *p = strchr(m.reply + strlen(ackp), '.');
        cr_assert_not_null(p);
        char *end;
        size_t size = strtoul(p + 1, &end, 10);
        cr_assert_eq(size, m.data_len);
        cr_assert_eq(strtoull(end + 1, NULL, 10), ++index);
        cr_assert(m.data_len <= (size_t)chunk);
        while (n + m.data_len > cap)
            buf = realloc(buf, cap *= 2);
        memcpy(buf + n, m.data, m.data_len);
        n += m.data_len;
        pub(e->c, m.reply, NULL, NULL, "", 0);
        js_msg_free(&m);
    }
    cr_assert_not_null(resp, "no snapshot response");
    *out = buf;
    *len = n;
    return resp;
}

/* Restores stream from data sent in chunks of `chunk` bytes; returns the final response. */
static json_t *
restore(env_t *e, const char *stream, json_t *cfg, json_t *state, const char *data, size_t len,
        size_t chunk)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.RESTORE.%s", stream);
    json_t *req = json_object();
    json_object_set(req, "config", cfg);
    json_object_set(req, "state", state);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *r = api(e->c, subj, body);
    free(body);
    cr_assert_eq(json_object_size(r), 2, "%s", json_dumps(r, 0));
    cr_assert_str_eq(json_string_value(json_object_get(r, "type")),
                     "io.nats.jetstream.api.v1.stream_restore_response");
    char prefix[256];
    snprintf(prefix, sizeof prefix, "$JS.SNAPSHOT.RESTORE.%s.", stream);
    const char *dlv = json_string_value(json_object_get(r, "deliver_subject"));
    cr_assert(dlv != NULL && strncmp(dlv, prefix, strlen(prefix)) == 0);
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        pub(e->c, dlv, REPLY, NULL, data + off, n);
        js_msg_t m = read_msg(e->c);
        cr_assert_str_eq(m.subject, REPLY);
        cr_assert_eq(m.data_len, 0, "chunk ack: %s", m.data);
        cr_assert_null(m.hdr);
        js_msg_free(&m);
    }
    pub(e->c, dlv, REPLY, NULL, "", 0);
    json_decref(r);
    js_msg_t m = read_msg(e->c);
    cr_assert_str_eq(m.subject, REPLY);
    json_t *j = json_loadb(m.data, m.data_len, 0, NULL);
    cr_assert_not_null(j, "%s", m.data);
    js_msg_free(&m);
    return j;
}

/* Every message 1..last as the message get API shows it (null for a missing one). */
static json_t *
all_msgs(env_t *e, const char *stream, int last)
{
    json_t *arr = json_array();
    char subj[256], body[64];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.MSG.GET.%s", stream);
    for (int i = 1; i <= last; i++) {
        snprintf(body, sizeof body, "{\"seq\":%d}", i);
        json_t *r = api(e->c, subj, body);
        json_t *msg = json_object_get(r, "message");
        json_array_append(arr, msg != NULL ? msg : json_null());
        json_decref(r);
    }
    return arr;
}

static void
round_trip(const char *storage)
{
    env_t e;
    up(&e);
    char body[512];
    snprintf(
        body, sizeof body,
        "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"storage\":\"%s\",\"max_msgs_per_subject\":50}",
        storage);
    json_t *cr = api(e.c, "$JS.API.STREAM.CREATE.S", body);
    cr_assert(json_is_object(json_object_get(cr, "config")));
    json_decref(cr);
    json_decref(expect_adv(&e, "CREATED", "S", "stream_action"));
    /* messages on several subjects, with and without headers, binary payloads */
    const int N = 300;
    char data[3000];
    for (int i = 1; i <= N; i++) {
        size_t n = (size_t)(i * 37) % sizeof data;
        for (size_t k = 0; k < n; k++)
            data[k] = (char)((i * 131 + (int)k) & 0xff);
        char subj[64], hdr[128];
        snprintf(subj, sizeof subj, "s.%d", i % 7);
        snprintf(hdr, sizeof hdr, "Nats-Msg-Id: id-%d\r\nX-N: %d\r\n", i, i);
        pub(e.c, subj, REPLY, i % 3 == 0 ? hdr : NULL, data, n);
        js_msg_t m = read_msg(e.c);
        char want[64];
        snprintf(want, sizeof want, "{\"stream\":\"S\", \"seq\":%d}", i);
        cr_assert_str_eq(m.data, want);
        js_msg_free(&m);
    }
    /* interior deleted sequences */
    api_exact(
        e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":10}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"success\":true}");
    api_exact(
        e.c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":200,\"no_erase\":true}",
        "{\"type\":\"io.nats.jetstream.api.v1.stream_msg_delete_response\",\"success\":true}");
    json_t *before = all_msgs(&e, "S", N);
    json_t *info = api(e.c, "$JS.API.STREAM.INFO.S", "");

    char *snap;
    size_t len;
    json_t *sr = snapshot(&e, "S", 4096, &snap, &len);
    cr_assert_eq(json_object_size(sr), 3, "%s", json_dumps(sr, 0)); /* type, config, state */
    cr_assert_str_eq(json_string_value(json_object_get(sr, "type")),
                     "io.nats.jetstream.api.v1.stream_snapshot_response");
    cr_assert(json_equal(json_object_get(sr, "config"), json_object_get(info, "config")));
    cr_assert_eq(jint(sr, "state.messages"), N - 2);
    cr_assert_eq(jint(sr, "state.last_seq"), N);
    cr_assert_eq(jint(sr, "state.num_deleted"), 2);
    cr_assert(len > 4096, "a snapshot of several chunks (%zu bytes)", len);
    json_t *a = expect_adv(&e, "SNAPSHOT_CREATE", "S", "snapshot_create");
    cr_assert_eq(jint(a, "state.messages"), N - 2);
    json_decref(a);
    a = expect_adv(&e, "SNAPSHOT_COMPLETE", "S", "snapshot_complete");
    cr_assert(json_is_string(json_object_get(a, "start")) &&
              json_is_string(json_object_get(a, "end")));
    json_decref(a);

    /* restoring over the stream is refused */
    api_exact(e.c, "$JS.API.STREAM.RESTORE.S", "{\"config\":{\"name\":\"S\"}}",
              "{\"type\":\"io.nats.jetstream.api.v1.stream_restore_response\",\"error\":{\"code\":"
              "400,\"err_code\":10130,\"description\":\"stream name already in use, cannot "
              "restore\"},\"deliver_subject\":\"\"}");

    api_exact(e.c, "$JS.API.STREAM.DELETE.S", "",
              "{\"type\":\"io.nats.jetstream.api.v1.stream_delete_response\",\"success\":true}");
    json_decref(expect_adv(&e, "DELETED", "S", "stream_action"));

    /* chunks of another size than the snapshot's: the byte stream is what counts */
    json_t *rr = restore(&e, "S", json_object_get(sr, "config"), json_object_get(sr, "state"), snap,
                         len, 1000);
    cr_assert_str_eq(json_string_value(json_object_get(rr, "type")),
                     "io.nats.jetstream.api.v1.stream_create_response", "%s", json_dumps(rr, 0));
    cr_assert_null(json_object_get(rr, "error"), "%s", json_dumps(rr, 0));
    cr_assert_null(json_object_get(rr, "did_create"));
    cr_assert(json_equal(json_object_get(rr, "config"), json_object_get(info, "config")), "%s",
              json_dumps(rr, 0));
    json_t *s0 = json_object_get(info, "state"), *s1 = json_object_get(rr, "state");
    cr_assert(json_equal(s0, s1), "state %s\n   vs %s", json_dumps(s0, 0), json_dumps(s1, 0));
    json_decref(expect_adv(&e, "RESTORE_CREATE", "S", "restore_create"));
    json_decref(expect_adv(&e, "CREATED", "S", "stream_action"));
    a = expect_adv(&e, "RESTORE_COMPLETE", "S", "restore_complete");
    cr_assert_eq(jint(a, "bytes"), (int64_t)len);
    json_decref(a);

    json_t *after = all_msgs(&e, "S", N);
    for (int i = 0; i < N; i++)
        cr_assert(json_equal(json_array_get(before, (size_t)i), json_array_get(after, (size_t)i)),
                  "message %d: %s vs %s", i + 1, json_dumps(json_array_get(before, (size_t)i), 0),
                  json_dumps(json_array_get(after, (size_t)i), 0));
    cr_assert(json_is_null(json_array_get(after, 9)) && json_is_null(json_array_get(after, 199)));

    /* the restored stream is live: publishes and duplicate detection from the restored ids */
    pub(e.c, "s.1", REPLY, NULL, "x", 1);
    js_msg_t m = read_msg(e.c);
    char want[64];
    snprintf(want, sizeof want, "{\"stream\":\"S\", \"seq\":%d}", N + 1);
    cr_assert_str_eq(m.data, want);
    js_msg_free(&m);
    pub(e.c, "s.1", REPLY, "Nats-Msg-Id: id-297\r\n", "x", 1);
    m = read_msg(e.c);
    cr_assert_str_eq(m.data, "{\"stream\":\"S\", \"seq\":297,\"duplicate\": true}");
    js_msg_free(&m);

    if (strcmp(storage, "file") == 0) {
        /* and it comes back after a restart */
        nd_integ_conn_close(e.c);
        nd_integ_conn_close(e.adv);
        nd_integ_server_stop(e.srv);
        e.srv = nd_integ_conf_start(&e.conf, e.text);
        e.c = connect_sub(e.srv, "SUB " REPLY " 1\r\nSUB " DELIVER " 2\r\n");
        e.adv = connect_sub(e.srv, "SUB $JS.EVENT.ADVISORY.STREAM.> 1\r\n");
        json_t *again = all_msgs(&e, "S", N);
        cr_assert(json_equal(before, again));
        json_decref(again);
    }
    json_decref(after);
    json_decref(rr);
    json_decref(sr);
    json_decref(info);
    json_decref(before);
    free(snap);
    down(&e);
}

Test(integ_jssnap, round_trip_file)
{
    round_trip("file");
}

Test(integ_jssnap, round_trip_memory)
{
    round_trip("memory");
}

/* Errors, as nats-server 2.9.10 answers them (checked by hand; the bytes are the same in 2.11). */
Test(integ_jssnap, errors)
{
    env_t e;
    up(&e);
    json_decref(api(e.c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}"));
    const char *bad = "{\"type\":\"io.nats.jetstream.api.v1.stream_snapshot_response\",\"error\":{"
                      "\"code\":400,\"err_code\":10003,\"description\":\"bad request\"}}";
    api_exact(e.c, "$JS.API.STREAM.SNAPSHOT.S", "", bad);
    api_exact(e.c, "$JS.API.STREAM.SNAPSHOT.S", " {} ", bad);
    api_exact(e.c, "$JS.API.STREAM.SNAPSHOT.X", "{\"deliver_subject\":\"a\"}",
              "{\"type\":\"io.nats.jetstream.api.v1.stream_snapshot_response\",\"error\":{\"code\":"
              "404,\"err_code\":10059,\"description\":\"stream not found\"}}");
    const char *dlv = "{\"type\":\"io.nats.jetstream.api.v1.stream_snapshot_response\",\"error\":{"
                      "\"code\":400,\"err_code\":10015,\"description\":\"deliver subject not "
                      "valid\"}}";
    api_exact(e.c, "$JS.API.STREAM.SNAPSHOT.S", "{\"no_consumers\":true}", dlv);
    api_exact(e.c, "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":\"a..b\"}", dlv);
    json_t *r = api(e.c, "$JS.API.STREAM.SNAPSHOT.S", "{\"deliver_subject\":");
    cr_assert_eq(jint(r, "error.err_code"), 10025);
    json_decref(r);

    api_exact(e.c, "$JS.API.STREAM.RESTORE.T", "",
              "{\"type\":\"io.nats.jetstream.api.v1.stream_restore_response\",\"error\":{\"code\":"
              "400,\"err_code\":10003,\"description\":\"bad request\"},\"deliver_subject\":\"\"}");
    r = api(e.c, "$JS.API.STREAM.RESTORE.T", "{\"config\":");
    cr_assert_eq(jint(r, "error.err_code"), 10025);
    cr_assert_str_eq(json_string_value(json_object_get(r, "deliver_subject")), "");
    json_decref(r);

    /* bytes that are not a snapshot: the final answer is 10062 and no stream is made */
    json_t *cfg = json_pack("{s:s,s:[s]}", "name", "T", "subjects", "t.>");
    json_t *st = json_object();
    r = restore(&e, "T", cfg, st, "not a snapshot at all", 21, 8);
    cr_assert_str_eq(json_string_value(json_object_get(r, "type")),
                     "io.nats.jetstream.api.v1.stream_create_response");
    cr_assert_eq(jint(r, "error.err_code"), 10062, "%s", json_dumps(r, 0));
    cr_assert(
        strncmp(json_string_value(json_object_get(json_object_get(r, "error"), "description")),
                "restore failed: ", 16) == 0);
    json_decref(r);
    r = api(e.c, "$JS.API.STREAM.INFO.T", "");
    cr_assert_eq(jint(r, "error.err_code"), 10059);
    json_decref(r);

    /* a snapshot cut short is refused too, and a whole one after it still restores */
    char *snap;
    size_t len;
    pub(e.c, "s.a", REPLY, NULL, "hello", 5);
    js_msg_t m = read_msg(e.c);
    js_msg_free(&m);
    json_t *sr = snapshot(&e, "S", 64, &snap, &len);
    json_decref(cfg);
    cfg = json_pack("{s:s,s:[s]}", "name", "T", "subjects", "t.>");
    r = restore(&e, "T", cfg, st, snap, len - 5, 64);
    cr_assert_eq(jint(r, "error.err_code"), 10062, "%s", json_dumps(r, 0));
    json_decref(r);
    r = restore(&e, "T", cfg, st, snap, len, 64);
    cr_assert_null(json_object_get(r, "error"), "%s", json_dumps(r, 0));
    cr_assert_eq(jint(r, "state.messages"), 1);
    json_decref(r);
    /* a restore whose subjects overlap an existing stream's fails at the end */
    json_t *ucfg = json_pack("{s:s,s:[s]}", "name", "U", "subjects", "s.>");
    r = restore(&e, "U", ucfg, st, snap, len, 1 << 20);
    json_decref(ucfg);
    cr_assert_eq(jint(r, "error.err_code"), 10062, "%s", json_dumps(r, 0));
    json_decref(r);
    free(snap);
    json_decref(sr);
    json_decref(cfg);
    json_decref(st);
    down(&e);
}

/* Flow control: a reader that never acknowledges gets at most the window (8 MiB) and then
 * "NATS/1.0 408 No Flow Response"; one that acknowledges gets everything. */
Test(integ_jssnap, flow_control)
{
    env_t e;
    up(&e);
    json_decref(api(e.c, "$JS.API.STREAM.CREATE.B",
                    "{\"name\":\"B\",\"subjects\":[\"b\"],\"storage\":\"memory\"}"));
    size_t n = 100 * 1024;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 7);
    for (int i = 0; i < 120; i++) { /* 12 MB */
        pub(e.c, "b", REPLY, NULL, big, n);
        js_msg_t m = read_msg(e.c);
        js_msg_free(&m);
    }
    free(big);
    const char *req = "{\"deliver_subject\":\"" DELIVER "\"}";
    pub(e.c, "$JS.API.STREAM.SNAPSHOT.B", REPLY, NULL, req, strlen(req));
    size_t got = 0, chunks = 0;
    bool resp = false;
    for (;;) {
        js_msg_t m = read_msg(e.c);
        if (strcmp(m.subject, REPLY) == 0) {
            resp = true;
            js_msg_free(&m);
            continue;
        }
        if (m.data_len == 0) {
            cr_assert_str_eq(m.hdr, "NATS/1.0 408 No Flow Response\r\n\r\n");
            js_msg_free(&m);
            break;
        }
        cr_assert(m.data_len <= 128 * 1024);
        got += m.data_len;
        chunks++;
        js_msg_free(&m);
    }
    cr_assert(resp);
    cr_assert(got >= 8 * 1024 * 1024 && got < 8 * 1024 * 1024 + 128 * 1024,
              "%zu bytes in %zu chunks before the stall", got, chunks);
    char *snap;
    size_t len;
    json_t *sr = snapshot(&e, "B", 128 * 1024, &snap, &len);
    cr_assert(len > 12 * 1000 * 1000);
    cr_assert_eq(jint(sr, "state.messages"), 120);
    free(snap);
    json_decref(sr);
    down(&e);
}
