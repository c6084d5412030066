/* JetStream API errors: nats-server's whole ApiError table (server/errors.json), declared once.
 *
 * Every entry has an HTTP-like `code`, a numeric `err_code` that clients match on, and a
 * description that may hold {placeholders} (e.g. "stream name in subject does not match
 * request", "wrong last sequence: {seq}", "restore failed: {err}", or just "{err}"). The
 * enum names follow nats-server's constants: JSStreamNotFoundErr -> ND_JSE_STREAM_NOT_FOUND,
 * JSStreamInvalidConfigF -> ND_JSE_STREAM_INVALID_CONFIG_F (JS prefix dropped, Err dropped,
 * a trailing F kept as _F, CamelCase to UPPER_SNAKE).
 *
 * An nd_jserr_t is one error with its description already filled in; it is what validation
 * functions report and what the API turns into `"error":{"code","err_code","description"}`.
 */
#ifndef ND_JS_JSERR_H
#define ND_JS_JSERR_H

#include <jansson.h>
#include <stdbool.h>

#include "js/jserr_table.h" /* ND_JSE_TABLE(X): X(NAME, code, err_code, "description") */

typedef enum nd_jse {
    ND_JSE_NONE = 0,
#define ND_JSE_ENUM(name, code, err_code, desc) ND_JSE_##name,
    ND_JSE_TABLE(ND_JSE_ENUM)
#undef ND_JSE_ENUM
    ND_JSE_COUNT
} nd_jse_t;

typedef struct nd_jse_info {
    int code;        /* 400, 404, 500, 503, ... */
    int err_code;    /* 10059, ... */
    const char *desc; /* with {placeholders} */
} nd_jse_info_t;

/* One error, ready to send. desc has every placeholder substituted. */
typedef struct nd_jserr {
    nd_jse_t e;
    int code, err_code;
    char desc[512];
} nd_jserr_t;

const nd_jse_info_t *nd_jse_info(nd_jse_t e);

/* Fills *out with e; the variadic arguments are NULL-terminated pairs of placeholder name
 * (without braces) and value, e.g. nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F,
 * "seq", "42", NULL). A placeholder with no value given is left as written. Returns: false,
 * so a validator can `return nd_jserr_set(...)`. */
bool nd_jserr_set(nd_jserr_t *out, nd_jse_t e, ...);
/* As nd_jserr_set for the *_F errors whose only placeholder is {err}: printf-style text. */
bool nd_jserr_setf(nd_jserr_t *out, nd_jse_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* {"code":..,"err_code":..,"description":".."}: a new reference. */
json_t *nd_jserr_json(const nd_jserr_t *err);

#endif
