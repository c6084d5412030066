/* An account's MQTT state (nats-server's account session manager): the internal client that
 * speaks to JetStream for the account's MQTT connections, and what it loaded from JetStream.
 *
 * JetStream is reached only through this internal client (DESIGN.md §6): `$JS.API.>` requests
 * with replies on its inbox `$MQTT.JSA.<server id>.<n>.>`, and stores (publishes on the streams'
 * subjects). On its first turn it creates nats-server's streams, `$MQTT_sess` (sessions, one per
 * client id subject), `$MQTT_msgs` (QoS 1 and 2 messages, interest retention), `$MQTT_rmsgs`
 * (retained messages, one per subject), `$MQTT_qos2in` (QoS 2 messages received and not yet
 * released, one per session and packet id, a duplicate refused) and `$MQTT_out` (the PUBRELs a
 * session owes its client, interest retention), then reads every stored session and retained
 * message through an ephemeral consumer each (the last one's ack subject says 0 pending). Until
 * then CONNECTs wait (the account is "not ready"); once ready, connections read sessions and
 * retained messages from memory under the account's mutex and change them through
 * nd_mqtt_sess_put / nd_mqtt_retain_set, which update memory at once and store through the
 * internal client.
 *
 * Memory and the streams agree because every change goes to both, in order, from the same
 * internal client; the loaders' deliveries after the load are ignored.
 *
 * In memory, sessions are in a hash set by client id and retained messages in a trie of their
 * subjects' tokens (mqtt_index.h), so a CONNECT, a retained PUBLISH and a SUBSCRIBE with a literal
 * filter cost the same among 100,000 records as among ten, and a wildcard filter visits only the
 * branches it can match.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "mqtt/mqtt_index.h"
#include "mqtt/mqtt_int.h"
#include "net/connreg.h"
#include "net/iclient.h"
#include "subj/account.h"
#include "subj/subject.h"
#include "util/log.h"

enum {
    REQ_STREAM_SESS,
    REQ_STREAM_MSGS,
    REQ_STREAM_RMSGS,
    REQ_STREAM_QOS2IN,
    REQ_STREAM_OUT,
    NSTREAMS,
};

static const char *const stream_names[NSTREAMS] = {"$MQTT_sess", "$MQTT_msgs", "$MQTT_rmsgs",
                                                   ND_MQTT_QOS2IN_STREAM, ND_MQTT_OUT_STREAM};
/* Each without its closing brace: start_streams adds num_replicas. */
static const char *const stream_cfgs[NSTREAMS] = {
    "{\"name\":\"$MQTT_sess\",\"subjects\":[\"$MQTT.sess.>\"],\"storage\":\"file\","
    "\"retention\":\"limits\",\"max_msgs_per_subject\":1",
    "{\"name\":\"$MQTT_msgs\",\"subjects\":[\"$MQTT.msgs.>\"],\"storage\":\"file\","
    "\"retention\":\"interest\"",
    "{\"name\":\"$MQTT_rmsgs\",\"subjects\":[\"$MQTT.rmsgs.>\"],\"storage\":\"file\","
    "\"retention\":\"limits\",\"max_msgs_per_subject\":1",
    /* A second store of the same session and packet id (a PUBLISH sent again with DUP before
     * its PUBREL) is refused, so the message is kept once. */
    "{\"name\":\"$MQTT_qos2in\",\"subjects\":[\"$MQTT.qos2.in.>\"],\"storage\":\"file\","
    "\"retention\":\"limits\",\"discard\":\"new\",\"max_msgs_per_subject\":1,"
    "\"discard_new_per_subject\":true",
    "{\"name\":\"$MQTT_out\",\"subjects\":[\"$MQTT.out.>\"],\"storage\":\"file\","
    "\"retention\":\"interest\"",
};

typedef struct retained {
    char *subject; /* NATS form */
    uint8_t qos;
    char *data;
    size_t len;
} retained_t;

typedef struct session {
    nd_mqtt_mkey_t key; /* the client id (id) in ma->sess */
    char *json;         /* the stored record */
    char id[];
} session_t;

/* A consumer request waiting for its reply. */
typedef struct pending_req {
    struct pending_req *next;
    uint32_t n;
    uint64_t cid; /* the connection that asked */
    uint32_t tag;
} pending_req_t;

struct nd_mqtt_acct {
    struct nd_mqtt_acct *next; /* m->accts, under m->mu */
    nd_mqtt_t *m;
    nd_acct_t *acct; /* identity only: the account's own actor keeps it */
    nd_iclient_t *ic;
    char inbox[48]; /* "$MQTT.JSA.<server id>.<n>" */
    char api[80];   /* "$JS.API." or, with a JetStream domain to use, "$JS.<domain>.API." */
    /* the internal client's own turn */
    int streams_done;
    bool loading_sess, loading_rmsgs; /* loader consumers still reading */
    uint32_t next_req;
    pending_req_t *reqs, *reqs_tail; /* oldest first: answers come mostly in order */
    /* under mu */
    pthread_mutex_t mu;
    int state;         /* 0 starting, 1 ready, -1 failed */
    uint64_t *waiters; /* connection ids waiting for ready */
    size_t nwaiters, wcap;
    nd_mqtt_rtree_t ret; /* retained_t by subject */
    nd_mqtt_map_t sess;  /* session_t by client id */
};

/* ---- memory tables (under mu) ---- */

static void
ret_free(void *p)
{
    retained_t *r = p;
    nd_free(r->subject);
    nd_free(r->data);
    nd_free(r);
}

static void
ret_apply(nd_mqtt_acct_t *ma, const char *subj, uint8_t qos, const char *data, size_t len)
{
    size_t sl = strlen(subj);
    if (sl == 0)
        return; /* not a subject (the trie holds none) */
    if (len == 0) {
        retained_t *r = nd_mqtt_rtree_del(&ma->ret, subj, sl);
        if (r != NULL)
            ret_free(r);
        return;
    }
    retained_t *r = nd_mqtt_rtree_get(&ma->ret, subj, sl);
    if (r == NULL) {
        r = nd_new(retained_t);
        r->subject = nd_xstrdup(subj);
        nd_mqtt_rtree_set(&ma->ret, subj, sl, r);
    }
    nd_free(r->data);
    r->data = nd_xmalloc(len);
    memcpy(r->data, data, len);
    r->len = len;
    r->qos = qos;
}

static session_t *
sess_find(nd_mqtt_acct_t *ma, const char *id)
{
    return (session_t *)nd_mqtt_map_get(&ma->sess, NULL, id, strlen(id));
}

static void
sess_apply(nd_mqtt_acct_t *ma, const char *id, const char *json)
{
    session_t *s = sess_find(ma, id);
    if (json == NULL) {
        if (s != NULL) {
            nd_mqtt_map_del(&ma->sess, &s->key);
            nd_free(s->json);
            nd_free(s);
        }
        return;
    }
    if (s == NULL) {
        size_t n = strlen(id);
        s = nd_xcalloc(1, sizeof *s + n + 1);
        memcpy(s->id, id, n + 1);
        s->key.s = s->id;
        s->key.len = n;
        nd_mqtt_map_put(&ma->sess, &s->key);
    }
    nd_free(s->json);
    s->json = nd_xstrdup(json);
}

/* The subject of a client id's session record: a hash, since a client id may hold characters
 * a subject cannot. */
void
nd_mqtt_sess_subject(const char *id, char *out, size_t room)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = id; *p; p++) {
        h ^= (uint8_t)*p;
        h *= 1099511628211ull;
    }
    snprintf(out, room, "$MQTT.sess.%016" PRIx64, h);
}

/* ---- readiness ---- */

/* Sends a call to the live connection cid (none when it has closed, or cid is 0). The registry
 * hands out a reference on its actor, so nothing here holds connections alive. */
static void
call_conn(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t what, void *data,
          void (*drop)(void *))
{
    if (cid == 0) {
        /* Nobody asked (a request made without waiting for its answer): 0 would be all. */
        if (drop != NULL)
            drop(data);
        return;
    }
    nd_conn_info_t **infos = NULL;
    size_t n = nd_connreg_live(ma->m->srv->connreg, cid, &infos);
    if (n > 0 && infos[0]->actor != NULL)
        nd_pconn_send_call(ctx, infos[0]->actor, what, data, drop);
    else if (drop != NULL)
        drop(data);
    nd_connreg_release_all(ctx, infos, n);
}

static void
set_state(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, int state)
{
    pthread_mutex_lock(&ma->mu);
    ma->state = state;
    uint64_t *w = ma->waiters;
    size_t n = ma->nwaiters;
    ma->waiters = NULL;
    ma->nwaiters = ma->wcap = 0;
    pthread_mutex_unlock(&ma->mu);
    for (size_t i = 0; i < n; i++)
        call_conn(ctx, ma, w[i], ND_MQTT_CALL_READY, NULL, NULL);
    nd_free(w);
    if (state < 0)
        nd_log_error("MQTT: JetStream is not available for account \"%s\"", nd_acct_name(ma->acct));
}

static void
maybe_ready(nd_ctx_t *ctx, nd_mqtt_acct_t *ma)
{
    if (ma->streams_done == NSTREAMS && !ma->loading_sess && !ma->loading_rmsgs)
        set_state(ctx, ma, 1);
}

static void retry(nd_ctx_t *ctx, nd_mqtt_acct_t *ma);

int
nd_mqtt_acct_wait(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid)
{
    pthread_mutex_lock(&ma->mu);
    int st = ma->state;
    bool again = false;
    if (st < 0 && cid != 0) {
        /* It failed before (JetStream off for the account, say): try again, as nats-server
         * does on every CONNECT, so a reload that enables JetStream brings MQTT back. */
        ma->state = st = 0;
        again = true;
    }
    if (st == 0 && cid != 0) {
        if (ma->nwaiters == ma->wcap) {
            ma->wcap = ma->wcap ? ma->wcap * 2 : 4;
            ma->waiters = nd_xrealloc(ma->waiters, ma->wcap * sizeof(*ma->waiters));
        }
        ma->waiters[ma->nwaiters++] = cid;
    }
    pthread_mutex_unlock(&ma->mu);
    if (again)
        retry(ctx, ma);
    return st;
}

/* ---- requests ---- */

/* Publishes as the account's internal client; a JetStream API subject ("$JS.API.*") goes to the
 * account's domain (ma->api). */
static void
js_publish(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_mqtt_acct_t *ma, const char *subject,
           const char *reply, const char *hdr, size_t hl, const char *body, size_t bl)
{
    static const char api[] = "$JS.API.";
    char subj[512];
    if (strncmp(subject, api, sizeof api - 1) == 0 && strcmp(ma->api, api) != 0) {
        snprintf(subj, sizeof subj, "%s%s", ma->api, subject + sizeof api - 1);
        subject = subj;
    }
    nd_iclient_publish(ctx, ic, subject, reply, hdr, hl, body, bl);
}

static void
request(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *subject, const char *tail, const char *body)
{
    char reply[96];
    snprintf(reply, sizeof reply, "%s.%s", ma->inbox, tail);
    js_publish(ctx, ma->ic, ma, subject, reply, NULL, 0, body, strlen(body));
}

/* A loader: an ephemeral push consumer reading the whole stream into our inbox. */
static void
start_loader(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, int which)
{
    char subj[96], body[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s", stream_names[which]);
    snprintf(body, sizeof body,
             "{\"stream_name\":\"%s\",\"config\":{\"deliver_subject\":\"%s.l.%d\","
             "\"deliver_policy\":\"all\",\"ack_policy\":\"none\",\"mem_storage\":true,"
             "\"inactive_threshold\":5000000000}}",
             stream_names[which], ma->inbox, which);
    request(ctx, ma, subj, "lc", body);
}

/* A stream create (or info) answer. */
static void
on_stream(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, int which, json_t *o, bool info)
{
    json_t *err = json_object_get(o, "error");
    if (err != NULL) {
        json_int_t code = json_integer_value(json_object_get(err, "err_code"));
        if (code == 10058 && !info) {
            /* It exists with another configuration (made elsewhere): its state then. */
            char subj[96], tail[8];
            snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", stream_names[which]);
            snprintf(tail, sizeof tail, "i.%d", which);
            request(ctx, ma, subj, tail, "");
            return;
        }
        nd_log_error("MQTT: cannot create stream %s: %s", stream_names[which],
                     json_string_value(json_object_get(err, "description")));
        set_state(ctx, ma, -1);
        return;
    }
    json_int_t msgs = json_integer_value(json_object_get(json_object_get(o, "state"), "messages"));
    if (which == REQ_STREAM_SESS && msgs > 0) {
        ma->loading_sess = true;
        start_loader(ctx, ma, which);
    } else if (which == REQ_STREAM_RMSGS && msgs > 0) {
        ma->loading_rmsgs = true;
        start_loader(ctx, ma, which);
    }
    ma->streams_done++;
    maybe_ready(ctx, ma);
}

/* The pending count, the last token of a JetStream ack subject. */
static uint64_t
ack_pending(const char *reply, size_t len)
{
    size_t i = len;
    while (i > 0 && reply[i - 1] != '.')
        i--;
    return strtoull(reply + i, NULL, 10);
}

/* The QoS in an Nmqtt-Pub header, 0 when absent. */
uint8_t
nd_mqtt_hdr_qos(const char *hdr, size_t len)
{
    static const char key[] = "Nmqtt-Pub:";
    if (hdr == NULL)
        return 0;
    const char *p = memmem(hdr, len, key, sizeof key - 1);
    if (p == NULL)
        return 0;
    p += sizeof key - 1;
    while (p < hdr + len && *p == ' ')
        p++;
    return p < hdr + len && *p >= '0' && *p <= '2' ? (uint8_t)(*p - '0') : 0;
}

static void
on_loaded_msg(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, int which, const nd_imsg_t *m)
{
    bool *loading = which == REQ_STREAM_SESS ? &ma->loading_sess : &ma->loading_rmsgs;
    if (!*loading)
        return; /* after the load: memory is ahead of these */
    pthread_mutex_lock(&ma->mu);
    if (which == REQ_STREAM_RMSGS) {
        static const char pre[] = "$MQTT.rmsgs.";
        if (m->subject_len > sizeof pre - 1) {
            char *subj = nd_xmalloc(m->subject_len);
            memcpy(subj, m->subject + sizeof pre - 1, m->subject_len - (sizeof pre - 1));
            subj[m->subject_len - (sizeof pre - 1)] = '\0';
            ret_apply(ma, subj, nd_mqtt_hdr_qos(m->hdr, m->hdr_len), m->data, m->data_len);
            nd_free(subj);
        }
    } else if (m->data_len > 0) {
        json_error_t je;
        json_t *o = json_loadb(m->data, m->data_len, 0, &je);
        const char *id = json_string_value(json_object_get(o, "id"));
        if (id != NULL) {
            char *js = nd_xmalloc(m->data_len + 1);
            memcpy(js, m->data, m->data_len);
            js[m->data_len] = '\0';
            sess_apply(ma, id, js);
            nd_free(js);
        }
        json_decref(o);
    }
    pthread_mutex_unlock(&ma->mu);
    if (ack_pending(m->reply, m->reply_len) == 0) {
        *loading = false;
        maybe_ready(ctx, ma);
    }
}

static pending_req_t *
req_take(nd_mqtt_acct_t *ma, uint32_t n)
{
    pending_req_t *prev = NULL, *r = ma->reqs;
    while (r != NULL && r->n != n) {
        prev = r;
        r = r->next;
    }
    if (r == NULL)
        return NULL;
    if (prev != NULL)
        prev->next = r->next;
    else
        ma->reqs = r->next;
    if (ma->reqs_tail == r)
        ma->reqs_tail = prev;
    return r;
}

static void
req_add(nd_mqtt_acct_t *ma, pending_req_t *r)
{
    r->next = NULL;
    if (ma->reqs_tail != NULL)
        ma->reqs_tail->next = r;
    else
        ma->reqs = r;
    ma->reqs_tail = r;
}

/* A consumer create (what: ND_MQTT_CALL_CONSUMER) or store (ND_MQTT_CALL_STORED) answered. */
static void
on_reply(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint32_t n, json_t *o, uint32_t what)
{
    pending_req_t *r = req_take(ma, n);
    if (r == NULL)
        return;
    json_t *err = o != NULL ? json_object_get(o, "error") : NULL;
    const char *desc = json_string_value(json_object_get(err, "description"));
    if (what == ND_MQTT_CALL_STORED && desc != NULL && strstr(desc, "per subject") != NULL)
        err = NULL; /* $MQTT_qos2in has it already: a duplicate, stored once, is stored */
    if (err != NULL)
        nd_log_error("MQTT: %s failed: %s",
                     what == ND_MQTT_CALL_CONSUMER ? "consumer create" : "store",
                     json_string_value(json_object_get(err, "description")));
    nd_mqtt_done_t *d = nd_new(nd_mqtt_done_t);
    d->tag = r->tag;
    d->ok = o != NULL && err == NULL;
    call_conn(ctx, ma, r->cid, what, d, nd_free);
    nd_free(r);
}

static void
answer_free(void *p)
{
    nd_mqtt_answer_t *a = p;
    nd_free(a->json);
    nd_free(a);
}

static void
on_msg(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)ic;
    nd_mqtt_acct_t *ma = arg;
    /* A loader's delivery shows the stored message's own subject. */
    static const char spre[] = "$MQTT.sess.", rpre[] = "$MQTT.rmsgs.";
    if (m->subject_len > sizeof spre - 1 && memcmp(m->subject, spre, sizeof spre - 1) == 0) {
        on_loaded_msg(ctx, ma, REQ_STREAM_SESS, m);
        return;
    }
    if (m->subject_len > sizeof rpre - 1 && memcmp(m->subject, rpre, sizeof rpre - 1) == 0) {
        on_loaded_msg(ctx, ma, REQ_STREAM_RMSGS, m);
        return;
    }
    size_t il = strlen(ma->inbox);
    if (m->subject_len <= il + 1 || memcmp(m->subject, ma->inbox, il) != 0)
        return;
    const char *t = m->subject + il + 1;
    size_t tl = m->subject_len - il - 1;
    if (tl > 2 && t[0] == 'a' && t[1] == '.') {
        /* An answer to nd_mqtt_acct_request: the connection reads it. */
        pending_req_t *r = req_take(ma, (uint32_t)strtoul(t + 2, NULL, 10));
        if (r == NULL)
            return;
        nd_mqtt_answer_t *a = nd_new(nd_mqtt_answer_t);
        a->tag = r->tag;
        if (m->data_len > 0 && m->data[0] == '{') {
            a->json = nd_xmalloc(m->data_len + 1);
            memcpy(a->json, m->data, m->data_len);
            a->json[m->data_len] = '\0';
            a->len = m->data_len;
        }
        call_conn(ctx, ma, r->cid, ND_MQTT_CALL_ANSWER, a, answer_free);
        nd_free(r);
        return;
    }
    if (tl > 2 && t[0] == 'p' && t[1] == '.') {
        /* A store's PubAck (or a no-responders status: no JSON, a failure). */
        json_t *o = json_loadb(m->data, m->data_len, 0, NULL);
        on_reply(ctx, ma, (uint32_t)strtoul(t + 2, NULL, 10), o, ND_MQTT_CALL_STORED);
        json_decref(o);
        return;
    }
    nd_log_debug("MQTT: JetStream answer on %.*s: %.*s", (int)m->subject_len, m->subject,
                 (int)m->data_len, m->data);
    json_error_t je;
    json_t *o = json_loadb(m->data, m->data_len, 0, &je);
    if (o == NULL) {
        /* A status without JSON: nobody answers JetStream's API in this account. */
        if (tl > 2 && t[0] == 'k' && t[1] == '.')
            on_reply(ctx, ma, (uint32_t)strtoul(t + 2, NULL, 10), NULL, ND_MQTT_CALL_CONSUMER);
        else if (ma->state == 0)
            set_state(ctx, ma, -1);
        return;
    }
    if (tl > 2 && (t[0] == 's' || t[0] == 'i') && t[1] == '.') {
        int which = atoi(t + 2);
        if (which >= 0 && which < NSTREAMS)
            on_stream(ctx, ma, which, o, t[0] == 'i');
    } else if (tl > 2 && t[0] == 'k' && t[1] == '.') {
        on_reply(ctx, ma, (uint32_t)strtoul(t + 2, NULL, 10), o, ND_MQTT_CALL_CONSUMER);
    } else if (tl == 2 && t[0] == 'l' && t[1] == 'c') {
        json_t *err = json_object_get(o, "error");
        if (err != NULL) {
            nd_log_error("MQTT: cannot load: %s",
                         json_string_value(json_object_get(err, "description")));
            set_state(ctx, ma, -1);
        }
    }
    json_decref(o);
}

static void start_streams(nd_ctx_t *ctx, nd_iclient_t *ic, nd_mqtt_acct_t *ma);

static void
on_ready(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_mqtt_acct_t *ma = arg;
    nd_log_debug("MQTT: account \"%s\" internal client ready", nd_acct_name(ma->acct));
    if (ma->next_req != 0)
        return; /* started already */
    ma->next_req = 1;
    start_streams(ctx, ic, ma);
}

/* stream_replicas, else 1: natsd's JetStream is not clustered (nats-server's
 * mqttDetermineReplicas gives 1 standalone too). */
static int
stream_replicas(const nd_mqtt_t *m)
{
    int r = atomic_load(&m->stream_replicas);
    return r > 0 ? r : 1;
}

/* The JetStream domain the account's MQTT state lives in, as nats-server chooses it: the
 * account's default_js_domain when it has one (an empty one: the local JetStream), else the
 * mqtt block's js_domain. Returns: the domain, or NULL for the local JetStream. */
static const char *
js_domain_of(const nd_mqtt_t *m, const char *acct_name)
{
    const nd_strlist_t *dd = &m->srv->opts.js_default_domains;
    for (size_t i = 0; i + 1 < dd->n; i += 2)
        if (strcmp(dd->v[i], acct_name) == 0)
            return dd->v[i + 1][0] != '\0' ? dd->v[i + 1] : NULL;
    const char *d = m->mo->js_domain;
    return d != NULL && d[0] != '\0' ? d : NULL;
}

/* Creates (or finds) the streams; their answers make the account ready. */
static void
start_streams(nd_ctx_t *ctx, nd_iclient_t *ic, nd_mqtt_acct_t *ma)
{
    ma->streams_done = 0;
    ma->loading_sess = ma->loading_rmsgs = false;
    /* js_api_timeout: without every answer by then, the account's MQTT is unavailable. */
    const nd_mqtt_opts_t *mo = ma->m->mo;
    int64_t to = mo->js_api_timeout_ms > 0 ? mo->js_api_timeout_ms : 5000;
    nd_iclient_timer(ctx, ic, (uint64_t)to * 1000000ull);
    int replicas = stream_replicas(ma->m);
    for (int i = 0; i < NSTREAMS; i++) {
        char subj[96], tail[8], cfg[512];
        snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", stream_names[i]);
        snprintf(tail, sizeof tail, "s.%d", i);
        snprintf(cfg, sizeof cfg, "%s,\"num_replicas\":%d}", stream_cfgs[i], replicas);
        request(ctx, ma, subj, tail, cfg);
    }
}

static void
on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_mqtt_acct_t *ma = arg;
    (void)ctx;
    while (ma->reqs != NULL) {
        pending_req_t *r = ma->reqs;
        ma->reqs = r->next;
        nd_free(r);
    }
    pthread_mutex_lock(&ma->mu);
    ma->ic = NULL;
    pthread_mutex_unlock(&ma->mu);
}

static void
on_timer(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_mqtt_acct_t *ma = arg;
    pthread_mutex_lock(&ma->mu);
    int st = ma->state;
    pthread_mutex_unlock(&ma->mu);
    if (st == 0) {
        nd_log_error("MQTT: JetStream did not answer in time for account \"%s\"",
                     nd_acct_name(ma->acct));
        set_state(ctx, ma, -1);
    }
}

static const nd_iclient_hooks_t hooks = {
    .on_msg = on_msg,
    .on_timer = on_timer,
    .on_ready = on_ready,
    .on_close = on_close,
};

nd_mqtt_acct_t *
nd_mqtt_acct_get(nd_ctx_t *ctx, nd_mqtt_t *m, nd_acct_t *acct)
{
    pthread_mutex_lock(&m->mu);
    nd_mqtt_acct_t *ma = m->accts;
    while (ma != NULL && ma->acct != acct)
        ma = ma->next;
    if (ma == NULL) {
        ma = nd_new(nd_mqtt_acct_t);
        ma->m = m;
        ma->acct = acct;
        pthread_mutex_init(&ma->mu, NULL);
        nd_mqtt_rtree_init(&ma->ret);
        nd_mqtt_map_init(&ma->sess);
        /* The server's id in the inbox: servers joined by routes or leaf connections share
         * subjects, and each one's answers must come back to it alone. */
        snprintf(ma->inbox, sizeof ma->inbox, "$MQTT.JSA.%.16s.%u", m->srv->server_id, ++m->naccts);
        const char *name = nd_acct_name(acct), *domain = js_domain_of(m, name);
        if (domain != NULL) {
            snprintf(ma->api, sizeof ma->api, "$JS.%s.API.", domain);
            nd_log_info("Creating MQTT streams/consumers with replicas %d for account \"%s\" in "
                        "domain \"%s\"", stream_replicas(m), name, domain);
        } else {
            snprintf(ma->api, sizeof ma->api, "$JS.API.");
            nd_log_info("Creating MQTT streams/consumers with replicas %d for account \"%s\"",
                        stream_replicas(m), name);
        }
        ma->next = m->accts;
        m->accts = ma;
        char sub[64];
        snprintf(sub, sizeof sub, "%s.>", ma->inbox);
        const char *subs[1] = {sub};
        /* Its answers (PubAcks) must never be refused: each connection has at most
         * STORE_WINDOW stores in flight, so the queue is bounded by the connections. */
        nd_iclient_spawn(ctx, m->srv, acct, ND_CONN_SYSTEM, "mqtt", subs, 1, 1u << 30, &hooks, ma,
                         &ma->ic);
    }
    pthread_mutex_unlock(&m->mu);
    return ma;
}

void
nd_mqtt_acct_free_all(nd_mqtt_t *m)
{
    nd_mqtt_acct_t *ma = m->accts;
    while (ma != NULL) {
        nd_mqtt_acct_t *next = ma->next;
        nd_mqtt_rtree_fini(&ma->ret, ret_free);
        ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
        nd_mqtt_mkey_t *k;
        while (nd_mqtt_map_next(&ma->sess, &it, &k)) {
            session_t *s = (session_t *)k;
            nd_free(s->json);
            nd_free(s);
        }
        nd_mqtt_map_fini(&ma->sess);
        nd_free(ma->waiters);
        pthread_mutex_destroy(&ma->mu);
        nd_free(ma);
        ma = next;
    }
    m->accts = NULL;
}

/* ---- work for the internal client ---- */

typedef struct work {
    int kind; /* WORK_* */
    uint32_t tag;
    uint64_t cid; /* WORK_CONSUMER: who asked */
    char *subject;
    char *body; /* WORK_CONSUMER: the request */
    char *hdr;
    size_t hl, bl;
} work_t;

enum { WORK_STORE, WORK_STORE_ACK, WORK_CONSUMER, WORK_REQUEST, WORK_DELETE, WORK_RETRY };

static void
work_free(void *p)
{
    work_t *w = p;
    nd_free(w->subject);
    nd_free(w->body);
    nd_free(w->hdr);
    nd_free(w);
}

static void
run_work(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_mqtt_acct_t *ma = arg;
    work_t *w = data;
    switch (w->kind) {
    case WORK_STORE:
        js_publish(ctx, ic, ma, w->subject, NULL, w->hdr, w->hl, w->body, w->bl);
        break;
    case WORK_STORE_ACK:
    case WORK_CONSUMER:
    case WORK_REQUEST: {
        pending_req_t *r = nd_new(pending_req_t);
        r->n = ma->next_req++;
        r->cid = w->cid;
        r->tag = w->tag;
        req_add(ma, r);
        char reply[96];
        snprintf(reply, sizeof reply, "%s.%c.%u", ma->inbox,
                 w->kind == WORK_CONSUMER  ? 'k'
                 : w->kind == WORK_REQUEST ? 'a'
                                           : 'p',
                 r->n);
        if (w->kind != WORK_STORE_ACK)
            js_publish(ctx, ic, ma, w->subject, reply, NULL, 0, w->body, strlen(w->body));
        else
            js_publish(ctx, ic, ma, w->subject, reply, w->hdr, w->hl, w->body, w->bl);
        break;
    }
    case WORK_DELETE:
        js_publish(ctx, ic, ma, w->subject, NULL, NULL, 0, "", 0);
        break;
    case WORK_RETRY:
        start_streams(ctx, ic, ma);
        break;
    }
    work_free(w);
}

static void
send_work(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, work_t *w)
{
    pthread_mutex_lock(&ma->mu);
    nd_iclient_t *ic = ma->ic;
    if (ic != NULL)
        nd_iclient_ref(ic);
    pthread_mutex_unlock(&ma->mu);
    if (ic == NULL) {
        work_free(w);
        return;
    }
    nd_iclient_call(ctx, ic, run_work, w, work_free);
    nd_iclient_unref(ctx, ic);
}

static void
retry(nd_ctx_t *ctx, nd_mqtt_acct_t *ma)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_RETRY;
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_store_ack(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                       const char *subject, const char *hdr, size_t hl, const char *data, size_t dl)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_STORE_ACK;
    w->cid = cid;
    w->tag = tag;
    w->subject = nd_xstrdup(subject);
    if (hdr != NULL && hl > 0) {
        w->hdr = nd_xmalloc(hl);
        memcpy(w->hdr, hdr, hl);
        w->hl = hl;
    }
    w->body = nd_xmalloc(dl > 0 ? dl : 1);
    if (dl > 0)
        memcpy(w->body, data, dl);
    w->bl = dl;
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_store(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *subject, const char *hdr,
                   size_t hl, const char *data, size_t dl)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_STORE;
    w->subject = nd_xstrdup(subject);
    if (hdr != NULL && hl > 0) {
        w->hdr = nd_xmalloc(hl);
        memcpy(w->hdr, hdr, hl);
        w->hl = hl;
    }
    w->body = nd_xmalloc(dl > 0 ? dl : 1);
    if (dl > 0)
        memcpy(w->body, data, dl);
    w->bl = dl;
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_ack(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *ack_subject)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_DELETE;
    w->subject = nd_xstrdup(ack_subject);
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_request(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                     const char *subject, const char *body)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_REQUEST;
    w->cid = cid;
    w->tag = tag;
    w->subject = nd_xstrdup(subject);
    w->body = nd_xstrdup(body);
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_consumer_create(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                             const char *stream, const char *durable, const char *filter,
                             const char *deliver)
{
    const nd_mqtt_t *m = ma->m; /* its reloadable members */
    int64_t wait_ms = atomic_load(&m->ack_wait_ms), inactive_ms = atomic_load(&m->inactive_ms);
    int64_t ack_wait_ns = (wait_ms > 0 ? wait_ms : 30000) * 1000000LL;
    int max_ack = atomic_load(&m->max_ack_pending);
    if (max_ack <= 0)
        max_ack = 1024;
    work_t *w = nd_new(work_t);
    w->kind = WORK_CONSUMER;
    w->tag = tag;
    w->cid = cid;
    char subj[160];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DURABLE.CREATE.%s.%s", stream, durable);
    w->subject = nd_xstrdup(subj);
    json_t *cfg = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:I, s:b}", "durable_name",
                            durable, "deliver_subject", deliver, "deliver_policy", "new",
                            "ack_policy", "explicit", "filter_subject", filter, "ack_wait",
                            (json_int_t)ack_wait_ns, "max_ack_pending", max_ack, "max_deliver",
                            (json_int_t)-1, "mem_storage", atomic_load(&m->consumer_memory));
    if (inactive_ms > 0)
        json_object_set_new(cfg, "inactive_threshold", json_integer((json_int_t)inactive_ms * 1000000));
    int replicas = atomic_load(&m->consumer_replicas);
    if (replicas > 0)
        json_object_set_new(cfg, "num_replicas", json_integer(replicas));
    json_t *req = json_pack("{s:s, s:o}", "stream_name", stream, "config", cfg);
    w->body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    /* json_dumps allocates with malloc: keep our allocator's ownership rules. */
    char *b = nd_xstrdup(w->body);
    free(w->body);
    w->body = b;
    send_work(ctx, ma, w);
}

void
nd_mqtt_acct_consumer_delete(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *stream,
                             const char *durable)
{
    work_t *w = nd_new(work_t);
    w->kind = WORK_DELETE;
    char subj[160];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DELETE.%s.%s", stream, durable);
    w->subject = nd_xstrdup(subj);
    send_work(ctx, ma, w);
}

/* ---- retained messages and sessions, for connections ---- */

void
nd_mqtt_retain_set(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *subj, uint8_t qos,
                   const char *data, size_t len, uint64_t cid)
{
    pthread_mutex_lock(&ma->mu);
    ret_apply(ma, subj, qos, data, len);
    pthread_mutex_unlock(&ma->mu);
    char s[4200];
    snprintf(s, sizeof s, "$MQTT.rmsgs.%s", subj);
    char h[64];
    int hl = snprintf(h, sizeof h, "NATS/1.0\r\nNmqtt-Pub:%c\r\n\r\n", '0' + qos);
    if (cid != 0)
        nd_mqtt_acct_store_ack(ctx, ma, cid, ND_MQTT_TAG_NO_PUBACK, s, h, (size_t)hl, data, len);
    else
        nd_mqtt_acct_store(ctx, ma, s, h, (size_t)hl, data, len);
}

typedef struct ret_copy {
    nd_mqtt_retained_t *v;
    size_t n, cap;
} ret_copy_t;

static void
ret_copy(void *val, void *arg)
{
    const retained_t *r = val;
    ret_copy_t *rc = arg;
    if (rc->n == rc->cap) {
        rc->cap = rc->cap ? rc->cap * 2 : 4;
        rc->v = nd_xrealloc(rc->v, rc->cap * sizeof(*rc->v));
    }
    nd_mqtt_retained_t *o = &rc->v[rc->n++];
    o->subject = nd_xstrdup(r->subject);
    o->qos = r->qos;
    o->data = nd_xmalloc(r->len);
    memcpy(o->data, r->data, r->len);
    o->len = r->len;
}

size_t
nd_mqtt_retain_match(nd_mqtt_acct_t *ma, const char *filter, nd_mqtt_retained_t **out)
{
    ret_copy_t rc = {0};
    pthread_mutex_lock(&ma->mu);
    nd_mqtt_rtree_match(&ma->ret, filter, strlen(filter), ret_copy, &rc);
    pthread_mutex_unlock(&ma->mu);
    *out = rc.v;
    return rc.n;
}

char *
nd_mqtt_sess_get(nd_mqtt_acct_t *ma, const char *id)
{
    pthread_mutex_lock(&ma->mu);
    session_t *s = sess_find(ma, id);
    char *json = s != NULL ? nd_xstrdup(s->json) : NULL;
    pthread_mutex_unlock(&ma->mu);
    return json;
}

void
nd_mqtt_sess_put(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *id, const char *json)
{
    pthread_mutex_lock(&ma->mu);
    sess_apply(ma, id, json);
    pthread_mutex_unlock(&ma->mu);
    char subj[64];
    nd_mqtt_sess_subject(id, subj, sizeof subj);
    nd_mqtt_acct_store(ctx, ma, subj, NULL, 0, json != NULL ? json : "",
                       json != NULL ? strlen(json) : 0);
}
