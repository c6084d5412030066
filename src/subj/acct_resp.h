/* Service-import response routes (inventory §5.4): the `_R_` reply subjects an exporting account
 * hands to its responders, each mapped back to the importer's account and original reply.
 *
 * When an account B sends a request through a service import from account A, the request reaches
 * A's responders with its reply subject replaced by a fresh `_R_.<prefix>.<random>` subject (the
 * prefix is the table's: one per exporting account and process, as nats-server's siReply); a
 * publish in A on that subject is the response, delivered in B under the original reply. A
 * singleton response removes the route; stream and chunked responses keep it. Every route expires
 * after the export's response threshold (default 2 minutes), as nats-server's response threshold
 * timer does; here expiry is checked when a route is looked up, and expired routes are swept on
 * insertion, so no timer is needed and memory stays bounded by the requests of one threshold.
 *
 * Concurrency: any publisher of either account, on any worker, inserts or looks up, so the table
 * is a chained hash behind a mutex. Only requests with a reply through a service import and
 * publishes in the exporter on `_R_.` subjects touch it. The importer account a route names is
 * borrowed from the authorization snapshot that owns the table (acct_route.h); a reload starts a
 * new, empty table, so responses to requests made before the reload are lost.
 * Routes: the responder may be on another server of the cluster. The importer's server tells its
 * routes it has interest in `_R_.<prefix>.>` in the exporter's account (net/route_imp.c), so the
 * response comes back to it, as nats-server's wildcard response subscription does.
 * Reference: nats-server server/accounts.go (addRespServiceImport, newServiceReply,
 * checkForReverseEntries, respThresh).
 */
#ifndef ND_ACCT_RESP_H
#define ND_ACCT_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "subj/account.h"
#include "actors/ctx.h"

#define ND_ACCT_RESP_PREFIX     "_R_."
#define ND_ACCT_RESP_PREFIX_LEN 4
#define ND_ACCT_RESP_SUBJ_LEN   (ND_ACCT_RESP_PREFIX_LEN + 10 + 1 + 10) /* _R_.<10>.<10> */
#define ND_ACCT_RESP_WC_LEN     (ND_ACCT_RESP_PREFIX_LEN + 10 + 2) /* _R_.<10>.> */
#define ND_ACCT_RESP_DEFAULT_NS (120LL * 1000000000LL)

typedef struct nd_acct_resp nd_acct_resp_t;

/* A table for the exporting account named acct_name (its prefix derives from the name and a
 * number drawn once per process). */
nd_acct_resp_t *nd_acct_resp_new(const char *acct_name);
void nd_acct_resp_free(nd_acct_resp_t *t);

/* Adds a route: writes its new reply subject (ND_ACCT_RESP_SUBJ_LEN bytes, not NUL-terminated)
 * to subj. importer: where the response goes; reply: the original reply subject; singleton: the
 * first response removes the route; ttl_ns: the response threshold. Ctx: any worker. */
void nd_acct_resp_add(nd_ctx_t *ctx, nd_acct_resp_t *t, char *subj, nd_acct_t *importer,
                      const char *reply, size_t reply_len, bool singleton, int64_t ttl_ns);

/* Looks up the route of the response subject subj; when there is a live one, hands out a copy
 * of its original reply (*reply, nd_xmalloc'ed, owned by the caller; its length in *reply_len)
 * and removes a singleton route. Returns: the importer account, or NULL. Ctx: any worker. */
nd_acct_t *nd_acct_resp_take(nd_acct_resp_t *t, const char *subj, size_t len, char **reply,
                             size_t *reply_len);

/* Writes "_R_.<prefix>.>" (ND_ACCT_RESP_WC_LEN bytes, not NUL-terminated) to out: the subject
 * every response of the table matches. Returns: its length. Ctx: any thread. */
size_t nd_acct_resp_wildcard(const nd_acct_resp_t *t, char *out);

/* Returns: the number of routes (live or not yet swept). For tests. */
size_t nd_acct_resp_count(nd_acct_resp_t *t);

#endif
