/* An account's route interest: counts of local subscriptions by subject and queue group. See
 * subj/interest.h.
 *
 * The map is a ck_hs set (owner-only: the account actor) of entries keyed by the subject, or by
 * "subject queue" for a queue group (a space never occurs in either), as nats-server keys its
 * Account.rm. An entry lives while its count is above zero.
 */
#include "subj/interest.h"

#include <ck_hs.h>
#include <string.h>
#include <xxhash.h>

#include "actors/alloc.h"

typedef struct entry {
    uint64_t hash;
    uint32_t count;
    uint32_t slen; /* the subject's length; the queue follows after a space when qlen > 0 */
    uint32_t qlen;
    uint32_t len;
    char key[];
} entry_t;

typedef struct dump_msg {
    nd_msg_t hdr;
    nd_interest_fn fn;
    void *arg;
    bool gw; /* the gateway map */
} dump_msg_t;

void
nd_interest_attach(nd_acct_t *acct, const nd_interest_hook_t *hook)
{
    acct->ihook = hook;
}

void
nd_interest_attach_gw(nd_acct_t *acct, const nd_interest_hook_t *hook)
{
    acct->ghook = hook;
}

void
nd_interest_inherit(nd_acct_t *acct, const nd_acct_t *from)
{
    acct->ihook = from->ihook;
    acct->ghook = from->ghook;
}

static unsigned long
hs_hash(const void *obj, unsigned long seed)
{
    (void)seed;
    return (unsigned long)((const entry_t *)obj)->hash;
}

static bool
hs_cmp(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    return x->len == y->len && memcmp(x->key, y->key, x->len) == 0;
}

static ck_hs_t *
map_of(void **slot)
{
    if (*slot == NULL) {
        ck_hs_t *hs = nd_xmalloc(sizeof *hs);
        if (!ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, hs_hash, hs_cmp, &nd_ck_malloc, 64,
                        0))
            nd_fatal("account: cannot allocate the route interest map");
        *slot = hs;
    }
    return *slot;
}

typedef struct watch_msg {
    nd_msg_t hdr;
    nd_interest_watcher_t *w;
} watch_msg_t;

void
nd_interest_watch(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w)
{
    watch_msg_t *m = ND_MSG_NEW(ctx, watch_msg_t, ND_ACCT_MSG_INTEREST_WATCH);
    m->w = w;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

void
nd_interest_unwatch(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w)
{
    watch_msg_t *m = ND_MSG_NEW(ctx, watch_msg_t, ND_ACCT_MSG_INTEREST_UNWATCH);
    m->w = w;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

typedef struct dump_each {
    nd_ctx_t *ctx;
    nd_acct_t *acct;
    nd_interest_watcher_t *w;
} dump_each_t;

static void
watch_dump_one(nd_sub_t *sub, void *arg)
{
    dump_each_t *d = arg;
    if (!nd_sub_cancelled(sub))
        d->w->on_sub(d->ctx, d->acct, d->w, sub, 1);
}

void
nd_interest_on_watch(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg)
{
    nd_interest_watcher_t *w = ((watch_msg_t *)msg)->w;
    if (msg->id == ND_ACCT_MSG_INTEREST_WATCH) {
        if (acct == NULL) /* the account is gone: nothing to watch */
            return;
        w->next = acct->watchers;
        acct->watchers = w;
        dump_each_t d = {ctx, acct, w};
        nd_sl_each(&acct->sl, watch_dump_one, &d);
        w->on_dump_end(ctx, acct, w);
        return;
    }
    if (acct != NULL) {
        for (nd_interest_watcher_t **pp = (nd_interest_watcher_t **)&acct->watchers; *pp != NULL;
             pp = &(*pp)->next)
            if (*pp == w) {
                *pp = w->next;
                break;
            }
    }
    w->on_release(ctx, w);
}

/* Counts a subscription on subject (queue: NULL or its group) in the map at *slot and reports to
 * hook what a peer must hear: a plain subject at 0 -> 1 and 1 -> 0; a queue group on every change
 * (every_q) or at 0 -> 1 and 1 -> 0. */
static void
count_in(nd_ctx_t *ctx, nd_acct_t *acct, void **slot, const nd_interest_hook_t *hook,
         const char *subject, size_t slen, const char *queue_in, size_t qlen, int delta,
         bool every_q)
{
    size_t len = slen + (qlen > 0 ? qlen + 1 : 0);
    entry_t *k = nd_xmalloc(sizeof *k + len);
    memcpy(k->key, subject, slen);
    if (qlen > 0) {
        k->key[slen] = ' ';
        memcpy(k->key + slen + 1, queue_in, qlen);
    }
    k->len = (uint32_t)len;
    k->slen = (uint32_t)slen;
    k->qlen = (uint32_t)qlen;
    k->hash = XXH3_64bits(k->key, len);
    k->count = 0;
    ck_hs_t *hs = map_of(slot);
    entry_t *e = ck_hs_get(hs, (unsigned long)k->hash, k);
    if (e == NULL) {
        if (delta < 0) { /* not counted (inserted before the hook existed) */
            nd_free(k);
            return;
        }
        e = k;
        if (!ck_hs_put(hs, (unsigned long)e->hash, e))
            nd_fatal("account: cannot grow the route interest map");
    } else {
        nd_free(k);
    }
    uint32_t before = e->count;
    e->count = delta > 0 ? before + 1 : before - 1;
    uint32_t after = e->count;
    const char *queue = qlen > 0 ? e->key + slen + 1 : NULL;
    if ((qlen > 0 && every_q) || before == 0 || after == 0)
        hook->fn(ctx, acct, e->key, slen, queue, qlen,
                 qlen > 0 && every_q ? after : (after > 0), hook->arg);
    if (after == 0) {
        ck_hs_remove(hs, (unsigned long)e->hash, e);
        nd_free(e);
    }
}

static void
count_sub(nd_ctx_t *ctx, nd_acct_t *acct, void **slot, const nd_interest_hook_t *hook,
          const nd_sub_t *sub, int delta, bool every_q)
{
    count_in(ctx, acct, slot, hook, sub->subject, sub->subject_len, sub->queue,
             sub->queue != NULL ? sub->queue_len : 0, delta, every_q);
}

typedef struct shadow_msg {
    nd_msg_t hdr;
    int delta;
    uint32_t slen, qlen;
    char key[]; /* the subject, then the queue */
} shadow_msg_t;

void
nd_interest_send_shadow(nd_ctx_t *ctx, nd_acct_t *acct, const char *subject, size_t slen,
                        const char *queue, size_t qlen, int delta)
{
    shadow_msg_t *m =
        (shadow_msg_t *)nd_msg_new(ctx, sizeof *m + slen + qlen, ND_ACCT_MSG_INTEREST_SHADOW);
    m->delta = delta;
    m->slen = (uint32_t)slen;
    m->qlen = (uint32_t)qlen;
    memcpy(m->key, subject, slen);
    if (qlen > 0)
        memcpy(m->key + slen, queue, qlen);
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

void
nd_interest_on_shadow(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg)
{
    shadow_msg_t *m = (shadow_msg_t *)msg;
    if (acct == NULL || acct->ihook == NULL)
        return;
    count_in(ctx, acct, &acct->rinterest, acct->ihook, m->key, m->slen,
             m->qlen > 0 ? m->key + m->slen : NULL, m->qlen, m->delta, true);
}

void
nd_interest_count(nd_ctx_t *ctx, nd_acct_t *acct, const nd_sub_t *sub, int delta)
{
    for (nd_interest_watcher_t *w = acct->watchers; w != NULL; w = w->next)
        w->on_sub(ctx, acct, w, sub, delta);
    const nd_interest_hook_t *hook = acct->ihook;
    if (hook != NULL && (sub->origin == ND_SUB_LOCAL || sub->origin == ND_SUB_LEAF)) {
        count_sub(ctx, acct, &acct->rinterest, hook, sub, delta, true);
        if (hook->imports != NULL)
            hook->imports(ctx, acct, sub, delta, hook->arg);
    }
    /* Gateways: the whole cluster's interest, never another gateway's (one hop). */
    hook = acct->ghook;
    if (hook != NULL && sub->origin != ND_SUB_GATEWAY)
        count_sub(ctx, acct, &acct->ginterest, hook, sub, delta, false);
}

static void
send_dump(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_fn fn, void *arg, bool gw)
{
    dump_msg_t *m = ND_MSG_NEW(ctx, dump_msg_t, ND_ACCT_MSG_INTEREST_DUMP);
    m->fn = fn;
    m->arg = arg;
    m->gw = gw;
    nd_actor_send(ctx, &acct->actor, &m->hdr);
}

void
nd_interest_send_dump(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_fn fn, void *arg)
{
    send_dump(ctx, acct, fn, arg, false);
}

void
nd_interest_send_dump_gw(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_fn fn, void *arg)
{
    send_dump(ctx, acct, fn, arg, true);
}

void
nd_interest_on_dump(nd_ctx_t *ctx, nd_acct_t *acct, nd_msg_t *msg)
{
    dump_msg_t *m = (dump_msg_t *)msg;
    ck_hs_t *hs = acct == NULL ? NULL : m->gw ? acct->ginterest : acct->rinterest;
    if (hs != NULL) {
        ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
        void *obj;
        while (ck_hs_next(hs, &it, &obj)) {
            const entry_t *e = obj;
            const char *queue = e->qlen > 0 ? e->key + e->slen + 1 : NULL;
            uint32_t w = e->qlen > 0 && !m->gw ? e->count : 1;
            m->fn(ctx, acct, e->key, e->slen, queue, e->qlen, w, m->arg);
        }
    }
    m->fn(ctx, acct, NULL, 0, NULL, 0, 0, m->arg);
}

void
nd_interest_free(nd_acct_t *acct)
{
    /* Watchers are released by their unwatch (which a closed account discards into
     * nd_interest_on_watch), never here: that keeps the release to exactly one. */
    acct->watchers = NULL;
    void **slots[2] = {&acct->rinterest, &acct->ginterest};
    for (size_t i = 0; i < 2; i++) {
        ck_hs_t *hs = *slots[i];
        if (hs == NULL)
            continue;
        ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
        void *obj;
        while (ck_hs_next(hs, &it, &obj))
            nd_free(obj);
        ck_hs_destroy(hs);
        nd_free(hs);
        *slots[i] = NULL;
    }
}
