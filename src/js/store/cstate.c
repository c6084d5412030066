/* Consumer state codec (see cstate.h).
 *
 * Format: one msgpack array
 *     [version, delivered_cseq, delivered_sseq, ack_floor_cseq, ack_floor_sseq,
 *      [sseq, dseq, ts, sseq, dseq, ts, ...],      pending, flat, 3 per entry
 *      [sseq, count, sseq, count, ...]]            redelivered, flat, 2 per entry
 * Flat arrays instead of arrays of arrays save one header byte per entry and keep the decoder
 * simple. Writers after version 1 may append elements to the outer array; a version-1 decoder
 * would refuse them anyway by the version number.
 *
 * The encoder uses msgpack-c's packer. The decoder is a small bounded reader of our own:
 * msgpack-c's unpacker allocates an array's element table from the declared length before it has
 * seen the elements, so a five-byte corrupt header could ask for gigabytes; here every declared
 * length is checked against the bytes that remain before anything is allocated.
 */
#include "js/store/cstate.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"

void
nd_cstate_encode(const nd_consumer_state_t *cs, uint8_t **out, size_t *len)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    int rc = 0;

    *out = NULL;
    *len = 0;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    rc |= msgpack_pack_array(&pk, 7);
    rc |= msgpack_pack_uint32(&pk, ND_CSTATE_VERSION);
    rc |= msgpack_pack_uint64(&pk, cs->delivered_cseq);
    rc |= msgpack_pack_uint64(&pk, cs->delivered_sseq);
    rc |= msgpack_pack_uint64(&pk, cs->ack_floor_cseq);
    rc |= msgpack_pack_uint64(&pk, cs->ack_floor_sseq);
    rc |= msgpack_pack_array(&pk, (size_t)cs->npending * 3);
    for (size_t i = 0; i < cs->npending && rc == 0; i++) {
        rc |= msgpack_pack_uint64(&pk, cs->pending[i].sseq);
        rc |= msgpack_pack_uint64(&pk, cs->pending[i].dseq);
        rc |= msgpack_pack_int64(&pk, cs->pending[i].ts);
    }
    rc |= msgpack_pack_array(&pk, (size_t)cs->nredelivered * 2);
    for (size_t i = 0; i < cs->nredelivered && rc == 0; i++) {
        rc |= msgpack_pack_uint64(&pk, cs->redelivered[i].sseq);
        rc |= msgpack_pack_uint64(&pk, cs->redelivered[i].count);
    }
    /* The packer fails only when msgpack's own realloc does: out of memory is fatal, as for
     * nd_xmalloc. An empty sbuffer has no data pointer; a state always encodes to several bytes. */
    *len = sb.size; /* before release, which zeroes it */
    *out = (uint8_t *)msgpack_sbuffer_release(&sb);
    if (rc != 0 || !*out)
        nd_fatal("out of memory encoding a consumer state");
    /* The store keeps the encoding while the consumer lives, and msgpack's buffer starts at
     * 8 KiB: give back what an idle consumer's few dozen bytes do not use. */
    uint8_t *fit = realloc(*out, *len);
    if (fit != NULL)
        *out = fit;
}

/* A bounded cursor over msgpack bytes. Every reader returns false (and sets bad) on malformed or
 * truncated input, so the decoder can run straight through and check once. */
typedef struct {
    const uint8_t *p, *end;
    bool bad;
} rd_t;

static bool
rd_need(rd_t *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return false;
    }
    return true;
}

static uint64_t
rd_be(rd_t *r, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | r->p[i];
    r->p += n;
    return v;
}

/* Reads any msgpack integer as a 64-bit two's complement pattern; *neg says it was negative. */
static uint64_t
rd_int(rd_t *r, bool *neg)
{
    *neg = false;
    if (!rd_need(r, 1))
        return 0;
    uint8_t t = *r->p++;
    if (t <= 0x7f)
        return t;
    if (t >= 0xe0) {
        *neg = true;
        return (uint64_t)(int64_t)(int8_t)t;
    }
    size_t n;
    bool sgn = false;
    switch (t) {
    case 0xcc:
        n = 1;
        break;
    case 0xcd:
        n = 2;
        break;
    case 0xce:
        n = 4;
        break;
    case 0xcf:
        n = 8;
        break;
    case 0xd0:
        n = 1;
        sgn = true;
        break;
    case 0xd1:
        n = 2;
        sgn = true;
        break;
    case 0xd2:
        n = 4;
        sgn = true;
        break;
    case 0xd3:
        n = 8;
        sgn = true;
        break;
    default:
        r->bad = true;
        return 0;
    }
    if (!rd_need(r, n))
        return 0;
    uint64_t v = rd_be(r, n);
    if (sgn && n < 8 && (v >> (n * 8 - 1)) & 1)
        v |= ~(uint64_t)0 << (n * 8); /* sign-extend */
    if (sgn && (int64_t)v < 0)
        *neg = true;
    return v;
}

static uint64_t
rd_u64(rd_t *r)
{
    bool neg;
    uint64_t v = rd_int(r, &neg);
    if (neg)
        r->bad = true;
    return v;
}

static int64_t
rd_i64(rd_t *r)
{
    bool neg;
    uint64_t v = rd_int(r, &neg);
    /* A positive value above INT64_MAX does not fit a timestamp. */
    if (!neg && v > (uint64_t)INT64_MAX)
        r->bad = true;
    return (int64_t)v;
}

static size_t
rd_array(rd_t *r)
{
    if (!rd_need(r, 1))
        return 0;
    uint8_t t = *r->p++;
    size_t n;
    if ((t & 0xf0) == 0x90)
        n = t & 0x0f;
    else if (t == 0xdc && rd_need(r, 2))
        n = (size_t)rd_be(r, 2);
    else if (t == 0xdd && rd_need(r, 4))
        n = (size_t)rd_be(r, 4);
    else {
        r->bad = true;
        return 0;
    }
    /* Every element takes at least one byte: a longer array cannot be in the buffer. */
    if (n > (size_t)(r->end - r->p)) {
        r->bad = true;
        return 0;
    }
    return n;
}

nd_err_t
nd_cstate_decode(const uint8_t *p, size_t len, nd_consumer_state_t *out)
{
    rd_t r = {.p = p, .end = p + len, .bad = p == NULL};
    memset(out, 0, sizeof *out);

    size_t n = rd_array(&r);
    if (r.bad || n < 1)
        return ND_ERR_STORE_CORRUPT;
    uint64_t ver = rd_u64(&r);
    if (r.bad || ver == 0)
        return ND_ERR_STORE_CORRUPT;
    if (ver > ND_CSTATE_VERSION)
        return ND_ERR_STORE_VERSION;
    if (n != 7)
        return ND_ERR_STORE_CORRUPT;
    out->delivered_cseq = rd_u64(&r);
    out->delivered_sseq = rd_u64(&r);
    out->ack_floor_cseq = rd_u64(&r);
    out->ack_floor_sseq = rd_u64(&r);

    size_t np = rd_array(&r);
    if (r.bad || np % 3 != 0)
        goto corrupt;
    np /= 3;
    if (np > 0) {
        /* rd_array bounded np by the bytes left, so this cannot be a huge request. */
        out->pending = nd_xmalloc(np * sizeof *out->pending);
        out->npending = np;
        for (size_t i = 0; i < np; i++) {
            out->pending[i].sseq = rd_u64(&r);
            out->pending[i].dseq = rd_u64(&r);
            out->pending[i].ts = rd_i64(&r);
        }
    }
    size_t nr = rd_array(&r);
    if (r.bad || nr % 2 != 0)
        goto corrupt;
    nr /= 2;
    if (nr > 0) {
        out->redelivered = nd_xmalloc(nr * sizeof *out->redelivered);
        out->nredelivered = nr;
        for (size_t i = 0; i < nr; i++) {
            out->redelivered[i].sseq = rd_u64(&r);
            out->redelivered[i].count = rd_u64(&r);
        }
    }
    /* Trailing bytes mean the buffer is not what we wrote. */
    if (r.bad || r.p != r.end)
        goto corrupt;
    return ND_OK;

corrupt:
    nd_consumer_state_free(out);
    return ND_ERR_STORE_CORRUPT;
}
