/* A consumer's wire formats (js/consumer_proto.h): $JS.ACK subjects both ways, ack bodies as
 * nats-server's processAck classifies them, pull requests with nats-server's status texts, the
 * status header builders and Go's Duration.String().
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "js/consumer_proto.h"
#include "util/timefmt.h"

/* ---- $JS.ACK subjects ---- */

static bool
ack_parse(const char *s, js_ack_subj_t *a)
{
    return js_ack_subj_parse(s, strlen(s), a);
}

static void
expect_tok(const char *p, size_t n, const char *want)
{
    cr_assert_not_null(p);
    cr_expect_eq(n, strlen(want));
    cr_expect(memcmp(p, want, n) == 0, "token %.*s != %s", (int)n, p, want);
}

Test(consumer_proto, ack_subj_nine_tokens)
{
    js_ack_subj_t a;
    cr_assert(ack_parse("$JS.ACK.ORDERS.worker.3.1042.7.1700000000123456789.12", &a));
    expect_tok(a.stream, a.stream_len, "ORDERS");
    expect_tok(a.consumer, a.consumer_len, "worker");
    cr_expect_eq(a.delivered, 3);
    cr_expect_eq(a.sseq, 1042);
    cr_expect_eq(a.dseq, 7);
    cr_expect_eq(a.ts, INT64_C(1700000000123456789));
    cr_expect_eq(a.pending, 12);
    cr_expect_null(a.domain);
}

Test(consumer_proto, ack_subj_domain_form)
{
    js_ack_subj_t a;
    cr_assert(ack_parse("$JS.ACK.hub.ACCHASH.S.C.1.2.3.4.5.rnd", &a));
    expect_tok(a.domain, a.domain_len, "hub");
    expect_tok(a.stream, a.stream_len, "S");
    expect_tok(a.consumer, a.consumer_len, "C");
    cr_expect_eq(a.delivered, 1);
    cr_expect_eq(a.sseq, 2);
    cr_expect_eq(a.dseq, 3);
    cr_expect_eq(a.ts, 4);
    cr_expect_eq(a.pending, 5);
    /* "_" is no domain; extra tokens after the 12th are allowed */
    cr_assert(ack_parse("$JS.ACK._.H.S.C.1.2.3.4.5.r.x.y", &a));
    cr_assert_not_null(a.domain);
    cr_expect_eq(a.domain_len, 0);
    cr_expect_eq(a.pending, 5);
}

Test(consumer_proto, ack_subj_bounds)
{
    js_ack_subj_t a;
    cr_assert(ack_parse("$JS.ACK.S.C.18446744073709551615.0.0.9223372036854775807.0", &a));
    cr_expect_eq(a.delivered, UINT64_MAX);
    cr_expect_eq(a.ts, INT64_MAX);
    /* len bounds the subject: the rest is not read */
    const char *s = "$JS.ACK.S.C.1.2.3.4.5.garbage";
    cr_assert(js_ack_subj_parse(s, strlen(s) - 8, &a));
    cr_expect_eq(a.pending, 5);
}

Test(consumer_proto, ack_subj_malformed)
{
    static const char *const bad[] = {
        "",
        "$JS.ACK",
        "$JS.ACK.S.C.1.2.3.4",       /* 8 tokens */
        "$JS.ACK.S.C.1.2.3.4.5.6",   /* 10 */
        "$JS.ACK.S.C.1.2.3.4.5.6.7", /* 11 */
        "$JS.ACK.D.H.S.C.1.2.3.4.5", /* 11 */
        "$JS.NAK.S.C.1.2.3.4.5",
        "$js.ACK.S.C.1.2.3.4.5",
        "$JS.ACKS.S.C.1.2.3.4.5",
        "JS.ACK.S.C.1.2.3.4.5",
        "$JS.ACK..C.1.2.3.4.5", /* empty stream */
        "$JS.ACK.S..1.2.3.4.5", /* empty consumer */
        "$JS.ACK.S.C..2.3.4.5", /* empty number */
        "$JS.ACK.S.C.1.2.3.4.",
        "$JS.ACK.S.C.x.2.3.4.5",
        "$JS.ACK.S.C.1.2a.3.4.5",
        "$JS.ACK.S.C.1.2.-3.4.5",
        "$JS.ACK.S.C.1.2.3.+4.5",
        "$JS.ACK.S.C.1.2.3.4. 5",
        "$JS.ACK.S.C.18446744073709551616.2.3.4.5", /* UINT64_MAX + 1 */
        "$JS.ACK.S.C.1.2.3.9223372036854775808.5",  /* ts above INT64_MAX */
        "$JS.ACK.S.C.1.2.3.4.99999999999999999999999999",
        "$JS.ACK..H.S.C.1.2.3.4.5.r", /* empty domain */
        "$JS.ACK.D.H.S.C.1.2.x.4.5.r",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        js_ack_subj_t a;
        memset(&a, 0x5a, sizeof a);
        cr_expect(!ack_parse(bad[i], &a), "accepted %s", bad[i]);
        cr_expect_null(a.stream, "stream left set for %s", bad[i]);
    }
    js_ack_subj_t a;
    cr_expect(!js_ack_subj_parse(NULL, 0, &a));
}

Test(consumer_proto, ack_subj_format_roundtrip)
{
    char buf[JS_ACK_SUBJ_MAX + 64];
    size_t n =
        js_ack_subj_format(buf, "ORDERS", "worker", 3, 1042, 7, INT64_C(1700000000123456789), 12);
    cr_expect_str_eq(buf, "$JS.ACK.ORDERS.worker.3.1042.7.1700000000123456789.12");
    cr_expect_eq(n, strlen(buf));
    n = js_ack_subj_format(buf, "s", "c", UINT64_MAX, UINT64_MAX, UINT64_MAX, INT64_MIN,
                           UINT64_MAX);
    cr_expect_str_eq(buf, "$JS.ACK.s.c.18446744073709551615.18446744073709551615."
                          "18446744073709551615.-9223372036854775808.18446744073709551615");
    cr_expect_leq(n - 2, JS_ACK_SUBJ_MAX);
    n = js_ack_subj_format(buf, "s", "c", 0, 0, 0, 0, 0);
    cr_expect_str_eq(buf, "$JS.ACK.s.c.0.0.0.0.0");
    js_ack_subj_t a;
    n = js_ack_subj_format(buf, "S", "C", 9, 8, 7, 6, 5);
    cr_assert(js_ack_subj_parse(buf, n, &a));
    cr_expect_eq(a.delivered, 9);
    cr_expect_eq(a.sseq, 8);
    cr_expect_eq(a.dseq, 7);
    cr_expect_eq(a.ts, 6);
    cr_expect_eq(a.pending, 5);
}

/* ---- ack bodies ---- */

static js_ack_body_t
body(const char *s)
{
    js_ack_body_t b;
    memset(&b, 0x5a, sizeof b);
    js_ack_body_parse(s, strlen(s), &b);
    return b;
}

static void
expect_arg(js_ack_body_t b, const char *want)
{
    if (want == NULL) {
        cr_expect_null(b.arg);
        cr_expect_eq(b.arg_len, 0);
        return;
    }
    expect_tok(b.arg, b.arg_len, want);
}

Test(consumer_proto, ack_body_acks)
{
    js_ack_body_t b;
    js_ack_body_parse(NULL, 0, &b);
    cr_expect_eq(b.kind, JS_ACK_ACK);
    cr_expect_eq(body("").kind, JS_ACK_ACK);
    cr_expect_eq(body("+ACK").kind, JS_ACK_ACK);
    cr_expect_eq(body("+OK").kind, JS_ACK_ACK);
    expect_arg(body("+ACK"), NULL);
    /* exact matches only: anything else does nothing in nats-server */
    cr_expect_eq(body("+ACK ").kind, JS_ACK_NONE);
    cr_expect_eq(body("+ack").kind, JS_ACK_NONE);
    cr_expect_eq(body("+OKAY").kind, JS_ACK_NONE);
    cr_expect_eq(body("hello").kind, JS_ACK_NONE);
    cr_expect_eq(body(" ").kind, JS_ACK_NONE);
    cr_expect_eq(body("+WPI").kind, JS_ACK_PROGRESS);
    cr_expect_eq(body("+WPI\r\n").kind, JS_ACK_NONE);
    cr_expect_eq(body("+wpi").kind, JS_ACK_NONE);
    /* a body with a NUL is compared by length */
    js_ack_body_parse("+ACK\0", 5, &b);
    cr_expect_eq(b.kind, JS_ACK_NONE);
    js_ack_body_parse("+ACKxyz", 4, &b);
    cr_expect_eq(b.kind, JS_ACK_ACK);
}

static void
expect_nak(const char *s, bool has, int64_t ns)
{
    js_ack_body_t b = body(s);
    cr_expect_eq(b.kind, JS_ACK_NAK, "%s", s);
    cr_expect_eq(b.has_delay, has, "%s: has_delay %d", s, b.has_delay);
    cr_expect_eq(b.delay_ns, has ? ns : 0, "%s: %lld", s, (long long)b.delay_ns);
    cr_expect_null(b.arg);
}

Test(consumer_proto, ack_body_nak)
{
    expect_nak("-NAK", false, 0);
    expect_nak("-NAK ", false, 0);
    expect_nak("-NAK \t\r\n", false, 0);
    expect_nak("-NAK 1s", true, 1000000000);
    expect_nak("-NAK 500ms", true, 500000000);
    expect_nak("-NAK 1.5s", true, 1500000000);
    expect_nak("-NAK 1h2m", true, INT64_C(3720000000000));
    expect_nak("-NAK 0", true, 0);
    expect_nak("-NAK -1s", true, -1000000000);
    expect_nak("-NAK  2us \n", true, 2000);
    expect_nak("-NAK 3\xc2\xb5s", true, 3000);
    expect_nak("-NAK\xc2\xa0"
               "4ns\xe3\x80\x80",
               true, 4);                    /* Unicode spaces trimmed */
    expect_nak("-NAK1s", true, 1000000000); /* a prefix, as in Go */
    /* bad durations: a plain NAK (nats-server only warns) */
    expect_nak("-NAK 1", false, 0);
    expect_nak("-NAK 1x", false, 0);
    expect_nak("-NAK soon", false, 0);
    expect_nak("-NAKED", false, 0);
    expect_nak("-NAK 9999999999999999999s", false, 0);
    expect_nak("-NAK 3000000h", false, 0);
    expect_nak("-NAK 1s 2s", false, 0);
    char longdur[300];
    memset(longdur, '0', sizeof longdur);
    memcpy(longdur, "-NAK ", 5);
    strcpy(longdur + sizeof longdur - 3, "s");
    expect_nak(longdur, false, 0);
    js_ack_body_t b;
    js_ack_body_parse("-NAK 1\0s", 8, &b);
    cr_expect_eq(b.kind, JS_ACK_NAK);
    cr_expect(!b.has_delay);
}

Test(consumer_proto, ack_body_nak_json)
{
    expect_nak("-NAK {\"delay\":1000}", true, 1000);
    expect_nak("-NAK {\"delay\": 2000000000 }", true, 2000000000);
    expect_nak("-NAK {\n\"delay\" :\t-5}", true, -5);
    expect_nak("-NAK {\"delay\":0}", true, 0);
    expect_nak("-NAK {}", true, 0); /* decodes: a delay of 0, not a plain NAK */
    expect_nak("-NAK {\"delay\":null}", true, 0);
    /* the slow path: Go's case-insensitive keys, other keys, last value wins, big numbers */
    expect_nak("-NAK {\"Delay\":7}", true, 7);
    expect_nak("-NAK {\"DELAY\":7,\"x\":[1,{}]}", true, 7);
    expect_nak("-NAK {\"delay\":1,\"Delay\":2}", true, 2);
    expect_nak("-NAK {\"delay\":9223372036854775807}", true, INT64_MAX);
    expect_nak("-NAK {\"delay\":-9223372036854775808}", true, INT64_MIN);
    /* errors: plain NAK */
    expect_nak("-NAK {\"delay\":9223372036854775808}", false, 0);
    expect_nak("-NAK {\"delay\":\"1s\"}", false, 0);
    expect_nak("-NAK {\"delay\":1.5}", false, 0);
    expect_nak("-NAK {\"delay\":1e3}", false, 0);
    expect_nak("-NAK {\"delay\":01}", false, 0);
    expect_nak("-NAK {\"delay\":true}", false, 0);
    expect_nak("-NAK {\"delay\":1", false, 0);
    expect_nak("-NAK {\"delay\":1} x", false, 0);
    expect_nak("-NAK {\"delay\":1}}", false, 0);
    expect_nak("-NAK {delay:1}", false, 0);
    expect_nak("-NAK {", false, 0);
}

Test(consumer_proto, ack_body_next_term)
{
    js_ack_body_t b = body("+NXT");
    cr_expect_eq(b.kind, JS_ACK_NEXT);
    cr_expect_eq(b.arg_len, 0);
    b = body("+NXT 10");
    cr_expect_eq(b.kind, JS_ACK_NEXT);
    expect_arg(b, " 10");
    b = body("+NXT {\"batch\":5}");
    expect_arg(b, " {\"batch\":5}");
    b = body("+NXTfoo");
    cr_expect_eq(b.kind, JS_ACK_NEXT);
    expect_arg(b, "foo");

    b = body("+TERM");
    cr_expect_eq(b.kind, JS_ACK_TERM);
    expect_arg(b, NULL);
    b = body("+TERM   ");
    cr_expect_eq(b.kind, JS_ACK_TERM);
    expect_arg(b, NULL);
    b = body("+TERM  bad payload \r\n");
    expect_arg(b, "bad payload");
    b = body("+TERMINATE");
    cr_expect_eq(b.kind, JS_ACK_TERM);
    expect_arg(b, "INATE");
    cr_expect_eq(body("+TER").kind, JS_ACK_NONE);
    cr_expect_eq(body("+NX").kind, JS_ACK_NONE);
    cr_expect_eq(body("-NA").kind, JS_ACK_NONE);
}

/* ---- pull requests ---- */

static bool
pull(const char *s, const js_pull_caps_t *caps, js_pull_req_t *r, char *st)
{
    return js_pull_req_parse(s, strlen(s), caps, r, st, JS_PULL_STATUS_MAX);
}

static void
expect_batch(const char *s, int64_t want)
{
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX] = "x";
    cr_expect(pull(s, NULL, &r, st), "%s: %s", s, st);
    cr_expect_eq(r.batch, want, "%s: batch %lld", s, (long long)r.batch);
    cr_expect_str_eq(st, "");
    cr_expect_eq(r.expires_ns, 0);
    cr_expect(!r.no_wait);
}

Test(consumer_proto, pull_plain)
{
    expect_batch("", 1);
    expect_batch(" \r\n\t", 1);
    expect_batch("10", 10);
    expect_batch(" 10\n", 10);
    expect_batch("+7", 7);
    expect_batch("-3", -3);
    expect_batch("0", 0);
    expect_batch("9223372036854775807", INT64_MAX);
    expect_batch("-9223372036854775808", INT64_MIN);
    /* Atoi fails: batch 1, no error */
    expect_batch("9223372036854775808", 1);
    expect_batch("99999999999999999999999", 1);
    expect_batch("abc", 1);
    expect_batch("1 2", 1);
    expect_batch("0x10", 1);
    expect_batch("1_000", 1);
    expect_batch("+", 1);
    expect_batch("-", 1);
    expect_batch("null", 1);
    expect_batch("[5]", 1);
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX];
    cr_expect(js_pull_req_parse(NULL, 0, NULL, &r, st, sizeof st));
    cr_expect_eq(r.batch, 1);
    cr_expect(js_pull_req_parse("5\0", 2, NULL, &r, st, sizeof st));
    cr_expect_eq(r.batch, 1);
}

Test(consumer_proto, pull_json_fields)
{
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX];
    cr_assert(pull("{\"batch\":5,\"expires\":30000000000,\"max_bytes\":1024,\"no_wait\":true,"
                   "\"idle_heartbeat\":5000000000,\"group\":\"g1\",\"min_pending\":3,"
                   "\"min_ack_pending\":4,\"id\":\"PINID\"}",
                   NULL, &r, st),
              "%s", st);
    cr_expect_eq(r.batch, 5);
    cr_expect_eq(r.expires_ns, INT64_C(30000000000));
    cr_expect_eq(r.max_bytes, 1024);
    cr_expect(r.no_wait);
    cr_expect_eq(r.heartbeat_ns, INT64_C(5000000000));
    cr_expect_str_eq(r.group, "g1");
    cr_expect_eq(r.min_pending, 3);
    cr_expect_eq(r.min_ack_pending, 4);
    cr_expect_str_eq(r.id, "PINID");
    cr_expect(!r.group_long && !r.id_long);

    /* no batch in JSON is 0, as Go decodes it */
    cr_assert(pull("{}", NULL, &r, st));
    cr_expect_eq(r.batch, 0);
    cr_assert(pull("  {\"expires\":1} ", NULL, &r, st));
    cr_expect_eq(r.batch, 0);
    cr_expect_eq(r.expires_ns, 1);
    /* Go's key matching, null, unknown keys, last wins */
    cr_assert(pull("{\"BATCH\":2,\"No_Wait\":true,\"x\":{\"y\":[]},\"batch\":null}", NULL, &r, st));
    cr_expect_eq(r.batch, 2);
    cr_expect(r.no_wait);
    cr_assert(pull("{\"batch\":2,\"Batch\":3}", NULL, &r, st));
    cr_expect_eq(r.batch, 3);
    /* negative values pass through */
    cr_assert(
        pull("{\"batch\":-1,\"expires\":-5,\"max_bytes\":-7,\"idle_heartbeat\":-1}", NULL, &r, st));
    cr_expect_eq(r.batch, -1);
    cr_expect_eq(r.expires_ns, -5);
    cr_expect_eq(r.max_bytes, -7);
    cr_expect_eq(r.heartbeat_ns, -1);
    /* over-long group and id */
    cr_assert(pull("{\"group\":\"0123456789abcdefXYZ\",\"id\":\"" /* 70 bytes */
                   "0123456789012345678901234567890123456789012345678901234567890123456789\"}",
                   NULL, &r, st));
    cr_expect(r.group_long);
    cr_expect_eq(strlen(r.group), 16);
    cr_expect(r.id_long);
    cr_expect_eq(strlen(r.id), 63);
    cr_assert(pull("{\"group\":\"0123456789abcdef\"}", NULL, &r, st));
    cr_expect(!r.group_long);
    cr_expect_str_eq(r.group, "0123456789abcdef");
}

static void
expect_status(const char *s, const js_pull_caps_t *caps, const char *want)
{
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX] = "";
    cr_expect(!pull(s, caps, &r, st), "%s accepted", s);
    cr_expect_str_eq(st, want, "%s: got \"%s\"", s, st);
}

Test(consumer_proto, pull_json_errors)
{
    expect_status("{\"batch\":\"5\"}", NULL,
                  "400 Bad Request - json: cannot unmarshal string into Go struct field "
                  "JSApiConsumerGetNextRequest.batch of type int");
    expect_status("{\"batch\":1.5}", NULL,
                  "400 Bad Request - json: cannot unmarshal number 1.5 into Go struct field "
                  "JSApiConsumerGetNextRequest.batch of type int");
    expect_status("{\"batch\":99999999999999999999}", NULL,
                  "400 Bad Request - json: cannot unmarshal number 99999999999999999999 into Go "
                  "struct field JSApiConsumerGetNextRequest.batch of type int");
    expect_status("{\"expires\":\"5s\"}", NULL,
                  "400 Bad Request - json: cannot unmarshal string into Go struct field "
                  "JSApiConsumerGetNextRequest.expires of type time.Duration");
    expect_status("{\"no_wait\":1}", NULL,
                  "400 Bad Request - json: cannot unmarshal number into Go struct field "
                  "JSApiConsumerGetNextRequest.no_wait of type bool");
    expect_status("{\"max_bytes\":[1]}", NULL,
                  "400 Bad Request - json: cannot unmarshal array into Go struct field "
                  "JSApiConsumerGetNextRequest.max_bytes of type int");
    expect_status("{\"group\":{}}", NULL,
                  "400 Bad Request - json: cannot unmarshal object into Go struct field "
                  "JSApiConsumerGetNextRequest.PriorityGroup.group of type string");
    expect_status("{\"min_pending\":true}", NULL,
                  "400 Bad Request - json: cannot unmarshal bool into Go struct field "
                  "JSApiConsumerGetNextRequest.PriorityGroup.min_pending of type int64");
    /* the first type error in document order */
    expect_status("{\"batch\":1,\"id\":5,\"Batch\":\"x\"}", NULL,
                  "400 Bad Request - json: cannot unmarshal number into Go struct field "
                  "JSApiConsumerGetNextRequest.PriorityGroup.id of type string");
    /* syntax errors, Go's texts */
    expect_status("{", NULL, "400 Bad Request - unexpected end of JSON input");
    expect_status("{\"batch\":1", NULL, "400 Bad Request - unexpected end of JSON input");
    expect_status("{batch:1}", NULL,
                  "400 Bad Request - invalid character 'b' looking for beginning of object key "
                  "string");
    expect_status("{\"batch\":1} 2", NULL,
                  "400 Bad Request - invalid character '2' after top-level value");
    /* heartbeat rules */
    expect_status("{\"idle_heartbeat\":1}", NULL, "400 Bad Request - heartbeat value too large");
    expect_status("{\"expires\":1000,\"idle_heartbeat\":501}", NULL,
                  "400 Bad Request - heartbeat value too large");
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX];
    cr_expect(pull("{\"expires\":1000,\"idle_heartbeat\":500}", NULL, &r, st));
    cr_expect_eq(r.heartbeat_ns, 500);
    /* 2*hb wraps negative in Go too: accepted there, accepted here */
    cr_expect(pull("{\"expires\":1,\"idle_heartbeat\":4611686018427387904}", NULL, &r, st));
    expect_status("{\"expires\":9223372036854775805,\"idle_heartbeat\":4611686018427387903}", NULL,
                  "400 Bad Request - heartbeat value too large");
    cr_expect(pull("{\"expires\":9223372036854775806,\"idle_heartbeat\":4611686018427387903}", NULL,
                   &r, st));
    /* a failed parse leaves the defaults */
    cr_expect(!pull("{\"batch\":3,\"no_wait\":\"x\"}", NULL, &r, st));
    cr_expect_eq(r.batch, 1);
    cr_expect(!r.no_wait);
}

Test(consumer_proto, pull_caps)
{
    js_pull_caps_t caps = {.max_batch = 10, .max_expires_ns = 1000000000, .max_bytes = 100};
    js_pull_req_t r;
    char st[JS_PULL_STATUS_MAX];
    cr_expect(pull("10", &caps, &r, st));
    expect_status("11", &caps, "409 Exceeded MaxRequestBatch of 10");
    expect_status("{\"batch\":11}", &caps, "409 Exceeded MaxRequestBatch of 10");
    cr_expect(pull("{\"batch\":-5}", &caps, &r, st));
    cr_expect(pull("{\"batch\":1,\"expires\":1000000000}", &caps, &r, st));
    expect_status("{\"batch\":1,\"expires\":1000000001}", &caps,
                  "409 Exceeded MaxRequestExpires of 1s");
    cr_expect(pull("{\"batch\":1,\"expires\":-5000000000}", &caps, &r, st));
    cr_expect(pull("{\"batch\":1,\"max_bytes\":100}", &caps, &r, st));
    expect_status("{\"batch\":1,\"max_bytes\":101}", &caps,
                  "409 Exceeded MaxRequestMaxBytes of 100");
    /* order: batch, then expires, then max_bytes */
    expect_status("{\"batch\":11,\"expires\":5000000000,\"max_bytes\":500}", &caps,
                  "409 Exceeded MaxRequestBatch of 10");
    expect_status("{\"batch\":1,\"expires\":5000000000,\"max_bytes\":500}", &caps,
                  "409 Exceeded MaxRequestExpires of 1s");
    /* a JSON error comes before the caps */
    expect_status("{\"batch\":11,\"idle_heartbeat\":1}", &caps,
                  "400 Bad Request - heartbeat value too large");
    caps.max_expires_ns = INT64_C(90000000000);
    expect_status("{\"expires\":90000000001}", &caps, "409 Exceeded MaxRequestExpires of 1m30s");
    caps.max_expires_ns = 1500000;
    expect_status("{\"expires\":90000000001}", &caps, "409 Exceeded MaxRequestExpires of 1.5ms");
    /* zero caps are no caps */
    js_pull_caps_t none = {0};
    cr_expect(pull("{\"batch\":1000000,\"expires\":99999999999999,\"max_bytes\":99999999}", &none,
                   &r, st));
    /* a status that does not fit is cut, never overrun */
    char small[12];
    memset(small, 'z', sizeof small);
    cr_expect(!js_pull_req_parse("11", 2, &caps, &r, small, 8));
    cr_expect_str_eq(small, "409 Exc");
    cr_expect_eq(small[8], 'z');
}

/* ---- status headers ---- */

Test(consumer_proto, status_hdr)
{
    char buf[128];
    size_t n = js_status_hdr(buf, sizeof buf, "404 No Messages", NULL);
    cr_expect_str_eq(buf, "NATS/1.0 404 No Messages\r\n\r\n");
    cr_expect_eq(n, strlen(buf));
    char ph[96];
    size_t pn = js_pending_hdrs(ph, sizeof ph, 3, 4096);
    cr_expect_str_eq(ph, "Nats-Pending-Messages: 3\r\nNats-Pending-Bytes: 4096\r\n");
    cr_expect_eq(pn, strlen(ph));
    n = js_status_hdr(buf, sizeof buf, "408 Request Timeout", ph);
    cr_expect_str_eq(buf, "NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n"
                          "Nats-Pending-Bytes: 4096\r\n\r\n");
    cr_expect_eq(n, strlen(buf));
    n = js_status_hdr(buf, sizeof buf, "100 Idle Heartbeat", "");
    cr_expect_str_eq(buf, "NATS/1.0 100 Idle Heartbeat\r\n\r\n");
    /* does not fit: 0 and nothing past room */
    const char *want = "NATS/1.0 404 No Messages\r\n\r\n";
    memset(buf, 'z', sizeof buf);
    cr_expect_eq(js_status_hdr(buf, strlen(want), "404 No Messages", NULL), 0);
    cr_expect_eq(buf[strlen(want)], 'z');
    cr_expect_eq(js_status_hdr(buf, strlen(want) + 1, "404 No Messages", NULL), strlen(want));
    memset(ph, 'z', sizeof ph);
    cr_expect_eq(js_pending_hdrs(ph, 20, 3, 4), 0);
    cr_expect_eq(ph[20], 'z');
    pn = js_pending_hdrs(ph, sizeof ph, UINT64_MAX, 0);
    cr_expect_str_eq(ph,
                     "Nats-Pending-Messages: 18446744073709551615\r\nNats-Pending-Bytes: 0\r\n");
}

/* ---- Go durations ---- */

static void
expect_dur(int64_t ns, const char *want)
{
    char buf[40];
    size_t n = nd_time_go_duration(buf, sizeof buf, ns);
    cr_expect_str_eq(buf, want, "%lld", (long long)ns);
    cr_expect_eq(n, strlen(want));
}

Test(consumer_proto, go_duration)
{
    /* expected values from Go's time.Duration String() */
    expect_dur(0, "0s");
    expect_dur(1, "1ns");
    expect_dur(999, "999ns");
    expect_dur(1000, "1\xc2\xb5s");
    expect_dur(1500, "1.5\xc2\xb5s");
    expect_dur(1000000, "1ms");
    expect_dur(100000000, "100ms");
    expect_dur(1500000, "1.5ms");
    expect_dur(1000001, "1.000001ms");
    expect_dur(999999999, "999.999999ms");
    expect_dur(1000000000, "1s");
    expect_dur(1500000000, "1.5s");
    expect_dur(1000000001, "1.000000001s");
    expect_dur(INT64_C(60000000000), "1m0s");
    expect_dur(INT64_C(120000000000), "2m0s");
    expect_dur(INT64_C(90500000000), "1m30.5s");
    expect_dur(INT64_C(3600000000000), "1h0m0s");
    expect_dur(INT64_C(5400000000000), "1h30m0s");
    expect_dur(INT64_C(86400000000000), "24h0m0s");
    expect_dur(-1, "-1ns");
    expect_dur(-1500000000, "-1.5s");
    expect_dur(INT64_MAX, "2562047h47m16.854775807s");
    expect_dur(INT64_MIN, "-2562047h47m16.854775808s");
    char buf[4];
    memset(buf, 'z', sizeof buf);
    cr_expect_eq(nd_time_go_duration(buf, 3, 1000000000), 2);
    cr_expect_str_eq(buf, "1s");
    cr_expect_eq(buf[3], 'z');
    cr_expect_eq(nd_time_go_duration(buf, 2, 1000000000), 0);
    cr_expect_str_eq(buf, "");
    cr_expect_str_eq(buf, "");
    cr_expect_eq(nd_time_go_duration(buf, 0, 1), 0);
}
