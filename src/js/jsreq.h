/* Typed decoding of the small JetStream API requests (info, names, list, purge, message get and
 * delete, snapshot), as nats-server decodes them into Go structs: Go's syntax errors, a value
 * of the wrong type is "json: cannot unmarshal string into Go struct field
 * JSApiStreamPurgeRequest.seq of type uint64" (10025), keys match case-insensitively, null
 * leaves a field unset, and in strict mode (jetstream { strict: true }) an unknown key is
 * "json: unknown field \"x\"". A request is refused as a whole: nothing is done with a body
 * that did not decode (a purge with "seq":"x" purges nothing).
 * The stream config has its own, bigger decoder (stream_cfg.c) on the same JSON reader. */
#ifndef ND_JS_JSREQ_H
#define ND_JS_JSREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "js/apijson.h"
#include "js/jserr.h"

typedef enum { JS_RT_U64, JS_RT_INT, JS_RT_STR, JS_RT_BOOL, JS_RT_TIME, JS_RT_STRS } js_rtype_t;

typedef struct js_rfield {
    const char *name;
    js_rtype_t type;
} js_rfield_t;

/* One decoded field; set says whether the body had it (not null). */
typedef struct js_rval {
    bool set;
    uint64_t u;        /* U64 */
    int64_t i;         /* INT */
    const char *s;     /* STR, TIME (the text); borrowed from the request */
    bool b;            /* BOOL */
    const json_t *arr; /* STRS: an array of strings */
} js_rval_t;

#define JS_REQ_MAX_FIELDS 12

typedef struct js_req {
    nd_apijson_t aj;
    js_rval_t v[JS_REQ_MAX_FIELDS];
} js_req_t;

/* Decodes body[0..len) (empty: no fields) into r->v, one per fields[i]. goname: the Go struct
 * for error texts. Returns: true, or false with err (10025) and nothing to free. */
bool js_req_decode(const char *body, size_t len, bool strict, const char *goname,
                   const js_rfield_t *fields, size_t n, js_req_t *r, nd_jserr_t *err);
void js_req_free(js_req_t *r);

/* Whether body is empty as nats-server sees it (nothing, blanks, or "{}"). */
bool js_req_empty(const char *body, size_t len);

#endif
