/* HTTP/1.x request parsing for the monitoring port (src/mon/http.c): pure functions over a byte
 * buffer, no allocation, no runtime, so they are unit-tested and fuzzed on their own
 * (tests/fuzz/fuzz_http.c).
 *
 * nd_http_parse() is called again on the same growing buffer as bytes arrive. Invariants the
 * fuzzer checks: a complete request is reported with total <= len, and with the same total for
 * every longer buffer that starts with it; every shorter prefix reports "more bytes needed" or
 * the same refusal; nothing is read at or past len.
 * Limits (each refused with the HTTP status in parentheses): request line ND_HTTP_MAX_LINE bytes
 * (414); line and headers ND_HTTP_MAX_HEAD bytes or ND_HTTP_MAX_HEADERS header lines (431); a
 * body over ND_HTTP_MAX_BODY (413); Transfer-Encoding (501: GET and HEAD carry no chunked
 * bodies); anything else that is not HTTP/1.0 or HTTP/1.1 (400), refused as soon as the first
 * bytes cannot begin a request line, so binary garbage never waits for a newline.
 * Reference: RFC 9112 (message syntax), RFC 9110 (tokens).
 */
#ifndef ND_HTTPPARSE_H
#define ND_HTTPPARSE_H

#include <stdbool.h>
#include <stddef.h>

#define ND_HTTP_MAX_LINE    8192
#define ND_HTTP_MAX_HEAD    16384
#define ND_HTTP_MAX_HEADERS 64
#define ND_HTTP_MAX_BODY    65536

/* One parsed request; the pointers borrow the parsed buffer. */
typedef struct nd_http_req {
    const char *method;
    size_t method_len;
    const char *target;
    size_t target_len;
    bool http11;
    bool keep;         /* keep-alive: HTTP/1.1 unless "Connection: close", 1.0 only if asked */
    const char *authz; /* the Authorization value, or NULL */
    size_t authz_len;
    const char *accept; /* the Accept value, or NULL (a repeated header: the last one) */
    size_t accept_len;
    size_t total; /* bytes of the request, body included */
} nd_http_req_t;

/* Parses one request at the start of buf[0..len). Returns: 0 when more bytes are needed, 1 when
 * complete (*pr filled), or the HTTP error status to answer before closing. Ctx: any thread. */
int nd_http_parse(const char *buf, size_t len, nd_http_req_t *pr);

/* Percent-decodes s[0..n) into out (which holds n + 1 bytes; the result is NUL-terminated and
 * at most n bytes); plus: '+' means a space (query strings). Returns: false on a bad escape. */
bool nd_http_pct_decode(const char *s, size_t n, char *out, bool plus);

/* Whether an Accept header value asks for OpenMetrics text rather than the Prometheus text
 * format: true when an "application/openmetrics-text" range has a q above 0 and at least the
 * highest q among the ranges that take text/plain (text/plain, text/<any>, <any>/<any>).
 * Prometheus sends openmetrics at q=1 (or unlisted q) and text/plain at 0.5. NULL or empty:
 * false. Ctx: any thread. */
bool nd_http_accepts_openmetrics(const char *v, size_t n);

/* The value (trimmed) of the idx-th header line named name (case-insensitive) of a request that
 * nd_http_parse found complete in buf. Returns: false when there are fewer such lines. */
bool nd_http_header(const char *buf, const nd_http_req_t *pr, const char *name, size_t idx,
                    const char **v, size_t *vn);

/* Case-insensitive comparison of a[0..alen) with the string b. */
bool nd_http_ieq(const char *a, size_t alen, const char *b);
/* Strips spaces and tabs at both ends of (*p, *n). */
void nd_http_trim(const char **p, size_t *n);

#endif
