/* The connection actor's struct and the functions its files share (conn.c: lifecycle, I/O and
 * buffers; client.c: client protocol operations; deliver.c: publish and delivery).
 * Private to src/net. */
#ifndef ND_CONN_INT_H
#define ND_CONN_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/conn.h"
#include "net/connreg.h"
#include "subj/account.h"
#include "actors/alloc.h"
#include "util/err.h"
#include "util/payload.h"
#include "subj/slcache.h"
#include "subj/sub.h"
#include "actors/timer.h"
#include "net/parser.h"
#include "net/pconn.h"
#include "auth/perms.h"
#include "net/poller.h"
#include "net/server.h"
#include "net/sidmap.h"
#include "net/transport.h"

enum {
    ND_CONN_MSG_START = ND_MSG_USER_BASE,
    ND_CONN_MSG_IO,        /* embedded in nd_io_t: readiness bits are in io.events */
    ND_CONN_MSG_DELIVER,   /* nd_conn_msg_deliver_t: a message for one of our subscriptions */
    ND_CONN_MSG_SUB_ACK,   /* the account inserted one of our subscriptions */
    ND_CONN_MSG_PING,      /* ping timer */
    ND_CONN_MSG_WDEADLINE, /* write deadline timer */
    ND_CONN_MSG_UNSTALL,   /* fast-producer stall is over */
    ND_CONN_MSG_SLOW,      /* a publisher found us over max_pending */
    ND_CONN_MSG_CHUNK,     /* nd_conn_msg_chunk_t: ready-to-write messages from one publisher */
    ND_CONN_MSG_MON_SUBS,  /* nd_mon_msg_subs_t: a monitor asks for our subscriptions */
    ND_CONN_MSG_LDM,       /* lame duck mode began: send the INFO with "ldm":true */
    ND_CONN_MSG_SHUTDOWN,  /* lame duck: close now ("Server Shutdown") */
    ND_CONN_MSG_TLS_TIMER, /* TLS handshake timeout, or handshake_first's fallback delay */
    ND_CONN_MSG_AUTH_TIMER, /* no CONNECT within the auth timeout (conn_auth.c) */
    ND_CONN_MSG_REPLY,      /* nd_conn_msg_reply_t: a reply subject we may answer (allow_responses) */
    ND_CONN_MSG_REAUTH,     /* a reload changed the authorization: check our credentials again */
    ND_CONN_MSG_IMSG,       /* nd_conn_msg_imsg_t: a message for an internal client (iclient.c) */
    ND_CONN_MSG_ISTART,     /* nd_conn_msg_istart_t: an internal client's subscriptions */
    ND_CONN_MSG_ICALL,      /* nd_conn_msg_icall_t: run a function on an internal client's turn */
    ND_CONN_MSG_ITIMER,     /* an internal client's timer */
    ND_CONN_MSG_RPROTO,     /* a route: protocol bytes to write (route.c) */
    ND_CONN_MSG_INFO_UPDATE, /* a client: the INFO changed (connect_urls), send it again */
    ND_CONN_MSG_CLOSE,       /* nd_conn_msg_close_t: close with this reason */
    ND_CONN_MSG_PMSG,        /* nd_conn_msg_pmsg_t: a message for a protocol connection */
    ND_CONN_MSG_PTIMER,      /* a protocol connection's timer (pconn.c) */
    ND_CONN_MSG_PCALL,       /* nd_conn_msg_pcall_t: work for a protocol connection (pconn.c) */
};

typedef struct nd_conn_msg_pcall {
    nd_msg_t hdr;
    uint32_t what;
    void *data;
    void (*drop)(void *data);
} nd_conn_msg_pcall_t;

/* A message for a subscription of a protocol connection (net/pconn.h): the publish itself,
 * formatted by the protocol on the recipient's turn. */
typedef struct nd_conn_msg_pmsg {
    nd_msg_t hdr;
    nd_payload_t *payload; /* one reference: headers, then the payload (then CRLF) */
    uint32_t hdr_len, data_len;
    uint32_t subject_len, reply_len, sid_len;
    char str[]; /* subject, reply, sid; each NUL-terminated */
} nd_conn_msg_pmsg_t;

/* A small message for a protocol connection, packed into the publisher's CHUNK for it (deliver.c)
 * instead of a PMSG of its own: the header (copied out with memcpy: records are not aligned),
 * then subject, reply and sid, each NUL-terminated, then headers and data. A recipient with a
 * protocol reads its chunks as a sequence of these (pconn.c). */
typedef struct nd_pmsg_rec {
    uint32_t size; /* the whole record */
    uint32_t hdr_len, data_len;
    uint32_t subject_len, reply_len, sid_len;
} nd_pmsg_rec_t;

/* What a PMSG adds to its recipient's pending bytes until its turn formats it (about the size
 * of the packet it becomes). */
static inline int64_t
nd_pmsg_charge(const nd_conn_msg_pmsg_t *m)
{
    return (int64_t)m->data_len + m->subject_len + 16;
}

/* A message for an internal client's subscription (iclient.h): the publish itself, not MSG
 * text, and who sent it. */
typedef struct nd_conn_msg_imsg {
    nd_msg_t hdr;
    nd_payload_t *payload; /* one reference: headers, then the payload (then CRLF) */
    nd_acct_t *acct;       /* a reference on the publisher's account */
    uint64_t cid;
    uint32_t hdr_len, data_len;
    uint8_t kind; /* nd_conn_kind_t of the publisher */
    uint32_t tag;    /* nd_imsg_t.tag */
    uint32_t len[8]; /* of the strings below, in this order */
    char str[];      /* subject, reply, user, name, lang, version, ip, import subject; each
                      * NUL-terminated */
} nd_conn_msg_imsg_t;

struct nd_iclient;

typedef struct nd_conn_msg_close {
    nd_msg_t hdr;
    nd_close_reason_t reason;
} nd_conn_msg_close_t;

/* nd_iclient_call's message. */
typedef struct nd_conn_msg_icall {
    nd_msg_t hdr;
    void (*fn)(nd_ctx_t *ctx, struct nd_iclient *ic, void *arg, void *data);
    void (*drop)(void *data);
    void *data;
} nd_conn_msg_icall_t;

/* An internal client's first message: subscribe to these (strings owned by the message). */
typedef struct nd_conn_msg_istart {
    nd_msg_t hdr;
    size_t n;
    char **subjects;
} nd_conn_msg_istart_t;

typedef struct nd_conn_msg_chunk {
    nd_msg_t hdr;
    char *buf; /* owned: MSG lines, payloads and CRLFs, ready to write */
    uint32_t len, cap;
    uint32_t msgs;  /* messages in buf */
    uint64_t bytes; /* their payload bytes */
} nd_conn_msg_chunk_t;

/* A publisher's open chunks for the current read batch, one per recipient (see deliver.c). */
typedef struct nd_outbox_slot {
    struct nd_conn *t;
    nd_conn_msg_chunk_t *chunk; /* open: still being filled */
    nd_msg_t *first, *last;     /* finished, to send in order (linked through nd_msg_t.next) */
} nd_outbox_slot_t;

typedef struct nd_outbox {
    nd_outbox_slot_t *slots;
    uint32_t n, cap, last;
    uint32_t *index; /* open addressing on t, slot index + 1 (0 = empty); used past 8 slots */
    uint32_t index_cap;
} nd_outbox_t;

/* A publisher delivered a message with this reply subject to us (queued before the message). */
typedef struct nd_conn_msg_reply {
    nd_msg_t hdr;
    uint32_t len;
    char subj[];
} nd_conn_msg_reply_t;

typedef struct nd_conn_msg_deliver {
    nd_msg_t hdr;
    nd_payload_t *payload; /* one reference, owned by the message */
    const nd_sub_t *sub;   /* identity only (never dereferenced by the receiver) */
    uint32_t pl_off;       /* bytes of payload->data to skip (headers stripped) */
    uint32_t pl_len;       /* bytes to copy from payload->data + pl_off, CRLF included */
    uint16_t line_len;
    uint16_t sid_off, sid_len; /* where the sid sits in line (for auto-unsubscribe) */
    uint8_t last;              /* the delivery that reaches the sub's max_msgs */
    char line[];               /* "MSG <subject> <sid> [reply] <n>\r\n" or HMSG */
} nd_conn_msg_deliver_t;

/* A WebSocket client's credentials from the Cookie header of its upgrade (websocket {
 * jwt_cookie, user_cookie, pass_cookie, token_cookie }): each stands in for the CONNECT field
 * that is missing or empty (nats-server's processConnect). Owned; NULL fields: no cookie. */
typedef struct nd_conn_ws_cookies {
    char *jwt, *user, *pass, *token;
} nd_conn_ws_cookies_t;

typedef struct nd_conn {
    nd_actor_t base;
    /* immutable after spawn */
    nd_server_t *srv;
    nd_conn_kind_t kind;
    uint64_t cid;
    char ip[48];
    int port;
    nd_acct_t *acct; /* a reference; set on authentication, before any subscription (conn_auth.c) */

    /* any thread, atomic */
    _Atomic int64_t pending ND_CACHE_ALIGNED; /* bytes queued for us and not yet written */
    _Atomic bool slow;                        /* over max_pending: deliveries are dropped */
    _Atomic bool headers;                     /* the client accepts HMSG */
    /* Our permissions as publishers see them when delivering to us (conn_auth.c), NULL for
     * none. Set on authentication, before any of our subscriptions exists (a publisher that found
     * one of them sees it: the account's insertion orders it), and swapped by a reload; relaxed
     * loads and stores, since any set stored here stays allocated until the server is freed
     * (auth.h) and a delivery racing a reload may use either. rdeny is set before the
     * subscription that needs delivery-time deny checks is sent to the account. */
    _Atomic(nd_permset_t *) rperms;
    _Atomic bool rdeny;
    /* immutable after spawn, here because publishers read it next to the fields above: the
     * internal client this connection is (iclient.c), NULL for a socket */
    struct nd_iclient *ic;
    /* immutable after spawn: a route's own state (route_int.h; owner only), NULL otherwise */
    struct nd_route *route;
    /* immutable after spawn: a leaf connection's own state (leaf_int.h; owner only), or NULL */
    struct nd_leaf *leaf;
    /* immutable after spawn (or after the WebSocket upgrade on /mqtt, before any subscription
     * of ours exists): a protocol connection's vtable (net/pconn.h), NULL for NATS */
    const struct nd_pconn_proto *proto;
    /* immutable after spawn: a gateway connection's own state (gateway_int.h; owner only), or
     * NULL */
    struct nd_gw *gw;

    /* owner only */
    nd_io_t io ND_CACHE_ALIGNED;
    nd_transport_t tr;
    nd_proto_parser_t parser;
    char *rbuf;
    size_t rcap, rlen;
    char *wbuf;
    size_t wcap, wlen, woff;
    nd_sidmap_t subs;
    nd_slcache_t cache;
    nd_outbox_t outbox;
    nd_sl_result_t *scratch; /* for cache misses and one-off matches; allocated on first use */
    nd_timer_t ping_timer, wdeadline_timer, stall_timer;
    nd_timer_t tls_timer;      /* conn_tls.c */
    struct nd_tls_ctx *tls;    /* the client TLS context at our start (a reference), NULL: off */
    uint8_t tls_state;         /* ND_CONN_TLS_* (conn_tls.c) */
    bool tls_info_due;         /* handshake first: INFO goes out once TLS is up */
    bool tls_pings_due;        /* the ping timer starts once TLS is up */
    nd_strlist_t tls_names;    /* verify_and_map: the client certificate's candidate user names */
    struct nd_ws_srv *ws;      /* a WebSocket client: its listener's settings (conn_ws.c), else NULL */
    uint8_t ws_state;          /* ND_CONN_WS_* (conn_ws.c) */
    struct nd_conn_ws_cookies *ws_cookies; /* credentials from the upgrade's cookies, or NULL */
    /* The upgrade's X-Forwarded-For address with ours, "<forwarded>/<ip>" as nats-server's log
     * prefix has it (owned; set at the upgrade, before any log line uses it), or NULL */
    char *ws_xff;
    nd_timer_t auth_timer;     /* conn_auth.c */
    nd_perms_conn_t perms;     /* our permissions and their caches (perms.perms NULL: none) */
    bool authed;               /* authenticated (or no authentication required) */
    char nonce[16];            /* INFO's nonce when nkey users exist, else "" */
    /* the CONNECT's credentials, kept for a reload's re-check (nats-server keeps c.opts) */
    char *cr_user, *cr_pass, *cr_token, *cr_nkey, *cr_sig, *cr_jwt;
    bool acct_counted;         /* operator mode: counted in acct->jwt_conns (conn_auth.c) */
    bool jwt_expiring;         /* auth_timer now fires at the user (or account) JWT's expiry */
    bool jwt_acct_expiry;      /* ... and it is the account JWT's */
    bool jwt_subs_limited;     /* operator mode: jwt_max_subs applies */
    int64_t jwt_max_subs;      /* the account's (or the user's, when lower) subs limit */
    int64_t jwt_max_payload;   /* operator mode: the account/user payload limit + 1; 0 = none */
    uint32_t pings_out;
    uint32_t live_gen;         /* srv->live.gen when the limits below were taken */
    int64_t ping_ms;           /* the ping timer's period, 0 when not armed */
    uint32_t sub_acks_due;     /* subscriptions sent to the account and not yet acknowledged */
    bool started;              /* INFO sent */
    bool ldm_sent;             /* an INFO with "ldm":true went out */
    bool connected;            /* CONNECT seen */
    bool verbose, pedantic, echo, no_responders, headers_requested;
    int protocol;
    bool closing;
    bool paused;               /* stopped parsing until sub_acks_due is 0 */
    bool read_blocked;         /* a read is owed once unpaused or unstalled */
    bool stall_due;            /* a recipient passed 75% of max_pending during this batch */
    bool stalled;              /* not reading until stall_timer fires */
    bool hup_seen;             /* the peer closed its side: read until end of stream */
    bool got_inbound;          /* inbound traffic since the last ping tick */
    bool pinged_once;
    bool wdeadline_armed;
    bool borrowed;             /* wbuf is the worker's write scratch during this turn */
    bool torn_down;            /* socket, subscriptions and timers released */
    bool counted;              /* included in the server's connection count */
    nd_close_reason_t reason;
    char *name, *lang, *version;

    /* a protocol connection's own (pconn.c), owner only */
    void *pstate, *parg;
    bool auth_own;                /* logged in as its listener's own user or token */
    const char *no_auth_override; /* its listener's no_auth_user (the options', immutable) */
    nd_timer_t ptimer;
    size_t pneed; /* bytes the incomplete packet at the end of the input needs (0: unknown) */

    /* statistics, owner only */
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes;

    /* monitoring (src/net/connreg.h): registry links; the statistics above and the subscription
     * count, republished with relaxed stores at the end of each turn for monitors to sample */
    nd_mon_conn_t mon;
} nd_conn_t;

/* The address our log lines start with ("<ip>:<port> - cid:<n> - ..."): the socket's, behind
 * the X-Forwarded-For one of a WebSocket upgrade that carried it. /connz and authorization see
 * only the socket's (c->ip), as in nats-server. Ctx: the owner. */
/* The connection's id tag in log lines, as nats-server writes it: "cid:<n>" for a NATS client,
 * "wid" for one over WebSocket, the protocol's own for a protocol connection ("mid", "mid_ws"
 * over WebSocket for MQTT), "rid", "lid" and "gid" for routes, leaf nodes and gateways. */
static inline const char *
nd_conn_log_tag(const nd_conn_t *c)
{
    if (c->route != NULL)
        return "rid";
    if (c->leaf != NULL)
        return "lid";
    if (c->gw != NULL)
        return "gid";
    if (c->proto != NULL && c->proto->tag != NULL)
        return c->ws != NULL && c->proto->tag_ws != NULL ? c->proto->tag_ws : c->proto->tag;
    return c->ws != NULL ? "wid" : "cid";
}

static inline const char *
nd_conn_lhost(const nd_conn_t *c)
{
    return c->ws_xff != NULL ? c->ws_xff : c->ip;
}

/* conn.c: nd_conn_write queues our own output (counted in pending); nd_conn_append queues bytes
 * a publisher already counted. */
void nd_conn_write(nd_conn_t *c, const void *p, size_t n);
void nd_conn_append(nd_conn_t *c, const void *p, size_t n);
/* Room for n more output bytes; nd_conn_commit(c, k) then adds the k written there (counted). */
char *nd_conn_reserve(nd_conn_t *c, size_t n);
void nd_conn_commit(nd_conn_t *c, size_t n);
void nd_conn_write_err(nd_conn_t *c, nd_err_t err);
void nd_conn_close(nd_ctx_t *ctx, nd_conn_t *c, nd_close_reason_t reason);
void nd_conn_remove_sub(nd_ctx_t *ctx, nd_conn_t *c, nd_sub_t *sub);
/* Counts c in or out of its account's connections and calls the server's client-event hook
 * (net/server.h). Called exactly once each way for a connection past its CONNECT. */
void nd_conn_client_event(nd_ctx_t *ctx, nd_conn_t *c, bool connect);

/* conn.c: writes INFO and refuses the connection over max_connections (conns: the count that
 * includes it). Returns: false when it closed the connection. */
bool nd_conn_greet(nd_ctx_t *ctx, nd_conn_t *c, int32_t conns);
/* conn.c: starts the ping timer as a new connection's (first ping after 2 s). */
void nd_conn_start_pings(nd_ctx_t *ctx, nd_conn_t *c);

/* conn_tls.c: TLS for client connections (see the comment at its top). */
enum {
    ND_CONN_TLS_NONE = 0, /* plain TCP */
    ND_CONN_TLS_PEEK,     /* allow_non_tls: the first byte tells a ClientHello from plain text */
    ND_CONN_TLS_FALLBACK, /* handshake_first with a fallback delay: waiting for a ClientHello */
    ND_CONN_TLS_HANDSHAKE,
    ND_CONN_TLS_UP,
};
/* Called by on_start when the server has TLS. Returns: true when TLS took over the greeting
 * (INFO and pings come later); false to greet as usual (allow_non_tls). */
bool nd_conn_tls_begin(nd_ctx_t *ctx, nd_conn_t *c);
/* Advances a connection whose TLS is not up yet on an I/O message. Returns: true when the
 * connection may now read (*ev gains ND_IO_READ after a finished handshake); false when the
 * message was used up (or the connection closed). */
bool nd_conn_tls_io(nd_ctx_t *ctx, nd_conn_t *c, uint32_t *ev);
void nd_conn_tls_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg);

/* conn.c: the start of a client connection once its transport is ready (counted, registered,
 * INFO, pings); a WebSocket client calls it after its upgrade. */
void nd_conn_start_client(nd_ctx_t *ctx, nd_conn_t *c);

/* conn_tls.c: wss: the TLS handshake before the HTTP upgrade (no INFO, no pings after it). */
void nd_conn_tls_begin_ws(nd_ctx_t *ctx, nd_conn_t *c);
/* A leaf connection's TLS with tls (referenced): the accepting side after its INFO (which goes
 * out first, in plain text), the soliciting side (host: what the hub's certificate must name)
 * once the hub's INFO asked for it. nd_leaf_tls_up runs when it is up. */
void nd_conn_tls_begin_leaf(nd_ctx_t *ctx, nd_conn_t *c, struct nd_tls_ctx *tls, const char *host);

/* conn_ws.c: the WebSocket upgrade of a client connection (see its top comment). */
enum {
    ND_CONN_WS_NONE = 0,
    ND_CONN_WS_UPGRADE, /* waiting for (or reading) the HTTP upgrade request */
    ND_CONN_WS_UP,      /* frames: the transport is the WebSocket one (net/ws.h) */
};
/* Called by on_start for a WebSocket connection: TLS (wss) and the handshake timer. */
void nd_conn_ws_begin(nd_ctx_t *ctx, nd_conn_t *c);
/* Advances the upgrade on an I/O message. Returns: true when the connection may now read
 * frames; false when the message was used up (or the connection closed). */
bool nd_conn_ws_io(nd_ctx_t *ctx, nd_conn_t *c, uint32_t *ev);
/* conn.c: an upgraded WebSocket connection on path /leafnode becomes an accepted leaf
 * connection (net/leaf_int.h) and starts as one. Ctx: its own turn. */
void nd_conn_ws_become_leaf(nd_ctx_t *ctx, nd_conn_t *c);
/* conn.c: an upgraded WebSocket connection on path /mqtt becomes a protocol connection
 * (net/pconn.h, kind ND_CONN_MQTT) with the protocol the MQTT service registered, and starts as
 * one. Ctx: its own turn. */
void nd_conn_ws_become_pconn(nd_ctx_t *ctx, nd_conn_t *c);
/* The handshake timeout (the auth timer's message while upgrading). */
void nd_conn_ws_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg);

/* conn_auth.c: authentication and permissions of client connections (see its top comment). */
/* At start: takes the auth snapshot's requirements, makes the nonce, arms the auth timer. */
void nd_conn_auth_begin(nd_ctx_t *ctx, nd_conn_t *c);
/* On every CONNECT (o: the decoded JSON object); authenticates on the first. Returns: false when
 * it refused and closed. */
struct json_t;
bool nd_conn_auth_connect(nd_ctx_t *ctx, nd_conn_t *c, struct json_t *o);
/* A protocol connection's login (pconn.h): user/pass against the server's authorization, or
 * against the listener's own single user (own_user/own_pass) or token. Nothing is written.
 * Returns: true when authorized (false may also mean closed, over an account limit). */
bool nd_conn_auth_login(nd_ctx_t *ctx, nd_conn_t *c, const char *user, const char *pass,
                        const char *own_user, const char *own_pass, const char *own_token,
                        const char *no_auth_user);
/* A first op other than CONNECT while not authenticated. Returns: false when it closed. */
bool nd_conn_auth_first_op(nd_ctx_t *ctx, nd_conn_t *c);
/* PUB/HPUB check for a connection with permissions. Returns: false when refused (-ERR written). */
bool nd_conn_auth_pub(nd_conn_t *c, const char *subj, size_t len);
/* SUB check for a connection with permissions. Returns: false when refused (-ERR written). */
bool nd_conn_auth_sub(nd_conn_t *c, const char *subj, size_t slen, const char *queue, size_t qlen);
void nd_conn_auth_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg);
void nd_conn_auth_reply(nd_conn_t *c, nd_conn_msg_reply_t *m);
void nd_conn_auth_recheck(nd_ctx_t *ctx, nd_conn_t *c);
void nd_conn_auth_fini(nd_conn_t *c);
/* Returns: the payload limit for this connection given the server's (ND_PROTO_NO_LIMIT or
 * >= 0): the lower of that and an operator-mode account/user limit. */
int64_t nd_conn_auth_max_payload(const nd_conn_t *c, int64_t server);

/* client.c: one parsed command. Returns: false when processing must stop before consuming cmd
 * (the connection closed, or paused until its subscriptions are acknowledged). */
bool nd_client_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);

/* iclient.c: an internal client's side of the connection actor. */
/* Builds the IMSG for an internal client t of cmd published by c (NULL: the server's own
 * publisher), holding a new reference on payload. Returns: NULL when t's mailbox is full (the
 * message is refused). Ctx: a worker (inside an epoch section is fine: nothing is sent). */
nd_conn_msg_imsg_t *nd_iclient_msg_new(nd_ctx_t *ctx, nd_conn_t *t, const nd_conn_t *c,
                                       nd_acct_t *from_acct, const nd_proto_cmd_t *cmd,
                                       nd_payload_t *payload, const char *via);
void nd_iclient_receive(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_imsg_t *m);
void nd_iclient_on_start(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_istart_t *m);
/* The last subscription acknowledgement arrived: wakes nd_iclient_start, or runs on_ready. */
void nd_iclient_ready(nd_ctx_t *ctx, nd_conn_t *c);
/* ICALL and ITIMER messages, and the end of a turn. */
void nd_iclient_on_call(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_icall_t *m);
void nd_iclient_on_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *m);
void nd_iclient_turn_end(nd_ctx_t *ctx, nd_conn_t *c);
void nd_iclient_discard(nd_ctx_t *ctx, nd_msg_t *msg);
/* The connection's final: releases the internal client's state (its memory is the
 * connection's). */
void nd_iclient_fini(nd_ctx_t *ctx, nd_conn_t *c);
/* conn.c: the connection of an internal client (no socket, not in the registry), with ic_size
 * zeroed bytes for its nd_iclient_t right after it (c->ic). Returns: it, with one reference for
 * the caller. */
nd_conn_t *nd_conn_spawn_internal(nd_ctx_t *ctx, nd_server_t *srv, nd_acct_t *acct,
                                  nd_conn_kind_t kind, size_t ic_size);

/* pconn.c: a protocol connection's side of the connection actor. */
/* Hands buf[0..len) to the protocol. Returns: the bytes consumed. */
size_t nd_pconn_input(nd_ctx_t *ctx, nd_conn_t *c, const char *buf, size_t len);
void nd_pconn_on_msg(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_pmsg_t *m);
void nd_pconn_on_start(nd_ctx_t *ctx, nd_conn_t *c);
void nd_pconn_on_call(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_pcall_t *m);

/* deliver.c */
void nd_deliver_publish(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd);
/* As nd_deliver_publish, the MSG lines showing the subject `shown` (NULL: cmd's) in place of
 * the one matched: a JetStream delivery goes to the deliver subject or request inbox and shows
 * the message's own subject. Returns: how many recipients matched (0: no interest). */
uint32_t nd_deliver_publish_as(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd,
                               const char *shown, size_t shown_len);
/* A route's inbound RMSG/HMSG (cmd as a PUB/HPUB; cmd->queues the queue groups it names),
 * delivered in acct to local subscribers only. */
void nd_deliver_route_publish(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct,
                              const nd_proto_cmd_t *cmd);
/* An inbound RMSG/LMSG whose reply is "<reply>@<subject>" (a JetStream delivery shown under its
 * stream subject, as nats-server writes it): routed (the reply cut) and shown (the subject after
 * the '@'), both borrowing cmd's bytes. Returns: false when the reply has no '@'. */
bool nd_deliver_split_shown(const nd_proto_cmd_t *cmd, nd_proto_cmd_t *routed,
                            nd_proto_cmd_t *shown);
/* The RMSG/HMSG of cmd (published in acct) for route t, for queue group member qsub (NULL: a
 * plain subscription), as a CHUNK message: for publishers outside deliver.c (sysclient.c). */
nd_conn_msg_chunk_t *nd_deliver_route_chunk(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd,
                                            nd_acct_t *acct, nd_conn_t *t, const nd_sub_t *qsub);
/* conn.c: a gateway connection for a connected socket (gateway.c made gw). Owns: fd, gw. */
struct nd_gw;
void nd_conn_spawn_gateway(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_gw *gw);
/* conn.c: a route connection for a connected socket (route.c made rt). Owns: fd, rt. */
void nd_conn_spawn_route(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_route *rt);
/* Whether a publish of subj in acct would reach anyone: its subscriptions, or those of an
 * account importing subj (as nd_deliver_publish would deliver it). Ctx: a worker, outside
 * epoch sections. */
bool nd_deliver_has_interest(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t len);
/* The DELIVER message of cmd for sub (hmsg: with its headers, else the payload alone), holding
 * a new reference on payload (cmd's payload bytes). Used by the server's own publisher. */
nd_conn_msg_deliver_t *nd_deliver_msg_new(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd,
                                          const nd_sub_t *sub, bool hmsg, bool last,
                                          nd_payload_t *payload);
/* The PMSG of cmd (shown: what the recipient sees as subject and reply) for sub of a protocol
 * connection, holding a new reference on payload (cmd's payload bytes). */
nd_conn_msg_pmsg_t *nd_deliver_pmsg_new(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd,
                                        const nd_proto_cmd_t *shown, const nd_sub_t *sub,
                                        nd_payload_t *payload);
void nd_deliver_receive(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_deliver_t *m);
void nd_deliver_receive_chunk(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_chunk_t *ch);
/* pconn.c: a chunk of nd_pmsg_rec_t records for a protocol connection. */
void nd_pconn_on_chunk(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_chunk_t *ch);
/* Sends every open chunk; called at the end of each read batch. */
void nd_deliver_flush(nd_ctx_t *ctx, nd_conn_t *c);
void nd_deliver_outbox_free(nd_conn_t *c);
void nd_deliver_discard(nd_ctx_t *ctx, nd_msg_t *msg);

#endif
