/* Unit tests of src/mon's formats (Go's time and duration strings, nats-server's uptime), Go-style
 * parameter decoding, and the connection registry's closed ring and totals. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "net/connreg.h"
#include "mon/mon_int.h"
#include "actors/alloc.h"

static const char *
dur(int64_t ns)
{
    static char buf[48];
    nd_mon_fmt_duration(ns, buf);
    return buf;
}

static const char *
up(int64_t s)
{
    static char buf[48];
    nd_mon_fmt_uptime(s * 1000000000LL, buf);
    return buf;
}

Test(mon, duration_like_go)
{
    cr_assert_str_eq(dur(0), "0s");
    cr_assert_str_eq(dur(850), "850ns");
    cr_assert_str_eq(dur(1500), "1.5\xc2\xb5s");
    cr_assert_str_eq(dur(1430383), "1.430383ms");
    cr_assert_str_eq(dur(2000000), "2ms");
    cr_assert_str_eq(dur(2500000000LL), "2.5s");
    cr_assert_str_eq(dur(65000000000LL), "1m5s");
    cr_assert_str_eq(dur(3605000000000LL), "1h0m5s");
    cr_assert_str_eq(dur(-1500), "-1.5\xc2\xb5s");
}

Test(mon, uptime_like_nats_server)
{
    cr_assert_str_eq(up(0), "0s");
    cr_assert_str_eq(up(59), "59s");
    cr_assert_str_eq(up(65), "1m5s");
    cr_assert_str_eq(up(3600), "1h0m0s");
    cr_assert_str_eq(up(86400 + 5), "1d0h0m5s");
    cr_assert_str_eq(up(366LL * 86400), "1y1d0h0m0s");
}

Test(mon, time_rfc3339_nano)
{
    char buf[48];
    nd_mon_fmt_time(0, buf);
    cr_assert_str_eq(buf, "1970-01-01T00:00:00Z");
    nd_mon_fmt_time(1500000000LL, buf);
    cr_assert_str_eq(buf, "1970-01-01T00:00:01.5Z");
    nd_mon_fmt_time(1795960792931104147LL, buf);
    cr_assert_str_eq(buf, "2026-11-29T13:59:52.931104147Z");
}

Test(mon, parse_bool_like_go)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    bool b;
    for (int i = 0; i < 6; i++) {
        cr_assert(nd_mon_parse_bool(yes[i], &b) && b);
        cr_assert(nd_mon_parse_bool(no[i], &b) && !b);
    }
    cr_assert(!nd_mon_parse_bool("yes", &b));
    cr_assert(!nd_mon_parse_bool("tRUE", &b));
    cr_assert(!nd_mon_parse_bool("", &b));
}

static void
req_with(nd_mon_req_t *req, const char *key, const char *val)
{
    memset(req, 0, sizeof(*req));
    req->params = nd_xmalloc(sizeof(*req->params));
    req->params[0].key = nd_xstrdup(key);
    req->params[0].val = nd_xstrdup(val);
    req->nparams = 1;
}

static void
req_free(nd_mon_req_t *req)
{
    nd_free(req->params[0].key);
    nd_free(req->params[0].val);
    nd_free(req->params);
    nd_free(req->body);
}

Test(mon, params_like_strconv)
{
    nd_mon_req_t req;
    int64_t i = 7;
    req_with(&req, "limit", "-9223372036854775808");
    cr_assert(nd_mon_param_int(&req, "limit", &i));
    cr_assert_eq(i, INT64_MIN);
    req_free(&req);
    req_with(&req, "limit", "9223372036854775808");
    cr_assert(!nd_mon_param_int(&req, "limit", &i));
    cr_assert_eq(req.status, 400);
    cr_assert_str_eq(req.body, "Error decoding int for 'limit': strconv.Atoi: parsing "
                               "\"9223372036854775808\": value out of range");
    req_free(&req);
    req_with(&req, "limit", "+5");
    cr_assert(nd_mon_param_int(&req, "limit", &i));
    cr_assert_eq(i, 5);
    req_free(&req);
    uint64_t u = 0;
    req_with(&req, "cid", "18446744073709551615");
    cr_assert(nd_mon_param_uint(&req, "cid", &u));
    cr_assert_eq(u, UINT64_MAX);
    req_free(&req);
    req_with(&req, "cid", "18446744073709551616");
    cr_assert(!nd_mon_param_uint(&req, "cid", &u));
    req_free(&req);
    req_with(&req, "cid", "+1");
    cr_assert(!nd_mon_param_uint(&req, "cid", &u));
    req_free(&req);
    /* Absent: untouched. */
    req_with(&req, "other", "x");
    i = 42;
    cr_assert(nd_mon_param_int(&req, "limit", &i));
    cr_assert_eq(i, 42);
    req_free(&req);
}

/* A stand-in for a connection: the registry learns its identity through the ident function. */
typedef struct fake_conn {
    nd_mon_conn_t mon;
    uint64_t cid;
} fake_conn_t;

static nd_actor_t *
fake_ident(const nd_mon_conn_t *mc, nd_conn_info_t *ci)
{
    const fake_conn_t *f = (const fake_conn_t *)mc;
    ci->cid = f->cid;
    snprintf(ci->ip, sizeof ci->ip, "127.0.0.1");
    ci->port = 1000 + (int)f->cid;
    return NULL;
}

/* Closed connections: the ring keeps the newest max_closed, oldest first; totals add up. */
Test(mon, closed_ring_and_totals)
{
    nd_connreg_t *r = nd_connreg_new(2, fake_ident);
    fake_conn_t fc[3];
    memset(fc, 0, sizeof fc);
    nd_mon_conn_t *mc[3] = {&fc[0].mon, &fc[1].mon, &fc[2].mon};
    for (int i = 0; i < 3; i++) {
        fc[i].cid = (uint64_t)i + 1;
        nd_connreg_add(r, mc[i]);
        nd_connreg_publish(mc[i], 1, 10, 2, 20, 0);
        nd_connreg_set_meta(r, mc[i], "n", NULL, "v");
    }
    nd_connreg_set_user(r, mc[1], "bob", "ACC");
    nd_connreg_totals_t t;
    nd_connreg_totals(r, &t);
    cr_assert_eq(t.live, 3);
    cr_assert_eq(t.total_conns, 3);
    cr_assert_eq(t.in_msgs, 3);
    cr_assert_eq(t.out_bytes, 60);
    for (int i = 0; i < 3; i++)
        nd_connreg_remove(r, mc[i], i == 1 ? "Slow Consumer (Pending Bytes)" : "Client Closed",
                          i == 1, NULL, 0);
    nd_connreg_totals(r, &t);
    cr_assert_eq(t.live, 0);
    cr_assert_eq(t.in_msgs, 3);
    cr_assert_eq(t.out_bytes, 60);
    cr_assert_eq(t.slow_consumers, 1);
    nd_conn_info_t **closed = NULL;
    size_t n = nd_connreg_closed(r, 0, &closed);
    cr_assert_eq(n, 2);
    cr_assert_eq(closed[0]->cid, 2);
    cr_assert_str_eq(closed[0]->reason, "Slow Consumer (Pending Bytes)");
    cr_assert_str_eq(closed[0]->name, "n");
    cr_assert_null(closed[0]->lang);
    cr_assert_str_eq(closed[0]->user, "bob");
    cr_assert_str_eq(closed[0]->account, "ACC");
    cr_assert_null(closed[1]->user);
    cr_assert_eq(closed[1]->cid, 3);
    cr_assert_eq(closed[1]->port, 1003);
    cr_assert_str_eq(closed[1]->version, "v");
    cr_assert_neq(closed[1]->stop_ns, 0);
    nd_connreg_release_all(NULL, closed, n); /* closed infos hold no actor: no ctx needed */
    n = nd_connreg_closed(r, 3, &closed);
    cr_assert_eq(n, 1);
    nd_connreg_release_all(NULL, closed, n);
    nd_connreg_free(r);
}
