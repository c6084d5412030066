/* JetStream message store: one interface (a vtable), two implementations.
 *
 *   memstore  (src/js/store/memstore.c)   everything in memory; lost on restart.
 *   filestore (src/js/filestore*.c) append-only blocks of checksummed records on disk, recovered
 *                                   after a crash (see filestore.c's header for the format).
 *
 * Ownership and threads: a store belongs to one stream actor, which is its only caller, so no
 * call is thread-safe and none blocks on anything but the disk. Time is not read behind the
 * caller's back: every call that needs "now" uses cfg.now (CLOCK_REALTIME nanoseconds by
 * default), and expiry by max_age and the periodic fsync happen in nd_store_tick, which the
 * owner calls when the deadline it returned has passed (the stream actor arms a timer for it).
 *
 * Sequences start at 1; 0 means "none". A store never renumbers: a removed sequence stays a gap
 * ("deleted") until it falls below the first sequence. Timestamps are Unix nanoseconds.
 *
 * Errors are nd_err_t values (ND_ERR_STORE_*, src/util/err.h); nd_strerror gives nats-server's
 * texts where it has one (e.g. "maximum messages exceeded"). An I/O error keeps its errno in the
 * store (nd_store_io_errno), or in the recovery report when the open itself failed. After an
 * fsync error the store refuses every further write (ND_ERR_STORE_IO): an fsync error is never
 * retried or ignored (PostgreSQL's "fsyncgate" lesson; shared/spec/reliability.md).
 */
#ifndef NATSD_STORE_H
#define NATSD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The most sequences the deleted op lists (1 GiB of them). */
#define ND_STORE_MAX_DELETED_LIST ((uint64_t)1 << 27)

typedef enum { ND_DISCARD_OLD = 0, ND_DISCARD_NEW = 1 } nd_store_discard_t;
typedef enum { ND_STORE_NONE = 0, ND_STORE_S2 = 1 } nd_store_compression_t;
typedef enum { ND_CIPHER_NONE = 0, ND_CIPHER_AES_GCM = 1, ND_CIPHER_CHACHA = 2 } nd_store_cipher_t;

typedef struct nd_store_cfg {
    /* Limits, nats-server semantics: <= 0 means unlimited (nats-server writes -1). */
    int64_t max_msgs;
    int64_t max_bytes;            /* counted as nd_store_msg_size() per message */
    int64_t max_age_ns;
    int64_t max_msgs_per_subject;
    int32_t max_msg_size;         /* payload + headers */
    nd_store_discard_t discard;
    bool discard_new_per_subject; /* with discard new: refuse once a subject is at its limit */

    /* Per-message TTLs (nats-server 2.11's allow_msg_ttl). When set, a message stored with a
     * TTL (store_ttl, or store_raw / recovery reading its Nats-TTL header) expires in tick once
     * ts + TTL has passed, and one whose TTL is "never" (-1) outlives max_age. */
    bool allow_msg_ttl;
    /* Subject delete markers: when set, called for each message that expiry (max_age or TTL)
     * removes while it is the last one of its subject, unless it is itself a marker (its
     * headers have Nats-Marker-Reason, or KV-Operation: PURGE). Called from tick and
     * update_cfg only (an open does not expire by max_age then, so the markers are not lost),
     * as the message goes; the callback must not call into the store (it notes the subject and
     * its owner stores the marker once tick returned). subj is valid during the call only. */
    void (*on_subject_expired)(void *arg, const char *subj, size_t len);
    void *expired_arg;

    /* Clock: Unix ns; NULL = CLOCK_REALTIME. Tests pass a fake clock. */
    int64_t (*now)(void *arg);
    void *now_arg;

    /* File store only (ignored by memstore). */
    const char *dir;              /* the stream's directory; created if missing */
    uint64_t block_size;          /* bytes per block before a new one starts; 0 = default (8 MiB) */
    int64_t sync_interval_ns;     /* 0 = default (2 min) */
    bool sync_always;             /* every write is durable before the call returns */
    bool sync_consumers;          /* consumer states are durable before consumer_update returns
                                   * (sync_always implies it): a stream that syncs its messages
                                   * once per batch itself still wants each state write synced */
    nd_store_compression_t compression;
    nd_store_cipher_t cipher;
    const uint8_t *key;           /* 32 bytes when cipher != NONE */
} nd_store_cfg_t;

/* A loaded message. The store fills it in; its pointers point into buf, which the message owns and
 * which the next load into the same nd_store_msg_t reuses. Free with nd_store_msg_free. */
typedef struct nd_store_msg {
    uint64_t seq;
    int64_t ts;
    const char *subj;
    size_t subj_len;
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *data;
    size_t data_len;
    uint8_t *buf;
    size_t cap;
} nd_store_msg_t;

void nd_store_msg_free(nd_store_msg_t *m);
/* The bytes a message counts against max_bytes (nats-server's fileStoreMsgSize shape:
 * subject + headers + payload + 16 bytes of overhead). */
uint64_t nd_store_msg_size(size_t subj_len, size_t hdr_len, size_t data_len);

typedef struct nd_store_state {
    uint64_t msgs;
    uint64_t bytes;
    uint64_t first_seq, last_seq; /* first_seq = last_seq + 1 when empty (nats-server's shape) */
    int64_t first_ts, last_ts;    /* first_ts 0 when empty; only truncate lowers last_seq/ts */
    uint64_t num_deleted;         /* gaps between first_seq and last_seq */
    uint64_t num_subjects;
    uint64_t consumers;
} nd_store_state_t;

/* Messages on one subject, or matching a filter. */
typedef struct nd_store_subj_state {
    uint64_t msgs;
    uint64_t first_seq, last_seq;
} nd_store_subj_state_t;

/* What a file store found when it opened its directory. */
typedef struct nd_store_recovery {
    uint64_t msgs;               /* messages recovered */
    uint64_t records_dropped;    /* records skipped because their checksum or shape was bad */
    uint64_t bytes_dropped;      /* bytes of those records plus any torn tail */
    uint64_t torn_tails;         /* blocks whose last record was cut short */
    uint64_t blocks_corrupt;     /* blocks with at least one bad record */
    bool index_rebuilt;          /* the index was missing or stale and was rebuilt from the blocks */
    int io_errno;                /* when the open returned ND_ERR_STORE_IO: the errno behind it */
} nd_store_recovery_t;

/* Consumer state, persisted alongside the stream (msgpack in the file store). */
typedef struct nd_store_pending {
    uint64_t sseq; /* stream sequence delivered and not yet acked */
    uint64_t dseq; /* the consumer sequence it went out with */
    int64_t ts;    /* when it was last delivered */
} nd_store_pending_t;

typedef struct nd_store_redelivered {
    uint64_t sseq;
    uint64_t count;
} nd_store_redelivered_t;

typedef struct nd_consumer_state {
    uint64_t delivered_cseq, delivered_sseq; /* highest consumer / stream sequence delivered */
    uint64_t ack_floor_cseq, ack_floor_sseq; /* everything at or below is acked */
    nd_store_pending_t *pending;             /* sorted by sseq; owned */
    size_t npending;
    nd_store_redelivered_t *redelivered;     /* sorted by sseq; owned */
    size_t nredelivered;
} nd_consumer_state_t;

void nd_consumer_state_free(nd_consumer_state_t *cs);

/* Called for each subject by subjects_state; return false to stop. */
typedef bool (*nd_store_subj_cb)(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *st);
/* Snapshot writer: return 0, or -1 to abort the snapshot (nd_store_snapshot returns ERR_IO). */
typedef int (*nd_store_write_fn)(void *arg, const void *p, size_t n);
/* Snapshot reader: fills up to n bytes, returns how many (0 = end), or -1 on error. */
typedef long (*nd_store_read_fn)(void *arg, void *p, size_t n);

typedef struct nd_store nd_store_t;
typedef struct nd_cstore nd_cstore_t; /* one consumer's persisted state */

typedef struct nd_store_ops {
    /* Appends a message; the store assigns seq (last + 1) and ts (now; strictly increasing is
     * not promised, monotonic non-decreasing is). Enforces max_msg_size, then the limits:
     * discard old removes the oldest messages (per subject first for max_msgs_per_subject),
     * discard new refuses with the matching error: MAX_PER_SUBJECT when discard_new_per_subject
     * and the subject holds max_msgs_per_subject; MAX_MSGS when msgs >= max_msgs; MAX_BYTES when
     * bytes + size >= max_bytes (nats-server's check: the limit itself is never reached). As in
     * nats-server, a subject at its per-subject limit is not refused by max_msgs (the store
     * replaces that subject's oldest message instead). */
    ND_MUST_CHECK nd_err_t (*store)(nd_store_t *st, const char *subj, size_t subj_len,
                                    const void *hdr, size_t hdr_len, const void *data,
                                    size_t data_len, uint64_t *seq, int64_t *ts);
    /* store with a per-message TTL in seconds: > 0 expires ts + ttl s later, -1 never expires
     * (not even by max_age), 0 is store. Honoured only with cfg.allow_msg_ttl. The message's
     * Nats-TTL header must say the same: a reopened file store reads the TTL back from it. */
    ND_MUST_CHECK nd_err_t (*store_ttl)(nd_store_t *st, const char *subj, size_t subj_len,
                                        const void *hdr, size_t hdr_len, const void *data,
                                        size_t data_len, int64_t ttl, uint64_t *seq, int64_t *ts);
    /* Appends with a given sequence and timestamp (replication, restore): seq must be > last
     * (else ERR_BAD_SEQUENCE); the gap in between becomes deleted sequences, except in a store
     * holding no message, where first_seq simply becomes seq. Limits apply as in store. With
     * cfg.allow_msg_ttl, the TTL is the message's Nats-TTL header's. */
    ND_MUST_CHECK nd_err_t (*store_raw)(nd_store_t *st, uint64_t seq, int64_t ts, const char *subj,
                                        size_t subj_len, const void *hdr, size_t hdr_len,
                                        const void *data, size_t data_len);
    /* Reserves the next sequence without a message (it becomes a deleted gap). */
    ND_MUST_CHECK nd_err_t (*skip)(nd_store_t *st, uint64_t *seq);

    ND_MUST_CHECK nd_err_t (*load)(nd_store_t *st, uint64_t seq, nd_store_msg_t *out);
    /* First message with seq >= start whose subject matches filter (NULL or ">" = all;
     * wildcards allowed). ERR_EOF when there is none. */
    ND_MUST_CHECK nd_err_t (*load_next)(nd_store_t *st, const char *filter, size_t filter_len,
                                        uint64_t start, nd_store_msg_t *out);
    /* Last message whose subject matches filter (a literal subject or a wildcard filter). */
    ND_MUST_CHECK nd_err_t (*load_last)(nd_store_t *st, const char *filter, size_t filter_len,
                                        nd_store_msg_t *out);

    /* Removes one message; secure also overwrites its bytes (file store: in place, then synced
     * per policy). ERR_NOT_FOUND when it is not there. */
    ND_MUST_CHECK nd_err_t (*remove)(nd_store_t *st, uint64_t seq, bool secure);
    /* nats-server's PurgeEx: filter NULL/">" = every subject; up_to != 0 removes only sequences
     * < up_to; keep != 0 keeps the newest `keep` of the messages matching the filter, counted
     * over all of them together, not per subject (nats-server's shape); nothing goes when keep >=
     * their number. With no filter: up_to > 1 is compact(up_to), keep is compact(last - keep + 1),
     * and with neither first_seq becomes last + 1. *purged = how many went. */
    ND_MUST_CHECK nd_err_t (*purge)(nd_store_t *st, const char *filter, size_t filter_len,
                                    uint64_t up_to, uint64_t keep, uint64_t *purged);
    /* Removes every message < seq (seq 0 = purge all). When seq > last, the store empties and
     * first_seq = seq, last_seq = seq - 1 (the next store gets seq). Otherwise first_seq becomes
     * the first remaining message's seq (last + 1 when none remains), as always. */
    ND_MUST_CHECK nd_err_t (*compact)(nd_store_t *st, uint64_t seq, uint64_t *purged);
    /* Removes every message > seq (Raft log truncation); last_seq becomes seq and last_ts its ts.
     * seq must be a stored message (ERR_BAD_SEQUENCE otherwise, as nats-server's
     * ErrInvalidSequence), or 0, which empties the store back to first_seq 1, last_seq 0. */
    ND_MUST_CHECK nd_err_t (*truncate)(nd_store_t *st, uint64_t seq);

    void (*state)(nd_store_t *st, nd_store_state_t *out);
    /* The deleted sequences between first and last, ascending, malloc'd (caller frees).
     * ERR_TOO_MANY_DELETED when there are more than ND_STORE_MAX_DELETED_LIST of them. */
    ND_MUST_CHECK nd_err_t (*deleted)(nd_store_t *st, uint64_t **seqs, size_t *n);
    /* Totals for the messages matching filter with seq >= start. */
    void (*filtered_state)(nd_store_t *st, const char *filter, size_t filter_len, uint64_t start,
                           nd_store_subj_state_t *out);
    /* One callback per distinct subject matching filter, in no particular order. */
    void (*subjects_state)(nd_store_t *st, const char *filter, size_t filter_len,
                           nd_store_subj_cb cb, void *arg);
    /* Messages at or after start matching filter; last_per_subject counts each subject once
     * (the consumer's DeliverLastPerSubject). */
    uint64_t (*num_pending)(nd_store_t *st, const char *filter, size_t filter_len, uint64_t start,
                            bool last_per_subject);

    /* Changes the limits (a stream update); applies them at once. dir/cipher cannot change. */
    ND_MUST_CHECK nd_err_t (*update_cfg)(nd_store_t *st, const nd_store_cfg_t *cfg);
    /* Expires by max_age and by TTL and runs the interval sync that are due at now; returns
     * the next deadline (Unix ns), 0 when nothing is scheduled. */
    int64_t (*tick)(nd_store_t *st, int64_t now);
    /* Makes everything stored so far durable (fsync); no-op for memstore. */
    ND_MUST_CHECK nd_err_t (*sync)(nd_store_t *st);
    /* Hands everything stored so far to the operating system (write(), no fsync), so that it
     * survives a crash of the process; no-op for memstore. The stream calls it once per batch,
     * before the batch's acknowledgements leave. */
    ND_MUST_CHECK nd_err_t (*flush)(nd_store_t *st);

    /* Writes a self-contained snapshot (messages, deleted gaps, consumer states). */
    ND_MUST_CHECK nd_err_t (*snapshot)(nd_store_t *st, nd_store_write_fn w, void *arg);

    /* Consumers: open (creating if new) the persisted state of one consumer. */
    ND_MUST_CHECK nd_err_t (*consumer_open)(nd_store_t *st, const char *name, nd_cstore_t **out);
    /* Replaces the consumer's stored state (durable per the stream's sync policy). */
    ND_MUST_CHECK nd_err_t (*consumer_update)(nd_cstore_t *cs, const nd_consumer_state_t *state);
    /* Reads it back (caller frees with nd_consumer_state_free). */
    ND_MUST_CHECK nd_err_t (*consumer_state)(nd_cstore_t *cs, nd_consumer_state_t *out);
    void (*consumer_close)(nd_cstore_t *cs);
    ND_MUST_CHECK nd_err_t (*consumer_delete)(nd_cstore_t *cs); /* removes it and closes */
    /* Names of the stored consumers, malloc'd array of malloc'd strings (caller frees all). */
    ND_MUST_CHECK nd_err_t (*consumer_list)(nd_store_t *st, char ***names, size_t *n);

    /* Syncs and closes (file store: writes its index so the next open is fast). */
    void (*close)(nd_store_t *st);
    /* Closes and deletes everything (the stream's directory too). */
    ND_MUST_CHECK nd_err_t (*destroy)(nd_store_t *st);
} nd_store_ops_t;

struct nd_store {
    const nd_store_ops_t *ops;
    /* The errno behind this store's last ND_ERR_STORE_IO, kept with the store rather than in a
     * thread-local so that it belongs to the call that failed (owner actor only). */
    int io_errno;
};

/* Opening. A file store recovers whatever cfg->dir holds (report may be NULL). */
ND_MUST_CHECK nd_err_t nd_memstore_open(const nd_store_cfg_t *cfg, nd_store_t **out);
ND_MUST_CHECK nd_err_t nd_filestore_open(const nd_store_cfg_t *cfg, nd_store_t **out,
                                         nd_store_recovery_t *report);
/* Restores a snapshot into a new, empty store opened with cfg (memstore when cfg->dir is NULL). */
ND_MUST_CHECK nd_err_t nd_store_restore(const nd_store_cfg_t *cfg, nd_store_read_fn r, void *arg,
                                        nd_store_t **out);
/* For store implementations: records err as st's io_errno and returns ND_ERR_STORE_IO, so an I/O
 * failure reads `return nd_store_io_error(&fs->base, errno);`. */
nd_err_t nd_store_io_error(nd_store_t *st, int err);
/* Returns: the errno of st's last ND_ERR_STORE_IO (ENOSPC, EIO, ...), 0 when it has had none. */
static inline int
nd_store_io_errno(const nd_store_t *st)
{
    return st->io_errno;
}

/* Convenience wrappers, so callers read like method calls. */
static inline ND_MUST_CHECK nd_err_t
nd_store_put(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl,
             const void *data, size_t dl, uint64_t *seq, int64_t *ts)
{
    return st->ops->store(st, subj, sl, hdr, hl, data, dl, seq, ts);
}
static inline ND_MUST_CHECK nd_err_t
nd_store_put_ttl(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl,
                 const void *data, size_t dl, int64_t ttl, uint64_t *seq, int64_t *ts)
{
    return st->ops->store_ttl(st, subj, sl, hdr, hl, data, dl, ttl, seq, ts);
}
static inline ND_MUST_CHECK nd_err_t
nd_store_load(nd_store_t *st, uint64_t seq, nd_store_msg_t *out)
{
    return st->ops->load(st, seq, out);
}
static inline void
nd_store_state(nd_store_t *st, nd_store_state_t *out)
{
    st->ops->state(st, out);
}
static inline void
nd_store_close(nd_store_t *st)
{
    st->ops->close(st);
}

#endif
