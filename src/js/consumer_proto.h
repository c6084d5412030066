/* What consumers read and write on the wire, apart from JSON configs: the `$JS.ACK` reply
 * subject of a delivered message, the bodies of acks, pull requests
 * ($JS.API.CONSUMER.MSG.NEXT.<s>.<c>), and the status messages (`NATS/1.0 <code> <text>` header
 * blocks) a consumer sends to pull requesters and push subscribers.
 *
 * Pure functions, no allocation unless said. References: nats-server server/consumer.go
 * (ackReplyInfo, processAck/processNak/processTerm, nextReqFromMsg, JSApiConsumerGetNextRequest,
 * the status texts), ADR-13 (pull requests) and the inventory §7.5–7.6.
 */
#ifndef ND_JS_CONSUMER_PROTO_H
#define ND_JS_CONSUMER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- $JS.ACK reply subjects ---- */

/* $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending> (9 tokens), and the
 * 12-token form $JS.ACK.<domain>.<acchash>.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>
 * .<pending>.<random> that clients also parse. stream/consumer point into the subject. */
typedef struct js_ack_subj {
    const char *stream, *consumer;
    size_t stream_len, consumer_len;
    /* The 12-token form's domain ("_" there reads as "", length 0), NULL for the 9-token form.
     * nats-server's own ack handler (ackReplyInfo) reads only the 9-token form: an ack on the
     * other one acks nothing there. */
    const char *domain;
    size_t domain_len;
    uint64_t delivered, sseq, dseq, pending;
    int64_t ts;
} js_ack_subj_t;

/* Returns: false when subj is not a well-formed ack subject (not "$JS.ACK", a token count other
 * than 9 or >= 12, an empty stream or consumer token, a number token that is empty, has a
 * non-digit, or overflows uint64 (int64 for ts)). nats-server reads such a number as -1 instead;
 * either way the ack matches nothing. No allocation. */
bool js_ack_subj_parse(const char *subj, size_t len, js_ack_subj_t *out);
/* Writes the 9-token form into buf (room for JS_ACK_SUBJ_MAX + stream and consumer lengths).
 * Returns: its length. */
#define JS_ACK_SUBJ_MAX 120 /* "$JS.ACK." + 5 numbers + dots, without the two names */
size_t js_ack_subj_format(char *buf, const char *stream, const char *consumer,
                          uint64_t delivered, uint64_t sseq, uint64_t dseq, int64_t ts,
                          uint64_t pending);

/* ---- ack bodies ---- */
typedef enum {
    JS_ACK_ACK = 0,   /* "+ACK", "", "+OK" (exactly these) */
    JS_ACK_NAK,       /* "-NAK", "-NAK {\"delay\":ns}", "-NAK <duration>" */
    JS_ACK_PROGRESS,  /* "+WPI" */
    JS_ACK_NEXT,      /* "+NXT", "+NXT <n>", "+NXT {json pull request}" */
    JS_ACK_TERM,      /* "+TERM", "+TERM <reason>" */
    JS_ACK_NONE,      /* anything else ("+ACK ", "+WPI\r\n", "hello"): nats-server does nothing
                       * with it but still answers the ack's reply subject with an empty message */
} js_ack_kind_t;

typedef struct js_ack_body {
    js_ack_kind_t kind;
    int64_t delay_ns;     /* NAK with has_delay: the delay (may be 0 or negative, as Go allows) */
    bool has_delay;       /* NAK: the argument parsed (a Go duration or {"delay":ns}); false is
                           * a plain NAK (none, or one nats-server only warns about) */
    const char *arg;      /* NXT: the request after "+NXT "; TERM: the reason; else NULL */
    size_t arg_len;
} js_ack_body_t;

/* Classifies an ack body (the payload after any headers) as nats-server's processAck does: exact
 * matches for ACK/OK/WPI, prefixes for NXT/NAK/TERM ("+TERMx" is a TERM with reason "x",
 * "-NAK1s" a NAK of 1s). TERM's reason is trimmed (Go's bytes.TrimSpace); NXT's arg is the rest
 * untrimmed, for js_pull_req_parse. No allocation, except for a NAK whose JSON argument is not
 * the plain {"delay":<int>} shape. */
void js_ack_body_parse(const char *body, size_t len, js_ack_body_t *out);

/* ---- pull requests ---- */
typedef struct js_pull_req {
    int64_t batch;         /* empty body: 1; JSON without "batch": 0 (as Go); may be negative */
    int64_t max_bytes;     /* 0 = none */
    int64_t expires_ns;    /* 0 = none */
    int64_t heartbeat_ns;  /* idle_heartbeat, 0 = none */
    bool no_wait;
    char group[17];        /* priority group, "" when none (2.11) */
    int64_t min_pending, min_ack_pending; /* 2.11 overflow; 0 = none */
    char id[64];           /* 2.11 pinned id ("id"), "" when none */
    /* The group or id was longer than its array holds (the array has its first bytes): it can
     * match no configured group (names have at most 16 bytes) or pin id. */
    bool group_long, id_long;
} js_pull_req_t;

/* What a consumer allows (its config's max_batch, max_expires, max_bytes; 0 = no cap). */
typedef struct js_pull_caps {
    int64_t max_batch, max_expires_ns, max_bytes;
} js_pull_caps_t;

#define JS_PULL_STATUS_MAX 256 /* room for a status of js_pull_req_parse (see there) */

/* Decodes a pull request body as nats-server's nextReqFromMsg and the first checks of
 * processNextMsgRequest: blank is batch 1, a bare integer (strconv.Atoi) is a batch, a body
 * starting with '{' is the JSON request (Go's json.Unmarshal: errors are
 * "400 Bad Request - <Go's error>", "400 Bad Request - heartbeat value too large" when
 * idle_heartbeat > 0 and 2*idle_heartbeat > expires), anything else is batch 1. The priority
 * group checks (policy, group names, pin id) are the consumer's. On failure writes
 * nats-server's status reply into status, cut to status_room (JS_PULL_STATUS_MAX holds all but a
 * type error quoting a number of over 100 digits; Go's type errors pass 128 bytes), e.g.
 * "409 Exceeded MaxRequestBatch of 10", "409 Exceeded MaxRequestExpires of 1s",
 * "409 Exceeded MaxRequestMaxBytes of 100", and returns false. */
bool js_pull_req_parse(const char *body, size_t len, const js_pull_caps_t *caps,
                       js_pull_req_t *out, char *status, size_t status_room);

/* ---- status messages ---- */
/* Writes "NATS/1.0 <status>\r\n" + extra header lines (each "Name: value\r\n", may be NULL) +
 * "\r\n" into buf. Returns: its length, or 0 when it does not fit. */
size_t js_status_hdr(char *buf, size_t room, const char *status, const char *extra);
/* Writes the pending headers of a 408/409 status ("Nats-Pending-Messages: n\r\n
 * Nats-Pending-Bytes: b\r\n") into buf. Returns: its length. */
size_t js_pending_hdrs(char *buf, size_t room, uint64_t msgs, uint64_t bytes);

#endif
