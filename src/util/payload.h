/* A published payload stored once and shared by every delivery of it (refcounted, immutable).
 * data holds the payload (headers included for HPUB) followed by "\r\n", so a subscriber copies
 * one contiguous block after its MSG line. Ctx: any thread. */
#ifndef ND_PAYLOAD_H
#define ND_PAYLOAD_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "actors/alloc.h"

typedef struct nd_payload {
    _Atomic uint32_t refs;
    uint32_t len; /* payload bytes, without the trailing CRLF */
    char data[];
} nd_payload_t;

static inline nd_payload_t *
nd_payload_new(const char *p, uint32_t len)
{
    nd_payload_t *pl = nd_xmalloc(sizeof(*pl) + len + 2);
    atomic_init(&pl->refs, 1);
    pl->len = len;
    memcpy(pl->data, p, len);
    pl->data[len] = '\r';
    pl->data[len + 1] = '\n';
    return pl;
}

static inline void
nd_payload_ref(nd_payload_t *pl)
{
    atomic_fetch_add_explicit(&pl->refs, 1, memory_order_relaxed);
}

static inline void
nd_payload_unref(nd_payload_t *pl)
{
    /* acq_rel: the last holder's free happens after every other holder's reads. */
    if (atomic_fetch_sub_explicit(&pl->refs, 1, memory_order_acq_rel) == 1)
        nd_free(pl);
}

#endif
