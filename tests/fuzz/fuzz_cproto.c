/* libFuzzer driver for a consumer's wire formats (src/js/consumer_proto.c).
 *
 * Input: one text, read as an ack reply subject, an ack body and a pull request body, each from
 * an exactly sized heap copy so ASan sees any read past it. Checks what consumer_proto.h
 * promises: a parsed ack subject points inside the input and formats back to a subject that
 * parses to the same numbers; an ack body's kind is known and its argument lies inside the
 * body; a NXT argument parses as a pull request; a pull request either succeeds with an empty
 * status or fails with a "400 "/"409 " status cut within its room; Go durations of the parsed
 * values always fit their buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "js/consumer_proto.h"
#include "util/timefmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
inside(const char *p, size_t n, const char *base, size_t len)
{
    return p >= base && p + n <= base + len;
}

static void
check_pull(const char *s, size_t n)
{
    js_pull_caps_t caps = {.max_batch = 100, .max_expires_ns = 5000000000, .max_bytes = 1 << 20};
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX];
    memset(st, 'z', sizeof st);
    bool ok = js_pull_req_parse(s, n, (n & 1) ? &caps : NULL, &r, st, sizeof st);
    if (memchr(st, '\0', sizeof st) == NULL)
        abort();
    if (ok ? st[0] != '\0' : strncmp(st, "400 ", 4) != 0 && strncmp(st, "409 ", 4) != 0)
        abort();
    if (memchr(r.group, '\0', sizeof r.group) == NULL || memchr(r.id, '\0', sizeof r.id) == NULL)
        abort();
    char d[40];
    if (nd_time_go_duration(d, sizeof d, r.expires_ns) == 0 ||
        nd_time_go_duration(d, sizeof d, r.heartbeat_ns) == 0)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (s == NULL)
        abort();
    memcpy(s, data, size);

    js_ack_subj_t a;
    if (js_ack_subj_parse(s, size, &a)) {
        if (!inside(a.stream, a.stream_len, s, size) ||
            !inside(a.consumer, a.consumer_len, s, size) || a.stream_len == 0 ||
            a.consumer_len == 0 || (a.domain != NULL && !inside(a.domain, a.domain_len, s, size)))
            abort();
        char *st = strndup(a.stream, a.stream_len), *co = strndup(a.consumer, a.consumer_len);
        char *buf = malloc(JS_ACK_SUBJ_MAX + a.stream_len + a.consumer_len);
        if (st == NULL || co == NULL || buf == NULL)
            abort();
        size_t n = js_ack_subj_format(buf, st, co, a.delivered, a.sseq, a.dseq, a.ts, a.pending);
        js_ack_subj_t b;
        /* names holding '.' or NUL split differently; the numbers must survive otherwise */
        if (memchr(a.stream, '.', a.stream_len) == NULL &&
            memchr(a.consumer, '.', a.consumer_len) == NULL && strlen(st) == a.stream_len &&
            strlen(co) == a.consumer_len) {
            if (!js_ack_subj_parse(buf, n, &b) || b.delivered != a.delivered || b.sseq != a.sseq ||
                b.dseq != a.dseq || b.ts != a.ts || b.pending != a.pending)
                abort();
        }
        free(st);
        free(co);
        free(buf);
    }

    js_ack_body_t k;
    js_ack_body_parse(s, size, &k);
    if (k.kind > JS_ACK_NONE || (k.arg != NULL && !inside(k.arg, k.arg_len, s, size)) ||
        (k.arg == NULL && k.arg_len != 0) || (k.kind != JS_ACK_NAK && k.has_delay))
        abort();
    if (k.kind == JS_ACK_NEXT)
        check_pull(k.arg, k.arg_len);

    check_pull(s, size);
    free(s);
    return 0;
}
