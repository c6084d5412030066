/* /connz: open and closed connections, with every query parameter of nats-server 2.10
 * (inventory §4): sort (every key), offset/limit pagination, subs (list or detail), auth, cid,
 * state (open, closed, any/all), user, acc, mqtt_client. Bad values give nats-server's 400 texts.
 *
 * Open connections are sampled from the registry (connreg.h); their subscription lists, when
 * asked for, are gathered from the connection actors by http.c, and only for the page returned.
 * Sort orders follow nats-server's monitor_sort_opts.go: cid and start ascending, everything else
 * descending; ties are broken by cid so pages are stable.
 */
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "net/conn.h"

typedef enum {
    SORT_CID,
    SORT_START,
    SORT_SUBS,
    SORT_PENDING,
    SORT_MSGS_TO,
    SORT_MSGS_FROM,
    SORT_BYTES_TO,
    SORT_BYTES_FROM,
    SORT_LAST,
    SORT_IDLE,
    SORT_UPTIME,
    SORT_STOP,
    SORT_REASON,
    SORT_RTT,
} sort_key_t;

static const char *const sort_names[] = {
    "cid",        "start", "subs", "pending", "msgs_to", "msgs_from", "bytes_to",
    "bytes_from", "last",  "idle", "uptime",  "stop",    "reason",    "rtt",
};

enum { STATE_OPEN, STATE_CLOSED, STATE_ALL };

typedef struct connz_state {
    int subs;  /* 0: none, 1: subscriptions_list, 2: subscriptions_list_detail */
    bool auth; /* authorized_user and account */
    int64_t offset, limit;
    size_t total;
    int state;
} connz_state_t;

typedef struct sort_ctx {
    sort_key_t key;
    int64_t now;
} sort_ctx_t;

static int64_t
end_of(const nd_conn_info_t *ci, int64_t now)
{
    return ci->stop_ns != 0 ? ci->stop_ns : now;
}

static int
cmp_u(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

static int
cmp_i(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b ? 1 : 0;
}

static int
compare(const void *pa, const void *pb, void *arg)
{
    const sort_ctx_t *sc = arg;
    const nd_conn_info_t *a = *(nd_conn_info_t *const *)pa, *b = *(nd_conn_info_t *const *)pb;
    int c = 0;
    switch (sc->key) {
    case SORT_CID:
        break;
    case SORT_START:
        c = cmp_i(a->start_ns, b->start_ns);
        break;
    case SORT_SUBS:
        c = -cmp_u(a->num_subs, b->num_subs);
        break;
    case SORT_PENDING:
        c = -cmp_i(a->pending, b->pending);
        break;
    case SORT_MSGS_TO:
        c = -cmp_u(a->out_msgs, b->out_msgs);
        break;
    case SORT_MSGS_FROM:
        c = -cmp_u(a->in_msgs, b->in_msgs);
        break;
    case SORT_BYTES_TO:
        c = -cmp_u(a->out_bytes, b->out_bytes);
        break;
    case SORT_BYTES_FROM:
        c = -cmp_u(a->in_bytes, b->in_bytes);
        break;
    case SORT_LAST:
        c = -cmp_i(a->last_ns, b->last_ns);
        break;
    case SORT_IDLE:
        c = -cmp_i(end_of(a, sc->now) - a->last_ns, end_of(b, sc->now) - b->last_ns);
        break;
    case SORT_UPTIME:
        c = -cmp_i(end_of(a, sc->now) - a->start_ns, end_of(b, sc->now) - b->start_ns);
        break;
    case SORT_STOP:
        c = -cmp_i(a->stop_ns, b->stop_ns);
        break;
    case SORT_REASON:
        c = -strcmp(a->reason ? a->reason : "", b->reason ? b->reason : "");
        break;
    case SORT_RTT:
        c = -cmp_i(a->rtt_ns, b->rtt_ns);
        break;
    }
    return c != 0 ? c : cmp_u(a->cid, b->cid);
}

static const char *
kind_name(int kind)
{
    switch (kind) {
    case ND_CONN_CLIENT:
        return "Client";
    case ND_CONN_ROUTER:
        return "Router";
    case ND_CONN_GATEWAY:
        return "Gateway";
    case ND_CONN_LEAF:
        return "Leafnode";
    case ND_CONN_JETSTREAM:
        return "JetStream";
    case ND_CONN_SYSTEM:
        return "System";
    default:
        return "Client";
    }
}

json_t *
nd_mon_sub_detail(const nd_sub_info_t *si, uint64_t cid, bool with_account)
{
    json_t *d = json_object();
    if (with_account)
        json_object_set_new(d, "account", json_string("$G"));
    json_object_set_new(d, "subject", json_string(si->subject));
    if (si->queue != NULL)
        json_object_set_new(d, "qgroup", json_string(si->queue));
    json_object_set_new(d, "sid", json_string(si->sid));
    json_object_set_new(d, "msgs", json_integer((json_int_t)si->msgs));
    if (si->max > 0)
        json_object_set_new(d, "max", json_integer((json_int_t)si->max));
    json_object_set_new(d, "cid", json_integer((json_int_t)cid));
    return d;
}

static json_t *
conn_json(const nd_conn_info_t *ci, const connz_state_t *st, int64_t now)
{
    char buf[48];
    json_t *o = json_object();
    json_object_set_new(o, "cid", json_integer((json_int_t)ci->cid));
    json_object_set_new(o, "kind", json_string(kind_name(ci->kind)));
    json_object_set_new(o, "type", json_string(ci->kind == ND_CONN_MQTT ? "mqtt"
                                               : ci->websocket          ? "websocket"
                                                                        : "nats"));
    json_object_set_new(o, "ip", json_string(ci->ip));
    json_object_set_new(o, "port", json_integer(ci->port));
    json_object_set_new(o, "start", nd_mon_json_time(ci->start_ns));
    json_object_set_new(o, "last_activity", nd_mon_json_time(ci->last_ns));
    if (ci->stop_ns != 0) {
        json_object_set_new(o, "stop", nd_mon_json_time(ci->stop_ns));
        json_object_set_new(o, "reason", json_string(ci->reason ? ci->reason : ""));
    }
    nd_mon_fmt_duration(ci->rtt_ns, buf);
    json_object_set_new(o, "rtt", json_string(buf));
    int64_t end = end_of(ci, now);
    nd_mon_fmt_uptime(end - ci->start_ns, buf);
    json_object_set_new(o, "uptime", json_string(buf));
    nd_mon_fmt_uptime(end - ci->last_ns, buf);
    json_object_set_new(o, "idle", json_string(buf));
    json_object_set_new(o, "pending_bytes", json_integer(ci->pending));
    json_object_set_new(o, "in_msgs", json_integer((json_int_t)ci->in_msgs));
    json_object_set_new(o, "out_msgs", json_integer((json_int_t)ci->out_msgs));
    json_object_set_new(o, "in_bytes", json_integer((json_int_t)ci->in_bytes));
    json_object_set_new(o, "out_bytes", json_integer((json_int_t)ci->out_bytes));
    json_object_set_new(o, "subscriptions", json_integer(ci->num_subs));
    if (ci->name != NULL && *ci->name)
        json_object_set_new(o, "name", json_string(ci->name));
    if (ci->lang != NULL && *ci->lang)
        json_object_set_new(o, "lang", json_string(ci->lang));
    if (ci->version != NULL && *ci->version)
        json_object_set_new(o, "version", json_string(ci->version));
    if (ci->mqtt_client != NULL && *ci->mqtt_client)
        json_object_set_new(o, "mqtt_client", json_string(ci->mqtt_client));
    if (st->auth) {
        if (ci->user != NULL && *ci->user)
            json_object_set_new(o, "authorized_user", json_string(ci->user));
        json_object_set_new(o, "account", json_string(ci->account ? ci->account : "$G"));
    }
    if (st->subs != 0 && ci->subs_known && ci->nsubs > 0) {
        json_t *a = json_array();
        for (size_t i = 0; i < ci->nsubs; i++)
            json_array_append_new(a, st->subs == 2 ? nd_mon_sub_detail(&ci->subs[i], ci->cid, false)
                                                   : json_string(ci->subs[i].subject));
        json_object_set_new(o, st->subs == 2 ? "subscriptions_list_detail" : "subscriptions_list",
                            a);
    }
    return o;
}

static void
finish(nd_mon_req_t *req)
{
    const connz_state_t *st = req->state;
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(req->mon->srv->server_id));
    json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    json_object_set_new(o, "num_connections", json_integer((json_int_t)req->nconns));
    json_object_set_new(o, "total", json_integer((json_int_t)st->total));
    json_object_set_new(o, "offset", json_integer(st->offset));
    json_object_set_new(o, "limit", json_integer(st->limit));
    json_t *a = json_array();
    for (size_t i = 0; i < req->nconns; i++)
        json_array_append_new(a, conn_json(req->conns[i], st, req->now_ns));
    json_object_set_new(o, "connections", a);
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_connz(nd_mon_req_t *req)
{
    connz_state_t *st = nd_new(connz_state_t);
    req->state = st;
    req->state_free = nd_free;
    sort_key_t key = SORT_CID;
    const char *sort = nd_mon_param(req, "sort");
    if (sort != NULL && *sort != '\0') {
        size_t k = 0;
        while (k < sizeof sort_names / sizeof sort_names[0] && strcmp(sort, sort_names[k]) != 0)
            k++;
        if (k == sizeof sort_names / sizeof sort_names[0]) {
            nd_mon_reply_text(req, 400, "invalid sorting option: %.200s", sort);
            return;
        }
        key = (sort_key_t)k;
    }
    if (!nd_mon_param_bool(req, "auth", &st->auth))
        return;
    const char *subs = nd_mon_param(req, "subs");
    if (subs != NULL && strcmp(subs, "detail") == 0) {
        st->subs = 2;
    } else {
        bool b = false;
        if (!nd_mon_param_bool(req, "subs", &b))
            return;
        st->subs = b ? 1 : 0;
    }
    int64_t offset = 0, limit = 0;
    uint64_t cid = 0;
    if (!nd_mon_param_int(req, "offset", &offset) || !nd_mon_param_int(req, "limit", &limit) ||
        !nd_mon_param_uint(req, "cid", &cid))
        return;
    const char *state = nd_mon_param(req, "state");
    st->state = STATE_OPEN;
    if (state != NULL && *state != '\0') {
        if (strcmp(state, "open") == 0)
            st->state = STATE_OPEN;
        else if (strcmp(state, "closed") == 0)
            st->state = STATE_CLOSED;
        else if (strcmp(state, "any") == 0 || strcmp(state, "all") == 0)
            st->state = STATE_ALL;
        else {
            nd_mon_reply_text(req, 400, "Error decoding state for %.200s", state);
            return;
        }
    }
    if ((key == SORT_STOP || key == SORT_REASON) && st->state == STATE_OPEN) {
        nd_mon_reply_text(req, 400, "sort by %s only valid on closed connections", sort_names[key]);
        return;
    }
    st->offset = offset < 0 ? 0 : offset;
    st->limit = limit <= 0 ? 1024 : limit;

    /* Gather, filter, sort, page. */
    nd_conn_info_t **live = NULL, **closed = NULL;
    size_t nlive = 0, nclosed = 0;
    nd_connreg_t *reg = req->mon->srv->connreg;
    if (st->state != STATE_CLOSED)
        nlive = nd_connreg_live(reg, cid, &live);
    if (st->state != STATE_OPEN)
        nclosed = nd_connreg_closed(reg, cid, &closed);
    size_t n = nlive + nclosed;
    nd_conn_info_t **all = nd_xmalloc((n > 0 ? n : 1) * sizeof(*all));
    if (nlive)
        memcpy(all, live, nlive * sizeof(*all));
    if (nclosed)
        memcpy(all + nlive, closed, nclosed * sizeof(*all));
    nd_free(live);
    nd_free(closed);
    /* Filters: user= the authorized user, acc= the account (unset: "$G"), mqtt_client= an MQTT
     * connection's client identifier. */
    const char *user = nd_mon_param(req, "user"), *acc = nd_mon_param(req, "acc"),
               *mqtt = nd_mon_param(req, "mqtt_client");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const nd_conn_info_t *ci = all[i];
        bool keep = true;
        if (mqtt != NULL && *mqtt)
            keep = ci->mqtt_client != NULL && strcmp(ci->mqtt_client, mqtt) == 0;
        if (keep && user != NULL && *user)
            keep = ci->user != NULL && strcmp(ci->user, user) == 0;
        if (keep && acc != NULL && *acc)
            keep = strcmp(ci->account ? ci->account : "$G", acc) == 0;
        if (keep)
            all[kept++] = all[i];
        else
            nd_conn_info_unref(req->ctx, all[i]);
    }
    n = kept;
    sort_ctx_t sc = {.key = key, .now = req->now_ns};
    qsort_r(all, n, sizeof(*all), compare, &sc);
    st->total = n;
    size_t first = (uint64_t)st->offset < n ? (size_t)st->offset : n;
    size_t count = n - first;
    if ((uint64_t)st->limit < count)
        count = (size_t)st->limit;
    for (size_t i = 0; i < first; i++)
        nd_conn_info_unref(req->ctx, all[i]);
    for (size_t i = first + count; i < n; i++)
        nd_conn_info_unref(req->ctx, all[i]);
    memmove(all, all + first, count * sizeof(*all));
    req->conns = all;
    req->nconns = count;
    req->finish = finish;
    if (st->subs != 0) {
        for (size_t i = 0; i < count && !req->need_subs; i++)
            req->need_subs = all[i]->actor != NULL;
    }
    if (!req->need_subs)
        finish(req);
}
