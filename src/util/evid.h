/* The id of an event the server publishes (advisories, API audit): a 22-character base62 id in
 * the form of nats-server's NUIDs. (The wall clock is nd_mon_wall_ns, net/connreg.h.) */
#ifndef ND_UTIL_EVID_H
#define ND_UTIL_EVID_H

#include <stdint.h>

#include "actors/ctx.h"

static inline void
nd_event_id(nd_ctx_t *ctx, char out[23])
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < 22; i++)
        out[i] = digits[nd_ctx_rand(ctx) % 62];
    out[22] = '\0';
}

#endif
