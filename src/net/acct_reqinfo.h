/* The `Nats-Request-Info` header of a request passing a service import (inventory §5.4): who made
 * the request, as the server knows it, for the exporting account's responders.
 *
 * nats-server's processServiceImport sets this header (a ClientInfo in JSON) on every request it
 * hands to the exporter, replacing one the requester sent: a responder that trusts it must not be
 * spoofed by a client of another account. natsd does the same with the same fields, in the same
 * order and with Go's encoding:
 *   - always: "acc" (the requester's account) and "rtt" (its last measured round trip in
 *     nanoseconds; absent while none is known);
 *   - the import has `share: true`: also "start", "host", "id", "user", "name", "lang", "ver",
 *     "server", "jwt", "issuer_key" (an nkey user's account), "kind" and "client_type"
 *     (getClientInfo(true));
 *   - the exporter is the system account: "server" even without share (addServerAndClusterInfo);
 *   - a chained import (the request arrived in this account through another service import):
 *     the header the previous hop set is kept, with "svc" (the account it passes through) added,
 *     and "server" when this import shares or leads to the system account but the previous did
 *     not. Since natsd wrote that header itself, it is rebuilt from the same connection instead of
 *     being parsed back.
 * Every existing `Nats-Request-Info` line is removed, compared without regard to case (nats-server
 * removes only the first exact-case one, so a forged `nats-request-info:` line survives there and
 * clients that canonicalize header names read it first), and the new line goes last, after the
 * other headers in their order. A request without headers gets a `NATS/1.0` header block.
 * Not set: "cluster" and "alts" (no clusters), "name_tag" and "tags" (user JWT claims not kept).
 * Reference: nats-server 2.9.10 server/client.go (processServiceImport, setHeader,
 * removeHeaderIfPresent, getClientInfo, addServerAndClusterInfo), server/events.go (ClientInfo).
 */
#ifndef ND_ACCT_REQINFO_H
#define ND_ACCT_REQINFO_H

#include <stdbool.h>
#include <stddef.h>

#define ND_ACCT_REQINFO_HDR "Nats-Request-Info"

struct nd_conn;

/* Which fields one hop sets (see the top comment). */
typedef struct nd_acct_reqinfo {
    bool detailed;   /* the first import shares: the client's details */
    bool server;     /* the server's name */
    const char *svc; /* chained: the account the request passes through; NULL on the first hop */
} nd_acct_reqinfo_t;

/* Rewrites a request's payload (hdr_len header bytes, 0 for none, then the body; no CRLF after
 * it) for the exporter: its headers without any Nats-Request-Info line, then that header with
 * c's info as ri says. Borrows: c (the requester, on its turn), payload.
 * Returns: the new payload, nd_xmalloc'ed and owned by the caller; its length in *out_len and
 * its header length in *out_hdr_len. Ctx: c's turn. */
char *nd_acct_reqinfo_apply(const struct nd_conn *c, const char *acct_name,
                            const nd_acct_reqinfo_t *ri, const char *payload, size_t len,
                            size_t hdr_len, size_t *out_len, size_t *out_hdr_len);

#endif
