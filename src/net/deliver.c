/* Publish and delivery (DESIGN.md §3 steps 3–5).
 *
 * The publishing connection matches the subject inside an epoch section (its L1 cache first,
 * validated by the sublist generation), stores the payload once in a refcounted buffer, and sends
 * each recipient connection a DELIVER message holding only its own MSG/HMSG line and a payload
 * reference. One member of each queue group is chosen at random. The recipient appends the line
 * and the payload to its write buffer and writes at the end of its turn.
 * Flow control: the publisher adds the bytes to the recipient's `pending` first; past max_pending
 * the recipient is marked slow, further deliveries are dropped and it closes itself.
 */
#include <string.h>

#include "conn_int.h"
#include "natsd/account.h"
#include "natsd/epoch.h"
#include "natsd/sublist.h"

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

typedef struct pub_ctx {
    const nd_proto_cmd_t *cmd;
    nd_payload_t *payload; /* created on the first recipient */
    uint32_t matched;      /* recipients found, delivered or not */
} pub_ctx_t;

/* Sends one message to sub's connection. */
static void
deliver(nd_ctx_t *ctx, nd_conn_t *c, pub_ctx_t *pc, nd_sub_t *sub)
{
    nd_conn_t *t = (nd_conn_t *)sub->conn;
    const nd_proto_cmd_t *cmd = pc->cmd;
    if (nd_sub_cancelled(sub))
        return;
    pc->matched++;
    if (atomic_load_explicit(&t->slow, memory_order_relaxed))
        return;
    uint64_t max = atomic_load_explicit(&sub->max_msgs, memory_order_relaxed);
    uint64_t n = nd_sub_count_delivery(sub);
    if (max != 0 && n > max)
        return;

    bool hmsg = cmd->op == ND_PROTO_OP_HPUB;
    uint32_t pl_off = 0;
    uint32_t size = (uint32_t)cmd->payload.len;
    if (hmsg && !atomic_load_explicit(&t->headers, memory_order_relaxed)) {
        /* The recipient cannot read headers: it gets the payload alone, as with nats-server. */
        hmsg = false;
        pl_off = (uint32_t)cmd->hdr_len;
        size -= pl_off;
    }
    size_t line_max = 32 + cmd->subject.len + sub->sid_len + cmd->reply.len + 40;
    nd_conn_msg_deliver_t *m =
        (nd_conn_msg_deliver_t *)nd_msg_new(ctx, sizeof(*m) + line_max, ND_CONN_MSG_DELIVER);
    char *p = m->line;
    p = hmsg ? put(p, "HMSG ", 5) : put(p, "MSG ", 4);
    p = put(p, cmd->subject.ptr, cmd->subject.len);
    *p++ = ' ';
    m->sid_off = (uint16_t)(p - m->line);
    m->sid_len = (uint16_t)sub->sid_len;
    p = put(p, sub->sid, sub->sid_len);
    *p++ = ' ';
    if (cmd->reply.len > 0) {
        p = put(p, cmd->reply.ptr, cmd->reply.len);
        *p++ = ' ';
    }
    if (hmsg) {
        p = put_u64(p, (uint64_t)cmd->hdr_len);
        *p++ = ' ';
    }
    p = put_u64(p, size);
    p = put(p, "\r\n", 2);
    m->line_len = (uint16_t)(p - m->line);
    m->pl_off = pl_off;
    m->pl_len = size + 2;
    m->sub = sub;
    m->last = max != 0 && n == max;

    int64_t bytes = (int64_t)m->line_len + (int64_t)m->pl_len;
    int64_t prev = atomic_fetch_add_explicit(&t->pending, bytes, memory_order_relaxed);
    if (prev + bytes > c->srv->opts.max_pending) {
        atomic_fetch_sub_explicit(&t->pending, bytes, memory_order_relaxed);
        nd_msg_free(ctx, &m->hdr);
        if (!atomic_exchange_explicit(&t->slow, true, memory_order_relaxed))
            nd_actor_send(ctx, &t->base, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_SLOW));
        return;
    }
    if (pc->payload == NULL)
        pc->payload = nd_payload_new(cmd->payload.ptr, (uint32_t)cmd->payload.len);
    nd_payload_ref(pc->payload);
    m->payload = pc->payload;
    if (t == c) {
        /* Our own subscription: write in order with the rest of this turn's output (a PONG
         * after this PUB must follow the MSG, as with nats-server). */
        nd_deliver_receive(ctx, c, m);
        nd_msg_free(ctx, &m->hdr);
        return;
    }
    nd_actor_send(ctx, &t->base, &m->hdr);
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

void
nd_deliver_publish(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    pub_ctx_t pc = {.cmd = cmd};
    nd_epoch_enter(ctx);
    const nd_sl_result_t *r = nd_slcache_match(ctx, &c->cache, nd_acct_sublist(c->acct),
                                               cmd->subject.ptr, cmd->subject.len, scratch_of(c));
    for (uint32_t v = 0; v < r->npvecs; v++) {
        const nd_sl_vec_t *vec = r->pvecs[v];
        uint32_t n = nd_sl_vec_len(vec);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *sub = nd_sl_vec_get(vec, i);
            if (sub == NULL || (!c->echo && sub->conn == &c->base))
                continue;
            deliver(ctx, c, &pc, sub);
        }
    }
    for (uint32_t g = 0; g < r->nqgroups; g++) {
        /* A few tries to find a member other than ourselves when echo is off. */
        for (int tries = 0; tries < 4; tries++) {
            nd_sub_t *sub = nd_sl_result_qpick(ctx, r, g);
            if (sub == NULL)
                break;
            if (!c->echo && sub->conn == &c->base)
                continue;
            deliver(ctx, c, &pc, sub);
            break;
        }
    }
    if (pc.matched == 0 && cmd->reply.len > 0 && c->no_responders)
        no_responders(ctx, c, cmd);
    nd_epoch_exit(ctx);
    if (pc.payload != NULL)
        nd_payload_unref(pc.payload);
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
    if (m->last) {
        /* Auto-unsubscribe reached max_msgs: drop the sub if it is still the same one. */
        nd_sub_t *s = nd_sidmap_get(&c->subs, m->line + m->sid_off, m->sid_len);
        if (s != NULL && s == m->sub)
            nd_conn_remove_sub(ctx, c, s);
    }
}

void
nd_deliver_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    (void)ctx;
    nd_payload_unref(((nd_conn_msg_deliver_t *)msg)->payload);
}
