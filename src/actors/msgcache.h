/* Per-thread free lists for actor messages, with a shared depot of full magazines.
 *
 * Messages are usually allocated on one worker and freed on another (the receiver's), which is
 * the worst case for malloc. Each thread keeps a small stack per size class; when a stack is full
 * it hands a whole magazine of ND_MSGCACHE_MAG entries to the pool's depot, and an empty stack
 * takes one back, so a steady producer/consumer pair costs one lock per magazine, not per message.
 * Sanitizer builds bypass the cache entirely so ASan sees every allocation.
 */
#ifndef NATSD_MSGCACHE_H
#define NATSD_MSGCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define ND_MSGCACHE_CLASSES 4   /* 64, 128, 256, 512 bytes */
#define ND_MSGCACHE_MAG     128 /* entries per magazine */
#define ND_MSGCACHE_BIG     0xFF

typedef struct nd_msgcache_free nd_msgcache_free_t;

typedef struct nd_msgcache_depot {
    pthread_mutex_t lock;
    nd_msgcache_free_t *full[ND_MSGCACHE_CLASSES]; /* magazines chained through their first entry */
    size_t count[ND_MSGCACHE_CLASSES];
} nd_msgcache_depot_t;

typedef struct nd_msgcache {
    nd_msgcache_depot_t *depot;
    nd_msgcache_free_t *cur[ND_MSGCACHE_CLASSES]; /* the magazine being filled/emptied */
    uint32_t n[ND_MSGCACHE_CLASSES];
} nd_msgcache_t;

void nd_msgcache_depot_init(nd_msgcache_depot_t *d);
void nd_msgcache_depot_destroy(nd_msgcache_depot_t *d);
void nd_msgcache_init(nd_msgcache_t *c, nd_msgcache_depot_t *d);
/* Returns every cached entry to the depot. Ctx: the owning thread. */
void nd_msgcache_flush(nd_msgcache_t *c);

/* Returns: a block of at least size bytes and its class (ND_MSGCACHE_BIG when it was malloc'ed). */
void *nd_msgcache_alloc(nd_msgcache_t *c, size_t size, uint8_t *cls);
void nd_msgcache_release(nd_msgcache_t *c, void *p, uint8_t cls);

#endif
