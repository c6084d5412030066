/* The JSON body of a JetStream API request, read as nats-server reads it (Go's encoding/json):
 * the same syntax errors with Go's texts ("invalid character 'x' looking for beginning of
 * value", "unexpected end of JSON input"), invalid UTF-8 and lone surrogates in strings as
 * U+FFFD, and every number kept with its literal text, so that decoding it into a typed field
 * can report Go's type errors ("json: cannot unmarshal number 1.5 into Go struct field
 * StreamConfigRequest.max_msgs of type int64") and read uint64 values jansson cannot hold.
 *
 * A number is a json_integer when its literal is an integer that fits int64, else a json_real;
 * nd_apijson_num_text gives the literal either way. Ctx: any thread.
 */
#ifndef ND_JS_APIJSON_H
#define ND_JS_APIJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct nd_apijson {
    json_t *root; /* owned; an empty body is an empty object (nats-server decodes nothing) */
    /* The literal text of each number that is not a json_integer. */
    struct {
        const json_t *v;
        char *text;
    } * nums;
    size_t nnums;
} nd_apijson_t;

/* Parses text. strict: the error text is the one of Go's json.Decoder (" at offset N" after a
 * syntax error, "unexpected EOF" for a cut body), as nats-server's strict mode returns it;
 * otherwise that of json.Unmarshal. Returns: true, or false with err (Go's text) and nothing to
 * free. */
bool nd_apijson_parse(const char *text, size_t len, bool strict, nd_apijson_t *out, char *err,
                      size_t errlen);
void nd_apijson_free(nd_apijson_t *j);

/* The literal of number v (a json_integer or json_real of j), written into buf when it must be
 * printed. Returns: buf. */
const char *nd_apijson_num_text(const nd_apijson_t *j, const json_t *v, char *buf, size_t cap);

/* Go's name of v's JSON kind in type errors: "object", "array", "string", "number", "bool",
 * "null". */
const char *nd_apijson_kind(const json_t *v);

#endif
