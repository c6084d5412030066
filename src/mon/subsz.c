/* /subsz (alias /subscriptionsz): subscription statistics and, with subs=1 or test=<subject>,
 * the subscriptions themselves (offset/limit pages, test keeps those whose subject matches the
 * literal test subject). The lists are gathered from the connection actors (see http.c) and
 * sorted by cid then sid so that pages are stable.
 *
 * The statistics are the accounts' sublists' (nd_sl_stats_add), summed over every account or
 * those of acc=<name>, as nats-server's SublistStats: inserts, removes, matches (every subject
 * looked up: trie walks plus the lookups a connection's cache answered), cache_hit_rate (those
 * cache answers over matches), and the fanout (subscriptions plus queue groups a lookup found),
 * which natsd measures over its walks since its caches are private to their connections.
 * num_cache is 0 for the same reason: natsd has no shared cache to count. Without a list the
 * answer is the statistics alone, as nats-server prints them.
 */
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "auth/auth.h"
#include "subj/account.h"
#include "subj/subject.h"

typedef struct subsz_state {
    bool list;
    int64_t offset, limit;
    char *test;  /* owned, or NULL */
    char *acc;   /* owned, or NULL: every account */
    bool no_acc; /* acc names an account natsd does not have */
} subsz_state_t;

static void
state_free(void *p)
{
    subsz_state_t *st = p;
    if (st != NULL) {
        nd_free(st->test);
        nd_free(st->acc);
    }
    nd_free(st);
}

typedef struct entry {
    const nd_sub_info_t *si;
    uint64_t cid;
} entry_t;

static int
cmp_entry(const void *pa, const void *pb)
{
    const entry_t *a = pa, *b = pb;
    if (a->cid != b->cid)
        return a->cid < b->cid ? -1 : 1;
    size_t la = strlen(a->si->sid), lb = strlen(b->si->sid);
    if (la != lb) /* numeric sids sort numerically */
        return la < lb ? -1 : 1;
    return strcmp(a->si->sid, b->si->sid);
}

/* The sublists' statistics: every account's, or the one named acc (none: zeros). */
static void
sl_stats(nd_mon_req_t *req, const char *acc, nd_sl_stats_t *st)
{
    memset(st, 0, sizeof *st);
    nd_server_t *s = req->mon->srv;
    nd_auth_t *a = s->auth != NULL ? nd_auth_slot_get(s->auth) : NULL;
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->naccts; i++) {
        nd_acct_t *acct = a->accts[i].acct;
        if (acct != NULL && (acc == NULL || strcmp(nd_acct_name(acct), acc) == 0))
            nd_sl_stats_add(nd_acct_sublist(acct), st);
    }
    nd_auth_unref(req->ctx, a);
}

static void
finish(nd_mon_req_t *req)
{
    subsz_state_t *st = req->state;
    nd_sl_stats_t ss;
    sl_stats(req, st->acc, &ss);
    json_t *o = json_object();
    if (st->list) {
        json_object_set_new(o, "server_id", json_string(req->mon->srv->server_id));
        json_object_set_new(o, "now", nd_mon_json_time(req->now_ns));
    }
    json_object_set_new(o, "num_subscriptions", json_integer((json_int_t)ss.count));
    json_object_set_new(o, "num_cache", json_integer(0));
    json_object_set_new(o, "num_inserts", json_integer((json_int_t)ss.inserts));
    json_object_set_new(o, "num_removes", json_integer((json_int_t)ss.removes));
    json_object_set_new(o, "num_matches", json_integer((json_int_t)ss.matches));
    json_object_set_new(
        o, "cache_hit_rate",
        nd_mon_json_float(ss.matches > 0 ? (double)ss.cache_hits / (double)ss.matches : 0));
    json_object_set_new(o, "max_fanout", json_integer((json_int_t)ss.fanout_max));
    json_object_set_new(
        o, "avg_fanout",
        nd_mon_json_float(ss.walks > 0 ? (double)ss.fanout_sum / (double)ss.walks : 0));
    if (!st->list) {
        nd_mon_reply_json(req, 200, o);
        return;
    }
    size_t total = 0;
    entry_t *es = NULL;
    if (st->list && !st->no_acc) {
        size_t cap = 0;
        for (size_t i = 0; i < req->nconns; i++) {
            const nd_conn_info_t *ci = req->conns[i];
            for (size_t k = 0; ci->subs_known && k < ci->nsubs; k++) {
                const nd_sub_info_t *si = &ci->subs[k];
                if (st->test != NULL &&
                    !nd_subj_match(si->subject, strlen(si->subject), st->test, strlen(st->test)))
                    continue;
                if (total == cap) {
                    cap = nd_grow_cap(cap, total + 1, 64);
                    es = nd_xrealloc(es, cap * sizeof(*es));
                }
                es[total].si = si;
                es[total].cid = ci->cid;
                total++;
            }
        }
        if (total > 0)
            qsort(es, total, sizeof(*es), cmp_entry);
    }
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "offset", json_integer(st->offset));
    json_object_set_new(o, "limit", json_integer(st->limit));
    json_t *a = json_array();
    for (size_t i = (size_t)st->offset, k = 0; i < total && k < (uint64_t)st->limit; i++, k++)
        json_array_append_new(a, nd_mon_sub_detail(es[i].si, es[i].cid, true));
    json_object_set_new(o, "subscriptions_list", a);
    nd_free(es);
    nd_mon_reply_json(req, 200, o);
}

void
nd_mon_subsz(nd_mon_req_t *req)
{
    subsz_state_t *st = nd_new(subsz_state_t);
    req->state = st;
    req->state_free = state_free;
    int64_t offset = 0, limit = 0;
    if (!nd_mon_param_bool(req, "subs", &st->list) || !nd_mon_param_int(req, "offset", &offset) ||
        !nd_mon_param_int(req, "limit", &limit))
        return;
    const char *test = nd_mon_param(req, "test");
    if (test != NULL && *test != '\0') {
        if (!nd_subj_valid_pub(test, strlen(test))) {
            nd_mon_reply_text(req, 400,
                              "invalid test subject, must be valid publish subject: %.200s", test);
            return;
        }
        st->test = nd_xstrdup(test);
        st->list = true;
    }
    const char *acc = nd_mon_param(req, "acc");
    st->no_acc = acc != NULL && *acc && strcmp(acc, "$G") != 0;
    if (acc != NULL && *acc)
        st->acc = nd_xstrdup(acc);
    st->offset = offset < 0 ? 0 : offset;
    st->limit = limit <= 0 ? 1024 : limit;
    req->finish = finish;
    if (st->list && !st->no_acc) {
        req->nconns = nd_connreg_live(req->mon->srv->connreg, 0, &req->conns);
        req->need_subs = req->nconns > 0;
    }
    if (!req->need_subs)
        finish(req);
}
