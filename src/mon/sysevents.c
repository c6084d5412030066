/* System account events and requests: see sysevents.h. */
#include "mon/sysevents.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mon/mon_int.h"
#include "util/evid.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "auth/auth.h"
#include "net/iclient.h"
#include "net/sysclient.h"
#include "actors/timer.h"

#define REQ_PREFIX     "$SYS.REQ.SERVER."
#define REQ_PREFIX_LEN (sizeof REQ_PREFIX - 1)
#define ACC_PREFIX     "$SYS.REQ.ACCOUNT."
#define ACC_PREFIX_LEN (sizeof ACC_PREFIX - 1)
#define ACC_CONNZ      ".CONNZ"
#define ACC_CONNZ_LEN  (sizeof ACC_CONNZ - 1)

/* The "seq" of the server block: one sequence for every message the server sends. */
static _Atomic uint64_t sys_seq;

/* Returns: a reference on the account named name[0..len), or NULL when there is none (or the
 * authorization is gone: shutdown). */
static nd_acct_t *
acct_by_name(nd_ctx_t *ctx, nd_server_t *s, const char *name, size_t len)
{
    nd_auth_t *a = s->auth != NULL ? nd_auth_slot_get(s->auth) : NULL;
    if (a == NULL)
        return NULL;
    nd_acct_t *r = NULL;
    for (size_t i = 0; i < a->naccts && r == NULL; i++) {
        nd_acct_t *acct = a->accts[i].acct;
        const char *n = acct != NULL ? nd_acct_name(acct) : "";
        if (acct != NULL && strlen(n) == len && memcmp(n, name, len) == 0) {
            r = acct;
            nd_actor_ref(&r->actor);
        }
    }
    nd_auth_unref(ctx, a);
    return r;
}

/* Returns: a reference on the system account, or NULL when none is configured (or the
 * authorization is gone: shutdown). */
static nd_acct_t *
sys_acct(nd_ctx_t *ctx, nd_server_t *s)
{
    const char *name = nd_opts_system_account(&s->opts);
    if (name == NULL)
        return NULL;
    return acct_by_name(ctx, s, name, strlen(name));
}

/* nats-server's ServerInfo block. */
static json_t *
server_block(const nd_server_t *s, int64_t now)
{
    const nd_opts_t *o = &s->opts;
    json_t *b = json_object();
    json_object_set_new(b, "name", json_string(o->server_name ? o->server_name : s->server_id));
    json_object_set_new(b, "host", json_string(o->host ? o->host : "0.0.0.0"));
    json_object_set_new(b, "id", json_string(s->server_id));
    json_object_set_new(b, "ver", json_string(NATSD_COMPAT_VERSION));
    uint64_t seq = atomic_fetch_add_explicit(&sys_seq, 1, memory_order_relaxed) + 1;
    json_object_set_new(b, "seq", json_integer((json_int_t)seq));
    json_object_set_new(b, "jetstream", json_false());
    json_object_set_new(b, "time", nd_mon_json_time(now));
    return b;
}

static void
set_str(json_t *o, const char *key, const char *v)
{
    if (v != NULL && v[0] != '\0') /* Go's omitempty */
        json_object_set_new(o, key, json_string(v));
}

static json_t *
msgs_bytes(uint64_t msgs, uint64_t bytes)
{
    json_t *o = json_object();
    json_object_set_new(o, "msgs", json_integer((json_int_t)msgs));
    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    return o;
}

/* Publishes o (stolen) as compact JSON on subj in acct. */
static void
publish_json(nd_ctx_t *ctx, nd_acct_t *acct, const char *subj, const char *reply, json_t *o)
{
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (js == NULL)
        return;
    nd_sys_publish(ctx, acct, subj, strlen(subj), reply, reply ? strlen(reply) : 0, NULL, 0, js,
                   strlen(js));
    free(js);
}

/* acct's counters as nats-server writes them in an account_connections advisory and in an
 * AccountStatz entry (no leaf nodes or per-account slow consumers here: 0). */
static void
account_stats(json_t *o, nd_acct_t *acct, int64_t conns)
{
    json_object_set_new(o, "acc", json_string(nd_acct_name(acct)));
    json_object_set_new(o, "conns", json_integer((json_int_t)conns));
    json_object_set_new(o, "leafnodes", json_integer(0));
    json_object_set_new(o, "total_conns", json_integer((json_int_t)conns));
    json_object_set_new(
        o, "sent",
        msgs_bytes(atomic_load_explicit(&acct->stats.msgs_out, memory_order_relaxed),
                   atomic_load_explicit(&acct->stats.bytes_out, memory_order_relaxed)));
    json_object_set_new(
        o, "received",
        msgs_bytes(atomic_load_explicit(&acct->stats.msgs_in, memory_order_relaxed),
                   atomic_load_explicit(&acct->stats.bytes_in, memory_order_relaxed)));
    json_object_set_new(o, "slow_consumers", json_integer(0));
}

/* Publishes acct's connection count (nats-server 2.9's sendAccConnsUpdate): the same event on
 * the current subject and on the old `$SYS.SERVER.ACCOUNT.<acc>.CONNS`, as 2.9.10 does. */
static void
publish_conns(nd_ctx_t *ctx, nd_server_t *s, nd_acct_t *sys, nd_acct_t *acct, int64_t conns,
              int64_t now)
{
    char id[23];
    nd_event_id(ctx, id);
    const char *fmt[] = {"$SYS.SERVER.ACCOUNT.%s.CONNS", "$SYS.ACCOUNT.%s.SERVER.CONNS"};
    for (size_t i = 0; i < 2; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "type",
                            json_string("io.nats.server.advisory.v1.account_connections"));
        json_object_set_new(o, "id", json_string(id));
        json_object_set_new(o, "timestamp", nd_mon_json_time(now));
        json_object_set_new(o, "server", server_block(s, now));
        account_stats(o, acct, conns);
        char subj[ND_ACCT_NAME_MAX + 40];
        snprintf(subj, sizeof subj, fmt[i], nd_acct_name(acct));
        publish_json(ctx, sys, subj, NULL, o);
    }
}

/* The client-event hook (net/server.h): the account's connection count, then the CONNECT or
 * DISCONNECT advisory, when a system account is configured. Ctx: the connection's turn. */
static void
on_client_event(nd_ctx_t *ctx, const nd_client_event_t *ev)
{
    nd_acct_t *sys = sys_acct(ctx, ev->srv);
    if (sys == NULL)
        return;
    bool connect = ev->connect;
    int64_t now = nd_mon_wall_ns();
    publish_conns(ctx, ev->srv, sys, ev->acct, ev->acct_conns, now);
    char id[23];
    nd_event_id(ctx, id);
    json_t *o = json_object();
    json_object_set_new(o, "type",
                        json_string(connect ? "io.nats.server.advisory.v1.client_connect"
                                            : "io.nats.server.advisory.v1.client_disconnect"));
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "timestamp", nd_mon_json_time(now));
    json_object_set_new(o, "server", server_block(ev->srv, now));
    json_t *cl = json_object();
    json_object_set_new(cl, "start", nd_mon_json_time(ev->start_ns));
    json_object_set_new(cl, "host", json_string(ev->ip));
    json_object_set_new(cl, "id", json_integer((json_int_t)ev->cid));
    json_object_set_new(cl, "acc", json_string(nd_acct_name(ev->acct)));
    set_str(cl, "user", ev->user);
    set_str(cl, "name", ev->name);
    set_str(cl, "lang", ev->lang);
    set_str(cl, "ver", ev->version);
    if (!connect) {
        if (ev->rtt_ns > 0)
            json_object_set_new(cl, "rtt", json_integer((json_int_t)ev->rtt_ns));
        json_object_set_new(cl, "stop", nd_mon_json_time(now));
    }
    json_object_set_new(cl, "kind", json_string("Client"));
    json_object_set_new(cl, "client_type", json_string("nats"));
    json_object_set_new(o, "client", cl);
    if (!connect) {
        /* The client's view, as nats-server: "sent" is what it published (our in_*). */
        json_object_set_new(o, "sent", msgs_bytes(ev->in_msgs, ev->in_bytes));
        json_object_set_new(o, "received", msgs_bytes(ev->out_msgs, ev->out_bytes));
        json_object_set_new(o, "reason", json_string(ev->reason));
    }
    char subj[ND_ACCT_NAME_MAX + 32];
    snprintf(subj, sizeof subj, "$SYS.ACCOUNT.%s.%s", nd_acct_name(ev->acct),
             connect ? "CONNECT" : "DISCONNECT");
    publish_json(ctx, sys, subj, NULL, o);
    nd_actor_unref(ctx, &sys->actor);
}

typedef enum {
    REQ_NONE,
    REQ_STATSZ,
    REQ_VARZ,
    REQ_CONNZ,
    REQ_HEALTHZ,
    REQ_ACC_CONNZ,
    REQ_ACC_STATZ,
    REQ_USER_INFO
} req_kind_t;

#define ACC_STATZ       ".STATZ"
#define ACC_STATZ_LEN   (sizeof ACC_STATZ - 1)
#define USER_PREFIX     "$SYS.REQ.USER."
#define USER_PREFIX_LEN (sizeof USER_PREFIX - 1)
#define USER_INFO       ".INFO"
#define USER_INFO_LEN   (sizeof USER_INFO - 1)

/* Returns: whether subj is prefix<one token>suffix (the account's name in the middle). */
static bool
one_token_between(const char *subj, size_t len, const char *prefix, size_t plen, const char *suffix,
                  size_t slen)
{
    if (len <= plen + slen || memcmp(subj, prefix, plen) != 0 ||
        memcmp(subj + len - slen, suffix, slen) != 0)
        return false;
    return memchr(subj + plen, '.', len - plen - slen) == NULL;
}

/* Returns: which request subj names: REQ_PREFIX followed by PING, PING.<X> or <our id>.<X>, or
 * ACC_PREFIX<acc>.CONNZ. */
static req_kind_t
req_kind(const nd_server_t *s, const char *subj, size_t len)
{
    if (one_token_between(subj, len, ACC_PREFIX, ACC_PREFIX_LEN, ACC_CONNZ, ACC_CONNZ_LEN))
        return REQ_ACC_CONNZ;
    if (one_token_between(subj, len, ACC_PREFIX, ACC_PREFIX_LEN, ACC_STATZ, ACC_STATZ_LEN))
        return REQ_ACC_STATZ;
    if (one_token_between(subj, len, USER_PREFIX, USER_PREFIX_LEN, USER_INFO, USER_INFO_LEN))
        return REQ_USER_INFO;
    if (len > ACC_PREFIX_LEN && memcmp(subj, ACC_PREFIX, ACC_PREFIX_LEN) == 0)
        return REQ_NONE;
    if (len <= REQ_PREFIX_LEN || memcmp(subj, REQ_PREFIX, REQ_PREFIX_LEN) != 0)
        return REQ_NONE;
    const char *rest = subj + REQ_PREFIX_LEN;
    size_t rlen = len - REQ_PREFIX_LEN;
    size_t idlen = strlen(s->server_id);
    if (rlen == 4 && memcmp(rest, "PING", 4) == 0)
        return REQ_STATSZ;
    const char *what;
    size_t wlen;
    if (rlen > 5 && memcmp(rest, "PING.", 5) == 0) {
        what = rest + 5;
        wlen = rlen - 5;
    } else if (rlen > idlen + 1 && memcmp(rest, s->server_id, idlen) == 0 && rest[idlen] == '.') {
        what = rest + idlen + 1;
        wlen = rlen - idlen - 1;
    } else {
        return REQ_NONE;
    }
    static const struct {
        const char *name;
        req_kind_t kind;
    } names[] = {
        {"STATSZ", REQ_STATSZ}, {"VARZ", REQ_VARZ}, {"CONNZ", REQ_CONNZ}, {"HEALTHZ", REQ_HEALTHZ}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (wlen == strlen(names[i].name) && memcmp(what, names[i].name, wlen) == 0)
            return names[i].kind;
    return REQ_NONE;
}

static json_t *
statsz(nd_ctx_t *ctx, nd_server_t *s, int64_t now)
{
    nd_connreg_totals_t t;
    nd_connreg_totals(s->connreg, &t);
    json_t *z = json_object();
    json_object_set_new(z, "start", nd_mon_json_time(s->start_wall_ns));
    json_object_set_new(z, "mem", json_integer(nd_mon_rss_bytes()));
    json_object_set_new(z, "cores", json_integer(nd_mon_cores()));
    json_object_set_new(z, "cpu", nd_mon_json_float(nd_mon_cpu_percent(s, now)));
    json_object_set_new(z, "connections", json_integer(t.live));
    json_object_set_new(z, "total_connections", json_integer((json_int_t)t.total_conns));
    size_t naccts = 1;
    nd_auth_t *a = s->auth != NULL ? nd_auth_slot_get(s->auth) : NULL;
    if (a != NULL) {
        naccts = a->naccts;
        nd_auth_unref(ctx, a);
    }
    json_object_set_new(z, "active_accounts", json_integer((json_int_t)naccts));
    json_object_set_new(z, "subscriptions", json_integer((json_int_t)t.live_subs));
    json_object_set_new(z, "sent", msgs_bytes(t.out_msgs, t.out_bytes));
    json_object_set_new(z, "received", msgs_bytes(t.in_msgs, t.in_bytes));
    json_object_set_new(z, "slow_consumers", json_integer((json_int_t)t.slow_consumers));
    json_object_set_new(z, "active_servers", json_integer(1));
    return z;
}

/* Runs a monitoring endpoint as the HTTP server would, without a monitor: returns its body, or
 * NULL when it needs the connections' answers (asynchronous). */
static json_t *
endpoint(nd_ctx_t *ctx, nd_server_t *s, nd_mon_ep_t ep, int64_t now, const char *acc,
         size_t acc_len)
{
    nd_mon_t mon = {.srv = s};
    snprintf(mon.host, sizeof mon.host, "%s", s->opts.host ? s->opts.host : "0.0.0.0");
    nd_mon_req_t req = {.mon = &mon, .ctx = ctx, .ep = ep, .now_ns = now};
    if (acc != NULL) {
        /* The account's connections only: /connz?acc=<acc> (freed by nd_mon_req_fini). */
        req.params = nd_xmalloc(sizeof *req.params);
        req.params[0].key = nd_xstrdup("acc");
        req.params[0].val = nd_xmalloc(acc_len + 1);
        memcpy(req.params[0].val, acc, acc_len);
        req.params[0].val[acc_len] = '\0';
        req.nparams = 1;
    }
    switch (ep) {
    case ND_MON_EP_VARZ:
        nd_mon_varz(&req);
        break;
    case ND_MON_EP_CONNZ:
        nd_mon_connz(&req);
        break;
    case ND_MON_EP_HEALTHZ:
        nd_mon_healthz(&req);
        break;
    default:
        break;
    }
    json_t *data = NULL;
    if (!req.need_subs && req.body != NULL)
        data = json_loadb(req.body, req.body_len, 0, NULL);
    /* Over $SYS there is no status line: nats-server (2.10+) puts the code in the body. */
    if (ep == ND_MON_EP_HEALTHZ && json_is_object(data)) {
        json_t *h = json_object();
        json_object_set(h, "status", json_object_get(data, "status"));
        json_object_set_new(h, "status_code", json_integer(req.status));
        json_object_update_missing(h, data);
        json_decref(data);
        data = h;
    }
    nd_mon_req_fini(&req);
    return data;
}

/* $SYS.REQ.ACCOUNT.<acc>.STATZ (what every account imports as $SYS.REQ.ACCOUNT.PING.STATZ):
 * the account's statistics, in nats-server's AccountStatz shape. NULL for an unknown account. */
static json_t *
account_statz(nd_ctx_t *ctx, nd_server_t *s, const char *name, size_t nlen, int64_t now)
{
    nd_acct_t *acct = acct_by_name(ctx, s, name, nlen);
    if (acct == NULL)
        return NULL;
    json_t *entry = json_object();
    account_stats(entry, acct, atomic_load_explicit(&acct->conns, memory_order_relaxed));
    nd_actor_unref(ctx, &acct->actor);
    json_t *z = json_object();
    json_object_set_new(z, "server_id", json_string(s->server_id));
    json_object_set_new(z, "now", nd_mon_json_time(now));
    json_t *list = json_array();
    json_array_append_new(list, entry);
    json_object_set_new(z, "account_statz", list);
    return z;
}

/* $SYS.REQ.USER.<acc>.INFO (what every account imports as $SYS.REQ.USER.INFO): who the
 * requester is, from what the delivery says about its sender (nats-server's UserInfo). */
static json_t *
user_info(const nd_sender_t *from)
{
    json_t *z = json_object();
    json_object_set_new(z, "user", json_string(from->user != NULL ? from->user : ""));
    json_object_set_new(z, "account", json_string(nd_acct_name(from->acct)));
    return z;
}

/* The $SYS request service's handler: answers the request (see sysevents.h) on its reply
 * subject, through the internal client's own publish. Ctx: the internal client's turn. */
static void
on_request(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    nd_server_t *s = arg;
    const char *subj = m->subject, *reply = m->reply;
    size_t len = m->subject_len, reply_len = m->reply_len;
    if (reply_len == 0 || reply_len > 1024)
        return;
    int64_t now = nd_mon_wall_ns();
    json_t *body = NULL;
    const char *key = "data";
    switch (req_kind(s, subj, len)) {
    case REQ_STATSZ:
        body = statsz(ctx, s, now);
        key = "statsz";
        break;
    case REQ_VARZ:
        body = endpoint(ctx, s, ND_MON_EP_VARZ, now, NULL, 0);
        break;
    case REQ_CONNZ:
        body = endpoint(ctx, s, ND_MON_EP_CONNZ, now, NULL, 0);
        break;
    case REQ_HEALTHZ:
        body = endpoint(ctx, s, ND_MON_EP_HEALTHZ, now, NULL, 0);
        break;
    case REQ_ACC_CONNZ:
        body = endpoint(ctx, s, ND_MON_EP_CONNZ, now, subj + ACC_PREFIX_LEN,
                        len - ACC_PREFIX_LEN - ACC_CONNZ_LEN);
        break;
    case REQ_ACC_STATZ:
        body =
            account_statz(ctx, s, subj + ACC_PREFIX_LEN, len - ACC_PREFIX_LEN - ACC_STATZ_LEN, now);
        break;
    case REQ_USER_INFO:
        body = user_info(m->from);
        break;
    case REQ_NONE:
        break;
    }
    if (body == NULL)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "server", server_block(s, now));
    json_object_set_new(o, key, body);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    if (text == NULL)
        return;
    nd_iclient_publish(ctx, ic, reply, NULL, NULL, 0, text, strlen(text));
    free(text);
}

/* The periodic STATSZ (nats-server 2.9's startStatszTimer/heartbeatStatsz): one actor whose
 * one-shot timer first fires STATSZ_FIRST_NS after the start, then waits twice as long each time
 * up to STATSZ_MAX_NS (eventsHBInterval), so a new server is seen quickly and a settled one
 * sends little. Each firing publishes {"server":{...},"statsz":{...}} on
 * `$SYS.SERVER.<id>.STATSZ` in the system account. The actor lives until the pool's shutdown
 * closes it (its final cancels the timer); after nd_server_stop_accepting the authorization is
 * gone, sys_acct finds no system account and a late firing publishes nothing. */
#define STATSZ_FIRST_NS 250000000ull
#define STATSZ_MAX_NS   30000000000ull

enum { STATSZ_MSG_TIMER = ND_MSG_USER_BASE, STATSZ_MSG_START };

typedef struct statsz_actor {
    nd_actor_t base;
    nd_server_t *srv; /* immutable after spawn */
    /* owner only */
    nd_timer_t timer;
    uint64_t interval_ns;
} statsz_actor_t;

static void
statsz_send(nd_ctx_t *ctx, nd_server_t *s)
{
    nd_acct_t *sys = sys_acct(ctx, s);
    if (sys == NULL)
        return;
    int64_t now = nd_mon_wall_ns();
    json_t *o = json_object();
    json_object_set_new(o, "server", server_block(s, now));
    json_object_set_new(o, "statsz", statsz(ctx, s, now));
    char subj[sizeof s->server_id + 32];
    snprintf(subj, sizeof subj, "$SYS.SERVER.%s.STATSZ", s->server_id);
    publish_json(ctx, sys, subj, NULL, o);
    nd_actor_unref(ctx, &sys->actor);
}

static void
statsz_dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    statsz_actor_t *a = (statsz_actor_t *)self;
    switch (msg->id) {
    case STATSZ_MSG_START:
        a->interval_ns = STATSZ_FIRST_NS;
        nd_timer_start(ctx, &a->timer, a->interval_ns, 0);
        return;
    case STATSZ_MSG_TIMER:
        if (!nd_timer_fired(&a->timer, msg))
            return;
        statsz_send(ctx, a->srv);
        if (a->interval_ns < STATSZ_MAX_NS) {
            a->interval_ns *= 2;
            if (a->interval_ns > STATSZ_MAX_NS)
                a->interval_ns = STATSZ_MAX_NS;
        }
        nd_timer_start(ctx, &a->timer, a->interval_ns, 0);
        return;
    default:
        nd_fatal("sysevents: unknown message id %u", msg->id);
    }
}

static void
statsz_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    nd_timer_cancel(ctx, &((statsz_actor_t *)self)->timer);
}

static const nd_actor_type_t statsz_type = {
    .name = "statsz",
    .size = sizeof(statsz_actor_t),
    .dispatch = statsz_dispatch,
    .final = statsz_final,
};

void
nd_sys_init(nd_server_t *s)
{
    nd_server_on_client_event(s, on_client_event);
}

/* Starts the request service: an internal client of the system account subscribed to exactly
 * the requests it answers, so any other `$SYS.REQ.` subject has no responders. */
static void
start_requests(nd_server_t *s)
{
    nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
    nd_acct_t *sys = sys_acct(ctx, s);
    nd_ctx_external_free(ctx);
    if (sys == NULL)
        return;
    static const char *const what[] = {"STATSZ", "VARZ", "CONNZ", "HEALTHZ"};
    char subj[9][96];
    const char *subjects[12];
    size_t n = 0;
    subjects[n++] = REQ_PREFIX "PING";
    for (size_t i = 0; i < 4; i++) {
        snprintf(subj[2 * i], sizeof subj[0], REQ_PREFIX "PING.%s", what[i]);
        snprintf(subj[2 * i + 1], sizeof subj[0], REQ_PREFIX "%s.%s", s->server_id, what[i]);
        subjects[n++] = subj[2 * i];
        subjects[n++] = subj[2 * i + 1];
    }
    subjects[n++] = ACC_PREFIX "*" ACC_CONNZ;
    subjects[n++] = ACC_PREFIX "*" ACC_STATZ;
    subjects[n++] = USER_PREFIX "*" USER_INFO;
    (void)nd_iclient_start(s, sys, ND_CONN_SYSTEM, "$SYS requests", subjects, n,
                           ND_ICLIENT_QUEUE_LIMIT, on_request, s);
    ctx = nd_ctx_external_new(s->pool);
    nd_actor_unref(ctx, &sys->actor); /* the internal client holds its own reference */
    nd_ctx_external_free(ctx);
}

void
nd_sys_start(nd_server_t *s)
{
    const char *name = nd_opts_system_account(&s->opts);
    if (name == NULL)
        return;
    start_requests(s);
    nd_ctx_t *ctx = nd_ctx_external_new(s->pool);
    statsz_actor_t *a = (statsz_actor_t *)nd_actor_spawn(ctx, &statsz_type);
    a->srv = s;
    nd_timer_init(&a->timer, &a->base, STATSZ_MSG_TIMER);
    nd_actor_send(ctx, &a->base, nd_msg_new(ctx, sizeof(nd_msg_t), STATSZ_MSG_START));
    nd_actor_unref(ctx, &a->base); /* it lives until the pool's shutdown closes it */
    nd_ctx_external_free(ctx);
}
