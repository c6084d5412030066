/* The JetStream API audit advisory ($JS.EVENT.ADVISORY.API, nats-server's JSAPIAudit): every
 * API response is also described, with its request and the requesting client, on that subject
 * in the account, when somebody listens there.
 *
 * Which request a response answers: the handler of a request sets it as the thread's current
 * one for the duration of its call (js_audit_begin/end); a response sent later (a stream's
 * create, update or delete answer, from the stream's turn) carries a saved copy
 * (js_audit_save) and makes it current around that send. js_send audits whatever is current
 * when its reply subject is the request's. Reference: nats-server server/jetstream_api.go
 * (sendJetStreamAPIAuditAdvisory), events.go (ClientInfo.forAdvisory). */
#include <string.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "subj/sublist.h"
#include "util/evid.h"

#define AUDIT_SUBJECT "$JS.EVENT.ADVISORY.API"

static _Thread_local const js_audit_req_t *current;

void
js_audit_view(js_audit_req_t *a, const nd_imsg_t *m)
{
    const nd_sender_t *f = m->from;
    *a = (js_audit_req_t){.subject = m->subject,
                          .reply = m->reply,
                          .request = m->data,
                          .request_len = m->data_len,
                          .acc = f->acct != NULL ? nd_acct_name(f->acct) : "",
                          .user = f->user,
                          .name = f->name,
                          .lang = f->lang,
                          .version = f->version,
                          .host = f->ip,
                          .cid = f->cid,
                          .owned = false};
}

js_audit_req_t *
js_audit_save_current(void)
{
    if (current == NULL)
        return NULL;
    js_audit_req_t v = *current;
    js_audit_req_t *a = nd_xcalloc(1, sizeof *a);
    a->subject = nd_xstrdup(v.subject);
    a->reply = nd_xstrdup(v.reply != NULL ? v.reply : "");
    a->request = nd_xstrndup(v.request, v.request_len);
    a->request_len = v.request_len;
    a->acc = nd_xstrdup(v.acc != NULL ? v.acc : "");
    a->user = nd_xstrdup(v.user != NULL ? v.user : "");
    a->name = nd_xstrdup(v.name != NULL ? v.name : "");
    a->lang = nd_xstrdup(v.lang != NULL ? v.lang : "");
    a->version = nd_xstrdup(v.version != NULL ? v.version : "");
    a->host = nd_xstrdup(v.host != NULL ? v.host : "");
    a->cid = v.cid;
    a->owned = true;
    return a;
}

void
js_audit_free(js_audit_req_t *a)
{
    if (a == NULL || !a->owned)
        return;
    nd_free((char *)a->subject);
    nd_free((char *)a->reply);
    nd_free((char *)a->request);
    nd_free((char *)a->acc);
    nd_free((char *)a->user);
    nd_free((char *)a->name);
    nd_free((char *)a->lang);
    nd_free((char *)a->version);
    nd_free((char *)a->host);
    nd_free(a);
}

void
js_audit_begin(const js_audit_req_t *a)
{
    current = a;
}

void
js_audit_end(void)
{
    current = NULL;
}

/* Whether anybody in the account listens on the audit subject. */
static bool
listened(nd_ctx_t *ctx, nd_iclient_t *ic)
{
    nd_acct_t *acct = nd_iclient_account(ic);
    nd_sl_result_t r;
    nd_sl_result_init(&r);
    nd_epoch_enter(ctx);
    bool any = nd_sl_match(ctx, nd_acct_sublist(acct), AUDIT_SUBJECT, strlen(AUDIT_SUBJECT), &r);
    nd_epoch_exit(ctx);
    nd_sl_result_fini(&r);
    return any;
}

static void
opt_str(json_t *o, const char *key, const char *v)
{
    if (v != NULL && v[0] != '\0')
        json_object_set_new(o, key, json_string(v));
}

void
js_audit_response(nd_ctx_t *ctx, nd_iclient_t *ic, const char *reply, const char *response)
{
    const js_audit_req_t *a = current;
    if (a == NULL || a->reply == NULL || strcmp(a->reply, reply) != 0 || !listened(ctx, ic))
        return;
    nd_server_t *srv = nd_iclient_server(ic);
    char id[23];
    nd_event_id(ctx, id);
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("io.nats.jetstream.advisory.v1.api_audit"));
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "timestamp", js_time(js_now()));
    json_object_set_new(o, "server", json_string(srv->opts.server_name != NULL
                                                     ? srv->opts.server_name
                                                     : srv->server_id));
    json_t *client = json_object();
    opt_str(client, "host", a->host);
    if (a->cid != 0)
        json_object_set_new(client, "id", json_integer((json_int_t)a->cid));
    opt_str(client, "acc", a->acc);
    opt_str(client, "user", a->user);
    opt_str(client, "name", a->name);
    opt_str(client, "lang", a->lang);
    opt_str(client, "ver", a->version);
    opt_str(client, "server", srv->opts.server_name != NULL ? srv->opts.server_name
                                                            : srv->server_id);
    json_object_set_new(client, "kind", json_string("Client"));
    json_object_set_new(client, "client_type", json_string("nats"));
    json_object_set_new(o, "client", client);
    json_object_set_new(o, "subject", json_string(a->subject));
    json_object_set_new(o, "request", json_stringn(a->request, a->request_len));
    json_object_set_new(o, "response", json_string(response));
    nd_js_t *js = NULL;
    (void)js;
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (text != NULL) {
        nd_iclient_publish(ctx, ic, AUDIT_SUBJECT, NULL, NULL, 0, text, strlen(text));
        free(text);
    }
}
