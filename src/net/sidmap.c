/* A connection's subscriptions by sid; see sidmap.h.
 * Invariants: cap is 0 or a power of two; used <= 3/4 cap after every insert (rehash otherwise);
 * a lookup probes from hash(sid) until an empty slot, skipping tombstones. */
#include "net/sidmap.h"

#include <string.h>

#include "actors/alloc.h"

#define TOMB ((nd_sub_t *)(uintptr_t)1)

static inline uint32_t
hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a: sids are short */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

static inline int
same(const nd_sub_t *sub, const char *sid, size_t len)
{
    return sub->sid_len == len && memcmp(sub->sid, sid, len) == 0;
}

void
nd_sidmap_init(nd_sidmap_t *m)
{
    memset(m, 0, sizeof(*m));
}

void
nd_sidmap_destroy(nd_sidmap_t *m)
{
    nd_free(m->slots);
    memset(m, 0, sizeof(*m));
}

/* Returns: the slot holding the sub with that sid, or -1. */
static int64_t
find(const nd_sidmap_t *m, const char *sid, size_t len)
{
    if (m->cap == 0)
        return -1;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = hash(sid, len) & mask;; i = (i + 1) & mask) {
        nd_sub_t *s = m->slots[i];
        if (s == NULL)
            return -1;
        if (s != TOMB && same(s, sid, len))
            return i;
    }
}

nd_sub_t *
nd_sidmap_get(const nd_sidmap_t *m, const char *sid, size_t len)
{
    int64_t i = find(m, sid, len);
    return i < 0 ? NULL : m->slots[i];
}

static void
rehash(nd_sidmap_t *m, uint32_t cap)
{
    nd_sub_t **old = m->slots;
    uint32_t old_cap = m->cap;
    m->slots = nd_xcalloc(cap, sizeof(*m->slots));
    m->cap = cap;
    m->used = m->count;
    for (uint32_t i = 0; i < old_cap; i++) {
        nd_sub_t *s = old[i];
        if (s == NULL || s == TOMB)
            continue;
        uint32_t j = hash(s->sid, s->sid_len) & (cap - 1);
        while (m->slots[j] != NULL)
            j = (j + 1) & (cap - 1);
        m->slots[j] = s;
    }
    nd_free(old);
}

void
nd_sidmap_put(nd_sidmap_t *m, nd_sub_t *sub)
{
    if ((m->used + 1) * 4 > m->cap * 3) {
        uint32_t cap = m->cap ? m->cap : 8;
        while ((m->count + 1) * 2 > cap)
            cap *= 2;
        rehash(m, cap);
    }
    uint32_t mask = m->cap - 1;
    uint32_t i = hash(sub->sid, sub->sid_len) & mask;
    while (m->slots[i] != NULL && m->slots[i] != TOMB)
        i = (i + 1) & mask;
    if (m->slots[i] == NULL)
        m->used++;
    m->slots[i] = sub;
    m->count++;
}

nd_sub_t *
nd_sidmap_del(nd_sidmap_t *m, const char *sid, size_t len)
{
    int64_t i = find(m, sid, len);
    if (i < 0)
        return NULL;
    nd_sub_t *s = m->slots[i];
    m->slots[i] = TOMB;
    m->count--;
    return s;
}

nd_sub_t **
nd_sidmap_take_all(nd_sidmap_t *m, size_t *n)
{
    nd_sub_t **all = nd_xmalloc((m->count ? m->count : 1) * sizeof(*all));
    size_t k = 0;
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->slots[i] != NULL && m->slots[i] != TOMB)
            all[k++] = m->slots[i];
    *n = k;
    nd_sidmap_destroy(m);
    return all;
}
