/* The consumer actor (consumer_int.h has the picture): delivery to push subscribers and pull
 * requesters, acks, redelivery, flow control, heartbeats, inactivity and persistence.
 *
 * Delivery (nats-server consumer.go getNextMsg / loopAndGatherMsgs, in our shape): on each turn
 * that can deliver, the actor picks a message (a due redelivery first, then the last-per-subject
 * list, then the next stored message matching its filters at or after `sseq`, unless
 * max_ack_pending is reached), then a target (the deliver subject while someone listens, else
 * the oldest pull request that still has interest and is not expired), sends it and only then
 * commits: a message nobody received is not counted as delivered, so a push consumer without
 * interest or a pull requester gone away loses nothing. At most DELIVER_BUDGET messages go per
 * turn; the actor calls itself to go on, so acks and requests interleave with long runs.
 *
 * Acks ($JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>): +ACK removes the
 * pending entry (ack policy all: every entry up to it), -NAK schedules a redelivery (now or
 * after its delay), +WPI restarts ack_wait, +TERM drops the message for good (advisory), +NXT
 * acks and asks for more. A deadline that passes puts the sequence on the redelivery queue;
 * max_deliver reached drops it from pending with the MAX_DELIVERIES advisory, as 2.11 does.
 *
 * Persistence: the state (delivered, ack floor, pending with delivery counts) is written
 * through the store's consumer-state API, by the actor, under the store's lock: at the end of
 * any turn with a double ack (an ack with a reply), before that reply leaves, so a confirmed ack
 * is never redelivered after a crash; otherwise at most PERSIST_DELAY after a change. With
 * sync_interval: always the store makes each write durable before it returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "js/consumer_int.h"
#include "subj/subject.h"
#include "util/evid.h"
#include "util/log.h"
#include "util/timefmt.h"

#define DELIVER_BUDGET   256
#define PERSIST_DELAY    (5 * 1000000LL)      /* 5 ms */
#define INTEREST_MIN     (100 * 1000000LL)    /* push: recheck interest after 100 ms ... */
#define INTEREST_MAX     (1000 * 1000000LL)   /* ... backing off to 1 s */
#define FC_LIMIT         (32u << 20)          /* nats-server's JsFlowControlMaxPending */
/* Messages waiting in a consumer's mailbox (acks, pull requests): a flood of pull requests
 * is answered (409 Exceeded MaxWaiting) as fast as it comes, so only a burst past this many
 * finds the mailbox full. */
#define CONSUMER_QUEUE_LIMIT 262144

/* ---- references ---- */

void
js_consumer_ref(nd_consumer_t *c)
{
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void
js_consumer_unref(nd_consumer_t *c)
{
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    nd_consumer_cfg_free(&c->scfg);
    nd_consumer_cfg_free(&c->cfg);
    json_decref(c->cfg_json);
    pthread_mutex_destroy(&c->mu);
    js_stream_unref(c->st);
    nd_free(c->name);
    nd_free(c->ack_prefix);
    nd_free(c->fc_prefix);
    nd_free(c);
}

nd_consumer_t *
js_consumer_new(nd_stream_t *st, nd_consumer_cfg_t *cfg, int64_t created)
{
    nd_consumer_t *c = nd_xcalloc(1, sizeof *c);
    atomic_init(&c->refs, 1); /* the table's */
    js_stream_ref(st);
    c->st = st;
    c->name = nd_xstrdup(cfg->name);
    c->created_ns = created;
    c->ephemeral = !cfg->durable;
    c->retention = st->cfg.retention; /* cannot change (a stream update refuses it) */
    c->cfg = *cfg; /* takes it */
    memset(cfg, 0, sizeof *cfg);
    nd_consumer_cfg_copy(&c->scfg, &c->cfg);
    c->cfg_json = json_incref(c->cfg.json); /* shared: see nd_consumer_cfg_copy */
    c->ack_prefix = js_path("$JS.ACK.%s.%s.", st->name, c->name);
    c->fc_prefix = js_path("$JS.FC.%s.%s.", st->name, c->name);
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

/* ---- small helpers ---- */

static int64_t
sat_add(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

static bool
is_push(const nd_consumer_t *c)
{
    return c->cfg.deliver_subject != NULL;
}

static bool
acks(const nd_consumer_t *c)
{
    return c->cfg.ack_policy != ND_ACK_NONE;
}

/* The ack wait for a delivery count: backoff[dc-1] (its last entry past its end), or
 * ack_wait. */
static int64_t
ack_wait_for(const nd_consumer_t *c, uint32_t dc)
{
    if (c->cfg.nbackoff > 0) {
        size_t i = dc > 0 ? dc - 1 : 0;
        if (i >= c->cfg.nbackoff)
            i = c->cfg.nbackoff - 1;
        return c->cfg.backoff_ns[i];
    }
    return c->cfg.ack_wait_ns;
}

/* ---- retention: the stream drops what its consumers acknowledged ---- */

/* Notes an acknowledged sequence for the stream (interest and workqueue retention). */
static void
retention_ack(nd_consumer_t *c, uint64_t sseq)
{
    if (c->retention == ND_RETENTION_LIMITS)
        return;
    if (c->nracks == c->racks_cap) {
        c->racks_cap = c->racks_cap ? c->racks_cap * 2 : 16;
        c->racks = nd_xrealloc(c->racks, c->racks_cap * sizeof *c->racks);
    }
    c->racks[c->nracks++] = sseq;
}

/* ---- pending deque ---- */

static uint32_t
dc_clamp(uint32_t dc)
{
    return dc > JS_PEND_DC_MAX ? JS_PEND_DC_MAX : dc;
}

/* The deadline of p leaves the delivery order: into the heap at `at`. */
static void
pend_move(nd_consumer_t *c, js_pend_t *p, int64_t at)
{
    p->moved = 1;
    nd_store_ttls_push(&c->rdl, at, p->sseq);
}

static js_pend_t *
pend_find(nd_consumer_t *c, uint64_t sseq)
{
    size_t lo = c->phead, hi = c->ptail;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->pend[mid].sseq < sseq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < c->ptail && c->pend[lo].sseq == sseq && c->pend[lo].dc != 0)
        return &c->pend[lo];
    return NULL;
}

/* Drops the holes at the head, so pend[phead] is the oldest live entry (the ack floor's
 * successor). */
static void
pend_trim(nd_consumer_t *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->phead < c->ptail && c->pend[c->phead].dc == 0)
        c->phead++;
    if (c->phead == c->ptail)
        c->phead = c->ptail = c->pscan = 0;
    pthread_mutex_unlock(&c->mu);
}

static void
pend_append(nd_consumer_t *c, uint64_t sseq, uint64_t dseq, int64_t ts, uint32_t dc)
{
    pthread_mutex_lock(&c->mu);
    if (c->ptail == c->pcap) {
        /* Compact the holes away first; grow when still more than 3/4 full. */
        size_t w = 0;
        for (size_t i = c->phead; i < c->ptail; i++)
            if (c->pend[i].dc != 0)
                c->pend[w++] = c->pend[i];
        c->phead = 0;
        c->ptail = w;
        c->pscan = 0;
        if (w + w / 3 >= c->pcap) {
            c->pcap = c->pcap ? c->pcap * 2 : 64;
            c->pend = nd_xrealloc(c->pend, c->pcap * sizeof *c->pend);
        }
    }
    c->pend[c->ptail++] =
        (js_pend_t){.sseq = sseq, .dseq = dseq, .ts = ts, .dc = dc_clamp(dc), .moved = 0};
    c->plive++;
    pthread_mutex_unlock(&c->mu);
}

/* The floors follow the oldest live entry: everything before it is acknowledged. */
static void
floors_update(nd_consumer_t *c)
{
    pend_trim(c);
    if (c->plive == 0) {
        c->adflr = c->dseq;
        c->asflr = c->dsseq;
    } else {
        const js_pend_t *p = &c->pend[c->phead];
        c->adflr = p->dseq - 1;
        c->asflr = p->sseq - 1;
    }
}

static void
pend_drop(nd_consumer_t *c, js_pend_t *p)
{
    if (p->dc > 1)
        c->nredelivered--;
    pthread_mutex_lock(&c->mu);
    p->dc = 0;
    c->plive--;
    pthread_mutex_unlock(&c->mu);
    c->dirty = true;
    retention_ack(c, p->sseq);
}

bool
js_consumer_needs_ack(nd_consumer_t *c, uint64_t sseq)
{
    pthread_mutex_lock(&c->mu);
    bool need;
    if (sseq >= c->next_pub)
        need = true; /* not delivered yet */
    else
        need = pend_find(c, sseq) != NULL;
    pthread_mutex_unlock(&c->mu);
    return need;
}

/* ---- the stream's store ---- */

static nd_store_t *
store_acquire(nd_consumer_t *c)
{
    return nd_store_locked_acquire(&c->st->ls);
}

static void
store_release(nd_consumer_t *c)
{
    nd_store_locked_release(&c->st->ls);
}

/* Messages matching the filters at or after seq. Ctx: store held. */
static uint64_t
count_pending(nd_consumer_t *c, nd_store_t *s, uint64_t seq)
{
    if (c->cfg.nfilters == 0)
        return s->ops->num_pending(s, NULL, 0, seq, false);
    uint64_t n = 0;
    for (size_t i = 0; i < c->cfg.nfilters; i++)
        n += s->ops->num_pending(s, c->cfg.filters[i], strlen(c->cfg.filters[i]), seq, false);
    return n;
}

/* What num_pending shows: the last-per-subject messages still to go, then the messages
 * matching the filters from where new deliveries go on. Ctx: store held. */
static uint64_t
pending_now(nd_consumer_t *c, nd_store_t *s)
{
    nd_store_state_t ss;
    s->ops->state(s, &ss);
    c->npc_upto = ss.last_seq;
    if (c->lss != NULL)
        return (c->lss_len - c->lss_pos) + count_pending(c, s, c->lss_resume);
    return count_pending(c, s, c->sseq);
}

/* Without filters (and without the gaps interest retention leaves), what the stream stored
 * since the last count adds to num_pending one for one: no recount per wake-up. */
static bool
npc_incremental(const nd_consumer_t *c)
{
    return c->cfg.nfilters == 0 && c->retention != ND_RETENTION_INTEREST;
}

static void
npc_add_new(nd_consumer_t *c)
{
    if (!npc_incremental(c))
        return;
    uint64_t v = atomic_load_explicit(&c->st->visible_seq, memory_order_acquire);
    uint64_t from = c->npc_upto > c->sseq - 1 ? c->npc_upto : c->sseq - 1;
    if (v > from)
        c->npc += v - from;
    if (v > c->npc_upto)
        c->npc_upto = v;
}

/* The next message matching the filters at or after seq into c->msg. Ctx: store held. */
static bool
load_next(nd_consumer_t *c, nd_store_t *s, uint64_t seq)
{
    if (c->cfg.nfilters <= 1) {
        const char *f = c->cfg.nfilters ? c->cfg.filters[0] : NULL;
        return s->ops->load_next(s, f, f ? strlen(f) : 0, seq, &c->msg) == ND_OK;
    }
    uint64_t best = 0;
    for (size_t i = 0; i < c->cfg.nfilters; i++) {
        nd_store_msg_t m = {0};
        if (s->ops->load_next(s, c->cfg.filters[i], strlen(c->cfg.filters[i]), seq, &m) ==
                ND_OK &&
            (best == 0 || m.seq < best))
            best = m.seq;
        nd_store_msg_free(&m);
    }
    return best != 0 && s->ops->load(s, best, &c->msg) == ND_OK;
}

/* ---- advisories ---- */

json_t *
js_consumer_event_new(nd_ctx_t *ctx, const char *type)
{
    char id[23];
    nd_event_id(ctx, id);
    json_t *a = json_object();
    json_object_set_new(a, "type", json_string(type));
    json_object_set_new(a, "id", json_string(id));
    json_object_set_new(a, "timestamp", js_time(js_now()));
    return a;
}

void
js_consumer_event_domain(const nd_consumer_t *c, json_t *ev)
{
    const char *dom = c->st->jsa->js->domain;
    if (dom[0] != '\0')
        json_object_set_new(ev, "domain", json_string(dom));
}

void
js_consumer_event_send(nd_ctx_t *ctx, nd_consumer_t *c, const char *subj, json_t *ev)
{
    js_send(ctx, c->ic, subj, ev);
}

/* $JS.EVENT.ADVISORY.CONSUMER.<kind>.<stream>.<consumer>: the event header, stream, consumer,
 * the fields of o (stolen), domain. */
static void
advise(nd_ctx_t *ctx, nd_consumer_t *c, const char *kind, const char *type, json_t *o)
{
    json_t *a = js_consumer_event_new(ctx, type);
    json_object_set_new(a, "stream", json_string(c->st->name));
    json_object_set_new(a, "consumer", json_string(c->name));
    json_object_update(a, o);
    json_decref(o);
    js_consumer_event_domain(c, a);
    char *subj = js_path("$JS.EVENT.ADVISORY.CONSUMER.%s.%s.%s", kind, c->st->name, c->name);
    js_send(ctx, c->ic, subj, a);
    nd_free(subj);
}

static void
advise_max_deliveries(nd_ctx_t *ctx, nd_consumer_t *c, uint64_t sseq, uint64_t dc)
{
    json_t *o = json_object();
    json_object_set_new(o, "stream_seq", json_integer((json_int_t)sseq));
    json_object_set_new(o, "deliveries", json_integer((json_int_t)dc));
    advise(ctx, c, "MAX_DELIVERIES", "io.nats.jetstream.advisory.v1.max_deliver", o);
}

/* ---- persistence ---- */

static void
state_of(nd_consumer_t *c, nd_consumer_state_t *s)
{
    memset(s, 0, sizeof *s);
    s->delivered_cseq = c->dseq;
    s->delivered_sseq = c->dsseq;
    s->ack_floor_cseq = c->adflr;
    s->ack_floor_sseq = c->asflr;
    if (c->plive == 0)
        return;
    s->pending = nd_xmalloc(c->plive * sizeof *s->pending);
    size_t nr = 0;
    for (size_t i = c->phead; i < c->ptail; i++) {
        const js_pend_t *p = &c->pend[i];
        if (p->dc == 0)
            continue;
        s->pending[s->npending++] = (nd_store_pending_t){p->sseq, p->dseq, p->ts};
        if (p->dc > 1)
            nr++;
    }
    if (nr > 0) {
        s->redelivered = nd_xmalloc(nr * sizeof *s->redelivered);
        for (size_t i = c->phead; i < c->ptail; i++) {
            const js_pend_t *p = &c->pend[i];
            if (p->dc > 1)
                s->redelivered[s->nredelivered++] = (nd_store_redelivered_t){p->sseq, p->dc - 1};
        }
    }
}

/* Writes the state when it changed. Returns: false when the write failed. */
static bool
persist(nd_consumer_t *c)
{
    if (!c->dirty)
        return true;
    nd_consumer_state_t s;
    state_of(c, &s);
    bool ok = true;
    nd_store_t *in = store_acquire(c);
    if (in != NULL && c->cs_gen != c->st->ls.gen) {
        c->cs = NULL;
        if (in->ops->consumer_open(in, c->name, &c->cs) == ND_OK)
            c->cs_gen = c->st->ls.gen;
    }
    if (in != NULL && c->cs != NULL) {
        nd_err_t e = in->ops->consumer_update(c->cs, &s);
        if (e != ND_OK) {
            ok = false;
            nd_log_error("JetStream could not write the state of consumer '%s > %s > %s': %s",
                         nd_acct_name(c->st->jsa->acct), c->st->name, c->name, nd_strerror(e));
        }
    }
    store_release(c);
    nd_consumer_state_free(&s);
    if (ok) {
        c->dirty = false;
        c->persist_due = 0;
    }
    return ok;
}

/* Loads the persisted state (a recovered consumer): pending entries in sseq order with their
 * delivery counts, and their redelivery deadlines. */
static void
restore_state(nd_consumer_t *c)
{
    nd_consumer_state_t s = {0};
    nd_store_t *in = store_acquire(c);
    bool have = false;
    if (in != NULL && in->ops->consumer_open(in, c->name, &c->cs) == ND_OK) {
        c->cs_gen = c->st->ls.gen;
        /* a new consumer starts where its policy says, whatever an old one of its name left */
        have = c->recovered && in->ops->consumer_state(c->cs, &s) == ND_OK;
    }
    nd_store_state_t ss = {0};
    if (in != NULL)
        in->ops->state(in, &ss);
    store_release(c);
    if (!have)
        return;
    c->dseq = s.delivered_cseq;
    c->dsseq = s.delivered_sseq;
    c->adflr = s.ack_floor_cseq;
    c->asflr = s.ack_floor_sseq;
    /* the stored position, not the policy applied to the stream as it is now (a deliver-new
     * consumer would skip what arrived while it was down) */
    c->sseq = s.delivered_sseq + 1;
    nd_free(c->lss);
    c->lss = NULL;
    c->lss_pos = c->lss_len = 0;
    size_t r = 0;
    for (size_t i = 0; i < s.npending; i++) {
        const nd_store_pending_t *p = &s.pending[i];
        uint32_t dc = 1;
        while (r < s.nredelivered && s.redelivered[r].sseq < p->sseq)
            r++;
        if (r < s.nredelivered && s.redelivered[r].sseq == p->sseq)
            dc = (uint32_t)(s.redelivered[r].count + 1);
        if (p->sseq < ss.first_seq)
            continue; /* gone from the stream meanwhile */
        pend_append(c, p->sseq, p->dseq, p->ts, dc);
        if (dc > 1)
            c->nredelivered++;
        pend_move(c, &c->pend[c->ptail - 1], p->ts + ack_wait_for(c, dc));
    }
    floors_update(c);
    nd_consumer_state_free(&s);
}

/* ---- stats for listings ---- */

static void npc_add_new(nd_consumer_t *c);

static void
stats_publish(nd_consumer_t *c)
{
    if (c->npc_valid)
        npc_add_new(c);
    uint64_t nr = c->nredelivered;
    pthread_mutex_lock(&c->mu);
    c->stats = (js_consumer_stats_t){
        .dseq = c->dseq, .sseq = c->dsseq, .adflr = c->adflr, .asflr = c->asflr,
        .last_delivered = c->last_delivered, .last_acked = c->last_acked,
        .ack_pending = c->plive, .redelivered = nr, .waiting = c->wq_len,
        .push_bound = is_push(c) && c->active,
        .npending = c->npc,
        .pin_ts = c->pin_ts,
    };
    memcpy(c->stats.pin_id, c->pin_id, sizeof c->pin_id);
    pthread_mutex_unlock(&c->mu);
}

static json_t *
seq_info(uint64_t cseq, uint64_t sseq, int64_t last)
{
    json_t *o = json_object();
    json_object_set_new(o, "consumer_seq", json_integer((json_int_t)cseq));
    json_object_set_new(o, "stream_seq", json_integer((json_int_t)sseq));
    if (last != 0)
        json_object_set_new(o, "last_active", js_time(last));
    return o;
}

static json_t *
info_json(nd_consumer_t *c, const json_t *cfg, const js_consumer_stats_t *s, uint64_t npending)
{
    json_t *o = json_object();
    json_object_set_new(o, "stream_name", json_string(c->st->name));
    json_object_set_new(o, "name", json_string(c->name));
    json_object_set_new(o, "created", js_time(c->created_ns));
    json_object_set_new(o, "config", json_deep_copy(cfg));
    json_object_set_new(o, "delivered", seq_info(s->dseq, s->sseq, s->last_delivered));
    json_object_set_new(o, "ack_floor", seq_info(s->adflr, s->asflr, s->last_acked));
    json_object_set_new(o, "num_ack_pending", json_integer((json_int_t)s->ack_pending));
    json_object_set_new(o, "num_redelivered", json_integer((json_int_t)s->redelivered));
    json_object_set_new(o, "num_waiting", json_integer((json_int_t)s->waiting));
    json_object_set_new(o, "num_pending", json_integer((json_int_t)npending));
    if (s->push_bound)
        json_object_set_new(o, "push_bound", json_true());
    int64_t now = js_now();
    const json_t *pu = json_object_get(cfg, "pause_until");
    int64_t pause_until = 0;
    if (pu != NULL && json_is_string(pu))
        if (nd_time_parse_rfc3339(json_string_value(pu), &pause_until) != 0)
            pause_until = 0;
    if (pause_until > now) {
        json_object_set_new(o, "paused", json_true());
        json_object_set_new(o, "pause_remaining", json_integer(pause_until - now));
    }
    json_object_set_new(o, "ts", js_time(now));
    js_prio_info(o, cfg, s);
    return o;
}

json_t *
js_consumer_list_info(nd_consumer_t *c)
{
    pthread_mutex_lock(&c->mu);
    js_consumer_stats_t s = c->stats;
    json_t *cfg = json_incref(c->cfg_json); /* never changed: info_json copies it */
    pthread_mutex_unlock(&c->mu);
    json_t *o = info_json(c, cfg, &s, s.npending);
    json_decref(cfg);
    return o;
}

/* ---- sending ---- */

static void
send_status(nd_ctx_t *ctx, nd_consumer_t *c, const char *to, const char *status,
            const char *extra)
{
    char hdr[512];
    size_t n = js_status_hdr(hdr, sizeof hdr, status, extra);
    if (n > 0)
        nd_iclient_publish(ctx, c->ic, to, NULL, hdr, n, NULL, 0);
}

static void
send_pending_status(nd_ctx_t *ctx, nd_consumer_t *c, const js_wreq_t *w, const char *status)
{
    char extra[128];
    js_pending_hdrs(extra, sizeof extra, (uint64_t)w->n, (uint64_t)w->b);
    send_status(ctx, c, w->reply, status, extra);
}

static void
send_heartbeat(nd_ctx_t *ctx, nd_consumer_t *c, const char *to)
{
    char extra[256];
    int n = snprintf(extra, sizeof extra, "Nats-Last-Consumer: %" PRIu64
                     "\r\nNats-Last-Stream: %" PRIu64 "\r\n",
                     c->dseq, c->sseq > 0 ? c->sseq - 1 : 0);
    if (c->fc_reply != NULL && (size_t)n < sizeof extra)
        snprintf(extra + n, sizeof extra - (size_t)n, "Nats-Consumer-Stalled: %s\r\n",
                 c->fc_reply);
    send_status(ctx, c, to, "100 Idle Heartbeat", extra);
}

/* ---- pull requests ---- */

static js_wreq_t *
wq_at(nd_consumer_t *c, size_t i)
{
    return &c->wq[(c->wq_head + i) % c->wq_cap];
}

/* Removes the i-th request (order kept). */
static void
wq_remove(nd_consumer_t *c, size_t i)
{
    nd_free(wq_at(c, i)->reply);
    for (size_t j = i; j + 1 < c->wq_len; j++)
        *wq_at(c, j) = *wq_at(c, j + 1);
    c->wq_len--;
    if (c->wq_len == 0)
        c->wq_head = 0;
}

static void
wq_push(nd_consumer_t *c, const js_wreq_t *w)
{
    if (c->wq_len == c->wq_cap) {
        size_t ncap = c->wq_cap ? c->wq_cap * 2 : 8;
        js_wreq_t *n = nd_xmalloc(ncap * sizeof *n);
        for (size_t i = 0; i < c->wq_len; i++)
            n[i] = *wq_at(c, i);
        nd_free(c->wq);
        c->wq = n;
        c->wq_cap = ncap;
        c->wq_head = 0;
    }
    *wq_at(c, c->wq_len++) = *w;
}

/* Expires requests and drops those whose inbox lost interest (nats-server processWaiting);
 * sends due heartbeats. eos: nothing more to deliver now, which ends the no_wait requests that
 * got something. */
static void
wq_process(nd_ctx_t *ctx, nd_consumer_t *c, bool eos)
{
    int64_t now = js_now();
    for (size_t i = 0; i < c->wq_len;) {
        js_wreq_t *w = wq_at(c, i);
        if ((eos && w->no_wait && w->d > 0) || (w->expires != 0 && now >= w->expires)) {
            send_pending_status(ctx, c, w, "408 Request Timeout");
            wq_remove(c, i);
            continue;
        }
        if (eos && w->no_wait && w->d == 0 && w->expires == 0) {
            send_status(ctx, c, w->reply, "404 No Messages", NULL);
            wq_remove(c, i);
            continue;
        }
        if (!nd_iclient_has_interest(ctx, c->ic, w->reply)) {
            wq_remove(c, i);
            continue;
        }
        if (w->hb_ns > 0 && now >= w->hbt) {
            send_heartbeat(ctx, c, w->reply);
            w->hbt = now + w->hb_ns;
        }
        i++;
    }
}

/* ---- delivery ---- */

typedef enum { SRC_NONE, SRC_REDELIVER, SRC_LSS, SRC_NEW } src_t;

/* Picks the next message into c->msg without consuming it. *dc: its delivery count. */
static src_t
peek(nd_ctx_t *ctx, nd_consumer_t *c, nd_store_t *s, uint32_t *dc)
{
    while (c->rdq_len > 0) {
        uint64_t seq = c->rdq[c->rdq_head];
        js_pend_t *p = pend_find(c, seq);
        if (p == NULL) { /* acked meanwhile */
            c->rdq_head = (c->rdq_head + 1) % c->rdq_cap;
            c->rdq_len--;
            continue;
        }
        if (c->cfg.max_deliver > 0 && (int64_t)p->dc >= c->cfg.max_deliver) {
            advise_max_deliveries(ctx, c, seq, p->dc);
            pend_drop(c, p);
            floors_update(c);
            c->rdq_head = (c->rdq_head + 1) % c->rdq_cap;
            c->rdq_len--;
            continue;
        }
        if (s->ops->load(s, seq, &c->msg) != ND_OK) {
            /* gone from the stream: no longer pending, never redelivered */
            pend_drop(c, p);
            floors_update(c);
            c->rdq_head = (c->rdq_head + 1) % c->rdq_cap;
            c->rdq_len--;
            continue;
        }
        *dc = p->dc + 1;
        return SRC_REDELIVER;
    }
    if (acks(c) && c->cfg.max_ack_pending > 0 && (int64_t)c->plive >= c->cfg.max_ack_pending)
        return SRC_NONE;
    while (c->lss_pos < c->lss_len) {
        if (s->ops->load(s, c->lss[c->lss_pos], &c->msg) == ND_OK) {
            *dc = 1;
            return SRC_LSS;
        }
        c->lss_pos++;
    }
    if (c->lss != NULL) {
        nd_free(c->lss);
        c->lss = NULL;
        c->lss_pos = c->lss_len = 0;
        if (c->sseq < c->lss_resume)
            c->sseq = c->lss_resume;
    }
    if (load_next(c, s, c->sseq) &&
        c->msg.seq <= atomic_load_explicit(&c->st->visible_seq, memory_order_acquire)) {
        *dc = 1;
        return SRC_NEW;
    }
    return SRC_NONE;
}

static void
commit(nd_consumer_t *c, src_t src, uint32_t dc, uint64_t dseq, int64_t now)
{
    const nd_store_msg_t *m = &c->msg;
    c->dseq = dseq;
    c->dsseq = m->seq > c->dsseq ? m->seq : c->dsseq;
    c->last_delivered = now;
    switch (src) {
    case SRC_REDELIVER: {
        c->rdq_head = (c->rdq_head + 1) % c->rdq_cap;
        c->rdq_len--;
        js_pend_t *p = pend_find(c, m->seq);
        if (p != NULL) {
            if (p->dc == 1)
                c->nredelivered++;
            p->dc = dc_clamp(dc);
            p->dseq = dseq;
            p->ts = now;
            pend_move(c, p, now + ack_wait_for(c, dc));
        }
        break;
    }
    case SRC_LSS:
        c->lss_pos++;
        /* fall through */
    case SRC_NEW:
        if (m->seq >= c->sseq) {
            c->sseq = m->seq + 1;
            pthread_mutex_lock(&c->mu);
            c->next_pub = c->sseq;
            pthread_mutex_unlock(&c->mu);
        }
        if (c->npc > 0)
            c->npc--;
        if (acks(c)) /* its deadline is in delivery order: no heap entry */
            pend_append(c, m->seq, dseq, now, dc);
        break;
    case SRC_NONE:
        break;
    }
    if (!acks(c)) {
        c->adflr = c->dseq;
        c->asflr = c->dsseq;
        retention_ack(c, m->seq);
    }
    /* with acks, the floors move on acks only (a redelivery keeps them) */
    c->dirty = true;
}

/* Sends c->msg to `to` with the ack subject rp. Returns: the recipients that matched. */
static uint32_t
send_msg(nd_ctx_t *ctx, nd_consumer_t *c, const char *to, const char *rp, const char *xh,
         size_t xl)
{
    const nd_store_msg_t *m = &c->msg;
    const char *hdr = (const char *)m->hdr;
    size_t hl = m->hdr_len;
    const char *data = (const char *)m->data;
    size_t dl = m->data_len;
    char *hbuf = NULL;
    if (xl > 0) {
        /* extra header lines (Nats-Pin-Id) go before the block's final CRLF */
        size_t base = hl >= 4 ? hl - 2 : 0;
        hbuf = nd_xmalloc(hl + xl + 16);
        if (hl == 0) {
            memcpy(hbuf, "NATS/1.0\r\n", 10);
            base = 10;
        } else {
            memcpy(hbuf, hdr, base);
        }
        memcpy(hbuf + base, xh, xl);
        memcpy(hbuf + base + xl, "\r\n", 2);
        hdr = hbuf;
        hl = base + xl + 2;
    }
    if (c->cfg.headers_only) {
        /* headers, plus Nats-Msg-Size with the payload's size, and no payload */
        size_t room = hl + 64;
        char *nb = nd_xmalloc(room);
        size_t base = hl >= 4 ? hl - 2 : 0; /* drop the final CRLF */
        if (hl == 0) {
            memcpy(nb, "NATS/1.0\r\n", 10);
            base = 10;
        } else {
            memcpy(nb, hdr, base);
        }
        base += (size_t)snprintf(nb + base, room - base, "Nats-Msg-Size: %zu\r\n\r\n", dl);
        nd_free(hbuf);
        hbuf = nb;
        hdr = hbuf;
        hl = base;
        data = NULL;
        dl = 0;
    }
    uint32_t got = nd_iclient_deliver(ctx, c->ic, to, m->subj, m->subj_len, rp, hl ? hdr : NULL,
                                      hl, data, dl);
    nd_free(hbuf);
    return got;
}

/* Push: whether someone listens on the deliver subject (a sublist match). While nobody does,
 * the timer looks again every so often (INTEREST_MIN, backing off to INTEREST_MAX), besides
 * each wake-up. */
static bool
push_ready(nd_ctx_t *ctx, nd_consumer_t *c, int64_t now)
{
    if (!c->active) {
        c->active = nd_iclient_has_interest(ctx, c->ic, c->cfg.deliver_subject);
        if (c->active) {
            c->next_interest_check = 0;
        } else if (now >= c->next_interest_check) {
            int64_t back = c->next_interest_check == 0 ? INTEREST_MIN : INTEREST_MAX;
            c->next_interest_check = now + back;
        }
    }
    if (c->active)
        c->last_active = now;
    return c->active;
}

static void
send_flow_control(nd_ctx_t *ctx, nd_consumer_t *c)
{
    char rnd[8];
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    uint64_t r = nd_ctx_rand(ctx);
    for (int i = 0; i < 4; i++) {
        rnd[i] = digits[r % 62];
        r /= 62;
    }
    rnd[4] = '\0';
    nd_free(c->fc_reply);
    c->fc_reply = js_path("%s%s", c->fc_prefix, rnd);
    c->fc_sent_at = c->fc_bytes;
    char hdr[64];
    size_t n = js_status_hdr(hdr, sizeof hdr, "100 FlowControl Request", NULL);
    nd_iclient_publish(ctx, c->ic, c->cfg.deliver_subject, c->fc_reply, hdr, n, NULL, 0);
}

static bool
paused(const nd_consumer_t *c, int64_t now)
{
    return c->cfg.pause_until_ns > now;
}

static void self_signal(nd_ctx_t *ctx, nd_consumer_t *c);

/* Delivers what it can this turn. */
static void
deliver(nd_ctx_t *ctx, nd_consumer_t *c)
{
    if (c->stopped)
        return;
    if (c->create_reply != NULL)
        return; /* on_ready answers the create first: a mirror on another server (over a leaf
                 * node) drops what comes before its consumer's name */
    int64_t now = js_now();
    if (paused(c, now))
        return;
    if (c->pace_at > now)
        return; /* the timer comes back then */
    if (!is_push(c) && c->wq_len == 0)
        return;
    if (is_push(c) && !push_ready(ctx, c, now))
        return;
    nd_store_t *s = store_acquire(c);
    if (s == NULL) {
        store_release(c);
        return;
    }
    if (!c->npc_valid) {
        c->npc = pending_now(c, s);
        c->npc_valid = true;
    } else {
        npc_add_new(c);
    }
    int budget = DELIVER_BUDGET;
    bool eos = false;
    while (budget > 0) {
        uint32_t dc;
        src_t src = peek(ctx, c, s, &dc);
        if (src == SRC_NONE) {
            eos = true;
            break;
        }
        const nd_store_msg_t *m = &c->msg;
        uint64_t dseq = c->dseq + 1;
        uint64_t pending = src == SRC_REDELIVER ? c->npc : (c->npc > 0 ? c->npc - 1 : 0);
        char ackr[64 + JS_ACK_SUBJ_MAX];
        char *ack = ackr;
        size_t need = strlen(c->ack_prefix) + JS_ACK_SUBJ_MAX;
        if (need > sizeof ackr)
            ack = nd_xmalloc(need);
        size_t al = js_ack_subj_format(ack, c->st->name, c->name, dc, m->seq, dseq, m->ts,
                                       pending);
        ack[al] = '\0';
        /* what max_bytes counts: subject, ack subject, headers and data (nats-server) */
        size_t sz = m->subj_len + al + m->hdr_len + m->data_len;
        const char *to;
        js_wreq_t *w = NULL;
        size_t wi = 0;
        if (is_push(c)) {
            if (c->cfg.flow_control && c->fc_reply != NULL &&
                c->fc_bytes - c->fc_acked >= c->fc_window) {
                if (ack != ackr)
                    nd_free(ack);
                break; /* stalled on flow control */
            }
            to = c->cfg.deliver_subject;
        } else {
            /* the oldest request that can take it (priority groups may pass some by) */
            bool need_pin = js_prio_need_pin(c);
            uint64_t npend = src == SRC_REDELIVER ? c->npc + 1 : c->npc;
            while (wi < c->wq_len) {
                w = wq_at(c, wi);
                if (w->expires != 0 && now >= w->expires) {
                    send_pending_status(ctx, c, w, "408 Request Timeout");
                    wq_remove(c, wi);
                    w = NULL;
                    continue;
                }
                if (w->b > 0 && (int64_t)sz > w->b) {
                    send_pending_status(ctx, c, w, "409 Message Size Exceeds MaxBytes");
                    wq_remove(c, wi);
                    w = NULL;
                    continue;
                }
                js_prio_verdict_t v = c->cfg.priority_policy == ND_PRIO_NONE
                                          ? JS_PRIO_TAKE
                                          : js_prio_admit(ctx, c, w, need_pin, npend, now);
                if (v == JS_PRIO_DROP) {
                    wq_remove(c, wi);
                    w = NULL;
                    continue;
                }
                if (v == JS_PRIO_SKIP) {
                    w = NULL;
                    wi++;
                    continue;
                }
                break;
            }
            if (w == NULL) {
                if (ack != ackr)
                    nd_free(ack);
                break;
            }
            to = w->reply;
        }
        if (!js_pace_ready(c, m->ts, sz, now)) {
            if (ack != ackr)
                nd_free(ack);
            break; /* replay spacing or the rate limit: the timer comes back */
        }
        char xh[64];
        size_t xl = is_push(c) ? 0 : js_prio_hdr(c, xh, sizeof xh);
        int64_t mts = m->ts;
        store_release(c);
        uint32_t got = send_msg(ctx, c, to, ack, xh, xl);
        if (ack != ackr)
            nd_free(ack);
        s = store_acquire(c);
        if (got == 0) {
            if (is_push(c)) {
                c->active = false;
                c->next_interest_check = now + INTEREST_MIN;
                break;
            }
            wq_remove(c, wi); /* the requester is gone */
            continue;
        }
        commit(c, src, dc, dseq, now);
        js_pace_sent(c, mts, sz, now);
        budget--;
        if (is_push(c)) {
            if (c->cfg.flow_control) {
                c->fc_bytes += sz;
                if (c->fc_reply == NULL && c->fc_bytes - c->fc_acked > c->fc_window / 2)
                    send_flow_control(ctx, c);
            }
            if (c->cfg.idle_heartbeat_ns > 0)
                c->hb_due = now + c->cfg.idle_heartbeat_ns;
        } else {
            w->d++;
            if (w->b > 0) {
                w->b -= (int64_t)sz;
                if (w->b <= 0)
                    w->n = 1;
            }
            if (w->hb_ns > 0)
                w->hbt = now + w->hb_ns;
            if (--w->n <= 0) {
                /* the batch is full with max_bytes left: said so (2.11) */
                if (w->b > 0)
                    send_pending_status(ctx, c, w, "409 Batch Completed");
                wq_remove(c, wi);
            }
        }
        if (s == NULL)
            break;
    }
    store_release(c);
    if (eos)
        js_pace_idle(c);
    if (!is_push(c))
        wq_process(ctx, c, eos);
    if (budget == 0)
        self_signal(ctx, c);
}

/* ---- acks ---- */

static void
dack_add(nd_consumer_t *c, const nd_imsg_t *m)
{
    if (m->reply_len == 0)
        return;
    if (c->ndacks == c->dacks_cap) {
        c->dacks_cap = c->dacks_cap ? c->dacks_cap * 2 : 8;
        c->dacks = nd_xrealloc(c->dacks, c->dacks_cap * sizeof(char *));
    }
    c->dacks[c->ndacks++] = nd_xstrndup(m->reply, m->reply_len);
}

static void
rdq_push(nd_consumer_t *c, uint64_t seq)
{
    if (c->rdq_len == c->rdq_cap) {
        size_t ncap = c->rdq_cap ? c->rdq_cap * 2 : 16;
        uint64_t *n = nd_xmalloc(ncap * sizeof *n);
        for (size_t i = 0; i < c->rdq_len; i++)
            n[i] = c->rdq[(c->rdq_head + i) % c->rdq_cap];
        nd_free(c->rdq);
        c->rdq = n;
        c->rdq_cap = ncap;
        c->rdq_head = 0;
    }
    c->rdq[(c->rdq_head + c->rdq_len++) % c->rdq_cap] = seq;
}

static bool
rdq_has(const nd_consumer_t *c, uint64_t seq)
{
    for (size_t i = 0; i < c->rdq_len; i++)
        if (c->rdq[(c->rdq_head + i) % c->rdq_cap] == seq)
            return true;
    return false;
}

static void
ack_one(nd_consumer_t *c, uint64_t sseq, int64_t now)
{
    if (c->cfg.ack_policy == ND_ACK_ALL) {
        bool any = false;
        for (size_t i = c->phead; i < c->ptail && c->pend[i].sseq <= sseq; i++)
            if (c->pend[i].dc != 0) {
                pend_drop(c, &c->pend[i]);
                any = true;
            }
        if (!any)
            return;
    } else {
        js_pend_t *p = pend_find(c, sseq);
        if (p == NULL)
            return;
        pend_drop(c, p);
    }
    c->last_acked = now;
    floors_update(c);
}

static void pull_request(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply, const char *body,
                         size_t len);

static void
on_ack(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m)
{
    /* nats-server 2.11's processAck: stream sequence 0 is never answered; an ack, +NXT or +TERM
     * of a sequence not delivered yet changes nothing, and such an ack or +TERM is not answered
     * either; +NXT asks for more whatever it acked. The subscription lets only the five number
     * tokens through: one that is not a number reads as Go's uint64(-1), as nats-server's. */
    js_ack_subj_t a;
    if (!js_ack_subj_parse(m->subject, m->subject_len, &a)) {
        memset(&a, 0, sizeof a);
        a.sseq = UINT64_MAX;
    }
    js_ack_body_t b;
    js_ack_body_parse(m->data, m->data_len, &b);
    bool delivered = a.sseq != 0 && a.sseq < c->sseq;
    bool answer = a.sseq != 0;
    int64_t now = js_now();
    c->last_active = now;
    js_pend_t *p = acks(c) && a.sseq != 0 ? pend_find(c, a.sseq) : NULL;
    if (p != NULL && c->cfg.ack_policy == ND_ACK_EXPLICIT &&
        (b.kind == JS_ACK_ACK || b.kind == JS_ACK_NEXT))
        js_pace_sample_ack(ctx, c, a.sseq, a.dseq, a.delivered, p->ts);
    switch (b.kind) {
    case JS_ACK_ACK:
        if (delivered && acks(c))
            ack_one(c, a.sseq, now);
        answer = answer && delivered;
        break;
    case JS_ACK_NEXT:
        if (delivered && acks(c))
            ack_one(c, a.sseq, now);
        if (!is_push(c) && m->reply_len > 0) {
            char *reply = nd_xstrndup(m->reply, m->reply_len);
            pull_request(ctx, c, reply, b.arg, b.arg_len);
            nd_free(reply);
        }
        answer = false;
        break;
    case JS_ACK_NONE: /* nats-server does nothing, but answers a double ack */
        break;
    case JS_ACK_NAK:
        if (p != NULL) {
            if (b.delay_ns > 0) {
                /* redelivered once the delay passed: ts is set so that ts + wait = then */
                p->ts = now + b.delay_ns - ack_wait_for(c, p->dc);
                pend_move(c, p, now + b.delay_ns);
            } else {
                p->moved = 1;
                if (!rdq_has(c, a.sseq))
                    rdq_push(c, a.sseq);
            }
            c->dirty = true;
            json_t *o = json_object();
            json_object_set_new(o, "consumer_seq", json_integer((json_int_t)a.dseq));
            json_object_set_new(o, "stream_seq", json_integer((json_int_t)a.sseq));
            json_object_set_new(o, "deliveries", json_integer((json_int_t)p->dc));
            advise(ctx, c, "MSG_NAKED", "io.nats.jetstream.advisory.v1.nak", o);
        }
        break;
    case JS_ACK_PROGRESS:
        if (p != NULL) {
            p->ts = now;
            pend_move(c, p, now + ack_wait_for(c, p->dc));
            c->dirty = true;
        }
        break;
    case JS_ACK_TERM:
        if (p != NULL) {
            uint32_t dc = p->dc;
            ack_one(c, a.sseq, now);
            json_t *o = json_object();
            json_object_set_new(o, "consumer_seq", json_integer((json_int_t)a.dseq));
            json_object_set_new(o, "stream_seq", json_integer((json_int_t)a.sseq));
            json_object_set_new(o, "deliveries", json_integer((json_int_t)dc));
            if (b.arg_len > 0)
                json_object_set_new(o, "reason", json_stringn(b.arg, b.arg_len));
            advise(ctx, c, "MSG_TERMINATED", "io.nats.jetstream.advisory.v1.terminated", o);
        }
        answer = answer && delivered;
        break;
    }
    if (answer)
        dack_add(c, m);
}

/* ---- pull requests ---- */

static void
pull_request(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply, const char *body, size_t len)
{
    if (reply == NULL || reply[0] == '\0')
        return;
    if (is_push(c)) {
        send_status(ctx, c, reply, "409 Consumer is push based", NULL);
        return;
    }
    js_pull_caps_t caps = {c->cfg.max_batch, c->cfg.max_expires_ns, c->cfg.max_bytes};
    js_pull_req_t r;
    char status[JS_PULL_STATUS_MAX];
    if (!js_pull_req_parse(body, len, &caps, &r, status, sizeof status)) {
        send_status(ctx, c, reply, status, NULL);
        return;
    }
    js_wreq_t w = {0};
    if (!js_prio_check_request(ctx, c, reply, body, len, &r, &w))
        return;
    int64_t now = js_now();
    c->last_active = now;
    if (r.no_wait) {
        nd_store_t *s = store_acquire(c);
        uint64_t np = s != NULL ? pending_now(c, s) : 0;
        store_release(c);
        np += c->rdq_len;
        if (acks(c) && c->cfg.max_ack_pending > 0 &&
            (int64_t)c->plive >= c->cfg.max_ack_pending)
            np = c->rdq_len;
        if (np == 0 && r.expires_ns == 0) {
            send_status(ctx, c, reply, "404 No Messages", NULL);
            return;
        }
    }
    if (c->cfg.max_waiting > 0 && (int64_t)c->wq_len >= c->cfg.max_waiting) {
        wq_process(ctx, c, false);
        if ((int64_t)c->wq_len >= c->cfg.max_waiting) {
            if (r.heartbeat_ns == 0)
                send_status(ctx, c, reply, "409 Exceeded MaxWaiting", NULL);
            return;
        }
    }
    w.reply = nd_xstrdup(reply);
    w.n = r.batch;
    w.b = r.max_bytes;
    /* a negative expiry has passed already (408 at once); a huge one saturates, as Go's */
    w.expires = r.expires_ns == 0 ? 0 : r.expires_ns < 0 ? now : sat_add(now, r.expires_ns);
    w.hb_ns = r.heartbeat_ns;
    w.hbt = r.heartbeat_ns > 0 ? sat_add(now, r.heartbeat_ns) : 0;
    w.no_wait = r.no_wait;
    wq_push(c, &w);
}

/* ---- timers ---- */

/* The first live entry still in delivery order: its deadline is the earliest of all such. */
static js_pend_t *
inorder_head(nd_consumer_t *c)
{
    if (c->pscan < c->phead)
        c->pscan = c->phead;
    while (c->pscan < c->ptail && (c->pend[c->pscan].dc == 0 || c->pend[c->pscan].moved))
        c->pscan++;
    return c->pscan < c->ptail ? &c->pend[c->pscan] : NULL;
}

/* Moves due redeliveries to the queue: first deliveries in order, then the heap's. */
static void
redeliveries_due(nd_consumer_t *c, int64_t now)
{
    int64_t w1 = ack_wait_for(c, 1);
    js_pend_t *p;
    while ((p = inorder_head(c)) != NULL && p->ts + w1 <= now) {
        p->moved = 1; /* in the queue now, not in the deque's order */
        rdq_push(c, p->sseq);
    }
    uint64_t seq;
    while (nd_store_ttls_pop(&c->rdl, now, &seq)) {
        p = pend_find(c, seq);
        if (p == NULL)
            continue; /* acked */
        if (p->ts + ack_wait_for(c, p->dc) > now)
            continue; /* a newer deadline is in the heap */
        if (!rdq_has(c, seq))
            rdq_push(c, seq);
    }
}

static bool
inactive_expired(nd_consumer_t *c, int64_t now)
{
    int64_t t = c->cfg.inactive_threshold_ns;
    if (t <= 0)
        return false;
    bool idle = is_push(c) ? !c->active : c->wq_len == 0;
    return idle && now - c->last_active >= t;
}

static void
arm(nd_ctx_t *ctx, nd_consumer_t *c)
{
    if (c->stopped)
        return;
    int64_t now = js_now();
    int64_t at = 0;
#define AT(t)                                                                                  \
    do {                                                                                       \
        int64_t t_ = (t);                                                                      \
        if (t_ > 0 && (at == 0 || t_ < at))                                                    \
            at = t_;                                                                           \
    } while (0)
    AT(nd_store_ttls_next(&c->rdl));
    js_pend_t *ih = inorder_head(c);
    if (ih != NULL)
        AT(ih->ts + ack_wait_for(c, 1));
    for (size_t i = 0; i < c->wq_len; i++) {
        AT(wq_at(c, i)->expires);
        AT(wq_at(c, i)->hbt);
    }
    if (is_push(c)) {
        if (c->cfg.idle_heartbeat_ns > 0) {
            if (c->hb_due == 0)
                c->hb_due = now + c->cfg.idle_heartbeat_ns;
            AT(c->hb_due);
        }
        if (!c->active)
            AT(c->next_interest_check);
    }
    if (c->cfg.inactive_threshold_ns > 0)
        AT(c->last_active + c->cfg.inactive_threshold_ns);
    if (c->dirty) {
        /* the whole state is written each time: a big pending set is written less often */
        if (c->persist_due == 0)
            c->persist_due = now + PERSIST_DELAY + (int64_t)c->plive * 1000;
        AT(c->persist_due);
    }
    if (c->cfg.pause_until_ns > now)
        AT(c->cfg.pause_until_ns);
    AT(c->pause_edge);
    AT(c->pin_deadline);
    AT(c->pace_at);
#undef AT
    if (at == 0 || at == c->timer_at)
        return;
    c->timer_at = at;
    nd_iclient_timer(ctx, c->ic, at > now ? (uint64_t)(at - now) : 1);
}

static void
on_timer(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_consumer_t *c = arg;
    c->timer_at = 0;
    if (c->stopped)
        return;
    int64_t now = js_now();
    redeliveries_due(c, now);
    js_pause_timer(ctx, c, now);
    js_prio_timer(ctx, c, now);
    if (c->pace_at != 0 && now >= c->pace_at)
        c->pace_at = 0;
    if (is_push(c) && c->cfg.idle_heartbeat_ns > 0 && c->hb_due != 0 && now >= c->hb_due) {
        if (push_ready(ctx, c, now))
            send_heartbeat(ctx, c, c->cfg.deliver_subject);
        c->hb_due = now + c->cfg.idle_heartbeat_ns;
    }
    if (is_push(c) && !c->active)
        (void)push_ready(ctx, c, now);
    if (inactive_expired(c, now)) {
        js_consumer_request_delete(ctx, c);
        return;
    }
    deliver(ctx, c);
    if (!is_push(c))
        wq_process(ctx, c, false);
}

/* ---- turns ---- */

static void
do_signal(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    (void)ic;
    (void)data;
    nd_consumer_t *c = arg;
    atomic_store_explicit(&c->signalled, false, memory_order_relaxed);
    if (!npc_incremental(c))
        c->npc_valid = false; /* filtered: recounted by the next delivery */
    deliver(ctx, c);
}

static void
self_signal(nd_ctx_t *ctx, nd_consumer_t *c)
{
    if (!atomic_exchange_explicit(&c->signalled, true, memory_order_acq_rel))
        nd_iclient_call(ctx, c->ic, do_signal, NULL, NULL);
}

/* Drops pending entries whose messages left the stream (purge, delete, expiry), without
 * redelivering them. */
static void
do_removed(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    (void)ic;
    nd_consumer_t *c = arg;
    if (c->stopped)
        return;
    nd_store_t *s = store_acquire(c);
    if (s != NULL) {
        nd_store_state_t ss;
        s->ops->state(s, &ss);
        if (c->sseq < ss.first_seq)
            c->sseq = ss.first_seq;
        int how = (int)(intptr_t)data;
        /* a purge: what went unseen counts as passed (nats-server's consumer purge) */
        if (how == JS_REMOVED_PURGE && c->dsseq + 1 < ss.first_seq) {
            c->dsseq = ss.first_seq - 1;
            c->dirty = true;
        }
        nd_store_msg_t m = {0};
        for (size_t i = c->phead; i < c->ptail; i++) {
            js_pend_t *p = &c->pend[i];
            if (p->dc == 0)
                continue;
            if (p->sseq < ss.first_seq)
                pend_drop(c, p);
            else if (how == JS_REMOVED_HEAD)
                break; /* sorted: nothing further went */
            else if (s->ops->load(s, p->sseq, &m) != ND_OK)
                pend_drop(c, p);
        }
        nd_store_msg_free(&m);
        c->npc_valid = false;
    }
    store_release(c);
    floors_update(c);
    deliver(ctx, c);
}

void
js_consumer_signal(nd_ctx_t *ctx, nd_consumer_t *c, int removed)
{
    pthread_mutex_lock(&c->st->mu);
    nd_iclient_t *ic = c->ic;
    if (ic != NULL) {
        if (removed)
            nd_iclient_call(ctx, ic, do_removed, (void *)(intptr_t)removed, NULL);
        else if (!atomic_exchange_explicit(&c->signalled, true, memory_order_acq_rel))
            nd_iclient_call(ctx, ic, do_signal, NULL, NULL);
    }
    pthread_mutex_unlock(&c->st->mu);
}

static void
on_msg(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)ic;
    nd_consumer_t *c = arg;
    if (c->stopped)
        return;
    if (m->tag == JS_OP_CONSUMER_INFO) {
        if (is_push(c))
            c->active = nd_iclient_has_interest(ctx, c->ic, c->cfg.deliver_subject);
        nd_store_t *s = store_acquire(c);
        uint64_t np = s != NULL ? pending_now(c, s) : 0;
        store_release(c);
        c->npc = np;
        c->npc_valid = true;
        stats_publish(c);
        js_consumer_stats_t st = c->stats;
        json_t *o = js_resp("consumer_info_response");
        json_t *info = info_json(c, c->cfg.json, &st, st.npending);
        json_object_update(o, info);
        json_decref(info);
        js_audit_req_t audit;
        js_audit_view(&audit, m);
        js_audit_begin(&audit);
        js_send(ctx, c->ic, m->reply, o);
        js_audit_end();
        if (strstr(m->subject, ".CREATE.") != NULL)
            js_pause_created(ctx, c); /* an idempotent create answered with the info */
        return;
    }
    if (m->tag == JS_OP_CONSUMER_PAUSE) {
        js_pause_request(ctx, c, m);
        deliver(ctx, c);
        return;
    }
    if (m->tag == JS_OP_CONSUMER_UNPIN) {
        js_prio_unpin_request(ctx, c, m);
        deliver(ctx, c);
        return;
    }
    if (m->subject_len > strlen(c->ack_prefix) &&
        memcmp(m->subject, c->ack_prefix, strlen(c->ack_prefix)) == 0) {
        on_ack(ctx, c, m);
        deliver(ctx, c);
        return;
    }
    if (m->subject_len > strlen(c->fc_prefix) &&
        memcmp(m->subject, c->fc_prefix, strlen(c->fc_prefix)) == 0) {
        if (c->fc_reply != NULL && strlen(c->fc_reply) == m->subject_len &&
            memcmp(c->fc_reply, m->subject, m->subject_len) == 0) {
            nd_free(c->fc_reply);
            c->fc_reply = NULL;
            c->fc_acked = c->fc_sent_at;
            if (c->fc_window < FC_LIMIT)
                c->fc_window = c->fc_window * 2 < FC_LIMIT ? c->fc_window * 2 : FC_LIMIT;
            deliver(ctx, c);
        }
        return;
    }
    /* a pull request */
    if (m->reply_len == 0)
        return;
    char *reply = nd_xstrndup(m->reply, m->reply_len);
    pull_request(ctx, c, reply, m->data, m->data_len);
    nd_free(reply);
    deliver(ctx, c);
}

static void
on_turn_end(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_consumer_t *c = arg;
    if (c->stopped)
        return;
    int64_t now = js_now();
    if (c->dirty && (c->ndacks > 0 || (c->persist_due != 0 && now >= c->persist_due)))
        (void)persist(c);
    /* a double ack is answered once the state that holds it is written */
    for (size_t i = 0; i < c->ndacks; i++) {
        if (!c->dirty)
            nd_iclient_publish(ctx, c->ic, c->dacks[i], NULL, NULL, 0, NULL, 0);
        nd_free(c->dacks[i]);
    }
    c->ndacks = 0;
    if (is_push(c)) { /* push_bound in listings follows the subscribers */
        bool was = c->active;
        c->active = nd_iclient_has_interest(ctx, c->ic, c->cfg.deliver_subject);
        if (c->active && !was)
            deliver(ctx, c);
    }
    if (c->nracks > 0) {
        js_consumer_retention_acks(ctx, c, c->racks, c->nracks);
        c->racks = NULL;
        c->nracks = c->racks_cap = 0;
    }
    stats_publish(c);
    arm(ctx, c);
}

static void
answer_create(nd_ctx_t *ctx, nd_consumer_t *c)
{
    if (c->create_reply == NULL)
        return;
    nd_store_t *s = store_acquire(c);
    uint64_t np = s != NULL ? pending_now(c, s) : 0;
    store_release(c);
    c->npc = np;
    c->npc_valid = true;
    stats_publish(c);
    json_t *o = js_resp("consumer_create_response");
    json_t *info = info_json(c, c->cfg.json, &c->stats, c->stats.npending);
    json_object_update(o, info);
    json_decref(info);
    js_audit_begin(c->create_audit);
    js_send(ctx, c->ic, c->create_reply, o);
    js_audit_end();
    js_audit_free(c->create_audit);
    c->create_audit = NULL;
    nd_free(c->create_reply);
    c->create_reply = NULL;
    js_pause_created(ctx, c);
}

static void
on_ready(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_consumer_t *c = arg;
    if (!c->recovered) {
        /* the starting position is stored before anyone hears of the consumer, so a restart
         * resumes from it (nats-server's SetStarting) */
        c->dirty = true;
        (void)persist(c);
    }
    answer_create(ctx, c);
    deliver(ctx, c);
    arm(ctx, c);
}

static void
free_actor_state(nd_consumer_t *c)
{
    for (size_t i = 0; i < c->wq_len; i++)
        nd_free(wq_at(c, i)->reply);
    nd_free(c->wq);
    c->wq = NULL;
    c->wq_len = 0;
    nd_free(c->pend);
    c->pend = NULL;
    nd_store_ttls_free(&c->rdl);
    nd_free(c->rdq);
    c->rdq = NULL;
    nd_free(c->lss);
    c->lss = NULL;
    nd_free(c->racks);
    c->racks = NULL;
    for (size_t i = 0; i < c->ndacks; i++)
        nd_free(c->dacks[i]);
    nd_free(c->dacks);
    c->dacks = NULL;
    nd_free(c->fc_reply);
    c->fc_reply = NULL;
    nd_free(c->create_reply);
    c->create_reply = NULL;
    js_audit_free(c->create_audit);
    c->create_audit = NULL;
    nd_store_msg_free(&c->msg);
}

static void
on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ctx;
    (void)ic;
    nd_consumer_t *c = arg;
    if (!c->deleting)
        (void)persist(c);
    free_actor_state(c);
    pthread_mutex_lock(&c->st->mu);
    c->ic = NULL;
    pthread_mutex_unlock(&c->st->mu);
    js_consumer_unref(c); /* the actor's */
}

static const nd_iclient_hooks_t consumer_hooks = {
    .on_msg = on_msg,
    .on_ready = on_ready,
    .on_turn_end = on_turn_end,
    .on_timer = on_timer,
    .on_close = on_close,
};

typedef struct lss_walk {
    nd_consumer_t *c;
    size_t cap;
} lss_walk_t;

static bool
lss_add(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    (void)subj;
    (void)len;
    lss_walk_t *w = arg;
    nd_consumer_t *c = w->c;
    if (c->lss_len == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        c->lss = nd_xrealloc(c->lss, w->cap * sizeof *c->lss);
    }
    c->lss[c->lss_len++] = ss->last_seq;
    return true;
}

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Where a new consumer starts (nats-server's selectStartingSeqNo). Ctx: store held. */
static void
start_position(nd_consumer_t *c, nd_store_t *s)
{
    nd_store_state_t ss;
    s->ops->state(s, &ss);
    const nd_consumer_cfg_t *k = &c->cfg;
    switch (k->deliver_policy) {
    case ND_DELIVER_ALL:
        c->sseq = ss.first_seq;
        break;
    case ND_DELIVER_LAST:
        c->sseq = ss.last_seq;
        if (k->nfilters > 0) {
            uint64_t best = 0;
            for (size_t i = 0; i < k->nfilters; i++) {
                nd_store_msg_t m = {0};
                if (s->ops->load_last(s, k->filters[i], strlen(k->filters[i]), &m) == ND_OK &&
                    m.seq > best)
                    best = m.seq;
                nd_store_msg_free(&m);
            }
            c->sseq = best ? best : ss.last_seq + 1;
        }
        if (c->sseq == 0)
            c->sseq = 1;
        break;
    case ND_DELIVER_NEW:
        c->sseq = ss.last_seq + 1;
        break;
    case ND_DELIVER_BY_START_SEQ:
        c->sseq = k->opt_start_seq;
        break;
    case ND_DELIVER_BY_START_TIME:
        c->sseq = js_seq_from_time(s, k->opt_start_time_ns);
        break;
    case ND_DELIVER_LAST_PER_SUBJECT: {
        /* every subject's last message first, in stream order, then what comes after */
        lss_walk_t wk = {c, 0};
        for (size_t i = 0; i < (k->nfilters ? k->nfilters : 1); i++) {
            const char *f = k->nfilters ? k->filters[i] : ">";
            s->ops->subjects_state(s, f, strlen(f), lss_add, &wk);
        }
        if (c->lss_len > 0)
            qsort(c->lss, c->lss_len, sizeof *c->lss, u64_cmp);
        c->lss_resume = ss.last_seq + 1;
        c->sseq = c->lss_len > 0 ? c->lss[0] : ss.last_seq + 1;
        break;
    }
    }
    if (c->sseq < ss.first_seq && k->deliver_policy != ND_DELIVER_BY_START_SEQ)
        c->sseq = ss.first_seq;
    if (c->sseq == 0)
        c->sseq = 1;
    /* the floors start just before the start */
    c->dsseq = c->sseq - 1;
    c->asflr = c->sseq - 1;
}

void
js_consumer_spawn(nd_ctx_t *ctx, nd_consumer_t *c)
{
    nd_stream_t *st = c->st;
    nd_store_t *s = store_acquire(c);
    if (s != NULL) {
        start_position(c, s);
        if (c->cfg.replay_policy == ND_REPLAY_ORIGINAL) {
            nd_store_state_t ss;
            s->ops->state(s, &ss);
            js_pace_start(c, ss.last_seq);
        }
    }
    store_release(c);
    restore_state(c);
    if (c->cfg.pause_until_ns > js_now())
        c->pause_edge = c->cfg.pause_until_ns;
    c->last_active = js_now();
    c->fc_window = FC_LIMIT / 16;
    const char *subj[4];
    size_t n = 0;
    char *ack = js_path("%s*.*.*.*.*", c->ack_prefix); /* nats-server's five tokens */
    char *next = js_path("$JS.API.CONSUMER.MSG.NEXT.%s.%s", st->name, c->name);
    char *fc = js_path("%s*", c->fc_prefix);
    char *dnext = NULL;
    subj[n++] = ack;
    subj[n++] = next;
    if (st->jsa->js->domain[0] != '\0') {
        dnext = js_path("$JS.%s.API.CONSUMER.MSG.NEXT.%s.%s", st->jsa->js->domain, st->name,
                        c->name);
        subj[n++] = dnext;
    }
    if (c->cfg.flow_control)
        subj[n++] = fc;
    js_consumer_ref(c); /* the actor's */
    pthread_mutex_lock(&st->mu);
    nd_iclient_spawn(ctx, st->jsa->js->srv, st->jsa->acct, ND_CONN_SYSTEM, "js-consumer", subj,
                     n, CONSUMER_QUEUE_LIMIT, &consumer_hooks, c, &c->ic);
    pthread_mutex_unlock(&st->mu);
    nd_free(ack);
    nd_free(next);
    nd_free(fc);
    nd_free(dnext);
}

/* ---- calls from the stream ---- */

typedef struct update_call {
    nd_consumer_cfg_t cfg;
    char *reply;
    js_audit_req_t *audit;
} update_call_t;

static void
update_drop(void *data)
{
    update_call_t *u = data;
    nd_consumer_cfg_free(&u->cfg);
    nd_free(u->reply);
    js_audit_free(u->audit);
    nd_free(u);
}

static void
do_update(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_consumer_t *c = arg;
    update_call_t *u = data;
    if (c->stopped) {
        update_drop(u);
        return;
    }
    bool had_fc = c->cfg.flow_control;
    int64_t old_pause = c->cfg.pause_until_ns;
    uint64_t old_rate = c->cfg.rate_limit_bps;
    nd_consumer_cfg_free(&c->cfg);
    c->cfg = u->cfg;
    memset(&u->cfg, 0, sizeof u->cfg);
    pthread_mutex_lock(&c->mu);
    json_decref(c->cfg_json);
    c->cfg_json = json_incref(c->cfg.json); /* shared: see nd_consumer_cfg_copy */
    pthread_mutex_unlock(&c->mu);
    if (js_consumer_meta_write(c) != 0)
        nd_log_warn("JetStream could not write the configuration of consumer '%s > %s'",
                    c->st->name, c->name);
    if (c->cfg.flow_control && !had_fc) {
        char *fc = js_path("%s*", c->fc_prefix);
        nd_iclient_subscribe(ctx, ic, fc);
        nd_free(fc);
    }
    if (c->cfg.rate_limit_bps != old_rate)
        c->rl_last = 0; /* a new bucket, full */
    if (c->cfg.pause_until_ns != old_pause)
        js_pause_changed(ctx, c, old_pause);
    c->create_reply = u->reply;
    u->reply = NULL;
    c->create_audit = u->audit;
    u->audit = NULL;
    answer_create(ctx, c);
    update_drop(u);
    deliver(ctx, c);
}

void
js_consumer_call_update(nd_ctx_t *ctx, nd_consumer_t *c, nd_consumer_cfg_t *cfg,
                        const char *reply)
{
    update_call_t *u = nd_xcalloc(1, sizeof *u);
    u->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    u->reply = nd_xstrdup(reply != NULL ? reply : "");
    u->audit = js_audit_save_current();
    pthread_mutex_lock(&c->st->mu);
    if (c->ic != NULL)
        nd_iclient_call(ctx, c->ic, do_update, u, update_drop);
    else
        update_drop(u);
    pthread_mutex_unlock(&c->st->mu);
}

typedef struct delete_call {
    char *reply; /* NULL: nobody to answer */
    bool files;
    js_audit_req_t *audit;
} delete_call_t;

static void
delete_drop(void *data)
{
    delete_call_t *d = data;
    nd_free(d->reply);
    js_audit_free(d->audit);
    nd_free(d);
}

/* Ends the consumer: waiting pull requests hear 409 Consumer Deleted, its files go (files),
 * then the reply, then the actor stops. */
static void
do_delete(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_consumer_t *c = arg;
    delete_call_t *d = data;
    if (c->stopped) {
        delete_drop(d);
        return;
    }
    if (c->create_reply != NULL) {
        /* deleted before it was ready (its stream went): the create still gets an answer */
        nd_jserr_t err;
        nd_jserr_set(&err, ND_JSE_STREAM_NOT_FOUND, NULL);
        js_audit_begin(c->create_audit);
        js_send_error(ctx, ic, c->create_reply, "consumer_create_response", &err);
        js_audit_end();
        nd_free(c->create_reply);
        c->create_reply = NULL;
    }
    if (d->files) {
        c->deleting = true;
        for (size_t i = 0; i < c->wq_len; i++)
            send_status(ctx, c, wq_at(c, i)->reply, "409 Consumer Deleted", NULL);
        js_consumer_meta_remove(c->st, c->name);
        nd_store_t *in = store_acquire(c);
        if (in != NULL) {
            nd_cstore_t *cs = c->cs_gen == c->st->ls.gen ? c->cs : NULL;
            if (cs == NULL && in->ops->consumer_open(in, c->name, &cs) != ND_OK)
                cs = NULL;
            if (cs != NULL && in->ops->consumer_delete(cs) != ND_OK)
                nd_log_warn("JetStream could not remove the state of consumer '%s > %s'",
                            c->st->name, c->name);
        }
        store_release(c);
        c->cs = NULL;
    } else {
        (void)persist(c);
    }
    c->stopped = true;
    if (d->reply != NULL && d->reply[0] != '\0') {
        json_t *o = js_resp("consumer_delete_response");
        json_object_set_new(o, "success", json_true());
        js_audit_begin(d->audit);
        js_send(ctx, ic, d->reply, o);
        js_audit_end();
    }
    delete_drop(d);
    nd_iclient_stop(ctx, ic);
}

void
js_consumer_call_delete(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply, bool files)
{
    delete_call_t *d = nd_xcalloc(1, sizeof *d);
    d->reply = reply != NULL ? nd_xstrdup(reply) : NULL;
    d->files = files;
    d->audit = reply != NULL ? js_audit_save_current() : NULL;
    pthread_mutex_lock(&c->st->mu);
    if (c->ic != NULL)
        nd_iclient_call(ctx, c->ic, do_delete, d, delete_drop);
    else
        delete_drop(d);
    pthread_mutex_unlock(&c->st->mu);
}
