/* JetStream's private structures (src/js only). See js.h for the picture.
 *
 *   nd_js_t      the server's JetStream: options in force, store directory, usage totals, the
 *                accounts that have it.
 *   nd_jsa_t     one account's JetStream: its limits, its streams (by name) and its API service,
 *                an internal client subscribed to $JS.API.> (jsapi.c). The API service is the
 *                only writer of the stream table (create, update, delete run on its turn);
 *                monitoring reads the table under jsa->mu.
 *   nd_stream_t  one stream: an internal client subscribed to the stream's subjects (and its
 *                direct-get subjects) that owns the store (stream.c). Messages from the publish
 *                path arrive with tag 0; API requests the API service forwards arrive with a
 *                JS_OP_* tag; configuration changes arrive as calls. Its counters for listings
 *                and monitoring are copied under st->mu at the end of each turn.
 *
 * Lifetime: an nd_stream_t is reference counted (the table holds one, the stream actor one);
 * the store belongs to the actor and is closed on its last turn. Nobody holds a reference on
 * the stream's actor (the pool's shutdown waits for every actor to go): st->ic is read and
 * sent to under jsa->mu, and the actor's last turn clears it under jsa->mu, so a send never
 * meets freed memory.
 */
#ifndef ND_JS_INT_H
#define ND_JS_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "js/js.h"
#include "js/jserr.h"
#include "js/store/store.h"
#include "js/store/store_locked.h"
#include "subj/transform.h"
#include "js/stream_cfg.h"
#include "net/iclient.h"
#include "net/server.h"

struct nd_jwt;
typedef struct nd_jsa nd_jsa_t;
typedef struct nd_stream nd_stream_t;
typedef struct js_audit_req js_audit_req_t;
typedef struct nd_consumer nd_consumer_t;
typedef struct js_srcs js_srcs_t;

/* API requests a stream handles on its own turn (nd_imsg_t.tag). */
enum {
    JS_OP_PUBLISH = 0, /* from the publish path */
    JS_OP_INFO,
    JS_OP_CREATE_INFO, /* an idempotent create: info as a create response */
    JS_OP_PURGE,
    JS_OP_MSG_GET,
    JS_OP_MSG_DELETE,
    JS_OP_SNAPSHOT, /* stream_snap.c */
    /* consumer requests: on the stream's turn (create, delete, names, list) */
    JS_OP_CONSUMER_CREATE,
    JS_OP_CONSUMER_DELETE,
    JS_OP_CONSUMER_NAMES,
    JS_OP_CONSUMER_LIST,
    /* ... and on the consumer's turn */
    JS_OP_CONSUMER_INFO,
    JS_OP_CONSUMER_PAUSE,
    JS_OP_CONSUMER_UNPIN,
};

/* An account's JetStream limits: nats-server's map of tier name -> JetStreamAccountLimits.
 * One entry named "" is the untiered (default) limits; otherwise one per tier ("R1", "R3", ...),
 * from a JWT's tiered_limits. A stream's limits are the default ones, else its replicas' tier. */
#define JS_MAX_TIERS 8
typedef struct js_tier {
    char name[16];
    nd_acct_js_t lim;
} js_tier_t;

typedef struct js_limits {
    js_tier_t t[JS_MAX_TIERS];
    size_t n; /* 0: none (the account has no JetStream) */
} js_limits_t;

struct nd_js {
    nd_server_t *srv;
    char *store_dir;      /* <store_dir>/jetstream, as nats-server lays it out */
    int64_t max_memory;   /* the server's limits in force */
    int64_t max_store;
    char *domain;         /* "" when none */
    bool sync_always;
    int64_t sync_interval_ns;
    bool strict;
    int64_t max_dup_window_ns; /* jetstream { limits { duplicate_window } }; 0 = none */
    uint32_t queue_limit;      /* request_queue_limit */
    int64_t started_ns;
    /* any thread, atomic: bytes stored over all accounts, and reserved (the max_bytes of every
     * stream: nats-server's memReserved/storeReserved) */
    _Atomic int64_t mem_used, store_used;
    _Atomic int64_t mem_reserved, store_reserved;
    _Atomic uint64_t api_total, api_errors;
    /* start: recovered streams not yet subscribed (nd_js_start waits for 0) */
    pthread_mutex_t rmu;
    pthread_cond_t rcv;
    int recovering;
    /* Accounts with JetStream: set up at start and when a snapshot of the authorization brings
     * new ones (js.c accounts_update, under amu). Entries are never removed before nd_js_free,
     * so a copy taken with js_accts() stays valid; read the array only under amu. */
    pthread_mutex_t amu;
    nd_jsa_t **accts;
    size_t naccts, cap;
    char **known; /* every account name seen, with JetStream or not (under amu) */
    size_t nknown;
};

struct nd_jsa {
    nd_js_t *js;
    nd_acct_t *acct; /* a reference until nd_js_stop */
    bool acct_released; /* under js->amu */
    /* The limits that apply to this server's streams (replicas 1: the default tier, else "R1";
     * all -1 when neither is there); tl: all of them, for account info. Written at setup and by
     * a reload (under mu); read by the API service under mu, by monitoring without. */
    nd_acct_js_t limits;
    js_limits_t tl;
    /* any thread, atomic: what the publish path checks (js_limits_publish): the memory and
     * file byte limits of the stream tier (-1 none), and whether the tier exists at all */
    _Atomic int64_t pub_max_mem, pub_max_store;
    _Atomic bool pub_tier;
    char *dir;       /* <store_dir>/jetstream/<account> */
    nd_iclient_t *api;
    /* the stream table: written by the API service's turn under mu, read by others under mu */
    pthread_mutex_t mu;
    nd_stream_t **streams; /* sorted by name */
    size_t nstreams, cap;
    /* any thread, atomic */
    _Atomic int64_t mem_used, store_used;
    _Atomic uint64_t api_total, api_errors;
};

/* A message id seen within the duplicate window. */
typedef struct js_dedup {
    char *id;
    uint64_t seq;
    int64_t ts;
} js_dedup_t;

/* A publish acknowledgement waiting for the turn's sync (group commit). */
typedef struct js_pending_ack {
    char *reply;
    char *body;
    bool ok; /* acknowledges a message stored in this batch (a failed write or sync turns it
              * into an error) */
} js_pending_ack_t;

/* Counters copied at the end of each turn, for listings and monitoring. */
typedef struct js_stream_stats {
    nd_store_state_t state;
    int64_t bytes_used; /* what the stream counts against its storage */
} js_stream_stats_t;

struct nd_stream {
    _Atomic int refs;
    nd_jsa_t *jsa;
    nd_iclient_t *ic; /* under jsa->mu: NULL once the actor has closed */
    char *name;
    int64_t created_ns;
    char *dir; /* the stream's directory (file storage), NULL for memory */

    /* The API service's copy of the configuration (its turn only). */
    nd_stream_cfg_t acfg;

    /* The stream actor's own (its turn only). */
    nd_stream_cfg_t cfg;
    nd_store_t *store;      /* &ls.base while open (consumers read ls under its lock) */
    char *pub_ack;          /* "{\"stream\":\"S\", \"seq\":" (with the domain when set) */
    nd_xf_t *xf, *rp_xf;    /* subject_transform and republish, compiled on first use */
    char *create_reply_to;  /* when set: answer the create once subscribed */
    js_audit_req_t *create_audit;
    js_dedup_t *dd;         /* ring by time, and lookups by id through dd_index */
    size_t dd_head, dd_len, dd_cap;
    void *dd_index;         /* id -> position (js/stream_dedup.c) */
    char *last_msg_id;
    js_pending_ack_t *acks; /* this turn's acknowledgements */
    size_t nacks, acks_cap;
    bool dirty;             /* stored something this turn */
    int write_errno;        /* a store call failed with ERR_IO this turn: its errno */
    bool no_space;          /* out of space (ENOSPC/EDQUOT): publishes refused until a probe
                             * write succeeds (stream.c) */
    char **expired;         /* subjects expiry emptied: delete markers to store (stream.c) */
    size_t nexpired, expired_cap;
    bool stopped, recovering, opened, subscribed;
    bool restored;          /* the create answer is a restore's (no did_create) */
    int64_t next_tick;      /* the store's next deadline (Unix ns), 0 none */
    int64_t used;           /* the store's bytes last added to the account's usage */

    /* Shared: the store, behind its lock (store_locked.h). */
    nd_store_locked_t ls;

    /* Consumers: the table is written on the stream's turn under mu, read by the API service
     * under mu (sorted by name; each entry holds a reference). The stream signals them at the
     * end of a turn that stored messages (consumer.c). */
    nd_consumer_t **consumers;
    size_t nconsumers, consumers_cap;
    uint64_t turn_first_seq;  /* the first sequence stored this turn, 0 none */
    /* The last sequence that reached the sync policy (written at the end of the stream's turn,
     * after the write or fsync): consumers deliver nothing past it, so no consumer hands out a
     * message a crash could still take back. */
    _Atomic uint64_t visible_seq;
    bool turn_removed;        /* messages went this turn (purge, delete, expiry, rollup) */
    bool turn_purged;         /* ... by a purge request (consumers move past what went) */
    uint64_t sig_first, sig_deleted; /* the store's first_seq / num_deleted the consumers
                                      * last heard of (what limits removed shows there) */

    /* The mirror or sources being fed (stream_source.c), NULL when none. The actor's own. */
    js_srcs_t *srcs;

    /* Shared: under mu. */
    pthread_mutex_t mu;
    js_stream_stats_t stats;
    nd_stream_cfg_t scfg; /* the configuration in force, for listings */
};

/* ---- js.c ---- */
int64_t js_now(void);
/* A path built with printf's format, malloc'd (nd_free). */
char *js_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* mkdir -p. Returns: 0, or -1 with errno. */
int js_mkdirs(const char *path);
/* rm -r dir (a stream's or a staging directory: never follows links). */
void js_remove_tree(const char *dir);
/* The account's JetStream limits applied to a stream config check. */
void js_cfg_env(const nd_jsa_t *jsa, nd_stream_cfg_env_t *env, bool pedantic);
/* A copy of the accounts with JetStream (nd_free it); the entries stay valid until nd_js_free. */
nd_jsa_t **js_accts(nd_js_t *js, size_t *n);

/* ---- jslimits.c: account limits, usage and reservations (nats-server jetstream.go) ---- */
/* The limits of the tier for replicas (nats-server's selectLimits); NULL when none applies. */
const js_tier_t *js_limits_select(const js_limits_t *l, int replicas);
/* The limits an account of the options has (static accounts {} or the account's JWT). Returns:
 * false when the account has no JetStream. */
bool js_limits_from_jwt(const struct nd_jwt *jwt, js_limits_t *out);
/* Installs l as jsa's limits (setup, reload). */
void js_limits_set(nd_jsa_t *jsa, const js_limits_t *l);
/* nats-server's checkAllLimits for a stream of the account: max_consumers against the tier's,
 * then add_bytes (max_bytes; < 0 counts 1) over reserved against the tier's and the server's
 * byte limits. Returns: false with err (10026, 10028, 10047). */
bool js_limits_check(const nd_jsa_t *jsa, const nd_acct_js_t *sel, int64_t max_consumers,
                     bool memory, int64_t add_bytes, int64_t reserved, nd_jserr_t *err);
/* The max_bytes the account's streams reserve (memory or file), the stream named skip excluded.
 * Ctx: the API service's turn. */
int64_t js_limits_reserved(const nd_jsa_t *jsa, bool memory, const char *skip);
/* Adds delta to the server's reservations (a stream created, deleted, updated, recovered). */
void js_limits_reserve(nd_js_t *js, bool memory, int64_t max_bytes, int sign);
/* The stream's store bytes into the account's and server's usage. Ctx: the stream's turn. */
void js_usage_sync(nd_stream_t *st);
/* Publish-time checks (nats-server processJetStreamMsg): the server's usage over its limit
 * (10023), and the account's usage plus size over the tier's limit (10002, or 10120 when no
 * tier applies). Returns: the error, or ND_JSE_NONE. */
nd_jse_t js_limits_server_exceeded(nd_stream_t *st);
nd_jse_t js_limits_account_exceeded(nd_stream_t *st, uint64_t size);

/* ---- jsaudit.c: the API audit advisory ---- */
/* The request a response answers, for the audit advisory. */
struct js_audit_req {
    const char *subject, *reply, *request;
    size_t request_len;
    const char *acc, *user, *name, *lang, *version, *host;
    uint64_t cid;
    bool owned; /* a saved copy (js_audit_save_current), freed with js_audit_free */
};
/* A view of m (valid while m is). */
void js_audit_view(js_audit_req_t *a, const nd_imsg_t *m);
/* A copy of the current request (NULL when none), for a response sent later from another
 * turn. */
js_audit_req_t *js_audit_save_current(void);
void js_audit_free(js_audit_req_t *a);
/* The request being answered on this thread, until js_audit_end. */
void js_audit_begin(const js_audit_req_t *a);
void js_audit_end(void);
/* Publishes the audit advisory of response when it answers the current request (js_send). */
void js_audit_response(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, const char *response);

/* ---- jsjson.c: response helpers ---- */
/* {"type":"io.nats.jetstream.api.v1.<what>"}: a new object. */
json_t *js_resp(const char *what);
/* Adds "error" to a response. */
void js_resp_error(json_t *resp, const nd_jserr_t *err);
/* Publishes resp (stolen) to reply from ic. */
void js_send(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, json_t *resp);
/* The response type ("stream_create_response", ...) of the request subject op (after the
 * "$JS.API." prefix). */
const char *js_api_type(const char *op);
/* The fields an error response of `what` carries besides "error" (ApiPaged ones). */
void js_paged_error_fields(json_t *resp, const char *what);
/* Sends {"type":..,"error":..} for one error (err_code substitution pairs, NULL-terminated). */
void js_send_error(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, const char *what,
                   const nd_jserr_t *err);
/* Go's time.Time: RFC 3339 nanoseconds, or "0001-01-01T00:00:00Z" for 0. */
json_t *js_time(int64_t wall_ns);
/* Parses a request body that may be empty ("{}" then). Returns: the object, or NULL with err
 * set to 10025 (invalid JSON). */
json_t *js_body(const nd_imsg_t *m, nd_jserr_t *err);

/* ---- stream.c ---- */
/* Creates a stream with cfg (ownership passes) and spawns its actor; when reply is set, the
 * actor answers the create once its subscriptions are in place. Runs on the API service's turn.
 * Returns: the stream (the table's reference), or NULL with err. */
nd_stream_t *js_stream_create(nd_ctx_t *ctx, nd_jsa_t *jsa, nd_stream_cfg_t *cfg,
                              int64_t created_ns, const char *reply, nd_jserr_t *err);
void js_stream_ref(nd_stream_t *st);
void js_stream_unref(nd_stream_t *st);
/* Runs on the API service's turn: the update is checked; the stream applies it. */
void js_stream_update(nd_ctx_t *ctx, nd_stream_t *st, nd_stream_cfg_t *cfg, const char *reply);
/* Deletes the stream's data and stops it; answers reply. */
void js_stream_delete(nd_ctx_t *ctx, nd_stream_t *st, const char *reply);
/* The stream's info JSON for listings (state from its last turn). */
json_t *js_stream_list_info(nd_stream_t *st);
/* Recovers the account's streams from its directory (start). */
void js_streams_recover(nd_ctx_t *ctx, nd_jsa_t *jsa);
/* Creates a stream from a restored store (stream_snap.c): file storage moves msgs_dir (a closed
 * store) into the stream's directory and opens it; memory storage takes store. cfg and store
 * pass to the call, also on failure. The stream answers reply with a create response (without
 * did_create) once subscribed. Runs on the API service's turn. Returns: the stream, or NULL
 * with err. */
nd_stream_t *js_stream_create_restored(nd_ctx_t *ctx, nd_jsa_t *jsa, nd_stream_cfg_t *cfg,
                                       nd_store_t *store, const char *msgs_dir, const char *reply,
                                       nd_jserr_t *err);

/* ---- jsa table (jsapi.c) ---- */
nd_stream_t *jsa_find(nd_jsa_t *jsa, const char *name);
void jsa_insert(nd_jsa_t *jsa, nd_stream_t *st);
void jsa_remove(nd_jsa_t *jsa, nd_stream_t *st);

/* ---- stream_pub.c ---- */
void js_stream_publish(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);

void js_stream_dedup_rebuild(nd_stream_t *st);
void js_stream_dedup_free(nd_stream_t *st);
/* Drops ids older than the window; returns the next expiry (Unix ns) or 0. */
int64_t js_stream_dedup_expire(nd_stream_t *st, int64_t now);
/* Turns this turn's PubAcks with a sequence into 10077 errors for errno err (the batch did not
 * reach the sync policy). */
void js_stream_acks_fail(nd_stream_t *st, int err);

/* ---- stream_ops.c: API requests on the stream's turn ---- */
void js_stream_api(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);
void js_stream_direct_get(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);
/* What a STREAM.INFO request asks for (JSApiStreamInfoRequest). */
typedef struct js_info_opts {
    bool deleted_details;
    const char *filter; /* subjects_filter, NULL: none */
    int64_t offset;
} js_info_opts_t;
json_t *js_stream_info(nd_stream_t *st, const js_info_opts_t *req, nd_jserr_t *err);
/* The first sequence stored at or after t (Unix ns), last + 1 when none. */
uint64_t js_seq_from_time(nd_store_t *store, int64_t t);
/* StreamState's JSON; subjects and deleted (borrowed) may be NULL. */
json_t *js_state_json(const nd_store_state_t *s, json_t *subjects, json_t *deleted);

/* ---- stream_snap.c: snapshot and restore ---- */
/* $JS.API.STREAM.SNAPSHOT.<name> on the API service's turn: checked, then forwarded. */
void js_snapshot_request(nd_ctx_t *ctx, nd_iclient_t *api, nd_jsa_t *jsa, const nd_imsg_t *m,
                         const char *name);
/* JS_OP_SNAPSHOT on the stream's turn. */
void js_stream_snapshot(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);
/* $JS.API.STREAM.RESTORE.<name> on the API service's turn. */
void js_restore_request(nd_ctx_t *ctx, nd_iclient_t *api, nd_jsa_t *jsa, const nd_imsg_t *m,
                        const char *name);

/* Arms the stream's timer for deadline (Unix ns) unless an earlier one is armed. Ctx: its turn. */
void js_stream_arm(nd_ctx_t *ctx, nd_stream_t *st, int64_t deadline);

/* ---- stream_source.c: mirror and sources (the stream's turn) ---- */
/* Starts feeding the stream from its mirror or sources (its store open, its client running);
 * does nothing when already started or when the config has neither. */
void js_sources_start(nd_ctx_t *ctx, nd_stream_t *st);
/* The client's subscriptions are in place (on_ready): pending consumer requests leave. */
void js_sources_ready(nd_ctx_t *ctx, nd_stream_t *st);
/* Handles m when it is a consumer create response or a delivery for the mirror or a source.
 * Returns: false when m is none of these (an ordinary publish). */
bool js_sources_msg(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);
/* Retries, response timeouts and stall checks due at now. Returns: the next deadline, 0 none. */
int64_t js_sources_tick(nd_ctx_t *ctx, nd_stream_t *st, int64_t now);
/* Stops feeding (close, delete, a configuration change); unsubscribe: drop the subscriptions
 * too (the client lives on). */
void js_sources_stop(nd_ctx_t *ctx, nd_stream_t *st, bool unsubscribe);
/* Adds "mirror" or "sources" (StreamSourceInfo) to a stream info object. */
void js_sources_info(nd_stream_t *st, json_t *info);

/* ---- consumer.c, consumer_api.c: consumers ---- */
/* Stream side (the stream's turn): API requests forwarded with a JS_OP_CONSUMER_* tag. */
void js_consumer_stream_api(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m);
/* Tells the consumers what this turn did (new messages from st->turn_first_seq, removals). */
void js_consumers_signal(nd_ctx_t *ctx, nd_stream_t *st);
/* Recovers the stream's consumers from its directory (its store is open). */
void js_consumers_recover(nd_ctx_t *ctx, nd_stream_t *st);
/* Stops every consumer (the stream closes or is deleted; delete: their state goes too). */
void js_consumers_stop(nd_ctx_t *ctx, nd_stream_t *st, bool delete);
/* Whether a consumer's filters match subj (interest retention keeps a message only then). */
bool js_consumers_interested(nd_stream_t *st, const char *subj, size_t len);
/* The consumer named name, with a reference (js_consumer_unref), or NULL. Any thread. */
nd_consumer_t *js_consumer_find(nd_stream_t *st, const char *name);
void js_consumer_unref(nd_consumer_t *c);
/* Forwards m to the consumer's actor with tag. Returns: false when it has closed. */
bool js_consumer_forward(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m, uint32_t tag);
/* Account info's consumer count. Any thread. */
size_t js_stream_nconsumers(nd_stream_t *st);

#endif
