/* A stream's configuration (nats-server's StreamConfig, 2.11 fields): parsed from the JSON of a
 * create or update request, checked and given nats-server's defaults, compared for idempotent
 * creates, checked for what an update may change, and written back as the JSON nats-server
 * returns in stream info.
 *
 * The canonical JSON (`json`) is the source of truth for what the API returns: every field
 * nats-server 2.11 writes, with defaults filled in, in nats-server's key order. The C fields
 * are decoded from it for the stream actor's hot path. References: nats-server
 * server/stream.go (StreamConfig, checkStreamCfg, setStreamConfigDefaults), jetstream_api.go
 * (jsStreamCreateRequest), stream.go (stream.update: what may change).
 */
#ifndef ND_JS_STREAM_CFG_H
#define ND_JS_STREAM_CFG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "js/jserr.h"
#include "js/store/store.h"

typedef enum {
    ND_RETENTION_LIMITS = 0,
    ND_RETENTION_INTEREST,
    ND_RETENTION_WORKQUEUE
} nd_retention_t;
typedef enum { ND_STORAGE_FILE = 0, ND_STORAGE_MEMORY } nd_storage_t;

typedef struct nd_stream_cfg {
    json_t *json; /* canonical config, owned (what stream info's "config" shows) */

    char *name;
    char **subjects; /* as configured, or [name] when none and no mirror/sources */
    size_t nsubjects;
    nd_retention_t retention;
    nd_storage_t storage;
    int64_t max_consumers, max_msgs, max_bytes, max_msgs_per_subject; /* -1 = unlimited */
    int64_t max_age_ns;                                               /* 0 = unlimited */
    int32_t max_msg_size;                                             /* -1 = unlimited */
    nd_store_discard_t discard;
    bool discard_new_per_subject;
    int64_t duplicate_window_ns;
    int num_replicas;
    bool no_ack, sealed, deny_delete, deny_purge, allow_rollup, allow_direct, mirror_direct;
    bool allow_msg_ttl;
    int64_t subject_delete_marker_ttl_ns; /* 0 = none */
    uint64_t first_seq;                   /* 0 = none */
    nd_store_compression_t compression;
    bool has_mirror;
    size_t nsources;
    char *xform_src, *xform_dest; /* subject_transform; NULL when none */
    char *republish_src, *republish_dest;
    bool republish_headers_only;
} nd_stream_cfg_t;

/* What checking a config needs to know about the server and account. */
typedef struct nd_stream_cfg_env {
    bool strict;    /* jetstream { strict: true }: unknown fields are errors (2.11) */
    bool pedantic;  /* pedantic whatever the body says (the body's "pedantic" also turns it on):
                     * defaults are not applied silently */
    bool clustered; /* false: num_replicas > 1 is 10074 */
    int64_t max_dup_window_ns; /* jetstream { limits { duplicate_window } }; 0 = none */
    bool max_bytes_required;   /* the account requires max_bytes (10113) */
    int64_t max_stream_bytes;  /* the account's per-stream byte limit for the storage; -1 none */
    /* The account's limits, when set (they replace the two fields above). max_bytes_limits:
     * nats-server's maxBytesLimits for a checked config (its tier by replicas, its storage);
     * create_limits: on a create, after the create-only checks and before the config checks,
     * with the request's values as sent (0 when absent), as nats-server checks the account's
     * limits there (jsNonClusteredStreamLimitsCheck). Returns: false with *err to refuse. */
    void (*max_bytes_limits)(void *arg, int replicas, bool memory, bool *required,
                             int64_t *max_stream_bytes);
    bool (*create_limits)(void *arg, const char *name, int64_t replicas, bool memory,
                          int64_t max_bytes, int64_t max_consumers, nd_jserr_t *err);
    void *limits_arg;
    /* A create request ($JS.API.STREAM.CREATE): nats-server checks the name against the subject
     * first, then path separators, "sealed" and mirror_direct without a mirror, and after the
     * config checks replicas > 1 when not clustered (10074) and the mirror's/sources' filter
     * subjects (10049). Otherwise (an update, a recovered or restored config) the name is
     * compared after the config checks, and those create-only checks are not made. */
    bool create;
} nd_stream_cfg_env_t;

/* Parses a create/update request body (the StreamConfig fields, plus "pedantic"), applies
 * defaults and checks it. subj_name: the stream name from the API subject (NULL: not checked);
 * a body whose name differs from it is 10056, an empty or missing name included (nats-server
 * 2.11 does not fill it in). Like nats-server's create and update handlers, it sets the
 * "_nats.req.level" metadata key ("1" when the config uses per-message TTLs, else "0") and
 * drops the dynamic "_nats.ver" and "_nats.level" keys, which only responses carry. Returns: true
 * with *out filled (free with nd_stream_cfg_free), or false with *err (bad JSON is 10025 "invalid
 * JSON: <Go's error text>"; a config error is 10052 with nats-server's bare text, e.g. "max age
 * needs to be >= 100ms", or the specific error nats-server gives). */
bool nd_stream_cfg_parse(const char *body, size_t len, const char *subj_name,
                         const nd_stream_cfg_env_t *env, nd_stream_cfg_t *out, nd_jserr_t *err);
/* As nd_stream_cfg_parse from a JSON object already decoded (a recovered stream's meta file,
 * a restore request's "config"). Borrows cfg. */
bool nd_stream_cfg_from_json(const json_t *cfg, const char *subj_name,
                             const nd_stream_cfg_env_t *env, nd_stream_cfg_t *out, nd_jserr_t *err);

/* Whether a create of b over an existing a is the same stream (idempotent create): the configs
 * are equal ignoring metadata keys that start with "_nats.". */
bool nd_stream_cfg_equal(const nd_stream_cfg_t *a, const nd_stream_cfg_t *b);
/* Whether an update from old to upd is allowed (name, storage, retention changes from/to
 * workqueue, mirror, template_owner, sealed -> unsealed, deny_delete/deny_purge set -> cleared,
 * compression vs. stream type... exactly nats-server's stream.go checks and texts). */
bool nd_stream_cfg_check_update(const nd_stream_cfg_t *old, const nd_stream_cfg_t *upd,
                                nd_jserr_t *err);

/* What nats-server does to an updated config that is sealed: max_age 0, discard new,
 * deny_delete and deny_purge set, allow_rollup_hdrs cleared (C fields and json). Call after a
 * successful nd_stream_cfg_check_update, before using upd. */
void nd_stream_cfg_apply_sealed(nd_stream_cfg_t *c);

/* The store limits the config implies (dir, clock, sync policy left for the caller). */
void nd_stream_cfg_store(const nd_stream_cfg_t *c, nd_store_cfg_t *out);

/* Whether two subject filters overlap (some subject matches both). */
bool nd_subjects_overlap(const char *a, const char *b);

void nd_stream_cfg_copy(nd_stream_cfg_t *dst, const nd_stream_cfg_t *src);
void nd_stream_cfg_free(nd_stream_cfg_t *c);

#endif
