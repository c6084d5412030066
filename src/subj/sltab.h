/* A hash set of keyed objects for one writer and any number of concurrent readers (SPMC), used
 * by the sublist for a node's literal children and for its queue groups. Private to src/subj.
 *
 * Algorithm: open addressing with linear probing over a power-of-two array of object pointers.
 * An object embeds an nd_sl_key_t (its hash and length) immediately followed by the key's bytes,
 * and the table points at that key (the owner finds itself by subtracting the key's offset).
 * Invariants that make lock-free reads correct:
 *  - A slot of a published table only ever goes NULL -> object, object -> TOMB and TOMB -> object.
 *    It never returns to NULL and an object never moves inside a published table. So a reader
 *    probing from hash(k) towards the object k finds only non-NULL slots before it, whatever the
 *    writer does meanwhile: a key present during the whole lookup is always found, and nothing is
 *    found twice by an iteration.
 *  - Growing, shrinking or sweeping tombstones builds a new table, publishes it with a release
 *    store of the owner's pointer and queues the old one on the sublist's nd_sl_pend_t, which
 *    retires it through the epoch after the generation bump.
 *  - The load factor, tombstones included, stays at most 3/4, so every probe sequence meets NULL.
 * Readers load the table pointer and slots with acquire, pairing with the writer's release
 * stores, so an object's fields written before it was published are visible.
 */
#ifndef ND_SLTAB_H
#define ND_SLTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "actors/epoch.h"
#include "subj/sublist.h"

/* A key: the bytes follow the struct directly (an embedding struct declares `char name[]` right
 * after its nd_sl_key_t member), so a key costs 8 bytes and no pointer. */
typedef struct nd_sl_key {
    uint32_t hash;
    uint32_t len;
} nd_sl_key_t;

static inline const char *
nd_sl_key_str(const nd_sl_key_t *k)
{
    return (const char *)(k + 1);
}

/* The table: a 16-byte header and the slots (retired as a plain block, see nd_sl_pend_t). */
typedef struct nd_sl_tab {
    uint32_t mask; /* immutable: capacity - 1 */
    uint32_t used; /* writer only: live objects + tombstones */
    uint32_t live; /* writer only */
    uint32_t spare;
    _Atomic(nd_sl_key_t *) slot[];
} nd_sl_tab_t;

#define ND_SL_TAB_TOMB ((nd_sl_key_t *)(uintptr_t)1)

/* The pending-retirement list (nd_sl_pend_t, in natsd/sublist.h).
 * Queues the nd_xmalloc block ptr, which readers may still see, to be freed after the grace period
 * that the next nd_sl_pend_flush starts. Ctx: the writer. */
void nd_sl_pend_add(nd_sl_pend_t *p, void *ptr);
/* Retires everything queued as one batch (one allocation and one epoch callback, however many
 * blocks; call after bumping the generation). Ctx: the writer. */
void nd_sl_pend_flush(nd_ctx_t *ctx, nd_sl_pend_t *p);
void nd_sl_pend_fini(nd_sl_pend_t *p);

/* ---- byte helpers shared by the sublist and the cache ---- */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the word-at-a-time token scan assumes a little-endian machine"
#endif

static inline uint64_t
nd_sl_load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint32_t
nd_sl_load4(const char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
}

static inline uint64_t
nd_sl_mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

#define ND_SL_TOK_SEED 0x243F6A8885A308D3ull

/* Scans the token that starts at p (start <= p <= end; [start, end) is the readable subject):
 * returns the token's end (the next '.' or end) and stores its hash in *hash.
 * Word at a time: each 8-byte word is searched for '.' with the has-zero-byte trick on
 * (word ^ "........") and mixed into the hash with one multiply; the last partial word is read as
 * an overlapping load ending at `end` when the subject is long enough, so nothing outside
 * [start, end) is read. The hash depends only on the token's bytes (whole words, then the
 * remaining 1-7 bytes zero-padded), so the writer, who scans a token on its own, gets the value a
 * reader gets scanning it inside a subject. An empty token returns p itself. */
static inline const char *
nd_sl_tok_scan(const char *p, const char *end, const char *start, uint32_t *hash)
{
    const uint64_t dots = 0x2E2E2E2E2E2E2E2Eull, lo = 0x0101010101010101ull,
                   hi = 0x8080808080808080ull;
    uint64_t h = ND_SL_TOK_SEED;
    for (;;) {
        size_t rem = (size_t)(end - p);
        uint64_t w;
        if (rem >= 8) {
            w = nd_sl_load8(p);
        } else if (rem == 0) {
            *hash = (uint32_t)h;
            return p;
        } else if (end - start >= 8) {
            w = nd_sl_load8(end - 8) >> (8 * (8 - rem));
        } else {
            w = 0;
            for (size_t i = 0; i < rem; i++)
                w |= (uint64_t)(unsigned char)p[i] << (8 * i);
        }
        uint64_t x = w ^ dots;
        uint64_t m = (x - lo) & ~x & hi; /* its lowest set bit marks the first '.' byte */
        if (rem < 8)
            m &= (1ull << (8 * rem)) - 1; /* the zero padding is not part of the subject */
        if (m != 0) {
            unsigned k = (unsigned)__builtin_ctzll(m) >> 3;
            if (k != 0)
                h = nd_sl_mix(h, w & ((1ull << (8 * k)) - 1));
            *hash = (uint32_t)h;
            return p + k;
        }
        h = nd_sl_mix(h, w);
        if (rem <= 8) {
            *hash = (uint32_t)h;
            return end;
        }
        p += 8;
    }
}

/* The hash of one token (which contains no '.'), equal to what nd_sl_tok_scan computes. */
static inline uint32_t
nd_sl_tok_hash(const char *t, size_t n)
{
    uint32_t h;
    nd_sl_tok_scan(t, t + n, t, &h);
    return h;
}

/* A hash of arbitrary bytes (queue names, whole subjects for the cache): eight bytes per
 * multiply, the tail read as one overlapping word. */
static inline uint32_t
nd_sl_hash_bytes(const char *s, size_t len)
{
    uint64_t h = nd_sl_mix(ND_SL_TOK_SEED, len);
    uint64_t w;
    if (len >= 8) {
        const char *end = s + len;
        for (; s + 8 < end; s += 8)
            h = nd_sl_mix(h, nd_sl_load8(s));
        w = nd_sl_load8(end - 8);
    } else if (len >= 4) {
        w = nd_sl_load4(s) | (uint64_t)nd_sl_load4(s + len - 4) << 32;
    } else if (len != 0) {
        w = (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[len / 2] << 8 |
            (uint64_t)(unsigned char)s[len - 1] << 16;
    } else {
        w = 0;
    }
    h = nd_sl_mix(h, w) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* Equality of two short byte strings without a call to memcmp (tokens and subjects are mostly
 * under 16 bytes, where a libc call costs more than the compare): 8-byte words, the last one
 * overlapping the previous, or two overlapping 4-byte words, or bytes. */
static inline bool
nd_sl_bytes_eq(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 < n; i += 8)
            if (nd_sl_load8(a + i) != nd_sl_load8(b + i))
                return false;
        return nd_sl_load8(a + n - 8) == nd_sl_load8(b + n - 8);
    }
    if (n >= 4)
        return nd_sl_load4(a) == nd_sl_load4(b) && nd_sl_load4(a + n - 4) == nd_sl_load4(b + n - 4);
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

/* Looks up a key. Ctx: a reader inside an epoch section, or the writer. t may be NULL.
 * Returns: the object or NULL. */
static inline nd_sl_key_t *
nd_sl_tab_get(const nd_sl_tab_t *t, const char *s, uint32_t len, uint32_t hash)
{
    if (t == NULL)
        return NULL;
    uint32_t i = hash & t->mask;
    for (;;) {
        /* acquire: pairs with the release store that published the object. */
        nd_sl_key_t *k = atomic_load_explicit(&t->slot[i], memory_order_acquire);
        if (k == NULL)
            return NULL;
        if (k != ND_SL_TAB_TOMB && k->hash == hash && k->len == len &&
            nd_sl_bytes_eq(nd_sl_key_str(k), s, len))
            return k;
        i = (i + 1) & t->mask;
    }
}

/* Iteration: for (i = 0; i <= t->mask; i++) if ((k = nd_sl_tab_at(t, i)) != NULL) ...
 * Returns: the object in slot i, or NULL for an empty or deleted slot. */
static inline nd_sl_key_t *
nd_sl_tab_at(const nd_sl_tab_t *t, uint32_t i)
{
    /* acquire: pairs with the release store that published the object. */
    nd_sl_key_t *k = atomic_load_explicit(&t->slot[i], memory_order_acquire);
    return k == ND_SL_TAB_TOMB ? NULL : k;
}

/* Inserts k, which must not be present. *ref is the owner's table pointer (NULL = empty); a
 * replaced table is queued on pend. Ctx: the writer. */
void nd_sl_tab_put(_Atomic(nd_sl_tab_t *) *ref, nd_sl_key_t *k, nd_sl_pend_t *pend);

/* Deletes k, which must be present. An emptied table is unpublished (*ref = NULL) and queued on
 * pend; a mostly empty one is rebuilt smaller. Ctx: the writer. */
void nd_sl_tab_del(_Atomic(nd_sl_tab_t *) *ref, nd_sl_key_t *k, nd_sl_pend_t *pend);

/* Writer-side count of live objects (0 for NULL). */
static inline uint32_t
nd_sl_tab_live(const nd_sl_tab_t *t)
{
    return t == NULL ? 0 : t->live;
}

#endif
