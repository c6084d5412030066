/* Raw-protocol helpers of the JetStream consumer tests (test_jscons.c, test_jsconsbad.c):
 * API requests on the inbox API (sid 1 of the test's connection), streams, publishes, consumer
 * info checks, pull requests and their status messages. Each *_at takes the caller's file and
 * line for its failure message; the macros pass them. */
#ifndef ND_INTEG_JSCONS_UTIL_H
#define ND_INTEG_JSCONS_UTIL_H

#include <jansson.h>
#include <stdbool.h>

#include "harness.h"

/* API replies arrive on API (sid 1); pull requests and ack replies use subjects under _P. (sid 2).
 */
#define API "_R.1"

json_t *api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body);
#define api(c, subj, body) api_at(__FILE__, __LINE__, (c), (subj), (body))

/* Expects the API error {"type":T,"error":{"code":code,"err_code":err,"description":desc}} and no
 * other key. desc NULL: any description starting with "invalid JSON" (2.9.10 says just that, 2.10+
 * append ": <decoder error>"). */
void api_err_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
                const char *type, int code, int err, const char *desc);
#define T_CREATE "io.nats.jetstream.api.v1.consumer_create_response"
#define T_INFO   "io.nats.jetstream.api.v1.consumer_info_response"
#define T_DELETE "io.nats.jetstream.api.v1.consumer_delete_response"
#define T_NAMES  "io.nats.jetstream.api.v1.consumer_names_response"
#define T_LIST   "io.nats.jetstream.api.v1.consumer_list_response"
#define API_ERR(c, subj, body, type, code, err, desc)                                              \
    api_err_at(__FILE__, __LINE__, (c), (subj), (body), (type), (code), (err), (desc))

/* Creates a stream from its config (a JSON object text). */
void stream_at(const char *file, int line, nd_integ_conn_t *c, const char *name, const char *cfg);
#define stream(c, name, cfg) stream_at(__FILE__, __LINE__, (c), (name), (cfg))

/* Publishes with a reply and expects the PubAck {"stream":S, "seq":N} exactly. */
void pub_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
            const char *stream, long long seq);
#define pub(c, subj, body, stream, seq)                                                            \
    pub_at(__FILE__, __LINE__, (c), (subj), (body), (stream), (seq))

json_t *info_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *name);
#define info(c, s, name) info_at(__FILE__, __LINE__, (c), (s), (name))

/* Fails unless j has each integer "path=value" of the NULL-terminated list. */
void ints_at(const char *file, int line, json_t *j, const char *const *kv);
#define INTS(j, ...) ints_at(__FILE__, __LINE__, (j), (const char *const[]){__VA_ARGS__, NULL})

/* Sends a pull request for consumer s/n with reply inbox and body. */
void next_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *n,
             const char *inbox, const char *body);
#define next(c, s, n, inbox, body) next_at(__FILE__, __LINE__, (c), (s), (n), (inbox), (body))

/* Expects the status message "NATS/1.0 <status>" with the header lines extra (may be "") on
 * inbox, with an empty payload and no reply subject. */
void status_at(const char *file, int line, nd_integ_conn_t *c, const char *inbox,
               const char *status, const char *extra);
#define STATUS(c, inbox, status, extra)                                                            \
    status_at(__FILE__, __LINE__, (c), (inbox), (status), (extra))
#define PENDING(n, b) "Nats-Pending-Messages: " #n "\r\nNats-Pending-Bytes: " #b "\r\n"

/* A stream S on s.> with messages s.1 "m1" .. s.<n> "m<n>". */
void stream_s(nd_integ_conn_t *c, int n);

#endif
