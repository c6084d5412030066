/* File store per-subject index: subject -> {msgs, first, last}, with a small id per subject so
 * that every message slot names its subject in 4 bytes. Open addressing with linear probing and
 * backward-shift deletion (no tombstones, so lookups stay short after many deletions). */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"

void
nd_fs_subj_init(nd_fs_subjtab_t *t)
{
    memset(t, 0, sizeof(*t));
}

void
nd_fs_subj_free(nd_fs_subjtab_t *t)
{
    for (uint32_t i = 0; i < t->nents; i++)
        free(t->ents[i].s);
    free(t->ents);
    free(t->freeids);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static inline uint64_t
hash_of(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

uint32_t
nd_fs_subj_find(const nd_fs_subjtab_t *t, const char *s, size_t len)
{
    if (!t->slots)
        return ND_FS_NOSID;
    uint64_t h = hash_of(s, len);
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = t->slots[i];
        if (!v)
            return ND_FS_NOSID;
        const nd_fs_subj_t *e = &t->ents[v - 1];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            return v - 1;
    }
}

static void
slots_insert(nd_fs_subjtab_t *t, uint32_t sid)
{
    for (size_t i = t->ents[sid].hash & t->mask;; i = (i + 1) & t->mask) {
        if (!t->slots[i]) {
            t->slots[i] = sid + 1;
            return;
        }
    }
}

static void
slots_resize(nd_fs_subjtab_t *t, size_t n)
{
    uint32_t *ns = nd_xcalloc(n, sizeof(*ns));
    free(t->slots);
    t->slots = ns;
    t->mask = n - 1;
    for (uint32_t i = 0; i < t->nents; i++)
        if (t->ents[i].s)
            slots_insert(t, i);
}

static uint32_t
alloc_id(nd_fs_subjtab_t *t)
{
    if (t->nfree)
        return t->freeids[--t->nfree];
    if (t->nents == t->capents) {
        uint32_t nc = t->capents ? t->capents * 2 : 64;
        t->ents = nd_xrealloc(t->ents, nc * sizeof(*t->ents));
        t->capents = nc;
    }
    memset(&t->ents[t->nents], 0, sizeof(t->ents[0]));
    return t->nents++;
}

uint32_t
nd_fs_subj_intern(nd_fs_subjtab_t *t, const char *s, size_t len)
{
    uint32_t sid = nd_fs_subj_find(t, s, len);
    if (sid != ND_FS_NOSID)
        return sid;
    if (!t->slots || (t->used + 1) * 4 > (t->mask + 1) * 3)
        slots_resize(t, t->slots ? (t->mask + 1) * 2 : 64);
    sid = alloc_id(t);
    nd_fs_subj_t *e = &t->ents[sid];
    memset(e, 0, sizeof(*e));
    e->s = nd_xstrndup(s, len);
    e->len = (uint32_t)len;
    e->hash = hash_of(s, len);
    slots_insert(t, sid);
    t->used++;
    return sid;
}

/* Makes sid reusable by a later subject. */
static void
free_id_push(nd_fs_subjtab_t *t, uint32_t sid)
{
    if (t->nfree == t->capfree) {
        uint32_t nc = t->capfree ? t->capfree * 2 : 64;
        t->freeids = nd_xrealloc(t->freeids, nc * sizeof(*t->freeids));
        t->capfree = nc;
    }
    t->freeids[t->nfree++] = sid;
}

void
nd_fs_subj_release(nd_fs_subjtab_t *t, uint32_t sid)
{
    nd_fs_subj_t *e = &t->ents[sid];
    size_t i = e->hash & t->mask;
    while (t->slots[i] != sid + 1)
        i = (i + 1) & t->mask;
    /* Backward-shift deletion: move later members of the probe run into the hole. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        uint32_t v = t->slots[j];
        if (!v)
            break;
        size_t home = t->ents[v - 1].hash & t->mask;
        /* v may move to i when its home is not in the cyclic range (i, j]. */
        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            t->slots[i] = v;
            i = j;
        }
    }
    t->slots[i] = 0;
    free(e->s);
    memset(e, 0, sizeof(*e));
    t->used--;
    free_id_push(t, sid);
}

bool
nd_fs_subj_put_at(nd_fs_subjtab_t *t, uint32_t sid, const char *s, size_t len)
{
    while (t->nents <= sid) {
        if (t->nents == t->capents) {
            uint32_t nc = t->capents ? t->capents * 2 : 64;
            while (nc <= sid)
                nc *= 2;
            t->ents = nd_xrealloc(t->ents, nc * sizeof(*t->ents));
            t->capents = nc;
        }
        memset(&t->ents[t->nents], 0, sizeof(t->ents[0]));
        t->nents++;
    }
    nd_fs_subj_t *e = &t->ents[sid];
    if (e->s)
        return false;
    e->s = nd_xmalloc(len + 1);
    memcpy(e->s, s, len);
    e->s[len] = 0;
    e->len = (uint32_t)len;
    e->hash = hash_of(s, len);
    return true;
}

/* After put_at calls: builds the hash table, drops ids without messages and frees the holes. */
void
nd_fs_subj_finish_load(nd_fs_subjtab_t *t)
{
    size_t n = 64;
    t->used = 0;
    for (uint32_t i = 0; i < t->nents; i++)
        if (t->ents[i].s && t->ents[i].msgs)
            t->used++;
    while (n * 3 < (t->used + 1) * 4)
        n *= 2;
    t->nfree = 0;
    for (uint32_t i = t->nents; i-- > 0;) {
        nd_fs_subj_t *e = &t->ents[i];
        if (e->s && !e->msgs) {
            free(e->s);
            memset(e, 0, sizeof(*e));
        }
        if (!e->s) {
            free_id_push(t, i);
        }
    }
    slots_resize(t, n);
}
