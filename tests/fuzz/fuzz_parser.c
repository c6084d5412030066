/* libFuzzer driver for the client-protocol parser (src/net/parser.c).
 *
 * Input layout: byte 0 picks max_control_line, byte 1 picks max_payload, bytes 2..5 seed the
 * split points, the rest is the protocol stream. The stream is fed twice, the way the connection
 * actor feeds it (keep the bytes from *used on, append the next read, call again): once whole and
 * once cut at a few pseudo-random points. Both runs must produce the same sequence of commands
 * and end in the same status. Every call gets an exactly sized heap copy of the kept bytes, so
 * ASan reports any read past `len`; slices are checked to lie inside that copy.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct log {
    uint8_t *b;
    size_t len, cap;
} log_t;

static void
put(log_t *l, const void *p, size_t n)
{
    if (l->len + n > l->cap) {
        l->cap = (l->len + n) * 2 + 64;
        l->b = realloc(l->b, l->cap);
        if (!l->b)
            abort();
    }
    memcpy(l->b + l->len, p, n);
    l->len += n;
}

static void
put_u64(log_t *l, uint64_t v)
{
    put(l, &v, sizeof v);
}

static void
put_slice(log_t *l, nd_proto_slice_t s, const char *buf, size_t len)
{
    if (s.len > len || s.ptr < buf || s.ptr > buf + len - s.len) {
        fprintf(stderr, "slice outside the buffer\n");
        abort();
    }
    put_u64(l, s.len);
    put(l, s.ptr, s.len);
}

static void
log_cmd(log_t *l, const nd_proto_cmd_t *c, const char *buf, size_t len)
{
    put_u64(l, (uint64_t)c->op);
    switch (c->op) {
    case ND_PROTO_OP_PUB:
    case ND_PROTO_OP_HPUB:
        put_slice(l, c->subject, buf, len);
        put_slice(l, c->reply, buf, len);
        put_slice(l, c->payload, buf, len);
        put_u64(l, (uint64_t)c->hdr_len);
        if (c->subject.len == 0 || c->hdr_len < 0 || (uint64_t)c->hdr_len > c->payload.len)
            abort();
        break;
    case ND_PROTO_OP_SUB:
        put_slice(l, c->subject, buf, len);
        put_slice(l, c->queue, buf, len);
        put_slice(l, c->sid, buf, len);
        break;
    case ND_PROTO_OP_UNSUB:
        put_slice(l, c->sid, buf, len);
        put_u64(l, (uint64_t)c->max_msgs);
        break;
    case ND_PROTO_OP_CONNECT:
    case ND_PROTO_OP_INFO:
    case ND_PROTO_OP_ERR:
        put_slice(l, c->arg, buf, len);
        break;
    case ND_PROTO_OP_PING:
    case ND_PROTO_OP_PONG:
    case ND_PROTO_OP_OK:
        break;
    default:
        abort();
    }
}

static uint32_t
rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* Feeds in[0..n) in chunks ending at cuts[0..ncuts) and then n. With honour_need it does not call
 * while fewer than nd_proto_pending_need() bytes are kept; with reparse it parses every command
 * twice, leaving it unconsumed the first time (as a paused connection does), and checks that the
 * same command comes back. Returns: the final status. */
static nd_proto_status_t
feed(size_t mcl, int64_t mpay, const char *in, size_t n, const size_t *cuts, size_t ncuts,
     int honour_need, int reparse, log_t *l)
{
    nd_proto_parser_t p;
    nd_proto_parser_init(&p, mcl, mpay);
    char *kept = malloc(n + 1);
    size_t klen = 0, pos = 0;
    nd_proto_status_t st = ND_PROTO_MORE;
    if (!kept)
        abort();
    for (size_t c = 0; c <= ncuts; c++) {
        size_t next = c < ncuts ? cuts[c] : n;
        memcpy(kept + klen, in + pos, next - pos);
        klen += next - pos;
        pos = next;
        /* The last call happens whatever the need: a wrong trailer byte is an error before the
         * whole command is there. */
        if (honour_need && c < ncuts && nd_proto_pending_need(&p) > klen)
            continue;
        size_t off = 0;
        for (;;) {
            size_t len = klen - off, used = (size_t)-1;
            char *exact = malloc(len ? len : 1);
            nd_proto_cmd_t cmd;
            if (!exact)
                abort();
            memcpy(exact, kept + off, len);
            st = nd_proto_parse(&p, exact, len, &used, &cmd);
            if (used > len)
                abort();
            if (st == ND_PROTO_CMD) {
                if (used == 0)
                    abort();
                if (reparse) {
                    log_t one = {0}, two = {0};
                    size_t used2 = 0;
                    log_cmd(&one, &cmd, exact, len);
                    if (nd_proto_parse(&p, exact, len, &used2, &cmd) != ND_PROTO_CMD ||
                        used2 != used)
                        abort();
                    log_cmd(&two, &cmd, exact, len);
                    if (one.len != two.len || memcmp(one.b, two.b, one.len) != 0)
                        abort();
                    free(one.b);
                    free(two.b);
                }
                log_cmd(l, &cmd, exact, len);
            } else if (st == ND_PROTO_MORE) {
                /* A known need is always more than what is kept, or the parser would have
                 * finished the command. */
                size_t need = nd_proto_pending_need(&p);
                if (need != 0 && need <= len)
                    abort();
            }
            if (st != ND_PROTO_CMD && used != 0)
                abort(); /* MORE and errors consume nothing */
            free(exact);
            off += used;
            if (st != ND_PROTO_CMD)
                break;
        }
        if (st != ND_PROTO_MORE)
            break;
        memmove(kept, kept + off, klen - off);
        klen -= off;
    }
    put_u64(l, 0xff00u + (uint64_t)st);
    free(kept);
    return st;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6)
        return 0;
    /* Small limits make the boundaries reachable; bit 5 selects the real default instead. */
    size_t mcl = (data[0] & 0x20) ? ND_PROTO_DEFAULT_MAX_CONTROL_LINE : (size_t)(data[0] & 0x1f);
    int64_t mpay = (data[1] & 0x80) ? ND_PROTO_NO_LIMIT : (int64_t)(data[1] & 0x7f);
    uint32_t seed;
    memcpy(&seed, data + 2, 4);
    seed |= 1;
    const char *in = (const char *)data + 6;
    size_t n = size - 6;

    log_t whole = {0}, split = {0};
    nd_proto_status_t a = feed(mcl, mpay, in, n, NULL, 0, 0, 0, &whole);

    size_t cuts[8], ncuts = 0;
    if (n > 0) {
        size_t want = 1 + rnd(&seed) % 8;
        for (size_t i = 0; i < want; i++)
            cuts[ncuts++] = rnd(&seed) % (n + 1);
        /* Insertion sort: the cuts must increase (duplicates are harmless empty reads). */
        for (size_t i = 1; i < ncuts; i++)
            for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
                size_t t = cuts[j];
                cuts[j] = cuts[j - 1];
                cuts[j - 1] = t;
            }
    }
    nd_proto_status_t b =
        feed(mcl, mpay, in, n, cuts, ncuts, (int)(seed & 2), (int)(seed & 4), &split);

    if (a != b || whole.len != split.len || memcmp(whole.b, split.b, whole.len) != 0) {
        fprintf(stderr, "whole and split differ: %s vs %s (mcl %zu, max_payload %lld)\n",
                nd_proto_status_name(a), nd_proto_status_name(b), mcl, (long long)mpay);
        abort();
    }
    free(whole.b);
    free(split.b);
    return 0;
}
