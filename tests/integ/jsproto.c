/* See jsproto.h. */
#include "jsproto.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
jfail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    cr_assert_fail("%s:%d: %s", file, line, msg ? msg : fmt);
    abort(); /* not reached */
}

void
js_msg_free(js_msg_t *m)
{
    free(m->line);
    free(m->subject);
    free(m->reply);
    free(m->hdr);
    free(m->data);
    memset(m, 0, sizeof *m);
}

js_msg_t
js_read_msg_at(const char *file, int line, nd_integ_conn_t *c)
{
    char *f = nd_integ_read_frame_at(file, line, c);
    if (f == NULL)
        jfail(file, line, "the server closed the connection instead of replying");
    js_msg_t m = {0};
    char *eol = strstr(f, "\r\n");
    bool hmsg = strncmp(f, "HMSG ", 5) == 0;
    if (eol == NULL || !(hmsg || strncmp(f, "MSG ", 4) == 0)) {
        char *esc = nd_integ_escape(f, strlen(f), 300);
        jfail(file, line, "expected a MSG or HMSG, got \"%s\"", esc);
    }
    m.line = strndup(f, (size_t)(eol - f));
    char *tok[8];
    int n = 0;
    char *copy = strdup(m.line), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t != NULL && n < 8; t = strtok_r(NULL, " ", &save))
        tok[n++] = t;
    int want = hmsg ? 5 : 4; /* without a reply */
    if (n != want && n != want + 1)
        jfail(file, line, "malformed line \"%s\"", m.line);
    m.subject = strdup(tok[1]);
    m.reply = n == want + 1 ? strdup(tok[3]) : NULL;
    size_t total = strtoul(tok[n - 1], NULL, 10);
    size_t hl = hmsg ? strtoul(tok[n - 2], NULL, 10) : 0;
    free(copy);
    const char *body = eol + 2;
    if (hmsg) {
        m.hdr = strndup(body, hl);
        m.hdr_len = hl;
    }
    m.data_len = total - hl;
    m.data = malloc(m.data_len + 1);
    memcpy(m.data, body + hl, m.data_len);
    m.data[m.data_len] = '\0';
    free(f);
    return m;
}

json_t *
jget(json_t *j, const char *path)
{
    char *p = strdup(path), *save = NULL;
    for (char *t = strtok_r(p, ".", &save); t != NULL && j != NULL; t = strtok_r(NULL, ".", &save))
        j = json_object_get(j, t);
    free(p);
    return j;
}

long long
jint_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = jget(j, path);
    if (!json_is_integer(v)) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "%s is not an integer in %s", path, d);
    }
    return json_integer_value(v);
}

js_msg_t
js_expect_msg_at(const char *file, int line, nd_integ_conn_t *c, const char *subject,
                 const char *hdr, const char *data)
{
    js_msg_t m = js_read_msg_at(file, line, c);
    if (strcmp(m.subject, subject) != 0)
        jfail(file, line, "message on %s, expected one on %s: %s", m.subject, subject, m.line);
    if (hdr == NULL && m.hdr != NULL)
        jfail(file, line, "expected a MSG, got \"%s\" with headers \"%s\"", m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    if (hdr != NULL && (m.hdr == NULL || strcmp(m.hdr, hdr) != 0))
        jfail(file, line, "headers of \"%s\"\n  expected: \"%s\"\n  actual:   \"%s\"", m.line,
              nd_integ_escape(hdr, strlen(hdr), 300),
              m.hdr ? nd_integ_escape(m.hdr, m.hdr_len, 300) : "(a MSG without headers)");
    if (data != NULL && strcmp(m.data, data) != 0)
        jfail(file, line, "payload of \"%s\"\n  expected: \"%s\"\n  actual:   \"%s\"", m.line,
              nd_integ_escape(data, strlen(data), 300), nd_integ_escape(m.data, m.data_len, 300));
    return m;
}

void
js_msg_free_ret(js_msg_t m)
{
    js_msg_free(&m);
}

nd_integ_server_t *
js_server_start(nd_integ_conf_t *conf, const char *js_extra, const char *more)
{
    char store[256];
    nd_integ_conf_file(conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\"%s%s }\n%s", store,
                       js_extra ? ", " : "", js_extra ? js_extra : "", more ? more : "") > 0);
    nd_integ_server_t *srv = nd_integ_conf_start(conf, text);
    free(text);
    return srv;
}

nd_integ_conn_t *
js_conn_open_at(const char *file, int line, nd_integ_server_t *srv, const char *inbox)
{
    nd_integ_conn_t *c = nd_integ_conn_open_at(file, line, srv);
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
                     "%s%s%sPING\r\n",
                     inbox ? "SUB " : "", inbox ? inbox : "", inbox ? " 1\r\n" : "");
    nd_integ_send_at(file, line, c, buf, (size_t)n);
    nd_integ_expect_at(file, line, c, "PONG\r\n", 6);
    return c;
}

void
js_publish_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *reply,
              const char *hdrs, const char *body)
{
    size_t bl = strlen(body);
    char *buf = NULL;
    int n;
    if (hdrs == NULL) {
        n = asprintf(&buf, "PUB %s%s%s %zu\r\n%s\r\n", subj, reply ? " " : "", reply ? reply : "",
                     bl, body);
    } else {
        char *h = NULL;
        cr_assert(asprintf(&h, "NATS/1.0\r\n%s\r\n", hdrs) > 0);
        size_t hl = strlen(h);
        n = asprintf(&buf, "HPUB %s%s%s %zu %zu\r\n%s%s\r\n", subj, reply ? " " : "",
                     reply ? reply : "", hl, hl + bl, h, body);
        free(h);
    }
    cr_assert(n > 0);
    nd_integ_send_at(file, line, c, buf, (size_t)n);
    free(buf);
}

js_msg_t
js_request_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *inbox,
              const char *body)
{
    js_publish_at(file, line, c, subj, inbox, NULL, body);
    js_msg_t m = js_read_msg_at(file, line, c);
    if (strcmp(m.subject, inbox) != 0)
        jfail(file, line, "%s: reply on %s, expected %s: %s", subj, m.subject, inbox, m.line);
    return m;
}

json_t *
js_request_json_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                   const char *inbox, const char *body)
{
    js_msg_t m = js_request_at(file, line, c, subj, inbox, body);
    if (m.hdr != NULL)
        jfail(file, line, "%s: expected a JSON reply, got \"%s\" with headers \"%s\"", subj, m.line,
              nd_integ_escape(m.hdr, m.hdr_len, 300));
    json_error_t err;
    json_t *j = json_loadb(m.data, m.data_len, 0, &err);
    if (!json_is_object(j))
        jfail(file, line, "%s: reply is not a JSON object (%s): %s", subj, err.text, m.data);
    js_msg_free(&m);
    return j;
}

const char *
jstr_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = jget(j, path);
    if (!json_is_string(v)) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "%s is not a string in %s", path, d);
    }
    return json_string_value(v);
}
