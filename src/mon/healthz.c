/* /healthz: {"status":"ok"} while the server accepts clients and, when JetStream is configured,
 * while it runs and every stream it should have is up. As nats-server 2.11 (Server.healthz):
 * parameters are validated first (a bad boolean: 400 with Go's strconv text as plain text, as
 * every endpoint; stream without account, consumer without stream: 400); js-server-only stops
 * after the server checks; a server without JetStream is healthy; a configured JetStream that
 * is not running is 503 "unavailable" with "JetStream not enabled (10076)"; js-enabled-only
 * (and the deprecated js-enabled) stops there; otherwise JetStream's own checks run through the
 * server's hook (net/server.h, src/js/jsmon.c): an account or stream asked for that does not
 * exist is 404, a stream that did not come back is 503. With details=true every problem is
 * listed under "errors" and the status is "error". The body is compact JSON, as Go's
 * json.Marshal writes it, and never carries status_code (nats-server keeps that for its
 * $SYS.REQ.SERVER.*.HEALTHZ answers; over HTTP the status line says it): {"status":"ok"},
 * {"status":"unavailable","error":"..."}. Never behind the monitoring port's access control
 * (probes carry no secret).
 */
#include <string.h>

#include "mon/mon_int.h"

/* One problem: as "error" (the first only), or with details as the "errors" list. */
static void
reply(nd_mon_req_t *req, int code, const char *status, bool details, json_t *errors)
{
    json_t *o = json_object();
    if (details) {
        json_object_set_new(o, "status", json_string("error"));
        json_object_set(o, "errors", errors);
    } else {
        json_object_set_new(o, "status", json_string(status));
        json_object_set(o, "error", json_object_get(json_array_get(errors, 0), "error"));
    }
    json_decref(errors);
    nd_mon_reply_json_compact(req, code, o);
}

static void
error(nd_mon_req_t *req, int code, const char *status, bool details, const char *type,
      const char *text)
{
    json_t *errors = json_array(), *e = json_object();
    json_object_set_new(e, "type", json_string(type));
    json_object_set_new(e, "error", json_string(text));
    json_array_append_new(errors, e);
    reply(req, code, status, details, errors);
}

void
nd_mon_healthz(nd_mon_req_t *req)
{
    static const char *const names[] = {"js-enabled", "js-enabled-only", "js-server-only",
                                        "js-meta-only", "details"};
    bool vals[5] = {false};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!nd_mon_param_bool(req, names[i], &vals[i]))
            return;
    bool js_enabled = vals[0], js_enabled_only = vals[1], js_server_only = vals[2];
    bool details = vals[4];
    const char *acc = nd_mon_param(req, "account"), *stream = nd_mon_param(req, "stream"),
               *consumer = nd_mon_param(req, "consumer");
    bool has_acc = acc != NULL && *acc, has_stream = stream != NULL && *stream;
    if (has_stream && !has_acc) {
        error(req, 400, "error", details, "BAD_REQUEST",
              "\"account\" must not be empty when checking stream health");
        return;
    }
    if (consumer != NULL && *consumer && !has_stream) {
        error(req, 400, "error", details, "BAD_REQUEST",
              "\"stream\" must not be empty when checking consumer health");
        return;
    }
    const nd_server_t *s = req->mon->srv;
    if (!js_server_only && s->opts.jetstream) {
        const nd_js_mon_t *jsm = nd_server_js_mon(s);
        if (jsm == NULL) {
            /* Configured, but not running (yet, or it failed to start). */
            error(req, 503, "unavailable", details, "JETSTREAM", "JetStream not enabled (10076)");
            return;
        }
        nd_js_health_query_t q = {
            .enabled_only = js_enabled_only || js_enabled,
            .account = acc,
            .stream = stream,
            .consumer = consumer,
        };
        json_t *errors = json_array();
        int code = jsm->healthz(jsm->arg, &q, errors);
        if (code != 200 || json_array_size(errors) > 0) {
            reply(req, code != 200 ? code : 503, "unavailable", details, errors);
            return;
        }
        json_decref(errors);
    }
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string("ok"));
    nd_mon_reply_json_compact(req, 200, o);
}
