/* The locked store wrapper: see store_locked.h. Every op forwards to the inner store under the
 * mutex; with no inner store (closed), writes and loads answer ND_ERR_STORE_CLOSED and the
 * counts are those of an empty store. The consumer-state ops take an nd_cstore_t of the inner
 * store and need no lock of their own beyond the one their caller holds
 * (nd_store_locked_acquire); the ones reached through `base` (snapshots) lock too. */
#include "js/store/store_locked.h"

#include <string.h>

/* Releases l after an op, carrying the inner store's I/O error over to the wrapper, where the
 * owner reads it (nd_store_io_errno), and clearing it there so it is reported once. */
static void
unlock(nd_store_locked_t *l)
{
    if (l->inner != NULL && l->inner->io_errno != 0) {
        l->base.io_errno = l->inner->io_errno;
        l->inner->io_errno = 0;
    }
    pthread_mutex_unlock(&l->mu);
}

static nd_err_t
l_store(nd_store_t *st, const char *subj, size_t subj_len, const void *hdr, size_t hdr_len, const void *data, size_t data_len, uint64_t *seq, int64_t *ts)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->store(l->inner, subj, subj_len, hdr, hdr_len, data, data_len, seq, ts) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_store_ttl(nd_store_t *st, const char *subj, size_t subj_len, const void *hdr, size_t hdr_len, const void *data, size_t data_len, int64_t ttl, uint64_t *seq, int64_t *ts)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->store_ttl(l->inner, subj, subj_len, hdr, hdr_len, data, data_len, ttl, seq, ts) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_store_raw(nd_store_t *st, uint64_t seq, int64_t ts, const char *subj, size_t subj_len, const void *hdr, size_t hdr_len, const void *data, size_t data_len)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->store_raw(l->inner, seq, ts, subj, subj_len, hdr, hdr_len, data, data_len) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_skip(nd_store_t *st, uint64_t *seq)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->skip(l->inner, seq) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_load(nd_store_t *st, uint64_t seq, nd_store_msg_t *out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->load(l->inner, seq, out) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_load_next(nd_store_t *st, const char *filter, size_t filter_len, uint64_t start, nd_store_msg_t *out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->load_next(l->inner, filter, filter_len, start, out) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_load_last(nd_store_t *st, const char *filter, size_t filter_len, nd_store_msg_t *out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->load_last(l->inner, filter, filter_len, out) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_remove(nd_store_t *st, uint64_t seq, bool secure)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->remove(l->inner, seq, secure) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_purge(nd_store_t *st, const char *filter, size_t filter_len, uint64_t up_to, uint64_t keep, uint64_t *purged)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->purge(l->inner, filter, filter_len, up_to, keep, purged) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_compact(nd_store_t *st, uint64_t seq, uint64_t *purged)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->compact(l->inner, seq, purged) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_truncate(nd_store_t *st, uint64_t seq)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->truncate(l->inner, seq) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static void
l_state(nd_store_t *st, nd_store_state_t *out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    if (l->inner != NULL)
        l->inner->ops->state(l->inner, out);
    else
        *out = (nd_store_state_t){.first_seq = 1};
    unlock(l);
}

static nd_err_t
l_deleted(nd_store_t *st, uint64_t **seqs, size_t *n)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->deleted(l->inner, seqs, n) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static void
l_filtered_state(nd_store_t *st, const char *filter, size_t filter_len, uint64_t start, nd_store_subj_state_t *out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    if (l->inner != NULL)
        l->inner->ops->filtered_state(l->inner, filter, filter_len, start, out);
    else
        *out = (nd_store_subj_state_t){0};
    unlock(l);
}

static void
l_subjects_state(nd_store_t *st, const char *filter, size_t filter_len, nd_store_subj_cb cb, void *arg)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    if (l->inner != NULL)
        l->inner->ops->subjects_state(l->inner, filter, filter_len, cb, arg);
    unlock(l);
}

static uint64_t
l_num_pending(nd_store_t *st, const char *filter, size_t filter_len, uint64_t start, bool last_per_subject)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    uint64_t r = l->inner != NULL ? l->inner->ops->num_pending(l->inner, filter, filter_len, start, last_per_subject) : 0;
    unlock(l);
    return r;
}

static nd_err_t
l_update_cfg(nd_store_t *st, const nd_store_cfg_t *cfg)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->update_cfg(l->inner, cfg) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static int64_t
l_tick(nd_store_t *st, int64_t now)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    int64_t r = l->inner != NULL ? l->inner->ops->tick(l->inner, now) : 0;
    unlock(l);
    return r;
}

static nd_err_t
l_sync(nd_store_t *st)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->sync(l->inner) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_flush(nd_store_t *st)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->flush(l->inner) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_snapshot(nd_store_t *st, nd_store_write_fn w, void *arg)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->snapshot(l->inner, w, arg) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_consumer_open(nd_store_t *st, const char *name, nd_cstore_t **out)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->consumer_open(l->inner, name, out) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static nd_err_t
l_consumer_list(nd_store_t *st, char ***names, size_t *n)
{
    nd_store_locked_t *l = (nd_store_locked_t *)st;
    pthread_mutex_lock(&l->mu);
    nd_err_t r = l->inner != NULL ? l->inner->ops->consumer_list(l->inner, names, n) : ND_ERR_STORE_CLOSED;
    unlock(l);
    return r;
}

static void
close_inner(nd_store_locked_t *l, bool destroy, nd_err_t *r)
{
    pthread_mutex_lock(&l->mu);
    nd_store_t *in = l->inner;
    l->inner = NULL;
    l->gen++;
    if (in != NULL) {
        if (destroy) /* both free the store */
            *r = in->ops->destroy(in);
        else
            in->ops->close(in);
    }
    pthread_mutex_unlock(&l->mu);
}

static void
l_close(nd_store_t *st)
{
    nd_err_t r = ND_OK;
    close_inner((nd_store_locked_t *)st, false, &r);
}

static nd_err_t
l_destroy(nd_store_t *st)
{
    nd_err_t r = ND_OK;
    close_inner((nd_store_locked_t *)st, true, &r);
    return r;
}

static const nd_store_ops_t locked_ops = {
    .store = l_store, .store_ttl = l_store_ttl, .store_raw = l_store_raw, .skip = l_skip,
    .load = l_load, .load_next = l_load_next, .load_last = l_load_last, .remove = l_remove,
    .purge = l_purge, .compact = l_compact, .truncate = l_truncate, .state = l_state,
    .deleted = l_deleted, .filtered_state = l_filtered_state,
    .subjects_state = l_subjects_state, .num_pending = l_num_pending,
    .update_cfg = l_update_cfg, .tick = l_tick, .sync = l_sync, .flush = l_flush,
    .snapshot = l_snapshot, .consumer_open = l_consumer_open,
    .consumer_list = l_consumer_list, .close = l_close, .destroy = l_destroy,
};

void
nd_store_locked_init(nd_store_locked_t *l)
{
    memset(l, 0, sizeof *l);
    l->ops = locked_ops;
    l->base.ops = &l->ops;
    /* Recursive: an op's callback may call the store again (subjects_state's callback loads a
     * message for a direct get's multi_last). */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mu, &a);
    pthread_mutexattr_destroy(&a);
}

void
nd_store_locked_fini(nd_store_locked_t *l)
{
    pthread_mutex_destroy(&l->mu);
}

nd_store_t *
nd_store_locked_set(nd_store_locked_t *l, nd_store_t *inner)
{
    pthread_mutex_lock(&l->mu);
    l->inner = inner;
    l->gen++;
    l->base.io_errno = 0;
    /* The handles consumer_open returns belong to the inner store: their ops are its own (the
     * caller holds the lock through nd_store_locked_acquire, or a snapshot's op holds it). */
    l->ops.consumer_update = inner->ops->consumer_update;
    l->ops.consumer_state = inner->ops->consumer_state;
    l->ops.consumer_close = inner->ops->consumer_close;
    l->ops.consumer_delete = inner->ops->consumer_delete;
    pthread_mutex_unlock(&l->mu);
    return &l->base;
}

nd_store_t *
nd_store_locked_acquire(nd_store_locked_t *l)
{
    pthread_mutex_lock(&l->mu);
    return l->inner;
}

void
nd_store_locked_release(nd_store_locked_t *l)
{
    unlock(l);
}
