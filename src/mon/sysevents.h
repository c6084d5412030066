/* System account events and requests (inventory §5.5), published through the internal publisher
 * (net/sysclient.h) into the system account (nd_opts_system_account): the one `system_account`
 * names, else `$SYS`, which nats-server 2.9 creates by default too (auth.c creates it when no
 * accounts block declares it). With `no_system_account` (or in operator mode without one from
 * the operator JWT) there is none: no events, and `$SYS.REQ.` subjects are plain subjects.
 * Events: `$SYS.ACCOUNT.<acc>.CONNECT` and `.DISCONNECT` for every client connection that
 * completed its CONNECT, with nats-server 2.9's JSON (io.nats.server.advisory.v1.client_connect
 * / client_disconnect: the server block, the client block, and for a disconnect the counters and
 * the close reason).
 * Requests: an internal client of the system account (net/iclient.h) subscribes to
 * `$SYS.REQ.SERVER.PING[.<X>]` and `$SYS.REQ.SERVER.<our id>.<X>` and answers on the reply
 * subject, X one
 * of STATSZ (also the bare PING), VARZ, CONNZ, HEALTHZ, and `$SYS.REQ.ACCOUNT.<acc>.CONNZ` (the
 * account's connections): {"server":{...},"statsz":{...}} or {"server":{...},"data":{...}} with
 * the /varz, /connz, /healthz bodies of src/mon. Any other `$SYS.REQ.` subject gets the
 * no-responders status, as from nats-server.
 * Periodic: `$SYS.SERVER.<id>.STATSZ` ({"server":{...},"statsz":{...}}), 250 ms after the start,
 * then at doubling intervals up to 30 s, as nats-server 2.9.
 * Before each CONNECT and DISCONNECT advisory: the account's connection count
 * (io.nats.server.advisory.v1.account_connections) on `$SYS.ACCOUNT.<acc>.SERVER.CONNS` and on
 * the old `$SYS.SERVER.ACCOUNT.<acc>.CONNS`, as nats-server 2.9.10 sends it (no leafnodes or
 * per-account slow consumers here: those are 0).
 * Not implemented: shutdown,
 * lame duck and auth error events, the other `$SYS.REQ.ACCOUNT.` requests and the imports every
 * account gets of the PING.CONNZ/STATZ services, SUBSZ (it needs the connections' answers), request
 * options in the payload. References: nats-server server/events.go (sendConnectEvent,
 * accountDisconnectEvent, statszReq, zReq).
 */
#ifndef ND_SYSEVENTS_H
#define ND_SYSEVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "subj/account.h"
#include "actors/ctx.h"
#include "net/server.h"

/* Registers the client-event hook (net/server.h) that counts and reports connections.
 * Ctx: the starting thread, before the pool starts. */
void nd_sys_init(nd_server_t *s);

/* Starts the request service (an internal client, net/iclient.h: its subscriptions are in place
 * when this returns) and the periodic STATSZ, when there is a system account.
 * Ctx: the thread that starts the server, after nd_pool_start; the pool's shutdown stops them. */
void nd_sys_start(nd_server_t *s);

#endif
