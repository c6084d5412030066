/* Pausing a consumer (nats-server 2.11): the config's pause_until stops deliveries until then
 * (pull requests still queue and expire; consumer.c's deliver() reads cfg.pause_until_ns), and
 * $JS.API.CONSUMER.PAUSE.<stream>.<consumer> {"pause_until": RFC 3339} sets or clears it on a
 * running consumer (an empty body, no pause_until or Go's zero time resumes).
 *
 * Every change of the pause in force, and the moment a pause runs out, is announced with the
 * advisory $JS.EVENT.ADVISORY.CONSUMER.PAUSE.<stream>.<consumer>
 * (io.nats.jetstream.advisory.v1.consumer_pause); a create answered while the consumer is paused
 * announces it too, as 2.11's create handler does. A create of an existing consumer never
 * changes its pause (consumer_api.c copies the one in force into the request).
 *
 * References: nats-server server/jetstream_api.go (jsConsumerPauseRequest,
 * JSApiConsumerPauseResponse), consumer.go (updatePauseState, sendPauseAdvisoryLocked, the
 * pause check of loopAndGatherMsgs, ConsumerInfo paused/pause_remaining).
 */
#include <stdio.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/consumer_int.h"
#include "js/jsreq.h"
#include "util/log.h"

#define ZERO_TIME "0001-01-01T00:00:00Z"

/* The pause_until text of the config in force (Go's zero time when none). */
static const char *
until_text(const nd_consumer_t *c)
{
    const json_t *pu = json_object_get(c->cfg.json, "pause_until");
    return json_is_string(pu) ? json_string_value(pu) : ZERO_TIME;
}

static void
advise_pause(nd_ctx_t *ctx, nd_consumer_t *c)
{
    json_t *ev = js_consumer_event_new(ctx, "io.nats.jetstream.advisory.v1.consumer_pause");
    json_object_set_new(ev, "stream", json_string(c->st->name));
    json_object_set_new(ev, "consumer", json_string(c->name));
    json_object_set_new(ev, "paused", json_boolean(c->cfg.pause_until_ns > js_now()));
    /* a time.Time is never left out by omitempty: the zero time when not paused */
    json_object_set_new(ev, "pause_until", json_string(until_text(c)));
    js_consumer_event_domain(c, ev);
    char *subj = js_path("$JS.EVENT.ADVISORY.CONSUMER.PAUSE.%s.%s", c->st->name, c->name);
    js_consumer_event_send(ctx, c, subj, ev);
    nd_free(subj);
}

void
js_pause_changed(nd_ctx_t *ctx, nd_consumer_t *c, int64_t old_ns)
{
    (void)old_ns;
    int64_t now = js_now();
    c->pause_edge = c->cfg.pause_until_ns > now ? c->cfg.pause_until_ns : 0;
    advise_pause(ctx, c);
}

void
js_pause_created(nd_ctx_t *ctx, nd_consumer_t *c)
{
    if (c->cfg.pause_until_ns > js_now())
        advise_pause(ctx, c);
}

void
js_pause_timer(nd_ctx_t *ctx, nd_consumer_t *c, int64_t now)
{
    if (c->pause_edge == 0 || now < c->pause_edge)
        return;
    c->pause_edge = 0;
    advise_pause(ctx, c); /* "paused": false; deliveries resume on this turn */
}

/* Whether body holds a JSON object or array (nats-server decodes the request only then; any
 * other body is an empty request, a resume). */
static bool
is_json(const char *p, size_t n)
{
    while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
        p++;
        n--;
    }
    return n > 0 && (*p == '{' || *p == '[');
}

void
js_pause_request(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m)
{
    static const js_rfield_t f[] = {{"pause_until", JS_RT_TIME}};
    const char *what = "consumer_pause_response";
    js_audit_req_t audit;
    js_audit_view(&audit, m);
    js_audit_begin(&audit);
    js_req_t q;
    nd_jserr_t err;
    bool have = is_json(m->data, m->data_len);
    if (have && !js_req_decode(m->data, m->data_len, c->st->jsa->js->strict,
                               "JSApiConsumerPauseRequest", f, 1, &q, &err)) {
        js_send_error(ctx, c->ic, m->reply, what, &err);
        js_audit_end();
        return;
    }
    const char *until = have && q.v[0].set ? q.v[0].s : NULL;
    int64_t old = c->cfg.pause_until_ns;
    if (!nd_consumer_cfg_set_pause(&c->cfg, until)) {
        nd_jserr_setf(&err, ND_JSE_INVALID_JSON,
                      "parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"%s\" "
                      "as \"2006\"",
                      until != NULL ? until : "", until != NULL ? until : "");
        js_send_error(ctx, c->ic, m->reply, what, &err);
        if (have)
            js_req_free(&q);
        js_audit_end();
        return;
    }
    if (have)
        js_req_free(&q);
    pthread_mutex_lock(&c->mu);
    json_decref(c->cfg_json);
    c->cfg_json = json_incref(c->cfg.json); /* shared: see nd_consumer_cfg_copy */
    pthread_mutex_unlock(&c->mu);
    if (js_consumer_meta_write(c) != 0)
        nd_log_warn("JetStream could not write the configuration of consumer '%s > %s'",
                    c->st->name, c->name);
    /* the advisory goes first (2.11's updateConfig), on a change of the instant */
    if (c->cfg.pause_until_ns != old)
        js_pause_changed(ctx, c, old);
    int64_t now = js_now();
    json_t *o = js_resp(what);
    json_object_set_new(o, "paused", json_boolean(c->cfg.pause_until_ns > now));
    json_object_set_new(o, "pause_until", json_string(until_text(c)));
    if (c->cfg.pause_until_ns > now)
        json_object_set_new(o, "pause_remaining", json_integer(c->cfg.pause_until_ns - now));
    js_send(ctx, c->ic, m->reply, o);
    js_audit_end();
}
