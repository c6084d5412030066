/* Consumer state codec: nd_consumer_state_t <-> msgpack bytes.
 *
 * Both stores persist a consumer's state with this codec (the file store in its consumer file, the
 * snapshot format in its consumer records), so one byte format serves both. The encoding is a
 * msgpack array whose first element is a format version; a decoder refuses a newer version
 * (ND_ERR_STORE_VERSION) rather than guessing at fields it does not know.
 *
 * Ctx: any thread; pure functions (they only allocate).
 */
#ifndef NATSD_JS_CSTATE_H
#define NATSD_JS_CSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "js/store/store.h"

/* The format version nd_cstate_encode writes. */
#define ND_CSTATE_VERSION 1

/* Encodes cs; out of memory aborts, as nd_xmalloc does.
 * Owns: *out (allocated by msgpack with malloc, the caller frees it with free()). */
void nd_cstate_encode(const nd_consumer_state_t *cs, uint8_t **out, size_t *len);

/* Decodes len bytes at p into *out (zeroed first; free with nd_consumer_state_free).
 * Returns: ND_OK; ND_ERR_STORE_CORRUPT on any malformed or truncated input (never crashes,
 * *out is left empty); ND_ERR_STORE_VERSION for a newer format. */
ND_MUST_CHECK nd_err_t nd_cstate_decode(const uint8_t *p, size_t len, nd_consumer_state_t *out);

#endif
