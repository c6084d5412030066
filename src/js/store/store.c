/* The parts of the store interface (natsd/store.h) that do not depend on the store kind: error
 * texts, message buffers, the per-thread errno of the last I/O error, and restoring a snapshot. */
#include "js/store/store.h"

#include <stdlib.h>

#include "js/store/store_snapshot.h"

/* While the file store was being written it was not in every build: the reference is weak then,
 * and restoring into a directory fails cleanly. (A weak reference alone would not pull the file
 * store out of the static library, hence the test for its source.) */
#if !__has_include("filestore.c")
#pragma weak nd_filestore_open
#endif

/* The texts are nats-server's (server/store.go) where it has one. */
const char *
nd_store_strerror(nd_store_err_t e)
{
    switch (e) {
    case ND_STORE_OK:
        return "ok";
    case ND_STORE_ERR_NOT_FOUND:
        return "no message found";
    case ND_STORE_ERR_EOF:
        return "stream store EOF";
    case ND_STORE_ERR_CLOSED:
        return "store is closed";
    case ND_STORE_ERR_MAX_MSGS:
        return "maximum messages exceeded";
    case ND_STORE_ERR_MAX_BYTES:
        return "maximum bytes exceeded";
    case ND_STORE_ERR_MAX_PER_SUBJECT:
        return "maximum messages per subject exceeded";
    case ND_STORE_ERR_MSG_TOO_BIG:
        return "message size exceeds maximum allowed";
    case ND_STORE_ERR_BAD_SEQUENCE:
        return "invalid sequence";
    case ND_STORE_ERR_BAD_ARG:
        return "invalid argument";
    case ND_STORE_ERR_IO:
        return "i/o error";
    case ND_STORE_ERR_CORRUPT:
        return "corrupt state";
    case ND_STORE_ERR_VERSION:
        return "unsupported version";
    case ND_STORE_ERR_NOMEM:
        return "out of memory";
    }
    return "unknown store error";
}

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

static _Thread_local int last_errno;

int
nd_store_last_errno(void)
{
    return last_errno;
}

nd_store_err_t
nd_store_io_error(int err)
{
    last_errno = err;
    return ND_STORE_ERR_IO;
}

nd_store_err_t
nd_store_restore(const nd_store_cfg_t *cfg, nd_store_read_fn r, void *arg, nd_store_t **out)
{
    nd_store_t *st = NULL;
    nd_store_err_t e;

    *out = NULL;
    if (cfg->dir) {
#if !__has_include("filestore.c")
        if (!nd_filestore_open)
            return ND_STORE_ERR_BAD_ARG;
#endif
        e = nd_filestore_open(cfg, &st, NULL);
    } else {
        e = nd_memstore_open(cfg, &st);
    }
    if (e != ND_STORE_OK)
        return e;
    /* Restoring into a store that already holds something would mix two histories. */
    nd_store_state_t s;
    st->ops->state(st, &s);
    if (s.msgs != 0 || s.last_seq != 0 || s.consumers != 0) {
        st->ops->close(st);
        return ND_STORE_ERR_BAD_ARG;
    }
    e = nd_store_snapshot_read(st, r, arg);
    if (e != ND_STORE_OK) {
        (void)st->ops->destroy(st);
        return e;
    }
    *out = st;
    return ND_STORE_OK;
}
