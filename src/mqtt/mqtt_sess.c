/* One MQTT connection's protocol (the vtable net/pconn.h calls), as nats-server 2.9.10 answers:
 *
 * - The first packet must be CONNECT, and only one may come. A protocol name other than "MQTT"
 *   closes without a CONNACK; a level other than 4 gets CONNACK 1; an empty client id without
 *   clean session, or one that is not UTF-8, gets 2; an empty user name 4; a login the server's
 *   authorization refuses 5 (nats-server's authViolation); each of these closes the connection.
 * - Malformed packets (a fifth remaining-length byte, bad fixed-header flags, truncated fields,
 *   wildcards or white space in a topic name, QoS 3, a PUBLISH of QoS 2, which 2.9.10 does not
 *   take) close the connection without an answer.
 * - SUBSCRIBE: each filter becomes a subscription in the client's account whose sid is its
 *   subject; "foo/#" also subscribes to "foo" (sid "foo fwc"). QoS 2 is granted as 1 (2.9.10);
 *   a filter that cannot be a subject, or that permissions deny, gets 0x80. The SUBACK goes out
 *   once every subscription is in the sublist, and no packet after the SUBSCRIBE is read before
 *   that, so the client's next publish sees its subscription.
 * - PUBLISH: the topic becomes the subject, the message carries nats-server's header
 *   "Nmqtt-Pub: <qos>", and QoS 1 is acknowledged with PUBACK. Messages reach the client as
 *   QoS 0 PUBLISH packets; a filter starting with a wildcard never matches a subject starting
 *   with '$' (MQTT-4.7.2-1).
 * - Keep alive: no packet for 1.5 times the keep-alive closes the connection.
 * - Will: published when the connection closes for any reason but DISCONNECT or a newer
 *   connection taking its client id (which closes this one, "Duplicate Client ID").
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actors/alloc.h"
#include "mqtt/mqtt_codec.h"
#include "mqtt/mqtt_int.h"
#include "util/log.h"

#define SUB_FWC_SUFFIX " fwc"

typedef struct sess {
    nd_mqtt_t *m;
    bool connected;
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
    nd_log_error("%s:%d - mid:%llu - %s", nd_pconn_ip(c), nd_pconn_port(c),
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

static void
publish(nd_ctx_t *ctx, struct nd_conn *c, const char *subj, size_t sl, uint8_t qos,
        const char *data, size_t dl)
{
    char h[64];
    size_t hl = pub_header(h, qos);
    (void)nd_pconn_publish(ctx, c, subj, sl, NULL, 0, h, hl, data, dl);
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
    if (has_will) {
        s->will_subject = nd_xmalloc(2 * wt_len + 1);
        if (nd_mqtt_topic_to_subject(wt, wt_len, false, s->will_subject, &s->will_subject_len) !=
            ND_MQTT_TOPIC_OK) {
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

    /* The client id is ours now; a connection that held it closes without its will. */
    size_t il = strlen(id);
    nd_mqtt_cid_t *e = nd_xmalloc(sizeof(*e) + il + 1);
    memset(e, 0, sizeof(*e));
    memcpy(e->id, id, il + 1);
    if (id != gen)
        nd_free(id);
    e->acct = nd_pconn_account(c);
    e->actor = nd_pconn_actor(c);
    s->cid = e;
    nd_actor_t *old = nd_mqtt_cid_take(s->m, e);
    if (old != NULL) {
        nd_log_info("%s:%d - mid:%llu - Replacing old client since both have the same client ID "
                    "\"%s\"",
                    nd_pconn_ip(c), nd_pconn_port(c), (unsigned long long)nd_pconn_cid(c), e->id);
        nd_conn_send_close(ctx, old, ND_CLOSE_DUPLICATE_CLIENT_ID);
        nd_actor_unref(ctx, old);
    }
    s->connected = true;
    write_connack(c, false, ND_MQTT_RC_ACCEPTED);
    if (ka > 0) {
        s->ka_ms = (int64_t)ka * 1500;
        nd_pconn_timer_start(ctx, c, s->ka_ms);
    }
    return true;
}

/* ---- PUBLISH ---- */

static bool
on_publish(nd_ctx_t *ctx, struct nd_conn *c, sess_t *s, uint8_t flags, nd_mqtt_reader_t *r)
{
    (void)s;
    uint8_t qos = (flags & ND_MQTT_PF_QOS) >> 1;
    if (qos == 3) {
        proto_error(ctx, c, "invalid QoS 3 in publish");
        return false;
    }
    if (qos == 0 && (flags & ND_MQTT_PF_DUP) != 0) {
        proto_error(ctx, c, "duplicate flag set for QoS 0 message");
        return false;
    }
    if (qos == 2) {
        /* nats-server 2.9.10 does not support QoS 2 publishes: it closes the connection. */
        proto_error(ctx, c, "publish QoS=2 not supported");
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
    nd_mqtt_topic_status_t st = nd_mqtt_topic_to_subject(topic, tl, false, subj, &sl);
    if (st != ND_MQTT_TOPIC_OK) {
        if (subj != stack)
            nd_free(subj);
        proto_error(ctx, c,
                    st == ND_MQTT_TOPIC_SPACE ? "unsupported character in topic"
                                              : "wildcards not allowed in publish's topic");
        return false;
    }
    const char *data = (const char *)r->p + r->off;
    size_t dl = r->len - r->off;
    publish(ctx, c, subj, sl, qos, data, dl);
    if (subj != stack)
        nd_free(subj);
    if (qos == 1)
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

/* Subscribes to one filter (subject form). Returns: the SUBACK code. */
static uint8_t
subscribe_one(nd_ctx_t *ctx, struct nd_conn *c, const char *subj, size_t sl, uint8_t qos)
{
    int rc = nd_pconn_subscribe(ctx, c, subj, sl, subj, sl);
    if (rc <= 0)
        return 0x80;
    if (nd_mqtt_needs_parent_sub(subj, sl)) {
        char sid[4096 + sizeof SUB_FWC_SUFFIX];
        if (sl + sizeof SUB_FWC_SUFFIX <= sizeof sid) {
            memcpy(sid, subj, sl);
            memcpy(sid + sl, SUB_FWC_SUFFIX, sizeof SUB_FWC_SUFFIX - 1);
            (void)nd_pconn_subscribe(ctx, c, subj, sl - 2, sid, sl + sizeof SUB_FWC_SUFFIX - 1);
        }
    }
    return qos > 1 ? 1 : qos; /* 2.9.10 grants QoS 2 as 1 */
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
    if (!nd_mqtt_read_u16(r, &pi) || pi == 0) {
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
        if (!nd_mqtt_valid_string(f, fl)) {
            nd_free(many);
            proto_error(ctx, c, "invalid topic filter");
            return false;
        }
        char stack[256];
        char *subj = 2 * fl + 1 <= sizeof stack ? stack : nd_xmalloc(2 * fl + 1);
        size_t sl = 0;
        bool ok = fl > 0 && nd_mqtt_topic_to_subject(f, fl, true, subj, &sl) == ND_MQTT_TOPIC_OK;
        uint8_t code = 0x80;
        if (unsub) {
            if (ok) {
                (void)nd_pconn_unsubscribe(ctx, c, subj, sl);
                if (nd_mqtt_needs_parent_sub(subj, sl)) {
                    char sid[4096 + sizeof SUB_FWC_SUFFIX];
                    if (sl + sizeof SUB_FWC_SUFFIX <= sizeof sid) {
                        memcpy(sid, subj, sl);
                        memcpy(sid + sl, SUB_FWC_SUFFIX, sizeof SUB_FWC_SUFFIX - 1);
                        (void)nd_pconn_unsubscribe(ctx, c, sid, sl + sizeof SUB_FWC_SUFFIX - 1);
                    }
                }
            }
        } else if (ok) {
            code = subscribe_one(ctx, c, subj, sl, qos);
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
    if (nd_pconn_subs_due(c) == 0 && s->suback_len == 0) {
        nd_pconn_write(c, hdr, h);
        nd_pconn_write(c, cp, ncodes);
    } else {
        /* Sent once the subscriptions are in the sublist (subs_ready). */
        suback_add(s, hdr, h);
        suback_add(s, cp, ncodes);
    }
    nd_free(many);
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
    case ND_MQTT_PUBACK:
        return true; /* no QoS 1 deliveries are pending: nothing to release */
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
    uint64_t max = (uint64_t)nd_server_live_get(srv, max_payload) + 65536 + 16;
    while (off < len && !nd_pconn_closing(c)) {
        if (nd_pconn_subs_due(c) > 0 || s->suback_len > 0) {
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

static void
on_deliver(nd_ctx_t *ctx, struct nd_conn *c, const nd_pconn_msg_t *m)
{
    (void)ctx;
    sess_t *s = nd_pconn_state(c);
    if (s == NULL || !s->connected)
        return;
    /* A filter starting with a wildcard never matches a topic starting with '$'. */
    if (m->subject_len > 0 && m->subject[0] == '$' && nd_mqtt_filter_reserved(m->sid, m->sid_len))
        return;
    uint8_t stack[256];
    uint8_t *topic = m->subject_len <= sizeof stack ? stack : nd_xmalloc(m->subject_len);
    size_t tl = nd_mqtt_subject_to_topic(m->subject, m->subject_len, topic);
    write_publish(c, 0, 0, topic, tl, m->data, m->data_len);
    if (topic != stack)
        nd_free(topic);
}

static void
on_timer(nd_ctx_t *ctx, struct nd_conn *c)
{
    sess_t *s = nd_pconn_state(c);
    if (s == NULL || s->ka_ms <= 0)
        return;
    int64_t idle_ms = (now_ns() - s->last_ns) / 1000000;
    if (idle_ms >= s->ka_ms) {
        nd_log_debug("%s:%d - mid:%llu - keep alive expired", nd_pconn_ip(c), nd_pconn_port(c),
                     (unsigned long long)nd_pconn_cid(c));
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
    if (s->suback_len > 0) {
        nd_pconn_write(c, s->suback, s->suback_len);
        s->suback_len = 0;
    }
    nd_pconn_resume(ctx, c);
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
        publish(ctx, c, s->will_subject, s->will_subject_len, s->will_qos,
                (const char *)s->will_msg, s->will_len);
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
    nd_free(s->will_subject);
    nd_free(s->will_msg);
    nd_free(s->suback);
    nd_free(s);
    nd_pconn_set_state(c, NULL);
}

const nd_pconn_proto_t nd_mqtt_proto = {
    .name = "mqtt",
    .start = on_start,
    .input = on_input,
    .deliver = on_deliver,
    .timer = on_timer,
    .subs_ready = on_subs_ready,
    .closing = on_closing,
    .final = on_final,
};
