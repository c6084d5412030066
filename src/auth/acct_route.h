/* Cross-account routing of published messages (inventory §5.4): an account's subject mappings
 * and the stream imports other accounts take from it, built from the configuration with each
 * authorization snapshot (auth.h) and read by publishers (deliver.c).
 *
 * Model: one nd_acct_route_t per account that has mappings or importers, owned by the snapshot
 * that built it and immutable from then on. nd_auth_slot_set installs the routes of the snapshot
 * it installs into nd_acct_t.route (release stores; NULL for accounts without a route and for
 * accounts the new snapshot dropped), then waits for an epoch barrier before the old snapshot can
 * be freed, so a publisher that loaded an old route inside its epoch section never sees it freed.
 * The importer accounts a route names are borrowed from the same snapshot, which holds a
 * reference on each; the route cannot outlive the snapshot, so it needs none of its own.
 *
 * Publish path (deliver.c): one acquire load and NULL test per PUB for an account with neither
 * mappings nor importers. With mappings, the subject is mapped once (nd_xf_table_map, a
 * per-thread random number for weighted destinations) before anything is matched. With stream
 * importers, each import whose subject matches the (mapped) subject is matched again in the
 * importer's sublist under the import's subject (to / prefix remapping) and delivered there.
 * Only the exporter's route lists importers for delivery; the importer's lists its stream imports
 * (srcs) for the interest it must announce in the exporter's account to the cluster's routes.
 * Service imports: the importer's route lists them; a publish in the importer that matches one is
 * also matched in the exporter under the exported subject, its reply replaced by an `_R_` subject
 * (acct_resp.h) whose publish in the exporter is delivered back in the importer under the
 * original reply, and its Nats-Request-Info header set by the server (acct_reqinfo.h). The
 * exporter's route holds the table of those response routes. A request arriving in the exporter
 * goes on through the exporter's own matching service import (a chain A <- B <- C), each import
 * at most once per request, and a response on an `_R_` subject that leads to another account's
 * `_R_` subject goes on back the same way.
 *
 * Differences from nats-server: an import that no export authorizes, names an unknown account or
 * has an invalid remapping is skipped with a warning (the config parser already refuses the
 * unauthorized ones and import cycles, as nats-server does);
 * imported stream messages are not passed on to a third account (no chained stream imports), and
 * the importer's own mappings do not apply to them; service latency tracking and account token
 * positions are not implemented; a response's own reply subject is passed on as is.
 * References: nats-server server/accounts.go (AddMappedStreamImport, checkStreamImportAuthorized,
 * selectMappedSubject), server/client.go (processInboundClientMsg, processMsgResults).
 */
#ifndef ND_ACCT_ROUTE_H
#define ND_ACCT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "subj/account.h"
#include "actors/ctx.h"
#include "cfg/opts.h"
#include "subj/transform.h"

struct nd_auth;

/* One stream import taken from the route's account. */
typedef struct nd_acct_stream_imp {
    nd_acct_t *acct; /* the importer; borrowed from the snapshot */
    char *from;      /* the imported subject (within one of our stream exports) */
    size_t from_len;
    char *to; /* from is literal: the subject in the importer; NULL = the same subject */
    size_t to_len;
    nd_xf_t *xf; /* from has wildcards and is remapped: the transform, else NULL */
} nd_acct_stream_imp_t;

/* One stream import the route's account (the importer) takes, seen from its side: what its
 * subscriptions stand for in the exporter, for the interest routes must hear (net/route_imp.c). */
typedef struct nd_acct_stream_src {
    nd_acct_t *acct; /* the exporter; borrowed from the snapshot */
    char *from;      /* the imported subject, in the exporter */
    size_t from_len;
    char *to; /* the subjects it has in the importer (wildcards where a remapping has them) */
    size_t to_len;
    size_t strip; /* a prefix import: the bytes of the prefix (with its dot), else 0 */
    bool same;    /* not remapped: to is from */
} nd_acct_stream_src_t;

/* One service import of the route's account (the importer). */
typedef struct nd_acct_svc_imp {
    char *from; /* the subject in the importer (the import's `to`, else its subject) */
    size_t from_len;
    char *to; /* from is literal: the subject in the exporter; NULL = the same subject */
    size_t to_len;
    nd_xf_t *xf;               /* from has wildcards and is remapped: the transform, else NULL */
    nd_acct_t *acct;           /* the exporter; borrowed from the snapshot */
    struct nd_acct_resp *resp; /* the exporter's response routes (its route owns them) */
    bool singleton;            /* response_type singleton (stream and chunked keep the route) */
    bool share;                /* the import's `share`: the requester's details (acct_reqinfo.h) */
    bool sys;                  /* the exporter is the system account */
    int64_t ttl_ns;            /* response threshold */
} nd_acct_svc_imp_t;

typedef struct nd_acct_route {
    nd_xf_table_t *map; /* the account's mappings, or NULL */
    nd_acct_stream_imp_t *streams;
    size_t nstreams;
    nd_acct_svc_imp_t *svcs; /* service imports this account takes from others */
    size_t nsvcs;
    /* The first bytes a subject may start with to match one of svcs (bit c of svc_first[c/64]),
     * every bit when an import starts with a wildcard: one test keeps a publish that cannot
     * match any (e.g. every subject outside `$SYS.` against the system imports) off the loop. */
    uint64_t svc_first[4];
    struct nd_acct_resp *resp; /* others import services from this account: their `_R_` routes */
    nd_acct_stream_src_t *srcs; /* stream imports this account takes from others */
    size_t nsrcs;
} nd_acct_route_t;

/* Builds the routes of every account of a (a->accts[i].route) from o's accounts block. Ctx: the
 * builder of a, before a is shared. */
void nd_acct_route_build(struct nd_auth *a, const nd_opts_t *o);
void nd_acct_route_free(nd_acct_route_t *r);

/* Publishes cur's routes (see the top comment); old is the snapshot being replaced (may be NULL)
 * and cur may be NULL (shutdown): then every route of old is withdrawn. The caller waits for an
 * epoch barrier before old's routes are freed. Ctx: any thread. */
void nd_acct_route_install(const struct nd_auth *old, const struct nd_auth *cur);

#endif
