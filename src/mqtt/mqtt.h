/* MQTT 3.1.1 for natsd, as nats-server does it (inventory §8.1): the `mqtt {}` listener, whose
 * connections are natsd client connections (net/pconn.h) speaking MQTT. Subscriptions and
 * publishes are ordinary ones in the client's account, so MQTT and NATS clients see each other's
 * messages (topic a/b is subject a.b, mqtt_codec.h).
 *
 * Lifecycle (src/server/natsd.c): nd_mqtt_check (options, before anything starts) ->
 * nd_mqtt_new (binds the port) -> nd_mqtt_start (accepts, once the pool runs) ->
 * nd_mqtt_stop (before the pool's shutdown) -> nd_mqtt_free (after it).
 */
#ifndef ND_MQTT_H
#define ND_MQTT_H

#include <stddef.h>

#include "cfg/opts.h"
#include "net/server.h"

typedef struct nd_mqtt nd_mqtt_t;

/* nats-server's validateMQTTOptions as 2.9.10 has it. Returns: 0, or -1 with the error text
 * (without "nats-server: ") in err. Ctx: any thread. */
int nd_mqtt_check(const nd_opts_t *o, char *err, size_t errlen);
/* Binds the MQTT port when the options have one. Returns: the service, NULL when MQTT is off
 * (*failed false) or the port could not be bound (*failed true, logged). Ctx: the starting
 * thread. */
nd_mqtt_t *nd_mqtt_new(nd_server_t *srv, bool *failed);
void nd_mqtt_start(nd_mqtt_t *m);
void nd_mqtt_stop(nd_mqtt_t *m);
void nd_mqtt_free(nd_mqtt_t *m);
/* Applies a reloaded mqtt block's ack_wait, max_ack_pending, stream/consumer replicas,
 * consumer_memory_storage and consumer_inactive_threshold (server/reload.c refused any other
 * change) and logs them as nats-server does: what is created or delivered from then on uses
 * them. A tls change is not applied (logged as such). Ctx: the reloading thread. */
void nd_mqtt_reload(nd_mqtt_t *m, const nd_mqtt_opts_t *n);
/* The bound port (for tests and the ports file). */
int nd_mqtt_port(const nd_mqtt_t *m);

#endif
