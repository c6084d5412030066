/* Static authentication and the account binding of client connections (inventory §5.1, §5.2,
 * §5.4): a snapshot of the authorization options in force, built at start and on every reload,
 * and the check a connection runs on CONNECT.
 *
 * Snapshot: nd_auth_t is immutable once built and reference counted. The server holds the one in
 * force in an nd_auth_slot_t (a mutex around a pointer: CONNECT is not a hot path, and a mutex
 * lets the last unref run with the caller's ctx, which dropping account references needs). A
 * connection takes a reference for the length of its CONNECT check only; afterwards it keeps
 * what it needs on its own (a reference on its permission set and on its account).
 *
 * Accounts: one account actor per configured account (accounts { A { users: [...] } }), created
 * when the first snapshot is built; a reload reuses the actors of accounts that keep their name
 * and creates the new ones. Everybody else is in $G (the server's global account). Nothing crosses
 * accounts: each has its own sublist.
 * Mappings and stream and service exports/imports are routed by acct_route.h (installed with
 * the snapshot). The system account (`system_account`, else the default `$SYS`: see
 * nd_opts_system_account) is an account like the others; its events and requests are
 * mon/sysevents.h's.
 *
 * Check order (nats-server server/auth.go processClientOrLeafAuthentication): with users or nkey
 * users configured, a CONNECT without any credential (nd_auth_creds_empty) logs in as
 * no_auth_user when set; an "nkey" (when nkey users exist) selects an nkey user (its "sig" must
 * sign our nonce), else "user" selects a user whose password must match; with a token
 * configured, auth_token must match; with a single user, user and pass. The config parser
 * refuses mixes of these forms, so at most one applies.
 *
 * bcrypt: a bcrypt password or token costs milliseconds of CPU (cost 10-11: ~50-100 ms) and is
 * checked inline on the connection's worker, as nats-server checks it inline on the client's
 * goroutine. Only a CONNECT pays it, once per connection; a burst of bcrypt logins occupies
 * workers for that long. Moving it to a helper thread would change nothing for throughput on a
 * machine whose cores are all workers, so we keep the simple form.
 *
 * Ctx: nd_auth_check is pure (any thread); the rest as noted.
 */
#ifndef ND_AUTH_H
#define ND_AUTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "subj/account.h"
#include "actors/ctx.h"
#include "cfg/opts.h"
#include "auth/perms.h"

#define ND_AUTH_DEFAULT_TIMEOUT_MS 2000 /* AUTH_TIMEOUT in nats-server's const.go */

typedef struct nd_auth_user {
    char *name, *pass;   /* a user/password user (pass may be a bcrypt hash) */
    char *nkey;          /* or an nkey user */
    nd_permset_t *perms; /* a reference, or NULL: everything allowed */
    nd_acct_t *acct;     /* borrowed from the snapshot's account table */
    uint32_t conn_types; /* allowed_connection_types (ND_CONN_TYPE_*); 0 = any */
} nd_auth_user_t;

struct nd_jwt;

typedef struct nd_auth_acct {
    char *name;
    nd_acct_t *acct;     /* a reference */
    struct nd_jwt *jwt;  /* operator mode: the account's verified JWT (owned), else NULL */
    int64_t max_conns;   /* the JWT's limits.conn; -1 = unlimited (and for config accounts) */
    int64_t max_subs;    /* the JWT's limits.subs; -1 = unlimited */
    int64_t max_payload; /* the JWT's limits.payload; -1 = unlimited */
    struct nd_acct_route *route; /* owned: mappings and stream importers (acct_route.h), or NULL */
    bool declared;               /* an entry of accounts {} (not only named by a user) */
    nd_acct_js_t js;             /* its jetstream {} (config accounts; JWT ones: see jwt) */
} nd_auth_acct_t;

typedef struct nd_auth {
    _Atomic uint32_t refs;
    bool required;           /* some credential is configured: CONNECT must come first and pass */
    bool nonce;              /* nkey users exist: INFO carries a nonce */
    bool info_auth_required; /* required and no no_auth_user (INFO's auth_required) */
    int64_t timeout_ms;
    bool timeout_default;      /* not configured: with TLS it becomes the TLS timeout + 1 s */
    char *user, *pass, *token; /* single user, or token */
    nd_auth_user_t *users;
    size_t nusers;
    const nd_auth_user_t *no_auth; /* into users, or NULL */
    /* websocket { authorization {...}, no_auth_user }: when a user, token or no_auth_user is
     * set there, these replace the single user, token and no_auth_user above for WebSocket
     * clients, and such clients must authenticate (nats-server's websocket authOverride). */
    struct {
        bool override;
        char *user, *pass, *token;
        const nd_auth_user_t *no_auth; /* into users, or NULL */
        int64_t timeout_ms;            /* its authorization timeout; 0: the server's */
    } ws;
    nd_auth_acct_t *accts;         /* [0] is $G */
    size_t naccts;
    /* Operator mode (auth_jwt.c): the verified operator JWTs; users log in with user JWTs only. */
    bool op_mode;
    struct nd_jwt **ops;
    size_t nops;
    /* Everything the snapshot was built from, serialised: a reload compares it to skip the
     * re-check of every client when the authorization did not change. */
    char *fingerprint;
    size_t fp_len;
} nd_auth_t;

/* The credentials of a CONNECT (NULL = absent) and the nonce the connection sent. */
typedef struct nd_auth_creds {
    const char *user, *pass, *token, *nkey, *sig, *jwt;
    const char *nonce; /* NULL when none was sent */
    const char *ip;    /* the client's address (operator mode: a user JWT's src CIDRs) */
    /* TLS verify_and_map: the client certificate's candidate user names (tls.h); the user is
     * the first configured one named there, without a password (nats-server's
     * checkClientTLSCertSubject). */
    bool tls_map;
    const nd_strlist_t *tls_names;
    uint32_t conn_type;       /* ND_CONN_TYPE_* of the connection (WEBSOCKET: the websocket
                               * override applies); 0: STANDARD */
    const char *no_auth_user; /* the listener's own no_auth_user (mqtt {}), or NULL */
} nd_auth_creds_t;

/* What a successful check grants; pointers are borrowed from the snapshot. */
typedef struct nd_auth_grant {
    const char *user; /* for /connz authorized_user; NULL for a token or no credentials */
    nd_permset_t *perms;
    nd_acct_t *acct;
    /* Operator mode only (all zero/-1 otherwise): the user JWT's permissions are built per
     * CONNECT, so the grant owns that reference (hand it to nd_auth_slot_keep); the user's
     * public key (user points here); the user JWT's expiry (Unix seconds, 0 = never); the
     * account's connection, subscription and payload limits (-1 = unlimited; the user's own
     * subs and payload limits when lower). */
    bool owns_perms;
    char jwt_user[64];
    char jwt_id[128]; /* the user JWT's id, and the account JWT's for a scoped user */
    int64_t exp;
    int64_t max_conns, max_subs, max_payload;
    int64_t window_ns; /* ns until the user's connect-time window closes (0 = no window) */
    bool revoked;      /* on failure: the account revokes the user JWT */
    bool acct_expiry;  /* exp is the account JWT's (it expires before the user's) */
} nd_auth_grant_t;

/* Builds a snapshot of o's authorization. gacct: the global account (referenced). prev: the
 * snapshot in force (may be NULL): its account actors are reused by name.
 * Ctx: any thread with a ctx (it spawns account actors). Returns: never NULL. */
nd_auth_t *nd_auth_new(nd_ctx_t *ctx, const nd_opts_t *o, nd_acct_t *gacct, const nd_auth_t *prev);
nd_auth_t *nd_auth_ref(nd_auth_t *a);
/* Returns: whether a and b were built from the same authorization options. */
bool nd_auth_same(const nd_auth_t *a, const nd_auth_t *b);
void nd_auth_unref(nd_ctx_t *ctx, nd_auth_t *a);

/* Returns: true when cr authenticates against a; fills *g. */
bool nd_auth_check(const nd_auth_t *a, const nd_auth_creds_t *cr, nd_auth_grant_t *g);
/* Returns: whether cr carries no credential that a's users check, so that no_auth_user applies:
 * no user, password or token (empty strings count as absent), and no nkey when a has nkey users;
 * a JWT outside operator mode does not count (nats-server 2.9.10). */
bool nd_auth_creds_empty(const nd_auth_t *a, const nd_auth_creds_t *cr);

/* Operator mode (auth_jwt.c). nd_auth_jwt_load fills a's operators and the accounts of
 * resolver_preload (MEMORY resolver), each verified against the operators; nd_auth_jwt_check
 * is nd_auth_check's operator-mode path. nd_auth_add_acct adds (or reuses from prev) an account
 * actor by name; returns its entry or NULL. */
void nd_auth_jwt_load(nd_ctx_t *ctx, nd_auth_t *a, const nd_opts_t *o, const nd_auth_t *prev);
bool nd_auth_jwt_check(const nd_auth_t *a, const nd_auth_creds_t *cr, nd_auth_grant_t *g);
void nd_auth_jwt_free(nd_auth_t *a);
/* Builds the sealed permission set of configured permissions (a user's, or the cluster's
 * import/export). Returns: a new reference, or NULL when they restrict nothing. */
nd_permset_t *nd_perms_build(const nd_perms_t *cp);
/* Returns: the account named exactly name[0..len) (borrowed: valid while a is held), or NULL. */
nd_acct_t *nd_auth_find(const nd_auth_t *a, const char *name, size_t len);
nd_auth_acct_t *nd_auth_add_acct(nd_ctx_t *ctx, nd_auth_t *a, const char *name,
                                 const nd_auth_t *prev);

/* The server's current snapshot. */
/* The slot also keeps a reference on every permission set any installed snapshot had, until the
 * server is freed: publishers read a recipient connection's permission set (nd_conn_t.rperms)
 * while they may still find one of its subscriptions, which can be after the connection's
 * final(); keeping the sets costs a few hundred bytes per user and reload. */
/* Called once a snapshot is installed (not at registration), outside the slot's mutex, with the snapshot borrowed for the call: how a higher room (JetStream) hears of
 * accounts that appear (a reload, operator-mode account JWTs) without auth including it. */
typedef void (*nd_auth_install_fn)(nd_ctx_t *ctx, const nd_auth_t *a, void *arg);

typedef struct nd_auth_slot {
    pthread_mutex_t mu;
    nd_auth_t *cur;
    nd_auth_install_fn on_install; /* under mu; NULL: none */
    void *on_install_arg;
    pthread_mutex_t hook_mu; /* serialises calls of on_install (and its removal) */
    nd_permset_t **kept;
    size_t nkept;
    /* Permission sets of user JWTs, keyed by the JWT's id (jti) so a user who reconnects shares
     * one set: the same lifetime rule as kept. */
    struct nd_auth_kept_jwt {
        char id[128];
        nd_permset_t *perms;
    } *jkept;
    size_t njkept;
} nd_auth_slot_t;

nd_auth_slot_t *nd_auth_slot_new(void);
/* Returns: a new reference on the snapshot in force, or NULL after nd_auth_slot_clear. */
nd_auth_t *nd_auth_slot_get(nd_auth_slot_t *s);
/* Installs a (takes the caller's reference) and drops the previous one. */
void nd_auth_slot_set(nd_ctx_t *ctx, nd_auth_slot_t *s, nd_auth_t *a);
/* Keeps perms (takes the caller's reference) for the user JWT id: returns the set to use, which
 * is an earlier one with the same id when there is one (perms is then dropped). Borrowed: valid
 * until nd_auth_slot_free. */
nd_permset_t *nd_auth_slot_keep(nd_auth_slot_t *s, const char *id, nd_permset_t *perms);
/* Registers the one install hook (fn NULL: removes it; returns once no call is running).
 * Ctx: a non-worker thread. */
void nd_auth_slot_on_install(nd_auth_slot_t *s, nd_auth_install_fn fn, void *arg);
/* Drops the snapshot (server shutdown: the account references must go before the pool waits). */
void nd_auth_slot_clear(nd_ctx_t *ctx, nd_auth_slot_t *s);
void nd_auth_slot_free(nd_auth_slot_t *s);

/* Tells every live client connection to re-check its credentials against the snapshot now in
 * force (reload; conn_auth.c). Ctx: any thread with a ctx. */
struct nd_server;
void nd_conn_auth_reload_all(nd_ctx_t *ctx, struct nd_server *s);

#endif
