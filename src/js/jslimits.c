/* An account's JetStream limits, usage and reservations, as nats-server keeps them for a single
 * server (server/jetstream.go: JetStreamAccountLimits, selectLimits, checkLimits,
 * checkBytesLimits, wouldExceedLimits, reserveStreamResources; accounts.go for the limits of an
 * account JWT).
 *
 * Limits: a map of tier name to limits. Static accounts ({jetstream: {...}}) and a JWT's flat
 * limits give one untiered entry ""; a JWT's tiered_limits give one entry per tier ("R1", ...).
 * A stream uses the untiered limits when there are any, else its replicas' tier; with none the
 * stream may not be created (10120). On one server every stream is R1.
 *
 * Usage: the bytes in the account's stores, kept in atomics (the account's and the server's)
 * that each stream actor moves by the change of its store's size after every store call
 * (js_usage_sync, at the end of each turn), and a stream adds what it stored since
 * (unsynced), so the publish path checks exact totals without a lock.
 *
 * Reservations: a stream with max_bytes reserves them, against its account's limit (computed
 * from the stream table on the API service's turn) and the server's max_memory/max_store (the
 * js->*_reserved atomics, moved when a stream is created, recovered, updated or deleted).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "auth/jwt.h"
#include "js/js_int.h"
#include "util/log.h"

const js_tier_t *
js_limits_select(const js_limits_t *l, int replicas)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->t[i].name[0] == '\0')
            return &l->t[i];
    char tier[16];
    snprintf(tier, sizeof tier, "R%d", replicas > 0 ? replicas : 1);
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->t[i].name, tier) == 0)
            return &l->t[i];
    return NULL;
}

/* accounts.go: a JWT's values of 0 or less for these mean no limit. */
static int64_t
unlimited(int64_t v)
{
    return v > 0 ? v : -1;
}

static void
from_jwt_limits(const nd_jwt_js_limits_t *j, nd_acct_js_t *out)
{
    memset(out, 0, sizeof *out);
    out->enabled = true;
    out->max_memory = j->mem_storage;
    out->max_store = j->disk_storage;
    out->max_streams = j->streams;
    out->max_consumers = j->consumer;
    out->memory_max_stream_bytes = unlimited(j->mem_max_stream_bytes);
    out->store_max_stream_bytes = unlimited(j->disk_max_stream_bytes);
    out->max_bytes_required = j->max_bytes_required;
    out->max_ack_pending = unlimited(j->max_ack_pending);
}

bool
js_limits_from_jwt(const struct nd_jwt *jwt, js_limits_t *out)
{
    memset(out, 0, sizeof *out);
    if (jwt == NULL || jwt->type != ND_JWT_ACCOUNT)
        return false;
    const nd_jwt_account_t *a = &jwt->u.acc;
    /* jwt's IsJSEnabled: some tier (or the flat limits, when there are no tiers) has storage */
    if (a->js.mem_storage != 0 || a->js.disk_storage != 0) {
        out->n = 1;
        from_jwt_limits(&a->js, &out->t[0].lim);
        return true;
    }
    bool enabled = false;
    for (size_t i = 0; i < a->ntiers; i++)
        enabled = enabled || a->tiers[i].lim.mem_storage != 0 || a->tiers[i].lim.disk_storage != 0;
    if (!enabled)
        return false;
    for (size_t i = 0; i < a->ntiers && out->n < JS_MAX_TIERS; i++) {
        if (strlen(a->tiers[i].name) >= sizeof out->t[0].name) {
            nd_log_warn("JetStream tier \"%s\" of account %s ignored: name too long",
                        a->tiers[i].name, jwt->sub != NULL ? jwt->sub : "");
            continue;
        }
        js_tier_t *t = &out->t[out->n++];
        snprintf(t->name, sizeof t->name, "%s", a->tiers[i].name);
        from_jwt_limits(&a->tiers[i].lim, &t->lim);
    }
    return true;
}

void
js_limits_set(nd_jsa_t *jsa, const js_limits_t *l)
{
    const js_tier_t *sel = js_limits_select(l, 1);
    pthread_mutex_lock(&jsa->mu);
    jsa->tl = *l;
    if (sel != NULL) {
        jsa->limits = sel->lim;
    } else {
        memset(&jsa->limits, 0, sizeof jsa->limits);
        jsa->limits.max_memory = jsa->limits.max_store = jsa->limits.max_streams = -1;
        jsa->limits.max_consumers = jsa->limits.max_ack_pending = -1;
        jsa->limits.memory_max_stream_bytes = jsa->limits.store_max_stream_bytes = -1;
    }
    jsa->limits.enabled = true;
    pthread_mutex_unlock(&jsa->mu);
    atomic_store_explicit(&jsa->pub_max_mem, sel != NULL ? sel->lim.max_memory : -1,
                          memory_order_relaxed);
    atomic_store_explicit(&jsa->pub_max_store, sel != NULL ? sel->lim.max_store : -1,
                          memory_order_relaxed);
    atomic_store_explicit(&jsa->pub_tier, sel != NULL, memory_order_relaxed);
}

bool
js_limits_check(const nd_jsa_t *jsa, const nd_acct_js_t *sel, int64_t max_consumers, bool memory,
                int64_t add_bytes, int64_t reserved, nd_jserr_t *err)
{
    if (max_consumers > 0 && sel->max_consumers > 0 && max_consumers > sel->max_consumers)
        return nd_jserr_set(err, ND_JSE_MAXIMUM_CONSUMERS_LIMIT, (const char *)NULL);
    if (add_bytes < 0)
        add_bytes = 1;
    const nd_js_t *js = jsa->js;
    if (memory) {
        int64_t sres = atomic_load_explicit(&js->mem_reserved, memory_order_relaxed);
        if ((sel->max_memory >= 0 && reserved + add_bytes > sel->max_memory) ||
            sres + add_bytes > js->max_memory)
            return nd_jserr_set(err, ND_JSE_MEMORY_RESOURCES_EXCEEDED, (const char *)NULL);
    } else {
        int64_t sres = atomic_load_explicit(&js->store_reserved, memory_order_relaxed);
        if ((sel->max_store >= 0 && reserved + add_bytes > sel->max_store) ||
            sres + add_bytes > js->max_store)
            return nd_jserr_set(err, ND_JSE_STORAGE_RESOURCES_EXCEEDED, (const char *)NULL);
    }
    return true;
}

int64_t
js_limits_reserved(const nd_jsa_t *jsa, bool memory, const char *skip)
{
    /* nats-server's tieredReservation: one tier on one server, so every stream counts. */
    int64_t r = 0;
    for (size_t i = 0; i < jsa->nstreams; i++) {
        const nd_stream_t *st = jsa->streams[i];
        if (st->acfg.max_bytes <= 0 || (st->acfg.storage == ND_STORAGE_MEMORY) != memory ||
            (skip != NULL && strcmp(st->name, skip) == 0))
            continue;
        r += st->acfg.max_bytes * (st->acfg.num_replicas > 0 ? st->acfg.num_replicas : 1);
    }
    return r;
}

void
js_limits_reserve(nd_js_t *js, bool memory, int64_t max_bytes, int sign)
{
    if (max_bytes <= 0)
        return;
    atomic_fetch_add_explicit(memory ? &js->mem_reserved : &js->store_reserved,
                              sign < 0 ? -max_bytes : max_bytes, memory_order_relaxed);
}

void
js_usage_sync(nd_stream_t *st)
{
    if (st->store == NULL)
        return;
    nd_store_state_t s;
    nd_store_state(st->store, &s);
    int64_t delta = (int64_t)s.bytes - st->used;
    if (delta == 0)
        return;
    st->used = (int64_t)s.bytes;
    bool mem = st->cfg.storage == ND_STORAGE_MEMORY;
    nd_jsa_t *jsa = st->jsa;
    atomic_fetch_add_explicit(mem ? &jsa->mem_used : &jsa->store_used, delta,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(mem ? &jsa->js->mem_used : &jsa->js->store_used, delta,
                              memory_order_relaxed);
}

/* What the stream stored since its last js_usage_sync (the end of its previous turn): the
 * shared totals plus this are exact for the stream's own checks, without an atomic
 * read-modify-write on the shared counters per publish. */
static int64_t
unsynced(nd_stream_t *st)
{
    if (st->store == NULL)
        return 0;
    nd_store_state_t s;
    nd_store_state(st->store, &s);
    return (int64_t)s.bytes - st->used;
}

nd_jse_t
js_limits_server_exceeded(nd_stream_t *st)
{
    nd_js_t *js = st->jsa->js;
    bool mem = st->cfg.storage == ND_STORAGE_MEMORY;
    int64_t used = atomic_load_explicit(mem ? &js->mem_used : &js->store_used,
                                        memory_order_relaxed) +
                   unsynced(st);
    if (used <= (mem ? js->max_memory : js->max_store))
        return ND_JSE_NONE;
    static _Atomic int64_t last;
    int64_t now = js_now(), prev = atomic_load_explicit(&last, memory_order_relaxed);
    if (now - prev > 10000000000LL &&
        atomic_compare_exchange_strong_explicit(&last, &prev, now, memory_order_relaxed,
                                                memory_order_relaxed))
        nd_log_error("JetStream resource limits exceeded for server");
    return ND_JSE_INSUFFICIENT_RESOURCES;
}

nd_jse_t
js_limits_account_exceeded(nd_stream_t *st, uint64_t size)
{
    nd_jsa_t *jsa = st->jsa;
    if (!atomic_load_explicit(&jsa->pub_tier, memory_order_relaxed))
        return ND_JSE_NO_LIMITS;
    bool mem = st->cfg.storage == ND_STORAGE_MEMORY;
    int64_t max = atomic_load_explicit(mem ? &jsa->pub_max_mem : &jsa->pub_max_store,
                                       memory_order_relaxed);
    if (max < 0)
        return ND_JSE_NONE;
    int64_t used = atomic_load_explicit(mem ? &jsa->mem_used : &jsa->store_used,
                                        memory_order_relaxed) +
                   unsynced(st);
    if (used + (int64_t)size <= max)
        return ND_JSE_NONE;
    static _Atomic int64_t last;
    int64_t now = js_now(), prev = atomic_load_explicit(&last, memory_order_relaxed);
    if (now - prev > 1000000000LL &&
        atomic_compare_exchange_strong_explicit(&last, &prev, now, memory_order_relaxed,
                                                memory_order_relaxed))
        nd_log_warn("JetStream resource limits exceeded for account: \"%s\"",
                    nd_acct_name(jsa->acct));
    return ND_JSE_ACCOUNT_RESOURCES_EXCEEDED;
}
