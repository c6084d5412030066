/* What the JetStream integration tests share: failing with the caller's line, reading a MSG or
 * HMSG frame into its parts, and paths into JSON replies. (Each test program keeps its own
 * request helpers: their framing and expectations differ.) */
#ifndef ND_INTEG_JSPROTO_H
#define ND_INTEG_JSPROTO_H

#include <jansson.h>
#include <stddef.h>

#include "harness.h"

/* Fails the test at file:line with a printf message. */
void jfail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* One MSG or HMSG as received. */
typedef struct js_msg {
    char *line;            /* the control line without CRLF */
    char *subject, *reply; /* reply NULL when the line has none */
    char *hdr;             /* NULL for MSG; NUL-terminated header block for HMSG */
    size_t hdr_len;
    char *data; /* NUL-terminated payload */
    size_t data_len;
} js_msg_t;

void js_msg_free(js_msg_t *m);
/* Reads the next frame, which must be a MSG or HMSG, and splits it. Fields are separated by one
 * or more spaces: nats-server frames its internal replies with an empty reply subject (two). */
js_msg_t js_read_msg_at(const char *file, int line, nd_integ_conn_t *c);

/* The value at a dotted path ("state.messages") of j, or NULL. */
json_t *jget(json_t *j, const char *path);
/* The integer at path; fails the test when it is not one. */
long long jint_at(const char *file, int line, json_t *j, const char *path);
#define jint(j, path) jint_at(__FILE__, __LINE__, (j), (path))

#endif
