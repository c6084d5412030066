/* The connection registry: what the monitoring endpoints know about connections, gathered without
 * touching the message path.
 *
 * Live connections. Each connection embeds an nd_mon_conn_t and links it into the server's
 * registry when it starts (its INFO is sent) and unlinks it at teardown: the registry's mutex is
 * taken twice per connection lifetime, never per message. Counters (msgs/bytes in and out,
 * subscription count, last activity, RTT) are written by the owning connection actor only, with
 * relaxed stores at the end of each of its turns (nd_connreg_publish: a compare and a plain store
 * per counter that changed, no read-modify-write), and sampled by monitors with relaxed loads; a
 * sample may be one turn old, which is fine for monitoring (the owner publishes before flushing
 * its output, so a client that saw an answer sees the counters that include it). The CONNECT
 * strings (name, lang, version) and, once authentication exists, the user and account are copied
 * into the registry in one allocation, swapped under its mutex (nd_connreg_set_meta/_set_user,
 * once per CONNECT), so a monitor copying them under the same mutex never sees a freed string.
 * What the connection holds anyway (cid, kind, address, pending bytes, actor) is not copied: the
 * ident function reads it from the connection under the mutex. A registered connection's memory
 * stays valid while the mutex is held: it unlinks itself (under the mutex) before its final() can
 * run to completion and its memory be freed.
 *
 * Subscription lists are owned by the connection actor (its sid map), so a monitor that needs them
 * asks each connection by message (ND_CONN_MSG_MON_SUBS, answered on the connection's turn, or by
 * its discard hook once it has closed) and gathers the replies asynchronously; see http.c.
 *
 * Closed connections. At teardown the owner builds an nd_conn_info_t (its final counters, the close
 * reason text of inventory §1.8, the stop time and its subscriptions) and pushes it into a ring of
 * max_closed_clients entries (oldest evicted), and adds its counters to the closed totals, so that
 * server-wide totals (/varz in_msgs...) are exact: closed totals + the sum over live connections,
 * both read under the one mutex.
 *
 * Snapshots (nd_conn_info_t) are reference counted: the ring and every request that copied it out
 * hold a reference, so a closed entry is never copied, and a request never blocks the ring.
 */
#ifndef ND_CONNREG_H
#define ND_CONNREG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/actor.h"
#include "subj/sub.h"

/* max_closed_clients when the option is 0 (nats-server's DEFAULT_MAX_CLOSED_CLIENTS). */
#define ND_MON_DEFAULT_MAX_CLOSED 10000

typedef struct nd_connreg nd_connreg_t;

/* One subscription as monitoring shows it. */
typedef struct nd_sub_info {
    char *subject; /* owned */
    char *queue;   /* owned, or NULL */
    char *sid;     /* owned */
    uint64_t msgs, max;
} nd_sub_info_t;

/* A connection as monitoring shows it: a copy, owned by whoever holds a reference. */
typedef struct nd_conn_info {
    _Atomic uint32_t refs;
    uint64_t cid;
    int kind; /* nd_conn_kind_t */
    bool websocket; /* a client of the websocket port ("type":"websocket") */
    char ip[48];
    int port;
    int64_t start_ns, last_ns, stop_ns; /* wall clock; stop_ns is 0 while open */
    int64_t rtt_ns;
    int64_t pending;
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes;
    uint32_t num_subs;
    char *name, *lang, *version; /* owned, or NULL */
    char *user, *account;        /* owned, or NULL: who authenticated, in which account */
    char *mqtt_client;           /* owned, or NULL: an MQTT connection's client identifier */
    const char *reason;          /* static close reason text; NULL while open */
    nd_actor_t *actor;           /* open only: a reference (for the subscriptions request) */
    nd_sub_info_t *subs;         /* closed: taken at close; open: filled by the request */
    size_t nsubs;
    bool subs_known; /* subs holds the connection's subscriptions */
} nd_conn_info_t;

/* The CONNECT and authentication strings of a connection, in one allocation (any may be NULL). */
typedef struct nd_mon_meta {
    char *name, *lang, *version, *user, *account, *mqtt;
} nd_mon_meta_t;

/* Embedded in each connection; kept small (96 bytes), since a server may hold 100k connections:
 * what the connection already holds (cid, kind, address, pending bytes, its actor) is read from
 * it through the registry's ident function instead of being copied here. */
typedef struct nd_mon_conn {
    /* under the registry's mutex */
    struct nd_mon_conn *prev, *next;
    nd_mon_meta_t *meta; /* or NULL */
    /* immutable once registered */
    int64_t start_ns;
    /* written by the owner only (relaxed stores); read by monitors (relaxed loads) */
    _Atomic int64_t last_ns, rtt_ns;
    _Atomic uint64_t in_msgs, in_bytes, out_msgs, out_bytes;
    _Atomic uint32_t num_subs;
    bool registered; /* under the registry's mutex */
    /* owner only */
    uint64_t ping_sent_ns;  /* monotonic; 0 when no RTT ping is outstanding */
    uint64_t start_mono_ns; /* monotonic, at registration (the accept, before INFO goes out) */
} nd_mon_conn_t;

/* Fills ci's cid, kind, ip, port and pending from the connection that embeds mc, and returns its
 * actor. Called under the registry's mutex, on a registered connection (alive, and its identity
 * fields immutable). */
typedef nd_actor_t *nd_connreg_ident_fn(const nd_mon_conn_t *mc, nd_conn_info_t *ci);

/* The request a monitor sends to a connection for its subscriptions (receiver: the connection;
 * the message id is the connection's ND_CONN_MSG_MON_SUBS). The connection fills info->subs and
 * answers with nd_connreg_answer_subs, from its turn or from its discard hook. */
typedef struct nd_mon_msg_subs {
    nd_msg_t hdr;
    nd_actor_t *reply_to; /* owns: a reference */
    uint32_t reply_id;
    uint64_t tag;         /* echoed in the reply */
    nd_conn_info_t *info; /* owns: a reference, handed to the reply */
} nd_mon_msg_subs_t;

/* The answer (receiver: the monitor that asked). */
typedef struct nd_mon_msg_subs_reply {
    nd_msg_t hdr;
    uint64_t tag;
    nd_conn_info_t *info; /* owns: a reference */
} nd_mon_msg_subs_reply_t;

/* Totals over every connection, live and closed. */
typedef struct nd_connreg_totals {
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes;
    uint64_t total_conns;    /* connections ever registered */
    uint64_t slow_consumers; /* closed as slow consumers */
    uint32_t live;
    uint64_t live_subs;
} nd_connreg_totals_t;

/* max_closed: closed connections kept (0: none); ident: see nd_connreg_ident_fn.
 * Ctx: any thread. */
nd_connreg_t *nd_connreg_new(int64_t max_closed, nd_connreg_ident_fn *ident);
/* Frees the registry and the ring; no connection may still be registered. */
void nd_connreg_free(nd_connreg_t *r);

/* Wall clock in nanoseconds since the Unix epoch. */
int64_t nd_mon_wall_ns(void);

/* Links a starting connection (its identity fields set). Ctx: the connection's turn. */
void nd_connreg_add(nd_connreg_t *r, nd_mon_conn_t *mc);

/* Publishes the owner's counters; marks activity when traffic or subscriptions changed.
 * Ctx: the owner's turn (the only writer). */
static inline void
nd_connreg_publish(nd_mon_conn_t *mc, uint64_t in_msgs, uint64_t in_bytes, uint64_t out_msgs,
                   uint64_t out_bytes, uint32_t num_subs)
{
    bool active = false;
    if (atomic_load_explicit(&mc->in_msgs, memory_order_relaxed) != in_msgs) {
        atomic_store_explicit(&mc->in_msgs, in_msgs, memory_order_relaxed);
        atomic_store_explicit(&mc->in_bytes, in_bytes, memory_order_relaxed);
        active = true;
    }
    if (atomic_load_explicit(&mc->out_msgs, memory_order_relaxed) != out_msgs) {
        atomic_store_explicit(&mc->out_msgs, out_msgs, memory_order_relaxed);
        atomic_store_explicit(&mc->out_bytes, out_bytes, memory_order_relaxed);
        active = true;
    }
    if (atomic_load_explicit(&mc->num_subs, memory_order_relaxed) != num_subs) {
        atomic_store_explicit(&mc->num_subs, num_subs, memory_order_relaxed);
        active = true;
    }
    if (active)
        atomic_store_explicit(&mc->last_ns, nd_mon_wall_ns(), memory_order_relaxed);
}

/* Marks activity without traffic (CONNECT, PING...). Ctx: the owner's turn. */
static inline void
nd_connreg_touch(nd_mon_conn_t *mc)
{
    atomic_store_explicit(&mc->last_ns, nd_mon_wall_ns(), memory_order_relaxed);
}

/* RTT measurement: a PING went out / a PONG came back. Ctx: the owner's turn. */
void nd_connreg_ping_sent(nd_mon_conn_t *mc);
void nd_connreg_pong(nd_mon_conn_t *mc);
/* A CONNECT arrived: the RTT is estimated as the time since the accept (INFO out, CONNECT in),
 * as nats-server does, until the first PING measures it. Ctx: the owner's turn. */
void nd_connreg_connect(nd_mon_conn_t *mc);

/* Copies the CONNECT strings (any may be NULL) into the registry. Ctx: the owner's turn. */
void nd_connreg_set_meta(nd_connreg_t *r, nd_mon_conn_t *mc, const char *name, const char *lang,
                         const char *version);

/* Records an MQTT connection's client identifier (/connz mqtt_client). Ctx: the owner's turn. */
void nd_connreg_set_mqtt(nd_connreg_t *r, nd_mon_conn_t *mc, const char *client_id);

/* Records who the connection authenticated as (user: the user name or NULL, e.g. for a token)
 * and its account (NULL: the global account), for /connz's authorized_user, account, user= and
 * acc=. Ctx: the owner's turn, once authenticated. */
void nd_connreg_set_user(nd_connreg_t *r, nd_mon_conn_t *mc, const char *user, const char *account);

/* Unlinks a closing connection, records it in the closed ring with the reason text and its
 * subscriptions (borrowed: copied), and adds its counters to the closed totals. slow: it was closed
 * as a slow consumer. Safe on a connection that was never registered (does nothing).
 * Ctx: the owner's turn, after its last nd_connreg_publish. */
void nd_connreg_remove(nd_connreg_t *r, nd_mon_conn_t *mc, const char *reason, bool slow,
                       nd_sub_t *const *subs, size_t nsubs);

/* Copies the live connections (cid == 0: all; else only that one) into a new array of
 * references, sorted by nothing in particular. Each info holds a reference on its actor.
 * Returns: the count; *out is owned by the caller (nd_connreg_release_all). Ctx: any thread. */
size_t nd_connreg_live(nd_connreg_t *r, uint64_t cid, nd_conn_info_t ***out);
/* The same for the closed ring, oldest first. */
size_t nd_connreg_closed(nd_connreg_t *r, uint64_t cid, nd_conn_info_t ***out);
/* Server-wide totals. */
void nd_connreg_totals(nd_connreg_t *r, nd_connreg_totals_t *t);

void nd_conn_info_ref(nd_conn_info_t *ci);
void nd_conn_info_unref(nd_ctx_t *ctx, nd_conn_info_t *ci);
/* Drops the reference on each of n infos and frees the array. */
void nd_connreg_release_all(nd_ctx_t *ctx, nd_conn_info_t **infos, size_t n);

/* Fills info->subs from a connection's subscriptions (borrowed, copied). Ctx: the connection. */
void nd_conn_info_set_subs(nd_conn_info_t *ci, nd_sub_t *const *subs, size_t n);

/* Answers a subscriptions request (sends the reply, drops the request's references); the
 * connection filled m->info before, or did not (it had closed). Ctx: any thread with a ctx. */
void nd_connreg_answer_subs(nd_ctx_t *ctx, nd_mon_msg_subs_t *m);

/* Asks the connection of ci for its subscriptions; the answer comes to reply_to as an
 * nd_mon_msg_subs_reply_t with id reply_id and tag (always, also from a connection that closed
 * meanwhile). Takes its own references on reply_to and ci. Ctx: any thread with a ctx. */
void nd_connreg_ask_subs(nd_ctx_t *ctx, nd_conn_info_t *ci, nd_actor_t *reply_to,
                         uint32_t reply_id, uint64_t tag);

#endif
