/* Server peers' handshake (see peer_proto_int.h): the CONNECT, INFO, -ERR and control steps
 * that route and gateway connections share. */
#include "net/peer_proto_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/timer.h"
#include "auth/passwd.h"
#include "natsd/natsd.h"
#include "net/connreg.h"
#include "util/gojson.h"
#include "util/log.h"

/* The prefix of every log line here (as RFMT/GFMT in route.c and gateway.c). */
#define PFMT        "%s:%d - %s:%llu - "
#define PARGS(c, t) (c)->ip, (c)->port, (t), (unsigned long long)(c)->cid

void
nd_peer_fail(nd_ctx_t *ctx, nd_conn_t *c, const char *text, nd_close_reason_t reason)
{
    char line[600];
    int n = snprintf(line, sizeof line, "-ERR '%s'\r\n", text);
    nd_conn_write(c, line, (size_t)n);
    nd_conn_close(ctx, c, reason);
}

bool
nd_peer_auth_ok(const char *want_user, const char *want_pass, const char *user, const char *pass)
{
    if (want_user == NULL)
        return true;
    return user != NULL && strcmp(user, want_user) == 0 && pass != NULL &&
           nd_passwd_check(want_pass ? want_pass : "", want_pass ? strlen(want_pass) : 0, pass,
                           strlen(pass));
}

void
nd_peer_auth_timer(nd_ctx_t *ctx, nd_conn_t *c, double secs, double dflt)
{
    double t = secs > 0 ? secs : dflt;
    nd_timer_start(ctx, &c->auth_timer, (uint64_t)(t * 1e9), 0);
}

json_t *
nd_peer_info_new(const nd_server_t *s, int proto)
{
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "server_name",
                        json_string(s->opts.server_name ? s->opts.server_name : s->server_id));
    json_object_set_new(o, "version", json_string(NATSD_COMPAT_VERSION));
    json_object_set_new(o, "proto", json_integer(proto));
    json_object_set_new(o, "go", json_string("natsd " NATSD_VERSION));
    return o;
}

json_t *
nd_peer_connect_new(bool echo, const char *user, const char *pass, bool tls_required)
{
    json_t *o = json_object();
    json_object_set_new(o, "echo", json_boolean(echo));
    json_object_set_new(o, "verbose", json_false());
    json_object_set_new(o, "pedantic", json_false());
    if (user[0] != '\0')
        json_object_set_new(o, "user", json_string(user));
    if (pass[0] != '\0')
        json_object_set_new(o, "pass", json_string(pass));
    json_object_set_new(o, "tls_required", json_boolean(tls_required));
    return o;
}

void
nd_peer_write_op(nd_conn_t *c, const char *op, json_t *o)
{
    char *js = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    nd_conn_write(c, op, strlen(op));
    nd_conn_write(c, " ", 1);
    nd_conn_write(c, js, strlen(js));
    nd_conn_write(c, "\r\n", 2);
    free(js);
}

json_t *
nd_peer_info_parse(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd, const char *tag,
                   const char *kind)
{
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_log_error(PFMT "Error parsing %s INFO", PARGS(c, tag), kind);
        nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
    }
    return o;
}

nd_acct_t *
nd_peer_rmsg_start(nd_ctx_t *ctx, nd_conn_t *c, nd_peer_accts_t *pa, const nd_proto_cmd_t *cmd,
                   const char *tag, const char *what, nd_proto_cmd_t *pub)
{
    c->in_msgs++;
    c->in_bytes += cmd->payload.len;
    *pub = *cmd;
    pub->op = cmd->op == ND_PROTO_OP_RHMSG ? ND_PROTO_OP_HPUB : ND_PROTO_OP_PUB;
    nd_acct_t *acct = nd_peer_acct(ctx, c->srv, pa, &cmd->account);
    if (acct == NULL)
        nd_log_debug(PFMT "Unknown account \"%.*s\" for %s on subject: \"%.*s\"", PARGS(c, tag),
                     (int)cmd->account.len, cmd->account.ptr, what, (int)cmd->subject.len,
                     cmd->subject.ptr);
    return acct;
}

bool
nd_peer_handle_ctl(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd, const char *tag,
                   const char *err_what)
{
    switch (cmd->op) {
    case ND_PROTO_OP_PING:
        nd_conn_write(c, "PONG\r\n", 6);
        return true;
    case ND_PROTO_OP_PONG:
        c->pings_out = 0;
        nd_connreg_pong(&c->mon);
        return true;
    case ND_PROTO_OP_OK:
        return true;
    case ND_PROTO_OP_ERR:
        nd_log_error(PFMT "%s %.*s", PARGS(c, tag), err_what, (int)cmd->arg.len, cmd->arg.ptr);
        nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
        return false;
    default:
        nd_conn_write_err(c, ND_ERR_UNKNOWN_OP);
        nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
        return false;
    }
}
