/* /routez: the routes of the route table (net/route.h), in nats-server's RouteInfo shape. An
 * unclustered server answers with no routes, as nats-server does.
 *
 * Not yet: subscriptions_list (subs=1 is accepted and lists nothing), the import/export
 * permissions (route permissions are not built).
 */
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "net/route.h"

void
nd_mon_routez(nd_mon_req_t *req)
{
    const char *v = nd_mon_param(req, "subs");
    bool b;
    if (!(v != NULL && strcmp(v, "detail") == 0) && !nd_mon_param_bool(req, "subs", &b))
        return;
    nd_server_t *s = req->mon->srv;
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    nd_route_stat_t *rs = NULL;
    size_t n = s->routes != NULL ? nd_routes_stats(s->routes, &rs) : 0;
    json_object_set_new(o, "num_routes", json_integer((json_int_t)n));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const nd_route_stat_t *r = &rs[i];
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
        json_array_append_new(arr, e);
    }
    nd_free(rs);
    json_object_set_new(o, "routes", arr);
    nd_mon_reply_json(req, 200, o);
}
