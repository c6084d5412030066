/* /healthz: {"status":"ok"} while the server accepts clients. Parameters are validated as
 * nats-server 2.10 does (bad booleans, stream without account, consumer without stream: 400 with
 * a JSON error). natsd has no JetStream health to check yet, so the js-* variants answer as the
 * plain probe does. Never behind the monitoring port's access control (probes carry no secret).
 */
#include <string.h>

#include "mon/mon_int.h"

static void
error(nd_mon_req_t *req, int code, const char *status, const char *text)
{
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "status_code", json_integer(code));
    json_object_set_new(o, "error", json_string(text));
    nd_mon_reply_json(req, code, o);
}

void
nd_mon_healthz(nd_mon_req_t *req)
{
    static const char *const bools[] = {"js-enabled-only", "js-server-only", "js-meta-only",
                                        "js-enabled", "details"};
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
        const char *v = nd_mon_param(req, bools[i]);
        bool b;
        if (v != NULL && *v != '\0' && !nd_mon_parse_bool(v, &b)) {
            char text[400];
            snprintf(text, sizeof text,
                     "Error decoding boolean for '%s': strconv.ParseBool: parsing \"%.200s\": "
                     "invalid syntax",
                     bools[i], v);
            error(req, 400, "error", text);
            return;
        }
    }
    const char *acc = nd_mon_param(req, "account"), *stream = nd_mon_param(req, "stream"),
               *consumer = nd_mon_param(req, "consumer");
    bool has_acc = acc != NULL && *acc, has_stream = stream != NULL && *stream;
    if (has_stream && !has_acc) {
        error(req, 400, "error", "\"account\" must not be empty when checking stream health");
        return;
    }
    if (consumer != NULL && *consumer && !has_stream) {
        error(req, 400, "error", "\"stream\" must not be empty when checking consumer health");
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "status", json_string("ok"));
    json_object_set_new(o, "status_code", json_integer(200));
    nd_mon_reply_json(req, 200, o);
}
