/* Small helpers the multi-server integration tests share (test_cluster.c, test_gateway.c, ...):
 * a monotonic clock for hang guards, the gap between two polls of a monitoring endpoint, ports
 * that are not handed out twice, formatted send/expect on a raw connection, a monitoring
 * endpoint as JSON, and whether a node's binary is the reference nats-server. What a test suite
 * means by a node (its config, its ports) stays in its own file. */
#ifndef ND_INTEG_UTIL_H
#define ND_INTEG_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"

/* Milliseconds on the monotonic clock (for deadlines, never for assertions on time). */
int64_t nd_integ_now_ms(void);

/* Sleeps a poll interval (20 ms): the gap between two looks at a monitoring endpoint, not a
 * wait for anything in particular. */
void nd_integ_poll_gap(void);

/* A free port not handed out before in this process: nd_integ_free_port closes the socket it
 * bound, so two calls in a row could otherwise return the same port. */
int nd_integ_fresh_port(void);

/* GETs path from the monitoring port and fails the test unless the body is a JSON object.
 * Returns: owned by the caller (json_decref). */
json_t *nd_integ_get_json(int port, const char *path);

/* nd_integ_send / nd_integ_expect of a printf-formatted string (failures name the caller's
 * file and line). */
void nd_integ_sendf_at(const char *file, int line, nd_integ_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void nd_integ_expectf_at(const char *file, int line, nd_integ_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define nd_integ_sendf(c, ...)   nd_integ_sendf_at(__FILE__, __LINE__, (c), __VA_ARGS__)
#define nd_integ_expectf(c, ...) nd_integ_expectf_at(__FILE__, __LINE__, (c), __VA_ARGS__)

/* Returns: whether the binary at bin (the server under test or another) is the reference
 * nats-server. */
bool nd_integ_bin_is_reference(const char *bin);

#endif
