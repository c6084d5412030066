/* Client protocol operations of the connection actor (inventory §1.3–§1.5): CONNECT, PING,
 * PONG, SUB, UNSUB, PUB/HPUB (handed to deliver.c), INFO, +OK and -ERR from the client.
 *
 * Ordering: a SUB is inserted by the account actor asynchronously. Until it is acknowledged,
 * the connection does not process a PUB, HPUB or PING that follows it: they stay unconsumed in
 * the read buffer (the connection is "paused"), so the client's own later publish sees its new
 * subscription and a PONG means every earlier SUB is visible to every publisher, as with
 * nats-server. SUBs themselves pipeline.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/conn_int.h"
#include "util/gojson.h"
#include "util/log.h"
#include "subj/account.h"
#include "subj/subject.h"

static void
ok(nd_conn_t *c)
{
    if (c->verbose)
        nd_conn_write(c, "+OK\r\n", 5);
}

static void
fail(nd_ctx_t *ctx, nd_conn_t *c, nd_err_t err, nd_close_reason_t reason)
{
    nd_conn_write_err(c, err);
    if (nd_err_closes(err))
        nd_conn_close(ctx, c, reason);
}

/* CONNECT fields and the JSON type nats-server's decoder (Go's encoding/json into ClientOpts)
 * accepts for each; a mismatch makes the whole CONNECT fail, which closes the connection. */
typedef enum { F_BOOL, F_STRING, F_INT } field_type_t;

static const struct {
    const char *name;
    field_type_t type;
} connect_fields[] = {
    {"echo", F_BOOL},        {"verbose", F_BOOL},     {"pedantic", F_BOOL},
    {"tls_required", F_BOOL}, {"headers", F_BOOL},    {"no_responders", F_BOOL},
    {"new_account", F_BOOL}, {"auth_token", F_STRING}, {"jwt", F_STRING},
    {"nkey", F_STRING},      {"sig", F_STRING},       {"user", F_STRING},
    {"pass", F_STRING},      {"name", F_STRING},      {"lang", F_STRING},
    {"version", F_STRING},   {"account", F_STRING},   {"protocol", F_INT},
};

/* The value Go would decode into the CONNECT field `name` (gojson.h: keys in any case). */
static json_t *
field(json_t *o, const char *name)
{
    return nd_gojson_field(o, name);
}

/* Go's decoder checks the type of every key that names a field, the ones a later key of the same
 * field overrides included: {"verbose":1,"VERBOSE":true} fails too. */
static bool
types_ok(json_t *o)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (json_is_null(v))
            continue; /* null leaves any field as it is */
        for (size_t i = 0; i < sizeof connect_fields / sizeof connect_fields[0]; i++) {
            if (!nd_gojson_key_is(key, connect_fields[i].name))
                continue;
            switch (connect_fields[i].type) {
            case F_BOOL:
                if (!json_is_boolean(v))
                    return false;
                break;
            case F_STRING:
                if (!json_is_string(v))
                    return false;
                break;
            case F_INT:
                if (!json_is_integer(v))
                    return false;
                break;
            }
        }
    }
    return true;
}

/* Reads a boolean field; an absent or null one keeps the current value (a later CONNECT is
 * decoded over the options in force, as nats-server does). */
static bool
get_bool(json_t *o, const char *key, bool current)
{
    json_t *v = field(o, key);
    return json_is_boolean(v) ? json_is_true(v) : current;
}

static void
get_str(json_t *o, const char *key, char **dst)
{
    json_t *v = field(o, key);
    if (json_is_string(v)) {
        nd_free(*dst);
        *dst = nd_xstrdup(json_string_value(v));
    }
}

static bool
on_connect(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_connreg_connect(&c->mon); /* first, as nats-server's processConnect */
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL || !types_ok(o)) {
        /* nats-server closes on a CONNECT that does not decode, without an -ERR. */
        nd_log_error("%s:%d - %s:%llu - Client parser ERROR: malformed CONNECT", nd_conn_lhost(c),
                     c->port, nd_conn_log_tag(c), (unsigned long long)c->cid);
        json_decref(o);
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    /* Authentication comes before the protocol checks, as in nats-server's processConnect. */
    if (!nd_conn_auth_connect(ctx, c, o)) {
        json_decref(o);
        return false;
    }
    c->verbose = get_bool(o, "verbose", c->verbose);
    c->pedantic = get_bool(o, "pedantic", c->pedantic);
    c->echo = get_bool(o, "echo", c->echo);
    c->headers_requested = get_bool(o, "headers", c->headers_requested);
    bool headers = c->headers_requested && !c->srv->opts.no_header_support;
    c->no_responders = get_bool(o, "no_responders", c->no_responders);
    get_str(o, "name", &c->name);
    get_str(o, "lang", &c->lang);
    get_str(o, "version", &c->version);
    nd_connreg_set_meta(c->srv->connreg, &c->mon, c->name, c->lang, c->version);
    nd_connreg_touch(&c->mon);
    json_t *proto = field(o, "protocol");
    if (json_is_integer(proto))
        c->protocol = (int)json_integer_value(proto);
    json_int_t protocol = json_is_integer(proto) ? json_integer_value(proto) : c->protocol;
    json_decref(o);

    if (protocol < 0 || protocol > 1) {
        fail(ctx, c, ND_ERR_BAD_CLIENT_PROTOCOL, ND_CLOSE_BAD_PROTOCOL);
        return false;
    }
    if (c->no_responders && !headers) {
        fail(ctx, c, ND_ERR_NO_RESPONDERS_HEADERS, ND_CLOSE_NO_RESPONDERS_HEADERS);
        return false;
    }
    atomic_store_explicit(&c->headers, headers, memory_order_relaxed);
    c->connected = true;
    ok(c);
    nd_conn_client_event(ctx, c, true); /* e.g. the $SYS CONNECT advisory */
    return true;
}

/* A client's INFO is decoded and ignored; one that does not decode closes the connection. */
static bool
on_info(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    json_t *id = o != NULL ? field(o, "server_id") : NULL;
    bool good = o != NULL && (id == NULL || json_is_null(id) || json_is_string(id));
    json_decref(o);
    if (!good) {
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    return true;
}

static void
on_sub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    if (cmd->queue.len == 5 && memcmp(cmd->queue.ptr, "_sys_", 5) == 0) {
        /* The queue name _sys_ is reserved for the server: a permissions error, checked before
         * the subject, and the connection stays. */
        char line[128 + 2 * 4096];
        int n = snprintf(line, sizeof line,
                         "-ERR 'Permissions Violation for Subscription to \"%.*s\" using queue "
                         "\"_sys_\"'\r\n",
                         (int)(cmd->subject.len > 4096 ? 4096 : cmd->subject.len),
                         cmd->subject.ptr);
        nd_conn_write(c, line, (size_t)n);
        return;
    }
    if (!nd_subj_valid_sub(cmd->subject.ptr, cmd->subject.len) ||
        (cmd->queue.len > 0 && !nd_subj_valid_queue(cmd->queue.ptr, cmd->queue.len))) {
        nd_conn_write_err(c, ND_ERR_INVALID_SUBJECT);
        return;
    }
    if (c->perms.perms != NULL && !nd_conn_auth_sub(c, cmd->subject.ptr, cmd->subject.len,
                                                    cmd->queue.ptr, cmd->queue.len))
        return; /* -ERR written; the connection stays */
    if (nd_sidmap_get(&c->subs, cmd->sid.ptr, cmd->sid.len) != NULL) {
        ok(c); /* a duplicate sid keeps the existing subscription */
        return;
    }
    int32_t max = c->srv->opts.max_subscriptions;
    bool jwt_full = c->jwt_subs_limited && (int64_t)c->subs.count >= c->jwt_max_subs;
    if (jwt_full || (max > 0 && c->subs.count >= (uint32_t)max)) {
        nd_log_error("%s:%d - %s:%llu - maximum subscriptions exceeded", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_MAX_SUBSCRIPTIONS);
        return;
    }
    nd_sub_t *sub = nd_sub_new(ctx, &c->base, cmd->subject.ptr, cmd->subject.len,
                               cmd->queue.ptr, cmd->queue.len, cmd->sid.ptr, cmd->sid.len);
    nd_sidmap_put(&c->subs, sub);
    c->sub_acks_due++;
    nd_acct_send_sub(ctx, c->acct, sub, &c->base, ND_CONN_MSG_SUB_ACK);
    ok(c);
}

static void
on_unsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_sub_t *sub = nd_sidmap_get(&c->subs, cmd->sid.ptr, cmd->sid.len);
    if (sub != NULL) {
        uint64_t delivered = atomic_load_explicit(&sub->delivered, memory_order_relaxed);
        if (cmd->max_msgs > 0 && (uint64_t)cmd->max_msgs > delivered)
            atomic_store_explicit(&sub->max_msgs, (uint64_t)cmd->max_msgs, memory_order_relaxed);
        else
            nd_conn_remove_sub(ctx, c, sub);
    }
    ok(c);
}

/* Traces CONNECT with secrets replaced by "[REDACTED]", as nats-server does; since Go takes
 * "PASS" or "Auth_Token" for its fields, and a client may send a secret under a key of its own,
 * every key that looks like one is redacted, in any case and at any depth (gojson.h). */
static void
trace_connect(const nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [CONNECT (malformed)]", nd_conn_lhost(c),
               c->port, nd_conn_log_tag(c), (unsigned long long)c->cid);
        return;
    }
    nd_gojson_redact(o);
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [CONNECT %s]", nd_conn_lhost(c), c->port,
           nd_conn_log_tag(c), (unsigned long long)c->cid, js ? js : "");
    free(js);
}

/* -V: the protocol trace, in nats-server's "<<- [OP args]" shape. */
static void
trace(const nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    const char *op = nd_proto_op_name(cmd->op);
    switch (cmd->op) {
    case ND_PROTO_OP_PUB:
    case ND_PROTO_OP_HPUB:
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [%s %.*s%s%.*s %zu]", nd_conn_lhost(c), c->port,
               nd_conn_log_tag(c), (unsigned long long)c->cid, op, (int)cmd->subject.len,
               cmd->subject.ptr, cmd->reply.len ? " " : "", (int)cmd->reply.len, cmd->reply.ptr,
               cmd->payload.len);
        break;
    case ND_PROTO_OP_SUB:
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [SUB %.*s%s%.*s %.*s]", nd_conn_lhost(c),
               c->port, nd_conn_log_tag(c), (unsigned long long)c->cid, (int)cmd->subject.len,
               cmd->subject.ptr, cmd->queue.len ? " " : "", (int)cmd->queue.len, cmd->queue.ptr,
               (int)cmd->sid.len, cmd->sid.ptr);
        break;
    case ND_PROTO_OP_UNSUB:
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [UNSUB %.*s]", nd_conn_lhost(c), c->port,
               nd_conn_log_tag(c), (unsigned long long)c->cid, (int)cmd->sid.len, cmd->sid.ptr);
        break;
    case ND_PROTO_OP_CONNECT:
        trace_connect(c, cmd);
        break;
    case ND_PROTO_OP_INFO:
    case ND_PROTO_OP_ERR:
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [%s %.*s]", nd_conn_lhost(c), c->port,
               nd_conn_log_tag(c), (unsigned long long)c->cid, op, (int)cmd->arg.len, cmd->arg.ptr);
        break;
    default:
        nd_log(ND_LOG_TRACE, "%s:%d - %s:%llu - <<- [%s]", nd_conn_lhost(c), c->port,
               nd_conn_log_tag(c), (unsigned long long)c->cid, op);
        break;
    }
}

bool
nd_client_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    /* With authentication required, CONNECT must come first (conn_auth.c). */
    if (!c->authed && cmd->op != ND_PROTO_OP_CONNECT && !nd_conn_auth_first_op(ctx, c))
        return false;
    switch (cmd->op) {
    case ND_PROTO_OP_PUB:
    case ND_PROTO_OP_HPUB:
    case ND_PROTO_OP_PING:
        if (c->sub_acks_due > 0) {
            c->paused = true;
            return false;
        }
        break;
    default:
        break;
    }

    if (nd_log_enabled(ND_LOG_TRACE))
        trace(c, cmd);
    switch (cmd->op) {
    case ND_PROTO_OP_CONNECT:
        return on_connect(ctx, c, cmd);
    case ND_PROTO_OP_PUB:
    case ND_PROTO_OP_HPUB:
        if (cmd->op == ND_PROTO_OP_HPUB && !atomic_load_explicit(&c->headers,
                                                                 memory_order_relaxed)) {
            /* HPUB without headers:true in CONNECT closes silently, as nats-server does. */
            nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
            return false;
        }
        c->in_msgs++;
        c->in_bytes += cmd->payload.len;
        if (c->pedantic && !nd_subj_valid_pub(cmd->subject.ptr, cmd->subject.len)) {
            nd_conn_write_err(c, ND_ERR_INVALID_PUB_SUBJECT); /* and still delivered */
        }
        /* One well-predicted branch for connections without permissions. A denied publish gets
         * the -ERR only, no +OK, and the connection stays. */
        if (c->perms.perms != NULL &&
            !nd_conn_auth_pub(c, cmd->subject.ptr, cmd->subject.len))
            return true;
        ok(c); /* nats-server acknowledges before delivering */
        nd_deliver_publish(ctx, c, cmd);
        return !c->closing;
    case ND_PROTO_OP_SUB:
        on_sub(ctx, c, cmd);
        return true;
    case ND_PROTO_OP_UNSUB:
        on_unsub(ctx, c, cmd);
        return true;
    case ND_PROTO_OP_PING:
        nd_conn_write(c, "PONG\r\n", 6);
        return true;
    case ND_PROTO_OP_PONG:
        c->pings_out = 0;
        nd_connreg_pong(&c->mon);
        return true;
    case ND_PROTO_OP_INFO:
        return on_info(ctx, c, cmd);
    case ND_PROTO_OP_OK:
        return true;
    case ND_PROTO_OP_ERR:
        nd_log_error("%s:%d - %s:%llu - Client Error %.*s", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid, (int)cmd->arg.len,
                     cmd->arg.ptr);
        nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
        return false;
    default:
        nd_conn_write_err(c, ND_ERR_UNKNOWN_OP);
        nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
        return false;
    }
}
