/* One MQTT connection's protocol (the vtable net/pconn.h calls), as nats-server 2.9.10 answers,
 * with QoS 2 as 2.10+ does it:
 *
 * - The first packet must be CONNECT, and only one may come. A protocol name other than "MQTT"
 *   closes without a CONNACK; a level other than 4 gets CONNACK 1; an empty client id without
 *   clean session, or one that is not UTF-8, gets 2; an empty user name 4; a login the server's
 *   authorization refuses 5 (nats-server's authViolation); each of these closes the connection.
 * - Malformed packets (a fifth remaining-length byte, bad fixed-header flags, truncated fields,
 *   wildcards or white space in a topic name, QoS 3, a PUBLISH of QoS 2 with
 *   reject_qos2_publish, as 2.9.10 has it) close the connection without an answer.
 * - SUBSCRIBE: each filter becomes a subscription in the client's account whose sid is its
 *   subject; "foo/#" also subscribes to "foo" (sid "foo fwc"). QoS 2 is granted (as 1 with
 *   downgrade_qos2_subscribe, as 2.9.10 does); a filter that cannot be a subject, or that
 *   permissions deny, gets 0x80. The SUBACK goes out once every subscription is in the sublist,
 *   and no packet after the SUBSCRIBE is read before that, so the client's next publish sees
 *   its subscription.
 * - PUBLISH: the topic becomes the subject, the message carries nats-server's header
 *   "Nmqtt-Pub: <qos>", and QoS 1 is acknowledged with PUBACK. Messages reach the client as
 *   QoS 0 PUBLISH packets (QoS 1 and 2 ones to QoS 1 and 2 subscriptions come through their
 *   consumers); a filter starting with a wildcard never matches a subject starting with '$'
 *   (MQTT-4.7.2-1).
 * - QoS 2 received: the PUBLISH is stored in $MQTT_qos2in under the client id and packet id
 *   (a DUP resend is kept once) and PUBREC follows the store; PUBREL fetches it, publishes it
 *   as a QoS 2 message (live and to $MQTT_msgs), purges it, and PUBCOMP follows; a PUBREL with
 *   no message gets PUBCOMP at once. A QoS 2 will is refused (CONNACK 0x10) with
 *   reject_qos2_publish.
 * - QoS 2 sent: a delivery at the lower of the message's and the subscription's QoS; PUBREC
 *   acks it on $MQTT_msgs and stores its PUBREL in $MQTT_out, whose per-session consumer
 *   (made with the first QoS 2 subscription) hands it back to be sent, again after ack_wait
 *   without PUBCOMP; PUBCOMP acks it there. The ids awaiting PUBCOMP are in the session record:
 *   a persistent session that comes back sends their PUBRELs at once.
 * - Keep alive: no packet for 1.5 times the keep-alive closes the connection.
 * - Will: published when the connection closes for any reason but DISCONNECT or a newer
 *   connection taking its client id (which closes this one, "Duplicate Client ID"). An id that
 *   changed hands less than a second ago is not given again: the newcomer gets no CONNACK and
 *   is closed a second later (nats-server's flappers).
 * - Sessions, retained messages, QoS 1 and QoS 2 go through the account's JetStream state
 *   (mqtt_acct.c): the CONNECT waits until it is loaded; the session (subscriptions, their
 *   consumers, the PUBRELs in flight) is stored on every change and restored when a
 *   persistent client comes back (session present); a QoS 1 or 2 subscription is a durable
 *   consumer on $MQTT_msgs whose deliver subject we subscribe to, its deliveries get
 *   per-connection packet ids (a redelivery keeps its id and gets DUP), at most
 *   max_ack_pending wait for a PUBACK or PUBREC; a QoS 1 publish is acknowledged once
 *   JetStream stored it. At most STORE_WINDOW stores and PUBREL lookups are in flight before
 *   the connection stops reading.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <stdlib.h>

#include "actors/alloc.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_int.h"
#include "util/base64.h"
#include "util/log.h"

#define SUB_FWC_SUFFIX              " fwc"
#define ND_MQTT_DEFAULT_MAX_PAYLOAD (1024 * 1024)
#define ND_MQTT_MAX_PACKET          (64u * 1024 * 1024)
#define STORE_WINDOW                64 /* QoS 1 stores in flight before a connection stops reading */

/* ND_MQTT_CALL_STORED tags besides a PUBACK's packet id and ND_MQTT_TAG_NO_PUBACK. */
#define TAG_PUBREC   0x20000u /* | packet id: a QoS 2 message is in $MQTT_qos2in, answer PUBREC */
#define TAG_RELEASED 0x40000u /* | packet id: a released one is in $MQTT_msgs, remove it */
/* ND_MQTT_CALL_ANSWER tags (| packet id). */
#define ANS_FETCH  0x10000u /* a PUBREL's message, looked up in $MQTT_qos2in */
#define ANS_DELETE 0x20000u /* that message removed: answer PUBCOMP */
#define ANS_KIND   0xff0000u

#define RC_QOS2_WILL_REJECTED 0x10 /* nats-server's CONNACK code for a QoS 2 will it refuses */

#define PUBREL_DURABLE_PREFIX "$MQTT_PUBREL_"
#define PUBREL_SUBJECT_PREFIX "$MQTT.out.pubrel."
#define PUBREL_DELIVER_PREFIX "$MQTT.deliver.pubrel."
#define QOS2IN_PREFIX         "$MQTT.qos2.in."

/* One NATS subscription of the session (a filter "foo/#" has two: "foo.>" and its parent). */
typedef struct sub {
    char *subject, *sid;
    uint8_t qos;
    char *durable, *deliver; /* QoS 1: its JetStream consumer and deliver subject, else NULL */
} sub_t;

/* A filter whose retained messages go out right after the SUBACK. */
typedef struct post {
    char *filter;
    uint8_t qos;
} post_t;

/* A QoS 1 or 2 delivery waiting for its PUBACK or PUBREC, or (rel) a PUBREL waiting for its
 * PUBCOMP. */
typedef struct pend {
    uint16_t pi;
    bool rel;
    bool sent; /* rel: the PUBREL went out (at a reconnect, before its consumer redelivered it) */
    bool done; /* rel: PUBCOMP came before its consumer (re)delivered it, so it is acked then */
    /* the JetStream ack subject: of the message on $MQTT_msgs (NULL for a retained message),
     * or when rel of the PUBREL on $MQTT_out (NULL until its consumer delivered it) */
    char *ack;
} pend_t;

typedef struct sess {
    nd_mqtt_t *m;
    nd_mqtt_acct_t *ma;
    bool connected;
    bool waiting; /* the CONNECT waits for the account's JetStream state */
    bool jailed;  /* its client id flaps: closed when the timer fires */
    bool clean;
    uint16_t ka;
    char *id;
    char hash[20];
    sub_t *subs;
    size_t nsubs, subcap;
    uint32_t consumers_due;
    uint32_t stores_due; /* QoS 1 publishes whose PUBACK waits for JetStream */
    uint32_t rels_due;   /* PUBRELs from the client whose PUBCOMP waits for JetStream */
    bool pubrel;         /* the session has its PUBREL consumer (it had a QoS 2 subscription) */
    char qos2tok[64];    /* the client id as a subject token, or the hash when it cannot be one */
    uint32_t next_tag;
    post_t *post;
    size_t npost, postcap;
    pend_t *pend;
    size_t npend, pendcap;
    size_t nrel; /* the entries of pend that are PUBRELs */
    uint16_t next_pi;
    bool will_off; /* DISCONNECT: no will */
    int64_t ka_ms; /* 1.5 x keep alive; 0: none */
    int64_t last_ns;
    nd_mqtt_cid_t *cid; /* our client id's entry (owned) */
    /* will */
    bool has_will, will_retain;
    uint8_t will_qos;
    char *will_subject;
    size_t will_subject_len;
    uint8_t *will_msg;
    size_t will_len;
    /* SUBACKs waiting for their subscriptions to be in the sublist */
    uint8_t *suback;
    size_t suback_len, suback_cap;
} sess_t;

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void
trace_err(struct nd_conn *c, const char *what)
{
    nd_log_error("%s:%d - %s:%llu - %s", nd_pconn_ip(c), nd_pconn_port(c), nd_pconn_log_tag(c),
                 (unsigned long long)nd_pconn_cid(c), what);
}

static void
proto_error(nd_ctx_t *ctx, struct nd_conn *c, const char *what)
{
    trace_err(c, what);
    nd_pconn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
}

/* ---- output ---- */

static void
write_ack(struct nd_conn *c, uint8_t type_flags, uint16_t pi)
{
    uint8_t p[4] = {type_flags, 2, (uint8_t)(pi >> 8), (uint8_t)pi};
    nd_pconn_write(c, p, 4);
}

static void
write_connack(struct nd_conn *c, bool session_present, uint8_t rc)
{
    uint8_t p[4] = {ND_MQTT_CONNACK << 4, 2, session_present ? 1 : 0, rc};
    nd_pconn_write(c, p, 4);
}

/* A PUBLISH of topic (MQTT form) and payload. */
static void
write_publish(struct nd_conn *c, uint8_t flags, uint16_t pi, const uint8_t *topic, size_t tl,
              const char *data, size_t dl)
{
    uint8_t qos = (flags & ND_MQTT_PF_QOS) >> 1;
    uint32_t rem = (uint32_t)(2 + tl + (qos > 0 ? 2 : 0) + dl);
    char *p0 = nd_pconn_reserve(c, 5 + rem);
    uint8_t *p = (uint8_t *)p0;
    *p++ = (uint8_t)((ND_MQTT_PUBLISH << 4) | flags);
    p += nd_mqtt_put_remaining(p, rem);
    *p++ = (uint8_t)(tl >> 8);
    *p++ = (uint8_t)tl;
    memcpy(p, topic, tl);
    p += tl;
    if (qos > 0) {
        *p++ = (uint8_t)(pi >> 8);
        *p++ = (uint8_t)pi;
    }
    if (dl > 0)
        memcpy(p, data, dl);
    p += dl;
    nd_pconn_commit(c, (size_t)((char *)p - p0));
}

/* ---- publishing ---- */

/* nats-server's header on every message an MQTT client publishes. */
static size_t
pub_header(char *h, uint8_t qos)
{
    return (size_t)sprintf(h, "NATS/1.0\r\nNmqtt-Pub:%c\r\n\r\n", '0' + qos);
}

/* An MQTT publish (or will, or a released QoS 2 message): delivered live; QoS 1 and 2 also
 * stored in $MQTT_msgs for the QoS 1 and 2 subscriptions' consumers; retained also kept in
 * $MQTT_rmsgs (an empty one deletes). client: from the connection (not a will), whose stores
 * count in the connection's window and whose ND_MQTT_CALL_STORED for the $MQTT_msgs store comes
 * with tag (a PUBACK's packet id, or ND_MQTT_TAG_NO_PUBACK). Returns: whether that store was
 * made (else the caller answers at once). */
static bool
publish(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, const char *subj, size_t sl, uint8_t qos,
        bool retain, const char *data, size_t dl, bool client, uint32_t tag)
{
    char h[64];
    size_t hl = pub_header(h, qos);
    if (!nd_pconn_publish(ctx, c, subj, sl, NULL, 0, h, hl, data, dl))
        return false; /* denied by permissions: nothing stored either (nats-server acks it) */
    if (s->ma == NULL)
        return false;
    bool later = false;
    if (qos > 0) {
        size_t n = sl + 16;
        char *ms = nd_xmalloc(n);
        snprintf(ms, n, "$MQTT.msgs.%.*s", (int)sl, subj);
        if (client) {
            /* nats-server acknowledges once the message is stored: so do we, and the
             * connection reads on only while few stores are in flight (STORE_WINDOW). */
            nd_mqtt_acct_store_ack(ctx, s->ma, nd_pconn_cid(c), tag, ms, h, hl, data, dl);
            s->stores_due++;
            later = true;
        } else {
            nd_mqtt_acct_store(ctx, s->ma, ms, h, hl, data, dl);
        }
        nd_free(ms);
    }
    if (retain) {
        char *rs = nd_xmalloc(sl + 1);
        memcpy(rs, subj, sl);
        rs[sl] = '\0';
        nd_mqtt_retain_set(ctx, s->ma, rs, qos, data, dl, client ? nd_pconn_cid(c) : 0);
        if (client)
            s->stores_due++;
        nd_free(rs);
    }
    return later;
}

/* ---- CONNECT ---- */

static void
gen_client_id(char *out, uint64_t seed)
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t x = seed ^ (uint64_t)now_ns() ^ 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 22; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = digits[x % 62];
    }
    out[22] = '\0';
}

static char *
dup_bytes(const uint8_t *s, size_t n)
{
    char *p = nd_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* ---- session state ---- */

static pend_t *pend_find(sess_t *s, uint16_t pi);
static pend_t *pend_put(sess_t *s, uint16_t pi, const char *ack, size_t al);

static sub_t *
sub_find(sess_t *s, const char *sid, size_t sid_len)
{
    for (size_t i = 0; i < s->nsubs; i++)
        if (strlen(s->subs[i].sid) == sid_len && memcmp(s->subs[i].sid, sid, sid_len) == 0)
            return &s->subs[i];
    return NULL;
}

static sub_t *
sub_by_deliver(sess_t *s, const char *deliver, size_t len)
{
    for (size_t i = 0; i < s->nsubs; i++)
        if (s->subs[i].deliver != NULL && strlen(s->subs[i].deliver) == len &&
            memcmp(s->subs[i].deliver, deliver, len) == 0)
            return &s->subs[i];
    return NULL;
}

static sub_t *
sub_add(sess_t *s, const char *subject, size_t sl, const char *sid, size_t il)
{
    if (s->nsubs == s->subcap) {
        s->subcap = s->subcap ? s->subcap * 2 : 4;
        s->subs = nd_xrealloc(s->subs, s->subcap * sizeof(*s->subs));
    }
    sub_t *u = &s->subs[s->nsubs++];
    memset(u, 0, sizeof(*u));
    u->subject = nd_xmalloc(sl + 1);
    memcpy(u->subject, subject, sl);
    u->subject[sl] = '\0';
    u->sid = nd_xmalloc(il + 1);
    memcpy(u->sid, sid, il);
    u->sid[il] = '\0';
    return u;
}

static void
sub_free(sub_t *u)
{
    nd_free(u->subject);
    nd_free(u->sid);
    nd_free(u->durable);
    nd_free(u->deliver);
}

/* Drops u's JetStream consumer and deliver subscription (QoS 1 -> 0, or the sub goes). */
static void
sub_drop_consumer(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, sub_t *u)
{
    if (u->durable == NULL)
        return;
    nd_mqtt_acct_consumer_delete(ctx, s->ma, ND_MQTT_MSGS_STREAM, u->durable);
    (void)nd_pconn_unsubscribe(ctx, c, u->deliver, strlen(u->deliver));
    nd_free(u->durable);
    nd_free(u->deliver);
    u->durable = u->deliver = NULL;
}

static void
rand_token(char *out, size_t n, uint64_t seed)
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t x = seed ^ (uint64_t)now_ns() ^ 0x9e3779b97f4a7c15ull;
    x ^= (uint64_t)(uintptr_t)out;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = digits[x % 62];
    }
    out[n] = '\0';
}

/* Gives u a durable consumer on $MQTT_msgs (QoS 1 and 2); its answer comes as
 * ND_MQTT_CALL_CONSUMER. */
static void
sub_add_consumer(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, sub_t *u)
{
    char tok[24], durable[64], deliver[64];
    rand_token(tok, 16, nd_pconn_cid(c) + s->next_tag);
    snprintf(durable, sizeof durable, "%s_%s", s->hash, tok);
    snprintf(deliver, sizeof deliver, "$MQTT.sub.%s", tok);
    size_t fl = strlen(u->subject) + 16;
    char *filter = nd_xmalloc(fl);
    snprintf(filter, fl, "$MQTT.msgs.%s", u->subject);
    u->durable = nd_xstrdup(durable);
    u->deliver = nd_xstrdup(deliver);
    (void)nd_pconn_subscribe_internal(ctx, c, deliver, strlen(deliver), deliver, strlen(deliver));
    s->consumers_due++;
    nd_mqtt_acct_consumer_create(ctx, s->ma, nd_pconn_cid(c), ++s->next_tag, ND_MQTT_MSGS_STREAM,
                                 durable, filter, deliver);
    nd_free(filter);
}

/* ---- QoS 2 ---- */

static void
pubrel_names(const sess_t *s, char *durable, char *filter, char *deliver, size_t room)
{
    snprintf(durable, room, PUBREL_DURABLE_PREFIX "%s", s->hash);
    snprintf(filter, room, PUBREL_SUBJECT_PREFIX "%s", s->hash);
    snprintf(deliver, room, PUBREL_DELIVER_PREFIX "%s", s->hash);
}

/* Subscribes to the deliveries of the session's PUBREL consumer; create: also creates that
 * consumer (the first QoS 2 subscription; its answer comes as ND_MQTT_CALL_CONSUMER). */
static void
pubrel_start(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, bool create)
{
    char durable[64], filter[64], deliver[64];
    pubrel_names(s, durable, filter, deliver, sizeof durable);
    (void)nd_pconn_subscribe_internal(ctx, c, deliver, strlen(deliver), deliver, strlen(deliver));
    s->pubrel = true;
    if (!create)
        return;
    s->consumers_due++;
    nd_mqtt_acct_consumer_create(ctx, s->ma, nd_pconn_cid(c), ++s->next_tag, ND_MQTT_OUT_STREAM,
                                 durable, filter, deliver);
}

static void
pubrel_delete(nd_ctx_t *ctx, sess_t *s)
{
    char durable[64], filter[64], deliver[64];
    pubrel_names(s, durable, filter, deliver, sizeof durable);
    nd_mqtt_acct_consumer_delete(ctx, s->ma, ND_MQTT_OUT_STREAM, durable);
}

/* The client id as nats-server puts it in $MQTT_qos2in subjects, when it can be one token of a
 * subject; else (dots, wildcards, white space) the session's hash. */
static void
qos2_token(sess_t *s)
{
    const char *id = s->id;
    bool ok = id[0] != '\0' && strlen(id) < sizeof s->qos2tok;
    for (const char *p = id; ok && *p; p++)
        ok = *p != '.' && *p != '*' && *p != '>' && (unsigned char)*p > ' ' && *p != 0x7f;
    snprintf(s->qos2tok, sizeof s->qos2tok, "%s", ok ? id : s->hash);
}

static void
qos2_subject(const sess_t *s, uint16_t pi, char *out, size_t room)
{
    snprintf(out, room, QOS2IN_PREFIX "%s.%u", s->qos2tok, (unsigned)pi);
}

/* Drops the QoS 2 messages received and not released (a clean session's end or start). */
static void
qos2_purge(nd_ctx_t *ctx, sess_t *s)
{
    char body[128];
    snprintf(body, sizeof body, "{\"filter\":\"" QOS2IN_PREFIX "%s.>\"}", s->qos2tok);
    nd_mqtt_acct_request(ctx, s->ma, 0, 0, "$JS.API.STREAM.PURGE." ND_MQTT_QOS2IN_STREAM, body);
}

/* Stores the session record (nats-server keeps even clean ones while connected). */
static void
save_session(nd_ctx_t *ctx, sess_t *s)
{
    json_t *subs = json_array();
    for (size_t i = 0; i < s->nsubs; i++) {
        const sub_t *u = &s->subs[i];
        json_t *o = json_pack("{s:s, s:s, s:i}", "s", u->subject, "i", u->sid, "q", u->qos);
        if (u->durable != NULL) {
            json_object_set_new(o, "d", json_string(u->durable));
            json_object_set_new(o, "x", json_string(u->deliver));
        }
        json_array_append_new(subs, o);
    }
    json_t *rec = json_pack("{s:s, s:s, s:b, s:o}", "origin",
                            s->m->srv->opts.server_name != NULL ? s->m->srv->opts.server_name : "",
                            "id", s->id, "clean", s->clean, "subs", subs);
    if (s->pubrel) {
        /* The PUBRELs in flight: a reconnecting session sends them again at once
         * (MQTT-4.4.0-1), and gives their ids to no new message. */
        json_t *rels = json_array();
        for (size_t i = 0; i < s->npend; i++)
            if (s->pend[i].rel && !s->pend[i].done)
                json_array_append_new(rels, json_integer(s->pend[i].pi));
        json_object_set_new(rec, "pubrel", json_true());
        json_object_set_new(rec, "rels", rels);
    }
    char *js = json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    nd_mqtt_sess_put(ctx, s->ma, s->id, js);
    free(js);
}

/* Deletes the consumers a stored record names (a session being cleared). */
static void
drop_record_consumers(nd_ctx_t *ctx, sess_t *s, json_t *rec)
{
    json_t *subs = json_object_get(rec, "subs");
    size_t i;
    json_t *o;
    json_array_foreach(subs, i, o)
    {
        const char *d = json_string_value(json_object_get(o, "d"));
        if (d != NULL)
            nd_mqtt_acct_consumer_delete(ctx, s->ma, ND_MQTT_MSGS_STREAM, d);
    }
    if (json_is_true(json_object_get(rec, "pubrel")))
        pubrel_delete(ctx, s);
}

/* Subscribes again to what a present session had. */
static void
restore_subs(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, json_t *rec)
{
    json_t *subs = json_object_get(rec, "subs");
    size_t i;
    json_t *o;
    json_array_foreach(subs, i, o)
    {
        const char *subj = json_string_value(json_object_get(o, "s"));
        const char *sid = json_string_value(json_object_get(o, "i"));
        if (subj == NULL || sid == NULL)
            continue;
        if (nd_pconn_subscribe(ctx, c, subj, strlen(subj), sid, strlen(sid)) <= 0)
            continue;
        sub_t *u = sub_add(s, subj, strlen(subj), sid, strlen(sid));
        u->qos = (uint8_t)json_integer_value(json_object_get(o, "q"));
        const char *d = json_string_value(json_object_get(o, "d"));
        const char *x = json_string_value(json_object_get(o, "x"));
        if (d != NULL && x != NULL) {
            u->durable = nd_xstrdup(d);
            u->deliver = nd_xstrdup(x);
            (void)nd_pconn_subscribe_internal(ctx, c, x, strlen(x), x, strlen(x));
        }
    }
    /* The PUBRELs the client did not complete go again; their consumer on $MQTT_out also
     * redelivers them after ack_wait. */
    if (json_is_true(json_object_get(rec, "pubrel"))) {
        pubrel_start(ctx, c, s, false);
        json_t *rels = json_object_get(rec, "rels");
        json_array_foreach(rels, i, o)
        {
            json_int_t pi = json_integer_value(o);
            if (pi <= 0 || pi > 65535 || pend_find(s, (uint16_t)pi) != NULL)
                continue;
            pend_t *p = pend_put(s, (uint16_t)pi, NULL, 0);
            p->rel = p->sent = true;
            s->nrel++;
            write_ack(c, (ND_MQTT_PUBREL << 4) | 0x2, (uint16_t)pi);
        }
    }
}

static bool
connect_finish(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, int st)
{
    if (st < 0) {
        /* nats-server closes without a CONNACK ("unable to connect: ... JetStream not enabled
         * for account"). */
        s->has_will = false;
        nd_log_error("%s:%d - %s:%llu - \"%s\" - unable to connect: JetStream not available "
                     "for account \"%s\"",
                     nd_pconn_ip(c), nd_pconn_port(c), nd_pconn_log_tag(c),
                     (unsigned long long)nd_pconn_cid(c), s->id, nd_acct_name(nd_pconn_account(c)));
        nd_pconn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    /* The client id is ours now; a connection that held it closes without its will. */
    size_t il = strlen(s->id);
    nd_mqtt_cid_t *e = nd_xmalloc(sizeof(*e) + il + 1);
    memset(e, 0, sizeof(*e));
    memcpy(e->id, s->id, il + 1);
    e->acct = nd_pconn_account(c);
    e->actor = nd_pconn_actor(c);
    s->cid = e;
    bool jailed;
    nd_actor_t *old = nd_mqtt_cid_take(s->m, e, now_ns(), &jailed);
    if (jailed) {
        nd_free(e);
        s->cid = NULL;
        s->jailed = true;
        s->has_will = false;
        nd_pconn_timer_start(ctx, c, ND_MQTT_JAIL_NS / 1000000);
        return true; /* no CONNACK; the timer closes it, input waits */
    }
    if (old != NULL) {
        nd_log_info("%s:%d - %s:%llu - Replacing old client since both have the same client ID "
                    "\"%s\"",
                    nd_pconn_ip(c), nd_pconn_port(c), nd_pconn_log_tag(c),
                    (unsigned long long)nd_pconn_cid(c), e->id);
        nd_conn_send_close(ctx, old, ND_CLOSE_DUPLICATE_CLIENT_ID);
        nd_actor_unref(ctx, old);
    }
    char subj[64];
    nd_mqtt_sess_subject(s->id, subj, sizeof subj);
    snprintf(s->hash, sizeof s->hash, "%.16s", subj + strlen("$MQTT.sess."));
    qos2_token(s);

    bool present = false;
    char *js = nd_mqtt_sess_get(s->ma, s->id);
    json_t *rec = js != NULL ? json_loads(js, 0, NULL) : NULL;
    nd_free(js);
    if (rec != NULL) {
        if (s->clean || json_is_true(json_object_get(rec, "clean")))
            drop_record_consumers(ctx, s, rec); /* MQTT-3.1.2-6: a clean start */
        else
            present = true;
    }
    if (rec != NULL && !present)
        qos2_purge(ctx, s); /* a clean session's QoS 2 messages left by a server that stopped */
    s->connected = true;
    write_connack(c, present, ND_MQTT_RC_ACCEPTED);
    if (present)
        restore_subs(ctx, c, s, rec);
    json_decref(rec);
    save_session(ctx, s);
    s->last_ns = now_ns();
    if (s->ka > 0) {
        s->ka_ms = (int64_t)s->ka * 1500;
        nd_pconn_timer_start(ctx, c, s->ka_ms);
    }
    return true;
}

/* Returns: false when the connection closed. */
static bool
on_connect(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, nd_mqtt_reader_t *r)
{
    const uint8_t *name, *cid, *wt = NULL, *wm = NULL, *user = NULL, *pass = NULL;
    size_t name_len, cid_len, wt_len = 0, wm_len = 0, user_len = 0, pass_len = 0;
    uint8_t level, flags;
    uint16_t ka;
    if (!nd_mqtt_read_bytes(r, &name, &name_len)) {
        proto_error(ctx, c, "error reading protocol name");
        return false;
    }
    if (name_len != 4 || memcmp(name, "MQTT", 4) != 0) {
        proto_error(ctx, c, "expected connect packet with protocol name \"MQTT\"");
        return false;
    }
    if (!nd_mqtt_read_u8(r, &level)) {
        proto_error(ctx, c, "error reading protocol level");
        return false;
    }
    if (level != 4) {
        write_connack(c, false, ND_MQTT_RC_BAD_PROTOCOL);
        proto_error(ctx, c, "unacceptable protocol version");
        return false;
    }
    if (!nd_mqtt_read_u8(r, &flags) || (flags & ND_MQTT_CF_RESERVED) != 0) {
        proto_error(ctx, c, "connect flags reserved bit not set to 0");
        return false;
    }
    uint8_t wqos = (flags & ND_MQTT_CF_WILL_QOS) >> 3;
    bool wretain = (flags & ND_MQTT_CF_WILL_RETAIN) != 0;
    bool has_will = (flags & ND_MQTT_CF_WILL) != 0;
    if ((!has_will && (wqos != 0 || wretain)) || (has_will && wqos == 3)) {
        proto_error(ctx, c, "invalid will flags");
        return false;
    }
    bool has_user = (flags & ND_MQTT_CF_USER) != 0, has_pass = (flags & ND_MQTT_CF_PASSWORD) != 0;
    if (has_pass && !has_user) {
        proto_error(ctx, c, "password flag set but username flag is not");
        return false;
    }
    if (!nd_mqtt_read_u16(r, &ka) || !nd_mqtt_read_bytes(r, &cid, &cid_len)) {
        proto_error(ctx, c, "error reading connect packet");
        return false;
    }
    bool clean = (flags & ND_MQTT_CF_CLEAN) != 0;
    if (cid_len == 0 && !clean) {
        write_connack(c, false, ND_MQTT_RC_ID_REJECTED);
        proto_error(ctx, c, "client ID cannot be empty if clean session flag is not set");
        return false;
    }
    if (!nd_mqtt_valid_string(cid, cid_len)) {
        write_connack(c, false, ND_MQTT_RC_ID_REJECTED);
        proto_error(ctx, c, "invalid client ID");
        return false;
    }
    if (has_will) {
        if (!nd_mqtt_read_bytes(r, &wt, &wt_len) || !nd_mqtt_read_bytes(r, &wm, &wm_len)) {
            proto_error(ctx, c, "error reading will");
            return false;
        }
        if (wt_len == 0 || !nd_mqtt_valid_string(wt, wt_len)) {
            proto_error(ctx, c, "empty or invalid will topic");
            return false;
        }
    }
    if (has_user) {
        if (!nd_mqtt_read_bytes(r, &user, &user_len)) {
            proto_error(ctx, c, "error reading user name");
            return false;
        }
        if (user_len == 0 || !nd_mqtt_valid_string(user, user_len)) {
            write_connack(c, false, ND_MQTT_RC_BAD_USER_PASS);
            proto_error(ctx, c, "empty or invalid user name");
            return false;
        }
    }
    if (has_pass && !nd_mqtt_read_bytes(r, &pass, &pass_len)) {
        proto_error(ctx, c, "error reading password");
        return false;
    }
    if (has_will && wqos == 2 && s->m->mo->reject_qos2_publish) {
        /* nats-server's own return code for it (MQTT 3.1.1 has none). */
        write_connack(c, false, RC_QOS2_WILL_REJECTED);
        proto_error(ctx, c, "server does not accept QoS2 for Will messages");
        return false;
    }
    if (has_will) {
        s->will_subject = nd_xmalloc(2 * wt_len + 1);
        if (nd_mqtt_topic_to_subject(wt, wt_len, false, false, s->will_subject,
                                     &s->will_subject_len) != ND_MQTT_TOPIC_OK) {
            proto_error(ctx, c, "invalid will topic");
            return false;
        }
        s->has_will = true;
        s->will_qos = wqos;
        s->will_retain = wretain;
        s->will_msg = nd_xmalloc(wm_len > 0 ? wm_len : 1);
        memcpy(s->will_msg, wm, wm_len);
        s->will_len = wm_len;
    }

    char gen[23];
    char *id;
    if (cid_len == 0) {
        gen_client_id(gen, nd_pconn_cid(c));
        id = gen;
    } else {
        id = dup_bytes(cid, cid_len);
    }
    char *u = user != NULL ? dup_bytes(user, user_len) : NULL;
    char *pw = pass != NULL ? dup_bytes(pass, pass_len) : NULL;
    bool ok = nd_pconn_login(ctx, c, u, pw, &s->m->auth, id);
    nd_free(u);
    nd_free(pw);
    if (!ok) {
        if (id != gen)
            nd_free(id);
        s->has_will = false; /* never connected: no will */
        if (!nd_pconn_closing(c)) {
            write_connack(c, false, ND_MQTT_RC_NOT_AUTHORIZED);
            nd_pconn_close(ctx, c, ND_CLOSE_AUTH_FAILURE);
        }
        return false;
    }

    s->id = id != gen ? id : nd_xstrdup(gen);
    s->clean = clean;
    s->ka = ka;
    s->ma = nd_mqtt_acct_get(ctx, s->m, nd_pconn_account(c));
    int st = nd_mqtt_acct_wait(ctx, s->ma, nd_pconn_cid(c));
    if (st == 0) {
        s->waiting = true; /* ND_MQTT_CALL_READY goes on (connect_finish) */
        return true;
    }
    return connect_finish(ctx, c, s, st);
}

/* ---- PUBLISH ---- */

/* A QoS 2 PUBLISH: kept in $MQTT_qos2in (once per packet id; the flags and the subject in its
 * header) until its PUBREL; PUBREC once stored. */
static void
qos2_store(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint8_t flags, uint16_t pi,
           const char *subj, size_t sl, const char *data, size_t dl)
{
    static const char hex[] = "0123456789abcdef";
    size_t room = sl + 80;
    char *h = nd_xmalloc(room);
    int hl = snprintf(h, room, "NATS/1.0\r\nNmqtt-Pub:2%c\r\nNmqtt-Subject:%.*s\r\n\r\n",
                      hex[flags & 0x0f], (int)sl, subj);
    char qs[128];
    qos2_subject(s, pi, qs, sizeof qs);
    nd_mqtt_acct_store_ack(ctx, s->ma, nd_pconn_cid(c), TAG_PUBREC | pi, qs, h, (size_t)hl, data,
                           dl);
    s->stores_due++;
    nd_free(h);
}

/* The value of a header in a NATS header block, or NULL. */
static const char *
hdr_value(const char *h, size_t hl, const char *key, size_t *vl)
{
    size_t kl = strlen(key);
    const char *end = h + hl;
    const char *p = memchr(h, '\n', hl); /* past the status line */
    while (p != NULL && ++p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == ':') {
            const char *v = p + kl + 1;
            while (v < eol && *v == ' ')
                v++;
            *vl = (size_t)(eol - v);
            return v;
        }
        p = memchr(p, '\n', (size_t)(end - p));
    }
    return NULL;
}

/* A base64 field of a JSON object, decoded (owned by the caller), or NULL. */
static char *
b64_field(json_t *o, const char *key, size_t *n)
{
    const char *v = json_string_value(json_object_get(o, key));
    *n = 0;
    if (v == NULL)
        return NULL;
    size_t vl = strlen(v);
    size_t cap = nd_b64_decoded_max(vl) + 1;
    char *out = nd_xmalloc(cap);
    if (!nd_b64_decode(ND_B64_STD, v, vl, (uint8_t *)out, cap, n)) {
        nd_free(out);
        *n = 0;
        return NULL;
    }
    return out;
}

/* PUBREL from the client: its message is looked up in $MQTT_qos2in (ANS_FETCH). */
static void
on_pubrel(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint16_t pi)
{
    char qs[128], body[200];
    qos2_subject(s, pi, qs, sizeof qs);
    snprintf(body, sizeof body, "{\"last_by_subj\":\"%s\"}", qs);
    s->rels_due++;
    nd_mqtt_acct_request(ctx, s->ma, nd_pconn_cid(c), ANS_FETCH | pi,
                         "$JS.API.STREAM.MSG.GET." ND_MQTT_QOS2IN_STREAM, body);
}

/* Removes a released message from $MQTT_qos2in (its subject holds only it); PUBCOMP follows
 * (ANS_DELETE). */
static void
qos2_remove(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint16_t pi)
{
    char qs[128], body[200];
    qos2_subject(s, pi, qs, sizeof qs);
    snprintf(body, sizeof body, "{\"filter\":\"%s\"}", qs);
    nd_mqtt_acct_request(ctx, s->ma, nd_pconn_cid(c), ANS_DELETE | pi,
                         "$JS.API.STREAM.PURGE." ND_MQTT_QOS2IN_STREAM, body);
}

/* The lookup of a PUBREL's message answered: the message is published (as a QoS 2 message
 * from the client), then once $MQTT_msgs has it (TAG_RELEASED) removed, and PUBCOMP follows
 * the removal, so the client reuses the id only after both; none (released already, or never
 * received): PUBCOMP at once, as nats-server. A session that ends between the publish and the
 * removal gets the message again for the PUBREL its client sends again (at least once there;
 * nats-server removes first, at most once). */
static void
on_pubrel_fetched(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint16_t pi, const char *json)
{
    json_t *o = json != NULL ? json_loads(json, 0, NULL) : NULL;
    json_t *msg = json_object_get(o, "message");
    json_int_t seq = json_integer_value(json_object_get(msg, "seq"));
    size_t hl = 0, dl = 0, sl = 0, pl = 0;
    char *h = msg != NULL ? b64_field(msg, "hdrs", &hl) : NULL;
    char *data = msg != NULL ? b64_field(msg, "data", &dl) : NULL;
    const char *subj = h != NULL ? hdr_value(h, hl, "Nmqtt-Subject", &sl) : NULL;
    const char *pub = h != NULL ? hdr_value(h, hl, "Nmqtt-Pub", &pl) : NULL;
    if (msg != NULL && seq > 0) {
        bool stored = false;
        if (subj != NULL && sl > 0 && pub != NULL && pl >= 1 && pub[0] == '2') {
            uint8_t f = 0;
            if (pl >= 2)
                f = (uint8_t)(pub[1] >= 'a' ? pub[1] - 'a' + 10 : pub[1] - '0');
            stored = publish(ctx, c, s, subj, sl, 2, (f & ND_MQTT_PF_RETAIN) != 0, data, dl, true,
                             TAG_RELEASED | pi);
        } else {
            trace_err(c, "invalid message in the QoS 2 stream");
        }
        if (!stored)
            qos2_remove(ctx, c, s, pi); /* denied by permissions, or invalid */
    } else {
        s->rels_due--;
        write_ack(c, ND_MQTT_PUBCOMP << 4, pi);
        nd_pconn_resume(ctx, c);
    }
    nd_free(h);
    nd_free(data);
    json_decref(o);
}

static bool
on_publish(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint8_t flags, nd_mqtt_reader_t *r)
{
    uint8_t qos = (flags & ND_MQTT_PF_QOS) >> 1;
    if (qos == 3) {
        proto_error(ctx, c, "invalid QoS 3 in publish");
        return false;
    }
    if (qos == 0 && (flags & ND_MQTT_PF_DUP) != 0) {
        proto_error(ctx, c, "duplicate flag set for QoS 0 message");
        return false;
    }
    if (qos == 2 && s->m->mo->reject_qos2_publish) {
        /* As nats-server 2.9.10, which has no QoS 2, and 2.10+ with reject_qos2_publish. */
        proto_error(ctx, c, "QoS=2 is disabled for PUBLISH messages");
        return false;
    }
    const uint8_t *topic;
    size_t tl;
    if (!nd_mqtt_read_bytes(r, &topic, &tl)) {
        proto_error(ctx, c, "error reading topic");
        return false;
    }
    if (tl == 0 || !nd_mqtt_valid_string(topic, tl)) {
        proto_error(ctx, c, "empty or invalid topic");
        return false;
    }
    uint16_t pi = 0;
    if (qos > 0 && (!nd_mqtt_read_u16(r, &pi) || pi == 0)) {
        proto_error(ctx, c, "invalid packet identifier");
        return false;
    }
    char stack[256];
    char *subj = 2 * tl + 1 <= sizeof stack ? stack : nd_xmalloc(2 * tl + 1);
    size_t sl;
    nd_mqtt_topic_status_t st = nd_mqtt_topic_to_subject(topic, tl, false, false, subj, &sl);
    if (st != ND_MQTT_TOPIC_OK) {
        if (subj != stack)
            nd_free(subj);
        proto_error(ctx, c,
                    st == ND_MQTT_TOPIC_WILDCARD ? "wildcards not allowed in publish's topic"
                                                 : "unsupported character in topic");
        return false;
    }
    const char *data = (const char *)r->p + r->off;
    size_t dl = r->len - r->off;
    if (qos == 2) {
        qos2_store(ctx, c, s, flags, pi, subj, sl, data, dl);
        if (subj != stack)
            nd_free(subj);
        return true;
    }
    bool later =
        publish(ctx, c, s, subj, sl, qos, (flags & ND_MQTT_PF_RETAIN) != 0, data, dl, true, pi);
    if (subj != stack)
        nd_free(subj);
    if (qos == 1 && !later)
        write_ack(c, ND_MQTT_PUBACK << 4, pi);
    return true;
}

/* ---- SUBSCRIBE / UNSUBSCRIBE ---- */

static void
suback_add(sess_t *s, const uint8_t *p, size_t n)
{
    if (s->suback_len + n > s->suback_cap) {
        s->suback_cap = nd_grow_cap(s->suback_cap, s->suback_len + n, 64);
        s->suback = nd_xrealloc(s->suback, s->suback_cap);
    }
    memcpy(s->suback + s->suback_len, p, n);
    s->suback_len += n;
}

/* Subscribes (or changes the QoS of) one NATS subscription of a filter. Returns: false when
 * refused. */
static bool
subscribe_sid(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, const char *subj, size_t sl,
              const char *sid, size_t il, uint8_t qos)
{
    sub_t *u = sub_find(s, sid, il);
    if (u == NULL) {
        if (nd_pconn_subscribe(ctx, c, subj, sl, sid, il) <= 0)
            return false;
        u = sub_add(s, subj, sl, sid, il);
    }
    u->qos = qos;
    if (qos > 0 && u->durable == NULL)
        sub_add_consumer(ctx, c, s, u);
    else if (qos == 0)
        sub_drop_consumer(ctx, c, s, u);
    return true;
}

static void
post_add(sess_t *s, const char *filter, size_t n, uint8_t qos)
{
    if (s->npost == s->postcap) {
        s->postcap = s->postcap ? s->postcap * 2 : 4;
        s->post = nd_xrealloc(s->post, s->postcap * sizeof(*s->post));
    }
    s->post[s->npost].filter = nd_xmalloc(n + 1);
    memcpy(s->post[s->npost].filter, filter, n);
    s->post[s->npost].filter[n] = '\0';
    s->post[s->npost].qos = qos;
    s->npost++;
}

/* Subscribes to one filter (subject form). Returns: the SUBACK code. */
static uint8_t
subscribe_one(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, const char *subj, size_t sl, uint8_t qos)
{
    uint8_t granted = qos;
    if (granted == 2 && s->m->mo->downgrade_qos2_subscribe)
        granted = 1; /* as nats-server 2.9.10, which has no QoS 2 */
    if (!subscribe_sid(ctx, c, s, subj, sl, subj, sl, granted))
        return 0x80;
    if (granted == 2 && !s->pubrel)
        pubrel_start(ctx, c, s, true); /* the SUBACK waits for its consumer too */
    if (nd_mqtt_needs_parent_sub(subj, sl)) {
        char sid[4096 + sizeof SUB_FWC_SUFFIX];
        if (sl + sizeof SUB_FWC_SUFFIX <= sizeof sid) {
            memcpy(sid, subj, sl);
            memcpy(sid + sl, SUB_FWC_SUFFIX, sizeof SUB_FWC_SUFFIX - 1);
            (void)subscribe_sid(ctx, c, s, subj, sl - 2, sid, sl + sizeof SUB_FWC_SUFFIX - 1,
                                granted);
        }
    }
    post_add(s, subj, sl, granted);
    if (nd_mqtt_needs_parent_sub(subj, sl))
        post_add(s, subj, sl - 2, granted); /* "foo/#" also gets foo's retained message */
    return granted;
}

static void
unsubscribe_sid(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, const char *sid, size_t il)
{
    (void)nd_pconn_unsubscribe(ctx, c, sid, il);
    sub_t *u = sub_find(s, sid, il);
    if (u == NULL)
        return;
    sub_drop_consumer(ctx, c, s, u);
    sub_free(u);
    *u = s->subs[--s->nsubs];
}

/* ---- QoS 1 and 2 deliveries ---- */

static pend_t *
pend_find(sess_t *s, uint16_t pi)
{
    for (size_t i = 0; i < s->npend; i++)
        if (s->pend[i].pi == pi)
            return &s->pend[i];
    return NULL;
}

static char *
dup_ack(const char *ack, size_t al)
{
    if (ack == NULL)
        return NULL;
    char *p = nd_xmalloc(al + 1);
    memcpy(p, ack, al);
    p[al] = '\0';
    return p;
}

/* An entry for packet id pi (not in use). */
static pend_t *
pend_put(sess_t *s, uint16_t pi, const char *ack, size_t al)
{
    if (s->npend == s->pendcap) {
        s->pendcap = s->pendcap ? s->pendcap * 2 : 8;
        s->pend = nd_xrealloc(s->pend, s->pendcap * sizeof(*s->pend));
    }
    pend_t *p = &s->pend[s->npend++];
    p->pi = pi;
    p->rel = p->sent = p->done = false;
    p->ack = dup_ack(ack, al);
    return p;
}

/* A new packet id (never 0, none in use). Returns: 0 when all are in use. */
static uint16_t
pend_add(sess_t *s, const char *ack, size_t al)
{
    for (uint32_t tries = 0; tries < 65535; tries++) {
        s->next_pi = s->next_pi == 65535 ? 1 : (uint16_t)(s->next_pi + 1);
        if (pend_find(s, s->next_pi) == NULL)
            break;
    }
    if (pend_find(s, s->next_pi) != NULL)
        return 0;
    return pend_put(s, s->next_pi, ack, al)->pi;
}

/* Forgets p, acknowledging its JetStream message. */
static void
pend_drop(nd_ctx_t *ctx, sess_t *s, pend_t *p)
{
    if (p->ack != NULL && s->ma != NULL)
        nd_mqtt_acct_ack(ctx, s->ma, p->ack);
    nd_free(p->ack);
    if (p->rel)
        s->nrel--;
    *p = s->pend[--s->npend];
}

/* PUBACK. */
static void
pend_remove(nd_ctx_t *ctx, sess_t *s, uint16_t pi)
{
    pend_t *p = pend_find(s, pi);
    if (p == NULL || p->rel)
        return; /* a PUBACK for an id we never sent, or one in its PUBREL stage: ignored */
    pend_drop(ctx, s, p);
}

/* PUBREC from the client (a QoS 2 delivery received): the message on $MQTT_msgs is
 * acknowledged and the PUBREL it is owed goes to $MQTT_out, whose consumer (pubrel_start)
 * hands it back to be sent now and again until PUBCOMP, across reconnects of the session. An
 * unknown id is answered all the same, as nats-server. */
static void
on_pubrec(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint16_t pi)
{
    if (!s->pubrel || s->ma == NULL)
        return; /* never sent a QoS 2 message */
    pend_t *p = pend_find(s, pi);
    if (p != NULL && p->rel)
        return; /* PUBREC again: the PUBREL is on its way */
    if (p != NULL) {
        if (p->ack != NULL)
            nd_mqtt_acct_ack(ctx, s->ma, p->ack);
        nd_free(p->ack);
        p->ack = NULL;
    } else {
        p = pend_put(s, pi, NULL, 0);
    }
    p->rel = true;
    s->nrel++;
    if (!s->clean)
        save_session(ctx, s);
    char durable[64], subj[64], deliver[64], h[64];
    pubrel_names(s, durable, subj, deliver, sizeof durable);
    int hl = snprintf(h, sizeof h, "NATS/1.0\r\nNmqtt-PubRel:%u\r\n\r\n", (unsigned)pi);
    nd_mqtt_acct_store_ack(ctx, s->ma, nd_pconn_cid(c), ND_MQTT_TAG_NO_PUBACK, subj, h, (size_t)hl,
                           "", 0);
    s->stores_due++;
}

/* PUBCOMP from the client: the PUBREL is acknowledged on $MQTT_out and the id is free. */
static void
on_pubcomp(nd_ctx_t *ctx, sess_t *s, uint16_t pi)
{
    pend_t *p = pend_find(s, pi);
    if (p == NULL || !p->rel || p->done)
        return;
    if (p->ack == NULL)
        p->done = true; /* sent again at a reconnect: its consumer redelivers it, acked then */
    else
        pend_drop(ctx, s, p);
    if (!s->clean)
        save_session(ctx, s);
}

/* A PUBREL from the session's consumer on $MQTT_out: sent with its packet id, which stays in
 * use until PUBCOMP; again after ack_wait without PUBCOMP. One that a reconnect sent already
 * (its ack subject unknown then) is not sent again, one completed meanwhile is acknowledged. */
static void
deliver_pubrel(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, const nd_pconn_msg_t *m)
{
    size_t vl = 0;
    const char *v = m->hdr != NULL ? hdr_value(m->hdr, m->hdr_len, "Nmqtt-PubRel", &vl) : NULL;
    if (v == NULL || vl == 0 || vl > 5 || m->reply_len == 0)
        return;
    unsigned long pi = 0;
    for (size_t i = 0; i < vl; i++) {
        if (v[i] < '0' || v[i] > '9')
            return;
        pi = pi * 10 + (unsigned long)(v[i] - '0');
    }
    if (pi == 0 || pi > 65535)
        return;
    pend_t *p = pend_find(s, (uint16_t)pi);
    if (p == NULL) {
        p = pend_put(s, (uint16_t)pi, NULL, 0);
    } else if (!p->rel) {
        /* A PUBLISH waits on this id: it cannot be the PUBREL's (PUBREC moved it to rel). */
        return;
    }
    if (!p->rel) {
        p->rel = true; /* its PUBREC came in an earlier connection */
        s->nrel++;
    }
    /* Sent unless a reconnect sent it already; again when this is a redelivery. */
    bool send = !p->sent || p->ack != NULL;
    nd_free(p->ack);
    p->ack = dup_ack(m->reply, m->reply_len);
    if (p->done) {
        pend_drop(ctx, s, p);
        return;
    }
    p->sent = true;
    if (send)
        write_ack(c, (ND_MQTT_PUBREL << 4) | 0x2, (uint16_t)pi);
}

/* Writes a PUBLISH of subject (NATS form) with its flags. */
static void
send_publish(struct nd_conn *c, uint8_t flags, uint16_t pi, const char *subj, size_t sl,
             const char *data, size_t dl)
{
    uint8_t stack[256];
    uint8_t *topic = sl <= sizeof stack ? stack : nd_xmalloc(sl);
    size_t tl = nd_mqtt_subject_to_topic(subj, sl, false, topic);
    write_publish(c, flags, pi, topic, tl, data, dl);
    if (topic != stack)
        nd_free(topic);
}

/* The retained messages of the filters just acknowledged, with the retain flag, at the lower
 * QoS of the message and the subscription. */
static void
send_retained(struct nd_conn *c, sess_t *s)
{
    for (size_t i = 0; i < s->npost; i++) {
        nd_mqtt_retained_t *v = NULL;
        size_t n = s->ma != NULL ? nd_mqtt_retain_match(s->ma, s->post[i].filter, &v) : 0;
        for (size_t k = 0; k < n; k++) {
            if (!(v[k].subject[0] == '$' &&
                  nd_mqtt_filter_reserved(s->post[i].filter, strlen(s->post[i].filter)))) {
                uint8_t qos = v[k].qos < s->post[i].qos ? v[k].qos : s->post[i].qos;
                /* nats-server does not send a QoS 2 retained message with reject_qos2_publish */
                bool skip = qos == 2 && s->m->mo->reject_qos2_publish;
                uint16_t pi = qos > 0 && !skip ? pend_add(s, NULL, 0) : 0;
                if (!skip && (qos == 0 || pi != 0))
                    send_publish(c, (uint8_t)(ND_MQTT_PF_RETAIN | (qos << 1)), pi, v[k].subject,
                                 strlen(v[k].subject), v[k].data, v[k].len);
            }
            nd_free(v[k].subject);
            nd_free(v[k].data);
        }
        nd_free(v);
        nd_free(s->post[i].filter);
    }
    s->npost = 0;
}

/* Sends the SUBACKs (and their retained messages) once every subscription is in the sublist
 * and every consumer exists, then reads on. */
static void
flush_subacks(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s)
{
    if (nd_pconn_subs_due(c) > 0 || s->consumers_due > 0)
        return;
    if (s->suback_len > 0) {
        nd_pconn_write(c, s->suback, s->suback_len);
        s->suback_len = 0;
    }
    send_retained(c, s);
    nd_pconn_resume(ctx, c);
}

static bool
on_subscribe(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint8_t flags, nd_mqtt_reader_t *r,
             bool unsub)
{
    if (flags != 0x2) {
        proto_error(ctx, c,
                    unsub ? "wrong unsubscribe reserved flags" : "wrong subscribe reserved flags");
        return false;
    }
    uint16_t pi;
    /* nats-server 2.9.10 answers a packet identifier 0 as it is. */
    if (!nd_mqtt_read_u16(r, &pi)) {
        proto_error(ctx, c, "invalid packet identifier");
        return false;
    }
    if (r->off == r->len) {
        proto_error(ctx, c, "subscribe protocol must contain at least 1 topic filter");
        return false;
    }
    uint8_t codes[512];
    size_t ncodes = 0;
    uint8_t *many = NULL;
    while (r->off < r->len) {
        const uint8_t *f;
        size_t fl;
        uint8_t qos = 0;
        if (!nd_mqtt_read_bytes(r, &f, &fl) || (!unsub && !nd_mqtt_read_u8(r, &qos))) {
            nd_free(many);
            proto_error(ctx, c, "error reading topic filter");
            return false;
        }
        if (!unsub && qos > 2) {
            nd_free(many);
            proto_error(ctx, c, "invalid QoS in subscribe");
            return false;
        }
        if (fl == 0 || !nd_mqtt_valid_string(f, fl)) {
            /* MQTT-4.7.3-1: a filter is at least one character long. */
            nd_free(many);
            proto_error(ctx, c, "empty or invalid topic filter");
            return false;
        }
        char stack[256];
        char *subj = 2 * fl + 1 <= sizeof stack ? stack : nd_xmalloc(2 * fl + 1);
        size_t sl = 0;
        bool ok =
            fl > 0 && nd_mqtt_topic_to_subject(f, fl, true, false, subj, &sl) == ND_MQTT_TOPIC_OK;
        uint8_t code = 0x80;
        if (unsub) {
            if (ok) {
                unsubscribe_sid(ctx, c, s, subj, sl);
                if (nd_mqtt_needs_parent_sub(subj, sl)) {
                    char sid[4096 + sizeof SUB_FWC_SUFFIX];
                    if (sl + sizeof SUB_FWC_SUFFIX <= sizeof sid) {
                        memcpy(sid, subj, sl);
                        memcpy(sid + sl, SUB_FWC_SUFFIX, sizeof SUB_FWC_SUFFIX - 1);
                        unsubscribe_sid(ctx, c, s, sid, sl + sizeof SUB_FWC_SUFFIX - 1);
                    }
                }
            }
        } else if (ok) {
            code = subscribe_one(ctx, c, s, subj, sl, qos);
        }
        if (subj != stack)
            nd_free(subj);
        if (!unsub) {
            if (ncodes == sizeof codes && many == NULL) {
                many = nd_xmalloc(r->len);
                memcpy(many, codes, ncodes);
            }
            if (many != NULL)
                many[ncodes++] = code;
            else
                codes[ncodes++] = code;
        }
    }
    save_session(ctx, s);
    if (unsub) {
        write_ack(c, ND_MQTT_UNSUBACK << 4, pi);
        return true;
    }
    uint8_t hdr[7];
    size_t h = 0;
    hdr[h++] = ND_MQTT_SUBACK << 4;
    h += nd_mqtt_put_remaining(hdr + h, (uint32_t)(2 + ncodes));
    hdr[h++] = (uint8_t)(pi >> 8);
    hdr[h++] = (uint8_t)pi;
    const uint8_t *cp = many != NULL ? many : codes;
    /* Sent once the subscriptions are in the sublist and their consumers exist. */
    suback_add(s, hdr, h);
    suback_add(s, cp, ncodes);
    nd_free(many);
    flush_subacks(ctx, c, s);
    return true;
}

/* ---- the vtable ---- */

static void
on_start(nd_ctx_t *ctx, struct nd_conn *c)
{
    (void)ctx;
    sess_t *s = nd_new(sess_t);
    s->m = nd_pconn_arg(c);
    s->last_ns = now_ns();
    nd_pconn_set_state(c, s);
}

/* Handles one whole packet. Returns: false when the connection closed. */
static bool
handle(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint8_t tf, const uint8_t *body, size_t len)
{
    uint8_t type = tf >> 4, flags = tf & 0x0f;
    nd_mqtt_reader_t r = {.p = body, .len = len, .off = 0};
    /* MQTT-2.2.2-2: flags that the packet type fixes must be as fixed (2.10+; 2.9.10 does not
     * look at them for CONNECT and PINGREQ). */
    if (type != ND_MQTT_PUBLISH && flags != nd_mqtt_fixed_flags(type)) {
        proto_error(ctx, c, "invalid flags in the fixed header");
        return false;
    }
    if ((type == ND_MQTT_PINGREQ || type == ND_MQTT_DISCONNECT) && len != 0) {
        proto_error(ctx, c, "packet has no body but its remaining length is not 0");
        return false;
    }
    if (!s->connected) {
        if (type != ND_MQTT_CONNECT) {
            proto_error(ctx, c, "first packet should be a CONNECT");
            return false;
        }
        return on_connect(ctx, c, s, &r);
    }
    switch (type) {
    case ND_MQTT_CONNECT:
        proto_error(ctx, c, "second connect packet");
        return false;
    case ND_MQTT_PUBLISH:
        return on_publish(ctx, c, s, flags, &r);
    case ND_MQTT_PUBACK: {
        uint16_t pi;
        if (!nd_mqtt_read_u16(&r, &pi)) {
            proto_error(ctx, c, "error reading packet identifier");
            return false;
        }
        pend_remove(ctx, s, pi);
        return true;
    }
    case ND_MQTT_PUBREC:
    case ND_MQTT_PUBREL:
    case ND_MQTT_PUBCOMP: {
        uint16_t pi;
        if (!nd_mqtt_read_u16(&r, &pi) || pi == 0) {
            proto_error(ctx, c, "invalid packet identifier");
            return false;
        }
        if (type == ND_MQTT_PUBREC)
            on_pubrec(ctx, c, s, pi);
        else if (type == ND_MQTT_PUBREL)
            on_pubrel(ctx, c, s, pi);
        else
            on_pubcomp(ctx, s, pi);
        return true;
    }
    case ND_MQTT_SUBSCRIBE:
        return on_subscribe(ctx, c, s, flags, &r, false);
    case ND_MQTT_UNSUBSCRIBE:
        return on_subscribe(ctx, c, s, flags, &r, true);
    case ND_MQTT_PINGREQ: {
        uint8_t p[2] = {ND_MQTT_PINGRESP << 4, 0};
        nd_pconn_write(c, p, 2);
        return true;
    }
    case ND_MQTT_DISCONNECT:
        s->will_off = true; /* MQTT-3.14.4-3: the will is discarded */
        nd_pconn_close(ctx, c, ND_CLOSE_CLIENT);
        return false;
    default:
        proto_error(ctx, c, "unknown packet type");
        return false;
    }
}

static size_t
on_input(nd_ctx_t *ctx, struct nd_conn *c, const char *buf, size_t len, size_t *need)
{
    sess_t *s = nd_pconn_state(c);
    s->last_ns = now_ns();
    const uint8_t *b = (const uint8_t *)buf;
    size_t off = 0;
    nd_server_t *srv = nd_pconn_server(c);
    /* A configured max_payload bounds a PUBLISH's NATS message (2.10+; 2.9.10 ignores it); with
     * the default, packets are bounded by ND_MQTT_MAX_PACKET so memory stays bounded. */
    int64_t mp = nd_server_live_get(srv, max_payload);
    bool limited = mp != ND_MQTT_DEFAULT_MAX_PAYLOAD;
    uint64_t max = limited ? (uint64_t)mp + 65536 + 64 : ND_MQTT_MAX_PACKET;
    while (off < len && !nd_pconn_closing(c)) {
        if (s->waiting || s->jailed || nd_pconn_subs_due(c) > 0 || s->suback_len > 0 ||
            s->consumers_due > 0 || s->stores_due + s->rels_due >= STORE_WINDOW) {
            /* The SUBACK of a SUBSCRIBE before this packet waits for the sublist: so does the
             * packet (a PUBLISH must see the subscription, as nats-server's would). */
            nd_pconn_pause(c);
            break;
        }
        uint8_t tf;
        uint32_t rem;
        size_t hl;
        nd_mqtt_hdr_status_t st = nd_mqtt_read_header(b + off, len - off, &tf, &rem, &hl);
        if (st == ND_MQTT_HDR_MORE)
            break;
        if (st == ND_MQTT_HDR_MALFORMED) {
            proto_error(ctx, c, "malformed remaining length");
            break;
        }
        if (rem > max) {
            trace_err(c, "packet larger than the maximum payload");
            nd_pconn_close(ctx, c, ND_CLOSE_MAX_PAYLOAD);
            break;
        }
        if (limited && (tf >> 4) == ND_MQTT_PUBLISH && len - off >= hl + 2) {
            /* The NATS message is the header (25 bytes) and the payload: the topic's length
             * and the packet id are known from the first bytes. */
            size_t tl = ((size_t)b[off + hl] << 8) | b[off + hl + 1];
            size_t extra = 2 + tl + (((tf >> 1) & 3) > 0 ? 2 : 0);
            if (rem >= extra && rem - extra + 25 > (uint64_t)mp) {
                trace_err(c, "maximum payload exceeded");
                nd_pconn_close(ctx, c, ND_CLOSE_MAX_PAYLOAD);
                break;
            }
        }
        if (len - off < hl + rem) {
            *need = hl + rem;
            break;
        }
        if (!handle(ctx, c, s, tf, b + off + hl, rem)) {
            off += hl + rem;
            break;
        }
        off += hl + rem;
    }
    return off;
}

/* The tokens of a JetStream ack subject ($JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.
 * <pending>): the delivery count, the stream sequence, and the length of the prefix that names
 * the consumer. */
static bool
parse_ack(const char *r, size_t n, uint64_t *dc, uint64_t *sseq, size_t *cons_len)
{
    size_t dots[9], nd = 0;
    for (size_t i = 0; i < n && nd < 9; i++)
        if (r[i] == '.')
            dots[nd++] = i;
    if (nd != 8)
        return false;
    *dc = strtoull(r + dots[3] + 1, NULL, 10);
    *sseq = strtoull(r + dots[4] + 1, NULL, 10);
    *cons_len = dots[3];
    return true;
}

static void
on_deliver(nd_ctx_t *ctx, struct nd_conn *c, const nd_pconn_msg_t *m)
{
    (void)ctx;
    sess_t *s = nd_pconn_state(c);
    if (s == NULL || !s->connected)
        return;
    static const char dpre[] = "$MQTT.sub.", mpre[] = "$MQTT.msgs.", rpre[] = PUBREL_DELIVER_PREFIX;
    if (m->sid_len > sizeof rpre - 1 && memcmp(m->sid, rpre, sizeof rpre - 1) == 0) {
        deliver_pubrel(ctx, c, s, m);
        return;
    }
    if (m->sid_len > sizeof dpre - 1 && memcmp(m->sid, dpre, sizeof dpre - 1) == 0) {
        /* A QoS 1 or 2 message from the subscription's consumer: the subject is the stored
         * one. */
        sub_t *u = sub_by_deliver(s, m->sid, m->sid_len);
        if (u == NULL || m->subject_len <= sizeof mpre - 1 || m->reply_len == 0)
            return;
        const char *subj = m->subject + sizeof mpre - 1;
        size_t sl = m->subject_len - (sizeof mpre - 1);
        uint64_t dc, sseq;
        size_t kl;
        if (!parse_ack(m->reply, m->reply_len, &dc, &sseq, &kl))
            return;
        if (subj[0] == '$' && nd_mqtt_filter_reserved(u->subject, strlen(u->subject))) {
            nd_mqtt_acct_ack(ctx, s->ma, m->reply);
            return;
        }
        uint16_t pi = 0;
        bool dup = false;
        if (dc > 1) {
            /* A redelivery: the same packet id, with DUP. */
            for (size_t i = 0; i < s->npend; i++) {
                pend_t *p = &s->pend[i];
                uint64_t pdc, pseq;
                size_t pkl;
                if (p->ack != NULL && parse_ack(p->ack, strlen(p->ack), &pdc, &pseq, &pkl) &&
                    pkl == kl && pseq == sseq && memcmp(p->ack, m->reply, kl) == 0) {
                    nd_free(p->ack);
                    p->ack = nd_xmalloc(m->reply_len + 1);
                    memcpy(p->ack, m->reply, m->reply_len);
                    p->ack[m->reply_len] = '\0';
                    pi = p->pi;
                    dup = true;
                    break;
                }
            }
        }
        int live_max = atomic_load(&s->m->max_ack_pending); /* reloadable */
        size_t max = (size_t)(live_max > 0 ? live_max : 1024);
        if (pi == 0) {
            if (s->npend - s->nrel >= max)
                return; /* over max_ack_pending: the consumer redelivers it later */
            pi = pend_add(s, m->reply, m->reply_len);
            if (pi == 0)
                return;
        }
        uint8_t qos = nd_mqtt_hdr_qos(m->hdr, m->hdr_len);
        if (qos > u->qos)
            qos = u->qos;
        if (qos == 0)
            qos = 1;
        send_publish(c, (uint8_t)((dup ? ND_MQTT_PF_DUP : 0) | (qos << 1)), pi, subj, sl, m->data,
                     m->data_len);
        return;
    }
    sub_t *u = sub_find(s, m->sid, m->sid_len);
    if (u == NULL)
        return;
    /* A filter starting with a wildcard never matches a topic starting with '$'. */
    if (m->subject_len > 0 && m->subject[0] == '$' &&
        nd_mqtt_filter_reserved(u->subject, strlen(u->subject)))
        return;
    /* A QoS 1 or 2 publish to a QoS 1 or 2 subscription comes through its consumer instead. */
    if (u->qos > 0 && nd_mqtt_hdr_qos(m->hdr, m->hdr_len) > 0)
        return;
    send_publish(c, 0, 0, m->subject, m->subject_len, m->data, m->data_len);
}

static void
on_timer(nd_ctx_t *ctx, struct nd_conn *c)
{
    sess_t *s = nd_pconn_state(c);
    if (s != NULL && s->jailed) {
        nd_pconn_close(ctx, c, ND_CLOSE_DUPLICATE_CLIENT_ID);
        return;
    }
    if (s == NULL || s->ka_ms <= 0)
        return;
    int64_t idle_ms = (now_ns() - s->last_ns) / 1000000;
    if (idle_ms >= s->ka_ms) {
        nd_log_debug("%s:%d - %s:%llu - keep alive expired", nd_pconn_ip(c), nd_pconn_port(c),
                     nd_pconn_log_tag(c), (unsigned long long)nd_pconn_cid(c));
        nd_pconn_close(ctx, c, ND_CLOSE_READ_ERROR);
        return;
    }
    nd_pconn_timer_start(ctx, c, s->ka_ms - idle_ms);
}

static void
on_subs_ready(nd_ctx_t *ctx, struct nd_conn *c)
{
    sess_t *s = nd_pconn_state(c);
    if (s == NULL)
        return;
    flush_subacks(ctx, c, s);
}

static void
on_call(nd_ctx_t *ctx, struct nd_conn *c, uint32_t what, void *data)
{
    sess_t *s = nd_pconn_state(c);
    if (what == ND_MQTT_CALL_READY) {
        if (s == NULL || !s->waiting)
            return;
        int st = nd_mqtt_acct_wait(ctx, s->ma, 0);
        if (st == 0) {
            /* Another CONNECT started a new attempt meanwhile: wait for that one. */
            if (nd_mqtt_acct_wait(ctx, s->ma, nd_pconn_cid(c)) == 0)
                return;
            st = nd_mqtt_acct_wait(ctx, s->ma, 0);
        }
        s->waiting = false;
        if (connect_finish(ctx, c, s, st))
            nd_pconn_resume(ctx, c);
        return;
    }
    if (what == ND_MQTT_CALL_STORED) {
        nd_mqtt_done_t *d = data;
        uint32_t tag = d->tag;
        bool ok = d->ok;
        nd_free(d);
        if (s == NULL || s->stores_due == 0)
            return;
        s->stores_due--;
        if (!ok) {
            /* nats-server closes the connection when the store fails. */
            proto_error(ctx, c, "could not store a QoS 1 or 2 message");
            return;
        }
        if ((tag & TAG_PUBREC) != 0)
            write_ack(c, ND_MQTT_PUBREC << 4, (uint16_t)tag);
        else if ((tag & TAG_RELEASED) != 0)
            qos2_remove(ctx, c, s, (uint16_t)tag);
        else if (tag != ND_MQTT_TAG_NO_PUBACK)
            write_ack(c, ND_MQTT_PUBACK << 4, (uint16_t)tag);
        nd_pconn_resume(ctx, c);
        return;
    }
    if (what == ND_MQTT_CALL_ANSWER) {
        nd_mqtt_answer_t *a = data;
        if (s != NULL && s->connected && s->rels_due > 0) {
            uint16_t pi = (uint16_t)a->tag;
            if ((a->tag & ANS_KIND) == ANS_FETCH) {
                on_pubrel_fetched(ctx, c, s, pi, a->json);
            } else if ((a->tag & ANS_KIND) == ANS_DELETE) {
                s->rels_due--;
                write_ack(c, ND_MQTT_PUBCOMP << 4, pi);
                nd_pconn_resume(ctx, c);
            }
        }
        nd_free(a->json);
        nd_free(a);
        return;
    }
    if (what == ND_MQTT_CALL_CONSUMER) {
        nd_free(data);
        if (s == NULL || s->consumers_due == 0)
            return;
        s->consumers_due--;
        flush_subacks(ctx, c, s);
    }
}

static void
on_closing(nd_ctx_t *ctx, struct nd_conn *c, nd_close_reason_t reason)
{
    (void)reason;
    sess_t *s = nd_pconn_state(c);
    if (s == NULL)
        return;
    bool replaced = s->cid != NULL && nd_mqtt_cid_drop(s->m, s->cid);
    if (s->connected && s->has_will && !s->will_off && !replaced)
        (void)publish(ctx, c, s, s->will_subject, s->will_subject_len, s->will_qos, s->will_retain,
                      (const char *)s->will_msg, s->will_len, false, 0);
    if (s->connected && s->clean && !replaced) {
        /* A clean session lasts as long as its connection (MQTT-3.1.2-6). */
        for (size_t i = 0; i < s->nsubs; i++)
            if (s->subs[i].durable != NULL)
                nd_mqtt_acct_consumer_delete(ctx, s->ma, ND_MQTT_MSGS_STREAM, s->subs[i].durable);
        if (s->pubrel)
            pubrel_delete(ctx, s);
        qos2_purge(ctx, s); /* QoS 2 messages received and never released go with it */
        nd_mqtt_sess_put(ctx, s->ma, s->id, NULL);
    }
}

static void
on_final(nd_ctx_t *ctx, struct nd_conn *c)
{
    (void)ctx;
    sess_t *s = nd_pconn_state(c);
    if (s == NULL)
        return;
    if (s->cid != NULL)
        (void)nd_mqtt_cid_drop(s->m, s->cid); /* closed by the pool's shutdown */
    nd_free(s->cid);
    nd_free(s->id);
    for (size_t i = 0; i < s->nsubs; i++)
        sub_free(&s->subs[i]);
    nd_free(s->subs);
    for (size_t i = 0; i < s->npost; i++)
        nd_free(s->post[i].filter);
    nd_free(s->post);
    for (size_t i = 0; i < s->npend; i++)
        nd_free(s->pend[i].ack);
    nd_free(s->pend);
    nd_free(s->will_subject);
    nd_free(s->will_msg);
    nd_free(s->suback);
    nd_free(s);
    nd_pconn_set_state(c, NULL);
}

const nd_pconn_proto_t nd_mqtt_proto = {
    .name = "mqtt",
    .tag = "mid",
    .tag_ws = "mid_ws",
    .start = on_start,
    .input = on_input,
    .deliver = on_deliver,
    .timer = on_timer,
    .subs_ready = on_subs_ready,
    .call = on_call,
    .closing = on_closing,
    .final = on_final,
};
