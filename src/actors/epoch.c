/* Epoch-based reclamation over ck_epoch; see src/actors/epoch.h for the rules. */
#include "actors/epoch.h"

#include <stddef.h>
#include <stdlib.h>

#include "actors/alloc.h"

#ifdef ND_TSAN
#include <sanitizer/tsan_interface.h>
#endif

struct nd_epoch {
    ck_epoch_t ck;
};

#ifdef ND_TSAN
/* One address for all TSan release/acquire annotations. */
static char tsan_sync;
#endif

void
nd_epoch_tsan_release(void)
{
#ifdef ND_TSAN
    __tsan_release(&tsan_sync);
#endif
}

void
nd_epoch_tsan_acquire(void)
{
#ifdef ND_TSAN
    __tsan_acquire(&tsan_sync);
#endif
}

nd_epoch_t *
nd_epoch_new(void)
{
    nd_epoch_t *ep = nd_xaligned(sizeof(*ep));
    ck_epoch_init(&ep->ck);
    return ep;
}

nd_epoch_rec_t *
nd_epoch_register(nd_epoch_t *ep)
{
    nd_epoch_rec_t *rec = nd_xaligned(sizeof(*rec));
    ck_epoch_register(&ep->ck, rec, NULL);
    return rec;
}

static void
trampoline(ck_epoch_entry_t *ck)
{
    nd_epoch_entry_t *e = (nd_epoch_entry_t *)ck;
    /* acquire: pairs with the release of every reader's exit, which TSan cannot infer. */
    nd_epoch_tsan_acquire();
    e->fn(e);
}

void
nd_epoch_retire(nd_ctx_t *ctx, nd_epoch_entry_t *e, void (*fn)(nd_epoch_entry_t *e))
{
    e->fn = fn;
    ck_epoch_call(ctx->epoch, &e->ck, trampoline);
}

void
nd_epoch_barrier(nd_epoch_rec_t *rec)
{
    ck_epoch_barrier(rec);
    /* acquire: every section that began before the barrier has ended, and each exit released
     * (nd_epoch_exit); TSan cannot see that through ck's fences. */
    nd_epoch_tsan_acquire();
}

void
nd_epoch_free(nd_epoch_t *ep)
{
    ck_stack_entry_t *cursor = CK_STACK_FIRST(&ep->ck.records);
    /* No thread reads any more: every pending destructor may run now, then the records go. */
    while (cursor != NULL) {
        nd_epoch_rec_t *rec = (nd_epoch_rec_t *)((char *)cursor - offsetof(nd_epoch_rec_t,
                                                                          record_next));
        ck_epoch_reclaim(rec);
        cursor = CK_STACK_NEXT(cursor);
    }
    cursor = CK_STACK_FIRST(&ep->ck.records);
    while (cursor != NULL) {
        ck_stack_entry_t *next = CK_STACK_NEXT(cursor);
        free((char *)cursor - offsetof(nd_epoch_rec_t, record_next));
        cursor = next;
    }
    free(ep);
}
