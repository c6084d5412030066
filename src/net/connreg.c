/* The connection registry; see connreg.h for who writes what and when. */
#include "net/connreg.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "actors/alloc.h"
#include "actors/timer.h"

struct nd_connreg {
    pthread_mutex_t lock;
    nd_connreg_ident_fn *ident; /* immutable */
    /* under lock */
    nd_mon_conn_t *head;
    uint32_t live;
    nd_conn_info_t **ring; /* max_closed slots; ring_first is the oldest of ring_n */
    size_t ring_cap, ring_first, ring_n;
    uint64_t closed_in_msgs, closed_in_bytes, closed_out_msgs, closed_out_bytes;
    uint64_t total_conns, slow_consumers;
};

int64_t
nd_mon_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

nd_connreg_t *
nd_connreg_new(int64_t max_closed, nd_connreg_ident_fn *ident)
{
    nd_connreg_t *r = nd_new(nd_connreg_t);
    r->ident = ident;
    pthread_mutex_init(&r->lock, NULL);
    r->ring_cap = max_closed > 0 ? (size_t)max_closed : 0;
    /* The ring's slots are allocated as it fills, so a server with few closes pays little. */
    return r;
}

static void
info_free(nd_conn_info_t *ci)
{
    for (size_t i = 0; i < ci->nsubs; i++) {
        nd_free(ci->subs[i].subject);
        nd_free(ci->subs[i].queue);
        nd_free(ci->subs[i].sid);
    }
    nd_free(ci->subs);
    nd_free(ci->name);
    nd_free(ci->mqtt_client);
    nd_free(ci->user);
    nd_free(ci->account);
    nd_free(ci->lang);
    nd_free(ci->version);
    nd_free(ci);
}

void
nd_connreg_free(nd_connreg_t *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->ring_n; i++) {
        nd_conn_info_t *ci = r->ring[(r->ring_first + i) % r->ring_cap];
        /* Closed infos hold no actor reference, so no ctx is needed to drop them. acq_rel: as
         * in nd_conn_info_unref. */
        if (atomic_fetch_sub_explicit(&ci->refs, 1, memory_order_acq_rel) == 1)
            info_free(ci);
    }
    nd_free(r->ring);
    pthread_mutex_destroy(&r->lock);
    nd_free(r);
}

void
nd_connreg_add(nd_connreg_t *r, nd_mon_conn_t *mc)
{
    mc->start_ns = nd_mon_wall_ns();
    mc->start_mono_ns = nd_now_ns();
    atomic_store_explicit(&mc->last_ns, mc->start_ns, memory_order_relaxed);
    pthread_mutex_lock(&r->lock);
    mc->prev = NULL;
    mc->next = r->head;
    if (r->head != NULL)
        r->head->prev = mc;
    r->head = mc;
    mc->registered = true;
    r->live++;
    r->total_conns++;
    pthread_mutex_unlock(&r->lock);
}

void
nd_connreg_ping_sent(nd_mon_conn_t *mc)
{
    if (mc->ping_sent_ns == 0)
        mc->ping_sent_ns = nd_now_ns();
}

void
nd_connreg_pong(nd_mon_conn_t *mc)
{
    if (mc->ping_sent_ns == 0)
        return;
    uint64_t rtt = nd_now_ns() - mc->ping_sent_ns;
    mc->ping_sent_ns = 0;
    atomic_store_explicit(&mc->rtt_ns, (int64_t)(rtt > 0 ? rtt : 1), memory_order_relaxed);
}

void
nd_connreg_connect(nd_mon_conn_t *mc)
{
    uint64_t rtt = nd_now_ns() - mc->start_mono_ns;
    atomic_store_explicit(&mc->rtt_ns, (int64_t)(rtt > 0 ? rtt : 1), memory_order_relaxed);
}

static char *
dup_or_null(const char *s)
{
    return s != NULL ? nd_xstrdup(s) : NULL;
}

/* One allocation for the six strings (NULL when all are NULL). */
static nd_mon_meta_t *
meta_new(const char *name, const char *lang, const char *version, const char *user,
         const char *account, const char *mqtt)
{
    const char *v[6] = {name, lang, version, user, account, mqtt};
    size_t len[6], total = sizeof(nd_mon_meta_t);
    bool any = false;
    for (int i = 0; i < 6; i++) {
        len[i] = v[i] != NULL ? strlen(v[i]) + 1 : 0;
        total += len[i];
        any |= v[i] != NULL;
    }
    if (!any)
        return NULL;
    nd_mon_meta_t *m = nd_xmalloc(total);
    char *p = (char *)(m + 1);
    char **dst[6] = {&m->name, &m->lang, &m->version, &m->user, &m->account, &m->mqtt};
    for (int i = 0; i < 6; i++) {
        *dst[i] = v[i] != NULL ? memcpy(p, v[i], len[i]) : NULL;
        p += len[i];
    }
    return m;
}

/* Replaces the strings: the first three when connect, else the last two. */
static void
meta_set(nd_connreg_t *r, nd_mon_conn_t *mc, bool connect, const char *a, const char *b,
         const char *c)
{
    /* Only the owner replaces meta, so reading it here without the mutex is safe. */
    const nd_mon_meta_t *o = mc->meta;
    const char *mq = o ? o->mqtt : NULL;
    nd_mon_meta_t *m =
        connect ? meta_new(a, b, c, o ? o->user : NULL, o ? o->account : NULL, mq)
                : meta_new(o ? o->name : NULL, o ? o->lang : NULL, o ? o->version : NULL, a, b, mq);
    pthread_mutex_lock(&r->lock);
    nd_mon_meta_t *old = mc->meta;
    mc->meta = m;
    pthread_mutex_unlock(&r->lock);
    nd_free(old);
}

void
nd_connreg_set_meta(nd_connreg_t *r, nd_mon_conn_t *mc, const char *name, const char *lang,
                    const char *version)
{
    meta_set(r, mc, true, name, lang, version);
}

void
nd_connreg_set_mqtt(nd_connreg_t *r, nd_mon_conn_t *mc, const char *client_id)
{
    const nd_mon_meta_t *o = mc->meta;
    nd_mon_meta_t *m = meta_new(o ? o->name : NULL, o ? o->lang : NULL, o ? o->version : NULL,
                                o ? o->user : NULL, o ? o->account : NULL, client_id);
    pthread_mutex_lock(&r->lock);
    nd_mon_meta_t *old = mc->meta;
    mc->meta = m;
    pthread_mutex_unlock(&r->lock);
    nd_free(old);
}

void
nd_connreg_set_user(nd_connreg_t *r, nd_mon_conn_t *mc, const char *user, const char *account)
{
    meta_set(r, mc, false, user, account, NULL);
}

/* Copies a registered connection's state; *actor gets its actor. Ctx: under r->lock (for the
 * strings, and so that the connection is alive for the ident function). */
static nd_conn_info_t *
info_from(const nd_connreg_t *r, const nd_mon_conn_t *mc, nd_actor_t **actor)
{
    nd_conn_info_t *ci = nd_new(nd_conn_info_t);
    atomic_init(&ci->refs, 1);
    nd_actor_t *a = r->ident(mc, ci);
    if (ci->pending < 0)
        ci->pending = 0;
    if (actor != NULL)
        *actor = a;
    ci->start_ns = mc->start_ns;
    ci->last_ns = atomic_load_explicit(&mc->last_ns, memory_order_relaxed);
    ci->rtt_ns = atomic_load_explicit(&mc->rtt_ns, memory_order_relaxed);
    ci->in_msgs = atomic_load_explicit(&mc->in_msgs, memory_order_relaxed);
    ci->in_bytes = atomic_load_explicit(&mc->in_bytes, memory_order_relaxed);
    ci->out_msgs = atomic_load_explicit(&mc->out_msgs, memory_order_relaxed);
    ci->out_bytes = atomic_load_explicit(&mc->out_bytes, memory_order_relaxed);
    ci->num_subs = atomic_load_explicit(&mc->num_subs, memory_order_relaxed);
    const nd_mon_meta_t *m = mc->meta;
    if (m != NULL) {
        ci->name = dup_or_null(m->name);
        ci->lang = dup_or_null(m->lang);
        ci->version = dup_or_null(m->version);
        ci->user = dup_or_null(m->user);
        ci->account = dup_or_null(m->account);
        ci->mqtt_client = dup_or_null(m->mqtt);
    }
    return ci;
}

void
nd_conn_info_set_subs(nd_conn_info_t *ci, nd_sub_t *const *subs, size_t n)
{
    ci->subs = n > 0 ? nd_xcalloc(n, sizeof(*ci->subs)) : NULL;
    ci->nsubs = n;
    for (size_t i = 0; i < n; i++) {
        const nd_sub_t *s = subs[i];
        ci->subs[i].subject = nd_xstrndup(s->subject, s->subject_len);
        ci->subs[i].queue = s->queue != NULL ? nd_xstrndup(s->queue, s->queue_len) : NULL;
        ci->subs[i].sid = nd_xstrndup(s->sid, s->sid_len);
        ci->subs[i].msgs = atomic_load_explicit(&s->delivered, memory_order_relaxed);
        ci->subs[i].max = atomic_load_explicit(&s->max_msgs, memory_order_relaxed);
    }
    ci->subs_known = true;
}

void
nd_connreg_remove(nd_connreg_t *r, nd_mon_conn_t *mc, const char *reason, bool slow,
                  nd_sub_t *const *subs, size_t nsubs)
{
    if (!mc->registered)
        return;
    /* The subscriptions are copied outside the lock: only this connection writes them. */
    nd_conn_info_t *ci = NULL;
    nd_conn_info_t *evicted = NULL;
    pthread_mutex_lock(&r->lock);
    if (r->ring_cap > 0) {
        ci = info_from(r, mc, NULL);
        ci->stop_ns = nd_mon_wall_ns();
        ci->reason = reason;
        ci->pending = 0;
    }
    if (mc->prev != NULL)
        mc->prev->next = mc->next;
    else
        r->head = mc->next;
    if (mc->next != NULL)
        mc->next->prev = mc->prev;
    mc->prev = mc->next = NULL;
    mc->registered = false;
    r->live--;
    r->closed_in_msgs += atomic_load_explicit(&mc->in_msgs, memory_order_relaxed);
    r->closed_in_bytes += atomic_load_explicit(&mc->in_bytes, memory_order_relaxed);
    r->closed_out_msgs += atomic_load_explicit(&mc->out_msgs, memory_order_relaxed);
    r->closed_out_bytes += atomic_load_explicit(&mc->out_bytes, memory_order_relaxed);
    if (slow)
        r->slow_consumers++;
    nd_mon_meta_t *meta = mc->meta;
    mc->meta = NULL;
    pthread_mutex_unlock(&r->lock);
    nd_free(meta);
    if (ci == NULL)
        return;
    nd_conn_info_set_subs(ci, subs, nsubs);
    ci->num_subs = (uint32_t)nsubs;
    pthread_mutex_lock(&r->lock);
    if (r->ring == NULL)
        r->ring = nd_xcalloc(r->ring_cap, sizeof(*r->ring));
    if (r->ring_n == r->ring_cap) {
        evicted = r->ring[r->ring_first];
        r->ring[r->ring_first] = ci;
        r->ring_first = (r->ring_first + 1) % r->ring_cap;
    } else {
        r->ring[(r->ring_first + r->ring_n) % r->ring_cap] = ci;
        r->ring_n++;
    }
    pthread_mutex_unlock(&r->lock);
    /* acq_rel: as in nd_conn_info_unref (the last holder frees after every other holder's
     * reads). */
    if (evicted != NULL && atomic_fetch_sub_explicit(&evicted->refs, 1, memory_order_acq_rel) == 1)
        info_free(evicted);
}

size_t
nd_connreg_live(nd_connreg_t *r, uint64_t cid, nd_conn_info_t ***out)
{
    pthread_mutex_lock(&r->lock);
    size_t cap = cid != 0 ? 1 : r->live, n = 0;
    nd_conn_info_t **a = nd_xmalloc((cap > 0 ? cap : 1) * sizeof(*a));
    for (nd_mon_conn_t *mc = r->head; mc != NULL && n < cap; mc = mc->next) {
        if (cid != 0) {
            nd_conn_info_t id = {0};
            r->ident(mc, &id);
            if (id.cid != cid)
                continue;
        }
        nd_actor_t *actor;
        nd_conn_info_t *ci = info_from(r, mc, &actor);
        /* The actor is alive: it unlinks itself under this lock before it can be freed. */
        ci->actor = actor;
        nd_actor_ref(ci->actor);
        a[n++] = ci;
    }
    pthread_mutex_unlock(&r->lock);
    *out = a;
    return n;
}

size_t
nd_connreg_closed(nd_connreg_t *r, uint64_t cid, nd_conn_info_t ***out)
{
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    nd_conn_info_t **a = nd_xmalloc((r->ring_n > 0 ? r->ring_n : 1) * sizeof(*a));
    for (size_t i = 0; i < r->ring_n; i++) {
        nd_conn_info_t *ci = r->ring[(r->ring_first + i) % r->ring_cap];
        if (cid != 0 && ci->cid != cid)
            continue;
        atomic_fetch_add_explicit(&ci->refs, 1, memory_order_relaxed);
        a[n++] = ci;
    }
    pthread_mutex_unlock(&r->lock);
    *out = a;
    return n;
}

void
nd_connreg_totals(nd_connreg_t *r, nd_connreg_totals_t *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutex_lock(&r->lock);
    t->in_msgs = r->closed_in_msgs;
    t->in_bytes = r->closed_in_bytes;
    t->out_msgs = r->closed_out_msgs;
    t->out_bytes = r->closed_out_bytes;
    for (nd_mon_conn_t *mc = r->head; mc != NULL; mc = mc->next) {
        t->in_msgs += atomic_load_explicit(&mc->in_msgs, memory_order_relaxed);
        t->in_bytes += atomic_load_explicit(&mc->in_bytes, memory_order_relaxed);
        t->out_msgs += atomic_load_explicit(&mc->out_msgs, memory_order_relaxed);
        t->out_bytes += atomic_load_explicit(&mc->out_bytes, memory_order_relaxed);
        t->live_subs += atomic_load_explicit(&mc->num_subs, memory_order_relaxed);
    }
    t->total_conns = r->total_conns;
    t->slow_consumers = r->slow_consumers;
    t->live = r->live;
    pthread_mutex_unlock(&r->lock);
}

void
nd_conn_info_ref(nd_conn_info_t *ci)
{
    atomic_fetch_add_explicit(&ci->refs, 1, memory_order_relaxed);
}

void
nd_conn_info_unref(nd_ctx_t *ctx, nd_conn_info_t *ci)
{
    /* acq_rel: the last holder must see what other holders wrote (the subscriptions a
     * connection filled in before replying) before freeing. */
    if (atomic_fetch_sub_explicit(&ci->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (ci->actor != NULL)
        nd_actor_unref(ctx, ci->actor);
    info_free(ci);
}

void
nd_connreg_release_all(nd_ctx_t *ctx, nd_conn_info_t **infos, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nd_conn_info_unref(ctx, infos[i]);
    nd_free(infos);
}

void
nd_connreg_answer_subs(nd_ctx_t *ctx, nd_mon_msg_subs_t *m)
{
    nd_mon_msg_subs_reply_t *rep = ND_MSG_NEW(ctx, nd_mon_msg_subs_reply_t, m->reply_id);
    rep->tag = m->tag;
    rep->info = m->info; /* the request's reference passes to the reply */
    m->info = NULL;
    nd_actor_send(ctx, m->reply_to, &rep->hdr);
    nd_actor_unref(ctx, m->reply_to);
    m->reply_to = NULL;
}
