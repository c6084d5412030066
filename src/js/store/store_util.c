/* The stream-store semantics shared by the memory and the file store (store_util.h). The rules
 * follow nats-server's memstore.go and filestore.go (storeMsg's discard-new checks, PurgeEx,
 * SubjectsState, NumPending with lastPerSubject); natsd/store.h states them per op. */
#include "js/store/store_util.h"

#include <stdlib.h>
#include <time.h>

#include "actors/alloc.h"
#include "subj/subject.h"

int64_t
nd_store_now(const nd_store_cfg_t *cfg)
{
    if (cfg->now)
        return cfg->now(cfg->now_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

nd_err_t
nd_store_check_msg(const nd_store_cfg_t *cfg, const char *subj, size_t sl, const void *hdr,
                   size_t hl, const void *data, size_t dl, uint64_t max_field)
{
    if (!subj || sl == 0 || sl > UINT16_MAX || !nd_subj_valid_pub(subj, sl) || hl > max_field ||
        dl > max_field || (hl && !hdr) || (dl && !data))
        return ND_ERR_STORE_BAD_ARG;
    if (cfg->max_msg_size > 0 && hl + dl > (uint64_t)cfg->max_msg_size)
        return ND_ERR_STORE_MSG_TOO_BIG;
    return ND_OK;
}

nd_err_t
nd_store_admit_new(const nd_store_cfg_t *cfg, uint64_t msgs, uint64_t bytes, uint64_t size,
                   uint64_t subj_msgs, bool *if_oldest_fits)
{
    *if_oldest_fits = false;
    if (cfg->discard != ND_DISCARD_NEW)
        return ND_OK;
    bool at_subj_limit =
        cfg->max_msgs_per_subject > 0 && subj_msgs >= (uint64_t)cfg->max_msgs_per_subject;
    if (at_subj_limit && cfg->discard_new_per_subject)
        return ND_ERR_STORE_MAX_PER_SUBJECT;
    /* At its subject limit the message replaces that subject's oldest, so max_msgs is not
     * exceeded; for max_bytes the replaced message must be at least as large. */
    if (cfg->max_msgs > 0 && msgs >= (uint64_t)cfg->max_msgs && !at_subj_limit)
        return ND_ERR_STORE_MAX_MSGS;
    if (cfg->max_bytes > 0 && bytes + size >= (uint64_t)cfg->max_bytes) {
        if (!at_subj_limit)
            return ND_ERR_STORE_MAX_BYTES;
        *if_oldest_fits = true;
    }
    return ND_OK;
}

bool
nd_store_over_limits(const nd_store_cfg_t *cfg, uint64_t msgs, uint64_t bytes)
{
    return (cfg->max_msgs > 0 && msgs > (uint64_t)cfg->max_msgs) ||
           (cfg->max_bytes > 0 && bytes > (uint64_t)cfg->max_bytes);
}

nd_store_purge_kind_t
nd_store_purge_all_plan(uint64_t up_to, uint64_t keep, uint64_t msgs, uint64_t last_seq,
                        uint64_t *below)
{
    if (keep == 0 && up_to == 0)
        return ND_STORE_PURGE_ALL;
    if (up_to > 1) {
        *below = up_to;
        return ND_STORE_PURGE_COMPACT;
    }
    if (keep > 0 && keep < msgs) {
        *below = last_seq - keep + 1;
        return ND_STORE_PURGE_COMPACT;
    }
    return ND_STORE_PURGE_NOTHING;
}

nd_err_t
nd_store_purge_filtered_plan(nd_store_t *st, const char *filter, size_t fl, uint64_t up_to,
                             uint64_t keep, uint64_t *first, uint64_t *last, uint64_t *max)
{
    *first = *last = *max = 0;
    if (!nd_subj_valid_sub(filter, fl))
        return ND_ERR_STORE_BAD_ARG;
    nd_store_subj_state_t ss;
    st->ops->filtered_state(st, filter, fl, 0, &ss);
    if (ss.msgs == 0 || keep >= ss.msgs)
        return ND_OK;
    /* keep counts over all the matching messages together, so the oldest msgs - keep go. */
    *max = ss.msgs - keep;
    *first = ss.first_seq;
    *last = up_to > 1 ? up_to - 1 : ss.last_seq;
    if (up_to == 1)
        *last = 0; /* nothing is below 1 */
    return ND_OK;
}

nd_err_t
nd_store_gaps_begin(nd_store_gaps_t *g, uint64_t first_seq, uint64_t last_seq, uint64_t msgs,
                    uint64_t **seqs, size_t *n)
{
    *g = (nd_store_gaps_t){.next = first_seq, .last = last_seq, .done = true};
    *seqs = NULL;
    *n = 0;
    uint64_t nd = nd_store_num_deleted(first_seq, last_seq, msgs);
    if (nd == 0)
        return ND_OK;
    /* A replicated or restored sequence can open a gap of any size; refuse to list one that
     * would not fit in memory rather than abort in the allocator. */
    if (nd > ND_STORE_MAX_DELETED_LIST)
        return ND_ERR_STORE_TOO_MANY_DELETED;
    g->v = nd_xmalloc((size_t)nd * sizeof(*g->v));
    g->done = false;
    return ND_OK;
}

void
nd_store_gaps_end(nd_store_gaps_t *g, uint64_t **seqs, size_t *n)
{
    while (g->next <= g->last)
        g->v[g->k++] = g->next++;
    *seqs = g->v;
    *n = g->k;
}

void
nd_store_subjects_state(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter, size_t fl,
                        nd_store_subj_cb cb, void *arg)
{
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return;
    walk(st, filter, fl, all, cb, arg);
}

typedef struct pending_arg {
    uint64_t start, count;
} pending_arg_t;

static bool
count_pending(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    pending_arg_t *p = arg;
    if (ss->last_seq >= p->start)
        p->count++;
    return true;
}

uint64_t
nd_store_num_pending(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter, size_t fl,
                     uint64_t start, bool lps)
{
    if (!lps) {
        nd_store_subj_state_t ss;
        st->ops->filtered_state(st, filter, fl, start, &ss);
        return ss.msgs;
    }
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return 0;
    pending_arg_t p = {.start = start};
    walk(st, filter, fl, all, count_pending, &p);
    return p.count;
}

static bool
add_subj(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    nd_store_subj_state_t *out = arg;
    out->msgs += ss->msgs;
    if (out->first_seq == 0 || ss->first_seq < out->first_seq)
        out->first_seq = ss->first_seq;
    if (ss->last_seq > out->last_seq)
        out->last_seq = ss->last_seq;
    return true;
}

void
nd_store_subj_sum(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter, size_t fl,
                  nd_store_subj_state_t *out)
{
    walk(st, filter, fl, false, add_subj, out);
}

static bool
newest_subj(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    uint64_t *best = arg;
    if (ss->last_seq > *best)
        *best = ss->last_seq;
    return true;
}

uint64_t
nd_store_subj_newest(nd_store_t *st, nd_store_subj_walk_fn walk, const char *filter, size_t fl)
{
    uint64_t best = 0;
    walk(st, filter, fl, false, newest_subj, &best);
    return best;
}
