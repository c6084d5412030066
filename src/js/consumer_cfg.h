/* A consumer's configuration (nats-server's ConsumerConfig, 2.11 fields): decoded from a create
 * request (CreateConsumerRequest: stream_name, config, action, pedantic), given nats-server's
 * defaults, checked against its stream and the server's limits, compared for idempotent creates,
 * checked for what an update may change, and written back as the JSON consumer info shows.
 *
 * As for streams (stream_cfg.h), the canonical JSON (`json`) is what the API returns: every
 * field nats-server 2.11 writes, defaults filled in, in nats-server's key order; the C fields are
 * decoded from it for the consumer actor. References: nats-server server/consumer.go
 * (ConsumerConfig, setConsumerConfigDefaults, checkConsumerCfg, updateConfig/acceptableUpdate),
 * stream.go (addConsumerWithAction), jetstream_api.go (jsConsumerCreateRequest).
 */
#ifndef ND_JS_CONSUMER_CFG_H
#define ND_JS_CONSUMER_CFG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "js/jserr.h"
#include "js/stream_cfg.h"

typedef enum {
    ND_DELIVER_ALL = 0,
    ND_DELIVER_LAST,
    ND_DELIVER_NEW,
    ND_DELIVER_BY_START_SEQ,
    ND_DELIVER_BY_START_TIME,
    ND_DELIVER_LAST_PER_SUBJECT
} nd_deliver_policy_t;
typedef enum { ND_ACK_NONE = 0, ND_ACK_ALL, ND_ACK_EXPLICIT } nd_ack_policy_t;
typedef enum { ND_REPLAY_INSTANT = 0, ND_REPLAY_ORIGINAL } nd_replay_policy_t;
typedef enum { ND_PRIO_NONE = 0, ND_PRIO_OVERFLOW, ND_PRIO_PINNED } nd_priority_policy_t;
/* The create request's "action". */
typedef enum { ND_CACTION_CREATE_OR_UPDATE = 0, ND_CACTION_CREATE, ND_CACTION_UPDATE } nd_caction_t;

typedef struct nd_consumer_cfg {
    json_t *json; /* canonical config, owned (what consumer info's "config" shows) */

    char *name;    /* name or durable_name; NULL for an ephemeral until the caller names it */
    bool durable;  /* durable_name was set */
    nd_deliver_policy_t deliver_policy;
    uint64_t opt_start_seq;
    int64_t opt_start_time_ns; /* Unix ns; 0 = none */
    nd_ack_policy_t ack_policy;
    int64_t ack_wait_ns;       /* default 30 s (backoff[0] when a backoff is set) */
    int64_t max_deliver;       /* -1 = unlimited */
    int64_t *backoff_ns;       /* owned; nbackoff entries */
    size_t nbackoff;
    char **filters;            /* filter_subject or filter_subjects; nfilters 0 = every subject */
    size_t nfilters;
    nd_replay_policy_t replay_policy;
    uint64_t rate_limit_bps;   /* 0 = none */
    int sample_freq;           /* percent, 0 = no ack sampling */
    int64_t max_waiting;       /* pull: default 512 */
    int64_t max_ack_pending;   /* -1 = unlimited; default 1000 with an ack policy */
    bool flow_control;
    int64_t idle_heartbeat_ns; /* 0 = none */
    bool headers_only;
    int64_t max_batch, max_bytes; /* pull request caps; 0 = none */
    int64_t max_expires_ns;       /* 0 = none */
    char *deliver_subject;        /* NULL: a pull consumer */
    char *deliver_group;          /* NULL when none */
    int64_t inactive_threshold_ns; /* 0 = none (ephemerals default to 5 s) */
    int num_replicas;
    bool mem_storage;
    int64_t pause_until_ns;       /* 0 = not paused */
    char **priority_groups;
    size_t npriority_groups;
    nd_priority_policy_t priority_policy;
    int64_t priority_timeout_ns;  /* pinned_client TTL; default 2 min */
} nd_consumer_cfg_t;

/* What checking a consumer config needs to know about its stream, account and server. */
typedef struct nd_consumer_cfg_env {
    const nd_stream_cfg_t *stream; /* the stream's config in force */
    bool strict;                   /* jetstream { strict: true } */
    bool pedantic;                 /* as for streams: defaults are not applied silently */
    int64_t max_ack_pending;       /* the account's or server's limit, 0/-1 = none (10121) */
    int64_t max_request_batch;     /* jetstream { limits { max_request_batch } }; 0 = none (10125) */
    int64_t inactive_threshold_max; /* jetstream { limits { ... } }; 0 = none (10153) */
    bool clustered;                /* false: num_replicas > 1 in a create request is 10074 */
} nd_consumer_cfg_env_t;

/* A decoded create request. */
typedef struct nd_consumer_req {
    nd_consumer_cfg_t cfg;
    nd_caction_t action;
    bool pedantic;
} nd_consumer_req_t;

/* Parses a CONSUMER.CREATE / CONSUMER.DURABLE.CREATE request body. subj_stream: the stream from
 * the API subject (10157 when the body's stream_name differs); subj_name: the consumer name from
 * the subject (NULL for the legacy ephemeral CONSUMER.CREATE.<s>); subj_filter: the filter from
 * CONSUMER.CREATE.<s>.<n>.<filter> (NULL when none); legacy_durable: the subject was
 * CONSUMER.DURABLE.CREATE. Applies defaults, checks the config against env (every check of
 * nats-server's checkConsumerCfg and of the create handler, with their error codes and texts).
 * Returns: true with *out filled (free with nd_consumer_req_free), or false with *err. */
bool nd_consumer_req_parse(const char *body, size_t len, const char *subj_stream,
                           const char *subj_name, const char *subj_filter, bool legacy_durable,
                           const nd_consumer_cfg_env_t *env, nd_consumer_req_t *out,
                           nd_jserr_t *err);
void nd_consumer_req_free(nd_consumer_req_t *r);

/* A config from its canonical JSON (a recovered consumer's meta file). Borrows j. */
bool nd_consumer_cfg_from_json(const json_t *j, const nd_consumer_cfg_env_t *env,
                               nd_consumer_cfg_t *out, nd_jserr_t *err);

/* Sets the name of an ephemeral (json too). */
void nd_consumer_cfg_set_name(nd_consumer_cfg_t *c, const char *name);

/* Sets pause_until (RFC 3339, any offset, stored in UTC; NULL or Go's zero time: not paused),
 * and the "_nats.req.level" metadata that goes with it (json too). Returns: false when until
 * does not parse (nothing changed). */
bool nd_consumer_cfg_set_pause(nd_consumer_cfg_t *c, const char *until);

/* Whether a create of b over an existing a is the same consumer (idempotent create; metadata
 * keys that start with "_nats." ignored). */
bool nd_consumer_cfg_equal(const nd_consumer_cfg_t *a, const nd_consumer_cfg_t *b);
/* Whether an update from old to upd is allowed (nats-server's acceptableUpdate, its texts). */
bool nd_consumer_cfg_check_update(const nd_consumer_cfg_t *old, const nd_consumer_cfg_t *upd,
                                  nd_jserr_t *err);
/* Workqueue stream rules for a new consumer c next to the stream's others (10098, 10099,
 * 10100, 10101 as nats-server orders them). */
bool nd_consumer_cfg_check_workqueue(const nd_consumer_cfg_t *c,
                                     const nd_consumer_cfg_t *const *others, size_t n,
                                     nd_jserr_t *err);

/* Whether subject (a literal) passes the consumer's filters. */
bool nd_consumer_cfg_matches(const nd_consumer_cfg_t *c, const char *subj, size_t len);

void nd_consumer_cfg_copy(nd_consumer_cfg_t *dst, const nd_consumer_cfg_t *src);
void nd_consumer_cfg_free(nd_consumer_cfg_t *c);

#endif
