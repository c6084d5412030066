/* The server's internal publisher: see sysclient.h. */
#include "net/sysclient.h"

#include <string.h>

#include "net/conn_int.h"
#include "actors/epoch.h"
#include "subj/sublist.h"
#include "util/payload.h"

typedef struct sys_out {
    nd_conn_t *t; /* a reference */
    nd_msg_t *m;  /* a DELIVER message, or an IMSG for an internal client */
    int64_t charge; /* bytes added to t's pending (0 for an internal client) */
    uint64_t bytes; /* payload bytes delivered */
    bool route;     /* an RMSG for a route's plain interest (one per route) */
} sys_out_t;

typedef struct sys_pub {
    nd_proto_cmd_t cmd; /* the publish, as if a client had sent it (HPUB when it has headers) */
    nd_payload_t *pl;   /* headers and payload */
    nd_acct_t *acct;    /* where it is published */
    sys_out_t *outs;
    size_t n, cap;
} sys_pub_t;

static void
sys_out_add(sys_pub_t *p, nd_conn_t *t, nd_msg_t *m, int64_t charge, uint64_t bytes)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 8;
        p->outs = nd_xrealloc(p->outs, p->cap * sizeof(*p->outs));
    }
    /* The sub keeps t alive only until our section ends; the send comes after it. */
    nd_actor_ref(&t->base);
    p->outs[p->n++] = (sys_out_t){.t = t, .m = m, .charge = charge, .bytes = bytes};
}


/* Builds the delivery for sub. Returns: false when sub cannot take it. Ctx: in the section. */
static bool
sys_deliver(nd_ctx_t *ctx, sys_pub_t *p, nd_sub_t *sub)
{
    if (sub->conn == NULL || nd_sub_cancelled(sub))
        return false;
    nd_conn_t *t = (nd_conn_t *)sub->conn;
    if (sub->origin != ND_SUB_LOCAL) {
        /* Another server's interest: one RMSG/LMSG per route or leaf connection (a queue
         * group names its group). */
        for (size_t i = 0; sub->queue == NULL && i < p->n; i++)
            if (p->outs[i].t == t && p->outs[i].route)
                return true;
        nd_conn_msg_chunk_t *ch = nd_deliver_route_chunk(ctx, &p->cmd, p->acct, t,
                                                         sub->queue != NULL ? sub : NULL);
        sys_out_add(p, t, &ch->hdr, ch->len, ch->bytes);
        p->outs[p->n - 1].route = true;
        return true;
    }
    if (t->ic != NULL) {
        nd_conn_msg_imsg_t *im = nd_iclient_msg_new(ctx, t, NULL, p->acct, &p->cmd, p->pl, NULL);
        if (im == NULL)
            return false;
        (void)nd_sub_count_delivery(sub);
        sys_out_add(p, t, &im->hdr, 0, im->data_len);
        return true;
    }
    if (atomic_load_explicit(&t->slow, memory_order_relaxed))
        return false;
    uint64_t max = atomic_load_explicit(&sub->max_msgs, memory_order_relaxed);
    uint64_t cnt = nd_sub_count_delivery(sub);
    if (max != 0 && cnt > max)
        return false;
    if (t->proto != NULL) {
        nd_conn_msg_pmsg_t *pm = nd_deliver_pmsg_new(ctx, &p->cmd, &p->cmd, sub, p->pl);
        sys_out_add(p, t, &pm->hdr, nd_pmsg_charge(pm), pm->data_len);
        return true;
    }
    /* No headers for a client without header support. */
    bool hmsg = p->cmd.hdr_len > 0 && atomic_load_explicit(&t->headers, memory_order_relaxed);
    nd_conn_msg_deliver_t *m =
        nd_deliver_msg_new(ctx, &p->cmd, sub, hmsg, max != 0 && cnt == max, p->pl);
    sys_out_add(p, t, &m->hdr, (int64_t)m->line_len + m->pl_len, m->pl_len - 2);
    return true;
}

typedef struct sys_qtake {
    nd_ctx_t *ctx;
    sys_pub_t *p;
} sys_qtake_t;

/* nd_sl_result_qeach's callback: sys_deliver to a queue group member. */
static bool
sys_qmember_take(nd_sub_t *sub, void *arg)
{
    sys_qtake_t *q = arg;
    return sys_deliver(q->ctx, q->p, sub);
}

size_t
nd_sys_publish(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, size_t subj_len, const char *reply,
               size_t reply_len, const char *hdr, size_t hdr_len, const char *payload,
               size_t payload_len)
{
    size_t hlen = hdr != NULL ? hdr_len : 0;
    size_t total = hlen + payload_len;
    /* The payload buffer holds both parts together (nd_payload_new adds the CRLF). */
    char *buf = nd_xmalloc(total + 1);
    if (hlen > 0)
        memcpy(buf, hdr, hlen);
    if (payload_len > 0)
        memcpy(buf + hlen, payload, payload_len);
    sys_pub_t p = {.pl = nd_payload_new(buf, (uint32_t)total), .acct = acct};
    nd_free(buf);
    p.cmd.op = hlen > 0 ? ND_PROTO_OP_HPUB : ND_PROTO_OP_PUB;
    p.cmd.subject = (nd_proto_slice_t){.ptr = subj, .len = subj_len};
    if (reply != NULL)
        p.cmd.reply = (nd_proto_slice_t){.ptr = reply, .len = reply_len};
    p.cmd.payload = (nd_proto_slice_t){.ptr = p.pl->data, .len = total};
    p.cmd.hdr_len = (int64_t)hlen;

    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    nd_sl_match(ctx, nd_acct_sublist(acct), subj, subj_len, &r);
    for (uint32_t v = 0; v < r.npvecs; v++) {
        const nd_sl_vec_t *vec = r.pvecs[v];
        uint32_t n = nd_sl_vec_len(vec);
        for (uint32_t i = 0; i < n; i++) {
            nd_sub_t *sub = nd_sl_vec_get(vec, i);
            if (sub != NULL)
                sys_deliver(ctx, &p, sub);
        }
    }
    for (uint32_t g = 0; g < r.nqgroups; g++) {
        /* A random member; when it cannot take the message, each other one in turn. */
        nd_sub_t *sub = nd_sl_result_qpick(ctx, &r, g);
        if (sub != NULL && !sys_deliver(ctx, &p, sub))
            nd_sl_result_qeach(ctx, &r, g, sub, sys_qmember_take, &(sys_qtake_t){ctx, &p});
    }
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);

    uint64_t bytes = 0;
    for (size_t i = 0; i < p.n; i++) {
        nd_conn_t *t = p.outs[i].t;
        if (p.outs[i].charge > 0)
            atomic_fetch_add_explicit(&t->pending, p.outs[i].charge, memory_order_relaxed);
        bytes += p.outs[i].bytes;
        nd_actor_send(ctx, &t->base, p.outs[i].m);
        nd_actor_unref(ctx, &t->base);
    }
    nd_acct_count_in(acct, 1, total);
    if (p.n > 0)
        nd_acct_count_out(acct, p.n, bytes);
    size_t n = p.n;
    nd_free(p.outs);
    nd_payload_unref(p.pl);
    return n;
}
