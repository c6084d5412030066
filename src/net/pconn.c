/* Protocol connections (see pconn.h): the connection actor's side. conn.c calls in here where a
 * NATS client would meet its parser, its INFO or its MSG lines; everything else (I/O, buffers,
 * slow consumers, the registry, the account's sublist) is the ordinary connection's. */
#include "net/pconn.h"

#include <string.h>
#include <time.h>

#include "net/conn_int.h"
#include "subj/account.h"
#include "subj/subject.h"
#include "util/log.h"

void
nd_pconn_on_start(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_server_t *s = c->srv;
    int32_t conns = atomic_fetch_add_explicit(&s->nconns, 1, memory_order_relaxed) + 1;
    c->counted = true;
    nd_connreg_add(s->connreg, &c->mon);
    nd_conn_auth_begin(ctx, c); /* its default timeout reads c->tls */
    if (c->tls != NULL && c->ws == NULL)
        nd_conn_tls_begin_ws(ctx, c); /* the handshake first, no INFO (conn_tls.c) */
    if (conns > nd_server_live_get(s, max_connections)) {
        nd_log_error("%s:%d - %s:%llu - maximum connections exceeded", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_close(ctx, c, ND_CLOSE_MAX_CONNECTIONS);
        return;
    }
    if (c->proto->start != NULL)
        c->proto->start(ctx, c);
}

size_t
nd_pconn_input(nd_ctx_t *ctx, nd_conn_t *c, const char *buf, size_t len)
{
    c->pneed = 0;
    return c->proto->input(ctx, c, buf, len, &c->pneed);
}

/* One delivery to the protocol: names is the subject, reply and sid block a PMSG or a record
 * carries (deliver.c's put_pmsg_names), body its headers then data. The caller flushes what the
 * protocol published (a retained copy, an ack). */
static void
deliver_one(nd_ctx_t *ctx, nd_conn_t *c, const char *names, uint32_t subject_len,
            uint32_t reply_len, uint32_t sid_len, const char *body, uint32_t hdr_len,
            uint32_t data_len)
{
    const char *reply = names + subject_len + 1;
    nd_pconn_msg_t v = {
        .subject = names,
        .subject_len = subject_len,
        .reply = reply,
        .reply_len = reply_len,
        .sid = reply + reply_len + 1,
        .sid_len = sid_len,
        .hdr = hdr_len > 0 ? body : NULL,
        .hdr_len = hdr_len,
        .data = body + hdr_len,
        .data_len = data_len,
    };
    c->out_msgs++;
    c->out_bytes += data_len;
    c->proto->deliver(ctx, c, &v);
}

void
nd_pconn_on_msg(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_pmsg_t *m)
{
    /* The publisher counted the message in our pending bytes; what the protocol writes for it
     * is counted again by nd_conn_write. */
    atomic_fetch_sub_explicit(&c->pending, nd_pmsg_charge(m), memory_order_relaxed);
    if (!c->closing && c->proto->deliver != NULL) {
        deliver_one(ctx, c, m->str, m->subject_len, m->reply_len, m->sid_len, m->payload->data,
                    m->hdr_len, m->data_len);
        nd_deliver_flush(ctx, c);
    }
    nd_payload_unref(m->payload);
}

void
nd_pconn_on_chunk(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_chunk_t *ch)
{
    /* As nd_pconn_on_msg: the publisher charged the records' bytes. */
    atomic_fetch_sub_explicit(&c->pending, (int64_t)ch->len, memory_order_relaxed);
    for (uint32_t off = 0; off < ch->len && !c->closing && c->proto->deliver != NULL;) {
        nd_pmsg_rec_t r;
        memcpy(&r, ch->buf + off, sizeof(r));
        const char *names = ch->buf + off + sizeof(r);
        deliver_one(ctx, c, names, r.subject_len, r.reply_len, r.sid_len,
                    names + r.subject_len + r.reply_len + r.sid_len + 3, r.hdr_len, r.data_len);
        off += r.size;
    }
    nd_deliver_flush(ctx, c);
    nd_free(ch->buf);
}

void
nd_pconn_register_ws(nd_server_t *srv, const nd_pconn_proto_t *proto, void *arg)
{
    srv->ws_mqtt_proto = proto;
    srv->ws_mqtt_arg = arg;
}

bool
nd_pconn_websocket(const nd_conn_t *c)
{
    return c->ws != NULL;
}

const char *
nd_pconn_log_tag(const nd_conn_t *c)
{
    return nd_conn_log_tag(c);
}

void *
nd_pconn_arg(const nd_conn_t *c)
{
    return c->parg;
}

void *
nd_pconn_state(const nd_conn_t *c)
{
    return c->pstate;
}

void
nd_pconn_set_state(nd_conn_t *c, void *state)
{
    c->pstate = state;
}

uint64_t
nd_pconn_cid(const nd_conn_t *c)
{
    return c->cid;
}

nd_server_t *
nd_pconn_server(const nd_conn_t *c)
{
    return c->srv;
}

nd_acct_t *
nd_pconn_account(const nd_conn_t *c)
{
    return c->acct;
}

const char *
nd_pconn_ip(const nd_conn_t *c)
{
    return nd_conn_lhost(c);
}

int
nd_pconn_port(const nd_conn_t *c)
{
    return c->port;
}

bool
nd_pconn_closing(const nd_conn_t *c)
{
    return c->closing;
}

nd_actor_t *
nd_pconn_actor(nd_conn_t *c)
{
    return &c->base;
}

void
nd_pconn_write(nd_conn_t *c, const void *p, size_t n)
{
    if (!c->closing)
        nd_conn_write(c, p, n);
}

char *
nd_pconn_reserve(nd_conn_t *c, size_t n)
{
    return nd_conn_reserve(c, n);
}

void
nd_pconn_commit(nd_conn_t *c, size_t k)
{
    nd_conn_commit(c, k);
}

void
nd_pconn_close(nd_ctx_t *ctx, nd_conn_t *c, nd_close_reason_t reason)
{
    nd_conn_close(ctx, c, reason);
}

void
nd_pconn_pause(nd_conn_t *c)
{
    c->paused = true;
}

void
nd_pconn_resume(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (!c->paused || c->closing)
        return;
    c->paused = false;
    /* As conn.c's resume: what the pause left unconsumed, then the read that was owed. */
    if (c->rlen > 0) {
        size_t off = nd_pconn_input(ctx, c, c->rbuf, c->rlen);
        nd_deliver_flush(ctx, c);
        if (c->closing)
            return;
        size_t left = c->rlen - off;
        memmove(c->rbuf, c->rbuf + off, left);
        c->rlen = left;
        if (left == 0) {
            nd_free(c->rbuf);
            c->rbuf = NULL;
            c->rcap = 0;
        }
    }
    if (!c->paused && !c->stalled && c->read_blocked) {
        c->read_blocked = false;
        nd_io_again(ctx, &c->io, ND_IO_READ);
    }
}

bool
nd_pconn_login(nd_ctx_t *ctx, nd_conn_t *c, const char *user, const char *pass,
               const nd_pconn_auth_t *override, const char *name)
{
    /* No RTT estimate: nats-server shows 0s for MQTT connections. */
    const char *ou = NULL, *op = NULL, *ot = NULL, *na = NULL;
    if (override != NULL && (override->user != NULL || override->token != NULL)) {
        ou = override->user;
        op = override->pass;
        ot = override->token;
    }
    if (override != NULL && override->no_auth_user != NULL && override->no_auth_user[0])
        na = override->no_auth_user;
    if (!nd_conn_auth_login(ctx, c, user, pass, ou, op, ot, na))
        return false;
    if (c->closing)
        return false;
    nd_connreg_set_mqtt(c->srv->connreg, &c->mon, name);
    nd_connreg_touch(&c->mon);
    c->connected = true;
    nd_conn_client_event(ctx, c, true);
    return true;
}

void
nd_pconn_on_call(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_pcall_t *m)
{
    if (c->closing || c->proto->call == NULL) {
        if (m->drop != NULL)
            m->drop(m->data);
        return;
    }
    c->proto->call(ctx, c, m->what, m->data);
    nd_deliver_flush(ctx, c);
}

void
nd_pconn_send_call(nd_ctx_t *ctx, nd_actor_t *conn, uint32_t what, void *data,
                   void (*drop)(void *data))
{
    nd_conn_msg_pcall_t *m = ND_MSG_NEW(ctx, nd_conn_msg_pcall_t, ND_CONN_MSG_PCALL);
    m->what = what;
    m->data = data;
    m->drop = drop;
    nd_actor_send(ctx, conn, &m->hdr);
}

static int
subscribe(nd_ctx_t *ctx, nd_conn_t *c, const char *subject, size_t len, const char *sid,
          size_t sid_len, bool check)
{
    if (!nd_subj_valid_sub(subject, len))
        return -1;
    if (check && c->perms.perms != NULL) {
        if (!nd_perms_conn_sub(&c->perms, subject, len, NULL, 0)) {
            nd_log_error("%s:%d - %s:%llu - Subscription Violation - User \"%s\", Subject "
                         "\"%.*s\"",
                         nd_conn_lhost(c), c->port, nd_conn_log_tag(c), (unsigned long long)c->cid,
                         c->cr_user ? c->cr_user : "", (int)len, subject);
            return 0;
        }
        if (c->perms.deny_filter)
            atomic_store_explicit(&c->rdeny, true, memory_order_relaxed);
    }
    if (nd_sidmap_get(&c->subs, sid, sid_len) != NULL)
        return 2;
    nd_sub_t *sub = nd_sub_new(ctx, &c->base, subject, len, NULL, 0, sid, sid_len);
    nd_sidmap_put(&c->subs, sub);
    c->sub_acks_due++;
    nd_acct_send_sub(ctx, c->acct, sub, &c->base, ND_CONN_MSG_SUB_ACK);
    return 1;
}

int
nd_pconn_subscribe(nd_ctx_t *ctx, nd_conn_t *c, const char *subject, size_t len, const char *sid,
                   size_t sid_len)
{
    return subscribe(ctx, c, subject, len, sid, sid_len, true);
}

int
nd_pconn_subscribe_internal(nd_ctx_t *ctx, nd_conn_t *c, const char *subject, size_t len,
                            const char *sid, size_t sid_len)
{
    return subscribe(ctx, c, subject, len, sid, sid_len, false);
}

bool
nd_pconn_unsubscribe(nd_ctx_t *ctx, nd_conn_t *c, const char *sid, size_t sid_len)
{
    nd_sub_t *sub = nd_sidmap_get(&c->subs, sid, sid_len);
    if (sub == NULL)
        return false;
    nd_conn_remove_sub(ctx, c, sub);
    return true;
}

uint32_t
nd_pconn_subs_due(const nd_conn_t *c)
{
    return c->sub_acks_due;
}

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

bool
nd_pconn_publish(nd_ctx_t *ctx, nd_conn_t *c, const char *subject, size_t len, const char *reply,
                 size_t reply_len, const char *hdr, size_t hdr_len, const char *data,
                 size_t data_len)
{
    if (c->perms.perms != NULL && !nd_perms_conn_pub(&c->perms, subject, len, now_ns())) {
        nd_log_error("%s:%d - %s:%llu - Publish Violation - User \"%s\", Subject \"%.*s\"",
                     nd_conn_lhost(c), c->port, nd_conn_log_tag(c), (unsigned long long)c->cid,
                     c->cr_user ? c->cr_user : "", (int)len, subject);
        return false;
    }
    /* The publish path reads headers and payload as one block. */
    char stack[1024];
    size_t hl = hdr != NULL ? hdr_len : 0;
    size_t total = hl + data_len;
    char *buf = total <= sizeof stack ? stack : nd_xmalloc(total);
    if (hl > 0)
        memcpy(buf, hdr, hl);
    if (data_len > 0)
        memcpy(buf + hl, data, data_len);
    nd_proto_cmd_t cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.op = hl > 0 ? ND_PROTO_OP_HPUB : ND_PROTO_OP_PUB;
    cmd.subject.ptr = subject;
    cmd.subject.len = len;
    cmd.reply.ptr = reply;
    cmd.reply.len = reply != NULL ? reply_len : 0;
    cmd.payload.ptr = buf;
    cmd.payload.len = total;
    cmd.hdr_len = (int64_t)hl;
    cmd.max_msgs = -1;
    c->in_msgs++;
    c->in_bytes += data_len;
    nd_deliver_publish(ctx, c, &cmd);
    if (buf != stack)
        nd_free(buf);
    return true;
}

void
nd_pconn_flush(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_deliver_flush(ctx, c);
}

void
nd_pconn_timer_start(nd_ctx_t *ctx, nd_conn_t *c, int64_t delay_ms)
{
    nd_timer_start(ctx, &c->ptimer, (uint64_t)delay_ms * 1000000ull, 0);
}

void
nd_pconn_timer_cancel(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_timer_cancel(ctx, &c->ptimer);
}
