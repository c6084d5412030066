/* Publish and delivery (DESIGN.md §3 steps 3–5).
 *
 * The publishing connection matches the subject inside an epoch section (its L1 cache first,
 * validated by the sublist generation) and hands the message to each recipient connection; one
 * member of each queue group is chosen at random (the others in turn when it cannot take it).
 * Batching: small messages for one recipient are gathered, for the whole read batch of the
 * publisher, into one chunk of ready-to-write bytes (MSG line, payload, CRLF); at the end of the
 * batch each touched recipient gets one CHUNK message, so the mailbox push, the pending-bytes
 * update and the wake-up are paid once per batch, not once per message (nats-server pays a lock
 * per message). Large payloads (over INLINE_MAX) are stored once in a refcounted buffer and sent
 * as a DELIVER message holding only the recipient's MSG line; the recipient's open chunk is sent
 * first so its messages stay in order. A delivery that completes an auto-unsubscribe also goes as
 * DELIVER, since the recipient must act on it.
 * Nothing is sent inside the epoch section of the match (STYLE.md rule 8): deliveries are queued
 * per recipient in the outbox and sent, in order, by nd_deliver_flush() after the batch.
 * Flow control: the publisher adds the bytes to the recipient's `pending` when it sends; past
 * max_pending the recipient is marked slow, further deliveries are dropped and it closes itself.
 * Accounts (acct_route.h): inside the same section the publisher loads its account's route; with
 * mappings the subject is mapped first, and with stream importers the message is also matched in
 * each importer's sublist under the import's subject; service imports and their `_R_` responses
 * go the same way (acct_resp.h). Accounts without any of these pay one load and one NULL test
 * (an importer of streams has a route too, for the interest of route_imp.c). Across a cluster:
 * a routed message in an exporter also goes to this server's importers, and an imported
 * delivery never goes to a route (route_imp.c has the picture).
 */
#include <string.h>
#include <time.h>

#include "subj/acct_resp.h"
#include "auth/acct_route.h"
#include "net/gateway_int.h"
#include "net/leaf_int.h"
#include "net/acct_reqinfo.h"
#include "net/conn_int.h"
#include "subj/account.h"
#include "actors/epoch.h"
#include "subj/subject.h"
#include "subj/sublist.h"

/* Appends the decimal form of v; returns the new end. */
static inline char *
put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static inline char *
put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define INLINE_MAX 2048 /* payloads up to this size are copied into chunks */
#define OUTBOX_LINEAR 8 /* recipients looked up by a linear scan up to this many */

/* The size part of a MSG/HMSG line ("[<hdr> ]<size>\r\n"), formatted once per publish. */
typedef struct line_tail {
    char s[48];
    uint8_t len; /* 0 until formatted */
} line_tail_t;

/* A route this publish goes to (one RMSG per route, whatever number of its subscriptions
 * matched), with the queue groups it was chosen for. */
typedef struct route_tgt {
    nd_conn_t *t;
    const nd_sub_t **qs; /* qin, or a heap array past ROUTE_QIN */
    uint32_t nq, qcap;
    const nd_sub_t *qin[4];
} route_tgt_t;

#define ROUTE_QIN 4
#define ROUTE_TGT_INLINE 4

typedef struct pub_ctx {
    const nd_proto_cmd_t *cmd;
    const nd_proto_cmd_t *shown; /* what the MSG lines show: cmd, or a copy with the subject a
                                  * JetStream delivery shows (the message's own) */
    const char *via;       /* delivering in an exporter's account through the service import
                            * of this subject (the importer's), else NULL */
    nd_payload_t *payload; /* created on the first large delivery */
    uint32_t matched;      /* recipients found, delivered or not */
    line_tail_t tail[2];   /* [0]: as published; [1]: headers stripped (MSG with the payload) */
    /* routes (route.c): the account matched in, whether the publisher is a route (then only
     * local subscribers, and of queue groups only those it names in qfilter), and the routes
     * this publish goes to */
    nd_acct_t *acct;
    bool from_route;
    /* leaf nodes (leaf.c): the publisher is a leaf connection (then queue groups as from a
     * route), and one where we are the leaf (then nothing goes on to routes, as nats-server) */
    bool from_leaf, from_spoke;
    /* gateways (gateway.c): the publisher is a gateway connection, or a gateway reply came back
     * to its origin (then local subscribers and routes, never a gateway: one hop) */
    bool from_gateway;
    /* a stream import's delivery in the importer: never to a route (the servers of the
     * importer's other subscribers announced them in the exporter and get its message) */
    bool imported;
    const nd_proto_slice_t *qfilter;
    route_tgt_t rin[ROUTE_TGT_INLINE];
    route_tgt_t *rts; /* rin, or a heap array */
    uint32_t nrt, rtcap;
} pub_ctx_t;

static void
format_tail(line_tail_t *t, bool hmsg, int64_t hdr_len, uint32_t size)
{
    char *p = t->s;
    if (hmsg) {
        p = put_u64(p, (uint64_t)hdr_len);
        *p++ = ' ';
    }
    p = put_u64(p, size);
    p = put(p, "\r\n", 2);
    t->len = (uint8_t)(p - t->s);
}

static const line_tail_t *
tail_of(pub_ctx_t *pc, bool hmsg, bool stripped, uint32_t size)
{
    line_tail_t *t = &pc->tail[stripped];
    if (t->len == 0)
        format_tail(t, hmsg, pc->cmd->hdr_len, size);
    return t;
}

/* Writes the MSG/HMSG line for sub into line (room for line_room()). Returns: its length. */
static size_t
format_line(char *line, const nd_proto_cmd_t *cmd, const nd_sub_t *sub, bool hmsg,
            const line_tail_t *tail, uint16_t *sid_off)
{
    char *p = line;
    p = hmsg ? put(p, "HMSG ", 5) : put(p, "MSG ", 4);
    p = put(p, cmd->subject.ptr, cmd->subject.len);
    *p++ = ' ';
    *sid_off = (uint16_t)(p - line);
    p = put(p, sub->sid, sub->sid_len);
    *p++ = ' ';
    if (cmd->reply.len > 0) {
        p = put(p, cmd->reply.ptr, cmd->reply.len);
        *p++ = ' ';
    }
    p = put(p, tail->s, tail->len);
    return (size_t)(p - line);
}

static inline size_t
line_room(const nd_proto_cmd_t *cmd, const nd_sub_t *sub)
{
    return 8 + cmd->subject.len + sub->sid_len + cmd->reply.len + sizeof(((line_tail_t *)0)->s);
}

/* Adds bytes to t's pending count. Returns: false (and marks t slow) past max_pending. */
static bool
charge(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_t *t, int64_t bytes)
{
    int64_t prev = atomic_fetch_add_explicit(&t->pending, bytes, memory_order_relaxed);
    int64_t max = c->srv->opts.max_pending;
    if (prev + bytes <= max) {
        /* Fast-producer throttle: a recipient past 75% stalls its producer briefly. */
        if (prev + bytes > max - max / 4 && t != c &&
            !nd_server_live_get(c->srv, no_fast_producer_stall))
            c->stall_due = true;
        return true;
    }
    atomic_fetch_sub_explicit(&t->pending, bytes, memory_order_relaxed);
    if (!atomic_exchange_explicit(&t->slow, true, memory_order_relaxed))
        nd_actor_send(ctx, &t->base, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_SLOW));
    return false;
}

/* ---- the outbox: per recipient, the messages of this read batch, in order ----
 *
 * Each slot holds a reference on its recipient, an open chunk and a list of finished messages
 * (chunks and DELIVERs) linked through nd_msg_t.next, which is free until the message is
 * pushed. Nothing is sent while the publisher is inside an epoch section: nd_deliver_flush()
 * sends everything afterwards. */

static inline uint32_t
ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static void
index_rebuild(nd_outbox_t *ob)
{
    uint32_t cap = 32;
    while (cap < ob->n * 4)
        cap *= 2;
    nd_free(ob->index);
    ob->index = nd_xcalloc(cap, sizeof(*ob->index));
    ob->index_cap = cap;
    for (uint32_t i = 0; i < ob->n; i++) {
        uint32_t h = ptr_hash(ob->slots[i].t) & (cap - 1);
        while (ob->index[h] != 0)
            h = (h + 1) & (cap - 1);
        ob->index[h] = i + 1;
    }
}

/* Returns: the slot for t, creating it. */
static nd_outbox_slot_t *
outbox_slot(nd_outbox_t *ob, nd_conn_t *t)
{
    if (ob->last < ob->n && ob->slots[ob->last].t == t)
        return &ob->slots[ob->last];
    if (ob->n <= OUTBOX_LINEAR) {
        for (uint32_t i = 0; i < ob->n; i++)
            if (ob->slots[i].t == t) {
                ob->last = i;
                return &ob->slots[i];
            }
    } else {
        uint32_t mask = ob->index_cap - 1;
        for (uint32_t h = ptr_hash(t) & mask; ob->index[h] != 0; h = (h + 1) & mask)
            if (ob->slots[ob->index[h] - 1].t == t) {
                ob->last = ob->index[h] - 1;
                return &ob->slots[ob->last];
            }
    }
    if (ob->n == ob->cap) {
        ob->cap = ob->cap ? ob->cap * 2 : 4;
        ob->slots = nd_xrealloc(ob->slots, ob->cap * sizeof(*ob->slots));
    }
    nd_outbox_slot_t *sl = &ob->slots[ob->n];
    /* The sub that led us to t keeps t alive only until our epoch section ends (the sub may be
     * retired then); the outbox is sent after it, so it holds its own reference. */
    nd_actor_ref(&t->base);
    sl->t = t;
    sl->chunk = NULL;
    sl->first = sl->last = NULL;
    ob->last = ob->n++;
    if (ob->n > OUTBOX_LINEAR) {
        if (ob->n * 2 > ob->index_cap) {
            index_rebuild(ob);
        } else {
            uint32_t mask = ob->index_cap - 1;
            uint32_t h = ptr_hash(t) & mask;
            while (ob->index[h] != 0)
                h = (h + 1) & mask;
            ob->index[h] = ob->n;
        }
    }
    return sl;
}

static void
slot_append(nd_outbox_slot_t *sl, nd_msg_t *m)
{
    atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
    if (sl->last != NULL)
        atomic_store_explicit(&sl->last->next, m, memory_order_relaxed);
    else
        sl->first = m;
    sl->last = m;
}

/* Moves the open chunk to the list (before a DELIVER, to keep the order). */
static void
slot_close_chunk(nd_outbox_slot_t *sl)
{
    if (sl->chunk != NULL) {
        slot_append(sl, &sl->chunk->hdr);
        sl->chunk = NULL;
    }
}

static nd_conn_msg_chunk_t *
slot_chunk(nd_ctx_t *ctx, nd_outbox_slot_t *sl)
{
    if (sl->chunk == NULL) {
        nd_conn_msg_chunk_t *ch = ND_MSG_NEW(ctx, nd_conn_msg_chunk_t, ND_CONN_MSG_CHUNK);
        ch->buf = NULL;
        ch->len = ch->cap = 0;
        ch->msgs = 0;
        ch->bytes = 0;
        sl->chunk = ch;
    }
    return sl->chunk;
}

static char *
chunk_reserve(nd_conn_msg_chunk_t *ch, size_t n)
{
    if (ch->len + n > ch->cap) {
        ch->cap = (uint32_t)nd_grow_cap(ch->cap, ch->len + n, 1024);
        ch->buf = nd_xrealloc(ch->buf, ch->cap);
    }
    return ch->buf + ch->len;
}

static int64_t
msg_bytes(const nd_msg_t *m)
{
    if (m->id == ND_CONN_MSG_CHUNK)
        return ((const nd_conn_msg_chunk_t *)m)->len;
    if (m->id == ND_CONN_MSG_REPLY)
        return 0; /* no output of its own */
    if (m->id == ND_CONN_MSG_PMSG) {
        return nd_pmsg_charge((const nd_conn_msg_pmsg_t *)m);
    }
    const nd_conn_msg_deliver_t *d = (const nd_conn_msg_deliver_t *)m;
    return (int64_t)d->line_len + (int64_t)d->pl_len;
}

void
nd_deliver_flush(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_outbox_t *ob = &c->outbox;
    for (uint32_t i = 0; i < ob->n; i++) {
        nd_outbox_slot_t *sl = &ob->slots[i];
        slot_close_chunk(sl);
        nd_msg_t *m = sl->first;
        sl->first = sl->last = NULL;
        while (m != NULL) {
            nd_msg_t *next = atomic_load_explicit(&m->next, memory_order_relaxed);
            if (charge(ctx, c, sl->t, msg_bytes(m))) {
                nd_actor_send(ctx, &sl->t->base, m);
            } else {
                nd_deliver_discard(ctx, m);
                nd_msg_free(ctx, m);
            }
            m = next;
        }
        nd_actor_unref(ctx, &sl->t->base);
    }
    if (ob->n > OUTBOX_LINEAR)
        memset(ob->index, 0, ob->index_cap * sizeof(*ob->index));
    ob->n = 0;
    ob->last = 0;
    if (ob->cap > 64) {
        /* A huge fan-out batch: do not keep its arrays on an idle connection. */
        nd_deliver_outbox_free(c);
    }
}

void
nd_deliver_outbox_free(nd_conn_t *c)
{
    nd_free(c->outbox.slots);
    nd_free(c->outbox.index);
    memset(&c->outbox, 0, sizeof(c->outbox));
}

/* The delivery that reached a sub's max_msgs has been written: drop the sub, if the sid still
 * names that same sub (identity only: sub is never dereferenced here). Ctx: c's turn. */
static void
auto_unsub_done(nd_ctx_t *ctx, nd_conn_t *c, const char *sid, size_t sid_len, const nd_sub_t *sub)
{
    nd_sub_t *s = nd_sidmap_get(&c->subs, sid, sid_len);
    if (s != NULL && s == sub)
        nd_conn_remove_sub(ctx, c, s);
}

/* The recipient has permissions (conn_auth.c): a subscribe deny may refuse this delivery (one
 * of its wildcard subscriptions collides with a plain deny entry: nats-server's checkDenySub in
 * deliverMsg, the same for all of its subscriptions), and with allow_responses the reply subject
 * goes to it ahead of the message, so it may publish the answer. Returns: false when denied.
 * Ctx: in the section. */
static bool
recipient_perms(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_t *t, const nd_permset_t *tp,
                const nd_proto_cmd_t *cmd)
{
    if (atomic_load_explicit(&t->rdeny, memory_order_relaxed) &&
        nd_perms_deliver_denied(tp, cmd->subject.ptr, cmd->subject.len))
        return false;
    if (cmd->reply.len > 0 && tp->has_resp) {
        if (t == c) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            nd_perms_conn_track_reply(&c->perms, cmd->reply.ptr, cmd->reply.len,
                                      (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
        } else {
            nd_outbox_slot_t *sl = outbox_slot(&c->outbox, t);
            slot_close_chunk(sl);
            nd_conn_msg_reply_t *m = (nd_conn_msg_reply_t *)nd_msg_new(
                ctx, sizeof(*m) + cmd->reply.len, ND_CONN_MSG_REPLY);
            m->len = (uint32_t)cmd->reply.len;
            memcpy(m->subj, cmd->reply.ptr, cmd->reply.len);
            slot_append(sl, &m->hdr);
        }
    }
    return true;
}

/* The DELIVER message of one delivery: sub's MSG/HMSG line, then payload bytes from pl_off on
 * (with their CRLF), holding a new reference on payload. */
static nd_conn_msg_deliver_t *
deliver_msg_new(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd, const nd_sub_t *sub, bool hmsg,
                const line_tail_t *tail, uint32_t pl_off, bool last, nd_payload_t *payload)
{
    nd_conn_msg_deliver_t *m =
        (nd_conn_msg_deliver_t *)nd_msg_new(ctx, sizeof(*m) + line_room(cmd, sub),
                                            ND_CONN_MSG_DELIVER);
    uint16_t sid_off;
    m->line_len = (uint16_t)format_line(m->line, cmd, sub, hmsg, tail, &sid_off);
    m->sid_off = sid_off;
    m->sid_len = (uint16_t)sub->sid_len;
    m->pl_off = pl_off;
    m->pl_len = (uint32_t)cmd->payload.len - pl_off + 2;
    m->sub = sub;
    m->last = last;
    nd_payload_ref(payload);
    m->payload = payload;
    return m;
}

/* Hands the publish to an internal client (net/iclient.h) as one IMSG, queued in the outbox
 * like any delivery. A full mailbox refuses it without counting it as matched, so a request
 * that nobody else took gets the 503 status (the "overloaded" answer). Ctx: in the section. */
static bool
deliver_internal(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_sub_t *sub, nd_conn_t *t)
{
    const nd_proto_cmd_t *cmd = pc->cmd;
    if (pc->payload == NULL)
        pc->payload = nd_payload_new(cmd->payload.ptr, (uint32_t)cmd->payload.len);
    /* An internal recipient sees what a socket recipient's MSG line shows (a consumer's
     * delivery: the message's own subject, not the deliver subject). */
    nd_conn_msg_imsg_t *m =
        nd_iclient_msg_new(ctx, t, c, c->acct, pc->shown, pc->payload, pc->via);
    if (m == NULL)
        return false;
    pc->matched++;
    (void)nd_sub_count_delivery(sub);
    nd_outbox_slot_t *sl = outbox_slot(&c->outbox, t);
    slot_close_chunk(sl);
    slot_append(sl, &m->hdr);
    return true;
}

/* Writes what a protocol connection's message names, as PMSGs and records carry it: subject,
 * reply and sid, each NUL-terminated. Returns: the end. */
static char *
put_pmsg_names(char *p, const nd_proto_cmd_t *shown, const nd_sub_t *sub)
{
    p = put(p, shown->subject.ptr, shown->subject.len);
    *p++ = '\0';
    if (shown->reply.len > 0) /* no reply: its pointer may be NULL, which memcpy must not see */
        p = put(p, shown->reply.ptr, shown->reply.len);
    *p++ = '\0';
    p = put(p, sub->sid, sub->sid_len);
    *p++ = '\0';
    return p;
}

nd_conn_msg_pmsg_t *
nd_deliver_pmsg_new(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd, const nd_proto_cmd_t *shown,
                    const nd_sub_t *sub, nd_payload_t *payload)
{
    size_t sl = shown->subject.len, rl = shown->reply.len, il = sub->sid_len;
    nd_conn_msg_pmsg_t *m =
        (nd_conn_msg_pmsg_t *)nd_msg_new(ctx, sizeof(*m) + sl + rl + il + 3, ND_CONN_MSG_PMSG);
    bool hdrs = cmd->op == ND_PROTO_OP_HPUB && cmd->hdr_len > 0;
    m->hdr_len = hdrs ? (uint32_t)cmd->hdr_len : 0;
    m->data_len = (uint32_t)cmd->payload.len - m->hdr_len;
    m->subject_len = (uint32_t)sl;
    m->reply_len = (uint32_t)rl;
    m->sid_len = (uint32_t)il;
    put_pmsg_names(m->str, shown, sub);
    nd_payload_ref(payload);
    m->payload = payload;
    return m;
}

/* Packs a small publish for a protocol connection into its open chunk as one nd_pmsg_rec_t
 * (the way a NATS recipient's MSG lines are gathered: one mailbox message per read batch). */
static void
pmsg_rec_append(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd,
                const nd_proto_cmd_t *shown, const nd_sub_t *sub, nd_conn_t *t)
{
    bool hdrs = cmd->op == ND_PROTO_OP_HPUB && cmd->hdr_len > 0;
    nd_pmsg_rec_t r = {
        .hdr_len = hdrs ? (uint32_t)cmd->hdr_len : 0,
        .subject_len = (uint32_t)shown->subject.len,
        .reply_len = (uint32_t)shown->reply.len,
        .sid_len = (uint32_t)sub->sid_len,
    };
    r.data_len = (uint32_t)cmd->payload.len - r.hdr_len;
    r.size = (uint32_t)sizeof(r) + r.subject_len + r.reply_len + r.sid_len + 3 +
             (uint32_t)cmd->payload.len;
    nd_conn_msg_chunk_t *ch = slot_chunk(ctx, outbox_slot(&c->outbox, t));
    char *p = chunk_reserve(ch, r.size);
    p = put(p, (const char *)&r, sizeof(r));
    p = put_pmsg_names(p, shown, sub);
    if (cmd->payload.len > 0)
        memcpy(p, cmd->payload.ptr, cmd->payload.len);
    ch->len += r.size;
    ch->msgs++;
    ch->bytes += r.data_len;
}

/* Hands the publish to a protocol connection (net/pconn.h): a small one as a record in its
 * chunk, a large one as a PMSG of its own holding the shared payload; queued in the outbox like
 * any delivery; the recipient formats it on its own turn. Ctx: in the section. */
static bool
deliver_proto(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_sub_t *sub, nd_conn_t *t)
{
    const nd_proto_cmd_t *cmd = pc->cmd;
    pc->matched++;
    if (atomic_load_explicit(&t->slow, memory_order_relaxed))
        return false;
    uint64_t max = atomic_load_explicit(&sub->max_msgs, memory_order_relaxed);
    uint64_t n = nd_sub_count_delivery(sub);
    if (max != 0 && n > max)
        return false;
    if (cmd->payload.len <= INLINE_MAX) {
        pmsg_rec_append(ctx, c, cmd, pc->shown, sub, t);
        return true;
    }
    if (pc->payload == NULL)
        pc->payload = nd_payload_new(cmd->payload.ptr, (uint32_t)cmd->payload.len);
    nd_conn_msg_pmsg_t *m = nd_deliver_pmsg_new(ctx, cmd, pc->shown, sub, pc->payload);
    nd_outbox_slot_t *slot = outbox_slot(&c->outbox, t);
    slot_close_chunk(slot);
    slot_append(slot, &m->hdr);
    return true;
}

/* ---- routes: one RMSG/HMSG per route (route.c has the protocol) ---- */

static uint32_t publish_as(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd,
                           const char *shown, size_t shown_len);
static const nd_proto_cmd_t *gw_shown(nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *shown,
                                      nd_proto_cmd_t *scmd);

static void route_flush(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc);
static void route_target(pub_ctx_t *pc, nd_conn_t *t, const nd_sub_t *qsub);

/* A publish to "_GR_.<cluster>.<server>.<reply>": an answer to a request that came from
 * another cluster goes straight to that cluster's gateway, whatever its interest (gateway.c).
 * Ctx: in the section. */
static void
gateway_direct(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc)
{
    nd_conn_t *t = nd_gw_direct_target(ctx, c->srv, pc->cmd->subject.ptr, pc->cmd->subject.len);
    if (t == NULL)
        return;
    route_target(pc, t, NULL);
    route_flush(ctx, c, pc);
    nd_actor_unref(ctx, &t->base);
}

/* Notes that the publish goes to route t, for queue group member sub (NULL: a plain
 * subscription). Ctx: in the section. */
static void
route_target(pub_ctx_t *pc, nd_conn_t *t, const nd_sub_t *qsub)
{
    route_tgt_t *rt = NULL;
    for (uint32_t i = 0; i < pc->nrt; i++)
        if (pc->rts[i].t == t) {
            rt = &pc->rts[i];
            break;
        }
    if (rt == NULL) {
        if (pc->rts == NULL) {
            pc->rts = pc->rin;
            pc->rtcap = ROUTE_TGT_INLINE;
        }
        if (pc->nrt == pc->rtcap) {
            route_tgt_t *v = nd_xmalloc(pc->rtcap * 2 * sizeof(*v));
            memcpy(v, pc->rts, pc->nrt * sizeof(*v));
            for (uint32_t i = 0; i < pc->nrt; i++)
                if (v[i].qs == pc->rts[i].qin)
                    v[i].qs = v[i].qin;
            if (pc->rts != pc->rin)
                nd_free(pc->rts);
            pc->rts = v;
            pc->rtcap *= 2;
        }
        rt = &pc->rts[pc->nrt++];
        rt->t = t;
        rt->qs = rt->qin;
        rt->nq = 0;
        rt->qcap = ROUTE_QIN;
        pc->matched++;
    }
    if (qsub == NULL)
        return;
    if (rt->nq == rt->qcap) {
        const nd_sub_t **v = nd_xmalloc(rt->qcap * 2 * sizeof(*v));
        memcpy(v, rt->qs, rt->nq * sizeof(*v));
        if (rt->qs != rt->qin)
            nd_free(rt->qs);
        rt->qs = v;
        rt->qcap *= 2;
    }
    rt->qs[rt->nq++] = qsub;
}

/* The room write_rmsg needs for cmd to route t with queue groups qs[0..nq). */
static size_t
rmsg_room(const nd_proto_cmd_t *cmd, const nd_proto_cmd_t *shown, const nd_acct_t *acct,
          const nd_sub_t *const *qs, uint32_t nq)
{
    size_t qroom = 0;
    for (uint32_t q = 0; q < nq; q++)
        qroom += qs[q]->queue_len + 1;
    return 16 + acct->name_len + cmd->subject.len + cmd->reply.len + ND_GW_REPLY_PFX_MAX +
           qroom + 48 +
           (shown != NULL ? shown->subject.len + 1 : 0) + cmd->payload.len + 2;
}

/* Whether a delivery is shown under another subject than the one it is routed by (a push
 * consumer's message: routed by the deliver subject, shown with the stream subject). */
static bool
shown_differs(const nd_proto_cmd_t *cmd, const nd_proto_cmd_t *shown)
{
    return shown != NULL && shown != cmd &&
           (shown->subject.len != cmd->subject.len ||
            memcmp(shown->subject.ptr, cmd->subject.ptr, cmd->subject.len) != 0);
}

/* Writes the reply field of an RMSG/LMSG: "<reply>@<shown subject>" when the delivery is shown
 * under another subject, as nats-server carries a JetStream delivery's subject to the server
 * of its subscriber (which splits it again: nd_deliver_split_shown). */
static char *
put_reply(char *p, const nd_proto_cmd_t *cmd, const nd_proto_cmd_t *shown)
{
    p = put(p, cmd->reply.ptr, cmd->reply.len);
    if (shown_differs(cmd, shown)) {
        *p++ = '@';
        p = put(p, shown->subject.ptr, shown->subject.len);
    }
    return p;
}

bool
nd_deliver_split_shown(const nd_proto_cmd_t *cmd, nd_proto_cmd_t *routed, nd_proto_cmd_t *shown)
{
    const char *at = cmd->reply.len > 0 ? memchr(cmd->reply.ptr, '@', cmd->reply.len) : NULL;
    if (at == NULL)
        return false;
    *routed = *cmd;
    routed->reply.len = (size_t)(at - cmd->reply.ptr);
    *shown = *routed;
    shown->subject.ptr = at + 1;
    shown->subject.len = cmd->reply.len - routed->reply.len - 1;
    return true;
}

/* Writes "RMSG <acct> <subject> [+ <reply> <queues> | | <queues> | <reply>] <size>\r\n",
 * the payload and CRLF (HMSG with the header size first when the route takes headers) into p.
 * Returns: the bytes written; *size the payload bytes. */
static size_t
write_rmsg(char *p0, const nd_proto_cmd_t *cmd, const nd_proto_cmd_t *shown, const nd_acct_t *acct,
           nd_conn_t *t, const nd_sub_t *const *qs, uint32_t nq, uint32_t *size_out)
{
    bool at = shown_differs(cmd, shown);
    bool hmsg = cmd->op == ND_PROTO_OP_HPUB && cmd->hdr_len > 0;
    uint32_t pl_off = 0, size = (uint32_t)cmd->payload.len;
    if (hmsg && !atomic_load_explicit(&t->headers, memory_order_relaxed)) {
        hmsg = false;
        pl_off = (uint32_t)cmd->hdr_len;
        size -= pl_off;
    }
    char *p = p0;
    if (t->kind == ND_CONN_LEAF) {
        /* A leaf connection is bound to one account: LMSG names none. */
        p = hmsg ? put(p, "HMSG ", 5) : put(p, "LMSG ", 5);
    } else {
        p = hmsg ? put(p, "HMSG ", 5) : put(p, "RMSG ", 5);
        p = put(p, acct->name, acct->name_len);
        *p++ = ' ';
    }
    p = put(p, cmd->subject.ptr, cmd->subject.len);
    *p++ = ' ';
    /* Over a gateway, a reply goes as "_GR_.<cluster>.<server>.<reply>" so the answer comes
     * straight back to this server (gateway.c). */
    size_t pfx_len = 0;
    const char *pfx = t->kind == ND_CONN_GATEWAY && cmd->reply.len > 0
                          ? nd_gw_reply_prefix(t->srv, cmd->reply.ptr, cmd->reply.len, &pfx_len)
                          : "";
    if (nq > 0) {
        if (cmd->reply.len > 0 || at) {
            p = put(p, "+ ", 2);
            p = put(p, pfx, pfx_len);
            p = put_reply(p, cmd, shown);
            *p++ = ' ';
        } else {
            p = put(p, "| ", 2);
        }
        for (uint32_t q = 0; q < nq; q++) {
            p = put(p, qs[q]->queue, qs[q]->queue_len);
            *p++ = ' ';
        }
    } else if (cmd->reply.len > 0 || at) {
        p = put(p, pfx, pfx_len);
        p = put_reply(p, cmd, shown);
        *p++ = ' ';
    }
    if (hmsg) {
        p = put_u64(p, (uint64_t)cmd->hdr_len);
        *p++ = ' ';
    }
    p = put_u64(p, size);
    p = put(p, "\r\n", 2);
    p = put(p, cmd->payload.ptr + pl_off, size);
    p = put(p, "\r\n", 2);
    *size_out = size;
    return (size_t)(p - p0);
}

/* Writes the RMSG/HMSG of the publish for each route target into its chunk, and forgets the
 * targets. Ctx: in the section. */
static void
route_flush(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc)
{
    const nd_proto_cmd_t *cmd = pc->cmd;
    for (uint32_t i = 0; i < pc->nrt; i++) {
        route_tgt_t *rt = &pc->rts[i];
        nd_conn_t *t = rt->t;
        if (!atomic_load_explicit(&t->slow, memory_order_relaxed)) {
            nd_conn_msg_chunk_t *ch = slot_chunk(ctx, outbox_slot(&c->outbox, t));
            char *p = chunk_reserve(ch, rmsg_room(cmd, pc->shown, pc->acct, rt->qs, rt->nq));
            uint32_t size;
            ch->len += (uint32_t)write_rmsg(p, cmd, pc->shown, pc->acct, t, rt->qs, rt->nq, &size);
            ch->msgs++;
            ch->bytes += size;
        }
        if (rt->qs != rt->qin)
            nd_free(rt->qs);
    }
    if (pc->rts != pc->rin)
        nd_free(pc->rts);
    pc->rts = NULL;
    pc->nrt = pc->rtcap = 0;
}

nd_conn_msg_chunk_t *
nd_deliver_route_chunk(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd, nd_acct_t *acct, nd_conn_t *t,
                       const nd_sub_t *qsub)
{
    nd_conn_msg_chunk_t *ch = ND_MSG_NEW(ctx, nd_conn_msg_chunk_t, ND_CONN_MSG_CHUNK);
    const nd_sub_t *qs[1] = {qsub};
    uint32_t nq = qsub != NULL ? 1 : 0;
    ch->cap = (uint32_t)rmsg_room(cmd, NULL, acct, qs, nq);
    ch->buf = nd_xmalloc(ch->cap);
    uint32_t size;
    ch->len = (uint32_t)write_rmsg(ch->buf, cmd, NULL, acct, t, qs, nq, &size);
    ch->msgs = 1;
    ch->bytes = size;
    return ch;
}

/* Hands one message to sub's connection (queued in the outbox; sent by nd_deliver_flush).
 * Returns: false when the sub cannot take it (unsubscribed, its connection slow, its
 * auto-unsubscribe count reached), so a queue group can pick another member. */
static bool
deliver(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_sub_t *sub)
{
    nd_conn_t *t = (nd_conn_t *)sub->conn;
    const nd_proto_cmd_t *cmd = pc->cmd;
    if (nd_sub_cancelled(sub))
        return false;
    if (sub->origin != ND_SUB_LOCAL) {
        if (t == c) {
            return false; /* a message never goes back where it came from */
        } else if (sub->origin == ND_SUB_GATEWAY) {
            /* Another cluster: only what this server's clients and leafs publish (the server
             * that received a routed message sent it already; a gateway's goes one hop). */
            if (pc->from_route || pc->from_gateway)
                return false;
        } else if (sub->origin == ND_SUB_ROUTE) {
            /* One hop: a routed message never goes to another route; nor does one our hub sent
             * us (the hub's cluster has it already), nor an imported one (route_imp.c). */
            if (pc->from_route || pc->from_spoke || pc->imported)
                return false;
        } else if (pc->from_route && sub->origin == ND_SUB_LEAF_HUB) {
            return false; /* from a route: only to the leafs we are the hub of */
        } else {
            /* A leaf connection's publish permissions (leaf.c) decide what it may be sent. */
            const nd_permset_t *lp = atomic_load_explicit(&t->rperms, memory_order_relaxed);
            if (lp != NULL && !nd_perms_pub_allowed(lp, cmd->subject.ptr, cmd->subject.len))
                return false;
        }
        route_target(pc, t, sub->queue != NULL ? sub : NULL);
        return true;
    }
    /* One load of a field next to `slow` and `headers` (read below anyway) for recipients
     * without permissions. */
    const nd_permset_t *tp = atomic_load_explicit(&t->rperms, memory_order_relaxed);
    if (tp != NULL && !recipient_perms(ctx, c, t, tp, cmd))
        return false;
    if (t->ic != NULL)
        return deliver_internal(ctx, c, pc, sub, t);
    if (t->proto != NULL)
        return deliver_proto(ctx, c, pc, sub, t);
    pc->matched++;
    if (atomic_load_explicit(&t->slow, memory_order_relaxed))
        return false;
    uint64_t max = atomic_load_explicit(&sub->max_msgs, memory_order_relaxed);
    uint64_t n = nd_sub_count_delivery(sub);
    if (max != 0 && n > max)
        return false;
    bool last = max != 0 && n == max;

    bool hmsg = cmd->op == ND_PROTO_OP_HPUB && cmd->hdr_len > 0; /* 0 = no headers: MSG */
    bool stripped = false;
    uint32_t pl_off = 0;
    uint32_t size = (uint32_t)cmd->payload.len;
    if (hmsg && !atomic_load_explicit(&t->headers, memory_order_relaxed)) {
        /* The recipient cannot read headers: it gets the payload alone, as with nats-server. */
        hmsg = false;
        stripped = true;
        pl_off = (uint32_t)cmd->hdr_len;
        size -= pl_off;
    }
    const line_tail_t *tail = tail_of(pc, hmsg, stripped, size);
    uint16_t sid_off;

    if (t == c || (size <= INLINE_MAX && !last)) {
        /* Ready-to-write bytes: into our own output (our own subscription: in order with the
         * rest of this turn, e.g. before a PONG), or into t's open chunk. */
        char *p;
        nd_conn_msg_chunk_t *ch = NULL;
        size_t room = line_room(pc->shown, sub) + size + 2;
        if (t == c) {
            p = nd_conn_reserve(c, room);
        } else {
            ch = slot_chunk(ctx, outbox_slot(&c->outbox, t));
            p = chunk_reserve(ch, room);
        }
        size_t len = format_line(p, pc->shown, sub, hmsg, tail, &sid_off);
        memcpy(p + len, cmd->payload.ptr + pl_off, size);
        memcpy(p + len + size, "\r\n", 2);
        len += size + 2;
        if (t == c) {
            nd_conn_commit(c, len);
            c->out_msgs++;
            c->out_bytes += size;
            if (last)
                auto_unsub_done(ctx, c, sub->sid, sub->sid_len, sub);
        } else {
            ch->len += (uint32_t)len;
            ch->msgs++;
            ch->bytes += size;
        }
        return true;
    }

    /* A large payload or the last delivery of an auto-unsubscribe: its own message, after the
     * recipient's open chunk. */
    nd_outbox_slot_t *sl = outbox_slot(&c->outbox, t);
    slot_close_chunk(sl);
    if (pc->payload == NULL)
        pc->payload = nd_payload_new(cmd->payload.ptr, (uint32_t)cmd->payload.len);
    nd_conn_msg_deliver_t *m =
        deliver_msg_new(ctx, pc->shown, sub, hmsg, tail, pl_off, last, pc->payload);
    slot_append(sl, &m->hdr);
    return true;
}

nd_conn_msg_deliver_t *
nd_deliver_msg_new(nd_ctx_t *ctx, const nd_proto_cmd_t *cmd, const nd_sub_t *sub, bool hmsg,
                   bool last, nd_payload_t *payload)
{
    uint32_t pl_off = hmsg ? 0 : (uint32_t)cmd->hdr_len;
    line_tail_t tail;
    format_tail(&tail, hmsg, cmd->hdr_len, (uint32_t)cmd->payload.len - pl_off);
    return deliver_msg_new(ctx, cmd, sub, hmsg, &tail, pl_off, last, payload);
}

static nd_sl_result_t *
scratch_of(nd_conn_t *c)
{
    if (c->scratch == NULL) {
        c->scratch = nd_new(nd_sl_result_t);
        nd_sl_result_init(c->scratch);
    }
    return c->scratch;
}

/* Finds the publisher's own subscription matching the reply subject. Ctx: in the section. */
static const nd_sub_t *
own_reply_sub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_sl_result_t *r = scratch_of(c);
    nd_sl_match(ctx, nd_acct_sublist(c->acct), cmd->reply.ptr, cmd->reply.len, r);
    for (uint32_t v = 0; v < r->npvecs; v++) {
        const nd_sl_vec_t *vec = r->pvecs[v];
        uint32_t n = nd_sl_vec_len(vec);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *sub = nd_sl_vec_get(vec, i);
            if (sub != NULL && sub->conn == &c->base)
                return sub;
        }
    }
    return NULL;
}

/* Sends the no-responders status (inventory §1.7) to the publisher's own subscription on the
 * reply subject; nothing when it has none. Ctx: in the section. */
static void
no_responders(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    const nd_sub_t *own = own_reply_sub(ctx, c, cmd);
    if (own == NULL)
        return;
    static const char status[] = " 16 16\r\nNATS/1.0 503\r\n\r\n\r\n";
    nd_conn_write(c, "HMSG ", 5);
    nd_conn_write(c, cmd->reply.ptr, cmd->reply.len);
    nd_conn_write(c, " ", 1);
    nd_conn_write(c, own->sid, own->sid_len);
    nd_conn_write(c, status, sizeof status - 1);
}

/* A queue group member offered the message by deliver_result. */
typedef struct qtake {
    nd_ctx_t *ctx;
    nd_conn_t *c;
    pub_ctx_t *pc;
} qtake_t;

/* Returns: whether sub took the message (nd_sl_result_qeach's callback). */
static bool
qmember_take(nd_sub_t *sub, void *arg)
{
    qtake_t *q = arg;
    if (!q->c->echo && sub->conn == &q->c->base)
        return false;
    return deliver(q->ctx, q->c, q->pc, sub);
}

/* Queue groups with members on other servers: a member is picked with the odds of its weight
 * (a route stands for the members behind it), as nats-server's result list repeats a route's
 * queue subscription weight times. */
typedef struct wpick {
    uint64_t total, x;
    nd_sub_t *chosen;
    const nd_conn_t *c;
    const pub_ctx_t *pc;
    int tier; /* 0: local members and routes; 1: leaf members (only when tier 0 has none);
               * 2: other clusters, through gateways (only when neither has any) */
} wpick_t;

/* A member's odds in the pick's tier (0: not a candidate there). Leaf members come second, so
 * a queue group prefers the members on this side, as nats-server does for leaf nodes. */
static inline uint64_t
qweight(const wpick_t *w, const nd_sub_t *sub)
{
    const pub_ctx_t *pc = w->pc;
    if (sub->origin == ND_SUB_LOCAL)
        return w->tier == 0 && (w->c->echo || sub->conn != &w->c->base) ? 1 : 0;
    uint64_t q = atomic_load_explicit(&((nd_sub_t *)sub)->qweight, memory_order_relaxed);
    if (sub->origin == ND_SUB_ROUTE)
        return w->tier == 0 && !pc->from_route && !pc->from_spoke && !pc->imported ? q : 0;
    if (sub->origin == ND_SUB_GATEWAY)
        return w->tier == 2 && !pc->from_route && !pc->from_gateway ? 1 : 0;
    if (w->tier != 1 || sub->conn == &w->c->base ||
        (pc->from_route && sub->origin == ND_SUB_LEAF_HUB))
        return 0;
    return q;
}

static bool
wpick_sum(nd_sub_t *sub, void *arg)
{
    wpick_t *w = arg;
    w->total += qweight(w, sub);
    return false;
}

static bool
wpick_choose(nd_sub_t *sub, void *arg)
{
    wpick_t *w = arg;
    uint64_t q = qweight(w, sub);
    if (w->x < q) {
        w->chosen = sub;
        return true;
    }
    w->x -= q;
    return false;
}

/* Whether queue is one of the blank-separated names in list. */
static bool
queue_listed(const nd_proto_slice_t *list, const nd_sub_t *sub)
{
    const char *p = list->ptr, *end = list->ptr + list->len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        const char *s = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        if ((size_t)(p - s) == sub->queue_len && memcmp(s, sub->queue, sub->queue_len) == 0)
            return true;
    }
    return false;
}

/* Delivers to every plain subscription of r and to one member of each of its queue groups.
 * Ctx: in the section that produced r. */
static void
deliver_result(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, const nd_sl_result_t *r)
{
    bool weighted = c->srv->routes != NULL || c->srv->leafs != NULL || c->srv->gateways != NULL;
    for (uint32_t v = 0; v < r->npvecs; v++) {
        const nd_sl_vec_t *vec = r->pvecs[v];
        uint32_t n = nd_sl_vec_len(vec);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *sub = nd_sl_vec_get(vec, i);
            if (sub == NULL || (!c->echo && sub->conn == &c->base))
                continue;
            deliver(ctx, c, pc, sub);
        }
    }
    for (uint32_t g = 0; g < r->nqgroups; g++) {
        /* One random pick, which nearly always takes the message. When it cannot (ourselves
         * with echo off, a member whose deny filter drops the subject, one just unsubscribed,
         * slow or at its auto-unsubscribe count), every other member is offered it in turn, as
         * nats-server does: never a drop while one could take it. */
        nd_sub_t *sub = nd_sl_result_qpick(ctx, r, g);
        if (sub == NULL)
            continue;
        if (pc->from_route || pc->from_leaf || pc->from_gateway) {
            /* Only the groups the sender chose us for. */
            if (pc->qfilter == NULL || !queue_listed(pc->qfilter, sub))
                continue;
        }
        if (weighted) {
            wpick_t w = {.c = c, .pc = pc};
            nd_sl_result_qeach(ctx, r, g, NULL, wpick_sum, &w);
            if (w.total == 0) {
                w.tier = 1;
                nd_sl_result_qeach(ctx, r, g, NULL, wpick_sum, &w);
            }
            if (w.total == 0 && c->srv->gateways != NULL) {
                w.tier = 2;
                nd_sl_result_qeach(ctx, r, g, NULL, wpick_sum, &w);
            }
            if (w.total == 0)
                continue; /* no member this message may go to */
            w.x = nd_ctx_rand(ctx) % w.total;
            nd_sl_result_qeach(ctx, r, g, NULL, wpick_choose, &w);
            if (w.chosen != NULL)
                sub = w.chosen;
        }
        if ((c->echo || sub->conn != &c->base) && deliver(ctx, c, pc, sub))
            continue;
        qtake_t qt = {ctx, c, pc};
        nd_sl_result_qeach(ctx, r, g, sub, qmember_take, &qt);
    }
    if (pc->nrt > 0)
        route_flush(ctx, c, pc);
}

/* Room for a mapped or imported subject on the stack; longer ones are allocated. */
#define SUBJ_BUF 256

/* Writes the other account's subject for subj (an import's transform xf, else its literal
 * subject to, else subj itself) into buf or a heap copy in *heap. Returns: it. */
static const char *
import_subject(const nd_xf_t *xf, const char *to, size_t to_len, const char *subj, size_t len,
               char *buf, char **heap, size_t *outlen)
{
    if (xf != NULL) {
        size_t n = nd_xf_apply(xf, subj, len, buf, SUBJ_BUF);
        if (n < SUBJ_BUF) {
            *outlen = n;
            return buf;
        }
        *heap = nd_xmalloc(n + 1);
        *outlen = nd_xf_apply(xf, subj, len, *heap, n + 1);
        return *heap;
    }
    if (to != NULL) {
        *outlen = to_len;
        return to;
    }
    *outlen = len;
    return subj;
}

/* Matches icmd in acct's sublist and delivers it there, sharing pc's payload buffer and adding
 * to its count; where the publish came from (a route: local subscribers only, the queue groups
 * it names) carries over. imported: a stream import's delivery. Ctx: in the section. */
static void
deliver_in_as(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_acct_t *acct,
              const nd_proto_cmd_t *icmd, const nd_proto_cmd_t *shown, const char *via,
              bool imported)
{
    pub_ctx_t ipc = {.cmd = icmd, .shown = shown, .payload = pc->payload, .via = via,
                     .acct = acct, .from_route = pc->from_route, .from_leaf = pc->from_leaf,
                     .from_spoke = pc->from_spoke, .from_gateway = pc->from_gateway,
                     .imported = imported, .qfilter = pc->qfilter};
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_sl_match(ctx, nd_acct_sublist(acct), icmd->subject.ptr, icmd->subject.len, &r);
    deliver_result(ctx, c, &ipc, &r);
    nd_sl_result_fini(&r);
    pc->payload = ipc.payload;
    pc->matched += ipc.matched;
}

static void
deliver_in(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_acct_t *acct,
           const nd_proto_cmd_t *icmd, const char *via)
{
    deliver_in_as(ctx, c, pc, acct, icmd, icmd, via, false);
}

/* Service imports a request passes through, at most (a chain A <- B <- C <- ...). */
#define SVC_CHAIN_MAX 16

/* Service imports of the publisher's account: the first one whose subject matches sends the
 * request to the exporter, under the exported subject, with an `_R_` reply that leads back here
 * and with the server's Nats-Request-Info header (acct_reqinfo.h) in place of any the requester
 * sent. In the exporter the request goes on through the exporter's own first matching service
 * import (nats-server's chained processServiceImport), each import at most once, so a chain
 * whose subjects loop ends. Ctx: in the section. */
static void
deliver_services(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, const nd_acct_route_t *rt)
{
    const nd_acct_svc_imp_t *seen[SVC_CHAIN_MAX];
    char sbuf[2][SUBJ_BUF];
    char *sheap[2] = {NULL, NULL};
    char rsubj[2][ND_ACCT_RESP_SUBJ_LEN];
    char *body = NULL; /* the current payload, once rewritten */
    nd_acct_t *from = c->acct;
    nd_proto_cmd_t icmd = *pc->cmd;
    nd_acct_reqinfo_t ri = {0};
    bool prev_share = false;
    for (size_t hop = 0; hop < SVC_CHAIN_MAX && rt != NULL; hop++) {
        const nd_acct_svc_imp_t *sv = NULL;
        for (size_t i = 0; i < rt->nsvcs && sv == NULL; i++)
            if (nd_subj_match(rt->svcs[i].from, rt->svcs[i].from_len, icmd.subject.ptr,
                              icmd.subject.len))
                sv = &rt->svcs[i];
        for (size_t k = 0; k < hop && sv != NULL; k++)
            if (seen[k] == sv)
                sv = NULL;
        if (sv == NULL)
            break;
        seen[hop] = sv;
        /* Two buffers each for the subject and the reply: this hop's are built from the last
         * hop's, then the older ones are reused. */
        int b = (int)(hop & 1);
        nd_free(sheap[b]);
        sheap[b] = NULL;
        icmd.subject.ptr = import_subject(sv->xf, sv->to, sv->to_len, icmd.subject.ptr,
                                          icmd.subject.len, sbuf[b], &sheap[b], &icmd.subject.len);
        if (icmd.reply.len > 0) {
            nd_acct_resp_add(ctx, sv->resp, rsubj[b], from, icmd.reply.ptr, icmd.reply.len,
                             sv->singleton, sv->ttl_ns);
            icmd.reply.ptr = rsubj[b];
            icmd.reply.len = sizeof rsubj[b];
        }
        /* processServiceImport: the first hop writes the requester's info as the import shares
         * it (and the server's name when it leads to the system account); a later hop keeps that
         * info, names the account it passes through, and adds the server's name when moving
         * from an import that did not share to one that does (or to the system account). */
        if (hop == 0) {
            ri.detailed = sv->share;
            ri.server = sv->share || sv->sys;
        } else {
            ri.svc = nd_acct_name(from);
            if (!prev_share && (sv->share || sv->sys))
                ri.server = true;
        }
        prev_share = sv->share;
        size_t len, hdr_len;
        char *nb = nd_acct_reqinfo_apply(c, nd_acct_name(c->acct), &ri, icmd.payload.ptr,
                                         icmd.payload.len, (size_t)icmd.hdr_len, &len, &hdr_len);
        nd_free(body);
        body = nb;
        icmd.op = ND_PROTO_OP_HPUB;
        icmd.payload.ptr = body;
        icmd.payload.len = len;
        icmd.hdr_len = (int64_t)hdr_len;
        /* The rewritten payload is not the publisher's: a payload buffer of its own. */
        pub_ctx_t spc = {.cmd = &icmd, .shown = &icmd};
        deliver_in(ctx, c, &spc, sv->acct, &icmd, sv->from);
        pc->matched += spc.matched;
        if (spc.payload != NULL)
            nd_payload_unref(spc.payload);
        from = sv->acct;
        /* acquire: pairs with the release store of nd_acct_route_install. */
        rt = atomic_load_explicit(&sv->acct->route, memory_order_acquire);
    }
    nd_free(body);
    nd_free(sheap[0]);
    nd_free(sheap[1]);
}

/* A publish in an exporting account on an `_R_` subject: a response to an imported request,
 * delivered in the importer under the request's original reply. When that reply is itself an
 * `_R_` subject of the importer's (a chained import), the response goes on back the same way.
 * Ctx: in the section. */
static void
deliver_response(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, const nd_acct_route_t *rt)
{
    nd_proto_cmd_t icmd = *pc->cmd;
    char *reply = NULL;
    for (size_t hop = 0; hop < SVC_CHAIN_MAX && rt != NULL && rt->resp != NULL; hop++) {
        if (icmd.subject.len != ND_ACCT_RESP_SUBJ_LEN ||
            memcmp(icmd.subject.ptr, ND_ACCT_RESP_PREFIX, ND_ACCT_RESP_PREFIX_LEN) != 0)
            break;
        char *next = NULL;
        size_t rlen = 0;
        nd_acct_t *imp =
            nd_acct_resp_take(rt->resp, icmd.subject.ptr, icmd.subject.len, &next, &rlen);
        if (imp == NULL)
            break;
        nd_free(reply);
        reply = next;
        icmd.subject.ptr = reply;
        icmd.subject.len = rlen;
        deliver_in(ctx, c, pc, imp, &icmd, NULL);
        /* acquire: pairs with the release store of nd_acct_route_install. */
        rt = atomic_load_explicit(&imp->route, memory_order_acquire);
    }
    nd_free(reply);
}

/* Stream imports: the message as matched in each importer whose import covers the subject.
 * Ctx: in the section. */
static void
deliver_imports(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, const nd_acct_route_t *rt)
{
    const nd_proto_cmd_t *cmd = pc->cmd;
    for (size_t i = 0; i < rt->nstreams; i++) {
        const nd_acct_stream_imp_t *im = &rt->streams[i];
        if (!nd_subj_match(im->from, im->from_len, cmd->subject.ptr, cmd->subject.len))
            continue;
        char buf[SUBJ_BUF];
        char *heap = NULL;
        nd_proto_cmd_t icmd = *cmd;
        icmd.subject.ptr = import_subject(im->xf, im->to, im->to_len, cmd->subject.ptr,
                                          cmd->subject.len, buf, &heap, &icmd.subject.len);
        /* a delivery shown under another subject (a consumer's) keeps showing it; a gateway
         * reply is shown as its clients see it */
        nd_proto_cmd_t scmd = icmd;
        if (shown_differs(cmd, pc->shown))
            scmd.subject = pc->shown->subject;
        scmd.reply = pc->shown->reply;
        deliver_in_as(ctx, c, pc, im->acct, &icmd, &scmd, NULL, true);
        nd_free(heap);
    }
}

bool
nd_deliver_has_interest(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t len)
{
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, nd_acct_sublist(acct), subj, len, &r);
    bool any = !nd_sl_result_empty(&r);
    /* acquire: pairs with the release store of nd_acct_route_install (a complete route). */
    const nd_acct_route_t *rt = atomic_load_explicit(&acct->route, memory_order_acquire);
    for (size_t i = 0; !any && rt != NULL && i < rt->nstreams; i++) {
        const nd_acct_stream_imp_t *im = &rt->streams[i];
        if (!nd_subj_match(im->from, im->from_len, subj, len))
            continue;
        char buf[SUBJ_BUF];
        char *heap = NULL;
        size_t ilen;
        const char *isubj =
            import_subject(im->xf, im->to, im->to_len, subj, len, buf, &heap, &ilen);
        nd_sl_result_t ir;
        nd_sl_result_init(&ir);
        nd_sl_match(ctx, nd_acct_sublist(im->acct), isubj, ilen, &ir);
        any = !nd_sl_result_empty(&ir);
        nd_sl_result_fini(&ir);
        nd_free(heap);
    }
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);
    return any;
}

uint32_t
nd_deliver_publish_as(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd,
                      const char *shown, size_t shown_len)
{
    /* An answer to a gateway reply shown without its prefix goes back as the prefixed one. */
    char *gsubj = NULL;
    nd_proto_cmd_t gcmd;
    size_t glen;
    if (c->srv->gateways != NULL &&
        (gsubj = nd_gw_mapped_reply(c->srv, c->acct, cmd->subject.ptr, cmd->subject.len,
                                    &glen)) != NULL) {
        gcmd = *cmd;
        gcmd.subject.ptr = gsubj;
        gcmd.subject.len = glen;
        cmd = &gcmd;
    }
    uint32_t n = publish_as(ctx, c, cmd, shown, shown_len);
    nd_free(gsubj);
    return n;
}

static uint32_t
publish_as(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd, const char *shown,
           size_t shown_len)
{
    pub_ctx_t pc = {.cmd = cmd, .shown = cmd, .acct = c->acct};
    nd_proto_cmd_t scmd;
    if (shown != NULL) {
        scmd = *cmd;
        scmd.subject.ptr = shown;
        scmd.subject.len = shown_len;
        pc.shown = &scmd;
    }
    char mbuf[SUBJ_BUF];
    char *mheap = NULL;
    nd_proto_cmd_t mcmd;
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release store of nd_acct_route_install (a complete route). */
    const nd_acct_route_t *rt = atomic_load_explicit(&c->acct->route, memory_order_acquire);
    if (rt != NULL && rt->map != NULL) {
        size_t n;
        uint32_t rnd = (uint32_t)(nd_ctx_rand(ctx) >> 32);
        nd_xf_map_t m = nd_xf_table_map(rt->map, cmd->subject.ptr, cmd->subject.len, NULL, rnd,
                                        mbuf, sizeof mbuf, &n);
        if (m == ND_XF_MAP_MAPPED && n >= sizeof mbuf) {
            mheap = nd_xmalloc(n + 1);
            m = nd_xf_table_map(rt->map, cmd->subject.ptr, cmd->subject.len, NULL, rnd, mheap,
                                n + 1, &n);
        }
        if (m == ND_XF_MAP_DROP) {
            nd_epoch_exit(ctx);
            return 0;
        }
        if (m == ND_XF_MAP_MAPPED) {
            mcmd = *cmd;
            mcmd.subject.ptr = mheap != NULL ? mheap : mbuf;
            mcmd.subject.len = n;
            cmd = &mcmd;
            pc.cmd = cmd;
            if (shown == NULL)
                pc.shown = cmd;
        }
    }
    const nd_sl_result_t *r = nd_slcache_match(ctx, &c->cache, nd_acct_sublist(c->acct),
                                               cmd->subject.ptr, cmd->subject.len, scratch_of(c));
    deliver_result(ctx, c, &pc, r);
    if (rt != NULL) {
        if (rt->nstreams > 0)
            deliver_imports(ctx, c, &pc, rt);
        unsigned char c0 = cmd->subject.len > 0 ? (unsigned char)cmd->subject.ptr[0] : 0;
        if (rt->nsvcs > 0 && (rt->svc_first[c0 >> 6] >> (c0 & 63) & 1))
            deliver_services(ctx, c, &pc, rt);
        if (rt->resp != NULL && cmd->subject.len == ND_ACCT_RESP_SUBJ_LEN &&
            memcmp(cmd->subject.ptr, ND_ACCT_RESP_PREFIX, ND_ACCT_RESP_PREFIX_LEN) == 0)
            deliver_response(ctx, c, &pc, rt);
    }
    if (c->srv->gateways != NULL && nd_gw_is_reply(cmd->subject.ptr, cmd->subject.len))
        gateway_direct(ctx, c, &pc);
    if (pc.matched == 0 && cmd->reply.len > 0 && c->no_responders)
        no_responders(ctx, c, cmd);
    nd_epoch_exit(ctx);
    nd_free(mheap);
    if (pc.payload != NULL)
        nd_payload_unref(pc.payload);
    return pc.matched;
}

void
nd_deliver_route_publish(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd)
{
    nd_proto_cmd_t routed, shown, scmd;
    const nd_proto_cmd_t *base = cmd;
    if (nd_deliver_split_shown(cmd, &routed, &shown)) {
        cmd = &routed;
        base = &shown;
    }
    pub_ctx_t pc = {.cmd = cmd, .shown = gw_shown(c, acct, base, &scmd), .acct = acct,
                    .from_route = true,
                    .qfilter = cmd->queues.len > 0 ? &cmd->queues : NULL};
    nd_sl_result_t *r = scratch_of(c);
    nd_epoch_enter(ctx);
    /* No L1 cache: one route carries many accounts. The sender applied mappings already. */
    nd_sl_match(ctx, nd_acct_sublist(acct), cmd->subject.ptr, cmd->subject.len, r);
    deliver_result(ctx, c, &pc, r);
    /* The exporter's message for this server's importers (route_imp.c), or a response to a
     * request one of them made through a service import. acquire: pairs with the release
     * store of nd_acct_route_install. */
    const nd_acct_route_t *rt = atomic_load_explicit(&acct->route, memory_order_acquire);
    if (rt != NULL) {
        if (rt->nstreams > 0)
            deliver_imports(ctx, c, &pc, rt);
        if (rt->resp != NULL && cmd->subject.len == ND_ACCT_RESP_SUBJ_LEN &&
            memcmp(cmd->subject.ptr, ND_ACCT_RESP_PREFIX, ND_ACCT_RESP_PREFIX_LEN) == 0)
            deliver_response(ctx, c, &pc, rt);
    }
    nd_epoch_exit(ctx);
    if (pc.payload != NULL)
        nd_payload_unref(pc.payload);
}

/* A gateway reply ("_GR_.<cluster>.<server>.<reply>") is shown to clients as <reply>, and their
 * answers to <reply> go back through the gateway for a while (gateway.c); routes, leafs and
 * gateways get it whole. shown: what clients would see otherwise (the publish, or its split
 * JetStream form). Returns: what clients see (shown, or scmd filled). */
static const nd_proto_cmd_t *
gw_shown(nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *shown, nd_proto_cmd_t *scmd)
{
    if (c->srv->gateways == NULL || !nd_gw_is_reply(shown->reply.ptr, shown->reply.len))
        return shown;
    nd_gw_track_reply(c->srv, acct, shown->reply.ptr, shown->reply.len);
    *scmd = *shown;
    scmd->reply.ptr += ND_GW_REPLY_PFX_MAX;
    scmd->reply.len -= ND_GW_REPLY_PFX_MAX;
    return scmd;
}

void
nd_deliver_gateway_publish(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct,
                           const nd_proto_cmd_t *cmd)
{
    nd_proto_cmd_t scmd;
    pub_ctx_t pc = {.cmd = cmd, .shown = gw_shown(c, acct, cmd, &scmd), .acct = acct,
                    .from_gateway = true,
                    .qfilter = cmd->queues.len > 0 ? &cmd->queues : NULL};
    nd_sl_result_t *r = scratch_of(c);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, nd_acct_sublist(acct), cmd->subject.ptr, cmd->subject.len, r);
    deliver_result(ctx, c, &pc, r);
    nd_epoch_exit(ctx);
    if (pc.payload != NULL)
        nd_payload_unref(pc.payload);
}

void
nd_deliver_leaf_publish(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    pub_ctx_t pc = {.cmd = cmd, .shown = cmd, .acct = c->acct, .from_leaf = true,
                    .from_spoke = c->leaf->spoke,
                    .qfilter = cmd->queues.len > 0 ? &cmd->queues : NULL};
    nd_proto_cmd_t routed, shown;
    if (nd_deliver_split_shown(cmd, &routed, &shown)) {
        pc.cmd = cmd = &routed;
        pc.shown = &shown;
    }
    nd_sl_result_t *r = scratch_of(c);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, nd_acct_sublist(c->acct), cmd->subject.ptr, cmd->subject.len, r);
    deliver_result(ctx, c, &pc, r);
    nd_epoch_exit(ctx);
    if (pc.payload != NULL)
        nd_payload_unref(pc.payload);
}

void
nd_deliver_publish(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    (void)nd_deliver_publish_as(ctx, c, cmd, NULL, 0);
}

void
nd_deliver_receive(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_deliver_t *m)
{
    if (c->closing) {
        nd_payload_unref(m->payload);
        return;
    }
    nd_conn_append(c, m->line, m->line_len);
    nd_conn_append(c, m->payload->data + m->pl_off, m->pl_len);
    c->out_msgs++;
    c->out_bytes += m->pl_len - 2;
    nd_payload_unref(m->payload);
    if (m->last)
        auto_unsub_done(ctx, c, m->line + m->sid_off, m->sid_len, m->sub);
}

void
nd_deliver_receive_chunk(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_chunk_t *ch)
{
    (void)ctx;
    if (!c->closing) {
        nd_conn_append(c, ch->buf, ch->len);
        c->out_msgs += ch->msgs;
        c->out_bytes += ch->bytes;
    }
    nd_free(ch->buf);
}

void
nd_deliver_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    (void)ctx;
    if (msg->id == ND_CONN_MSG_DELIVER)
        nd_payload_unref(((nd_conn_msg_deliver_t *)msg)->payload);
    else if (msg->id == ND_CONN_MSG_PMSG)
        nd_payload_unref(((nd_conn_msg_pmsg_t *)msg)->payload);
    else if (msg->id == ND_CONN_MSG_CHUNK)
        nd_free(((nd_conn_msg_chunk_t *)msg)->buf);
}
