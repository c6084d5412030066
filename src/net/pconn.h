/* Protocol connections: a connection actor (conn.c) whose bytes speak another protocol than
 * NATS (MQTT today), served by a room above net through a small vtable, so net never includes
 * that room.
 *
 * The connection is an ordinary natsd client connection: it is counted, listed in /connz, logs in
 * through the server's authorization (conn_auth.c: same users, accounts and permissions as NATS
 * clients), and its subscriptions are ordinary subscriptions in its account's sublist. Only three
 * things differ, and each goes through the vtable:
 * - input: every read hands the bytes to `input`, which consumes whole packets and says how many
 *   bytes a packet it could not finish yet needs (so a large packet is assembled in a private
 *   buffer, as a large PUB is);
 * - delivery: a message matching one of its subscriptions reaches it as the publish itself (not
 *   MSG text), and `deliver` formats it on the connection's own turn;
 * - lifecycle: `start` on the first turn (nothing is written: the protocol speaks first or not),
 *   `closing` when it closes (before its subscriptions go: a will message is published there),
 *   `final` to free the protocol's state, `timer` for its one timer, `subs_ready` when every
 *   subscription it asked for is in the sublist.
 *
 * Ctx: every function here runs on the connection's own turn (the vtable's calls too), unless it
 * says otherwise.
 */
#ifndef ND_PCONN_H
#define ND_PCONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/ctx.h"
#include "net/conn.h"

struct nd_conn;
struct nd_acct;

/* A delivered message, borrowed for the call. */
typedef struct nd_pconn_msg {
    const char *subject, *reply, *sid;
    size_t subject_len, reply_len, sid_len;
    const char *hdr; /* NATS headers (NATS/1.0 ...), NULL when none */
    size_t hdr_len;
    const char *data;
    size_t data_len;
} nd_pconn_msg_t;

typedef struct nd_pconn_proto {
    const char *name; /* "mqtt": in log lines */
    /* The id tag of its connections in log lines (nd_pconn_log_tag): "mid", and "mid_ws" over
     * WebSocket, as nats-server's MQTT clients have. */
    const char *tag, *tag_ws;
    void (*start)(nd_ctx_t *ctx, struct nd_conn *c);
    /* Consumes whole packets of buf[0..len). Returns: the bytes consumed; *need: when a packet
     * is incomplete, the bytes it needs in all (0 when unknown). The connection may have been
     * closed or paused (nd_pconn_pause) meanwhile. */
    size_t (*input)(nd_ctx_t *ctx, struct nd_conn *c, const char *buf, size_t len, size_t *need);
    void (*deliver)(nd_ctx_t *ctx, struct nd_conn *c, const nd_pconn_msg_t *m);
    void (*timer)(nd_ctx_t *ctx, struct nd_conn *c);
    void (*subs_ready)(nd_ctx_t *ctx, struct nd_conn *c);
    /* Work another actor sent (nd_pconn_send_call), on our turn; owns data. */
    void (*call)(nd_ctx_t *ctx, struct nd_conn *c, uint32_t what, void *data);
    void (*closing)(nd_ctx_t *ctx, struct nd_conn *c, nd_close_reason_t reason);
    void (*final)(nd_ctx_t *ctx, struct nd_conn *c);
} nd_pconn_proto_t;

/* Creates the connection actor for an accepted socket (kind ND_CONN_MQTT). proto and arg outlive
 * it. tls: the listener's TLS context (the connection takes a reference; the handshake comes
 * first, before any byte reaches `input`), or NULL. Owns: fd. Ctx: a worker (the listener
 * actor's turn). */
struct nd_tls_ctx;
void nd_pconn_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd, const nd_pconn_proto_t *proto,
                    void *arg, struct nd_tls_ctx *tls);

/* Registers proto and arg as the protocol of the websocket port's path /mqtt: an upgrade there
 * becomes a protocol connection (kind ND_CONN_MQTT) over the WebSocket transport, as
 * nats-server's createMQTTClient with a websocket. Without it, /mqtt is refused with 404. proto
 * and arg outlive the server's connections. Ctx: the starting thread, before the pool starts. */
void nd_pconn_register_ws(nd_server_t *srv, const nd_pconn_proto_t *proto, void *arg);
/* Whether the connection came over the websocket port (MQTT over WebSocket). */
bool nd_pconn_websocket(const struct nd_conn *c);

void *nd_pconn_arg(const struct nd_conn *c);
void *nd_pconn_state(const struct nd_conn *c);
void nd_pconn_set_state(struct nd_conn *c, void *state);
uint64_t nd_pconn_cid(const struct nd_conn *c);
/* The connection's id tag in log lines ("<ip>:<port> - <tag>:<cid> - ..."): the protocol's tag,
 * or its tag_ws over WebSocket. */
const char *nd_pconn_log_tag(const struct nd_conn *c);
nd_server_t *nd_pconn_server(const struct nd_conn *c);
/* The account the connection is bound to (after nd_pconn_login: the user's). Borrowed. */
struct nd_acct *nd_pconn_account(const struct nd_conn *c);
/* The client's address for log lines: its IP, or "<forwarded>/<ip>" when it came over the
 * websocket port with an X-Forwarded-For header (as nats-server's log prefix). Borrowed. */
const char *nd_pconn_ip(const struct nd_conn *c);
int nd_pconn_port(const struct nd_conn *c);
bool nd_pconn_closing(const struct nd_conn *c);

/* Queues output bytes (written at the end of the turn). */
void nd_pconn_write(struct nd_conn *c, const void *p, size_t n);
/* Room for n output bytes; nd_pconn_commit then adds the k written there. */
char *nd_pconn_reserve(struct nd_conn *c, size_t n);
void nd_pconn_commit(struct nd_conn *c, size_t k);
void nd_pconn_close(nd_ctx_t *ctx, struct nd_conn *c, nd_close_reason_t reason);

/* Stops reading input until nd_pconn_resume (the rest stays unconsumed). */
void nd_pconn_pause(struct nd_conn *c);
void nd_pconn_resume(nd_ctx_t *ctx, struct nd_conn *c);

/* Logs in with the server's authorization (or, with a non-NULL override, the protocol's own
 * single user / no_auth_user: see the .c). On success binds the account and permissions and
 * counts the connection as connected (the $SYS CONNECT advisory); name is the client's
 * identifier shown in /connz (mqtt_client). Returns: true when authorized. Nothing is written. */
typedef struct nd_pconn_auth {
    const char *user, *pass, *token; /* the block's single user, or NULL */
    const char *no_auth_user;        /* or NULL */
} nd_pconn_auth_t;
bool nd_pconn_login(nd_ctx_t *ctx, struct nd_conn *c, const char *user, const char *pass,
                    const nd_pconn_auth_t *override, const char *name);

/* Subscribes to subject under sid (unique per connection). Returns: 1 done (subs_ready follows
 * once it is in the sublist), 0 refused by permissions, -1 an invalid subject; 2 when the sid is
 * already subscribed (nothing changed). */
int nd_pconn_subscribe(nd_ctx_t *ctx, struct nd_conn *c, const char *subject, size_t len,
                       const char *sid, size_t sid_len);
/* Returns: whether sid was subscribed. */
bool nd_pconn_unsubscribe(nd_ctx_t *ctx, struct nd_conn *c, const char *sid, size_t sid_len);
/* Subscriptions sent to the account and not yet acknowledged. */
uint32_t nd_pconn_subs_due(const struct nd_conn *c);

/* Publishes as this connection (its account, mappings, imports). Returns: false when refused by
 * its publish permissions (nothing delivered). hdr: NATS headers or NULL. */
bool nd_pconn_publish(nd_ctx_t *ctx, struct nd_conn *c, const char *subject, size_t len,
                      const char *reply, size_t reply_len, const char *hdr, size_t hdr_len,
                      const char *data, size_t data_len);
/* Sends what publishes of this turn queued for other connections (the end of a read batch does
 * it too). */
void nd_pconn_flush(nd_ctx_t *ctx, struct nd_conn *c);

/* The protocol's one timer: `timer` runs delay_ms from now (re-arming replaces it). */
void nd_pconn_timer_start(nd_ctx_t *ctx, struct nd_conn *c, int64_t delay_ms);
void nd_pconn_timer_cancel(nd_ctx_t *ctx, struct nd_conn *c);

/* Runs proto->call(what, data) on conn's turn; when conn has closed, drop(data) runs instead
 * (drop may be NULL). conn: a live reference. Ctx: any thread with a ctx. */
void nd_pconn_send_call(nd_ctx_t *ctx, nd_actor_t *conn, uint32_t what, void *data,
                        void (*drop)(void *data));
/* Subscribes without the permission check: the protocol's own bookkeeping subjects (a
 * JetStream deliver subject). Returns: as nd_pconn_subscribe. */
int nd_pconn_subscribe_internal(nd_ctx_t *ctx, struct nd_conn *c, const char *subject, size_t len,
                                const char *sid, size_t sid_len);

/* The connection's actor, for nd_actor_ref and nd_conn_send_close from other actors. */
nd_actor_t *nd_pconn_actor(struct nd_conn *c);

#endif
