/* The JetStream API's JSON envelope and Go's JSON shapes for times. */
#include <string.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "util/gojson.h"
#include "util/timefmt.h"

json_t *
js_resp(const char *what)
{
    char type[128];
    snprintf(type, sizeof type, "io.nats.jetstream.api.v1.%s", what);
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(type));
    return o;
}

void
js_resp_error(json_t *resp, const nd_jserr_t *err)
{
    json_object_set_new(resp, "error", nd_jserr_json(err));
}

void
js_send(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, json_t *resp)
{
    if (reply != NULL && reply[0] != '\0') {
        char *text = json_dumps(resp, JSON_COMPACT);
        if (text != NULL) {
            nd_iclient_publish(ctx, ic, reply, NULL, NULL, 0, text, strlen(text));
            js_audit_response(ctx, ic, reply, text);
            free(text);
        }
    }
    json_decref(resp);
}

void
js_paged_error_fields(json_t *resp, const char *what)
{
    /* Responses that embed ApiPaged (and a nil list) write those fields on errors too. */
    if (strcmp(what, "stream_info_response") == 0 || strcmp(what, "stream_names_response") == 0 ||
        strcmp(what, "stream_list_response") == 0) {
        json_object_set_new(resp, "total", json_integer(0));
        json_object_set_new(resp, "offset", json_integer(0));
        json_object_set_new(resp, "limit", json_integer(0));
    }
    if (strcmp(what, "stream_names_response") == 0)
        json_object_set_new(resp, "streams", json_null());
    if (strcmp(what, "stream_list_response") == 0)
        json_object_set_new(resp, "streams", json_array());
    if (strcmp(what, "stream_purge_response") == 0)
        json_object_set_new(resp, "purged", json_integer(0));
}

/* The response type of each API request, by the request subject after "$JS.API." (the longest
 * prefix first where one is a prefix of another). */
static const struct {
    const char *prefix, *what;
} api_types[] = {
    {"INFO", "account_info_response"},
    {"STREAM.CREATE.", "stream_create_response"},
    {"STREAM.UPDATE.", "stream_update_response"},
    {"STREAM.DELETE.", "stream_delete_response"},
    {"STREAM.INFO.", "stream_info_response"},
    {"STREAM.NAMES", "stream_names_response"},
    {"STREAM.LIST", "stream_list_response"},
    {"STREAM.PURGE.", "stream_purge_response"},
    {"STREAM.MSG.GET.", "stream_msg_get_response"},
    {"STREAM.MSG.DELETE.", "stream_msg_delete_response"},
    {"STREAM.SNAPSHOT.", "stream_snapshot_response"},
    {"STREAM.RESTORE.", "stream_restore_response"},
    {"STREAM.LEADER.STEPDOWN.", "stream_leader_stepdown_response"},
    {"STREAM.PEER.REMOVE.", "stream_remove_peer_response"},
    {"CONSUMER.CREATE.", "consumer_create_response"},
    {"CONSUMER.DURABLE.CREATE.", "consumer_create_response"},
    {"CONSUMER.DELETE.", "consumer_delete_response"},
    {"CONSUMER.INFO.", "consumer_info_response"},
    {"CONSUMER.NAMES.", "consumer_names_response"},
    {"CONSUMER.LIST.", "consumer_list_response"},
    {"CONSUMER.PAUSE.", "consumer_pause_response"},
    {"CONSUMER.UNPIN.", "consumer_unpin_response"},
    {"CONSUMER.LEADER.STEPDOWN.", "consumer_leader_stepdown_response"},
    {"META.LEADER.STEPDOWN", "meta_leader_stepdown_response"},
    {"SERVER.REMOVE", "meta_server_remove_response"},
    {"ACCOUNT.PURGE.", "account_purge_response"},
};

const char *
js_api_type(const char *op)
{
    for (size_t i = 0; i < sizeof api_types / sizeof api_types[0]; i++)
        if (strncmp(op, api_types[i].prefix, strlen(api_types[i].prefix)) == 0)
            return api_types[i].what;
    return "error"; /* nats-server's io.nats.jetstream.api.v1.error */
}

void
js_send_error(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, const char *what,
              const nd_jserr_t *err)
{
    json_t *r = js_resp(what);
    js_resp_error(r, err);
    js_paged_error_fields(r, what);
    js_send(ctx, ic, reply, r);
}

json_t *
js_time(int64_t wall_ns)
{
    if (wall_ns == 0)
        return json_string("0001-01-01T00:00:00Z");
    char b[48];
    nd_time_rfc3339(wall_ns, b);
    return json_string(b);
}

json_t *
js_body(const nd_imsg_t *m, nd_jserr_t *err)
{
    size_t n = m->data_len;
    const char *p = m->data;
    while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
        p++;
        n--;
    }
    if (n == 0)
        return json_object();
    json_error_t je;
    json_t *o = json_loadb(p, n, 0, &je);
    if (o == NULL || !json_is_object(o)) {
        json_decref(o);
        nd_jserr_setf(err, ND_JSE_INVALID_JSON, "%s", o == NULL ? je.text : "not an object");
        return NULL;
    }
    return o;
}
