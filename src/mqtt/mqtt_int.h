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

/* A connected client identifier, in the service's table while its connection holds it. Owned
 * by the session; the table only points to it. */
typedef struct nd_mqtt_cid {
    struct nd_mqtt_cid *next; /* under the table's mutex */
    const void *acct;         /* identity only: client ids are per account */
    nd_actor_t *actor;        /* the connection (alive while the entry is in the table) */
    bool replaced;            /* under the table's mutex: a newer connection took the id */
    bool listed;              /* under the table's mutex */
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
    nd_pconn_auth_t auth; /* the block's own authorization, or all NULL */
    int64_t auth_timeout_ms;
    /* the client-id table */
    pthread_mutex_t mu;
    nd_mqtt_cid_t *buckets[ND_MQTT_CID_BUCKETS];
};

/* mqtt_sess.c: the connections' protocol. */
extern const nd_pconn_proto_t nd_mqtt_proto;

/* Registers e (id and acct set) as its id's connection. Returns: the actor of the connection it
 * replaces, with a reference for the caller (which closes it), or NULL. */
nd_actor_t *nd_mqtt_cid_take(nd_mqtt_t *m, nd_mqtt_cid_t *e);
/* Removes e if it is still listed. Returns: whether a newer connection replaced it. */
bool nd_mqtt_cid_drop(nd_mqtt_t *m, nd_mqtt_cid_t *e);

#endif
