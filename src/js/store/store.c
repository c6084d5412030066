/* The parts of the store interface (natsd/store.h) that do not depend on the store kind: error
 * recording, message buffers, and restoring a snapshot. */
#include "js/store/store.h"

#include <stdlib.h>

#include "js/store/store_snapshot.h"

/* While the file store was being written it was not in every build: the reference is weak then,
 * and restoring into a directory fails cleanly. (A weak reference alone would not pull the file
 * store out of the static library, hence the test for its source.) */
#if !__has_include("filestore.c")
#pragma weak nd_filestore_open
#endif

void
nd_store_msg_free(nd_store_msg_t *m)
{
    if (!m)
        return;
    free(m->buf);
    m->buf = NULL;
    m->cap = 0;
    m->subj = NULL;
    m->hdr = NULL;
    m->data = NULL;
    m->subj_len = m->hdr_len = m->data_len = 0;
}

uint64_t
nd_store_msg_size(size_t subj_len, size_t hdr_len, size_t data_len)
{
    return (uint64_t)subj_len + hdr_len + data_len + 16;
}

void
nd_consumer_state_free(nd_consumer_state_t *cs)
{
    if (!cs)
        return;
    free(cs->pending);
    free(cs->redelivered);
    cs->pending = NULL;
    cs->redelivered = NULL;
    cs->npending = cs->nredelivered = 0;
}

nd_err_t
nd_store_io_error(nd_store_t *st, int err)
{
    st->io_errno = err;
    return ND_ERR_STORE_IO;
}

nd_err_t
nd_store_restore(const nd_store_cfg_t *cfg, nd_store_read_fn r, void *arg, nd_store_t **out)
{
    nd_store_t *st = NULL;
    nd_err_t e;

    *out = NULL;
    if (cfg->dir) {
#if !__has_include("filestore.c")
        if (!nd_filestore_open)
            return ND_ERR_STORE_BAD_ARG;
#endif
        e = nd_filestore_open(cfg, &st, NULL);
    } else {
        e = nd_memstore_open(cfg, &st);
    }
    if (e != ND_OK)
        return e;
    /* Restoring into a store that already holds something would mix two histories. */
    nd_store_state_t s;
    st->ops->state(st, &s);
    if (s.msgs != 0 || s.last_seq != 0 || s.consumers != 0) {
        st->ops->close(st);
        return ND_ERR_STORE_BAD_ARG;
    }
    e = nd_store_snapshot_read(st, r, arg);
    if (e != ND_OK) {
        /* The restore's error is the one to report: a failed removal of the half-restored
         * store only leaves files behind. */
        nd_err_t de = st->ops->destroy(st);
        (void)de;
        return e;
    }
    *out = st;
    return ND_OK;
}
