/* Subscriptions: construction, reference counting and epoch-deferred free. See natsd/sub.h. */
#include "subj/sub.h"

#include <string.h>

#include "actors/alloc.h"

/* The size the header comment promises; a field added outside the union costs every sub. */
_Static_assert(sizeof(nd_sub_t) == 96, "nd_sub_t grew");

static char *
put_string(char *dst, const char *src, size_t n)
{
    if (n != 0)
        memcpy(dst, src, n);
    dst[n] = '\0';
    return dst + n + 1;
}

nd_sub_t *
nd_sub_new(nd_ctx_t *ctx, nd_actor_t *conn, const char *subject, size_t subject_len,
           const char *queue, size_t queue_len, const char *sid, size_t sid_len)
{
    (void)ctx;
    if (queue == NULL)
        queue_len = 0;
    if (subject_len > UINT32_MAX || queue_len > UINT32_MAX || sid_len > UINT32_MAX)
        nd_fatal("nd_sub_new: string too long");
    size_t extra = subject_len + 1 + sid_len + 1 + (queue_len != 0 ? queue_len + 1 : 0);
    nd_sub_t *sub = nd_xcalloc(1, sizeof(*sub) + extra);
    char *p = put_string(sub->subject, subject, subject_len);
    sub->sid = p;
    p = put_string(p, sid, sid_len);
    if (queue_len != 0) {
        sub->queue = p;
        put_string(p, queue, queue_len);
    }
    sub->subject_len = (uint32_t)subject_len;
    sub->queue_len = (uint32_t)queue_len;
    sub->sid_len = (uint32_t)sid_len;
    sub->magic = ND_SUB_MAGIC;
    atomic_init(&sub->delivered, 0);
    atomic_init(&sub->max_msgs, 0);
    atomic_init(&sub->cancelled, false);
    atomic_init(&sub->qweight, 1);
    atomic_init(&sub->refs, 1);
    sub->conn = conn;
    if (conn != NULL)
        nd_actor_ref(conn);
    return sub;
}

void
nd_sub_ref(nd_sub_t *sub)
{
    atomic_fetch_add_explicit(&sub->refs, 1, memory_order_relaxed);
}

/* Runs after the grace period, on the thread that retired the sub (or at epoch teardown). */
static void
sub_free(nd_epoch_entry_t *e)
{
    nd_sub_t *sub = ND_EPOCH_CONTAINER(e, nd_sub_t, retire);
    /* The retiring thread's ctx outlives its pending destructors: workers' ctxs live until the
     * pool is freed (after nd_epoch_free ran them), and an external ctx runs its own destructors
     * in nd_ctx_external_free() before it is freed. */
    nd_ctx_t *ctx = sub->retire_ctx;
    nd_actor_t *conn = sub->conn;
    sub->magic = ND_SUB_DEAD;
    nd_free(sub);
    if (conn != NULL)
        nd_actor_unref(ctx, conn);
}

void
nd_sub_unref(nd_ctx_t *ctx, nd_sub_t *sub)
{
    /* acq_rel: the release orders this holder's uses before the retire; the acquire on the last
     * decrement makes every other holder's uses happen before it. */
    if (atomic_fetch_sub_explicit(&sub->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* No holder is left, so the holders-only fields are dead: the retirement record that shares
     * their memory may be written now. */
    sub->retire_ctx = ctx;
    nd_epoch_retire(ctx, &sub->retire, sub_free);
}
