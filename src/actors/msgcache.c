/* Per-thread message free lists with a shared depot of full magazines; see natsd/msgcache.h.
 *
 * Invariants: a thread's cur[k] stack holds n[k] <= ND_MSGCACHE_MAG free blocks of class k; the
 * depot holds only full magazines (exactly ND_MSGCACHE_MAG blocks), chained through next_mag of
 * their top block. Blocks never change class. The depot is bounded (DEPOT_MAX magazines per class);
 * beyond that, magazines go back to malloc.
 */
#include "actors/msgcache.h"

#include <stdlib.h>

#include "actors/alloc.h"

struct nd_msgcache_free {
    nd_msgcache_free_t *next;     /* next block in this magazine */
    nd_msgcache_free_t *next_mag; /* next magazine in the depot (top block only) */
};

#define DEPOT_MAX 256

static const size_t class_size[ND_MSGCACHE_CLASSES] = {64, 128, 256, 512};

static inline int
class_of(size_t size)
{
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++)
        if (size <= class_size[k])
            return k;
    return -1;
}

void
nd_msgcache_depot_init(nd_msgcache_depot_t *d)
{
    pthread_mutex_init(&d->lock, NULL);
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++) {
        d->full[k] = NULL;
        d->count[k] = 0;
    }
}

static void
free_magazine(nd_msgcache_free_t *top)
{
    while (top != NULL) {
        nd_msgcache_free_t *next = top->next;
        free(top);
        top = next;
    }
}

void
nd_msgcache_depot_destroy(nd_msgcache_depot_t *d)
{
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++) {
        while (d->full[k] != NULL) {
            nd_msgcache_free_t *mag = d->full[k];
            d->full[k] = mag->next_mag;
            free_magazine(mag);
        }
    }
    pthread_mutex_destroy(&d->lock);
}

void
nd_msgcache_init(nd_msgcache_t *c, nd_msgcache_depot_t *d)
{
    c->depot = d;
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++) {
        c->cur[k] = NULL;
        c->n[k] = 0;
    }
}

/* Gives a full magazine to the depot, or frees it when the depot is at its bound. */
static void
depot_put(nd_msgcache_depot_t *d, int k, nd_msgcache_free_t *mag)
{
    pthread_mutex_lock(&d->lock);
    if (d->count[k] < DEPOT_MAX) {
        mag->next_mag = d->full[k];
        d->full[k] = mag;
        d->count[k]++;
        mag = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    free_magazine(mag);
}

static nd_msgcache_free_t *
depot_get(nd_msgcache_depot_t *d, int k)
{
    pthread_mutex_lock(&d->lock);
    nd_msgcache_free_t *mag = d->full[k];
    if (mag != NULL) {
        d->full[k] = mag->next_mag;
        d->count[k]--;
    }
    pthread_mutex_unlock(&d->lock);
    return mag;
}

void
nd_msgcache_flush(nd_msgcache_t *c)
{
    for (int k = 0; k < ND_MSGCACHE_CLASSES; k++) {
        /* A partial magazine cannot go to the depot (it holds only full ones): free it. */
        if (c->n[k] == ND_MSGCACHE_MAG)
            depot_put(c->depot, k, c->cur[k]);
        else
            free_magazine(c->cur[k]);
        c->cur[k] = NULL;
        c->n[k] = 0;
    }
}

void *
nd_msgcache_alloc(nd_msgcache_t *c, size_t size, uint8_t *cls)
{
    int k = class_of(size);
#ifdef ND_SANITIZED
    k = -1;
#endif
    if (k < 0) {
        *cls = ND_MSGCACHE_BIG;
        return nd_xmalloc(size);
    }
    *cls = (uint8_t)k;
    if (c->n[k] == 0) {
        nd_msgcache_free_t *mag = c->depot ? depot_get(c->depot, k) : NULL;
        if (mag == NULL)
            return nd_xmalloc(class_size[k]);
        c->cur[k] = mag;
        c->n[k] = ND_MSGCACHE_MAG;
    }
    nd_msgcache_free_t *f = c->cur[k];
    c->cur[k] = f->next;
    c->n[k]--;
    return f;
}

void
nd_msgcache_release(nd_msgcache_t *c, void *p, uint8_t cls)
{
    if (cls == ND_MSGCACHE_BIG) {
        free(p);
        return;
    }
    nd_msgcache_free_t *f = p;
    if (c->n[cls] == ND_MSGCACHE_MAG) {
        if (c->depot != NULL)
            depot_put(c->depot, cls, c->cur[cls]);
        else
            free_magazine(c->cur[cls]);
        c->cur[cls] = NULL;
        c->n[cls] = 0;
    }
    f->next = c->cur[cls];
    c->cur[cls] = f;
    c->n[cls]++;
}
