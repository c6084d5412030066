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
