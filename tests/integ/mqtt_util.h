/* Raw MQTT for the integration tests (test_mqtt.c, test_mqtt_natsd.c, test_ws.c): a TCP
 * connection to 127.0.0.1, whole sends and reads, and the encoder of MQTT 3.1.1 packets (the
 * big-endian integers, length-prefixed strings and the remaining length's variable byte
 * integer). What each suite expects of the server's packets stays in its own file. The names
 * are short on purpose: the tests build packets byte by byte with them. */
#ifndef ND_INTEG_MQTT_UTIL_H
#define ND_INTEG_MQTT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"

/* A packet or a packet's body being built (or read). */
typedef struct {
    uint8_t b[65536]; /* the reference's `#` also gets its JetStream advisories */
    size_t n;
} mbuf_t;

/* Appends n bytes at p (fails the test when they do not fit). */
void put(mbuf_t *m, const void *p, size_t n);
void put_u8(mbuf_t *m, uint8_t v);
/* A two-byte big-endian integer. */
void put_u16(mbuf_t *m, uint16_t v);
/* A length-prefixed string of n bytes (may hold a NUL). */
void put_strn(mbuf_t *m, const char *s, size_t n);
void put_str(mbuf_t *m, const char *s);
/* The variable byte integer of the remaining length. */
void put_rl(mbuf_t *m, size_t v);
/* A packet: fixed header byte h, the remaining length, then body (out is reset first). */
void pkt(mbuf_t *out, uint8_t h, const mbuf_t *body);

/* A TCP connection to 127.0.0.1:port (fails the test when refused). Returns: the socket. */
int tcp_dial(int port);
/* Sends all n bytes (fails the test on an error). */
void send_raw(int fd, const void *p, size_t n);
/* Reads exactly n bytes, each read within timeout_ms (else the test fails). Returns: false at
 * end of stream (a reset counts). */
bool recv_n_within(int fd, void *p, size_t n, int timeout_ms);
/* recv_n_within with the harness's guard, ND_INTEG_TIMEOUT_MS. */
bool recv_n(int fd, void *p, size_t n);

#endif
