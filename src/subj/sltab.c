/* SPMC open-addressing hash set for the sublist; the algorithm and invariants are in sltab.h. */
#include "subj/sltab.h"

#include <string.h>

#include "actors/alloc.h"

/* A node with one child gets a 2-slot table: half full, so a miss meets NULL within two probes,
 * and 32 bytes instead of 48 for the most common interior node. */
#define MIN_CAP 2u

/* What nd_sl_pend_flush hands to the epoch: the blocks of one change. */
typedef struct pend_batch {
    nd_epoch_entry_t retire;
    uint32_t n;
    void *ptrs[];
} pend_batch_t;

void
nd_sl_pend_add(nd_sl_pend_t *p, void *ptr)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->ptrs = nd_xrealloc(p->ptrs, p->cap * sizeof(*p->ptrs));
    }
    p->ptrs[p->n++] = ptr;
}

static void
pend_batch_free_cb(nd_epoch_entry_t *e)
{
    pend_batch_t *b = ND_EPOCH_CONTAINER(e, pend_batch_t, retire);
    for (uint32_t i = 0; i < b->n; i++)
        nd_free(b->ptrs[i]);
    nd_free(b);
}

void
nd_sl_pend_flush(nd_ctx_t *ctx, nd_sl_pend_t *p)
{
    if (p->n == 0)
        return;
    pend_batch_t *b = nd_xmalloc(sizeof(*b) + p->n * sizeof(b->ptrs[0]));
    b->n = p->n;
    memcpy(b->ptrs, p->ptrs, p->n * sizeof(b->ptrs[0]));
    nd_epoch_retire(ctx, &b->retire, pend_batch_free_cb);
    p->n = 0;
    /* A teardown or a big batch removal may have grown the list a lot: give that back. */
    if (p->cap > 1024) {
        nd_free(p->ptrs);
        p->ptrs = NULL;
        p->cap = 0;
    }
}

void
nd_sl_pend_fini(nd_sl_pend_t *p)
{
    if (p->n != 0)
        nd_fatal("sublist: %u retirements were never flushed", p->n);
    nd_free(p->ptrs);
    p->ptrs = NULL;
    p->cap = 0;
}

static nd_sl_tab_t *
tab_new(uint32_t cap)
{
    nd_sl_tab_t *t = nd_xcalloc(1, sizeof(*t) + (size_t)cap * sizeof(t->slot[0]));
    t->mask = cap - 1;
    return t;
}

/* Smallest power of two >= 2 * live (and >= MIN_CAP): a fresh table starts at most half full. */
static uint32_t
cap_for(uint32_t live)
{
    uint32_t cap = MIN_CAP;
    while (cap < 2 * live)
        cap *= 2;
    return cap;
}

/* Stores k into the first free (NULL or TOMB) slot of its probe sequence; the caller guarantees
 * room. release: pairs with the readers' acquire loads of the slot, publishing k's fields. */
static void
place(nd_sl_tab_t *t, nd_sl_key_t *k)
{
    uint32_t i = k->hash & t->mask;
    for (;;) {
        nd_sl_key_t *cur = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (cur == NULL || cur == ND_SL_TAB_TOMB) {
            if (cur == NULL)
                t->used++;
            t->live++;
            atomic_store_explicit(&t->slot[i], k, memory_order_release);
            return;
        }
        i = (i + 1) & t->mask;
    }
}

/* Builds a new table of `cap` slots holding old's live objects (plus room for one more). The new
 * table is private until the caller publishes it. */
static nd_sl_tab_t *
rebuild(const nd_sl_tab_t *old, uint32_t cap)
{
    nd_sl_tab_t *t = tab_new(cap);
    if (old != NULL) {
        for (uint32_t i = 0; i <= old->mask; i++) {
            nd_sl_key_t *k = atomic_load_explicit(&old->slot[i], memory_order_relaxed);
            if (k != NULL && k != ND_SL_TAB_TOMB)
                place(t, k);
        }
    }
    return t;
}

static void
replace(_Atomic(nd_sl_tab_t *) *ref, nd_sl_tab_t *old, nd_sl_tab_t *t, nd_sl_pend_t *pend)
{
    /* release: pairs with the readers' acquire load of *ref, publishing the filled table. */
    atomic_store_explicit(ref, t, memory_order_release);
    if (old != NULL)
        nd_sl_pend_add(pend, old);
}

void
nd_sl_tab_put(_Atomic(nd_sl_tab_t *) *ref, nd_sl_key_t *k, nd_sl_pend_t *pend)
{
    nd_sl_tab_t *t = atomic_load_explicit(ref, memory_order_relaxed);
    /* Keep used/capacity <= 3/4 after this insert (a reused tombstone would not even add one). */
    if (t == NULL || (t->used + 1) * 4 > (t->mask + 1) * 3) {
        nd_sl_tab_t *nt = rebuild(t, cap_for(nd_sl_tab_live(t) + 1));
        place(nt, k);
        replace(ref, t, nt, pend);
        return;
    }
    place(t, k);
}

void
nd_sl_tab_del(_Atomic(nd_sl_tab_t *) *ref, nd_sl_key_t *k, nd_sl_pend_t *pend)
{
    nd_sl_tab_t *t = atomic_load_explicit(ref, memory_order_relaxed);
    if (t == NULL)
        nd_fatal("sublist: deleting from an empty table");
    uint32_t i = k->hash & t->mask;
    for (;;) {
        nd_sl_key_t *cur = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (cur == NULL)
            nd_fatal("sublist: deleting a key that is not in its table");
        if (cur == k)
            break;
        i = (i + 1) & t->mask;
    }
    /* relaxed: a reader that sees TOMB does not dereference it. */
    atomic_store_explicit(&t->slot[i], ND_SL_TAB_TOMB, memory_order_relaxed);
    t->live--;
    if (t->live == 0) {
        replace(ref, t, NULL, pend);
        return;
    }
    /* Shrink a table that is mostly empty, so memory follows the live count down. */
    uint32_t cap = t->mask + 1;
    if (cap > 64 && t->live * 8 < cap)
        replace(ref, t, rebuild(t, cap_for(t->live)), pend);
}
