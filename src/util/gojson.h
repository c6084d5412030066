/* JSON from clients decoded as nats-server decodes it: Go's encoding/json unmarshalling into a
 * struct (CONNECT into ClientOpts, a client's INFO into Info). jansson is stricter than Go in
 * places a client can reach, and looser in how keys name fields; these helpers close the gap so
 * that what nats-server accepts is accepted here, and means the same thing. See gojson.c.
 */
#ifndef ND_GOJSON_H
#define ND_GOJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Decodes len bytes of text as Go's json.Unmarshal into a struct accepts them: invalid UTF-8 and
 * lone surrogate escapes inside strings become U+FFFD, as in Go; `\u0000` becomes U+FFFD too (a
 * C string cannot hold a NUL, and cutting the string there would make "secret\u0000x" equal
 * "secret"; Go keeps the NUL, so the value equals neither there nor here); the literal `null`
 * decodes to an empty object (Go leaves the struct as it was). Ctx: any thread.
 * Returns: a new reference to an object, or NULL when Go would fail (bad syntax, not an object). */
json_t *nd_gojson_load_object(const char *text, size_t len);

/* Returns: whether the JSON key names the struct field `name` (lower-case ASCII, as in the json
 * tags) under Go's matching: ASCII letters in any case, other bytes exact, and U+017F (long s)
 * and U+212A (Kelvin sign) standing for 's' and 'k' (Go's case folding). */
bool nd_gojson_key_is(const char *key, const char *name);

/* Returns: the value Go would store in field `name`: that of the last key of o (in document
 * order) that names it and is not null, since each such key assigns the field in turn and a null
 * assigns nothing; NULL when none does.
 * Borrows: owned by o. (Two keys that are byte-identical are already merged by jansson, keeping
 * the last value at the first one's place.) */
json_t *nd_gojson_field(json_t *o, const char *name);

/* Replaces, in o and every object nested in it, the value of every key that contains "pass",
 * "token", "sig" or "jwt" in any case (Go's folding as above) with the string "[REDACTED]", so
 * that a trace of the JSON shows no secret under whatever spelling the client used. */
void nd_gojson_redact(json_t *o);

#endif
