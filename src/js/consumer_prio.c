/* Priority groups of pull consumers (nats-server 2.11, ADR-42), one group per consumer as 2.11
 * has it (priority_groups[0]):
 *
 *   overflow       a request with min_pending / min_ack_pending only gets messages while the
 *                  consumer has at least that many pending (not yet delivered, this one
 *                  included) / awaiting acks; until then it waits and others go first.
 *   pinned_client  the first request without an "id" that is given a message pins the group:
 *                  the consumer makes up a pin id, sends it as the Nats-Pin-Id header of every
 *                  delivery, and from then on serves only requests that present it. Requests
 *                  without an id wait; those with another id are refused (423). The pin lasts
 *                  priority_timeout after it was given or last presented, or until
 *                  CONSUMER.UNPIN; each change is announced (PINNED, UNPINNED advisories).
 *
 * The request checks (400 texts, 423 Nats-Pin-Id mismatch) are those of processNextMsgRequest;
 * the choice of a waiting request is nextWaiting's, with consumer.c's scan standing in for its
 * cycling (requests passed by keep their place). As in 2.11, an admin unpin leaves the TTL
 * running: it later announces a "timeout" unpin of its own unless a new pin restarted it, and
 * pinned_ts is never cleared.
 *
 * References: nats-server server/consumer.go (processNextMsgRequest, nextWaiting,
 * setPinnedTimer, sendPinnedAdvisoryLocked, sendUnpinnedAdvisoryLocked, PriorityGroupState),
 * jetstream_api.go (jsConsumerUnpinRequest), jetstream_events.go (the advisories).
 */
#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/consumer_int.h"
#include "js/jsreq.h"
#include "subj/account.h"
#include "util/evid.h"

static void
status(nd_ctx_t *ctx, nd_consumer_t *c, const char *to, const char *text)
{
    char hdr[160];
    size_t n = js_status_hdr(hdr, sizeof hdr, text, NULL);
    if (n > 0)
        nd_iclient_publish(ctx, c->ic, to, NULL, hdr, n, NULL, 0);
}

static const char *
group0(const nd_consumer_t *c)
{
    return c->cfg.npriority_groups > 0 ? c->cfg.priority_groups[0] : "";
}

/* The advisory's head: type, id, timestamp, account, stream, consumer, domain (the order of
 * JSConsumerGroupPinnedAdvisory / JSConsumerGroupUnpinnedAdvisory). */
static json_t *
group_event(nd_ctx_t *ctx, nd_consumer_t *c, const char *type)
{
    json_t *ev = js_consumer_event_new(ctx, type);
    json_object_set_new(ev, "account", json_string(nd_acct_name(c->st->jsa->acct)));
    json_object_set_new(ev, "stream", json_string(c->st->name));
    json_object_set_new(ev, "consumer", json_string(c->name));
    js_consumer_event_domain(c, ev);
    json_object_set_new(ev, "group", json_string(group0(c)));
    return ev;
}

static void
advise_pinned(nd_ctx_t *ctx, nd_consumer_t *c)
{
    json_t *ev = group_event(ctx, c, "io.nats.jetstream.advisory.v1.consumer_group_pinned");
    json_object_set_new(ev, "pinned_id", json_string(c->pin_id));
    char *subj = js_path("$JS.EVENT.ADVISORY.CONSUMER.PINNED.%s.%s", c->st->name, c->name);
    js_consumer_event_send(ctx, c, subj, ev);
    nd_free(subj);
}

static void
advise_unpinned(nd_ctx_t *ctx, nd_consumer_t *c, const char *reason)
{
    json_t *ev = group_event(ctx, c, "io.nats.jetstream.advisory.v1.consumer_group_unpinned");
    json_object_set_new(ev, "reason", json_string(reason));
    char *subj = js_path("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.%s.%s", c->st->name, c->name);
    js_consumer_event_send(ctx, c, subj, ev);
    nd_free(subj);
}

static bool
has_group(const nd_consumer_t *c, const char *g)
{
    for (size_t i = 0; i < c->cfg.npriority_groups; i++)
        if (strcmp(c->cfg.priority_groups[i], g) == 0)
            return true;
    return false;
}

/* nats-server's validGroupName: [a-zA-Z0-9/_=-]{1,16}. */
static bool
valid_group_name(const char *g)
{
    size_t n = strlen(g);
    if (n == 0 || n > 16)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = g[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '/' || ch == '_' || ch == '=' || ch == '-'))
            return false;
    }
    return true;
}

bool
js_prio_check_request(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply, const char *body,
                      size_t len, const js_pull_req_t *r, js_wreq_t *w)
{
    /* Only a JSON request carries a priority group (maybe an empty one). */
    while (len > 0 && (*body == ' ' || *body == '\t' || *body == '\r' || *body == '\n')) {
        body++;
        len--;
    }
    if (len == 0 || *body != '{')
        return true;
    w->pg = true;
    w->min_pending = r->min_pending;
    w->min_ack_pending = r->min_ack_pending;
    memcpy(w->id, r->id, sizeof w->id);
    w->id_long = r->id_long;
    nd_priority_policy_t pol = c->cfg.priority_policy;
    /* these two only warn: the request goes on (as in 2.11) */
    if ((r->min_pending != 0 || r->min_ack_pending != 0) && pol != ND_PRIO_OVERFLOW)
        status(ctx, c, reply, "400 Bad Request - Not a Overflow Priority consumer");
    if (r->id[0] != '\0' && pol != ND_PRIO_PINNED)
        status(ctx, c, reply, "400 Bad Request - Not a Pinned Client Priority consumer");
    if (pol == ND_PRIO_NONE)
        return true;
    if (r->group[0] == '\0') {
        status(ctx, c, reply, "400 Bad Request - Priority Group missing");
        return false;
    }
    if (r->group_long || !has_group(c, r->group)) {
        status(ctx, c, reply, "400 Bad Request - Invalid Priority Group");
        return false;
    }
    if (c->pin_id[0] != '\0') {
        if (!r->id_long && strcmp(r->id, c->pin_id) == 0) {
            c->pin_deadline = js_now() + c->cfg.priority_timeout_ns; /* the pin lives on */
        } else if (r->id[0] != '\0') {
            status(ctx, c, reply, "423 Nats-Pin-Id mismatch");
            return false;
        }
    }
    return true;
}

bool
js_prio_need_pin(const nd_consumer_t *c)
{
    return c->cfg.priority_policy == ND_PRIO_PINNED && c->pin_id[0] == '\0';
}

static bool
presents_pin(const js_wreq_t *w, const nd_consumer_t *c)
{
    return !w->id_long && w->id[0] != '\0' && strcmp(w->id, c->pin_id) == 0;
}

js_prio_verdict_t
js_prio_admit(nd_ctx_t *ctx, nd_consumer_t *c, js_wreq_t *w, bool need_pin, uint64_t pending,
              int64_t now)
{
    if (c->cfg.priority_policy == ND_PRIO_PINNED) {
        if (need_pin && c->pin_id[0] == '\0') {
            if (w->id[0] != '\0') {
                /* an old pin id, most likely: refused, the client asks again without it */
                static const char wrong[] = "NATS/1.0 423 Nats-Wrong-Pin-Id\r\n\r\n";
                nd_iclient_publish(ctx, c->ic, w->reply, NULL, wrong, sizeof wrong - 1, NULL, 0);
                return JS_PRIO_DROP;
            }
            /* pin only a requester that is still there (nextWaiting's interest check) */
            if (!nd_iclient_has_interest(ctx, c->ic, w->reply))
                return JS_PRIO_DROP;
            nd_event_id(ctx, c->pin_id);
            c->pin_ts = now;
            c->pin_deadline = now + c->cfg.priority_timeout_ns;
            snprintf(w->id, sizeof w->id, "%s", c->pin_id);
            w->id_long = false;
            advise_pinned(ctx, c);
            return JS_PRIO_TAKE;
        }
        if (c->pin_id[0] != '\0' && !presents_pin(w, c)) {
            if (w->id[0] == '\0')
                return JS_PRIO_SKIP; /* waits for the pin to go */
            static const char wrong[] = "NATS/1.0 423 Nats-Wrong-Pin-Id\r\n\r\n";
            nd_iclient_publish(ctx, c->ic, w->reply, NULL, wrong, sizeof wrong - 1, NULL, 0);
            return JS_PRIO_DROP;
        }
    }
    if (c->cfg.priority_policy == ND_PRIO_OVERFLOW && w->pg) {
        if ((w->min_pending > 0 && (uint64_t)w->min_pending > pending) ||
            (w->min_ack_pending > 0 && w->min_ack_pending > (int64_t)c->plive))
            return JS_PRIO_SKIP;
    }
    return JS_PRIO_TAKE;
}

size_t
js_prio_hdr(const nd_consumer_t *c, char *buf, size_t room)
{
    if (c->cfg.priority_policy != ND_PRIO_PINNED || c->pin_id[0] == '\0')
        return 0;
    int n = snprintf(buf, room, "Nats-Pin-Id: %s\r\n", c->pin_id);
    return n > 0 && (size_t)n < room ? (size_t)n : 0;
}

void
js_prio_timer(nd_ctx_t *ctx, nd_consumer_t *c, int64_t now)
{
    if (c->pin_deadline == 0 || now < c->pin_deadline)
        return;
    c->pin_deadline = 0;
    c->pin_id[0] = '\0';
    advise_unpinned(ctx, c, "timeout");
}

void
js_prio_unpin_request(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m)
{
    static const js_rfield_t f[] = {{"group", JS_RT_STR}};
    const char *what = "consumer_unpin_response";
    js_audit_req_t audit;
    js_audit_view(&audit, m);
    js_audit_begin(&audit);
    nd_jserr_t err;
    js_req_t q;
    bool blank = true;
    for (size_t i = 0; i < m->data_len && blank; i++)
        blank = m->data[i] == ' ' || m->data[i] == '\t' || m->data[i] == '\r' ||
                m->data[i] == '\n';
    if (blank) {
        /* Go's json.Unmarshal of nothing */
        nd_jserr_setf(&err, ND_JSE_INVALID_JSON, "unexpected end of JSON input");
        js_send_error(ctx, c->ic, m->reply, what, &err);
        js_audit_end();
        return;
    }
    if (!js_req_decode(m->data, m->data_len, false, "JSApiConsumerUnpinRequest", f, 1, &q,
                       &err)) {
        js_send_error(ctx, c->ic, m->reply, what, &err);
        js_audit_end();
        return;
    }
    const char *g = q.v[0].set ? q.v[0].s : "";
    if (g[0] == '\0')
        nd_jserr_setf(&err, ND_JSE_INVALID_JSON, "consumer group not specified");
    else if (!valid_group_name(g))
        nd_jserr_set(&err, ND_JSE_CONSUMER_INVALID_GROUP_NAME, NULL);
    else if (!has_group(c, g))
        nd_jserr_set(&err, ND_JSE_CONSUMER_INVALID_PRIORITY_GROUP, NULL);
    else
        err.e = ND_JSE_NONE;
    if (err.e != ND_JSE_NONE) {
        js_send_error(ctx, c->ic, m->reply, what, &err);
    } else {
        /* the advisory even when nothing was pinned, as 2.11 */
        c->pin_id[0] = '\0';
        advise_unpinned(ctx, c, "admin");
        js_send(ctx, c->ic, m->reply, js_resp(what));
    }
    js_req_free(&q);
    js_audit_end();
}

void
js_prio_info(json_t *info, const json_t *cfg, const js_consumer_stats_t *s)
{
    const json_t *groups = json_object_get(cfg, "priority_groups");
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return;
    json_t *g = json_object();
    json_object_set(g, "group", json_array_get(groups, 0));
    if (s->pin_id[0] != '\0')
        json_object_set_new(g, "pinned_client_id", json_string(s->pin_id));
    json_object_set_new(g, "pinned_ts", js_time(s->pin_ts));
    json_t *a = json_array();
    json_array_append_new(a, g);
    json_object_set_new(info, "priority_groups", a);
}
