/* What the JetStream integration tests share: failing with the caller's line, reading a MSG or
 * HMSG frame into its parts, paths into JSON replies, and (for programs written since, e.g.
 * test_jscons.c) the plain server/connection/request helpers. Older programs keep their own
 * request helpers where their framing and expectations differ. */
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
#define js_read_msg(c) js_read_msg_at(__FILE__, __LINE__, (c))

/* The value at a dotted path ("state.messages") of j, or NULL. */
json_t *jget(json_t *j, const char *path);
/* The integer at path; fails the test when it is not one. */
long long jint_at(const char *file, int line, json_t *j, const char *path);
#define jint(j, path) jint_at(__FILE__, __LINE__, (j), (path))

/* Fails unless the next frame is a message on subject whose header block is exactly hdr (NULL:
 * a MSG without headers) and whose payload is exactly data. Returns: the message (owned). */
js_msg_t js_expect_msg_at(const char *file, int line, nd_integ_conn_t *c, const char *subject,
                          const char *hdr, const char *data);
#define js_expect_msg(c, subject, hdr, data)                                                       \
    js_msg_free_ret(js_expect_msg_at(__FILE__, __LINE__, (c), (subject), (hdr), (data)))
/* Frees a message returned by value (for macros that do not keep it). */
void js_msg_free_ret(js_msg_t m);

/* ---- servers, connections and requests ---- */

/* Starts a server whose config is `jetstream { store_dir: "<conf dir>/store"[, js_extra] }` and
 * then `more` (both may be NULL). Returns: an owned handle (stop it with nd_integ_conf_stop). */
nd_integ_server_t *js_server_start(nd_integ_conf_t *conf, const char *js_extra, const char *more);

/* Connects with headers and no_responders on (as JetStream clients do) and, unless inbox is NULL,
 * subscribes to inbox with sid 1. Returns: an owned connection. */
nd_integ_conn_t *js_conn_open_at(const char *file, int line, nd_integ_server_t *srv,
                                 const char *inbox);
#define js_conn_open(srv, inbox) js_conn_open_at(__FILE__, __LINE__, (srv), (inbox))

/* Publishes body on subj with reply (NULL: none) and header lines hdrs (NULL: a PUB; else the
 * lines after "NATS/1.0", e.g. "A: 1\r\n", without the final blank line). */
void js_publish_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                   const char *reply, const char *hdrs, const char *body);
#define js_publish(c, subj, reply, hdrs, body)                                                     \
    js_publish_at(__FILE__, __LINE__, (c), (subj), (reply), (hdrs), (body))

/* Publishes body on subj with reply inbox and returns the next message, which must arrive on
 * inbox. Returns: owned. */
js_msg_t js_request_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                       const char *inbox, const char *body);

/* A $JS.API request: the reply (on inbox) must be a MSG holding a JSON object. Returns: owned. */
json_t *js_request_json_at(const char *file, int line, nd_integ_conn_t *c, const char *subj,
                           const char *inbox, const char *body);

/* The string at path; fails the test when it is not one. Borrows: j's storage. */
const char *jstr_at(const char *file, int line, json_t *j, const char *path);
#define jstr(j, path) jstr_at(__FILE__, __LINE__, (j), (path))

#endif
