/* Epoch-based reclamation (Concurrency Kit's ck_epoch), the only way natsd code touches it.
 *
 * One record per thread that reads (every worker, plus external ctxs), never per actor. Rules:
 *  - a read section opens and closes in the same function, never spans a send or a blocking
 *    call; pointers read inside are used inside (or a reference is taken before leaving);
 *  - writers never change a reader-visible node in place: they copy, publish the copy with a
 *    release store, and retire the old node with nd_epoch_retire();
 *  - workers poll after each turn; retired nodes are freed on the retiring thread.
 * Under TSan, exit performs a release and each deferred destructor an acquire on one sync
 * address, because ck's own fences are inline assembly that TSan cannot see.
 */
#ifndef NATSD_EPOCH_H
#define NATSD_EPOCH_H

#include <ck_epoch.h>

#include "actors/ctx.h"

typedef struct nd_epoch nd_epoch_t;

/* Embed in every object that is retired; fn frees the containing object. */
typedef struct nd_epoch_entry nd_epoch_entry_t;
struct nd_epoch_entry {
    ck_epoch_entry_t ck;
    void (*fn)(nd_epoch_entry_t *e);
};

#define ND_EPOCH_CONTAINER(ptr, T, member) ((T *)((char *)(ptr) - offsetof(T, member)))

nd_epoch_t *nd_epoch_new(void);
/* Runs every pending destructor and frees all records. Ctx: only when no thread reads any more. */
void nd_epoch_free(nd_epoch_t *ep);
/* A new record for the calling thread. Records live until nd_epoch_free. */
nd_epoch_rec_t *nd_epoch_register(nd_epoch_t *ep);
/* Runs the calling thread's pending destructors after waiting for every reader. Ctx: the record's
 * thread, outside any section; it blocks, so never on a worker's hot path. */
void nd_epoch_barrier(nd_epoch_rec_t *rec);

void nd_epoch_tsan_release(void);
void nd_epoch_tsan_acquire(void);

static inline void
nd_epoch_enter(nd_ctx_t *ctx)
{
    ck_epoch_begin(ctx->epoch, NULL);
}

static inline void
nd_epoch_exit(nd_ctx_t *ctx)
{
#ifdef ND_TSAN
    nd_epoch_tsan_release();
#endif
    ck_epoch_end(ctx->epoch, NULL);
}

/* Defers e->fn(e) until no reader can still see the object. Ctx: the thread owning ctx. */
void nd_epoch_retire(nd_ctx_t *ctx, nd_epoch_entry_t *e, void (*fn)(nd_epoch_entry_t *e));

/* Runs destructors whose grace period has passed. Cheap when nothing is pending. */
static inline void
nd_epoch_poll(nd_ctx_t *ctx)
{
    if (ctx->epoch->n_pending != 0)
        ck_epoch_poll(ctx->epoch);
}

#endif
