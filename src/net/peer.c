/* Server peers (see peer_int.h): the interest bookkeeping that route, gateway and leaf
 * connections share. */
#include "net/peer_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "auth/auth.h"
#include "subj/account.h"
#include "util/log.h"

nd_acct_t *
nd_peer_acct(nd_ctx_t *ctx, nd_server_t *srv, nd_peer_accts_t *pa, const nd_proto_slice_t *name)
{
    for (size_t i = 0; i < pa->n; i++)
        if (pa->v[i]->name_len == name->len && memcmp(pa->v[i]->name, name->ptr, name->len) == 0)
            return pa->v[i];
    nd_auth_t *a = nd_auth_slot_get(srv->auth);
    nd_acct_t *acct = a != NULL ? nd_auth_find(a, name->ptr, name->len) : NULL;
    if (acct != NULL) {
        nd_actor_ref(&acct->actor);
        if (pa->n == pa->cap) {
            pa->cap = pa->cap ? pa->cap * 2 : 4;
            pa->v = nd_xrealloc(pa->v, pa->cap * sizeof(*pa->v));
        }
        pa->v[pa->n++] = acct;
    }
    nd_auth_unref(ctx, a);
    return acct;
}

void
nd_peer_accts_free(nd_ctx_t *ctx, nd_peer_accts_t *pa)
{
    for (size_t i = 0; i < pa->n; i++)
        nd_actor_unref(ctx, &pa->v[i]->actor);
    nd_free(pa->v);
    pa->v = NULL;
    pa->n = pa->cap = 0;
}

void
nd_peer_unsub_all(nd_ctx_t *ctx, nd_conn_t *c, const nd_peer_accts_t *pa)
{
    size_t n = 0;
    nd_sub_t **subs = nd_sidmap_take_all(&c->subs, &n);
    for (size_t a = 0; a < pa->n; a++) {
        size_t k = 0;
        nd_sub_t **mine = nd_xmalloc((n > 0 ? n : 1) * sizeof(*mine));
        for (size_t i = 0; i < n; i++)
            if (subs[i] != NULL && subs[i]->conn_data == pa->v[a]) {
                nd_sub_cancel(subs[i]);
                mine[k++] = subs[i];
                subs[i] = NULL;
            }
        if (k > 0)
            nd_acct_send_unsub_all(ctx, pa->v[a], mine, k); /* it owns mine */
        else
            nd_free(mine);
    }
    nd_free(subs);
}

/* Writes cmd's sid into out when it fits in cap. Returns: its length. */
static size_t
build_sid(char *out, size_t cap, const nd_proto_cmd_t *cmd, bool with_account)
{
    size_t n = (with_account ? cmd->account.len + 1 : 0) + cmd->subject.len +
               (cmd->queue.len > 0 ? cmd->queue.len + 1 : 0);
    if (n > cap)
        return n;
    char *p = out;
    if (with_account) {
        memcpy(p, cmd->account.ptr, cmd->account.len);
        p += cmd->account.len;
        *p++ = ' ';
    }
    memcpy(p, cmd->subject.ptr, cmd->subject.len);
    p += cmd->subject.len;
    if (cmd->queue.len > 0) {
        *p++ = ' ';
        memcpy(p, cmd->queue.ptr, cmd->queue.len);
    }
    return n;
}

void
nd_peer_sid_init(nd_peer_sid_t *sid, const nd_proto_cmd_t *cmd, bool with_account)
{
    sid->p = sid->small;
    sid->n = build_sid(sid->small, sizeof sid->small, cmd, with_account);
    if (sid->n > sizeof sid->small) {
        sid->p = nd_xmalloc(sid->n);
        build_sid(sid->p, sid->n, cmd, with_account);
    }
}

void
nd_peer_sid_fini(nd_peer_sid_t *sid)
{
    if (sid->p != sid->small)
        nd_free(sid->p);
    sid->p = NULL;
}

uint16_t
nd_peer_qweight(const nd_proto_cmd_t *cmd)
{
    return cmd->max_msgs > 0xffff ? 0xffff : cmd->max_msgs < 1 ? 1 : (uint16_t)cmd->max_msgs;
}

nd_sub_t *
nd_peer_sub_add(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd,
                const nd_peer_sid_t *sid, uint8_t origin, uint16_t weight, void *conn_data)
{
    nd_sub_t *sub = nd_sub_new(ctx, &c->base, cmd->subject.ptr, cmd->subject.len, cmd->queue.ptr,
                               cmd->queue.len, sid->p, sid->n);
    sub->origin = origin;
    atomic_store_explicit(&sub->qweight, weight, memory_order_relaxed);
    sub->conn_data = conn_data;
    nd_sidmap_put(&c->subs, sub);
    /* Acknowledged: a message that follows waits for it (the peer's handler pauses), so a reply
     * to a request the peer sends right after its interest finds that interest. */
    c->sub_acks_due++;
    nd_acct_send_sub(ctx, acct, sub, &c->base, ND_CONN_MSG_SUB_ACK);
    return sub;
}

bool
nd_peer_sub_del(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const char *sid, size_t n)
{
    nd_sub_t *sub = nd_sidmap_del(&c->subs, sid, n);
    if (sub == NULL)
        return false;
    nd_sub_cancel(sub);
    nd_acct_send_unsub(ctx, acct != NULL ? acct : (nd_acct_t *)sub->conn_data, sub);
    return true;
}

size_t
nd_peer_interest_room(const nd_acct_t *acct, size_t slen, size_t qlen)
{
    return 4 + acct->name_len + 1 + slen + 1 + qlen + 12 + 2;
}

size_t
nd_peer_format_interest(char *out, const nd_acct_t *acct, const char *subj, size_t slen,
                        const char *queue, size_t qlen, uint32_t weight)
{
    char *p = out;
    memcpy(p, weight > 0 ? "RS+ " : "RS- ", 4);
    p += 4;
    memcpy(p, acct->name, acct->name_len);
    p += acct->name_len;
    *p++ = ' ';
    memcpy(p, subj, slen);
    p += slen;
    if (queue != NULL) {
        *p++ = ' ';
        memcpy(p, queue, qlen);
        p += qlen;
        if (weight > 0)
            p += sprintf(p, " %u", weight);
    }
    memcpy(p, "\r\n", 2);
    return (size_t)(p + 2 - out);
}

void
nd_peer_dump_all(nd_ctx_t *ctx, nd_conn_t *c,
                 void (*send_dump)(nd_ctx_t *, nd_acct_t *, nd_interest_fn, void *),
                 nd_interest_fn fn)
{
    nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
    for (size_t i = 0; a != NULL && i < a->naccts; i++) {
        if (a->accts[i].acct == NULL)
            continue;
        nd_peer_dump_t *d = nd_new(nd_peer_dump_t);
        d->c = c;
        nd_actor_ref(&c->base);
        send_dump(ctx, a->accts[i].acct, fn, d);
    }
    nd_auth_unref(ctx, a);
}

void
nd_peer_dump_add(nd_peer_dump_t *d, const nd_acct_t *acct, const char *subj, size_t slen,
                 const char *queue, size_t qlen, uint32_t weight)
{
    size_t room = nd_peer_interest_room(acct, slen, qlen);
    if (d->len + room > d->cap) {
        d->cap = nd_grow_cap(d->cap, d->len + room, 4096);
        d->buf = nd_xrealloc(d->buf, d->cap);
    }
    d->len += nd_peer_format_interest(d->buf + d->len, acct, subj, slen, queue, qlen, weight);
}

void
nd_peer_dump_free(nd_ctx_t *ctx, nd_peer_dump_t *d)
{
    nd_actor_unref(ctx, &d->c->base);
    nd_free(d->buf);
    nd_free(d);
}

char *
nd_peer_info_line(json_t *o, size_t *len)
{
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    size_t n = strlen(js);
    char *line = nd_xmalloc(n + 8);
    memcpy(line, "INFO ", 5);
    memcpy(line + 5, js, n);
    memcpy(line + 5 + n, "\r\n", 3);
    free(js); /* jansson's allocation */
    *len = n + 7;
    return line;
}

void
nd_peer_trace(const nd_conn_t *c, const char *tag, const nd_proto_cmd_t *cmd)
{
#define PFMT  "%s:%d - %s:%llu - <<- "
#define PARGS c->ip, c->port, tag, (unsigned long long)c->cid
    const char *op = nd_proto_op_name(cmd->op);
    switch (cmd->op) {
    case ND_PROTO_OP_RSUB:
    case ND_PROTO_OP_RUNSUB:
        nd_log(ND_LOG_TRACE, PFMT "[%s %.*s %.*s%s%.*s]", PARGS, op, (int)cmd->account.len,
               cmd->account.ptr, (int)cmd->subject.len, cmd->subject.ptr, cmd->queue.len ? " " : "",
               (int)cmd->queue.len, cmd->queue.ptr);
        break;
    case ND_PROTO_OP_RMSG:
    case ND_PROTO_OP_RHMSG:
        nd_log(ND_LOG_TRACE, PFMT "[%s %.*s %.*s%s%.*s %zu]", PARGS, op, (int)cmd->account.len,
               cmd->account.ptr, (int)cmd->subject.len, cmd->subject.ptr, cmd->reply.len ? " " : "",
               (int)cmd->reply.len, cmd->reply.ptr, cmd->payload.len);
        break;
    case ND_PROTO_OP_ASUB:
    case ND_PROTO_OP_AUNSUB:
        nd_log(ND_LOG_TRACE, PFMT "[%s %.*s]", PARGS, op, (int)cmd->account.len, cmd->account.ptr);
        break;
    case ND_PROTO_OP_CONNECT:
    case ND_PROTO_OP_INFO:
    case ND_PROTO_OP_ERR:
        nd_log(ND_LOG_TRACE, PFMT "[%s %.*s]", PARGS, op, (int)cmd->arg.len, cmd->arg.ptr);
        break;
    default:
        nd_log(ND_LOG_TRACE, PFMT "[%s]", PARGS, op);
        break;
    }
#undef PFMT
#undef PARGS
}
