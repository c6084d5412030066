/* Snapshot writer and reader (format in store_snapshot.h). */
#include "js/store/store_snapshot.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/cstate.h"

enum { REC_STATE = 1, REC_MSG = 2, REC_CONSUMER = 3, REC_END = 255 };
static const uint8_t magic[4] = {'N', 'D', 'S', 'S'};

static void
put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The writer: every byte goes through emit, which feeds the checksum too. */
typedef struct {
    nd_store_write_fn w;
    void *arg;
    XXH64_state_t *h;
    uint64_t records;
    bool failed;
} wr_t;

static void
emit(wr_t *wr, const void *p, size_t n, bool hash)
{
    if (wr->failed || n == 0)
        return;
    if (hash)
        XXH64_update(wr->h, p, n);
    if (wr->w(wr->arg, p, n) != 0)
        wr->failed = true;
}

static void
emit_rec(wr_t *wr, uint8_t type, size_t len)
{
    uint8_t h[5];
    h[0] = type;
    put_u32(h + 1, (uint32_t)len);
    emit(wr, h, sizeof h, type != REC_END);
    if (type != REC_END)
        wr->records++;
}

static nd_err_t
write_consumers(nd_store_t *st, wr_t *wr)
{
    char **names = NULL;
    size_t n = 0;
    nd_err_t e = st->ops->consumer_list(st, &names, &n);
    if (e != ND_OK)
        return e;
    for (size_t i = 0; i < n && e == ND_OK && !wr->failed; i++) {
        nd_cstore_t *cs;
        nd_consumer_state_t state = {0};
        e = st->ops->consumer_open(st, names[i], &cs);
        if (e != ND_OK)
            break;
        e = st->ops->consumer_state(cs, &state);
        st->ops->consumer_close(cs);
        if (e != ND_OK)
            break;
        uint8_t *enc;
        size_t elen;
        nd_cstate_encode(&state, &enc, &elen);
        nd_consumer_state_free(&state);
        size_t nl = strlen(names[i]);
        uint8_t b[4];
        put_u32(b, (uint32_t)nl);
        emit_rec(wr, REC_CONSUMER, 4 + nl + elen);
        emit(wr, b, 4, true);
        emit(wr, names[i], nl, true);
        emit(wr, enc, elen, true);
        free(enc);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return e;
}

/* xxHash allocates its state with malloc: out of memory is fatal here as in nd_xmalloc. */
static XXH64_state_t *
new_hash(void)
{
    XXH64_state_t *h = XXH64_createState();
    if (!h)
        nd_fatal("out of memory allocating a hash state");
    return h;
}

nd_err_t
nd_store_snapshot_write(nd_store_t *st, nd_store_write_fn w, void *arg)
{
    wr_t wr = {.w = w, .arg = arg, .h = new_hash()};
    XXH64_reset(wr.h, 0);
    nd_err_t e = ND_OK;

    uint8_t b[32];
    memcpy(b, magic, 4);
    put_u32(b + 4, ND_SNAPSHOT_VERSION);
    emit(&wr, b, 8, true);

    nd_store_state_t s;
    st->ops->state(st, &s);
    emit_rec(&wr, REC_STATE, 32);
    put_u64(b, s.first_seq);
    put_u64(b + 8, s.last_seq);
    put_u64(b + 16, s.msgs);
    put_u64(b + 24, s.bytes);
    emit(&wr, b, 32, true);

    nd_store_msg_t m = {0};
    uint64_t seq = s.first_seq;
    while (!wr.failed && seq <= s.last_seq) {
        e = st->ops->load_next(st, NULL, 0, seq, &m);
        if (e == ND_ERR_STORE_EOF) {
            e = ND_OK;
            break;
        }
        if (e != ND_OK)
            break;
        emit_rec(&wr, REC_MSG, 24 + m.subj_len + m.hdr_len + m.data_len);
        put_u64(b, m.seq);
        put_u64(b + 8, (uint64_t)m.ts);
        put_u32(b + 16, (uint32_t)m.subj_len);
        put_u32(b + 20, (uint32_t)m.hdr_len);
        emit(&wr, b, 24, true);
        emit(&wr, m.subj, m.subj_len, true);
        emit(&wr, m.hdr, m.hdr_len, true);
        emit(&wr, m.data, m.data_len, true);
        seq = m.seq + 1;
    }
    nd_store_msg_free(&m);

    if (e == ND_OK && !wr.failed)
        e = write_consumers(st, &wr);
    if (e == ND_OK && !wr.failed) {
        emit_rec(&wr, REC_END, 16);
        put_u64(b, wr.records);
        put_u64(b + 8, XXH64_digest(wr.h));
        emit(&wr, b, 16, false);
    }
    XXH64_freeState(wr.h);
    if (e == ND_OK && wr.failed)
        e = ND_ERR_STORE_IO;
    return e;
}

/* The reader. */
typedef struct {
    nd_store_read_fn r;
    void *arg;
    XXH64_state_t *h;
    uint8_t *buf;
    size_t cap;
} rd_t;

/* Reads exactly n bytes into p: OK, CORRUPT when the stream ends first, IO when r fails. */
static nd_err_t
read_exact(rd_t *rd, void *p, size_t n)
{
    uint8_t *q = p;
    while (n > 0) {
        long got = rd->r(rd->arg, q, n);
        if (got < 0)
            return ND_ERR_STORE_IO;
        if (got == 0 || (size_t)got > n)
            return ND_ERR_STORE_CORRUPT;
        q += got;
        n -= (size_t)got;
    }
    return ND_OK;
}

/* Reads a len-byte payload into rd->buf, growing the buffer only as bytes arrive so that a lying
 * length in a corrupt snapshot costs no more memory than the data actually there. */
static nd_err_t
read_payload(rd_t *rd, size_t len)
{
    size_t have = 0;
    while (have < len) {
        size_t want = len - have;
        if (have + want > rd->cap) {
            size_t ncap = rd->cap ? rd->cap * 2 : 4096;
            while (ncap < have + 1)
                ncap *= 2;
            if (ncap > len)
                ncap = len;
            rd->buf = nd_xrealloc(rd->buf, ncap);
            rd->cap = ncap;
        }
        if (want > rd->cap - have)
            want = rd->cap - have;
        nd_err_t e = read_exact(rd, rd->buf + have, want);
        if (e != ND_OK)
            return e;
        have += want;
    }
    return ND_OK;
}

static nd_err_t
apply_consumer(nd_store_t *st, const uint8_t *p, size_t len)
{
    if (len < 4)
        return ND_ERR_STORE_CORRUPT;
    size_t nl = get_u32(p);
    if (nl == 0 || nl > len - 4 || memchr(p + 4, 0, nl))
        return ND_ERR_STORE_CORRUPT;
    nd_consumer_state_t cs;
    /* A consumer state of another version inside a version-1 snapshot is damage, not a newer
     * writer (that would have changed the snapshot's version). */
    nd_err_t e = nd_cstate_decode(p + 4 + nl, len - 4 - nl, &cs);
    if (e == ND_ERR_STORE_VERSION)
        e = ND_ERR_STORE_CORRUPT;
    if (e != ND_OK)
        return e;
    char *name = nd_xmalloc(nl + 1);
    memcpy(name, p + 4, nl);
    name[nl] = '\0';
    nd_cstore_t *c;
    e = st->ops->consumer_open(st, name, &c);
    free(name);
    if (e == ND_OK) {
        e = st->ops->consumer_update(c, &cs);
        st->ops->consumer_close(c);
    }
    nd_consumer_state_free(&cs);
    return e;
}

static nd_err_t
read_records(nd_store_t *st, rd_t *rd)
{
    uint8_t b[16];
    nd_err_t e = read_exact(rd, b, 8);
    if (e != ND_OK)
        return e;
    if (memcmp(b, magic, 4) != 0)
        return ND_ERR_STORE_CORRUPT;
    uint32_t ver = get_u32(b + 4);
    if (ver == 0)
        return ND_ERR_STORE_CORRUPT;
    if (ver > ND_SNAPSHOT_VERSION)
        return ND_ERR_STORE_VERSION;
    XXH64_update(rd->h, b, 8);

    uint64_t records = 0, last_seq = 0, prev_seq = 0;
    bool have_state = false;
    for (;;) {
        uint8_t rh[5];
        if ((e = read_exact(rd, rh, 5)) != ND_OK)
            return e;
        uint8_t type = rh[0];
        size_t len = get_u32(rh + 1);
        if (type == REC_END) {
            if (len != 16 || !have_state)
                return ND_ERR_STORE_CORRUPT;
            if ((e = read_exact(rd, b, 16)) != ND_OK)
                return e;
            if (get_u64(b) != records || get_u64(b + 8) != XXH64_digest(rd->h))
                return ND_ERR_STORE_CORRUPT;
            /* Nothing may follow the end record. */
            uint8_t extra;
            long got = rd->r(rd->arg, &extra, 1);
            if (got < 0)
                return ND_ERR_STORE_IO;
            if (got > 0)
                return ND_ERR_STORE_CORRUPT;
            break;
        }
        XXH64_update(rd->h, rh, 5);
        records++;
        if ((e = read_payload(rd, len)) != ND_OK)
            return e;
        XXH64_update(rd->h, rd->buf, len);
        const uint8_t *p = rd->buf;

        switch (type) {
        case REC_STATE: {
            if (have_state || records != 1 || len != 32)
                return ND_ERR_STORE_CORRUPT;
            have_state = true;
            uint64_t first = get_u64(p);
            last_seq = get_u64(p + 8);
            if (first == 0 || first > last_seq + 1)
                return ND_ERR_STORE_CORRUPT;
            if (first > 1) {
                uint64_t purged;
                if ((e = st->ops->compact(st, first, &purged)) != ND_OK)
                    return e;
            }
            prev_seq = first - 1;
            break;
        }
        case REC_MSG: {
            if (!have_state || len < 24)
                return ND_ERR_STORE_CORRUPT;
            uint64_t seq = get_u64(p);
            int64_t ts = (int64_t)get_u64(p + 8);
            size_t sl = get_u32(p + 16), hl = get_u32(p + 20);
            if (sl == 0 || sl > len - 24 || hl > len - 24 - sl || seq <= prev_seq || seq > last_seq)
                return ND_ERR_STORE_CORRUPT;
            const char *subj = (const char *)p + 24;
            e = st->ops->store_raw(st, seq, ts, subj, sl, p + 24 + sl, hl, p + 24 + sl + hl,
                                   len - 24 - sl - hl);
            if (e == ND_ERR_STORE_BAD_SEQUENCE || e == ND_ERR_STORE_BAD_ARG)
                return ND_ERR_STORE_CORRUPT;
            /* Limits of the new store may refuse what the old one held (discard new): the
             * snapshot is still restored, minus what the new limits keep out. */
            if (e != ND_OK && e != ND_ERR_STORE_MAX_MSGS && e != ND_ERR_STORE_MAX_BYTES &&
                e != ND_ERR_STORE_MAX_PER_SUBJECT && e != ND_ERR_STORE_MSG_TOO_BIG)
                return e;
            prev_seq = seq;
            break;
        }
        case REC_CONSUMER:
            if (!have_state)
                return ND_ERR_STORE_CORRUPT;
            if ((e = apply_consumer(st, p, len)) != ND_OK)
                return e;
            break;
        default:
            return ND_ERR_STORE_CORRUPT;
        }
    }

    /* Deleted sequences at the end: skip up to the snapshot's last sequence. */
    nd_store_state_t s;
    st->ops->state(st, &s);
    while (s.last_seq < last_seq) {
        uint64_t seq;
        if ((e = st->ops->skip(st, &seq)) != ND_OK)
            return e;
        s.last_seq = seq;
    }
    return ND_OK;
}

nd_err_t
nd_store_snapshot_read(nd_store_t *st, nd_store_read_fn r, void *arg)
{
    rd_t rd = {.r = r, .arg = arg, .h = new_hash()};
    XXH64_reset(rd.h, 0);
    nd_err_t e = read_records(st, &rd);
    XXH64_freeState(rd.h);
    free(rd.buf);
    return e;
}
