/* /gatewayz (net/gateway.h's connections) and /leafz; endpoints of features natsd does not have
 * yet, in their empty shapes (nats-server 2.10's field names, as it answers with nothing
 * configured): /accountz (the accounts and their counts only),
 * /accstatz (the global account's figures); and the HTML index at "/". (/jsz is jsz.c.)
 */
#include <stdio.h>
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "natsd/natsd.h"
#include "auth/auth.h"
#include "cfg/opts.h"
#include "subj/sublist.h"
#include "net/connreg.h"
#include "net/gateway.h"
#include "net/leaf.h"

static json_t *
head(const nd_mon_req_t *req)
{
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(req->mon->srv->server_id));
    json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    return o;
}

/* The "subs" parameter these endpoints take: a boolean or "detail". */
static bool
subs_ok(nd_mon_req_t *req)
{
    const char *v = nd_mon_param(req, "subs");
    if (v != NULL && strcmp(v, "detail") == 0)
        return true;
    bool b;
    return nd_mon_param_bool(req, "subs", &b);
}

/* One gateway connection, as nats-server's RemoteGatewayz (its ConnInfo subset). */
static json_t *
gw_entry(const nd_mon_req_t *req, const nd_gw_stat_t *g)
{
    char buf[48];
    json_t *e = json_object();
    json_object_set_new(e, "configured", json_boolean(g->configured));
    json_t *c = json_object();
    json_object_set_new(c, "cid", json_integer((json_int_t)g->cid));
    json_object_set_new(c, "kind", json_string("Gateway"));
    json_object_set_new(c, "ip", json_string(g->ip));
    json_object_set_new(c, "port", json_integer(g->port));
    json_object_set_new(c, "start", nd_mon_json_time(g->start_wall_ns));
    int64_t last = g->last_ns > 0 ? g->last_ns : g->start_wall_ns;
    json_object_set_new(c, "last_activity", nd_mon_json_time(last));
    if (g->rtt_ns > 0) {
        nd_mon_fmt_duration(g->rtt_ns, buf);
        json_object_set_new(c, "rtt", json_string(buf));
    }
    nd_mon_fmt_uptime(req->now_ns - g->start_wall_ns, buf);
    json_object_set_new(c, "uptime", json_string(buf));
    nd_mon_fmt_uptime(req->now_ns - last, buf);
    json_object_set_new(c, "idle", json_string(buf));
    json_object_set_new(c, "pending_bytes", json_integer(g->pending));
    json_object_set_new(c, "in_msgs", json_integer((json_int_t)g->in_msgs));
    json_object_set_new(c, "out_msgs", json_integer((json_int_t)g->out_msgs));
    json_object_set_new(c, "in_bytes", json_integer((json_int_t)g->in_bytes));
    json_object_set_new(c, "out_bytes", json_integer((json_int_t)g->out_bytes));
    json_object_set_new(c, "subscriptions", json_integer(g->subs));
    json_object_set_new(c, "name", json_string(g->remote_id));
    json_object_set_new(e, "connection", c);
    return e;
}

void
nd_mon_gatewayz(nd_mon_req_t *req)
{
    bool b = false;
    if (!nd_mon_param_bool(req, "accs", &b) || !subs_ok(req))
        return;
    json_t *o = head(req);
    nd_server_t *s = req->mon->srv;
    json_t *out = json_object(), *in = json_object();
    if (s->gateways != NULL) {
        /* nats-server omits name, host and port (omitempty) while no gateway is configured. */
        json_object_set_new(o, "name", json_string(nd_gateways_name(s->gateways)));
        json_object_set_new(o, "host", json_string(nd_gateways_host(s->gateways)));
        json_object_set_new(o, "port", json_integer(nd_gateways_port(s->gateways)));
        const char *only = nd_mon_param(req, "gw_name");
        nd_gw_stat_t *gs = NULL;
        size_t n = nd_gateways_stats(s->gateways, &gs);
        const char *acc_name = nd_mon_param(req, "acc_name");
        for (size_t i = 0; i < n; i++) {
            nd_gw_stat_t *g = &gs[i];
            if (g->cid != 0 && (only == NULL || only[0] == '\0' || strcmp(only, g->name) == 0)) {
                /* (an outbound not connected is not listed: nats-server lists connections) */
                json_t *e = gw_entry(req, g);
                if ((b || (acc_name != NULL && acc_name[0] != '\0')) && g->accounts != NULL &&
                    json_array_size(g->accounts) > 0) {
                    json_t *accs = json_array();
                    size_t k;
                    json_t *a;
                    json_array_foreach(g->accounts, k, a)
                    {
                        const char *an = json_string_value(json_object_get(a, "name"));
                        if (acc_name == NULL || acc_name[0] == '\0' ||
                            (an != NULL && strcmp(an, acc_name) == 0))
                            json_array_append(accs, a);
                    }
                    json_object_set_new(e, "accounts", accs);
                }
                if (g->outbound) {
                    json_object_set_new(out, g->name, e);
                } else {
                    json_t *arr = json_object_get(in, g->name);
                    if (arr == NULL) {
                        arr = json_array();
                        json_object_set_new(in, g->name, arr);
                    }
                    json_array_append_new(arr, e);
                }
            }
            if (g->accounts != NULL)
                json_decref(g->accounts);
        }
        nd_free(gs);
    }
    json_object_set_new(o, "outbound_gateways", out);
    json_object_set_new(o, "inbound_gateways", in);
    nd_mon_reply_json(req, 200, o);
}

/* /leafz: the registered leaf connections in nats-server 2.9's LeafInfo shape; subs=1 asks each
 * connection for its subscriptions (the peer's interest, its $LDS. subject included), as
 * /routez does. */
typedef struct leafz_state {
    nd_leaf_stat_t *ls;
    size_t n;
    bool subs;
} leafz_state_t;

static void
leafz_state_free(void *p)
{
    leafz_state_t *st = p;
    nd_free(st->ls);
    nd_free(st);
}

static void
leafz_finish(nd_mon_req_t *req)
{
    leafz_state_t *st = req->state;
    json_t *o = head(req);
    size_t n = st->n;
    nd_leaf_stat_t *ls = st->ls;
    json_object_set_new(o, "leafnodes", json_integer((json_int_t)n));
    if (n == 0) {
        json_object_set_new(o, "leafs", json_null()); /* nats-server's nil slice */
    } else {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_object();
            json_object_set_new(e, "account", json_string(ls[i].account));
            json_object_set_new(e, "ip", json_string(ls[i].ip));
            json_object_set_new(e, "port", json_integer(ls[i].port));
            if (ls[i].rtt_ns > 0) {
                char buf[48];
                nd_mon_fmt_duration(ls[i].rtt_ns, buf);
                json_object_set_new(e, "rtt", json_string(buf));
            }
            json_object_set_new(e, "in_msgs", json_integer((json_int_t)ls[i].in_msgs));
            json_object_set_new(e, "out_msgs", json_integer((json_int_t)ls[i].out_msgs));
            json_object_set_new(e, "in_bytes", json_integer((json_int_t)ls[i].in_bytes));
            json_object_set_new(e, "out_bytes", json_integer((json_int_t)ls[i].out_bytes));
            json_object_set_new(e, "subscriptions", json_integer(ls[i].subs));
            const nd_conn_info_t *ci = i < req->nconns ? req->conns[i] : NULL;
            if (st->subs && ci != NULL && ci->nsubs > 0) {
                json_t *a = json_array();
                for (size_t k = 0; k < ci->nsubs; k++)
                    json_array_append_new(a, json_string(ci->subs[k].subject));
                json_object_set_new(e, "subscriptions_list", a);
            }
            json_array_append_new(arr, e);
        }
        json_object_set_new(o, "leafs", arr);
    }
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_leafz(nd_mon_req_t *req)
{
    if (!subs_ok(req))
        return;
    const char *v = nd_mon_param(req, "subs");
    bool b = false;
    bool subs =
        v != NULL && (strcmp(v, "detail") == 0 || (nd_mon_param_bool(req, "subs", &b) && b));
    nd_server_t *s = req->mon->srv;
    leafz_state_t *st = nd_new(leafz_state_t);
    st->subs = subs;
    req->state = st;
    req->state_free = leafz_state_free;
    req->finish = leafz_finish;
    if (s->leafs != NULL)
        st->n = nd_leafs_stats(s->leafs, &st->ls, subs ? &req->conns : NULL);
    if (subs && st->n > 0) {
        req->nconns = st->n;
        req->need_subs = true;
        return; /* leafz_finish runs once the connections answered */
    }
    leafz_finish(req);
}

/* /accountz: the accounts of the authorization snapshot in force ($G first, then in the order
 * they were declared) and the system account; with acc=<name>, that account's figures. */
void
nd_mon_accountz(nd_mon_req_t *req)
{
    const char *acc = nd_mon_param(req, "acc");
    nd_server_t *srv = req->mon->srv;
    const char *sys = nd_opts_system_account(&srv->opts);
    json_t *o = head(req);
    if (sys != NULL) /* omitted without one, as nats-server does (omitempty) */
        json_object_set_new(o, "system_account", json_string(sys));
    nd_auth_t *a = srv->auth != NULL ? nd_auth_slot_get(srv->auth) : NULL;
    if (acc == NULL || *acc == '\0') {
        json_t *l = json_array();
        for (size_t i = 0; a != NULL && i < a->naccts; i++)
            if (a->accts[i].acct != NULL)
                json_array_append_new(l, json_string(a->accts[i].name));
        if (a == NULL)
            json_array_append_new(l, json_string("$G"));
        nd_auth_unref(req->ctx, a);
        json_object_set_new(o, "accounts", l);
        nd_mon_reply_json(req, 200, o);
        return;
    }
    nd_acct_t *found = NULL;
    for (size_t i = 0; a != NULL && i < a->naccts && found == NULL; i++)
        if (a->accts[i].acct != NULL && strcmp(a->accts[i].name, acc) == 0)
            found = a->accts[i].acct;
    if (found == NULL && strcmp(acc, "$G") != 0) {
        nd_auth_unref(req->ctx, a);
        json_decref(o);
        nd_mon_reply_text(req, 400, "Account %.200s does not exist", acc);
        return;
    }
    int64_t conns;
    uint64_t subs;
    if (strcmp(acc, "$G") == 0) {
        nd_connreg_totals_t t;
        nd_connreg_totals(srv->connreg, &t);
        conns = t.live;
        subs = t.live_subs;
    } else {
        conns = atomic_load_explicit(&found->conns, memory_order_relaxed);
        subs = nd_sl_count(nd_acct_sublist(found));
    }
    nd_auth_unref(req->ctx, a);
    json_t *d = json_object();
    json_object_set_new(d, "account_name", json_string(acc));
    json_object_set_new(d, "update_time", nd_mon_json_time(srv->start_wall_ns));
    json_object_set_new(d, "is_system", json_boolean(sys != NULL && strcmp(sys, acc) == 0));
    json_object_set_new(d, "expired", json_false());
    json_object_set_new(d, "complete", json_true());
    json_object_set_new(d, "jetstream_enabled", json_false());
    json_object_set_new(d, "leafnode_connections", json_integer(0));
    json_object_set_new(d, "client_connections", json_integer((json_int_t)conns));
    json_object_set_new(d, "subscriptions", json_integer((json_int_t)subs));
    json_object_set_new(o, "account_detail", d);
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_accstatz(nd_mon_req_t *req)
{
    bool unused = false;
    if (!nd_mon_param_bool(req, "unused", &unused))
        return;
    nd_connreg_totals_t t;
    nd_connreg_totals(req->mon->srv->connreg, &t);
    json_t *o = head(req);
    json_t *a = json_array();
    if (t.live > 0 || unused) {
        json_t *s = json_object();
        json_object_set_new(s, "acc", json_string("$G"));
        json_object_set_new(s, "name", json_string("$G"));
        json_object_set_new(s, "conns", json_integer(t.live));
        json_object_set_new(s, "leafnodes", json_integer(0));
        json_object_set_new(s, "total_conns", json_integer(t.live));
        json_object_set_new(s, "num_subscriptions", json_integer((json_int_t)t.live_subs));
        json_t *sent = json_object(), *recv = json_object();
        json_object_set_new(sent, "msgs", json_integer((json_int_t)t.out_msgs));
        json_object_set_new(sent, "bytes", json_integer((json_int_t)t.out_bytes));
        json_object_set_new(recv, "msgs", json_integer((json_int_t)t.in_msgs));
        json_object_set_new(recv, "bytes", json_integer((json_int_t)t.in_bytes));
        json_object_set_new(s, "sent", sent);
        json_object_set_new(s, "received", recv);
        json_object_set_new(s, "slow_consumers", json_integer((json_int_t)t.slow_consumers));
        json_array_append_new(a, s);
    }
    json_object_set_new(o, "account_statz", a);
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_index(nd_mon_req_t *req)
{
    static const struct {
        const char *path, *title;
    } links[] = {
        {"varz", "General"},
        {"jsz", "JetStream"},
        {"connz", "Connections"},
        {"accountz", "Accounts"},
        {"accstatz", "Account Stats"},
        {"subsz", "Subscriptions"},
        {"routez", "Routes"},
        {"leafz", "LeafNodes"},
        {"gatewayz", "Gateways"},
        {"healthz", "Health Probe"},
        {"metrics", "Prometheus Metrics"},
    };
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "<html lang=\"en\">\n<head><title>natsd monitoring</title></head>\n"
                                "<body>\n<h1>natsd %s (nats-server v%s compatible)</h1>\n",
                                NATSD_VERSION, NATSD_COMPAT_VERSION);
    for (size_t i = 0; i < sizeof links / sizeof links[0] && n < sizeof buf; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "<a href=./%s>%s</a><br/>\n", links[i].path,
                              links[i].title);
    if (n < sizeof buf)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "</body>\n</html>\n");
    nd_free(req->body);
    req->body = nd_xstrdup(buf);
    req->body_len = strlen(buf);
    req->ctype = "text/html; charset=utf-8";
    req->status = 200;
}
