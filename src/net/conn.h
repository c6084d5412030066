/* The connection actor: one kind for every peer (clients now; routes, gateways, leaf nodes,
 * MQTT and internal connections later, told apart by `kind`, as in nats-server).
 * Owns its socket, parser state, read and write buffers, its subscriptions (by sid) and timers. */
#ifndef ND_CONN_H
#define ND_CONN_H

#include "actors/actor.h"

typedef struct nd_server nd_server_t;

typedef enum {
    ND_CONN_CLIENT,
    ND_CONN_ROUTER,
    ND_CONN_GATEWAY,
    ND_CONN_LEAF,
    ND_CONN_SYSTEM,
    ND_CONN_JETSTREAM,
    ND_CONN_MQTT,
} nd_conn_kind_t;

/* Why a connection closed: the /connz "reason" strings of nats-server (inventory §1.8). */
#define ND_CLOSE_REASONS(X)                                                                       \
    X(ND_CLOSE_CLIENT, "Client Closed")                                                          \
    X(ND_CLOSE_AUTH_TIMEOUT, "Authentication Timeout")                                           \
    X(ND_CLOSE_AUTH_FAILURE, "Authentication Failure")                                           \
    X(ND_CLOSE_SLOW_PENDING, "Slow Consumer (Pending Bytes)")                                    \
    X(ND_CLOSE_SLOW_DEADLINE, "Slow Consumer (Write Deadline)")                                  \
    X(ND_CLOSE_WRITE_ERROR, "Write Error")                                                       \
    X(ND_CLOSE_READ_ERROR, "Read Error")                                                         \
    X(ND_CLOSE_PARSE_ERROR, "Parse Error")                                                       \
    X(ND_CLOSE_STALE, "Stale Connection")                                                        \
    X(ND_CLOSE_PROTOCOL_VIOLATION, "Protocol Violation")                                         \
    X(ND_CLOSE_BAD_PROTOCOL, "Bad Client Protocol Version")                                      \
    X(ND_CLOSE_MAX_CONNECTIONS, "Maximum Connections Exceeded")                                  \
    X(ND_CLOSE_MAX_PAYLOAD, "Maximum Message Payload Exceeded")                                  \
    X(ND_CLOSE_MAX_CONTROL_LINE, "Maximum Control Line Exceeded")                                \
    X(ND_CLOSE_MAX_SUBSCRIPTIONS, "Maximum Subscriptions Exceeded")                              \
    X(ND_CLOSE_SHUTDOWN, "Server Shutdown")                                                      \
    X(ND_CLOSE_NO_RESPONDERS_HEADERS, "No Responders Requires Headers")                          \
    X(ND_CLOSE_TLS_HANDSHAKE, "TLS Handshake Failure")                                          \
    X(ND_CLOSE_AUTH_EXPIRED, "Authentication Expired")                                           \
    X(ND_CLOSE_REVOKED, "Credentials Revoked")                                                   \
    X(ND_CLOSE_MAX_ACCOUNT_CONNECTIONS, "Maximum Account Connections Exceeded")                 \
    X(ND_CLOSE_WRONG_PORT, "Incorrect Port")                                                     \
    X(ND_CLOSE_DUPLICATE_ROUTE, "Duplicate Route")                                               \
    X(ND_CLOSE_ROUTE_REMOVED, "Route Removed")                                                   \
    X(ND_CLOSE_CLUSTER_NAME_CONFLICT, "Cluster Name Conflict")                                   \
    X(ND_CLOSE_DUPLICATE_SERVER_NAME, "Duplicate Server Name")                                   \
    X(ND_CLOSE_MIN_VERSION, "Minimum Version Required")                                          \
    X(ND_CLOSE_CLUSTER_NAMES_IDENTICAL, "Cluster Names Identical")                               \
    X(ND_CLOSE_DUPLICATE_CLIENT_ID, "Duplicate Client ID")                                       \
    X(ND_CLOSE_WRONG_GATEWAY, "Wrong Gateway")

typedef enum {
#define ND_CLOSE_ENUM(name, text) name,
    ND_CLOSE_REASONS(ND_CLOSE_ENUM)
#undef ND_CLOSE_ENUM
} nd_close_reason_t;

const char *nd_close_reason_text(nd_close_reason_t r);

/* The connection registry's ident function (src/net/connreg.h): fills the identity of the
 * connection embedding mc and returns its actor. Ctx: under the registry's mutex. */
struct nd_mon_conn;
struct nd_conn_info;
nd_actor_t *nd_conn_mon_ident(const struct nd_mon_conn *mc, struct nd_conn_info *ci);

/* Creates the client connection actor for an accepted socket and starts it (INFO goes out on its
 * first turn). Owns: fd. Ctx: a worker (the client listener actor's turn, net/listener.h). */
void nd_conn_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd);

/* As nd_conn_spawn for a socket accepted on the WebSocket port: the connection upgrades first
 * (conn_ws.c), then is a client. ws: the listener's settings, which outlive the connection. */
struct nd_ws_srv;
void nd_conn_spawn_ws(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_ws_srv *ws);

/* Lame duck mode (lameduck.c): tells a connection to send its client the INFO with "ldm":true,
 * or to close with "Server Shutdown". conn: a live reference. Ctx: any thread with a ctx. */
void nd_conn_send_ldm(nd_ctx_t *ctx, nd_actor_t *conn);
void nd_conn_send_shutdown(nd_ctx_t *ctx, nd_actor_t *conn);
/* Closes the connection with reason (a route removed by a reload). */
void nd_conn_send_close(nd_ctx_t *ctx, nd_actor_t *conn, nd_close_reason_t reason);
/* The client INFO changed (connect_urls): a client that takes async INFO gets it again. */
void nd_conn_send_info_update(nd_ctx_t *ctx, nd_actor_t *conn);

#endif
