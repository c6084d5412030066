/* Applying a stream's subject transform on the JetStream message path. (Headers:
 * util/natshdr.h; Nats-TTL values: nd_store_parse_ttl.) */
#ifndef ND_JS_JSXFORM_H
#define ND_JS_JSXFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "subj/transform.h"

/* Applies src -> dest to subj, compiling the transform into *cache on first use.
 * Returns: true with the result in out, false when the source does not match. */
bool js_xform(nd_xf_t **cache, const char *src, const char *dest, const char *subj, size_t len,
              char *out, size_t cap);

#endif
