/* Raw-protocol helpers of the JetStream consumer tests: see jscons_util.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "jscons_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsproto.h"

json_t *
api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    return js_request_json_at(file, line, c, subj, API, body);
}

/* Expects the API error {"type":T,"error":{"code":code,"err_code":err,"description":desc}} and no
 * other key. desc NULL: any description starting with "invalid JSON" (2.9.10 says just that, 2.10+
 * append ": <decoder error>"). */
void
api_err_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
           const char *type, int code, int err, const char *desc)
{
    json_t *j = api_at(file, line, c, subj, body);
    char *d = json_dumps(j, JSON_COMPACT);
    json_t *e = json_object_get(j, "error");
    const char *got = json_string_value(json_object_get(e, "description"));
    const char *t = json_string_value(json_object_get(j, "type"));
    bool ok = json_object_size(j) == 2 && t != NULL && strcmp(t, type) == 0 &&
              json_object_size(e) == 3 && json_integer_value(json_object_get(e, "code")) == code &&
              json_integer_value(json_object_get(e, "err_code")) == err && got != NULL &&
              (desc ? strcmp(got, desc) == 0
                    : strncmp(got, "invalid JSON", 12) == 0 &&
                          (!nd_integ_is_reference() || strcmp(got, "invalid JSON") == 0));
    if (!ok)
        jfail(file, line, "%s: expected error %d/%d \"%s\" of type %s, got %.2000s", subj, code,
              err, desc ? desc : "invalid JSON...", type, d);
    free(d);
    json_decref(j);
}

/* Creates a stream from its config (a JSON object text). */
void
stream_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *cfg)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    json_t *j = api_at(file, line, c, subj, cfg);
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "stream %s: %s", name, d);
    }
    json_decref(j);
}

/* Publishes with a reply and expects the PubAck {"stream":S, "seq":N} exactly. */
void
pub_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
       const char *stream, long long seq)
{
    char want[300];
    snprintf(want, sizeof want, "{\"stream\":\"%s\", \"seq\":%lld}", stream, seq);
    js_publish_at(file, line, c, subj, API, NULL, body);
    js_msg_free_ret(js_expect_msg_at(file, line, c, API, NULL, want));
}

json_t *
info_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.%s.%s", s, name);
    json_t *j = api_at(file, line, c, subj, "");
    if (json_object_get(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "consumer info %s: %s", name, d);
    }
    return j;
}

/* Fails unless j has each integer "path=value" of the NULL-terminated list. */
void
ints_at(const char *file, int line, json_t *j, const char *const *kv)
{
    for (int i = 0; kv[i] != NULL; i++) {
        const char *eq = strchr(kv[i], '=');
        char path[128];
        snprintf(path, sizeof path, "%.*s", (int)(eq - kv[i]), kv[i]);
        long long want = strtoll(eq + 1, NULL, 10), got = jint_at(file, line, j, path);
        if (got != want) {
            char *d = json_dumps(j, JSON_COMPACT);
            jfail(file, line, "%s is %lld, expected %lld in %s", path, got, want, d);
        }
    }
}

/* Sends a pull request for consumer s/n with reply inbox and body. */
void
next_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *n,
        const char *inbox, const char *body)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", s, n);
    js_publish_at(file, line, c, subj, inbox, NULL, body);
}

/* Expects the status message "NATS/1.0 <status>" with the header lines extra (may be "") on
 * inbox, with an empty payload and no reply subject. */
void
status_at(const char *file, int line, nd_integ_conn_t *c, const char *inbox, const char *status,
          const char *extra)
{
    char hdr[512];
    snprintf(hdr, sizeof hdr, "NATS/1.0 %s\r\n%s\r\n", status, extra);
    js_msg_t m = js_expect_msg_at(file, line, c, inbox, hdr, "");
    if (m.reply != NULL)
        jfail(file, line, "status %s came with reply %s", status, m.reply);
    js_msg_free(&m);
}

/* A stream S on s.> with messages s.1 "m1" .. s.<n> "m<n>". */
void
stream_s(nd_integ_conn_t *c, int n)
{
    stream(c, "S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    for (int i = 1; i <= n; i++) {
        char subj[32], body[32];
        snprintf(subj, sizeof subj, "s.%d", i);
        snprintf(body, sizeof body, "m%d", i);
        pub(c, subj, body, "S", i);
    }
}
