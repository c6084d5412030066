/* The sublist: the subject trie of one account, mapping subjects to subscriptions.
 *
 * One writer (the account actor) inserts and removes; readers on any worker match concurrently
 * inside nd_epoch_enter/exit sections, without locks. See src/subj/sublist.c for the algorithm,
 * its invariants and references.
 *
 * A match result does not copy subscriptions: it lists the *vectors* that hold them (one per
 * matching node for plain subs, and per queue group the vectors of that group's members in every
 * matching node). Vectors are read in place, so a result for 100k subscribers costs one pointer,
 * and a queue group member is picked uniformly at random in O(1). Slots of a vector may turn NULL
 * while a reader looks (a concurrent unsubscribe): skip them. Everything a result points to stays
 * valid until the end of the epoch section in which the match (or the cache lookup that
 * re-checked the generation, see natsd/slcache.h) was done.
 */
#ifndef NATSD_SUBLIST_H
#define NATSD_SUBLIST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actors/alloc.h"
#include "actors/ctx.h"
#include "actors/epoch.h"
#include "subj/sub.h"

/* A vector of subscriptions. Readers: len with nd_sl_vec_len(), then nd_sl_vec_get() for each
 * index below it, skipping NULL. Only the sublist writer changes it. A node's first vector may
 * live inside the node's own allocation (see sublist.c); readers cannot tell and need not. */
typedef struct nd_sl_vec {
    uint32_t cap;          /* writer only: slots allocated (0 once an in-node vector is dropped) */
    _Atomic uint32_t n;    /* slots [0, n) have been published */
    _Atomic uint32_t live; /* non-NULL slots among them (a hint for readers) */
    uint32_t flags;        /* writer only: ND_SL_VEC_INNODE */
    _Atomic(nd_sub_t *) slot[];
} nd_sl_vec_t;

#define ND_SL_VEC_INNODE 1u /* lives inside its node's allocation: freed with the node */

static inline uint32_t
nd_sl_vec_len(const nd_sl_vec_t *v)
{
    /* acquire: pairs with the writer's release store of n after filling the slot below it. */
    return atomic_load_explicit(&v->n, memory_order_acquire);
}

static inline nd_sub_t *
nd_sl_vec_get(const nd_sl_vec_t *v, uint32_t i)
{
    /* acquire: pairs with the writer's release store of the slot, which publishes the sub's
     * fields (a slot below a stale n may have been refilled since). */
    return atomic_load_explicit(&((nd_sl_vec_t *)v)->slot[i], memory_order_acquire);
}

/* One queue group of a result: its name and the range [first, first + nvecs) of result->qvecs
 * holding its members (one vector per matching node that has the group). */
typedef struct nd_sl_qres {
    const char *name;
    uint32_t name_len;
    uint32_t first;
    uint32_t nvecs;
    uint32_t spare;
} nd_sl_qres_t;

#define ND_SL_RESULT_INLINE_P 8
#define ND_SL_RESULT_INLINE_Q 4

/* A match result, owned by the caller and reused across matches: arrays grow on demand (and stay
 * grown), so the common path never allocates. Initialise with nd_sl_result_init, release with
 * nd_sl_result_fini. A cached result (natsd/slcache.h) has the same shape but is read-only. */
typedef struct nd_sl_result {
    uint64_t gen;      /* the sublist generation read before the walk */
    uint32_t npvecs;   /* plain subscriptions: pvecs[0..npvecs) */
    uint32_t nqgroups; /* queue groups: qgroups[0..nqgroups) */
    uint32_t nqvecs;
    uint32_t cap_pvecs, cap_qgroups, cap_qvecs;
    const nd_sl_vec_t **pvecs;
    nd_sl_qres_t *qgroups;
    const nd_sl_vec_t **qvecs;
    const nd_sl_vec_t *pvecs_buf[ND_SL_RESULT_INLINE_P];
    nd_sl_qres_t qgroups_buf[ND_SL_RESULT_INLINE_Q];
    const nd_sl_vec_t *qvecs_buf[ND_SL_RESULT_INLINE_Q];
} nd_sl_result_t;

void nd_sl_result_init(nd_sl_result_t *r);
void nd_sl_result_fini(nd_sl_result_t *r);

static inline bool
nd_sl_result_empty(const nd_sl_result_t *r)
{
    return r->npvecs == 0 && r->nqgroups == 0;
}

/* Picks one member of queue group g of r uniformly at random among its non-NULL slots
 * (rejection sampling: the writer keeps vectors at least half full, so this takes O(1) expected
 * tries). Ctx: a worker in the section that produced (or re-validated) r.
 * Returns: the member, or NULL when every member went away concurrently. */
nd_sub_t *nd_sl_result_qpick(nd_ctx_t *ctx, const nd_sl_result_t *r, uint32_t g);

/* Offers the members of queue group g of r to fn(sub, arg), each non-NULL slot once, from a
 * random one on and around (nats-server's processMsgResults: every member from a random index),
 * until fn takes one by returning true. skip (may be NULL) is not offered: the caller's first
 * pick, already refused. For the rare case where the pick of nd_sl_result_qpick cannot take the
 * message (see deliver.c): never a message dropped while a member could take it.
 * Ctx: as nd_sl_result_qpick. Returns: the member fn took, or NULL when none did. */
nd_sub_t *nd_sl_result_qeach(nd_ctx_t *ctx, const nd_sl_result_t *r, uint32_t g,
                             const nd_sub_t *skip, bool (*fn)(nd_sub_t *sub, void *arg),
                             void *arg);

/* Calls fn(sub, arg) for every plain subscription of r, skipping NULL slots; stops early when fn
 * returns false. Ctx: as nd_sl_result_qpick. Returns: false when stopped early. */
bool nd_sl_result_each_psub(const nd_sl_result_t *r, bool (*fn)(nd_sub_t *sub, void *arg),
                            void *arg);

/* Memory whose retirement waits for the next generation bump (writer only; see sublist.c): plain
 * nd_xmalloc blocks, freed together by one epoch callback after the grace period, so the objects
 * themselves carry no retirement record. */
typedef struct nd_sl_pend {
    void **ptrs;
    uint32_t n, cap;
} nd_sl_pend_t;

/* The sublist itself. Fields are private to src/subj; the struct is public only so an account
 * can embed it (its memory then lives as long as the account's). */
typedef struct nd_sl {
    /* any thread, atomic */
    _Atomic(void *) root;   /* the root node, or NULL */
    _Atomic uint64_t gen;   /* bumped with release by every change */
    _Atomic uint64_t count; /* subscriptions */
    _Atomic uint64_t nodes; /* trie nodes, root included (for tests and monitoring) */
    /* writer only */
    nd_sl_pend_t pend;
    /* any thread, atomic, relaxed: statistics for /subsz, as nats-server's SublistStats. Padded
     * away from gen and count: every publish adds to them, and a readers' line that took those
     * increments would be invalidated under every other worker's generation check. */
    char pad_stats[64];
    _Atomic uint64_t inserts;    /* subscriptions inserted, ever */
    _Atomic uint64_t removes;    /* subscriptions removed, ever */
    _Atomic uint64_t matches;    /* trie walks (nd_sl_match) */
    _Atomic uint64_t cache_hits; /* matches answered by a connection's cache (nd_slcache_match) */
    _Atomic uint64_t fanout_sum; /* the walks' fanouts added up */
    _Atomic uint64_t fanout_max; /* the largest fanout of one walk */
    char pad_end[64];
} nd_sl_t;

/* A sublist's statistics. A walk's fanout is its plain subscriptions plus its queue groups (each
 * delivers once), as nats-server counts a cached result's. */
typedef struct nd_sl_stats {
    uint64_t count, inserts, removes;
    uint64_t matches; /* walks + cache hits: every subject looked up */
    uint64_t cache_hits;
    uint64_t walks;
    uint64_t fanout_sum, fanout_max;
} nd_sl_stats_t;

/* Adds sl's statistics into *st (so several accounts' can be summed). Ctx: any thread (a
 * snapshot; the counters are read one by one). */
void nd_sl_stats_add(const nd_sl_t *sl, nd_sl_stats_t *st);

/* Counts one lookup that a connection's cache answered. Ctx: any thread. */
static inline void
nd_sl_count_cache_hit(nd_sl_t *sl)
{
    atomic_fetch_add_explicit(&sl->cache_hits, 1, memory_order_relaxed);
}

/* Initialises an empty sublist in place / releases everything it holds. nd_sl_fini calls
 * on_remove(ctx, sub, arg) (may be NULL) for every subscription still inside, after unlinking
 * it, then retires every internal node; the struct stays a valid empty sublist, so late readers
 * (who must still keep its memory alive) see no matches. Ctx: the writer. */
void nd_sl_init(nd_sl_t *sl);
void nd_sl_fini(nd_ctx_t *ctx, nd_sl_t *sl,
                void (*on_remove)(nd_ctx_t *ctx, nd_sub_t *sub, void *arg), void *arg);

/* Heap-allocated sublist; nd_sl_free finalises it and retires the struct through the epoch. */
nd_sl_t *nd_sl_new(void);
void nd_sl_free(nd_ctx_t *ctx, nd_sl_t *sl,
                void (*on_remove)(nd_ctx_t *ctx, nd_sub_t *sub, void *arg), void *arg);

/* Inserts sub under sub->subject (and sub->queue). The sublist does not take a reference: the
 * caller keeps the sub alive while it is inside. Ctx: the writer.
 * Returns: false when the subject is not a valid subscribe subject, the queue name is invalid,
 * or sub is already in a sublist. */
__attribute__((warn_unused_result)) bool nd_sl_insert(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *sub);

/* Removes sub; empty nodes are pruned. Readers may still see the sub until the end of their
 * current sections: the caller retires it (nd_sub_unref) only after this returns.
 * Ctx: the writer. Returns: false when sub is not in sl. */
bool nd_sl_remove(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *sub);

/* Removes every sub of subs[] that is in sl (others are skipped), with one generation bump.
 * Returns: how many were removed; removed[i] (when removed != NULL) says which. */
size_t nd_sl_remove_batch(nd_ctx_t *ctx, nd_sl_t *sl, nd_sub_t *const *subs, size_t n,
                          bool *removed);

/* Calls fn(sub, arg) for every subscription inside sl, in no particular order. fn must not
 * change sl. Ctx: the writer. */
void nd_sl_each(nd_sl_t *sl, void (*fn)(nd_sub_t *sub, void *arg), void *arg);

/* Matches a subject (treated as literal) against the trie and fills r (reset first). A subject
 * with an empty token matches nothing. Ctx: any thread, inside an epoch section.
 * Returns: true when anything matched. */
bool nd_sl_match(nd_ctx_t *ctx, nd_sl_t *sl, const char *subject, size_t len, nd_sl_result_t *r);

/* Returns: the number of subscriptions. Ctx: any thread (a snapshot). */
static inline uint64_t
nd_sl_count(const nd_sl_t *sl)
{
    return atomic_load_explicit(&sl->count, memory_order_relaxed);
}

/* Returns: the generation, which changes with every insert and remove. Ctx: any thread; readers
 * validating a cache load it inside their epoch section. */
static inline uint64_t
nd_sl_generation(const nd_sl_t *sl)
{
    /* acquire: pairs with the writer's release increment that follows each change, so a reader
     * that sees generation g also sees every change made before g was published. */
    return atomic_load_explicit(&sl->gen, memory_order_acquire);
}

static inline uint64_t
nd_sl_node_count(const nd_sl_t *sl)
{
    return atomic_load_explicit(&sl->nodes, memory_order_relaxed);
}

#endif
