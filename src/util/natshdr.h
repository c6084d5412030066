/* Reading a NATS message's header block ("NATS/1.0[ status]\r\nKey: value\r\n...\r\n"): the one
 * header getter of the JetStream publish path and the store (Nats-TTL, Nats-Msg-Id, ...).
 * Ctx: any thread. */
#ifndef ND_UTIL_NATSHDR_H
#define ND_UTIL_NATSHDR_H

#include <stddef.h>

/* The value of header key in hdr[0..len): the first one, blanks trimmed; the key matches
 * exactly (case-sensitive, as nats-server's getHeader). Returns: a pointer into hdr with *n its
 * length, or NULL when absent. */
const char *nd_hdr_get(const void *hdr, size_t len, const char *key, size_t *n);

#endif
