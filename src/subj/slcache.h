/* The per-connection L1 match cache: subject -> sublist match result.
 *
 * A connection actor owns one cache for the sublist of its account and touches it only on its own
 * turn, so nothing is synchronised. An entry is valid while the sublist's generation equals the
 * one recorded when its result was computed; any insert or remove bumps the generation and so
 * invalidates every entry at once (stale entries are overwritten lazily). At most ND_SLCACHE_MAX
 * entries are kept (nats-server bounds its cache at 1024 too): the cache is 4-way set associative
 * and evicts within a set, so it never needs a pruning pass. A hit costs one hash of the subject,
 * at most four hash compares and one memcmp, and allocates nothing.
 *
 * Why cached pointers are safe: a cached result points at sublist vectors and queue-group names
 * that the writer may have unlinked and retired since. nd_slcache_match() must be called inside an
 * epoch section and re-reads the generation there; the result it returns may be used until that
 * section ends. See src/subj/slcache.c for the argument.
 */
#ifndef NATSD_SLCACHE_H
#define NATSD_SLCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "subj/sublist.h"

#define ND_SLCACHE_WAYS     4
#define ND_SLCACHE_MAX      1024 /* entries */
#define ND_SLCACHE_MIN_SETS 4

typedef struct nd_slcache_entry nd_slcache_entry_t;

typedef struct nd_slcache {
    /* owner actor only */
    const nd_sl_t *sl;          /* the sublist the entries belong to */
    nd_slcache_entry_t **slots; /* nsets * ND_SLCACHE_WAYS; NULL until the first insert */
    uint32_t nsets;
    uint32_t count; /* entries held (valid or stale) */
    uint32_t clock; /* round-robin victim choice */
    uint32_t spare;
    uint64_t hits, misses;
} nd_slcache_t;

void nd_slcache_init(nd_slcache_t *c);
/* Frees every entry. Ctx: the owner. */
void nd_slcache_fini(nd_slcache_t *c);
void nd_slcache_clear(nd_slcache_t *c);

/* Returns the match result for subject in sl: the cached one when its generation is current,
 * else a fresh match (into scratch, a caller-owned reusable result) which is then cached.
 * A cache serves one sublist at a time: passing another sl empties it first.
 * Ctx: the owner, inside an epoch section. Borrows: everything. Returns: a result valid until
 * the section ends (and until the next call on this cache). */
const nd_sl_result_t *nd_slcache_match(nd_ctx_t *ctx, nd_slcache_t *c, nd_sl_t *sl,
                                       const char *subject, size_t len, nd_sl_result_t *scratch);

/* Lower level, for callers that match themselves: the subject hash, a lookup that returns a
 * result only when it was computed at generation gen, and an insert of a copy of r (recorded at
 * r->gen). Ctx: the owner, inside an epoch section. */
uint32_t nd_slcache_hash(const char *subject, size_t len);
const nd_sl_result_t *nd_slcache_lookup(nd_slcache_t *c, uint64_t gen, const char *subject,
                                        size_t len, uint32_t hash);
const nd_sl_result_t *nd_slcache_put(nd_slcache_t *c, const char *subject, size_t len,
                                     uint32_t hash, const nd_sl_result_t *r);

static inline uint32_t
nd_slcache_count(const nd_slcache_t *c)
{
    return c->count;
}

#endif
