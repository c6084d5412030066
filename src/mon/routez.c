/* /routez: the routes of the route table (net/route.h), in nats-server's RouteInfo shape. An
 * unclustered server answers with no routes, as nats-server does.
 *
 * subs=1 (or detail) asks every route for its subscriptions (the peer's interest), as /connz
 * asks clients, and lists their subjects. Not yet: the import/export permissions.
 */
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "net/route.h"

typedef struct routez_state {
    nd_route_stat_t *rs;
    size_t n;
    int subs; /* 0, 1 (subscriptions_list) or 2 (detail) */
} routez_state_t;

static void
state_free(void *p)
{
    routez_state_t *st = p;
    nd_free(st->rs);
    nd_free(st);
}

static void
finish(nd_mon_req_t *req)
{
    routez_state_t *st = req->state;
    nd_server_t *s = req->mon->srv;
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    json_object_set_new(o, "num_routes", json_integer((json_int_t)st->n));
    json_t *arr = json_array();
    for (size_t i = 0; i < st->n; i++) {
        const nd_route_stat_t *r = &st->rs[i];
        char buf[48];
        json_t *e = json_object();
        json_object_set_new(e, "rid", json_integer((json_int_t)r->rid));
        json_object_set_new(e, "remote_id", json_string(r->remote_id));
        json_object_set_new(e, "remote_name", json_string(r->remote_name));
        json_object_set_new(e, "did_solicit", json_boolean(r->did_solicit));
        json_object_set_new(e, "is_configured", json_boolean(r->is_configured));
        json_object_set_new(e, "ip", json_string(r->ip));
        json_object_set_new(e, "port", json_integer(r->port));
        json_object_set_new(e, "start", nd_mon_json_time(r->start_wall_ns));
        int64_t last = r->last_ns > 0 ? r->last_ns : r->start_wall_ns;
        json_object_set_new(e, "last_activity", nd_mon_json_time(last));
        if (r->rtt_ns > 0) {
            nd_mon_fmt_duration(r->rtt_ns, buf);
            json_object_set_new(e, "rtt", json_string(buf));
        }
        nd_mon_fmt_uptime(req->now_ns - r->start_wall_ns, buf);
        json_object_set_new(e, "uptime", json_string(buf));
        nd_mon_fmt_uptime(req->now_ns - last, buf);
        json_object_set_new(e, "idle", json_string(buf));
        json_object_set_new(e, "pending_size", json_integer(r->pending));
        json_object_set_new(e, "in_msgs", json_integer((json_int_t)r->in_msgs));
        json_object_set_new(e, "out_msgs", json_integer((json_int_t)r->out_msgs));
        json_object_set_new(e, "in_bytes", json_integer((json_int_t)r->in_bytes));
        json_object_set_new(e, "out_bytes", json_integer((json_int_t)r->out_bytes));
        json_object_set_new(e, "subscriptions", json_integer(r->subs));
        const nd_conn_info_t *ci = i < req->nconns ? req->conns[i] : NULL;
        if (st->subs != 0 && ci != NULL && ci->nsubs > 0) {
            json_t *a = json_array();
            for (size_t k = 0; k < ci->nsubs; k++)
                json_array_append_new(a, st->subs == 2
                                             ? nd_mon_sub_detail(&ci->subs[k], ci->cid, false)
                                             : json_string(ci->subs[k].subject));
            json_object_set_new(e, st->subs == 2 ? "subscriptions_list_detail"
                                                 : "subscriptions_list",
                                a);
        }
        json_array_append_new(arr, e);
    }
    json_object_set_new(o, "routes", arr);
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_routez(nd_mon_req_t *req)
{
    const char *v = nd_mon_param(req, "subs");
    bool b = false;
    int subs = 0;
    if (v != NULL && strcmp(v, "detail") == 0)
        subs = 2;
    else if (!nd_mon_param_bool(req, "subs", &b))
        return;
    else if (b)
        subs = 1;
    nd_server_t *s = req->mon->srv;
    routez_state_t *st = nd_new(routez_state_t);
    st->subs = subs;
    req->state = st;
    req->state_free = state_free;
    req->finish = finish;
    if (s->routes != NULL)
        st->n = nd_routes_stats(s->routes, &st->rs, subs != 0 ? &req->conns : NULL);
    if (subs != 0 && st->n > 0) {
        req->nconns = st->n;
        req->need_subs = true;
        return; /* finish runs once the routes answered */
    }
    finish(req);
}
