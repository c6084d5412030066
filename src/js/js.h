/* JetStream (DESIGN.md §4): streams today, consumers, KV and object store next.
 *
 * What runs: for every account that has JetStream, an API service (an internal client on
 * $JS.API.> and, with a domain, $JS.<domain>.API.>) and one stream actor per stream, each an
 * internal client subscribed to its stream's subjects, so that a publish reaches a stream only
 * because it subscribed (no special case in the publish path). Accounts without JetStream on a
 * server that has it get an API service that answers "JetStream not enabled for account".
 *
 * On disk: <store_dir>/jetstream/<account>/streams/<stream>/ holds meta.nd (the configuration,
 * msgpack) and msgs/ (the file store); streams come back from there at start.
 */
#ifndef ND_JS_H
#define ND_JS_H

#include <stdbool.h>
#include <stdint.h>

#include "net/server.h"

typedef struct nd_js nd_js_t;

/* Starts JetStream when the options enable it. Ctx: the main thread, after nd_pool_start.
 * Returns: the JetStream state, or NULL when it is off or could not start (logged). */
nd_js_t *nd_js_start(nd_server_t *srv);
/* Lets go of what would keep the pool's shutdown waiting (account references) and of the
 * hooks; JetStream keeps serving until the shutdown closes its actors. Ctx: the main thread,
 * before nd_pool_shutdown. */
void nd_js_stop(nd_js_t *js);
/* Frees what is left after the pool's shutdown (which closed every stream). */
void nd_js_free(nd_js_t *js);

#endif
