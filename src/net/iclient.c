/* Internal clients: see iclient.h. The internal client is a connection actor (conn.c) whose
 * `ic` points here; deliver.c and sysclient.c hand it IMSG messages instead of MSG text, and
 * its dispatch calls the service's handler. */
#include "net/iclient.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "actors/timer.h"
#include "auth/acct_route.h"
#include "subj/subject.h"
#include "net/conn_int.h"
#include "net/sidmap.h"
#include "util/log.h"

/* Lives in the connection's own memory (nd_conn_spawn_internal), so it is valid as long as the
 * connection is. */
struct nd_iclient {
    /* immutable after start */
    nd_conn_t *c; /* the connection actor */
    nd_acct_t *acct;
    nd_iclient_fn fn;
    const nd_iclient_hooks_t *hooks; /* NULL for nd_iclient_start's services */
    void *arg;
    uint32_t limit;
    char name[32];
    /* own turn */
    nd_timer_t timer;
    /* any thread, atomic */
    _Atomic uint32_t queued;     /* IMSGs in the mailbox */
    _Atomic uint64_t overloaded; /* refused because queued reached limit */
    /* start-up: nd_iclient_start waits until every subscription is in place */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready;
};

/* Spawns the connection and sends it its subscriptions. Returns: the client, with the
 * caller's reference on its connection. */
static nd_iclient_t *
spawn(nd_ctx_t *ctx, nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind, const char *name,
      const char *const *subjects, size_t n, uint32_t queue_limit, nd_iclient_fn fn,
      const nd_iclient_hooks_t *hooks, void *arg, nd_iclient_t **out)
{
    nd_conn_t *c = nd_conn_spawn_internal(ctx, srv, acct, kind, sizeof(nd_iclient_t));
    nd_iclient_t *ic = c->ic;
    ic->c = c;
    ic->acct = acct;
    ic->fn = fn;
    ic->hooks = hooks;
    ic->arg = arg;
    ic->limit = queue_limit > 0 ? queue_limit : ND_ICLIENT_QUEUE_LIMIT;
    snprintf(ic->name, sizeof ic->name, "%s", name);
    atomic_init(&ic->queued, 0);
    atomic_init(&ic->overloaded, 0);
    nd_timer_init(&ic->timer, &c->base, ND_CONN_MSG_ITIMER);
    pthread_mutex_init(&ic->mu, NULL);
    pthread_cond_init(&ic->cv, NULL);

    nd_conn_msg_istart_t *m = ND_MSG_NEW(ctx, nd_conn_msg_istart_t, ND_CONN_MSG_ISTART);
    m->n = n;
    m->subjects = nd_xcalloc(n > 0 ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        m->subjects[i] = nd_xstrdup(subjects[i]);
    if (out != NULL)
        *out = ic; /* before the client can run: its hooks may read it */
    nd_actor_send(ctx, &c->base, &m->hdr);
    return ic;
}

nd_iclient_t *
nd_iclient_spawn(nd_ctx_t *ctx, nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind,
                 const char *name, const char *const *subjects, size_t n, uint32_t queue_limit,
                 const nd_iclient_hooks_t *hooks, void *arg, nd_iclient_t **out)
{
    nd_iclient_t *ic = spawn(ctx, srv, acct, kind, name, subjects, n, queue_limit, hooks->on_msg,
                             hooks, arg, out);
    nd_actor_unref(ctx, &ic->c->base); /* its life keeps it until it closes */
    return ic;
}

nd_iclient_t *
nd_iclient_start(nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind, const char *name,
                 const char *const *subjects, size_t n, uint32_t queue_limit, nd_iclient_fn fn,
                 void *arg)
{
    nd_ctx_t *ctx = nd_ctx_external_new(srv->pool);
    nd_iclient_t *ic =
        spawn(ctx, srv, acct, kind, name, subjects, n, queue_limit, fn, NULL, arg, NULL);
    nd_conn_t *c = ic->c;

    pthread_mutex_lock(&ic->mu);
    while (!ic->ready)
        pthread_cond_wait(&ic->cv, &ic->mu);
    pthread_mutex_unlock(&ic->mu);
    /* From now on the actor's life keeps it (until the pool's shutdown closes it). */
    nd_actor_unref(ctx, &c->base);
    nd_ctx_external_free(ctx);
    nd_log_debug("Internal client %s ready with %zu subscriptions", ic->name, n);
    return ic;
}

nd_acct_t *
nd_iclient_account(const nd_iclient_t *ic)
{
    return ic->acct;
}

uint64_t
nd_iclient_overloaded(const nd_iclient_t *ic)
{
    return atomic_load_explicit(&ic->overloaded, memory_order_relaxed);
}

nd_server_t *
nd_iclient_server(const nd_iclient_t *ic)
{
    return ic->c->srv;
}

void
nd_iclient_ref(nd_iclient_t *ic)
{
    nd_actor_ref(&ic->c->base);
}

void
nd_iclient_unref(nd_ctx_t *ctx, nd_iclient_t *ic)
{
    nd_actor_unref(ctx, &ic->c->base);
}

void
nd_iclient_fini(nd_ctx_t *ctx, nd_conn_t *c)
{
    /* nd_iclient_start returned long ago (it waits for ready before anything can close us). */
    nd_iclient_t *ic = c->ic;
    nd_timer_cancel(ctx, &ic->timer);
    if (ic->hooks != NULL && ic->hooks->on_close != NULL)
        ic->hooks->on_close(ctx, ic, ic->arg);
    pthread_mutex_destroy(&ic->mu);
    pthread_cond_destroy(&ic->cv);
}

void
nd_iclient_ready(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_iclient_t *ic = c->ic;
    if (ic->hooks != NULL) {
        if (ic->hooks->on_ready != NULL)
            ic->hooks->on_ready(ctx, ic, ic->arg);
        nd_deliver_flush(ctx, c);
        return;
    }
    pthread_mutex_lock(&ic->mu);
    ic->ready = true;
    pthread_cond_signal(&ic->cv);
    pthread_mutex_unlock(&ic->mu);
}

static void
add_sub(nd_ctx_t *ctx, nd_conn_t *c, const char *subject)
{
    size_t len = strlen(subject);
    if (nd_sidmap_get(&c->subs, subject, len) != NULL)
        return;
    /* The subject is the sid: nothing formats MSG text for an internal client. */
    nd_sub_t *sub = nd_sub_new(ctx, &c->base, subject, len, NULL, 0, subject, len);
    nd_sidmap_put(&c->subs, sub);
    c->sub_acks_due++;
    nd_acct_send_sub(ctx, c->acct, sub, &c->base, ND_CONN_MSG_SUB_ACK);
}

void
nd_iclient_subscribe(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject)
{
    if (!ic->c->closing)
        add_sub(ctx, ic->c, subject);
}

void
nd_iclient_unsubscribe(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject)
{
    nd_sub_t *sub = nd_sidmap_get(&ic->c->subs, subject, strlen(subject));
    if (sub != NULL)
        nd_conn_remove_sub(ctx, ic->c, sub);
}

void
nd_iclient_stop(nd_ctx_t *ctx, nd_iclient_t *ic)
{
    nd_conn_close(ctx, ic->c, ND_CLOSE_SHUTDOWN);
}

void
nd_iclient_timer(nd_ctx_t *ctx, nd_iclient_t *ic, uint64_t delay_ns)
{
    if (!ic->c->closing)
        nd_timer_start(ctx, &ic->timer, delay_ns, 0);
}

void
nd_iclient_on_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *m)
{
    nd_iclient_t *ic = c->ic;
    if (!nd_timer_fired(&ic->timer, m) || c->closing)
        return;
    if (ic->hooks != NULL && ic->hooks->on_timer != NULL)
        ic->hooks->on_timer(ctx, ic, ic->arg);
    nd_deliver_flush(ctx, c);
}

void
nd_iclient_call(nd_ctx_t *ctx, nd_iclient_t *ic, nd_iclient_call_fn fn, void *data,
                void (*drop)(void *data))
{
    nd_conn_msg_icall_t *m = ND_MSG_NEW(ctx, nd_conn_msg_icall_t, ND_CONN_MSG_ICALL);
    m->fn = fn;
    m->drop = drop;
    m->data = data;
    nd_actor_send(ctx, &ic->c->base, &m->hdr);
}

void
nd_iclient_on_call(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_icall_t *m)
{
    if (c->closing) {
        if (m->drop != NULL)
            m->drop(m->data);
        return;
    }
    m->fn(ctx, c->ic, c->ic->arg, m->data);
    nd_deliver_flush(ctx, c);
}

void
nd_iclient_turn_end(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_iclient_t *ic = c->ic;
    if (ic->hooks != NULL && ic->hooks->on_turn_end != NULL) {
        ic->hooks->on_turn_end(ctx, ic, ic->arg);
        nd_deliver_flush(ctx, c);
    }
}

void
nd_iclient_on_start(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_istart_t *m)
{
    for (size_t i = 0; i < m->n; i++) {
        add_sub(ctx, c, m->subjects[i]);
        nd_free(m->subjects[i]);
    }
    nd_free(m->subjects);
    if (c->sub_acks_due == 0)
        nd_iclient_ready(ctx, c);
}

/* Takes a slot in t's mailbox bound. Returns: false (counted as overloaded) when it is full. */
static bool
admit(nd_iclient_t *ic)
{
    /* relaxed: a bound, not a synchronisation; the receiver decrements after handling. */
    if (atomic_fetch_add_explicit(&ic->queued, 1, memory_order_relaxed) >= ic->limit) {
        atomic_fetch_sub_explicit(&ic->queued, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ic->overloaded, 1, memory_order_relaxed);
        return false;
    }
    return true;
}

/* One IMSG holding the strings s[0..8) (subject, reply, user, name, lang, version, ip, import
 * subject; l[0..2) given, the rest measured) and a reference on payload and from_acct. */
static nd_conn_msg_imsg_t *
imsg_new(nd_ctx_t *ctx, const char *const s[8], const size_t lens[2], nd_payload_t *payload,
         nd_acct_t *from_acct)
{
    size_t l[8] = {lens[0], lens[1]};
    size_t total = 0;
    for (int i = 0; i < 8; i++) {
        if (i >= 2)
            l[i] = s[i] != NULL ? strnlen(s[i], 1024) : 0;
        total += l[i] + 1;
    }
    nd_conn_msg_imsg_t *m =
        (nd_conn_msg_imsg_t *)nd_msg_new(ctx, sizeof(*m) + total, ND_CONN_MSG_IMSG);
    char *p = m->str;
    for (int i = 0; i < 8; i++) {
        if (l[i] > 0)
            memcpy(p, s[i], l[i]);
        p[l[i]] = '\0';
        p += l[i] + 1;
        m->len[i] = (uint32_t)l[i];
    }
    nd_payload_ref(payload);
    m->payload = payload;
    nd_actor_ref(&from_acct->actor);
    m->acct = from_acct;
    m->tag = 0;
    return m;
}

nd_conn_msg_imsg_t *
nd_iclient_msg_new(nd_ctx_t *ctx, nd_conn_t *t, const nd_conn_t *c, nd_acct_t *from_acct,
                   const nd_proto_cmd_t *cmd, nd_payload_t *payload, const char *via)
{
    if (!admit(t->ic))
        return NULL;
    const nd_mon_meta_t *meta = c != NULL ? c->mon.meta : NULL;
    const char *s[8] = {cmd->subject.ptr,
                        cmd->reply.ptr,
                        meta != NULL ? meta->user : NULL,
                        c != NULL ? c->name : NULL,
                        c != NULL ? c->lang : NULL,
                        c != NULL ? c->version : NULL,
                        c != NULL ? c->ip : NULL,
                        via};
    size_t l[2] = {cmd->subject.len, cmd->reply.len};
    nd_conn_msg_imsg_t *m = imsg_new(ctx, s, l, payload, from_acct);
    m->cid = c != NULL ? c->cid : 0;
    m->kind = (uint8_t)(c != NULL ? c->kind : ND_CONN_SYSTEM);
    bool hdrs = cmd->op == ND_PROTO_OP_HPUB && cmd->hdr_len > 0;
    m->hdr_len = hdrs ? (uint32_t)cmd->hdr_len : 0;
    m->data_len = (uint32_t)cmd->payload.len - (uint32_t)(hdrs ? cmd->hdr_len : 0);
    return m;
}

bool
nd_iclient_forward(nd_ctx_t *ctx, nd_iclient_t *to, const nd_imsg_t *im, uint32_t tag)
{
    if (nd_actor_closed(&to->c->base) || !admit(to))
        return false;
    const nd_sender_t *f = im->from;
    const char *s[8] = {im->subject, im->reply, f->user,    f->name,
                        f->lang,     f->version, f->ip, f->imported ? f->import : NULL};
    size_t l[2] = {im->subject_len, im->reply_len};
    size_t hl = im->hdr != NULL ? im->hdr_len : 0;
    nd_payload_t *pl = nd_xmalloc(sizeof(*pl) + hl + im->data_len + 2);
    atomic_init(&pl->refs, 1);
    pl->len = (uint32_t)(hl + im->data_len);
    if (hl > 0)
        memcpy(pl->data, im->hdr, hl);
    if (im->data_len > 0)
        memcpy(pl->data + hl, im->data, im->data_len);
    memcpy(pl->data + pl->len, "\r\n", 2);
    nd_conn_msg_imsg_t *m = imsg_new(ctx, s, l, pl, f->acct);
    nd_payload_unref(pl); /* the message holds it */
    m->cid = f->cid;
    m->kind = (uint8_t)f->kind;
    m->hdr_len = (uint32_t)hl;
    m->data_len = (uint32_t)im->data_len;
    m->tag = tag;
    nd_actor_send(ctx, &to->c->base, &m->hdr);
    return true;
}

static void
imsg_release(nd_ctx_t *ctx, nd_conn_msg_imsg_t *m)
{
    nd_payload_unref(m->payload);
    nd_actor_unref(ctx, &m->acct->actor);
}

void
nd_iclient_receive(nd_ctx_t *ctx, nd_conn_t *c, nd_conn_msg_imsg_t *m)
{
    nd_iclient_t *ic = c->ic;
    atomic_fetch_sub_explicit(&ic->queued, 1, memory_order_relaxed);
    if (!c->closing) {
        const char *str[8];
        const char *p = m->str;
        for (int i = 0; i < 8; i++) {
            str[i] = p;
            p += m->len[i] + 1;
        }
        nd_sender_t from = {.acct = m->acct,
                            .cid = m->cid,
                            .kind = (nd_conn_kind_t)m->kind,
                            .user = str[2],
                            .name = str[3],
                            .lang = str[4],
                            .version = str[5],
                            .ip = str[6],
                            .imported = m->len[7] > 0,
                            .import = str[7]};
        nd_imsg_t im = {.subject = str[0],
                        .subject_len = m->len[0],
                        .reply = str[1],
                        .reply_len = m->len[1],
                        .hdr = m->hdr_len > 0 ? m->payload->data : NULL,
                        .hdr_len = m->hdr_len,
                        .data = m->payload->data + m->hdr_len,
                        .data_len = m->data_len,
                        .from = &from,
                        .tag = m->tag};
        ic->fn(ctx, ic, &im, ic->arg);
        nd_deliver_flush(ctx, c); /* what the handler published */
    }
    imsg_release(ctx, m);
}

void
nd_iclient_discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    if (msg->id == ND_CONN_MSG_IMSG) {
        imsg_release(ctx, (nd_conn_msg_imsg_t *)msg);
    } else if (msg->id == ND_CONN_MSG_ICALL) {
        nd_conn_msg_icall_t *m = (nd_conn_msg_icall_t *)msg;
        if (m->drop != NULL)
            m->drop(m->data);
    } else if (msg->id == ND_CONN_MSG_ISTART) {
        nd_conn_msg_istart_t *m = (nd_conn_msg_istart_t *)msg;
        for (size_t i = 0; i < m->n; i++)
            nd_free(m->subjects[i]);
        nd_free(m->subjects);
    }
}

uint32_t
nd_iclient_deliver(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject, const char *shown,
                   size_t shown_len, const char *reply, const char *hdr, size_t hdr_len,
                   const char *data, size_t data_len)
{
    size_t hlen = hdr != NULL ? hdr_len : 0;
    /* The publish path reads the payload as a client's: headers then data, in one buffer (on
     * the stack when small: a consumer delivers one message per call). */
    char small[2048];
    size_t need = hlen + data_len + 2;
    char *buf = need <= sizeof small ? small : nd_xmalloc(need);
    if (hlen > 0)
        memcpy(buf, hdr, hlen);
    if (data_len > 0)
        memcpy(buf + hlen, data, data_len);
    memcpy(buf + hlen + data_len, "\r\n", 2);
    nd_proto_cmd_t cmd = {.op = hlen > 0 ? ND_PROTO_OP_HPUB : ND_PROTO_OP_PUB};
    cmd.subject.ptr = subject;
    cmd.subject.len = strlen(subject);
    cmd.reply.ptr = reply != NULL ? reply : "";
    cmd.reply.len = reply != NULL ? strlen(reply) : 0;
    cmd.hdr_len = (int64_t)hlen;
    cmd.payload.ptr = buf;
    cmd.payload.len = hlen + data_len;
    uint32_t n = nd_deliver_publish_as(ctx, ic->c, &cmd, shown, shown_len);
    if (buf != small)
        nd_free(buf);
    return n;
}

void
nd_iclient_publish(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject, const char *reply,
                   const char *hdr, size_t hdr_len, const char *data, size_t data_len)
{
    (void)nd_iclient_deliver(ctx, ic, subject, NULL, 0, reply, hdr, hdr_len, data, data_len);
}

bool
nd_iclient_has_interest(nd_ctx_t *ctx, nd_iclient_t *ic, const char *subject)
{
    return nd_deliver_has_interest(ctx, ic->c->acct, subject, strlen(subject));
}
