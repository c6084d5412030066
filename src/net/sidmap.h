/* A connection's subscriptions by sid: open addressing with linear probing and tombstones.
 * Owner-only (the connection actor); no synchronisation. */
#ifndef ND_SIDMAP_H
#define ND_SIDMAP_H

#include <stddef.h>
#include <stdint.h>

#include "subj/sub.h"

typedef struct nd_sidmap {
    nd_sub_t **slots; /* NULL = empty, ND_SIDMAP_TOMB = deleted */
    uint32_t cap;     /* power of two, 0 before the first insert */
    uint32_t count;   /* live entries */
    uint32_t used;    /* live + tombstones */
} nd_sidmap_t;

void nd_sidmap_init(nd_sidmap_t *m);
void nd_sidmap_destroy(nd_sidmap_t *m);
nd_sub_t *nd_sidmap_get(const nd_sidmap_t *m, const char *sid, size_t len);
/* Adds sub under its sid; the caller checked it is absent. */
void nd_sidmap_put(nd_sidmap_t *m, nd_sub_t *sub);
/* Removes and returns the sub with that sid, or NULL. */
nd_sub_t *nd_sidmap_del(nd_sidmap_t *m, const char *sid, size_t len);
/* Moves every sub into a new array (count in *n) and empties the map. */
nd_sub_t **nd_sidmap_take_all(nd_sidmap_t *m, size_t *n);

#endif
