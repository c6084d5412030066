/* Integration tests of per-message TTLs and subject delete markers (nats-server 2.11) over the
 * raw protocol: Nats-TTL expiry in memory and file streams, "never", the TTL errors, the TTLs of
 * a file stream after a restart, delete markers after a TTL and after max_age, and the TTL raise
 * to subject_delete_marker_ttl.
 *
 * natsd only: nats-server 2.9.10 (the reference of the other .reference runs) has no TTLs.
 * Expiry is observed by polling stream info with a generous deadline (POLL_MS), never by
 * sleeping a fixed time and asserting, so a slow machine makes the tests slower, not red.
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

TestSuite(integ_jsttl, .fini = nd_integ_cleanup, .timeout = 300);

#define REPLY   "_R.1"
#define POLL_MS 60000

/* ---- plumbing ------------------------------------------------------------------------------- */

typedef struct env {
    nd_integ_conf_t conf;
    char *text;
    nd_integ_server_t *srv;
    nd_integ_conn_t *c;
} env_t;

static void
connect_env(env_t *e)
{
    e->c = nd_integ_conn_open(e->srv);
    ND_SEND(e->c, "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
                  "SUB " REPLY " 1\r\nPING\r\n");
    ND_EXPECT(e->c, "PONG\r\n");
}

static void
up(env_t *e)
{
    memset(e, 0, sizeof *e);
    char store[256];
    nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    cr_assert(asprintf(&e->text, "jetstream { store_dir: \"%s\" }\n", store) > 0);
    e->srv = nd_integ_conf_start(&e->conf, e->text);
    connect_env(e);
}

static void
restart(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_server_stop(e->srv);
    e->srv = nd_integ_conf_start(&e->conf, e->text);
    connect_env(e);
}

static void
down(env_t *e)
{
    nd_integ_conn_close(e->c);
    nd_integ_conf_stop(e->srv, &e->conf);
    free(e->text);
}

/* One reply on REPLY: the control line, headers (HMSG) and payload, NUL-terminated. Server
 * PINGs in between are skipped. */
typedef struct reply {
    char *hdr;
    char *data;
} reply_t;

static void
reply_free(reply_t *r)
{
    free(r->hdr);
    free(r->data);
}

static reply_t
request(nd_integ_conn_t *c, const char *subj, const char *hdrs, const char *body)
{
    char *buf = NULL;
    size_t bl = strlen(body);
    int n;
    if (hdrs == NULL) {
        n = asprintf(&buf, "PUB %s " REPLY " %zu\r\n%s\r\n", subj, bl, body);
    } else {
        size_t hl = strlen("NATS/1.0\r\n") + strlen(hdrs) + 2;
        n = asprintf(&buf, "HPUB %s " REPLY " %zu %zu\r\nNATS/1.0\r\n%s\r\n%s\r\n", subj, hl,
                     hl + bl, hdrs, body);
    }
    cr_assert(n > 0);
    nd_integ_send(c, buf, (size_t)n);
    free(buf);
    for (;;) {
        char *f = nd_integ_read_frame(c);
        cr_assert_not_null(f, "the server closed the connection");
        if (strcmp(f, "PING\r\n") == 0) {
            free(f);
            continue;
        }
        bool hmsg = strncmp(f, "HMSG ", 5) == 0;
        cr_assert(hmsg || strncmp(f, "MSG ", 4) == 0, "unexpected frame: %s", f);
        char *eol = strstr(f, "\r\n");
        cr_assert_not_null(eol);
        *eol = '\0';
        /* The last field is the total size, the one before it (HMSG) the header size. */
        char *last = strrchr(f, ' ');
        size_t total = strtoul(last + 1, NULL, 10), hl = 0;
        if (hmsg) {
            *last = '\0';
            hl = strtoul(strrchr(f, ' ') + 1, NULL, 10);
        }
        reply_t r = {.hdr = strndup(eol + 2, hl), .data = strndup(eol + 2 + hl, total - hl)};
        free(f);
        return r;
    }
}

static json_t *
api(nd_integ_conn_t *c, const char *subj, const char *body)
{
    reply_t r = request(c, subj, NULL, body);
    json_error_t err;
    json_t *j = json_loads(r.data, 0, &err);
    cr_assert(json_is_object(j), "%s: not JSON: %s", subj, r.data);
    reply_free(&r);
    return j;
}

static long long
jint(json_t *j, const char *path)
{
    char *p = strdup(path), *save = NULL;
    json_t *v = j;
    for (char *t = strtok_r(p, ".", &save); t != NULL && v != NULL; t = strtok_r(NULL, ".", &save))
        v = json_object_get(v, t);
    free(p);
    char *d = json_dumps(j, JSON_COMPACT);
    cr_assert(json_is_integer(v), "%s is not an integer in %s", path, d);
    free(d);
    return json_integer_value(v);
}

static void
create(nd_integ_conn_t *c, const char *name, const char *cfg)
{
    char subj[128];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = api(c, subj, cfg);
    char *d = json_dumps(j, JSON_COMPACT);
    cr_assert(json_object_get(j, "error") == NULL, "create %s: %s", name, d);
    free(d);
    json_decref(j);
}

/* Publishes and returns the acknowledged sequence (fails on an error ack). */
static long long
publish(nd_integ_conn_t *c, const char *subj, const char *hdrs, const char *body)
{
    reply_t r = request(c, subj, hdrs, body);
    json_t *j = json_loads(r.data, 0, NULL);
    cr_assert(j != NULL && json_object_get(j, "error") == NULL, "publish %s: %s", subj, r.data);
    long long seq = jint(j, "seq");
    json_decref(j);
    reply_free(&r);
    return seq;
}

/* Publishes and returns the err_code of the error ack (fails on a success). */
static long long
publish_err(nd_integ_conn_t *c, const char *subj, const char *hdrs)
{
    reply_t r = request(c, subj, hdrs, "x");
    json_t *j = json_loads(r.data, 0, NULL);
    cr_assert(j != NULL && json_object_get(j, "error") != NULL, "publish %s: %s", subj, r.data);
    long long code = jint(j, "error.err_code");
    json_decref(j);
    reply_free(&r);
    return code;
}

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls stream info until state.<key> == want; fails after POLL_MS. Returns the info (owned). */
static json_t *
wait_state(nd_integ_conn_t *c, const char *stream, const char *key, long long want)
{
    char subj[128], path[64];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", stream);
    snprintf(path, sizeof path, "state.%s", key);
    int64_t until = mono_ms() + POLL_MS;
    for (;;) {
        json_t *j = api(c, subj, "");
        if (jint(j, path) == want)
            return j;
        if (mono_ms() > until) {
            char *d = json_dumps(j, JSON_COMPACT);
            cr_assert_fail("%s: %s never became %lld: %s", stream, path, want, d);
        }
        json_decref(j);
        usleep(50000);
    }
}

/* The message with last_by_subj subj through direct get: its headers, or NULL when none. */
static char *
direct_last(nd_integ_conn_t *c, const char *stream, const char *subj)
{
    char s[128], body[128];
    snprintf(s, sizeof s, "$JS.API.DIRECT.GET.%s", stream);
    snprintf(body, sizeof body, "{\"last_by_subj\":\"%s\"}", subj);
    reply_t r = request(c, s, NULL, body);
    free(r.data);
    if (strstr(r.hdr, "Status: 404") || strstr(r.hdr, "NATS/1.0 404")) {
        free(r.hdr);
        return NULL;
    }
    return r.hdr;
}

static const char *const STORAGES[] = {"memory", "file"};

/* ---- tests ---------------------------------------------------------------------------------- */

/* A message with Nats-TTL goes once its TTL passed; one without, or with "never", stays. */
Test(integ_jsttl, ttl_expires_message)
{
    env_t e;
    up(&e);
    for (int k = 0; k < 2; k++) {
        char name[8], cfg[256];
        snprintf(name, sizeof name, "T%d", k);
        snprintf(cfg, sizeof cfg,
                 "{\"name\":\"%s\",\"subjects\":[\"t%d.>\"],\"storage\":\"%s\","
                 "\"allow_msg_ttl\":true,\"allow_direct\":true}",
                 name, k, STORAGES[k]);
        create(e.c, name, cfg);
        char sa[16], sb[16], sc[16];
        snprintf(sa, sizeof sa, "t%d.a", k);
        snprintf(sb, sizeof sb, "t%d.b", k);
        snprintf(sc, sizeof sc, "t%d.c", k);
        cr_assert_eq(publish(e.c, sa, "Nats-TTL: 1s\r\n", "one"), 1);
        cr_assert_eq(publish(e.c, sb, NULL, "two"), 2);
        cr_assert_eq(publish(e.c, sc, "Nats-TTL: never\r\n", "three"), 3);
        json_t *j = wait_state(e.c, name, "messages", 2);
        cr_assert_eq(jint(j, "state.first_seq"), 2);
        cr_assert_eq(jint(j, "state.last_seq"), 3);
        json_decref(j);
        char *h = direct_last(e.c, name, sa);
        cr_assert_null(h, "%s is still there", sa);
        h = direct_last(e.c, name, sb);
        cr_assert_not_null(h);
        free(h);
        h = direct_last(e.c, name, sc);
        cr_assert_not_null(h);
        cr_assert(strstr(h, "Nats-TTL: never") != NULL, "%s", h);
        free(h);
    }
    down(&e);
}

/* Nats-TTL on a stream without allow_msg_ttl is 10166; a malformed one is 10165. */
Test(integ_jsttl, ttl_errors)
{
    env_t e;
    up(&e);
    create(e.c, "N", "{\"name\":\"N\",\"subjects\":[\"n.>\"],\"storage\":\"memory\"}");
    create(e.c, "Y",
           "{\"name\":\"Y\",\"subjects\":[\"y.>\"],\"storage\":\"memory\","
           "\"allow_msg_ttl\":true}");
    cr_assert_eq(publish_err(e.c, "n.a", "Nats-TTL: 5s\r\n"), 10166);
    cr_assert_eq(publish_err(e.c, "y.a", "Nats-TTL: soon\r\n"), 10165);
    cr_assert_eq(publish_err(e.c, "y.a", "Nats-TTL: 500ms\r\n"), 10165);
    cr_assert_eq(publish(e.c, "y.a", "Nats-TTL: 60\r\n", "ok"), 1);
    down(&e);
}

/* A file stream's TTLs come back after a restart (from the stored Nats-TTL headers), and a
 * restarted stream expires them without waiting for a publish. */
Test(integ_jsttl, ttl_survives_restart)
{
    env_t e;
    up(&e);
    create(e.c, "F", "{\"name\":\"F\",\"subjects\":[\"f.>\"],\"allow_msg_ttl\":true}");
    cr_assert_eq(publish(e.c, "f.a", "Nats-TTL: 2s\r\n", "short"), 1);
    cr_assert_eq(publish(e.c, "f.b", "Nats-TTL: 1h\r\n", "long"), 2);
    restart(&e);
    json_t *j = wait_state(e.c, "F", "messages", 1);
    cr_assert_eq(jint(j, "state.first_seq"), 2);
    json_decref(j);
    down(&e);
}

/* With subject_delete_marker_ttl, the TTL expiry of a subject's last message leaves a marker:
 * Nats-Marker-Reason: MaxAge, Nats-TTL: the marker TTL as a Go duration, Nats-Rollup: sub. */
Test(integ_jsttl, delete_marker_after_ttl)
{
    env_t e;
    up(&e);
    for (int k = 0; k < 2; k++) {
        char name[8], cfg[300], sa[16];
        snprintf(name, sizeof name, "M%d", k);
        snprintf(sa, sizeof sa, "m%d.a", k);
        /* One message per subject: the message's 1 s TTL is not raised to the marker's. */
        snprintf(cfg, sizeof cfg,
                 "{\"name\":\"%s\",\"subjects\":[\"m%d.>\"],\"storage\":\"%s\","
                 "\"subject_delete_marker_ttl\":90000000000,\"max_msgs_per_subject\":1,"
                 "\"allow_direct\":true}",
                 name, k, STORAGES[k]);
        create(e.c, name, cfg);
        cr_assert_eq(publish(e.c, sa, "Nats-TTL: 1s\r\n", "v"), 1);
        json_t *j = wait_state(e.c, name, "last_seq", 2);
        cr_assert_eq(jint(j, "state.messages"), 1);
        cr_assert_eq(jint(j, "state.first_seq"), 2);
        json_decref(j);
        char *h = direct_last(e.c, name, sa);
        cr_assert_not_null(h);
        cr_assert(strstr(h, "Nats-Marker-Reason: MaxAge\r\n") != NULL, "%s", h);
        cr_assert(strstr(h, "Nats-TTL: 1m30s\r\n") != NULL, "%s", h);
        cr_assert(strstr(h, "Nats-Rollup: sub\r\n") != NULL, "%s", h);
        cr_assert(strstr(h, "Nats-Sequence: 2\r\n") != NULL, "%s", h);
        free(h);
    }
    down(&e);
}

/* max_age removing a subject's last message leaves a marker too; the marker then expires
 * (max_age or its own TTL) without leaving a marker of its own. */
Test(integ_jsttl, delete_marker_after_max_age)
{
    env_t e;
    up(&e);
    for (int k = 0; k < 2; k++) {
        char name[8], cfg[300], sa[16];
        snprintf(name, sizeof name, "A%d", k);
        snprintf(sa, sizeof sa, "a%d.x", k);
        snprintf(cfg, sizeof cfg,
                 "{\"name\":\"%s\",\"subjects\":[\"a%d.>\"],\"storage\":\"%s\","
                 "\"max_age\":1000000000,\"subject_delete_marker_ttl\":1000000000}",
                 name, k, STORAGES[k]);
        create(e.c, name, cfg);
        cr_assert_eq(publish(e.c, sa, NULL, "v"), 1);
        /* The marker takes sequence 2, then goes too. */
        json_t *j = wait_state(e.c, name, "last_seq", 2);
        json_decref(j);
        j = wait_state(e.c, name, "messages", 0);
        cr_assert_eq(jint(j, "state.last_seq"), 2);
        json_decref(j);
        /* Nothing more comes: well past both deadlines the last sequence is still 2. */
        usleep(2500000);
        char subj[64];
        snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
        j = api(e.c, subj, "");
        cr_assert_eq(jint(j, "state.last_seq"), 2);
        cr_assert_eq(jint(j, "state.messages"), 0);
        json_decref(j);
    }
    down(&e);
}

/* With markers, a TTL below the marker TTL is raised to it, in the stored header too (unless
 * max_msgs_per_subject is 1). */
Test(integ_jsttl, ttl_raised_to_marker_ttl)
{
    env_t e;
    up(&e);
    create(e.c, "R",
           "{\"name\":\"R\",\"subjects\":[\"r.>\"],\"storage\":\"memory\","
           "\"subject_delete_marker_ttl\":5000000000,\"allow_direct\":true}");
    cr_assert_eq(publish(e.c, "r.a", "A: 1\r\nNats-TTL: 1\r\nB: 2\r\n", "v"), 1);
    char *h = direct_last(e.c, "R", "r.a");
    cr_assert_not_null(h);
    cr_assert(strstr(h, "Nats-TTL: 5\r\n") != NULL, "%s", h);
    cr_assert(strstr(h, "Nats-TTL: 1\r\n") == NULL, "%s", h);
    cr_assert(strstr(h, "A: 1\r\n") != NULL && strstr(h, "B: 2\r\n") != NULL, "%s", h);
    free(h);
    /* Above the marker TTL it stays as it was. */
    cr_assert_eq(publish(e.c, "r.b", "Nats-TTL: 1h\r\n", "v"), 2);
    h = direct_last(e.c, "R", "r.b");
    cr_assert(h != NULL && strstr(h, "Nats-TTL: 1h\r\n") != NULL, "%s", h ? h : "(none)");
    free(h);
    down(&e);
}
