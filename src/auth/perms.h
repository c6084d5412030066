/* Publish and subscribe permissions of a user: allow/deny lists with wildcards, queue-group
 * entries, reply ("allow_responses") permissions, and the per-connection caches that keep the
 * publish hot path at one hash lookup.
 *
 * Semantics, exactly nats-server's (server/client.go setPermissions, pubAllowedFullCheck,
 * canSubscribeInternal, queueMatches, checkDenySub, responseAllowed, pruneReplyPerms;
 * server/opts.go parseUserPermissions; checked against the reference binary 2.9.10):
 *  - Matching is the sublist's: a permission pattern (with `*`/`>`) is matched against the
 *    subject token by token, and the subject's own tokens are taken literally, even `*` and `>`
 *    (nd_subj_match). So allow "foo.*" permits SUB "foo.*" and also SUB "foo.>" (the `>` token is
 *    one token to the pattern's `*`), and deny "foo.bar" does not refuse SUB "foo.*": deliveries
 *    of foo.bar to that wildcard subscription are then filtered at delivery time
 *    (nd_perms_deliver_denied) instead. That filter is switched on, for the whole connection,
 *    by a wildcard SUB that collides with a plain deny entry, and then drops every delivery to
 *    the connection that a plain deny entry matches. A queue-qualified deny entry ("foo q1")
 *    refuses SUBs in that queue and never drops a delivery, to any subscription: nats-server
 *    2.9.10 loads its filter with the entries as configured, "foo q1" as a subject with a
 *    space, which no message matches.
 *  - Publish: with an allow list, the subject must match one entry; then no deny entry may
 *    match. Deny wins. No allow list = everything allowed. An allow list that is present but
 *    empty (what allow_responses without a publish allow produces) allows nothing.
 *  - Subscribe: entries may be "subject queue". With allow entries, a plain subscription needs a
 *    plain entry that matches; a queue subscription is decided by the queue entries that match
 *    its subject when there are any (the queue name must equal one of theirs, or be a subset of a
 *    wildcard queue pattern), else by the plain ones. Deny: any plain entry that matches refuses;
 *    a matching queue entry refuses only subscriptions in a matching queue. An empty subscribe
 *    allow list is the same as none, but a list whose entries were all invalid (skipped) allows
 *    nothing (setPermissions sizes its sublists by the configured list, not the valid entries).
 *  - allow_responses {max, expires}: after a message with reply subject R is delivered to the
 *    connection (and R is not publishable anyway), the connection may publish to R up to max
 *    times (max <= 0: no count limit) until expires has passed (<= 0: no time limit). Defaults
 *    when 0: max 1, expires 2 minutes (validateResponsePermissions).
 *  - Caches, per connection: publish decisions, bounded at ND_PERMS_PUB_CACHE (128, as
 *    maxPermCacheSize) entries; delivery-time deny decisions, ND_PERMS_DENY_CACHE (256, as
 *    maxDenyPermCacheSize). A decision that depends on reply permissions is never cached.
 *    Reply entries are pruned after every ND_PERMS_REPLY_PRUNE_EVERY (4096) additions or once a
 *    second, as nats-server does.
 *
 * Data layout: each list is a token trie, as nats-server keeps permissions in sublists: one node
 * per pattern prefix, literal children sorted for binary search, a `*` child and a `>` child, and
 * at each node whether a plain entry ends there and which queue entries do. A match visits each
 * node at most once, so its cost is bounded by the subject's length and the trie's size, not by
 * the number of entries. Measured with bench/bench_perms.c (one core of the build machine, a
 * probe that matches no entry, lists of N "svc.<i>.*" or "svc.<i>.x"): a plain scan of the
 * entries cost ~18 ns per wildcard entry (290 ns at N=16, 18 us at N=1024), so it was replaced by
 * this trie: 27-34 ns for N=1..256, ~50 ns at N=1024. The account sublist (epoch-protected,
 * built for concurrent writers) takes ~17 ns but would tie permissions to epochs and
 * subscription objects. The connection cache answers a repeated subject in ~8 ns.
 *
 * Who may call what: an nd_permset_t is built once (nd_perms_new, nd_perms_add..., nd_perms_seal),
 * then immutable and shared by any number of connections on any thread (reference counted). An
 * nd_perms_conn_t is owned by one connection actor and used only on its turn.
 */
#ifndef ND_PERMS_H
#define ND_PERMS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ND_PERMS_PUB_CACHE           128
#define ND_PERMS_DENY_CACHE          256
#define ND_PERMS_REPLY_PRUNE_EVERY   4096
#define ND_PERMS_REPLY_PRUNE_NS      1000000000LL
#define ND_PERMS_RESP_DEFAULT_MAX    1
#define ND_PERMS_RESP_DEFAULT_TTL_NS (120LL * 1000000000LL)

typedef enum {
    ND_PERMS_PUB_ALLOW,
    ND_PERMS_PUB_DENY,
    ND_PERMS_SUB_ALLOW,
    ND_PERMS_SUB_DENY,
} nd_perms_kind_t;

typedef enum {
    ND_PERMS_ADD_OK,
    ND_PERMS_ADD_INVALID,       /* skipped: not a valid subject (or subject + queue) */
    ND_PERMS_ADD_QUEUE_IGNORED, /* publish deny "subj queue": kept as "subj" (nats-server logs it)
                                 */
} nd_perms_add_t;

typedef struct nd_perm_entry {
    char *subject;
    char *queue; /* NULL for a plain entry */
    uint32_t slen, qlen;
    bool subj_wild, queue_wild;
} nd_perm_entry_t;

typedef struct nd_perm_node nd_perm_node_t; /* private to perms.c */

/* One allow or deny list: the entries, and a token trie over them (built by nd_perms_seal). */
typedef struct nd_perm_list {
    nd_perm_entry_t *v; /* all entries, in insertion order */
    uint32_t n, cap;
    nd_perm_node_t *root;
    bool has_queue;
} nd_perm_list_t;

typedef struct nd_permset {
    _Atomic uint32_t refs;
    bool sealed;
    bool pub_allow_set; /* a publish allow list exists, possibly empty */
    bool sub_allow_set; /* a subscribe allow entry was given, even one that was skipped */
    bool has_resp;
    int64_t resp_max;
    int64_t resp_ttl_ns;
    nd_perm_list_t pub_allow, pub_deny, sub_allow, sub_deny;
} nd_permset_t;

/* Building (one thread, before sharing). */
nd_permset_t *nd_perms_new(void);
/* Adds one entry; publish entries are subjects, subscribe entries "subject" or "subject queue"
 * (blanks around and between are ignored, as strings.Fields). An allow entry also marks its list
 * present. Returns: whether and how it was added; the caller reports skipped entries. */
__attribute__((warn_unused_result)) nd_perms_add_t nd_perms_add(nd_permset_t *p, nd_perms_kind_t kind,
                                                                const char *entry, size_t len);
/* Marks the publish allow list present even when it stays empty (allows nothing). */
void nd_perms_set_pub_allow_present(nd_permset_t *p);
/* Enables reply permissions; 0 picks the defaults; makes the publish allow list present. */
void nd_perms_set_responses(nd_permset_t *p, int64_t max, int64_t ttl_ns);
/* Builds the indexes; after this the struct is immutable. */
void nd_perms_seal(nd_permset_t *p);

struct nd_jwt_perms;
/* Builds sealed permissions from a JWT's (a user's, a scoped signing key's template, or an
 * account's default_permissions), as nats-server's buildPermissionsFromJwt: a publish or subscribe
 * side is set only when it has allow or deny entries; "resp" enables reply permissions with the
 * defaults for zero values, which also makes the publish allow list present. Invalid entries
 * (the jwt library's rules: no empty subject, a queue only in subscribe entries, single spaces;
 * then a valid subject) are skipped and counted in *skipped (may be NULL): a user JWT with any
 * is refused (auth_jwt.c), since skipping a deny entry would widen access.
 * Returns: a new reference, or NULL when the JWT grants no restrictions at all. */
nd_permset_t *nd_perms_from_jwt(const struct nd_jwt_perms *jp, size_t *skipped);

/* Reference counting; the last unref frees. Ctx: any thread. */
nd_permset_t *nd_perms_ref(nd_permset_t *p);
void nd_perms_unref(nd_permset_t *p);

/* Uncached decisions (sealed perms; any thread). Subjects are (pointer, length). */
bool nd_perms_pub_allowed(const nd_permset_t *p, const char *subj, size_t len);
bool nd_perms_sub_allowed(const nd_permset_t *p, const char *subj, size_t slen, const char *queue,
                          size_t qlen);
/* Returns: true when a new (allowed) subscription needs the connection's delivery-time deny
 * checks: its subject has a wildcard and collides with a plain subscribe deny entry
 * (loadMsgDenyFilter; nats-server 2.9.10 asks for a subset, which let SUB "*.x" receive foo.x
 * despite deny "foo.>": later nats-server releases check for a collision, as here). */
bool nd_perms_sub_needs_deny_filter(const nd_permset_t *p, const char *subj, size_t slen);
/* Returns: true when delivering a message on subject (a literal) to a connection whose deny
 * checks are on must be suppressed (checkDenySub): a plain subscribe deny entry matches it. The
 * check is the same for every subscription of the connection, plain or in any queue; entries with
 * a queue never filter deliveries (they only refuse SUBs in that queue). */
bool nd_perms_deliver_denied(const nd_permset_t *p, const char *subj, size_t slen);

/* ---- per connection ---- */

typedef struct nd_perms_cache_entry {
    char *key; /* the subject, owned */
    uint32_t hash, len;
    bool value;
} nd_perms_cache_entry_t;

typedef struct nd_perms_reply {
    struct nd_perms_reply *next;
    int64_t t; /* when it was recorded (ns, the caller's clock) */
    int64_t n; /* publishes so far */
    uint32_t hash, len;
    char subj[];
} nd_perms_reply_t;

typedef struct nd_perms_conn {
    /* owner actor only */
    nd_permset_t *perms; /* a reference */
    /* 4-way set associative, allocated on first use: a connection without permissions, or
     * whose subscriptions never need the delivery filter, pays nothing for them. */
    nd_perms_cache_entry_t *pub;  /* ND_PERMS_PUB_CACHE entries, or NULL */
    nd_perms_cache_entry_t *deny; /* ND_PERMS_DENY_CACHE entries, or NULL */
    uint32_t pub_clock, deny_clock;
    bool deny_filter;           /* some subscription needs delivery-time deny checks */
    nd_perms_reply_t **replies; /* chained hash table */
    uint32_t replies_mask, nreplies, since_prune;
    int64_t last_prune;
    uint64_t pub_hits, pub_misses;
} nd_perms_conn_t;

/* Takes a reference on perms (may be NULL: everything allowed). */
void nd_perms_conn_init(nd_perms_conn_t *c, nd_permset_t *perms);
void nd_perms_conn_fini(nd_perms_conn_t *c);

/* The publish check of a PUB/HPUB: cache, then lists, then reply permissions (consuming one use
 * of a tracked reply). now_ns is any monotonic clock, the same for all calls on c. */
bool nd_perms_conn_pub(nd_perms_conn_t *c, const char *subj, size_t len, int64_t now_ns);

/* A message with a reply subject is being delivered to this connection: remember the reply as
 * publishable when reply permissions are on and it is not publishable anyway (deliverMsg). */
void nd_perms_conn_track_reply(nd_perms_conn_t *c, const char *reply, size_t len, int64_t now_ns);

/* The subscribe check of a SUB; also switches on delivery-time deny checks when needed. */
bool nd_perms_conn_sub(nd_perms_conn_t *c, const char *subj, size_t slen, const char *queue,
                       size_t qlen);

/* Delivery-time deny check, cached; false at once unless some subscription needed it. */
bool nd_perms_conn_deliver_denied(nd_perms_conn_t *c, const char *subj, size_t slen);

/* Drops reply entries used up or expired (pruneReplyPerms). Called by the two above as needed. */
void nd_perms_conn_prune_replies(nd_perms_conn_t *c, int64_t now_ns);

static inline uint32_t
nd_perms_conn_replies(const nd_perms_conn_t *c)
{
    return c->nreplies;
}

/* The -ERR texts (without the quotes and "-ERR "), written into buf (NUL-terminated, truncated
 * to cap). Returns: the length the full text has. */
size_t nd_perms_err_pub(char *buf, size_t cap, const char *subj, size_t len);
size_t nd_perms_err_sub(char *buf, size_t cap, const char *subj, size_t slen, const char *queue,
                        size_t qlen);
size_t nd_perms_err_reply(char *buf, size_t cap, const char *reply, size_t len);

#endif
