/* The memory store: a JetStream stream kept entirely in memory (natsd/store.h).
 *
 * Layout
 *   Messages live in a ring of slots sorted by sequence, one slot {seq, msg} per stored message.
 *   Each message is one allocation: a small header (timestamp and lengths) followed inline by
 *   subject, headers and payload. A removal in the middle of the ring only clears the slot's msg
 *   pointer (a "hole"); holes at either end are trimmed at once, and when holes outnumber the live
 *   messages the ring is compacted, so memory stays proportional to the messages held and never to
 *   the span of sequences (a key updated a billion times next to one written once costs two slots).
 *   Sequences absent from the ring, whether holes or never-stored gaps, are the deleted sequences.
 *
 *   A per-subject index (open addressing, linear probing, backward-shift deletion; keyed by the
 *   subject bytes with XXH3) maps each subject to {msgs, first, last}. It makes a literal
 *   load_last, the max_msgs_per_subject limit and subjects_state O(1) or O(subjects). As in
 *   nats-server's memstore, a subject's first/last is recomputed lazily (a scan from the old value)
 *   when the message holding it was removed.
 *
 * Lookup by sequence: slot i normally holds sequence first + i (no gaps), which a direct probe
 *   checks in O(1); otherwise a binary search over the slots (holes keep their seq, so the order is
 *   intact) finds it in O(log n).
 *
 * Invariants (after every public call)
 *   - slots hold strictly increasing seqs; the first and last slot hold a message (no end holes);
 *   - msgs/bytes are the count and nd_store_msg_size sum of live messages;
 *   - first_seq = the first slot's seq, or last_seq + 1 when empty; holes <= msgs + HOLE_SLACK;
 *   - messages are in timestamp order (store stamps max(now, last_ts)), so max_age expires from
 *     the front. store_raw takes the caller's timestamp as it is: an older one than its
 *     predecessor's (replicated from a server with another clock) expires when the front does.
 *
 * Expiry: max_age removes from the front (timestamps are in order). Per-message TTLs (cfg
 *   allow_msg_ttl) live in a deadline heap (store_ttl.h) that tick pops; a message whose TTL is
 *   "never" is skipped by max_age, and age_from remembers how far the front holds only such
 *   messages, so no tick reads them twice. With cfg.on_subject_expired, each expiry that takes
 *   the last message of a subject is reported (subject delete markers).
 *
 * Overhead per message: the 16-byte slot plus an 18-byte header plus malloc's own 8 bytes and
 * rounding, about 50 bytes beyond subject + headers + payload: bench_store measured 51 for 1 M
 * messages of 16 bytes (the ring's doubling adds up to 16 more just after it grows).
 *
 * References: nats-server server/memstore.go (limits, PurgeEx, Compact, Truncate semantics).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/cstate.h"
#include "js/store/store_snapshot.h"
#include "js/store/store_ttl.h"
#include "js/store/store_util.h"
#include "js/store/store.h"
#include "subj/subject.h"

/* Compaction waits for this many holes beyond the live count, so a small store does not compact
 * on every removal. */
#define HOLE_SLACK 64
#define MIN_RING   16

typedef struct mmsg {
    int64_t ts;
    uint32_t hdr_len;
    uint32_t data_len;
    uint16_t subj_len;
    char subj[]; /* subject, then headers, then payload */
} mmsg_t;

#define MMSG_HDR offsetof(mmsg_t, subj)

typedef struct slot {
    uint64_t seq;
    mmsg_t *m; /* NULL: a hole (removed) */
} slot_t;

typedef struct subj {
    uint64_t hash;
    uint64_t msgs, first, last;
    bool first_stale, last_stale; /* the message holding first/last went; recompute on demand */
    uint16_t len;
    char s[];
} subj_t;

typedef struct stab {
    subj_t **tab;
    size_t cap; /* power of two, or 0 */
    size_t count;
} stab_t;

struct nd_cstore {
    struct memstore *ms;
    char *name;
    uint8_t *enc; /* the state, cstate-encoded */
    size_t len;
};

typedef struct memstore {
    nd_store_t base;
    nd_store_cfg_t cfg;
    slot_t *ring;
    size_t cap, head, n; /* n slots in use (live + holes), from head, modulo cap */
    uint64_t msgs, bytes;
    uint64_t first_seq, last_seq;
    int64_t last_ts;
    stab_t subjects;
    nd_cstore_t **cons;
    size_t ncons;
    nd_store_ttls_t ttls; /* TTL deadlines (allow_msg_ttl) */
    uint64_t age_from;    /* every live seq in [first_seq, age_from) has TTL "never" */
} memstore_t;

static const nd_store_ops_t memstore_ops;

/* ---- helpers ---------------------------------------------------------------------------- */

static inline slot_t *
slot_at(memstore_t *ms, size_t i)
{
    return &ms->ring[(ms->head + i) & (ms->cap - 1)];
}

static inline uint64_t
msize(const mmsg_t *m)
{
    return nd_store_msg_size(m->subj_len, m->hdr_len, m->data_len);
}

static inline bool
subj_eq(const mmsg_t *m, const char *s, size_t len)
{
    return m->subj_len == len && memcmp(m->subj, s, len) == 0;
}

/* Copies m into out's reusable buffer. */
static nd_err_t
fill(nd_store_msg_t *out, uint64_t seq, const mmsg_t *m)
{
    size_t total = (size_t)m->subj_len + m->hdr_len + m->data_len;
    if (out->cap < total || out->buf == NULL) {
        size_t ncap = total < 64 ? 64 : total;
        out->buf = nd_xrealloc(out->buf, ncap);
        out->cap = ncap;
    }
    memcpy(out->buf, m->subj, total);
    out->seq = seq;
    out->ts = m->ts;
    out->subj = (const char *)out->buf;
    out->subj_len = m->subj_len;
    out->hdr = out->buf + m->subj_len;
    out->hdr_len = m->hdr_len;
    out->data = out->buf + m->subj_len + m->hdr_len;
    out->data_len = m->data_len;
    return ND_OK;
}

/* ---- subject index ---------------------------------------------------------------------- */

static uint64_t
subj_hash(const char *s, size_t len)
{
    return XXH3_64bits(s, len);
}

static subj_t *
stab_find(stab_t *t, const char *s, size_t len, uint64_t h)
{
    if (t->cap == 0)
        return NULL;
    size_t mask = t->cap - 1;
    for (size_t i = h & mask; t->tab[i]; i = (i + 1) & mask) {
        subj_t *e = t->tab[i];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0)
            return e;
    }
    return NULL;
}

static void
stab_place(subj_t **tab, size_t cap, subj_t *e)
{
    size_t i = e->hash & (cap - 1);
    while (tab[i])
        i = (i + 1) & (cap - 1);
    tab[i] = e;
}

static void
stab_resize(stab_t *t, size_t ncap)
{
    subj_t **nt = nd_xcalloc(ncap, sizeof *nt);
    for (size_t i = 0; i < t->cap; i++)
        if (t->tab[i])
            stab_place(nt, ncap, t->tab[i]);
    free(t->tab);
    t->tab = nt;
    t->cap = ncap;
}

static subj_t *
stab_add(stab_t *t, const char *s, size_t len, uint64_t h)
{
    /* Linear probing stays fast below a 0.7 load factor. */
    if ((t->count + 1) * 10 > t->cap * 7)
        stab_resize(t, t->cap ? t->cap * 2 : 16);
    subj_t *e = nd_xcalloc(1, sizeof *e + len);
    e->hash = h;
    e->len = (uint16_t)len;
    memcpy(e->s, s, len);
    stab_place(t->tab, t->cap, e);
    t->count++;
    return e;
}

/* Backward-shift deletion: later entries of the probe run move back into the freed slot when
 * their home position allows it, so no tombstones accumulate. */
static void
stab_del(stab_t *t, subj_t *e)
{
    size_t mask = t->cap - 1, i = e->hash & mask;
    while (t->tab[i] != e)
        i = (i + 1) & mask;
    t->tab[i] = NULL;
    for (size_t j = (i + 1) & mask; t->tab[j]; j = (j + 1) & mask) {
        size_t k = t->tab[j]->hash & mask;
        /* The entry at j may fill i when its home k is not cyclically within (i, j]. */
        bool stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            t->tab[i] = t->tab[j];
            t->tab[j] = NULL;
            i = j;
        }
    }
    t->count--;
    free(e);
    if (t->count == 0) {
        free(t->tab);
        t->tab = NULL;
        t->cap = 0;
    } else if (t->cap > 64 && t->count * 8 < t->cap) {
        stab_resize(t, t->cap / 2);
    }
}

static void
stab_free(stab_t *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->tab[i]);
    free(t->tab);
    memset(t, 0, sizeof *t);
}

/* ---- ring ------------------------------------------------------------------------------- */

static void
ring_resize(memstore_t *ms, size_t ncap)
{
    slot_t *nr = nd_xmalloc(ncap * sizeof *nr);
    for (size_t i = 0; i < ms->n; i++)
        nr[i] = *slot_at(ms, i);
    free(ms->ring);
    ms->ring = nr;
    ms->cap = ncap;
    ms->head = 0;
}

/* Index of the first slot with seq >= seq (n when none). */
static size_t
lower_bound(memstore_t *ms, uint64_t seq)
{
    if (ms->n == 0)
        return 0;
    uint64_t s0 = slot_at(ms, 0)->seq;
    if (seq <= s0)
        return 0;
    /* Slot i holds a seq >= s0 + i, so the answer is at most seq - s0. */
    uint64_t d = seq - s0;
    if (d < ms->n && slot_at(ms, d)->seq == seq)
        return d;
    size_t lo = 0, hi = d < ms->n ? (size_t)d : ms->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slot_at(ms, mid)->seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Index of the live slot holding seq, or -1. */
static long
find(memstore_t *ms, uint64_t seq)
{
    size_t i = lower_bound(ms, seq);
    if (i < ms->n) {
        slot_t *s = slot_at(ms, i);
        if (s->seq == seq && s->m)
            return (long)i;
    }
    return -1;
}

/* Restores the invariants after removals: no holes at either end, first_seq, compaction. */
static void
settle(memstore_t *ms)
{
    while (ms->n > 0 && slot_at(ms, 0)->m == NULL) {
        ms->head = (ms->head + 1) & (ms->cap - 1);
        ms->n--;
    }
    while (ms->n > 0 && slot_at(ms, ms->n - 1)->m == NULL)
        ms->n--;
    if (ms->n > ms->msgs + ms->msgs + HOLE_SLACK) {
        size_t j = 0;
        for (size_t i = 0; i < ms->n; i++) {
            slot_t s = *slot_at(ms, i);
            if (s.m)
                *slot_at(ms, j++) = s;
        }
        ms->n = j;
    }
    if (ms->n == 0) {
        free(ms->ring);
        ms->ring = NULL;
        ms->cap = ms->head = 0;
        ms->first_seq = ms->last_seq + 1;
        return;
    }
    ms->first_seq = slot_at(ms, 0)->seq;
    /* Give memory back after a large purge. */
    if (ms->cap > 1024 && ms->n * 8 < ms->cap) {
        size_t ncap = MIN_RING;
        while (ncap < ms->n * 2)
            ncap *= 2;
        ring_resize(ms, ncap);
    }
}

/* Makes subject e's first/last exact again by scanning from the stale value. */
static void
subj_fix(memstore_t *ms, subj_t *e)
{
    if (e->first_stale) {
        if (e->msgs == 1 && !e->last_stale) {
            e->first = e->last;
        } else {
            for (size_t i = lower_bound(ms, e->first); i < ms->n; i++) {
                slot_t *s = slot_at(ms, i);
                if (s->m && subj_eq(s->m, e->s, e->len)) {
                    e->first = s->seq;
                    break;
                }
            }
        }
        e->first_stale = false;
    }
    if (e->last_stale) {
        if (e->msgs == 1) {
            e->last = e->first;
        } else {
            size_t i = lower_bound(ms, e->last);
            if (i > ms->n)
                i = ms->n;
            while (i-- > 0) {
                slot_t *s = slot_at(ms, i);
                if (s->m && subj_eq(s->m, e->s, e->len)) {
                    e->last = s->seq;
                    break;
                }
            }
        }
        e->last_stale = false;
    }
}

/* Removes the live message in slot i; settle() restores the ring's invariants afterwards. */
static void
remove_at(memstore_t *ms, size_t i, bool secure)
{
    slot_t *s = slot_at(ms, i);
    mmsg_t *m = s->m;
    subj_t *e = stab_find(&ms->subjects, m->subj, m->subj_len, subj_hash(m->subj, m->subj_len));
    if (e) {
        if (--e->msgs == 0) {
            stab_del(&ms->subjects, e);
        } else {
            if (s->seq == e->first)
                e->first_stale = true;
            if (s->seq == e->last)
                e->last_stale = true;
        }
    }
    ms->msgs--;
    ms->bytes -= msize(m);
    if (secure)
        explicit_bzero(m, MMSG_HDR + (size_t)m->subj_len + m->hdr_len + m->data_len);
    free(m);
    s->m = NULL;
}

/* Removes the first message and trims the front. */
static void
remove_first(memstore_t *ms)
{
    remove_at(ms, 0, false);
    settle(ms);
}

static void
remove_all(memstore_t *ms)
{
    nd_store_ttls_clear(&ms->ttls);
    for (size_t i = 0; i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        free(s->m);
        s->m = NULL;
    }
    ms->n = 0;
    ms->msgs = ms->bytes = 0;
    stab_free(&ms->subjects);
    settle(ms);
}

/* The subject index walk of store_util.h: a literal filter is one table lookup. */
static void
walk_subjects(nd_store_t *st, const char *filter, size_t fl, bool all, nd_store_subj_cb cb,
              void *arg)
{
    memstore_t *ms = (memstore_t *)st;
    if (!all && nd_subj_is_literal(filter, fl)) {
        subj_t *e = stab_find(&ms->subjects, filter, fl, subj_hash(filter, fl));
        if (e) {
            subj_fix(ms, e);
            nd_store_subj_state_t ss = {
                .msgs = e->msgs, .first_seq = e->first, .last_seq = e->last};
            (void)cb(arg, e->s, e->len, &ss);
        }
        return;
    }
    /* The callback may not change the store, so the table is stable while we walk it. */
    for (size_t i = 0; i < ms->subjects.cap; i++) {
        subj_t *e = ms->subjects.tab[i];
        if (!e || !(all || nd_subj_match(filter, fl, e->s, e->len)))
            continue;
        subj_fix(ms, e);
        nd_store_subj_state_t ss = {.msgs = e->msgs, .first_seq = e->first, .last_seq = e->last};
        if (!cb(arg, e->s, e->len, &ss))
            return;
    }
}

/* ---- limits ----------------------------------------------------------------------------- */

static void
enforce_per_subject(memstore_t *ms, subj_t *e)
{
    if (ms->cfg.max_msgs_per_subject <= 0)
        return;
    while (e && e->msgs > (uint64_t)ms->cfg.max_msgs_per_subject) {
        subj_fix(ms, e);
        long i = find(ms, e->first);
        if (i < 0)
            break; /* cannot happen: first is exact after subj_fix */
        bool last_one = e->msgs == 1;
        remove_at(ms, (size_t)i, false);
        if (last_one)
            break;
    }
}

static void
enforce_limits(memstore_t *ms)
{
    if (ms->cfg.discard != ND_DISCARD_OLD)
        return;
    while (ms->msgs > 0 && nd_store_over_limits(&ms->cfg, ms->msgs, ms->bytes))
        remove_first(ms);
}

/* ---- expiry ----------------------------------------------------------------------------- */

static bool
is_never(const memstore_t *ms, const mmsg_t *m)
{
    return ms->cfg.allow_msg_ttl && m->hdr_len &&
           nd_store_hdr_ttl(m->subj + m->subj_len, m->hdr_len) < 0;
}

/* Expiry looks at each message (never TTLs, markers) rather than cutting the front. */
static bool
per_msg_expiry(const memstore_t *ms)
{
    return ms->cfg.allow_msg_ttl || ms->cfg.on_subject_expired;
}

/* Removes the live message in slot i for expiry, reporting a subject that loses its last
 * message (notify). The caller settles. */
static void
expire_at(memstore_t *ms, size_t i, bool notify)
{
    mmsg_t *m = slot_at(ms, i)->m;
    if (notify && ms->cfg.on_subject_expired) {
        subj_t *e = stab_find(&ms->subjects, m->subj, m->subj_len, subj_hash(m->subj, m->subj_len));
        if (e && e->msgs == 1 && !nd_store_hdr_is_marker(m->subj + m->subj_len, m->hdr_len))
            ms->cfg.on_subject_expired(ms->cfg.expired_arg, m->subj, m->subj_len);
    }
    remove_at(ms, i, false);
}

/* Index of the first live slot that max_age may expire (past the front's never TTLs). */
static size_t
age_start(memstore_t *ms)
{
    size_t i = lower_bound(ms, ms->age_from > ms->first_seq ? ms->age_from : ms->first_seq);
    while (i < ms->n && !slot_at(ms, i)->m)
        i++;
    return i;
}

static void
expire(memstore_t *ms, int64_t now, bool notify)
{
    if (ms->cfg.max_age_ns <= 0 || ms->n == 0)
        return;
    int64_t min_ts = now - ms->cfg.max_age_ns;
    if (!per_msg_expiry(ms)) {
        while (ms->n > 0 && slot_at(ms, 0)->m->ts <= min_ts)
            remove_first(ms);
        return;
    }
    /* Nothing is settled inside the loop, so slot indexes stay put. Everything live before the
     * current slot is either gone or has TTL never, which is what age_from records. */
    for (size_t i = age_start(ms); i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        if (!s->m)
            continue;
        if (s->m->ts > min_ts)
            break;
        if (is_never(ms, s->m))
            ms->age_from = s->seq + 1;
        else
            expire_at(ms, i, notify);
    }
    settle(ms);
}

static bool
ttl_live(void *arg, uint64_t seq)
{
    return find(arg, seq) >= 0;
}

static void
expire_ttls(memstore_t *ms, int64_t now)
{
    uint64_t seq;
    bool any = false;
    while (nd_store_ttls_pop(&ms->ttls, now, &seq)) {
        long i = find(ms, seq);
        if (i < 0)
            continue; /* removed otherwise since */
        expire_at(ms, (size_t)i, true);
        any = true;
    }
    if (any)
        settle(ms);
}

/* Schedules every message's TTL from its headers (allow_msg_ttl turned on). */
static void
ttls_rebuild(memstore_t *ms)
{
    nd_store_ttls_clear(&ms->ttls);
    ms->age_from = 0;
    if (!ms->cfg.allow_msg_ttl)
        return;
    for (size_t i = 0; i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        if (s->m && s->m->hdr_len)
            nd_store_ttls_add(&ms->ttls, s->seq, s->m->ts,
                              nd_store_hdr_ttl(s->m->subj + s->m->subj_len, s->m->hdr_len));
    }
}

/* ---- store ------------------------------------------------------------------------------ */

static nd_err_t
put(memstore_t *ms, uint64_t seq, int64_t ts, const char *subj, size_t sl, const void *hdr,
    size_t hl, const void *data, size_t dl, int64_t ttl)
{
    nd_err_t err = nd_store_check_msg(&ms->cfg, subj, sl, hdr, hl, data, dl, UINT32_MAX);
    if (err != ND_OK)
        return err;

    uint64_t h = subj_hash(subj, sl);
    subj_t *e = stab_find(&ms->subjects, subj, sl, h);
    uint64_t size = nd_store_msg_size(sl, hl, dl);
    bool if_oldest_fits;
    err = nd_store_admit_new(&ms->cfg, ms->msgs, ms->bytes, size, e ? e->msgs : 0, &if_oldest_fits);
    if (err != ND_OK)
        return err;
    if (if_oldest_fits) {
        /* e exists: the subject is at its limit. */
        subj_fix(ms, e);
        long i = find(ms, e->first);
        if (i < 0 || msize(slot_at(ms, (size_t)i)->m) < size)
            return ND_ERR_STORE_MAX_BYTES;
    }

    /* The sizes were checked against max_msg_size (and the server's max_payload) above. */
    mmsg_t *m = nd_xmalloc(MMSG_HDR + sl + hl + dl);
    if (ms->n == ms->cap)
        ring_resize(ms, ms->cap ? ms->cap * 2 : MIN_RING);
    if (!e)
        e = stab_add(&ms->subjects, subj, sl, h);
    m->ts = ts;
    m->hdr_len = (uint32_t)hl;
    m->data_len = (uint32_t)dl;
    m->subj_len = (uint16_t)sl;
    memcpy(m->subj, subj, sl);
    if (hl)
        memcpy(m->subj + sl, hdr, hl);
    if (dl)
        memcpy(m->subj + sl + hl, data, dl);
    *slot_at(ms, ms->n) = (slot_t){seq, m};
    ms->n++;
    ms->msgs++;
    ms->bytes += size;
    ms->last_seq = seq;
    ms->last_ts = ts;
    if (ms->n == 1)
        ms->first_seq = seq;
    if (e->msgs++ == 0) {
        e->first = seq;
        e->first_stale = false;
    }
    e->last = seq;
    e->last_stale = false;
    if (ttl > 0 && ms->cfg.allow_msg_ttl) {
        nd_store_ttls_add(&ms->ttls, seq, ts, ttl);
        nd_store_ttls_trim(&ms->ttls, ms->msgs, ttl_live, ms);
    }

    enforce_per_subject(ms, e);
    enforce_limits(ms);
    settle(ms);
    return ND_OK;
}

static nd_err_t
ms_store_ttl(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl,
             const void *data, size_t dl, int64_t ttl, uint64_t *seq, int64_t *ts)
{
    memstore_t *ms = (memstore_t *)st;
    int64_t now = nd_store_stamp(&ms->cfg, ms->last_ts);
    uint64_t s = ms->last_seq + 1;
    nd_err_t e = put(ms, s, now, subj, sl, hdr, hl, data, dl, ttl);
    if (e == ND_OK) {
        if (seq)
            *seq = s;
        if (ts)
            *ts = now;
    }
    return e;
}

static nd_err_t
ms_store(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl, const void *data,
         size_t dl, uint64_t *seq, int64_t *ts)
{
    return ms_store_ttl(st, subj, sl, hdr, hl, data, dl, 0, seq, ts);
}

static nd_err_t
ms_store_raw(nd_store_t *st, uint64_t seq, int64_t ts, const char *subj, size_t sl, const void *hdr,
             size_t hl, const void *data, size_t dl)
{
    memstore_t *ms = (memstore_t *)st;
    if (seq == 0 || seq <= ms->last_seq)
        return ND_ERR_STORE_BAD_SEQUENCE;
    int64_t ttl = ms->cfg.allow_msg_ttl ? nd_store_hdr_ttl(hdr, hl) : 0;
    return put(ms, seq, ts, subj, sl, hdr, hl, data, dl, ttl);
}

static nd_err_t
ms_skip(nd_store_t *st, uint64_t *seq)
{
    memstore_t *ms = (memstore_t *)st;
    ms->last_seq++;
    ms->last_ts = nd_store_stamp(&ms->cfg, ms->last_ts);
    if (ms->msgs == 0)
        ms->first_seq = ms->last_seq + 1;
    if (seq)
        *seq = ms->last_seq;
    return ND_OK;
}

/* ---- load ------------------------------------------------------------------------------- */

static nd_err_t
ms_load(nd_store_t *st, uint64_t seq, nd_store_msg_t *out)
{
    memstore_t *ms = (memstore_t *)st;
    long i = find(ms, seq);
    if (i < 0)
        return seq > ms->last_seq ? ND_ERR_STORE_EOF : ND_ERR_STORE_NOT_FOUND;
    return fill(out, seq, slot_at(ms, (size_t)i)->m);
}

static nd_err_t
ms_load_next(nd_store_t *st, const char *filter, size_t fl, uint64_t start, nd_store_msg_t *out)
{
    memstore_t *ms = (memstore_t *)st;
    bool all = nd_store_filter_all(filter, fl);
    bool literal = !all && nd_subj_is_literal(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return ND_ERR_STORE_BAD_ARG;
    if (literal) {
        subj_t *e = stab_find(&ms->subjects, filter, fl, subj_hash(filter, fl));
        if (!e)
            return ND_ERR_STORE_EOF;
        subj_fix(ms, e);
        if (start > e->last)
            return ND_ERR_STORE_EOF;
        if (start < e->first)
            start = e->first;
    }
    for (size_t i = lower_bound(ms, start); i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        if (!s->m)
            continue;
        if (all || (literal ? subj_eq(s->m, filter, fl)
                            : nd_subj_match(filter, fl, s->m->subj, s->m->subj_len)))
            return fill(out, s->seq, s->m);
    }
    return ND_ERR_STORE_EOF;
}

static nd_err_t
ms_load_last(nd_store_t *st, const char *filter, size_t fl, nd_store_msg_t *out)
{
    memstore_t *ms = (memstore_t *)st;
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return ND_ERR_STORE_BAD_ARG;
    if (all) {
        if (ms->n == 0)
            return ND_ERR_STORE_NOT_FOUND;
        slot_t *s = slot_at(ms, ms->n - 1);
        return fill(out, s->seq, s->m);
    }
    if (nd_subj_is_literal(filter, fl)) {
        subj_t *e = stab_find(&ms->subjects, filter, fl, subj_hash(filter, fl));
        if (!e)
            return ND_ERR_STORE_NOT_FOUND;
        subj_fix(ms, e);
        long i = find(ms, e->last);
        if (i < 0)
            return ND_ERR_STORE_NOT_FOUND;
        return fill(out, e->last, slot_at(ms, (size_t)i)->m);
    }
    /* A wildcard: the newest of the matching subjects' lasts, when there are fewer subjects
     * than messages; else a scan from the end. */
    if (ms->subjects.count < ms->msgs) {
        uint64_t best = nd_store_subj_newest(st, walk_subjects, filter, fl);
        long i = best ? find(ms, best) : -1;
        if (i < 0)
            return ND_ERR_STORE_NOT_FOUND;
        return fill(out, best, slot_at(ms, (size_t)i)->m);
    }
    for (size_t i = ms->n; i-- > 0;) {
        slot_t *s = slot_at(ms, i);
        if (s->m && nd_subj_match(filter, fl, s->m->subj, s->m->subj_len))
            return fill(out, s->seq, s->m);
    }
    return ND_ERR_STORE_NOT_FOUND;
}

/* ---- remove, purge, compact, truncate --------------------------------------------------- */

static nd_err_t
ms_remove(nd_store_t *st, uint64_t seq, bool secure)
{
    memstore_t *ms = (memstore_t *)st;
    long i = find(ms, seq);
    if (i < 0)
        return ND_ERR_STORE_NOT_FOUND;
    remove_at(ms, (size_t)i, secure);
    settle(ms);
    return ND_OK;
}

static nd_err_t
ms_compact(nd_store_t *st, uint64_t seq, uint64_t *purged)
{
    memstore_t *ms = (memstore_t *)st;
    uint64_t before = ms->msgs;
    if (seq == 0 || seq > ms->last_seq) {
        remove_all(ms);
        if (seq > ms->last_seq) {
            ms->last_seq = seq - 1;
            ms->first_seq = seq;
        }
    } else {
        while (ms->n > 0 && slot_at(ms, 0)->seq < seq)
            remove_first(ms);
    }
    if (purged)
        *purged = before - ms->msgs;
    return ND_OK;
}

static nd_err_t
ms_purge(nd_store_t *st, const char *filter, size_t fl, uint64_t up_to, uint64_t keep,
         uint64_t *purged)
{
    memstore_t *ms = (memstore_t *)st;
    uint64_t dummy;
    if (!purged)
        purged = &dummy;
    *purged = 0;
    if (nd_store_filter_all(filter, fl)) {
        uint64_t below;
        switch (nd_store_purge_all_plan(up_to, keep, ms->msgs, ms->last_seq, &below)) {
        case ND_STORE_PURGE_ALL:
            *purged = ms->msgs;
            remove_all(ms);
            return ND_OK;
        case ND_STORE_PURGE_COMPACT:
            return ms_compact(st, below, purged);
        case ND_STORE_PURGE_NOTHING:
            break;
        }
        return ND_OK;
    }
    uint64_t first, last, max;
    nd_err_t e = nd_store_purge_filtered_plan(st, filter, fl, up_to, keep, &first, &last, &max);
    if (e != ND_OK || max == 0)
        return e;
    bool literal = nd_subj_is_literal(filter, fl);
    for (size_t i = lower_bound(ms, first); i < ms->n && *purged < max; i++) {
        slot_t *s = slot_at(ms, i);
        if (s->seq > last)
            break;
        if (s->m && (literal ? subj_eq(s->m, filter, fl)
                             : nd_subj_match(filter, fl, s->m->subj, s->m->subj_len))) {
            remove_at(ms, i, false);
            (*purged)++;
        }
    }
    settle(ms);
    return ND_OK;
}

static nd_err_t
ms_truncate(nd_store_t *st, uint64_t seq)
{
    memstore_t *ms = (memstore_t *)st;
    if (seq == 0) {
        remove_all(ms);
        ms->last_seq = 0;
        ms->first_seq = 1;
        ms->last_ts = 0;
        ms->age_from = 0;
        return ND_OK;
    }
    long i = find(ms, seq);
    if (i < 0)
        return ND_ERR_STORE_BAD_SEQUENCE;
    for (size_t j = (size_t)i + 1; j < ms->n; j++)
        if (slot_at(ms, j)->m)
            remove_at(ms, j, false);
    ms->last_seq = seq;
    ms->last_ts = slot_at(ms, (size_t)i)->m->ts;
    settle(ms);
    /* The sequences after seq come back: no deadline or cursor may speak for them. */
    nd_store_ttls_filter(&ms->ttls, ttl_live, ms);
    if (ms->age_from > seq + 1)
        ms->age_from = seq + 1;
    return ND_OK;
}

/* ---- state ------------------------------------------------------------------------------ */

static void
ms_state(nd_store_t *st, nd_store_state_t *out)
{
    memstore_t *ms = (memstore_t *)st;
    memset(out, 0, sizeof *out);
    out->msgs = ms->msgs;
    out->bytes = ms->bytes;
    out->first_seq = ms->first_seq;
    out->last_seq = ms->last_seq;
    out->first_ts = ms->n ? slot_at(ms, 0)->m->ts : 0;
    out->last_ts = ms->last_ts;
    out->num_deleted = nd_store_num_deleted(ms->first_seq, ms->last_seq, ms->msgs);
    out->num_subjects = ms->subjects.count;
    out->consumers = ms->ncons;
}

static nd_err_t
ms_deleted(nd_store_t *st, uint64_t **seqs, size_t *n)
{
    memstore_t *ms = (memstore_t *)st;
    nd_store_gaps_t g;
    nd_err_t e = nd_store_gaps_begin(&g, ms->first_seq, ms->last_seq, ms->msgs, seqs, n);
    if (e != ND_OK || g.done)
        return e;
    for (size_t i = 0; i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        if (s->m)
            nd_store_gaps_live(&g, s->seq);
    }
    nd_store_gaps_end(&g, seqs, n);
    return ND_OK;
}

/* Totals of the messages matching filter with seq >= start. */
static void
filtered(memstore_t *ms, const char *filter, size_t fl, uint64_t start, nd_store_subj_state_t *out)
{
    memset(out, 0, sizeof *out);
    if (ms->msgs == 0 || start > ms->last_seq)
        return;
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return;
    if (start <= ms->first_seq) {
        /* Everything counts: answer from the totals or the subject index. */
        if (all) {
            out->msgs = ms->msgs;
            out->first_seq = ms->first_seq;
            out->last_seq = slot_at(ms, ms->n - 1)->seq;
            return;
        }
        if (nd_subj_is_literal(filter, fl)) {
            subj_t *e = stab_find(&ms->subjects, filter, fl, subj_hash(filter, fl));
            if (e) {
                subj_fix(ms, e);
                out->msgs = e->msgs;
                out->first_seq = e->first;
                out->last_seq = e->last;
            }
            return;
        }
        if (ms->subjects.count < ms->msgs) {
            nd_store_subj_sum(&ms->base, walk_subjects, filter, fl, out);
            return;
        }
    }
    if (all && ms->n == ms->msgs) {
        /* No holes: every slot from start on is a message. */
        size_t i = lower_bound(ms, start);
        if (i < ms->n) {
            out->msgs = ms->n - i;
            out->first_seq = slot_at(ms, i)->seq;
            out->last_seq = slot_at(ms, ms->n - 1)->seq;
        }
        return;
    }
    bool literal = !all && nd_subj_is_literal(filter, fl);
    uint64_t end = UINT64_MAX;
    if (literal) {
        /* Only the subject's own range needs a look (a consumer asks this often). */
        subj_t *e = stab_find(&ms->subjects, filter, fl, subj_hash(filter, fl));
        if (!e)
            return;
        subj_fix(ms, e);
        if (start < e->first)
            start = e->first;
        end = e->last;
    }
    for (size_t i = lower_bound(ms, start); i < ms->n; i++) {
        slot_t *s = slot_at(ms, i);
        if (s->seq > end)
            break;
        if (!s->m)
            continue;
        if (all || (literal ? subj_eq(s->m, filter, fl)
                            : nd_subj_match(filter, fl, s->m->subj, s->m->subj_len)))
            nd_store_subj_state_count(out, s->seq);
    }
}

static void
ms_filtered_state(nd_store_t *st, const char *filter, size_t fl, uint64_t start,
                  nd_store_subj_state_t *out)
{
    filtered((memstore_t *)st, filter, fl, start, out);
}

static void
ms_subjects_state(nd_store_t *st, const char *filter, size_t fl, nd_store_subj_cb cb, void *arg)
{
    nd_store_subjects_state(st, walk_subjects, filter, fl, cb, arg);
}

static uint64_t
ms_num_pending(nd_store_t *st, const char *filter, size_t fl, uint64_t start, bool lps)
{
    return nd_store_num_pending(st, walk_subjects, filter, fl, start, lps);
}

/* ---- config, tick, sync, snapshot ------------------------------------------------------- */

static nd_err_t
ms_update_cfg(nd_store_t *st, const nd_store_cfg_t *cfg)
{
    memstore_t *ms = (memstore_t *)st;
    bool had_ttl = ms->cfg.allow_msg_ttl;
    ms->cfg = *cfg;
    ms->cfg.dir = NULL;
    ms->cfg.key = NULL;
    if (had_ttl != ms->cfg.allow_msg_ttl)
        ttls_rebuild(ms);
    if (ms->cfg.max_msgs_per_subject > 0) {
        /* Collect first: enforcing may delete table entries (never here, as a subject keeps at
         * least max >= 1 messages, but the walk must not depend on that). */
        for (size_t i = 0; i < ms->subjects.cap; i++) {
            subj_t *e = ms->subjects.tab[i];
            if (e && e->msgs > (uint64_t)ms->cfg.max_msgs_per_subject)
                enforce_per_subject(ms, e);
        }
        settle(ms);
    }
    enforce_limits(ms);
    expire(ms, nd_store_now(&ms->cfg), true);
    settle(ms);
    return ND_OK;
}

static int64_t
ms_tick(nd_store_t *st, int64_t now)
{
    memstore_t *ms = (memstore_t *)st;
    expire(ms, now, true);
    expire_ttls(ms, now);
    int64_t next = 0;
    if (ms->cfg.max_age_ns > 0 && ms->n > 0) {
        size_t i = per_msg_expiry(ms) ? age_start(ms) : 0;
        if (i < ms->n)
            next = slot_at(ms, i)->m->ts + ms->cfg.max_age_ns;
    }
    int64_t t = nd_store_ttls_next(&ms->ttls);
    if (t && (!next || t < next))
        next = t;
    return next;
}

static nd_err_t
ms_sync(nd_store_t *st)
{
    return ND_OK;
}

static nd_err_t
ms_snapshot(nd_store_t *st, nd_store_write_fn w, void *arg)
{
    return nd_store_snapshot_write(st, w, arg);
}

/* ---- consumers -------------------------------------------------------------------------- */

static nd_err_t
ms_consumer_open(nd_store_t *st, const char *name, nd_cstore_t **out)
{
    memstore_t *ms = (memstore_t *)st;
    *out = NULL;
    if (!name || !*name)
        return ND_ERR_STORE_BAD_ARG;
    for (size_t i = 0; i < ms->ncons; i++) {
        if (strcmp(ms->cons[i]->name, name) == 0) {
            *out = ms->cons[i];
            return ND_OK;
        }
    }
    nd_cstore_t *c = nd_new(nd_cstore_t);
    ms->cons = nd_xrealloc(ms->cons, (ms->ncons + 1) * sizeof *ms->cons);
    c->ms = ms;
    c->name = nd_xstrdup(name);
    ms->cons[ms->ncons++] = c;
    *out = c;
    return ND_OK;
}

static nd_err_t
ms_consumer_update(nd_cstore_t *c, const nd_consumer_state_t *state)
{
    uint8_t *enc;
    size_t len;
    nd_cstate_encode(state, &enc, &len);
    free(c->enc);
    c->enc = enc;
    c->len = len;
    return ND_OK;
}

static nd_err_t
ms_consumer_state(nd_cstore_t *c, nd_consumer_state_t *out)
{
    if (!c->enc) {
        memset(out, 0, sizeof *out);
        return ND_OK;
    }
    return nd_cstate_decode(c->enc, c->len, out);
}

/* A memory consumer's state lives as long as the store, so closing the handle changes nothing. */
static void
ms_consumer_close(nd_cstore_t *c)
{
}

static void
cons_free(nd_cstore_t *c)
{
    free(c->name);
    free(c->enc);
    free(c);
}

static nd_err_t
ms_consumer_delete(nd_cstore_t *c)
{
    memstore_t *ms = c->ms;
    for (size_t i = 0; i < ms->ncons; i++) {
        if (ms->cons[i] == c) {
            ms->cons[i] = ms->cons[--ms->ncons];
            cons_free(c);
            return ND_OK;
        }
    }
    return ND_ERR_STORE_NOT_FOUND;
}

static nd_err_t
ms_consumer_list(nd_store_t *st, char ***names, size_t *n)
{
    memstore_t *ms = (memstore_t *)st;
    *names = NULL;
    *n = 0;
    if (ms->ncons == 0)
        return ND_OK;
    char **v = nd_xcalloc(ms->ncons, sizeof *v);
    for (size_t i = 0; i < ms->ncons; i++)
        v[i] = nd_xstrdup(ms->cons[i]->name);
    *names = v;
    *n = ms->ncons;
    return ND_OK;
}

/* ---- open, close ------------------------------------------------------------------------ */

static void
ms_close(nd_store_t *st)
{
    memstore_t *ms = (memstore_t *)st;
    if (!ms)
        return;
    remove_all(ms);
    nd_store_ttls_free(&ms->ttls);
    for (size_t i = 0; i < ms->ncons; i++)
        cons_free(ms->cons[i]);
    free(ms->cons);
    free(ms);
}

static nd_err_t
ms_destroy(nd_store_t *st)
{
    ms_close(st);
    return ND_OK;
}

nd_err_t
nd_memstore_open(const nd_store_cfg_t *cfg, nd_store_t **out)
{
    *out = NULL;
    memstore_t *ms = nd_new(memstore_t);
    ms->base.ops = &memstore_ops;
    if (cfg)
        ms->cfg = *cfg;
    /* The memory store keeps no pointer into the caller's config. */
    ms->cfg.dir = NULL;
    ms->cfg.key = NULL;
    ms->first_seq = 1;
    *out = &ms->base;
    return ND_OK;
}

static const nd_store_ops_t memstore_ops = {
    .store = ms_store,
    .store_ttl = ms_store_ttl,
    .store_raw = ms_store_raw,
    .skip = ms_skip,
    .load = ms_load,
    .load_next = ms_load_next,
    .load_last = ms_load_last,
    .remove = ms_remove,
    .purge = ms_purge,
    .compact = ms_compact,
    .truncate = ms_truncate,
    .state = ms_state,
    .deleted = ms_deleted,
    .filtered_state = ms_filtered_state,
    .subjects_state = ms_subjects_state,
    .num_pending = ms_num_pending,
    .update_cfg = ms_update_cfg,
    .tick = ms_tick,
    .sync = ms_sync,
    .flush = ms_sync,
    .snapshot = ms_snapshot,
    .consumer_open = ms_consumer_open,
    .consumer_update = ms_consumer_update,
    .consumer_state = ms_consumer_state,
    .consumer_close = ms_consumer_close,
    .consumer_delete = ms_consumer_delete,
    .consumer_list = ms_consumer_list,
    .close = ms_close,
    .destroy = ms_destroy,
};
