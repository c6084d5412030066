/* The per-connection L1 match cache (see src/subj/slcache.h).
 *
 * Structure: nsets * 4 slots of entry pointers, nsets a power of two growing from
 * ND_SLCACHE_MIN_SETS to ND_SLCACHE_MAX / 4 as the cache fills (so an idle connection costs a few
 * dozen bytes, a busy one at most 1024 entries). An entry holds the subject, its hash and a copy
 * of the match result. The copy's arrays use the result's own inline buffers when they fit (the
 * common case) and the tail of the entry's allocation otherwise, so one entry is one allocation,
 * reused in place when the entry is refreshed or evicted.
 *
 * Why a cached result's pointers are safe inside the section that re-checked the generation.
 * A result points at vectors and queue-group names inside the sublist, which the writer may unlink
 * and free later. The writer makes every change in this order (sublist.c, commit()):
 *   (1) unlink or replace objects, (2) increment the generation (release), (3) nd_epoch_retire
 *   what was unlinked.
 * nd_sl_match reads the generation (acquire) *before* walking, and the entry records that value
 * g. Claim: if a later epoch section S loads the generation and finds g, no object O referenced by
 * the entry can be freed before S exits.
 *  - O was reachable during the walk. Had the change C that unlinks O bumped the generation to a
 *    value <= g, the walk's acquire load that returned g would have synchronised with C's release
 *    increment (increments form one release sequence), so the walk would have seen O unlinked and
 *    could not have reached it. So C's bump writes a value > g, and O is retired after that bump.
 *  - S loaded g, so it did not see C's bump. ck_epoch frees O only after the retiring thread, past
 *    a full fence that follows the bump, has seen every record inactive or in a later epoch. S
 *    marked itself active and issued a full fence (ck_epoch_begin) before loading the generation;
 *    if that had happened after the scan, S's load would have returned C's bump or later (with a
 *    full fence on both sides, both loads cannot miss the other side's store). So S was active
 *    before O's grace period could end, and O stays allocated until S exits.
 *  - Changes that free nothing (an append into spare capacity, a slot set to NULL) bump the
 *    generation too, so an entry is never used after any change at all, and one racing with the
 *    walk itself made the generation > g before the next lookup can compare it.
 * Hence: enter -> load generation -> compare -> use -> exit. The check must be repeated in each
 * new section; a result validated in an earlier section proves nothing about the next one.
 * The entries themselves are owned by the cache (one connection), never shared.
 */
#include "subj/slcache.h"

#include <string.h>

#include "actors/alloc.h"
#include "subj/sltab.h"

#define MAX_SETS (ND_SLCACHE_MAX / ND_SLCACHE_WAYS)

struct nd_slcache_entry {
    nd_sl_result_t res; /* read-only copy; arrays point at its inline buffers or into data[] */
    uint32_t hash;
    uint32_t len;
    size_t size; /* bytes allocated for the whole entry */
    char data[]; /* the subject, then (8-byte aligned) arrays that did not fit inline */
};

void
nd_slcache_init(nd_slcache_t *c)
{
    memset(c, 0, sizeof(*c));
}

void
nd_slcache_clear(nd_slcache_t *c)
{
    if (c->slots != NULL) {
        for (uint32_t i = 0; i < c->nsets * ND_SLCACHE_WAYS; i++)
            nd_free(c->slots[i]);
        nd_free(c->slots);
    }
    c->slots = NULL;
    c->nsets = 0;
    c->count = 0;
}

void
nd_slcache_fini(nd_slcache_t *c)
{
    nd_slcache_clear(c);
    c->sl = NULL;
}

uint32_t
nd_slcache_hash(const char *s, size_t len)
{
    return nd_sl_hash_bytes(s, len);
}

static inline nd_slcache_entry_t **
find(nd_slcache_t *c, const char *s, size_t len, uint32_t hash)
{
    if (c->slots == NULL)
        return NULL;
    nd_slcache_entry_t **set = &c->slots[(hash & (c->nsets - 1)) * ND_SLCACHE_WAYS];
    for (int w = 0; w < ND_SLCACHE_WAYS; w++) {
        nd_slcache_entry_t *e = set[w];
        if (e != NULL && e->hash == hash && e->len == len && nd_sl_bytes_eq(e->data, s, len))
            return &set[w];
    }
    return NULL;
}

const nd_sl_result_t *
nd_slcache_lookup(nd_slcache_t *c, uint64_t gen, const char *s, size_t len, uint32_t hash)
{
    nd_slcache_entry_t **slot = find(c, s, len, hash);
    if (slot == NULL || (*slot)->res.gen != gen)
        return NULL;
    return &(*slot)->res;
}

/* Places e into the set for its hash, in a free way if any; returns the entry it displaced
 * (to be freed) or NULL. */
static nd_slcache_entry_t *
place(nd_slcache_entry_t **slots, uint32_t nsets, nd_slcache_entry_t *e)
{
    nd_slcache_entry_t **set = &slots[(e->hash & (nsets - 1)) * ND_SLCACHE_WAYS];
    for (int w = 0; w < ND_SLCACHE_WAYS; w++) {
        if (set[w] == NULL) {
            set[w] = e;
            return NULL;
        }
    }
    return e;
}

static void
grow(nd_slcache_t *c)
{
    uint32_t nsets = c->nsets ? c->nsets * 2 : ND_SLCACHE_MIN_SETS;
    nd_slcache_entry_t **slots = nd_xcalloc((size_t)nsets * ND_SLCACHE_WAYS, sizeof(*slots));
    for (uint32_t i = 0; i < c->nsets * ND_SLCACHE_WAYS; i++) {
        nd_slcache_entry_t *e = c->slots[i];
        if (e != NULL && place(slots, nsets, e) != NULL) {
            nd_free(e); /* its new set is full: drop it */
            c->count--;
        }
    }
    nd_free(c->slots);
    c->slots = slots;
    c->nsets = nsets;
}

/* Chooses the slot for a new entry: a free way, else a stale one, else round robin. */
static nd_slcache_entry_t **
victim(nd_slcache_t *c, uint32_t hash, uint64_t gen)
{
    if (c->slots == NULL ||
        (c->count + 1 > c->nsets * ND_SLCACHE_WAYS * 3 / 4 && c->nsets < MAX_SETS))
        grow(c);
    nd_slcache_entry_t **set = &c->slots[(hash & (c->nsets - 1)) * ND_SLCACHE_WAYS];
    for (int w = 0; w < ND_SLCACHE_WAYS; w++)
        if (set[w] == NULL)
            return &set[w];
    for (int w = 0; w < ND_SLCACHE_WAYS; w++)
        if (set[w]->res.gen != gen)
            return &set[w];
    return &set[c->clock++ % ND_SLCACHE_WAYS];
}

static size_t
align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Copies r into a new or reused entry at *slot. */
static nd_slcache_entry_t *
fill(nd_slcache_t *c, nd_slcache_entry_t **slot, const char *s, size_t len, uint32_t hash,
     const nd_sl_result_t *r)
{
    bool big_p = r->npvecs > ND_SL_RESULT_INLINE_P;
    bool big_g = r->nqgroups > ND_SL_RESULT_INLINE_Q;
    bool big_q = r->nqvecs > ND_SL_RESULT_INLINE_Q;
    size_t need = sizeof(nd_slcache_entry_t) + align8(len);
    need += big_p ? r->npvecs * sizeof(r->pvecs[0]) : 0;
    need += big_g ? r->nqgroups * sizeof(r->qgroups[0]) : 0;
    need += big_q ? r->nqvecs * sizeof(r->qvecs[0]) : 0;

    nd_slcache_entry_t *e = *slot;
    if (e == NULL) {
        c->count++;
    }
    if (e == NULL || e->size < need) {
        nd_free(e);
        e = nd_xmalloc(need);
        e->size = need;
        *slot = e;
    }
    e->hash = hash;
    e->len = (uint32_t)len;
    memcpy(e->data, s, len);

    nd_sl_result_t *d = &e->res;
    char *tail = e->data + align8(len);
    d->gen = r->gen;
    d->npvecs = d->cap_pvecs = r->npvecs;
    d->nqgroups = d->cap_qgroups = r->nqgroups;
    d->nqvecs = d->cap_qvecs = r->nqvecs;
    if (big_p) {
        d->pvecs = (const nd_sl_vec_t **)(void *)tail;
        tail += r->npvecs * sizeof(r->pvecs[0]);
    } else {
        d->pvecs = d->pvecs_buf;
    }
    if (big_g) {
        d->qgroups = (nd_sl_qres_t *)(void *)tail;
        tail += r->nqgroups * sizeof(r->qgroups[0]);
    } else {
        d->qgroups = d->qgroups_buf;
    }
    if (big_q)
        d->qvecs = (const nd_sl_vec_t **)(void *)tail;
    else
        d->qvecs = d->qvecs_buf;
    if (r->npvecs != 0)
        memcpy(d->pvecs, r->pvecs, r->npvecs * sizeof(r->pvecs[0]));
    if (r->nqgroups != 0)
        memcpy(d->qgroups, r->qgroups, r->nqgroups * sizeof(r->qgroups[0]));
    if (r->nqvecs != 0)
        memcpy(d->qvecs, r->qvecs, r->nqvecs * sizeof(r->qvecs[0]));
    return e;
}

const nd_sl_result_t *
nd_slcache_put(nd_slcache_t *c, const char *s, size_t len, uint32_t hash, const nd_sl_result_t *r)
{
    nd_slcache_entry_t **slot = find(c, s, len, hash);
    if (slot == NULL)
        slot = victim(c, hash, r->gen);
    return &fill(c, slot, s, len, hash, r)->res;
}

const nd_sl_result_t *
nd_slcache_match(nd_ctx_t *ctx, nd_slcache_t *c, nd_sl_t *sl, const char *s, size_t len,
                 nd_sl_result_t *scratch)
{
    if (c->sl != sl) {
        nd_slcache_clear(c);
        c->sl = sl;
    }
    uint64_t gen = nd_sl_generation(sl);
    uint32_t hash = nd_slcache_hash(s, len);
    nd_slcache_entry_t **slot = find(c, s, len, hash);
    if (slot != NULL && (*slot)->res.gen == gen) {
        c->hits++;
        nd_sl_count_cache_hit(sl);
        return &(*slot)->res;
    }
    c->misses++;
    nd_sl_match(ctx, sl, s, len, scratch);
    if (slot == NULL)
        slot = victim(c, hash, scratch->gen);
    return &fill(c, slot, s, len, hash, scratch)->res;
}
