/* Small pieces of the JetStream message path: reading a header of a NATS/1.0 block and
 * applying a stream's subject transform. (Nats-TTL values: nd_store_parse_ttl.) */
#ifndef ND_JS_JSHDR_H
#define ND_JS_JSHDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "subj/transform.h"

/* The value of header key in hdr[0..len) ("NATS/1.0...\r\nKey: value\r\n..."), the first one,
 * blanks trimmed; the key matches exactly (case-sensitive, as nats-server's getHeader).
 * Returns: a pointer into hdr with *n its length, or NULL when absent. */
const char *js_hdr_get(const char *hdr, size_t len, const char *key, size_t *n);

/* Applies src -> dest to subj, compiling the transform into *cache on first use.
 * Returns: true with the result in out, false when the source does not match. */
bool js_xform(nd_xf_t **cache, const char *src, const char *dest, const char *subj, size_t len,
              char *out, size_t cap);

#endif
