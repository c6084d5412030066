/* libFuzzer driver for the monitoring port's HTTP request parser (src/util/httpparse.c).
 *
 * Input: the bytes a client sends. Every call gets an exactly sized heap copy, so ASan reports any
 * read at or past len. Checks the invariants httpparse.h promises for incremental parsing (the
 * HTTP actor re-parses its growing buffer as bytes arrive): a complete request has total <= len
 * and slices inside the buffer; every longer buffer starting with it reports the same total, and
 * every shorter prefix reports "more bytes needed" or the same refusal as the whole; a refusal is
 * one of the statuses the parser documents. The percent decoder never writes past n + 1 bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/httpparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
parse_copy(const uint8_t *data, size_t len, nd_http_req_t *pr)
{
    char *buf = malloc(len ? len : 1);
    if (buf == NULL)
        abort();
    memcpy(buf, data, len);
    int rc = nd_http_parse(buf, len, pr);
    if (rc == 1) {
        if (pr->total > len || pr->method < buf || pr->method + pr->method_len > buf + len ||
            pr->target < buf || pr->target + pr->target_len > buf + len)
            abort();
        if (pr->authz != NULL && (pr->authz < buf || pr->authz + pr->authz_len > buf + len))
            abort();
        char *t = malloc(pr->target_len + 1);
        if (t == NULL)
            abort();
        if (nd_http_pct_decode(pr->target, pr->target_len, t, true) && strlen(t) > pr->target_len)
            abort();
        free(t);
    }
    free(buf);
    return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 3 * ND_HTTP_MAX_HEAD)
        return 0;
    nd_http_req_t whole;
    int rc = parse_copy(data, size, &whole);
    if (rc != 0 && rc != 1 && rc != 400 && rc != 413 && rc != 414 && rc != 431 && rc != 501)
        abort();
    /* Prefixes, at a few cut points (all of them for short inputs). */
    size_t step = size > 256 ? size / 61 + 1 : 1;
    for (size_t n = 0; n < size; n += step) {
        nd_http_req_t p;
        int prc = parse_copy(data, n, &p);
        if (rc == 1) {
            if (n < whole.total && prc != 0)
                abort(); /* a prefix of a good request must only ask for more */
            if (n >= whole.total && (prc != 1 || p.total != whole.total))
                abort();
        } else if (rc != 0) {
            if (prc != 0 && prc != rc)
                abort(); /* a prefix may wait, or refuse the same way */
        } else if (prc != 0) {
            abort(); /* the whole is incomplete, so no prefix can be decided */
        }
    }
    return 0;
}
