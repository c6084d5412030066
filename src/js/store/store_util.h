/* The stream-store semantics that the memory store (memstore.c) and the file store (filestore.c)
 * share word for word: message argument checks, the discard-new admission rule, the discard-old
 * limit test, PurgeEx argument handling, the deleted-sequence list, and the answers built from a
 * per-subject index (subjects_state, last-per-subject num_pending, wildcard totals).
 *
 * Only the decisions live here; each store keeps its own data structures and applies a decision
 * its own way (the memstore removes slot by slot, the file store writes one MARK for a run). A
 * store exposes its subject index through one walker (nd_store_subj_walk_fn), which is all the
 * index-based answers need.
 *
 * Ctx: the store's owner, like every store op.
 */
#ifndef NATSD_JS_STORE_UTIL_H
#define NATSD_JS_STORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "js/store/store.h"

/* True when filter selects every subject (NULL, empty or ">"). */
static inline bool
nd_store_filter_all(const char *filter, size_t len)
{
    return filter == NULL || len == 0 || (len == 1 && filter[0] == '>');
}

/* Counts seq, the next matching message in ascending order, into a running total. */
static inline void
nd_store_subj_state_count(nd_store_subj_state_t *out, uint64_t seq)
{
    if (out->msgs++ == 0)
        out->first_seq = seq;
    out->last_seq = seq;
}

/* The store's clock: cfg->now when set (tests), else CLOCK_REALTIME, in Unix ns. */
int64_t nd_store_now(const nd_store_cfg_t *cfg);

/* The timestamp of the next message or skip: now, but never below last_ts, so that timestamps
 * never go backwards and max_age can expire from the front. */
static inline int64_t
nd_store_stamp(const nd_store_cfg_t *cfg, int64_t last_ts)
{
    int64_t now = nd_store_now(cfg);
    return now < last_ts ? last_ts : now;
}

/* How many sequences between first_seq and last_seq hold no message (0 when the store is
 * empty: then first_seq is last_seq + 1). */
static inline uint64_t
nd_store_num_deleted(uint64_t first_seq, uint64_t last_seq, uint64_t msgs)
{
    return msgs ? (last_seq - first_seq + 1) - msgs : 0;
}

/* Checks a message's arguments before it is stored: a valid publish subject of at most
 * UINT16_MAX bytes, headers and payload of at most max_field bytes each (the store's record
 * limit) with a pointer when not empty, and the configured max_msg_size. Returns: ND_OK,
 * ND_ERR_STORE_BAD_ARG or ND_ERR_STORE_MSG_TOO_BIG. */
ND_MUST_CHECK nd_err_t nd_store_check_msg(const nd_store_cfg_t *cfg, const char *subj, size_t sl,
                                          const void *hdr, size_t hl, const void *data, size_t dl,
                                          uint64_t max_field);

/* The discard-new admission rule (natsd/store.h, the store op): may a message of size bytes join
 * a store holding msgs messages and bytes bytes, subj_msgs of them on its subject? Returns the
 * refusal, or ND_OK. With ND_OK, *if_oldest_fits = true means the answer is yes only
 * when the subject's oldest message (which the new one replaces) is at least size bytes: the
 * caller checks that and refuses with ND_ERR_STORE_MAX_BYTES otherwise. */
ND_MUST_CHECK nd_err_t nd_store_admit_new(const nd_store_cfg_t *cfg, uint64_t msgs, uint64_t bytes,
                                          uint64_t size, uint64_t subj_msgs, bool *if_oldest_fits);

/* True when msgs or bytes exceeds max_msgs or max_bytes (discard old then drops the oldest). */
bool nd_store_over_limits(const nd_store_cfg_t *cfg, uint64_t msgs, uint64_t bytes);

/* What a purge of every subject amounts to (natsd/store.h, the purge op). */
typedef enum nd_store_purge_kind {
    ND_STORE_PURGE_NOTHING,
    ND_STORE_PURGE_ALL,     /* every message goes; first_seq becomes last + 1 */
    ND_STORE_PURGE_COMPACT, /* compact(*below) */
} nd_store_purge_kind_t;

nd_store_purge_kind_t nd_store_purge_all_plan(uint64_t up_to, uint64_t keep, uint64_t msgs,
                                              uint64_t last_seq, uint64_t *below);

/* For a purge with a subject filter: checks the filter, then says which matching messages go:
 * the first *max of them in ascending order from *first, none above *last. Returns
 * ND_ERR_STORE_BAD_ARG for an invalid filter; *max = 0 when nothing goes. Uses st's
 * filtered_state. */
ND_MUST_CHECK nd_err_t nd_store_purge_filtered_plan(nd_store_t *st, const char *filter, size_t fl,
                                                    uint64_t up_to, uint64_t keep, uint64_t *first,
                                                    uint64_t *last, uint64_t *max);

/* Builds the deleted-sequence list (the deleted op): begin, then gaps_live for each live
 * sequence in ascending order, then end. begin returns ND_ERR_STORE_TOO_MANY_DELETED when the
 * list would hold more than ND_STORE_MAX_DELETED_LIST sequences; when nothing is deleted it sets
 * *seqs = NULL, *n = 0 and g->done, and the caller skips the walk and end. */
typedef struct nd_store_gaps {
    uint64_t *v;
    size_t k;
    uint64_t next; /* the next sequence not yet accounted for */
    uint64_t last;
    bool done;
} nd_store_gaps_t;

ND_MUST_CHECK nd_err_t nd_store_gaps_begin(nd_store_gaps_t *g, uint64_t first_seq,
                                           uint64_t last_seq, uint64_t msgs, uint64_t **seqs,
                                           size_t *n);

static inline void
nd_store_gaps_live(nd_store_gaps_t *g, uint64_t seq)
{
    while (g->next < seq)
        g->v[g->k++] = g->next++;
    g->next = seq + 1;
}

void nd_store_gaps_end(nd_store_gaps_t *g, uint64_t **seqs, size_t *n);

/* A store's walk over its subject index: calls cb with the exact state of each subject that
 * matches filter (every subject when all), in no particular order, until cb returns false. The
 * filter was checked by the caller. cb must not change the store. */
typedef void (*nd_store_subj_walk_fn)(nd_store_t *st, const char *filter, size_t fl, bool all,
                                      nd_store_subj_cb cb, void *arg);

/* The subjects_state op over walk. */
void nd_store_subjects_state(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter,
                             size_t fl, nd_store_subj_cb cb, void *arg);

/* The num_pending op: st's filtered_state, or with lps the number of matching subjects whose
 * last message is at or after start. */
uint64_t nd_store_num_pending(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter,
                              size_t fl, uint64_t start, bool lps);

/* Adds the totals of the subjects matching a checked filter into out (msgs summed, the lowest
 * first_seq, the highest last_seq; a zero first_seq in out counts as unset). */
void nd_store_subj_sum(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter, size_t fl,
                       nd_store_subj_state_t *out);

/* The newest last sequence of the subjects matching a checked filter, 0 when none. */
uint64_t nd_store_subj_newest(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter,
                              size_t fl);

#endif
