/* The MQTT service's state shared by its files (mqtt.c: options, listener, client-id table;
 * mqtt_sess.c: the protocol of one connection). Private to src/mqtt. */
#ifndef ND_MQTT_INT_H
#define ND_MQTT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mqtt/mqtt.h"
#include "net/listener.h"
#include "net/pconn.h"
#include "subj/account.h"

/* A connected client identifier, in the service's table while its connection holds it. Owned
 * by the session; the table only points to it. */
typedef struct nd_mqtt_cid {
    struct nd_mqtt_cid *next; /* under the table's mutex */
    const void *acct;         /* identity only: client ids are per account */
    nd_actor_t *actor;        /* the connection (alive while the entry is in the table) */
    bool replaced;            /* under the table's mutex: a newer connection took the id */
    bool listed;              /* under the table's mutex */
    int64_t took_over_ns;     /* immutable once listed: when it replaced another, else 0 */
    uint32_t hash;
    char id[];
} nd_mqtt_cid_t;

#define ND_MQTT_CID_BUCKETS 4096

struct nd_mqtt {
    /* immutable after nd_mqtt_new */
    nd_server_t *srv;
    const nd_mqtt_opts_t *mo;
    nd_listener_t *listener;
    int port;
    struct nd_tls_ctx *tls; /* mqtt { tls }, or NULL */
    nd_pconn_auth_t auth;   /* the block's own authorization, or all NULL */
    int64_t auth_timeout_ms;
    /* the members a reload changes (nd_mqtt_reload), read where they are used */
    _Atomic int64_t ack_wait_ms, inactive_ms;
    _Atomic int max_ack_pending, stream_replicas, consumer_replicas;
    _Atomic bool consumer_memory;
    /* the client-id table and the accounts' MQTT states, under mu */
    pthread_mutex_t mu;
    nd_mqtt_cid_t *buckets[ND_MQTT_CID_BUCKETS];
    struct nd_mqtt_acct *accts;
    uint32_t naccts;
};

/* mqtt_acct.c: an account's MQTT state (see its top comment). */
typedef struct nd_mqtt_acct nd_mqtt_acct_t;

/* What the account's internal client sends a connection (nd_pconn_send_call's `what`). */
enum {
    ND_MQTT_CALL_READY = 1, /* the account is ready (or failed): go on with the CONNECT */
    ND_MQTT_CALL_CONSUMER,  /* nd_mqtt_done_t: a consumer create answered */
    ND_MQTT_CALL_STORED,    /* nd_mqtt_done_t: a QoS 1 message is stored (tag: its packet id) */
    ND_MQTT_CALL_ANSWER,    /* nd_mqtt_answer_t: a JetStream API request (nd_mqtt_acct_request) */
};

/* nats-server's streams for QoS 2 (mqtt_acct.c creates them): a received message waits for its
 * PUBREL in $MQTT_qos2in as $MQTT.qos2.in.<client id>.<packet id>; a PUBREL owed to a client
 * waits for its PUBCOMP in $MQTT_out as $MQTT.out.pubrel.<session hash>, read by the session's
 * durable consumer $MQTT_PUBREL_<session hash>. */
#define ND_MQTT_MSGS_STREAM   "$MQTT_msgs"
#define ND_MQTT_QOS2IN_STREAM "$MQTT_qos2in"
#define ND_MQTT_OUT_STREAM    "$MQTT_out"

typedef struct nd_mqtt_answer {
    uint32_t tag;
    char *json; /* owned; NULL when the answer was not JSON (a no-responders status) */
    size_t len;
} nd_mqtt_answer_t;

typedef struct nd_mqtt_done {
    uint32_t tag;
    bool ok;
} nd_mqtt_done_t;

/* A retained message, copied out of the account's table. */
typedef struct nd_mqtt_retained {
    char *subject; /* NATS form */
    uint8_t qos;
    char *data;
    size_t len;
} nd_mqtt_retained_t;

/* The account's state, created (with its internal client) on first use. Ctx: a worker. */
nd_mqtt_acct_t *nd_mqtt_acct_get(nd_ctx_t *ctx, nd_mqtt_t *m, nd_acct_t *acct);
/* Returns: 1 ready, -1 failed, 0 not yet: the connection cid gets ND_MQTT_CALL_READY. A failed
 * account is tried again (cid 0: only look). */
int nd_mqtt_acct_wait(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid);
/* Stores a message on a stream subject through the internal client (no reply). */
void nd_mqtt_acct_store(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *subject, const char *hdr,
                        size_t hl, const char *data, size_t dl);
/* As nd_mqtt_acct_store, answered: the connection cid gets ND_MQTT_CALL_STORED with tag once
 * JetStream acknowledged it. */
void nd_mqtt_acct_store_ack(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                            const char *subject, const char *hdr, size_t hl, const char *data,
                            size_t dl);
/* Acknowledges a JetStream delivery (publishes on its ack subject). */
void nd_mqtt_acct_ack(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *ack_subject);
/* Sends a JetStream API request (body: JSON); the connection cid gets ND_MQTT_CALL_ANSWER with
 * tag and the answer. */
void nd_mqtt_acct_request(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                          const char *subject, const char *body);
/* Creates a durable push consumer on stream (a QoS 1 or 2 subscription's on $MQTT_msgs, a
 * session's PUBREL one on $MQTT_out); the connection cid gets ND_MQTT_CALL_CONSUMER with tag. */
void nd_mqtt_acct_consumer_create(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, uint64_t cid, uint32_t tag,
                                  const char *stream, const char *durable, const char *filter,
                                  const char *deliver);
void nd_mqtt_acct_consumer_delete(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *stream,
                                  const char *durable);
/* Sets (len 0: deletes) the retained message of subj, in memory and in $MQTT_rmsgs. cid: the
 * publishing connection, which then gets ND_MQTT_CALL_STORED with ND_MQTT_TAG_NO_PUBACK (0: a
 * will, unanswered). */
void nd_mqtt_retain_set(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *subj, uint8_t qos,
                        const char *data, size_t len, uint64_t cid);
#define ND_MQTT_TAG_NO_PUBACK 0x10000u /* a store that only counts in the connection's window */
/* Copies the retained messages matching filter (a subject with wildcards; one whose first token
 * is a wildcard matches no subject starting with '$', MQTT-4.7.2-1), visiting only the branches
 * of the account's subject trie the filter can match (mqtt_index.h). Returns: their count; *out
 * owned by the caller (each field nd_free'd). */
size_t nd_mqtt_retain_match(nd_mqtt_acct_t *ma, const char *filter, nd_mqtt_retained_t **out);
/* The session record of id (a copy to nd_free), or NULL; one hash lookup. */
char *nd_mqtt_sess_get(nd_mqtt_acct_t *ma, const char *id);
/* Replaces (json NULL: deletes) the session record of id, in memory and in $MQTT_sess. */
void nd_mqtt_sess_put(nd_ctx_t *ctx, nd_mqtt_acct_t *ma, const char *id, const char *json);
void nd_mqtt_sess_subject(const char *id, char *out, size_t room);
/* The QoS in a message's Nmqtt-Pub header (0 when none). */
uint8_t nd_mqtt_hdr_qos(const char *hdr, size_t len);
/* Frees every account state (after the pool's shutdown). */
void nd_mqtt_acct_free_all(nd_mqtt_t *m);

/* mqtt_sess.c: the connections' protocol. */
extern const nd_pconn_proto_t nd_mqtt_proto;

/* Registers e (id and acct set) as its id's connection. Returns: the actor of the connection it
 * replaces, with a reference for the caller (which closes it), or NULL; *jailed (and nothing
 * registered) when the id changed hands less than ND_MQTT_JAIL_NS ago: nats-server holds such a
 * client for that long, then closes it ("Duplicate Client ID"). */
#define ND_MQTT_JAIL_NS 1000000000LL
nd_actor_t *nd_mqtt_cid_take(nd_mqtt_t *m, nd_mqtt_cid_t *e, int64_t now_ns, bool *jailed);
/* Removes e if it is still listed. Returns: whether a newer connection replaced it. */
bool nd_mqtt_cid_drop(nd_mqtt_t *m, nd_mqtt_cid_t *e);

#endif
