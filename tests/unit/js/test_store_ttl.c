/* Per-message TTLs (js/store/store_ttl.h) and what both stores do with them: expiry by TTL in
 * tick with exact deadlines, "never" outliving max_age, TTLs read back from the Nats-TTL header
 * after a file store reopens (and by store_raw), truncate, and the report of subjects that
 * expiry empties (subject delete markers). Each STORE_CASE runs against both stores, as in
 * test_store.c; the clock is fake, so nothing here sleeps.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "js/store/store.h"
#include "js/store/store_ttl.h"

#define SEC 1000000000LL

/* ---- harness ---------------------------------------------------------------------------- */

typedef struct tctx {
    bool file;
    char dir[64];
    char sdir[96];
    nd_store_cfg_t cfg;
    nd_store_t *st;
    int64_t now;
} tctx_t;

/* Subjects reported by on_subject_expired (each test runs in its own process). */
static char reported[16][32];
static int nreported;

static void
on_expired(void *arg, const char *subj, size_t len)
{
    (void)arg;
    cr_assert(nreported < 16 && len < 32);
    memcpy(reported[nreported], subj, len);
    reported[nreported][len] = '\0';
    nreported++;
}

static int64_t
fake_now(void *arg)
{
    return ((tctx_t *)arg)->now;
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void
t_open(tctx_t *t, bool file, const nd_store_cfg_t *cfg)
{
    memset(t, 0, sizeof *t);
    t->file = file;
    if (cfg)
        t->cfg = *cfg;
    t->cfg.allow_msg_ttl = true;
    t->now = 1000 * SEC;
    t->cfg.now = fake_now;
    t->cfg.now_arg = t;
    /* The interval sync's deadline stays out of the way of the ones checked here. */
    t->cfg.sync_interval_ns = 1000000 * SEC;
    if (file) {
        snprintf(t->dir, sizeof t->dir, "/tmp/ndttl.XXXXXX");
        cr_assert_not_null(mkdtemp(t->dir));
        snprintf(t->sdir, sizeof t->sdir, "%s/stream", t->dir);
        t->cfg.dir = t->sdir;
        cr_assert_eq(nd_filestore_open(&t->cfg, &t->st, NULL), ND_OK);
    } else {
        cr_assert_eq(nd_memstore_open(&t->cfg, &t->st), ND_OK);
    }
}

/* A file store closes and reopens: TTLs come back from the headers. Nothing for memory. */
static void
t_reopen(tctx_t *t)
{
    if (!t->file)
        return;
    nd_store_close(t->st);
    cr_assert_eq(nd_filestore_open(&t->cfg, &t->st, NULL), ND_OK);
}

static void
t_done(tctx_t *t)
{
    nd_store_close(t->st);
    if (t->file)
        nftw(t->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

#define STORE_CASE(name)                                                                           \
    static void case_##name(bool file);                                                            \
    Test(store_ttl_mem, name)                                                                      \
    {                                                                                              \
        case_##name(false);                                                                        \
    }                                                                                              \
    Test(store_ttl_file, name)                                                                     \
    {                                                                                              \
        case_##name(true);                                                                         \
    }                                                                                              \
    static void case_##name(bool file)

/* Stores subj with headers "Nats-TTL: ttl_hdr" (none when NULL) and the TTL ttl. */
static uint64_t
put_ttl(tctx_t *t, const char *subj, const char *ttl_hdr, int64_t ttl, const char *extra)
{
    char hdr[256];
    size_t hl = 0;
    if (ttl_hdr || extra)
        hl = (size_t)snprintf(hdr, sizeof hdr, "NATS/1.0\r\n%s%s%s%s\r\n",
                              ttl_hdr ? "Nats-TTL: " : "", ttl_hdr ? ttl_hdr : "",
                              ttl_hdr ? "\r\n" : "", extra ? extra : "");
    uint64_t seq = 0;
    nd_err_t e =
        nd_store_put_ttl(t->st, subj, strlen(subj), hl ? hdr : NULL, hl, "x", 1, ttl, &seq, NULL);
    cr_assert_eq(e, ND_OK, "store %s: %s", subj, nd_strerror(e));
    return seq;
}

static bool
has(tctx_t *t, uint64_t seq)
{
    nd_store_msg_t m = {0};
    nd_err_t e = nd_store_load(t->st, seq, &m);
    nd_store_msg_free(&m);
    return e == ND_OK;
}

static uint64_t
msgs(tctx_t *t)
{
    nd_store_state_t s;
    nd_store_state(t->st, &s);
    return s.msgs;
}

static int64_t
tick(tctx_t *t)
{
    return t->st->ops->tick(t->st, t->now);
}

/* Nothing to expire: no deadline, or only a file store's far interval sync. */
static bool
idle(tctx_t *t, int64_t dl)
{
    return dl == 0 || dl >= t->now + 1000 * SEC;
}

/* ---- the parts -------------------------------------------------------------------------- */

Test(store_ttl, parse)
{
    struct {
        const char *v;
        bool ok;
        int64_t secs;
    } cases[] = {
        {"1s", true, 1},  {"1m30s", true, 90},    {"2h", true, 7200},  {"1.5s", true, 1},
        {"60", true, 60}, {"00", true, 0},        {"never", true, -1}, {"NEVER", true, -1},
        {"0", false, 0},  {"500ms", false, 0},    {"-1", false, 0},    {"-5s", false, 0},
        {"", false, 0},   {"abc", false, 0},      {"1x", false, 0},    {"1000000ms", true, 1000},
        {"+3s", true, 3}, {"1h1m1s", true, 3661},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t s = 12345;
        bool ok = nd_store_parse_ttl(cases[i].v, strlen(cases[i].v), &s);
        cr_assert_eq(ok, cases[i].ok, "%s", cases[i].v);
        if (ok)
            cr_assert_eq(s, cases[i].secs, "%s: %ld", cases[i].v, (long)s);
    }
    const char *h = "NATS/1.0\r\nA: b\r\nNats-TTL: 5m\r\n\r\n";
    cr_assert_eq(nd_store_hdr_ttl(h, strlen(h)), 300);
    cr_assert_eq(nd_store_hdr_ttl(NULL, 0), 0);
    const char *bad = "NATS/1.0\r\nNats-TTL: soon\r\n\r\n";
    cr_assert_eq(nd_store_hdr_ttl(bad, strlen(bad)), 0);
    const char *mk = "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\n\r\n";
    const char *kv = "NATS/1.0\r\nKV-Operation: PURGE\r\n\r\n";
    const char *del = "NATS/1.0\r\nKV-Operation: DEL\r\n\r\n";
    cr_assert(nd_store_hdr_is_marker(mk, strlen(mk)));
    cr_assert(nd_store_hdr_is_marker(kv, strlen(kv)));
    cr_assert_not(nd_store_hdr_is_marker(del, strlen(del)));
    cr_assert_not(nd_store_hdr_is_marker(h, strlen(h)));
}

static bool
keep_odd(void *arg, uint64_t seq)
{
    (void)arg;
    return seq % 2;
}

Test(store_ttl, heap_order_and_filter)
{
    nd_store_ttls_t h = {0};
    /* Deadlines in scrambled order pop in order. */
    for (uint64_t i = 1; i <= 1000; i++)
        nd_store_ttls_add(&h, i, 0, (int64_t)((i * 7919) % 1000) + 1);
    nd_store_ttls_add(&h, 5000, 0, 0);           /* no TTL: nothing */
    nd_store_ttls_add(&h, 5001, 0, -1);          /* never: nothing */
    nd_store_ttls_add(&h, 5002, 100, INT64_MAX); /* past the end of time: nothing */
    cr_assert_eq(h.n, 1000);
    cr_assert_eq(nd_store_ttls_next(&h), 1 * SEC);
    nd_store_ttls_filter(&h, keep_odd, NULL);
    cr_assert_eq(h.n, 500);
    int64_t last = 0;
    uint64_t seq;
    size_t n = 0;
    while (nd_store_ttls_pop(&h, 2000 * SEC, &seq)) {
        cr_assert(seq % 2 == 1);
        int64_t at = (int64_t)((seq * 7919) % 1000 + 1) * SEC;
        cr_assert(at >= last);
        last = at;
        n++;
    }
    cr_assert_eq(n, 500);
    cr_assert_eq(nd_store_ttls_next(&h), 0);
    /* Not due yet: nothing pops. */
    nd_store_ttls_add(&h, 1, 10 * SEC, 5);
    cr_assert_not(nd_store_ttls_pop(&h, 15 * SEC - 1, &seq));
    cr_assert(nd_store_ttls_pop(&h, 15 * SEC, &seq));
    nd_store_ttls_free(&h);
}

/* ---- both stores ------------------------------------------------------------------------ */

STORE_CASE(expires_at_its_deadline)
{
    tctx_t t;
    t_open(&t, file, NULL);
    int64_t t0 = t.now;
    uint64_t a = put_ttl(&t, "a", "5", 5, NULL);
    uint64_t b = put_ttl(&t, "b", NULL, 0, NULL);
    t.now += SEC;
    uint64_t c = put_ttl(&t, "c", "10s", 10, NULL);
    cr_assert_eq(tick(&t), t0 + 5 * SEC);
    t.now = t0 + 5 * SEC - 1;
    cr_assert_eq(tick(&t), t0 + 5 * SEC);
    cr_assert_eq(msgs(&t), 3);
    t.now = t0 + 5 * SEC;
    cr_assert_eq(tick(&t), t0 + 11 * SEC);
    cr_assert_not(has(&t, a));
    cr_assert(has(&t, b) && has(&t, c));
    /* A reopened file store reads c's TTL back from its header. */
    t_reopen(&t);
    cr_assert_eq(tick(&t), t0 + 11 * SEC);
    t.now = t0 + 11 * SEC;
    cr_assert(idle(&t, tick(&t)));
    cr_assert_not(has(&t, c));
    cr_assert(has(&t, b));
    cr_assert_eq(msgs(&t), 1);
    t_done(&t);
}

STORE_CASE(ttl_ignored_when_not_allowed)
{
    tctx_t t;
    t_open(&t, file, NULL);
    nd_store_cfg_t cfg = t.cfg;
    cfg.allow_msg_ttl = false;
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    t.cfg = cfg;
    uint64_t a = put_ttl(&t, "a", "1", 1, NULL);
    t.now += 10 * SEC;
    cr_assert(idle(&t, tick(&t)));
    cr_assert(has(&t, a));
    /* Turning TTLs on schedules what the headers say (already due here). */
    cfg.allow_msg_ttl = true;
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    t.cfg = cfg;
    tick(&t);
    cr_assert_not(has(&t, a));
    t_done(&t);
}

STORE_CASE(never_outlives_max_age)
{
    tctx_t t;
    t_open(&t, file, &(nd_store_cfg_t){.max_age_ns = 10 * SEC});
    int64_t t0 = t.now;
    uint64_t a = put_ttl(&t, "a", "never", -1, NULL);
    uint64_t b = put_ttl(&t, "b", NULL, 0, NULL);
    uint64_t c = put_ttl(&t, "c", "never", -1, NULL);
    t.now += 2 * SEC;
    uint64_t d = put_ttl(&t, "d", NULL, 0, NULL);
    cr_assert_eq(tick(&t), t0 + 10 * SEC);
    t.now = t0 + 10 * SEC;
    /* b goes; the next deadline is d's, never a's again (no busy loop on the never ones). */
    cr_assert_eq(tick(&t), t0 + 12 * SEC);
    cr_assert(has(&t, a) && has(&t, c) && has(&t, d));
    cr_assert_not(has(&t, b));
    t_reopen(&t);
    t.now = t0 + 12 * SEC;
    int64_t dl = tick(&t);
    cr_assert_not(has(&t, d));
    cr_assert(has(&t, a) && has(&t, c));
    /* Only never messages are left: nothing to wake up for (the reopened file store has
     * looked at them once more and may say a's old deadline once). */
    if (!idle(&t, dl))
        dl = tick(&t);
    cr_assert(idle(&t, dl), "deadline %ld", (long)dl);
    cr_assert(idle(&t, tick(&t)));
    t.now += 1000 * SEC;
    cr_assert(idle(&t, tick(&t)));
    cr_assert_eq(msgs(&t), 2);
    /* A later message is aged normally behind them. */
    uint64_t e = put_ttl(&t, "e", NULL, 0, NULL);
    cr_assert_eq(tick(&t), t.now + 10 * SEC);
    t.now += 10 * SEC;
    tick(&t);
    cr_assert_not(has(&t, e));
    cr_assert_eq(msgs(&t), 2);
    t_done(&t);
}

STORE_CASE(store_raw_reads_the_header)
{
    tctx_t t;
    t_open(&t, file, NULL);
    const char *h = "NATS/1.0\r\nNats-TTL: 3s\r\n\r\n";
    cr_assert_eq(t.st->ops->store_raw(t.st, 10, t.now, "r", 1, h, strlen(h), "x", 1), ND_OK);
    cr_assert_eq(tick(&t), t.now + 3 * SEC);
    t.now += 3 * SEC;
    tick(&t);
    cr_assert_not(has(&t, 10));
    t_done(&t);
}

STORE_CASE(truncate_forgets_deadlines)
{
    tctx_t t;
    t_open(&t, file, NULL);
    put_ttl(&t, "a", NULL, 0, NULL);
    put_ttl(&t, "a", NULL, 0, NULL);
    put_ttl(&t, "a", "5", 5, NULL); /* seq 3 */
    cr_assert_eq(t.st->ops->truncate(t.st, 2), ND_OK);
    /* Seq 3 again, without a TTL: the old deadline must not take it. */
    cr_assert_eq(put_ttl(&t, "b", NULL, 0, NULL), 3);
    t.now += 100 * SEC;
    tick(&t);
    cr_assert(has(&t, 3));
    cr_assert_eq(msgs(&t), 3);
    t_done(&t);
}

STORE_CASE(removed_and_purged_messages_leave_nothing_behind)
{
    tctx_t t;
    t_open(&t, file, NULL);
    /* Many TTL'd messages removed before their time: the heap drops their entries and the
     * next deadline is the live one's. */
    for (int i = 0; i < 500; i++)
        put_ttl(&t, "p", "100", 100, NULL);
    uint64_t purged = 0;
    cr_assert_eq(t.st->ops->purge(t.st, NULL, 0, 0, 0, &purged), ND_OK);
    cr_assert_eq(purged, 500);
    for (int i = 0; i < 200; i++) {
        uint64_t s = put_ttl(&t, "q", "50", 50, NULL);
        cr_assert_eq(t.st->ops->remove(t.st, s, false), ND_OK);
    }
    t.now += SEC;
    uint64_t k = put_ttl(&t, "k", "7", 7, NULL);
    t.now += 60 * SEC; /* the removed ones' deadlines passed, the purged ones' not */
    int64_t dl = tick(&t);
    cr_assert_not(has(&t, k));
    cr_assert_eq(msgs(&t), 0);
    cr_assert(idle(&t, dl));
    t_done(&t);
}

STORE_CASE(expiry_reports_emptied_subjects)
{
    tctx_t t;
    nreported = 0;
    t_open(&t, file, &(nd_store_cfg_t){.max_age_ns = 100 * SEC, .on_subject_expired = on_expired});
    put_ttl(&t, "a", NULL, 0, NULL);                            /* 1: max_age, not the last of a */
    put_ttl(&t, "a", "5", 5, NULL);                             /* 2: TTL, the last of a */
    put_ttl(&t, "m", "5", 5, "Nats-Marker-Reason: MaxAge\r\n"); /* 3: a marker: no report */
    put_ttl(&t, "k", "5", 5, "KV-Operation: PURGE\r\n");        /* 4: a KV purge: no report */
    put_ttl(&t, "b", "5", 5, NULL);                             /* 5: TTL, b keeps 6 */
    put_ttl(&t, "b", NULL, 0, NULL);                            /* 6 */
    t.now += 5 * SEC;
    tick(&t);
    cr_assert_eq(msgs(&t), 2, "msgs %lu", (unsigned long)msgs(&t));
    cr_assert_eq(nreported, 0);
    /* max_age takes 1 (a's last) and 6 (b's last): reported once each. */
    t.now += 100 * SEC;
    tick(&t);
    cr_assert_eq(msgs(&t), 0);
    cr_assert_eq(nreported, 2);
    bool sa = strcmp(reported[0], "a") == 0 || strcmp(reported[1], "a") == 0;
    bool sb = strcmp(reported[0], "b") == 0 || strcmp(reported[1], "b") == 0;
    cr_assert(sa && sb, "%s %s", reported[0], reported[1]);
    /* A TTL expiry that empties a subject is reported too. */
    nreported = 0;
    put_ttl(&t, "c", "2", 2, NULL);
    t.now += 2 * SEC;
    tick(&t);
    cr_assert_eq(nreported, 1);
    cr_assert_str_eq(reported[0], "c");
    t_done(&t);
}

Test(store_ttl_file, open_with_markers_leaves_max_age_to_tick)
{
    /* With the report on, an open does not expire by max_age (nothing could be reported
     * then); the first tick does, and reports. */
    tctx_t t;
    nreported = 0;
    t_open(&t, true, &(nd_store_cfg_t){.max_age_ns = 10 * SEC, .on_subject_expired = on_expired});
    put_ttl(&t, "a", NULL, 0, NULL);
    nd_store_close(t.st);
    t.now += 20 * SEC;
    cr_assert_eq(nd_filestore_open(&t.cfg, &t.st, NULL), ND_OK);
    cr_assert_eq(msgs(&t), 1);
    cr_assert_eq(nreported, 0);
    tick(&t);
    cr_assert_eq(msgs(&t), 0);
    cr_assert_eq(nreported, 1);
    t_done(&t);
}
