/* System account events and requests (inventory §5.5), published through the internal publisher
 * (net/sysclient.h) into the account named by `system_account`.
 *
 * Only when `system_account` is configured: nats-server 2.10 also creates `$SYS` by default, we
 * do not (no system account, no events, and `$SYS.REQ.` subjects are plain subjects).
 * Events: `$SYS.ACCOUNT.<acc>.CONNECT` and `.DISCONNECT` for every client connection that
 * completed its CONNECT, with nats-server 2.9's JSON (io.nats.server.advisory.v1.client_connect
 * / client_disconnect: the server block, the client block, and for a disconnect the counters and
 * the close reason).
 * Requests: a publish by a client of the system account on `$SYS.REQ.SERVER.PING[.<X>]` or
 * `$SYS.REQ.SERVER.<our id>.<X>` with a reply subject is answered into the system account, X one
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

struct nd_conn;

/* Counts c in (connect) or out of its account's live connections (acct->conns), then, when a
 * system account is configured, publishes the account's connection count and c's CONNECT or
 * DISCONNECT advisory. Called exactly once each way for a connection past its CONNECT.
 * Ctx: c's turn. */
void nd_sys_event_client(nd_ctx_t *ctx, struct nd_conn *c, bool connect);

/* Starts the periodic STATSZ when a system account is configured. Ctx: the thread that starts
 * the server, after nd_server_start; the pool's shutdown stops it. */
void nd_sys_start(nd_server_t *s);

/* Returns: whether a publish by a client of acct on subj is a request the server answers (acct is
 * the system account and subj one of the requests above; any other `$SYS.REQ.` subject is a
 * plain subject, as in nats-server where nobody subscribes to it). Ctx: any thread. */
bool nd_sys_is_request(const nd_server_t *s, const nd_acct_t *acct, const char *subj, size_t len);

/* Answers the request (see the top comment) on reply in acct, the system account; unknown
 * requests and requests without a reply are ignored. Ctx: a worker, outside an epoch section. */
void nd_sys_request(nd_ctx_t *ctx, nd_server_t *s, nd_acct_t *acct, const char *subj, size_t len,
                    const char *reply, size_t reply_len);

#endif
