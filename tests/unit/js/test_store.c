/* The store interface (natsd/store.h): one table of cases run against both stores.
 *
 * Each STORE_CASE(name) body runs twice, as Test(store_mem, name) and Test(store_file, name), with
 * an "opener" that opens the kind of store under test. File-store cases get a fresh directory
 * under /tmp; t_reopen() closes and reopens the store there (a no-op for the memory store, whose
 * contents would not survive), so the same expectations check recovery too. The expectations
 * are nats-server's (server/memstore.go, filestore.go) where the contract follows it.
 *
 * Also here: the consumer-state codec (cstate) and the snapshot format's corruption handling.
 */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "js/store/cstate.h"
#include "js/store/store_snapshot.h"
#include "js/store/store.h"

/* The file store is another file of src/js; until it exists its half of the suite is skipped. */
#if __has_include("js/store/filestore.c")
#define HAVE_FILESTORE 1
#else
#define HAVE_FILESTORE 0
#endif

/* ---- harness -------------------------------------------------------------------------- */

typedef struct opener {
    const char *name;
    bool file;
} opener_t;

static const opener_t mem_opener = {"mem", false};
static const opener_t file_opener = {"file", true};

typedef struct tctx {
    const opener_t *op;
    char dir[64];  /* the test's temp dir (file store) */
    char sdir[96]; /* the store's dir inside it */
    nd_store_cfg_t cfg;
    nd_store_t *st;
    int64_t now; /* the fake clock */
} tctx_t;

static int64_t
fake_now(void *arg)
{
    return ((tctx_t *)arg)->now;
}

static nd_err_t
open_kind(bool file, const nd_store_cfg_t *cfg, nd_store_t **out)
{
#if HAVE_FILESTORE
    if (file)
        return nd_filestore_open(cfg, out, NULL);
#else
    if (file)
        return ND_ERR_STORE_BAD_ARG;
#endif
    return nd_memstore_open(cfg, out);
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void
rm_rf(const char *dir)
{
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static char *
make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/ndstore.XXXXXX");
    cr_assert_not_null(mkdtemp(buf));
    return buf;
}

/* Opens the store under test with the limits in cfg (or none). */
static void
t_open(tctx_t *t, const opener_t *op, const nd_store_cfg_t *cfg)
{
    memset(t, 0, sizeof *t);
    t->op = op;
    if (cfg)
        t->cfg = *cfg;
    t->now = 1000000000000; /* 1000 s after the epoch */
    t->cfg.now = fake_now;
    t->cfg.now_arg = t;
    if (op->file) {
        make_tmpdir(t->dir, sizeof t->dir);
        snprintf(t->sdir, sizeof t->sdir, "%s/stream", t->dir);
        t->cfg.dir = t->sdir;
    } else {
        t->cfg.dir = NULL;
    }
    nd_err_t e = open_kind(op->file, &t->cfg, &t->st);
    cr_assert_eq(e, ND_OK, "open %s: %s", op->name, nd_strerror(e));
}

/* Closes and reopens a file store (recovery must give the same state); nothing for memory. */
static void
t_reopen(tctx_t *t)
{
    if (!t->op->file)
        return;
    nd_store_close(t->st);
    t->st = NULL;
    nd_err_t e = open_kind(true, &t->cfg, &t->st);
    cr_assert_eq(e, ND_OK, "reopen: %s", nd_strerror(e));
}

static void
t_done(tctx_t *t)
{
    if (t->st)
        nd_store_close(t->st);
    t->st = NULL;
    if (t->op->file)
        rm_rf(t->dir);
}

#if HAVE_FILESTORE
#define FILE_SKIP() ((void)0)
#else
#define FILE_SKIP() cr_skip_test("the file store is not built yet")
#endif

/* One body, two tests. */
#define STORE_CASE(name)                                                                           \
    static void case_##name(const opener_t *op);                                                   \
    Test(store_mem, name)                                                                          \
    {                                                                                              \
        case_##name(&mem_opener);                                                                  \
    }                                                                                              \
    Test(store_file, name)                                                                         \
    {                                                                                              \
        FILE_SKIP();                                                                               \
        case_##name(&file_opener);                                                                 \
    }                                                                                              \
    static void case_##name(const opener_t *op)

/* Stores subj/data, asserting success; returns the sequence. */
static uint64_t
put(tctx_t *t, const char *subj, const char *data)
{
    uint64_t seq = 0;
    int64_t ts = 0;
    nd_err_t e = nd_store_put(t->st, subj, strlen(subj), NULL, 0, data, strlen(data), &seq, &ts);
    cr_assert_eq(e, ND_OK, "store %s: %s", subj, nd_strerror(e));
    return seq;
}

/* Stores n messages "x" on subj. */
static void
put_n(tctx_t *t, const char *subj, int n)
{
    for (int i = 0; i < n; i++)
        put(t, subj, "x");
}

static nd_err_t
try_put(tctx_t *t, const char *subj, const char *data)
{
    return nd_store_put(t->st, subj, strlen(subj), NULL, 0, data, strlen(data), NULL, NULL);
}

static uint64_t
msz(const char *subj, const char *data)
{
    return nd_store_msg_size(strlen(subj), 0, strlen(data));
}

static void
check_state(tctx_t *t, uint64_t msgs, uint64_t first, uint64_t last, uint64_t ndel)
{
    nd_store_state_t s;
    nd_store_state(t->st, &s);
    cr_assert_eq(s.msgs, msgs, "msgs %lu != %lu", s.msgs, msgs);
    cr_assert_eq(s.first_seq, first, "first %lu != %lu", s.first_seq, first);
    cr_assert_eq(s.last_seq, last, "last %lu != %lu", s.last_seq, last);
    cr_assert_eq(s.num_deleted, ndel, "deleted %lu != %lu", s.num_deleted, ndel);
}

static void
check_deleted(tctx_t *t, const uint64_t *want, size_t n)
{
    uint64_t *got = NULL;
    size_t gn = 0;
    cr_assert_eq(t->st->ops->deleted(t->st, &got, &gn), ND_OK);
    cr_assert_eq(gn, n, "deleted count %zu != %zu", gn, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "deleted[%zu] %lu != %lu", i, got[i], want[i]);
    free(got);
}

/* Asserts that seq holds subj/data. */
static void
check_msg(tctx_t *t, uint64_t seq, const char *subj, const char *data)
{
    nd_store_msg_t m = {0};
    nd_err_t e = nd_store_load(t->st, seq, &m);
    cr_assert_eq(e, ND_OK, "load %lu: %s", seq, nd_strerror(e));
    cr_assert_eq(m.seq, seq);
    cr_assert_eq(m.subj_len, strlen(subj));
    cr_assert(memcmp(m.subj, subj, m.subj_len) == 0);
    cr_assert_eq(m.data_len, strlen(data));
    cr_assert(m.data_len == 0 || memcmp(m.data, data, m.data_len) == 0);
    nd_store_msg_free(&m);
}

static nd_err_t
load_err(tctx_t *t, uint64_t seq)
{
    nd_store_msg_t m = {0};
    nd_err_t e = nd_store_load(t->st, seq, &m);
    nd_store_msg_free(&m);
    return e;
}

/* load_next: returns the sequence found, 0 on EOF. */
static uint64_t
next_seq(tctx_t *t, const char *filter, uint64_t start)
{
    nd_store_msg_t m = {0};
    nd_err_t e = t->st->ops->load_next(t->st, filter, filter ? strlen(filter) : 0, start, &m);
    nd_store_msg_free(&m);
    if (e == ND_ERR_STORE_EOF)
        return 0;
    cr_assert_eq(e, ND_OK, "load_next: %s", nd_strerror(e));
    return m.seq;
}

static uint64_t
last_seq_of(tctx_t *t, const char *filter)
{
    nd_store_msg_t m = {0};
    nd_err_t e = t->st->ops->load_last(t->st, filter, filter ? strlen(filter) : 0, &m);
    nd_store_msg_free(&m);
    if (e == ND_ERR_STORE_NOT_FOUND)
        return 0;
    cr_assert_eq(e, ND_OK, "load_last: %s", nd_strerror(e));
    return m.seq;
}

static nd_store_subj_state_t
fstate(tctx_t *t, const char *filter, uint64_t start)
{
    nd_store_subj_state_t ss;
    t->st->ops->filtered_state(t->st, filter, filter ? strlen(filter) : 0, start, &ss);
    return ss;
}

static uint64_t
pending(tctx_t *t, const char *filter, uint64_t start, bool lps)
{
    return t->st->ops->num_pending(t->st, filter, filter ? strlen(filter) : 0, start, lps);
}

static uint64_t
purge(tctx_t *t, const char *filter, uint64_t up_to, uint64_t keep)
{
    uint64_t n = 99999;
    nd_err_t e = t->st->ops->purge(t->st, filter, filter ? strlen(filter) : 0, up_to, keep, &n);
    cr_assert_eq(e, ND_OK, "purge: %s", nd_strerror(e));
    return n;
}

/* subjects_state collected into a small table. */
typedef struct subj_row {
    char subj[32];
    nd_store_subj_state_t ss;
} subj_row_t;

typedef struct subj_tab {
    subj_row_t rows[64];
    size_t n;
    size_t stop_after; /* 0 = never */
} subj_tab_t;

static bool
subj_cb(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    subj_tab_t *tab = arg;
    cr_assert_lt(tab->n, 64);
    cr_assert_lt(len, 32);
    memcpy(tab->rows[tab->n].subj, subj, len);
    tab->rows[tab->n].subj[len] = '\0';
    tab->rows[tab->n].ss = *ss;
    tab->n++;
    return tab->stop_after == 0 || tab->n < tab->stop_after;
}

static const nd_store_subj_state_t *
row(subj_tab_t *tab, const char *subj)
{
    for (size_t i = 0; i < tab->n; i++)
        if (strcmp(tab->rows[i].subj, subj) == 0)
            return &tab->rows[i].ss;
    return NULL;
}

static void
check_subj(tctx_t *t, const char *subj, uint64_t msgs, uint64_t first, uint64_t last)
{
    nd_store_subj_state_t ss = fstate(t, subj, 0);
    cr_assert_eq(ss.msgs, msgs, "%s msgs %lu != %lu", subj, ss.msgs, msgs);
    if (msgs) {
        cr_assert_eq(ss.first_seq, first, "%s first %lu != %lu", subj, ss.first_seq, first);
        cr_assert_eq(ss.last_seq, last, "%s last %lu != %lu", subj, ss.last_seq, last);
    }
}

/* ---- basic store and load ------------------------------------------------------------- */

STORE_CASE(empty_state)
{
    tctx_t t;
    t_open(&t, op, NULL);
    check_state(&t, 0, 1, 0, 0);
    cr_assert_eq(load_err(&t, 1), ND_ERR_STORE_EOF);
    cr_assert_eq(load_err(&t, 0), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(next_seq(&t, NULL, 1), 0);
    cr_assert_eq(last_seq_of(&t, NULL), 0);
    cr_assert_eq(last_seq_of(&t, "foo"), 0);
    check_deleted(&t, NULL, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(s.first_ts, 0);
    cr_assert_eq(s.num_subjects, 0);
    t_reopen(&t);
    check_state(&t, 0, 1, 0, 0);
    t_done(&t);
}

STORE_CASE(store_assigns_seq_and_ts)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 1; i <= 3; i++) {
        uint64_t seq;
        int64_t ts;
        t.now += 5;
        cr_assert_eq(nd_store_put(t.st, "foo", 3, NULL, 0, "hello", 5, &seq, &ts), ND_OK);
        cr_assert_eq(seq, (uint64_t)i);
        cr_assert_eq(ts, t.now);
    }
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.msgs, 3);
    cr_assert_eq(s.bytes, 3 * msz("foo", "hello"));
    cr_assert_eq(s.first_ts, 1000000000005);
    cr_assert_eq(s.last_ts, 1000000000015);
    cr_assert_eq(s.num_subjects, 1);
    t_reopen(&t);
    nd_store_state(t.st, &s);
    cr_assert_eq(s.msgs, 3);
    cr_assert_eq(s.bytes, 3 * msz("foo", "hello"));
    cr_assert_eq(s.first_ts, 1000000000005);
    cr_assert_eq(s.last_ts, 1000000000015);
    t_done(&t);
}

STORE_CASE(load_round_trip)
{
    tctx_t t;
    t_open(&t, op, NULL);
    const char hdr[] = "NATS/1.0\r\nA: b\r\n\r\n";
    uint64_t seq;
    cr_assert_eq(nd_store_put(t.st, "a.b.c", 5, hdr, sizeof hdr - 1, "payload", 7, &seq, NULL),
                 ND_OK);
    cr_assert_eq(nd_store_put(t.st, "empty", 5, NULL, 0, NULL, 0, &seq, NULL), ND_OK);
    for (int pass = 0; pass < 2; pass++) {
        nd_store_msg_t m = {0};
        cr_assert_eq(nd_store_load(t.st, 1, &m), ND_OK);
        cr_assert_eq(m.seq, 1);
        cr_assert_eq(m.ts, t.now);
        cr_assert_eq(m.subj_len, 5);
        cr_assert(memcmp(m.subj, "a.b.c", 5) == 0);
        cr_assert_eq(m.hdr_len, sizeof hdr - 1);
        cr_assert(memcmp(m.hdr, hdr, m.hdr_len) == 0);
        cr_assert_eq(m.data_len, 7);
        cr_assert(memcmp(m.data, "payload", 7) == 0);
        /* The same nd_store_msg_t is reused by the next load. */
        cr_assert_eq(nd_store_load(t.st, 2, &m), ND_OK);
        cr_assert_eq(m.seq, 2);
        cr_assert_eq(m.subj_len, 5);
        cr_assert(memcmp(m.subj, "empty", 5) == 0);
        cr_assert_eq(m.hdr_len, 0);
        cr_assert_eq(m.data_len, 0);
        nd_store_msg_free(&m);
        cr_assert_null(m.buf);
        t_reopen(&t);
    }
    t_done(&t);
}

STORE_CASE(load_large_then_small)
{
    tctx_t t;
    t_open(&t, op, NULL);
    size_t big = 100000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    cr_assert_eq(nd_store_put(t.st, "big", 3, NULL, 0, data, big, NULL, NULL), ND_OK);
    put(&t, "small", "x");
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(t.st, 1, &m), ND_OK);
    cr_assert_eq(m.data_len, big);
    cr_assert(memcmp(m.data, data, big) == 0);
    cr_assert_eq(nd_store_load(t.st, 2, &m), ND_OK);
    cr_assert_eq(m.data_len, 1);
    cr_assert_eq(m.data[0], 'x');
    nd_store_msg_free(&m);
    free(data);
    t_done(&t);
}

STORE_CASE(load_missing)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "foo", "1");
    put(&t, "foo", "2");
    put(&t, "foo", "3");
    cr_assert_eq(t.st->ops->remove(t.st, 2, false), ND_OK);
    cr_assert_eq(load_err(&t, 2), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(load_err(&t, 4), ND_ERR_STORE_EOF);
    cr_assert_eq(load_err(&t, 1000), ND_ERR_STORE_EOF);
    cr_assert_eq(load_err(&t, 0), ND_ERR_STORE_NOT_FOUND);
    t_done(&t);
}

STORE_CASE(ts_never_goes_backwards)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "foo", "1");
    t.now -= 1000;
    int64_t ts;
    cr_assert_eq(nd_store_put(t.st, "foo", 3, NULL, 0, "2", 1, NULL, &ts), ND_OK);
    cr_assert_geq(ts, t.now + 1000);
    t_done(&t);
}

STORE_CASE(bad_subject)
{
    tctx_t t;
    t_open(&t, op, NULL);
    cr_assert_eq(try_put(&t, "foo.*", "x"), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(try_put(&t, "foo.>", "x"), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(try_put(&t, "a..b", "x"), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(nd_store_put(t.st, "", 0, NULL, 0, "x", 1, NULL, NULL), ND_ERR_STORE_BAD_ARG);
    check_state(&t, 0, 1, 0, 0);
    t_done(&t);
}

STORE_CASE(num_subjects)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "a", "1");
    put(&t, "b", "1");
    put(&t, "a", "2");
    put(&t, "c.d", "1");
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.num_subjects, 3);
    cr_assert_eq(t.st->ops->remove(t.st, 2, false), ND_OK);
    nd_store_state(t.st, &s);
    cr_assert_eq(s.num_subjects, 2);
    t_reopen(&t);
    nd_store_state(t.st, &s);
    cr_assert_eq(s.num_subjects, 2);
    t_done(&t);
}

/* ---- load_next / load_last ------------------------------------------------------------ */

/* 1 foo.a, 2 foo.b, 3 bar, 4 foo.a, 5 foo.b.c, 6 bar */
static void
fill6(tctx_t *t)
{
    put(t, "foo.a", "1");
    put(t, "foo.b", "2");
    put(t, "bar", "3");
    put(t, "foo.a", "4");
    put(t, "foo.b.c", "5");
    put(t, "bar", "6");
}

STORE_CASE(load_next_all)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(t.st->ops->remove(t.st, 3, false), ND_OK);
    cr_assert_eq(next_seq(&t, NULL, 0), 1);
    cr_assert_eq(next_seq(&t, NULL, 1), 1);
    cr_assert_eq(next_seq(&t, NULL, 3), 4);
    cr_assert_eq(next_seq(&t, ">", 3), 4);
    cr_assert_eq(next_seq(&t, NULL, 6), 6);
    cr_assert_eq(next_seq(&t, NULL, 7), 0);
    t_done(&t);
}

STORE_CASE(load_next_literal)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(next_seq(&t, "foo.a", 1), 1);
    cr_assert_eq(next_seq(&t, "foo.a", 2), 4);
    cr_assert_eq(next_seq(&t, "foo.a", 5), 0);
    cr_assert_eq(next_seq(&t, "bar", 0), 3);
    cr_assert_eq(next_seq(&t, "nope", 0), 0);
    cr_assert_eq(t.st->ops->remove(t.st, 4, false), ND_OK);
    cr_assert_eq(next_seq(&t, "foo.a", 2), 0);
    t_done(&t);
}

STORE_CASE(load_next_wildcard)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(next_seq(&t, "foo.*", 0), 1);
    cr_assert_eq(next_seq(&t, "foo.*", 3), 4);
    cr_assert_eq(next_seq(&t, "foo.*", 5), 0);
    cr_assert_eq(next_seq(&t, "foo.>", 5), 5);
    cr_assert_eq(next_seq(&t, "*.b.*", 0), 5);
    cr_assert_eq(next_seq(&t, "*", 0), 3);
    cr_assert_eq(next_seq(&t, "*", 4), 6);
    nd_store_msg_t m = {0};
    cr_assert_eq(t.st->ops->load_next(t.st, "foo.*", 5, 2, &m), ND_OK);
    cr_assert_eq(m.seq, 2);
    cr_assert(memcmp(m.subj, "foo.b", 5) == 0);
    cr_assert(memcmp(m.data, "2", 1) == 0);
    nd_store_msg_free(&m);
    t_done(&t);
}

STORE_CASE(load_last)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(last_seq_of(&t, NULL), 6);
    cr_assert_eq(last_seq_of(&t, ">"), 6);
    cr_assert_eq(last_seq_of(&t, "foo.a"), 4);
    cr_assert_eq(last_seq_of(&t, "foo.b"), 2);
    cr_assert_eq(last_seq_of(&t, "foo.*"), 4);
    cr_assert_eq(last_seq_of(&t, "foo.>"), 5);
    cr_assert_eq(last_seq_of(&t, "baz"), 0);
    /* Removing the last of a subject exposes the one before. */
    cr_assert_eq(t.st->ops->remove(t.st, 4, false), ND_OK);
    cr_assert_eq(last_seq_of(&t, "foo.a"), 1);
    cr_assert_eq(last_seq_of(&t, "foo.*"), 2);
    cr_assert_eq(t.st->ops->remove(t.st, 6, false), ND_OK);
    cr_assert_eq(last_seq_of(&t, NULL), 5);
    cr_assert_eq(last_seq_of(&t, "bar"), 3);
    t_reopen(&t);
    cr_assert_eq(last_seq_of(&t, "foo.a"), 1);
    cr_assert_eq(last_seq_of(&t, "bar"), 3);
    t_done(&t);
}

/* ---- remove --------------------------------------------------------------------------- */

STORE_CASE(remove_middle)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "foo", 10);
    cr_assert_eq(t.st->ops->remove(t.st, 3, false), ND_OK);
    cr_assert_eq(t.st->ops->remove(t.st, 7, false), ND_OK);
    cr_assert_eq(t.st->ops->remove(t.st, 8, false), ND_OK);
    check_state(&t, 7, 1, 10, 3);
    check_deleted(&t, (uint64_t[]){3, 7, 8}, 3);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.bytes, 7 * msz("foo", "x"));
    cr_assert_eq(pending(&t, NULL, 3, false), 5);
    cr_assert_eq(pending(&t, "foo", 7, false), 2);
    nd_store_subj_state_t ss = fstate(&t, NULL, 7);
    cr_assert_eq(ss.msgs, 2);
    cr_assert_eq(ss.first_seq, 9);
    cr_assert_eq(ss.last_seq, 10);
    t_reopen(&t);
    check_state(&t, 7, 1, 10, 3);
    check_deleted(&t, (uint64_t[]){3, 7, 8}, 3);
    t_done(&t);
}

STORE_CASE(remove_first_and_last)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 5; i++) {
        t.now += 10;
        put(&t, "foo", "x");
    }
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    cr_assert_eq(t.st->ops->remove(t.st, 2, false), ND_OK);
    check_state(&t, 3, 3, 5, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.first_ts, 1000000000030);
    /* Removing the last message keeps last_seq: it becomes a deleted sequence. */
    cr_assert_eq(t.st->ops->remove(t.st, 5, false), ND_OK);
    check_state(&t, 2, 3, 5, 1);
    check_deleted(&t, (uint64_t[]){5}, 1);
    nd_store_state(t.st, &s);
    cr_assert_eq(s.last_ts, 1000000000050);
    cr_assert_eq(put(&t, "foo", "y"), 6);
    t_reopen(&t);
    check_state(&t, 3, 3, 6, 1);
    t_done(&t);
}

STORE_CASE(remove_twice_and_missing)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "foo", "x");
    put(&t, "foo", "x");
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(t.st->ops->remove(t.st, 3, false), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(t.st->ops->remove(t.st, 0, false), ND_ERR_STORE_NOT_FOUND);
    check_state(&t, 1, 2, 2, 0);
    t_done(&t);
}

STORE_CASE(remove_all_one_by_one)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "foo", 4);
    for (uint64_t s = 4; s >= 1; s--)
        cr_assert_eq(t.st->ops->remove(t.st, s, false), ND_OK);
    check_state(&t, 0, 5, 4, 0);
    check_deleted(&t, NULL, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(s.num_subjects, 0);
    cr_assert_eq(s.first_ts, 0);
    t_reopen(&t);
    check_state(&t, 0, 5, 4, 0);
    cr_assert_eq(put(&t, "foo", "y"), 5);
    t_done(&t);
}

STORE_CASE(remove_secure)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "secret", "password1");
    put(&t, "secret", "password2");
    put(&t, "other", "x");
    cr_assert_eq(t.st->ops->remove(t.st, 2, true), ND_OK);
    cr_assert_eq(load_err(&t, 2), ND_ERR_STORE_NOT_FOUND);
    check_state(&t, 2, 1, 3, 1);
    check_msg(&t, 1, "secret", "password1");
    check_msg(&t, 3, "other", "x");
    t_reopen(&t);
    cr_assert_eq(load_err(&t, 2), ND_ERR_STORE_NOT_FOUND);
    check_state(&t, 2, 1, 3, 1);
    check_subj(&t, "secret", 1, 1, 1);
    t_done(&t);
}

/* ---- purge ---------------------------------------------------------------------------- */

STORE_CASE(purge_all)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(purge(&t, NULL, 0, 0), 6);
    check_state(&t, 0, 7, 6, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.bytes, 0);
    cr_assert_eq(s.num_subjects, 0);
    cr_assert_eq(last_seq_of(&t, "foo.a"), 0);
    t_reopen(&t);
    check_state(&t, 0, 7, 6, 0);
    cr_assert_eq(put(&t, "foo", "x"), 7);
    check_state(&t, 1, 7, 7, 0);
    cr_assert_eq(purge(&t, ">", 0, 0), 1);
    check_state(&t, 0, 8, 7, 0);
    t_done(&t);
}

STORE_CASE(purge_filter_literal)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(purge(&t, "foo.a", 0, 0), 2);
    check_state(&t, 4, 2, 6, 1);
    check_deleted(&t, (uint64_t[]){4}, 1);
    check_subj(&t, "foo.a", 0, 0, 0);
    cr_assert_eq(purge(&t, "bar", 0, 0), 2);
    check_state(&t, 2, 2, 6, 3); /* last_seq stays */
    check_deleted(&t, (uint64_t[]){3, 4, 6}, 3);
    cr_assert_eq(purge(&t, "nope", 0, 0), 0);
    t_reopen(&t);
    check_state(&t, 2, 2, 6, 3);
    t_done(&t);
}

STORE_CASE(purge_filter_wildcard)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(purge(&t, "foo.*", 0, 0), 3);
    check_state(&t, 3, 3, 6, 1);
    check_deleted(&t, (uint64_t[]){4}, 1);
    cr_assert_eq(purge(&t, "foo.>", 0, 0), 1);
    check_state(&t, 2, 3, 6, 2);
    check_subj(&t, "bar", 2, 3, 6);
    t_done(&t);
}

STORE_CASE(purge_keep_no_filter)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 10; i++)
        put(&t, i % 2 ? "a" : "b", "x");
    cr_assert_eq(purge(&t, NULL, 0, 3), 7);
    check_state(&t, 3, 8, 10, 0);
    cr_assert_eq(purge(&t, NULL, 0, 5), 0); /* keep >= msgs: nothing */
    check_state(&t, 3, 8, 10, 0);
    t_done(&t);
}

STORE_CASE(purge_keep_filter_counts_all_matches)
{
    tctx_t t;
    t_open(&t, op, NULL);
    /* 1 a.1, 2 a.2, 3 b, 4 a.1, 5 a.2, 6 a.1 */
    put(&t, "a.1", "x");
    put(&t, "a.2", "x");
    put(&t, "b", "x");
    put(&t, "a.1", "x");
    put(&t, "a.2", "x");
    put(&t, "a.1", "x");
    /* Keep the newest 2 of the 5 "a.*" messages, counted together (nats-server's PurgeEx). */
    cr_assert_eq(purge(&t, "a.*", 0, 2), 3);
    check_state(&t, 3, 3, 6, 1);
    check_deleted(&t, (uint64_t[]){4}, 1);
    check_subj(&t, "a.1", 1, 6, 6);
    check_subj(&t, "a.2", 1, 5, 5);
    /* Literal filter: the KV "purge keep 1" shape. */
    cr_assert_eq(purge(&t, "a.1", 0, 1), 0);
    put(&t, "a.1", "y");
    cr_assert_eq(purge(&t, "a.1", 0, 1), 1);
    check_subj(&t, "a.1", 1, 7, 7);
    t_done(&t);
}

STORE_CASE(purge_up_to_no_filter)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "foo", 10);
    cr_assert_eq(purge(&t, NULL, 4, 0), 3);
    check_state(&t, 7, 4, 10, 0);
    /* up_to wins over keep without a filter (it is compact(up_to)). */
    cr_assert_eq(purge(&t, ">", 6, 1), 2);
    check_state(&t, 5, 6, 10, 0);
    t_done(&t);
}

STORE_CASE(purge_filter_up_to)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    /* foo.* below 4: seqs 1 and 2. */
    cr_assert_eq(purge(&t, "foo.*", 4, 0), 2);
    check_state(&t, 4, 3, 6, 0);
    check_subj(&t, "foo.a", 1, 4, 4);
    t_done(&t);
}

STORE_CASE(purge_filter_up_to_keep)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 8; i++)
        put(&t, i == 3 ? "other" : "k", "x");
    /* k: 1 2 3 5 6 7 8 (7 msgs). keep 4 => at most 3 go, and only below 3: 1 and 2. */
    cr_assert_eq(purge(&t, "k", 3, 4), 2);
    check_subj(&t, "k", 5, 3, 8);
    /* keep 2 of 5 => 3 go, all below 8: 3 5 6. */
    cr_assert_eq(purge(&t, "k", 8, 2), 3);
    check_subj(&t, "k", 2, 7, 8);
    check_state(&t, 3, 4, 8, 2);
    check_deleted(&t, (uint64_t[]){5, 6}, 2);
    t_done(&t);
}

/* ---- compact / truncate --------------------------------------------------------------- */

STORE_CASE(compact_middle)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 10; i++)
        put(&t, i % 3 ? "a" : "b", "x");
    uint64_t n = 0;
    cr_assert_eq(t.st->ops->compact(t.st, 5, &n), ND_OK);
    cr_assert_eq(n, 4);
    check_state(&t, 6, 5, 10, 0);
    cr_assert_eq(load_err(&t, 4), ND_ERR_STORE_NOT_FOUND);
    check_subj(&t, "b", 2, 7, 10);
    cr_assert_eq(t.st->ops->compact(t.st, 3, &n), ND_OK); /* below first: nothing */
    cr_assert_eq(n, 0);
    t_reopen(&t);
    check_state(&t, 6, 5, 10, 0);
    t_done(&t);
}

STORE_CASE(compact_on_gap)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "a", 6);
    cr_assert_eq(t.st->ops->remove(t.st, 4, false), ND_OK);
    uint64_t n = 0;
    cr_assert_eq(t.st->ops->compact(t.st, 4, &n), ND_OK);
    cr_assert_eq(n, 3);
    check_state(&t, 2, 5, 6, 0);
    t_done(&t);
}

STORE_CASE(compact_beyond_last)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "a", 5);
    uint64_t n = 0;
    cr_assert_eq(t.st->ops->compact(t.st, 100, &n), ND_OK);
    cr_assert_eq(n, 5);
    check_state(&t, 0, 100, 99, 0);
    t_reopen(&t);
    check_state(&t, 0, 100, 99, 0);
    cr_assert_eq(put(&t, "a", "y"), 100);
    check_state(&t, 1, 100, 100, 0);
    t_done(&t);
}

STORE_CASE(compact_zero_purges)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "a", 5);
    uint64_t n = 0;
    cr_assert_eq(t.st->ops->compact(t.st, 0, &n), ND_OK);
    cr_assert_eq(n, 5);
    check_state(&t, 0, 6, 5, 0);
    t_done(&t);
}

STORE_CASE(truncate_middle)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 10; i++) {
        t.now += 100;
        put(&t, i % 2 ? "odd" : "even", "x");
    }
    cr_assert_eq(t.st->ops->truncate(t.st, 6), ND_OK);
    check_state(&t, 6, 1, 6, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.last_ts, 1000000000600);
    cr_assert_eq(s.bytes, 6 * msz("odd", "x") + 3 * 1); /* "even" is one byte longer */
    check_subj(&t, "odd", 3, 2, 6);
    check_subj(&t, "even", 3, 1, 5);
    cr_assert_eq(last_seq_of(&t, "odd"), 6);
    t_reopen(&t);
    check_state(&t, 6, 1, 6, 0);
    cr_assert_eq(put(&t, "odd", "y"), 7);
    t_done(&t);
}

STORE_CASE(truncate_errors_and_reset)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "a", 5);
    cr_assert_eq(t.st->ops->remove(t.st, 3, false), ND_OK);
    cr_assert_eq(t.st->ops->truncate(t.st, 3), ND_ERR_STORE_BAD_SEQUENCE);
    cr_assert_eq(t.st->ops->truncate(t.st, 9), ND_ERR_STORE_BAD_SEQUENCE);
    check_state(&t, 4, 1, 5, 1);
    cr_assert_eq(t.st->ops->truncate(t.st, 5), ND_OK); /* at last: nothing changes */
    check_state(&t, 4, 1, 5, 1);
    cr_assert_eq(t.st->ops->truncate(t.st, 2), ND_OK);
    check_state(&t, 2, 1, 2, 0);
    cr_assert_eq(t.st->ops->truncate(t.st, 0), ND_OK);
    check_state(&t, 0, 1, 0, 0);
    t_reopen(&t);
    check_state(&t, 0, 1, 0, 0);
    cr_assert_eq(put(&t, "a", "y"), 1);
    t_done(&t);
}

/* ---- skip / store_raw ----------------------------------------------------------------- */

STORE_CASE(skip)
{
    tctx_t t;
    t_open(&t, op, NULL);
    uint64_t seq = 0;
    cr_assert_eq(t.st->ops->skip(t.st, &seq), ND_OK);
    cr_assert_eq(seq, 1);
    check_state(&t, 0, 2, 1, 0);
    cr_assert_eq(put(&t, "a", "x"), 2);
    cr_assert_eq(t.st->ops->skip(t.st, &seq), ND_OK);
    cr_assert_eq(seq, 3);
    cr_assert_eq(t.st->ops->skip(t.st, &seq), ND_OK);
    check_state(&t, 1, 2, 4, 2);
    check_deleted(&t, (uint64_t[]){3, 4}, 2);
    cr_assert_eq(load_err(&t, 3), ND_ERR_STORE_NOT_FOUND);
    t_reopen(&t);
    check_state(&t, 1, 2, 4, 2);
    cr_assert_eq(put(&t, "a", "x"), 5);
    check_deleted(&t, (uint64_t[]){3, 4}, 2);
    t_done(&t);
}

static nd_err_t
raw(tctx_t *t, uint64_t seq, int64_t ts, const char *subj, const char *data)
{
    return t->st->ops->store_raw(t->st, seq, ts, subj, strlen(subj), NULL, 0, data, strlen(data));
}

STORE_CASE(store_raw_gaps)
{
    tctx_t t;
    t_open(&t, op, NULL);
    /* Into an empty store the first sequence is simply seq. */
    cr_assert_eq(raw(&t, 5, 500, "a", "x"), ND_OK);
    check_state(&t, 1, 5, 5, 0);
    cr_assert_eq(raw(&t, 8, 800, "b", "y"), ND_OK);
    check_state(&t, 2, 5, 8, 2);
    check_deleted(&t, (uint64_t[]){6, 7}, 2);
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(t.st, 8, &m), ND_OK);
    cr_assert_eq(m.ts, 800);
    nd_store_msg_free(&m);
    cr_assert_eq(raw(&t, 8, 900, "b", "y"), ND_ERR_STORE_BAD_SEQUENCE);
    cr_assert_eq(raw(&t, 3, 900, "b", "y"), ND_ERR_STORE_BAD_SEQUENCE);
    cr_assert_eq(raw(&t, 0, 900, "b", "y"), ND_ERR_STORE_BAD_SEQUENCE);
    cr_assert_eq(put(&t, "c", "z"), 9);
    t_reopen(&t);
    check_state(&t, 3, 5, 9, 2);
    check_deleted(&t, (uint64_t[]){6, 7}, 2);
    t_done(&t);
}

STORE_CASE(store_raw_huge_gap)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "a", "x");
    cr_assert_eq(raw(&t, 1000000001, t.now, "a", "y"), ND_OK);
    check_state(&t, 2, 1, 1000000001, 999999999);
    cr_assert_eq(next_seq(&t, NULL, 2), 1000000001);
    check_subj(&t, "a", 2, 1, 1000000001);
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    check_state(&t, 1, 1000000001, 1000000001, 0);
    t_reopen(&t);
    check_state(&t, 1, 1000000001, 1000000001, 0);
    t_done(&t);
}

STORE_CASE(sparse_after_many_removals)
{
    /* Removing most messages in the middle (the memory store compacts its ring then) keeps
     * lookups, walks and the deleted list exact. */
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 5000; i++)
        put(&t, i % 2 ? "odd" : "even", "x");
    for (uint64_t seq = 2; seq < 5000; seq++)
        if (seq % 100 != 0)
            cr_assert_eq(t.st->ops->remove(t.st, seq, false), ND_OK);
    /* Left: 1, 100, 200, ..., 4900, 5000. */
    check_state(&t, 51, 1, 5000, 5000 - 51);
    for (uint64_t seq = 1; seq <= 5000; seq++) {
        bool live = seq == 1 || seq % 100 == 0;
        cr_assert_eq(load_err(&t, seq), live ? ND_OK : ND_ERR_STORE_NOT_FOUND, "%lu", seq);
    }
    cr_assert_eq(next_seq(&t, NULL, 2), 100);
    cr_assert_eq(next_seq(&t, "odd", 2), 100); /* even seqs were stored as "odd" */
    cr_assert_eq(next_seq(&t, "odd", 4901), 5000);
    cr_assert_eq(next_seq(&t, "even", 2), 0);
    check_subj(&t, "odd", 50, 100, 5000);
    check_subj(&t, "even", 1, 1, 1);
    uint64_t *del;
    size_t n;
    cr_assert_eq(t.st->ops->deleted(t.st, &del, &n), ND_OK);
    cr_assert_eq(n, 5000 - 51);
    cr_assert_eq(del[0], 2);
    cr_assert_eq(del[98], 101);
    free(del);
    cr_assert_eq(put(&t, "even", "y"), 5001);
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    check_state(&t, 51, 100, 5001, 5001 - 100 + 1 - 51);
    cr_assert_eq(last_seq_of(&t, "even"), 5001);
    t_reopen(&t);
    check_state(&t, 51, 100, 5001, 5001 - 100 + 1 - 51);
    /* A large purge gives the memory back and starts over cleanly. */
    cr_assert_eq(purge(&t, NULL, 0, 0), 51);
    cr_assert_eq(put(&t, "z", "1"), 5002);
    check_state(&t, 1, 5002, 5002, 0);
    t_done(&t);
}

/* ---- limits --------------------------------------------------------------------------- */

STORE_CASE(max_msgs_discard_old)
{
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msgs = 3});
    put_n(&t, "a", 5);
    check_state(&t, 3, 3, 5, 0);
    cr_assert_eq(load_err(&t, 2), ND_ERR_STORE_NOT_FOUND);
    t_reopen(&t);
    put(&t, "a", "x");
    check_state(&t, 3, 4, 6, 0);
    t_done(&t);
}

STORE_CASE(max_msgs_discard_new)
{
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msgs = 3, .discard = ND_DISCARD_NEW});
    put_n(&t, "a", 3);
    cr_assert_eq(try_put(&t, "a", "x"), ND_ERR_STORE_MAX_MSGS);
    cr_assert_eq(try_put(&t, "b", "x"), ND_ERR_STORE_MAX_MSGS);
    check_state(&t, 3, 1, 3, 0);
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    cr_assert_eq(put(&t, "b", "x"), 4);
    t_done(&t);
}

STORE_CASE(max_bytes_discard_old)
{
    uint64_t one = msz("a", "0123456789");
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_bytes = (int64_t)(3 * one)});
    for (int i = 0; i < 3; i++)
        put(&t, "a", "0123456789");
    check_state(&t, 3, 1, 3, 0); /* exactly at the limit is allowed */
    put(&t, "a", "0123456789");
    check_state(&t, 3, 2, 4, 0);
    /* A bigger message pushes out as many as needed. */
    put(&t, "a", "01234567890123456789");
    check_state(&t, 2, 4, 5, 0);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_leq(s.bytes, 3 * one);
    t_done(&t);
}

STORE_CASE(max_bytes_discard_new)
{
    uint64_t one = msz("a", "0123456789");
    tctx_t t;
    /* nats-server refuses a message that would bring the bytes to the limit exactly
     * (bytes + size >= max_bytes), so the limit itself is never reached. */
    t_open(&t, op,
           &(nd_store_cfg_t){.max_bytes = (int64_t)(3 * one + 1), .discard = ND_DISCARD_NEW});
    for (int i = 0; i < 3; i++)
        put(&t, "a", "0123456789");
    cr_assert_eq(try_put(&t, "a", "0"), ND_ERR_STORE_MAX_BYTES);
    check_state(&t, 3, 1, 3, 0);
    cr_assert_eq(t.st->ops->remove(t.st, 2, false), ND_OK);
    cr_assert_eq(try_put(&t, "a", "01234567890"), ND_ERR_STORE_MAX_BYTES); /* exactly at it */
    cr_assert_eq(try_put(&t, "a", "0123456789"), ND_OK);
    t_done(&t);
}

STORE_CASE(max_per_subject_discard_old)
{
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msgs_per_subject = 2});
    /* 1 a 2 b 3 a 4 a 5 b 6 a 7 b */
    const char *subs[] = {"a", "b", "a", "a", "b", "a", "b"};
    for (int i = 0; i < 7; i++)
        put(&t, subs[i], "x");
    check_state(&t, 4, 4, 7, 0);
    check_deleted(&t, NULL, 0);
    check_subj(&t, "a", 2, 4, 6);
    check_subj(&t, "b", 2, 5, 7);
    t_reopen(&t);
    put(&t, "a", "y");
    check_subj(&t, "a", 2, 6, 8);
    check_state(&t, 4, 5, 8, 0);
    t_done(&t);
}

STORE_CASE(max_per_subject_kv_shape)
{
    /* One value per key: the KV bucket shape. */
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msgs_per_subject = 1});
    put(&t, "kv.once", "1");
    for (int i = 0; i < 1000; i++)
        put(&t, "kv.hot", "v");
    check_state(&t, 2, 1, 1001, 999);
    check_subj(&t, "kv.hot", 1, 1001, 1001);
    check_subj(&t, "kv.once", 1, 1, 1);
    cr_assert_eq(last_seq_of(&t, "kv.hot"), 1001);
    cr_assert_eq(next_seq(&t, NULL, 2), 1001);
    t_reopen(&t);
    check_state(&t, 2, 1, 1001, 999);
    t_done(&t);
}

STORE_CASE(discard_new_at_subject_limit_replaces)
{
    /* Discard new without the per-subject flag: a subject at its limit replaces its oldest
     * message, even when the stream is at max_msgs (nats-server's memstore). */
    tctx_t t;
    t_open(&t, op,
           &(nd_store_cfg_t){.max_msgs = 3, .max_msgs_per_subject = 1, .discard = ND_DISCARD_NEW});
    put(&t, "a", "1");
    put(&t, "b", "1");
    put(&t, "c", "1");
    cr_assert_eq(try_put(&t, "d", "1"), ND_ERR_STORE_MAX_MSGS);
    cr_assert_eq(put(&t, "a", "2"), 4);
    check_state(&t, 3, 2, 4, 0);
    check_subj(&t, "a", 1, 4, 4);
    t_done(&t);
}

STORE_CASE(discard_new_per_subject)
{
    tctx_t t;
    t_open(&t, op,
           &(nd_store_cfg_t){.max_msgs_per_subject = 2,
                             .discard = ND_DISCARD_NEW,
                             .discard_new_per_subject = true});
    put(&t, "a", "1");
    put(&t, "a", "2");
    cr_assert_eq(try_put(&t, "a", "3"), ND_ERR_STORE_MAX_PER_SUBJECT);
    cr_assert_eq(put(&t, "b", "1"), 3);
    check_subj(&t, "a", 2, 1, 2);
    check_state(&t, 3, 1, 3, 0);
    t_done(&t);
}

STORE_CASE(max_msg_size)
{
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msg_size = 10});
    cr_assert_eq(try_put(&t, "a", "0123456789"), ND_OK);
    cr_assert_eq(try_put(&t, "a", "01234567890"), ND_ERR_STORE_MSG_TOO_BIG);
    /* Headers count too; the subject does not. */
    cr_assert_eq(nd_store_put(t.st, "a", 1, "hdr", 3, "01234567", 8, NULL, NULL),
                 ND_ERR_STORE_MSG_TOO_BIG);
    cr_assert_eq(try_put(&t, "a.very.long.subject.name", "0123456789"), ND_OK);
    check_state(&t, 2, 1, 2, 0);
    t_done(&t);
}

STORE_CASE(max_age_tick)
{
    const int64_t sec = 1000000000;
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_age_ns = 10 * sec});
    int64_t t0 = t.now;
    put(&t, "a", "1"); /* ts t0 */
    t.now += 3 * sec;
    put(&t, "a", "2"); /* t0 + 3 */
    t.now += 3 * sec;
    put(&t, "a", "3"); /* t0 + 6 */
    int64_t dl = t.st->ops->tick(t.st, t.now);
    cr_assert_eq(dl, t0 + 10 * sec);
    check_state(&t, 3, 1, 3, 0);
    /* Just before the deadline nothing goes; at it the first one does. */
    dl = t.st->ops->tick(t.st, t0 + 10 * sec - 1);
    cr_assert_eq(dl, t0 + 10 * sec);
    check_state(&t, 3, 1, 3, 0);
    dl = t.st->ops->tick(t.st, t0 + 10 * sec);
    check_state(&t, 2, 2, 3, 0);
    cr_assert_eq(dl, t0 + 13 * sec);
    t_reopen(&t);
    dl = t.st->ops->tick(t.st, t0 + 14 * sec);
    check_state(&t, 1, 3, 3, 0);
    cr_assert_eq(dl, t0 + 16 * sec);
    dl = t.st->ops->tick(t.st, t0 + 100 * sec);
    check_state(&t, 0, 4, 3, 0);
    /* Nothing left to expire; a file store may still have its interval sync scheduled. */
    if (op->file)
        cr_assert(dl == 0 || dl > t0 + 100 * sec, "deadline %ld", (long)dl);
    else
        cr_assert_eq(dl, 0);
    t_done(&t);
}

Test(store_mem, tick_without_max_age)
{
    tctx_t t;
    t_open(&t, &mem_opener, NULL);
    put(&t, "a", "1");
    cr_assert_eq(t.st->ops->tick(t.st, t.now + 1000000000000), 0);
    check_state(&t, 1, 1, 1, 0);
    t_done(&t);
}

STORE_CASE(update_cfg_shrinks_limits)
{
    tctx_t t;
    t_open(&t, op, NULL);
    for (int i = 0; i < 10; i++)
        put(&t, i % 2 ? "a" : "b", "0123456789");
    nd_store_cfg_t cfg = t.cfg;
    cfg.max_msgs_per_subject = 3;
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    check_state(&t, 6, 5, 10, 0);
    check_subj(&t, "a", 3, 6, 10);
    check_subj(&t, "b", 3, 5, 9);
    cfg.max_msgs = 4;
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    check_state(&t, 4, 7, 10, 0);
    cfg.max_bytes = (int64_t)(2 * msz("a", "0123456789"));
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    check_state(&t, 2, 9, 10, 0);
    t.cfg = cfg;
    /* New limits hold for later stores. */
    put(&t, "c", "0123456789");
    check_state(&t, 2, 10, 11, 0);
    t_done(&t);
}

STORE_CASE(update_cfg_max_age)
{
    const int64_t sec = 1000000000;
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "a", "1");
    t.now += 5 * sec;
    put(&t, "a", "2");
    t.now += 5 * sec;
    nd_store_cfg_t cfg = t.cfg;
    cfg.max_age_ns = 7 * sec;
    cr_assert_eq(t.st->ops->update_cfg(t.st, &cfg), ND_OK);
    t.cfg = cfg;
    int64_t dl = t.st->ops->tick(t.st, t.now);
    check_state(&t, 1, 2, 2, 0);
    cr_assert_eq(dl, t.now - 5 * sec + 7 * sec);
    t_done(&t);
}

/* ---- filtered state, subjects state, num_pending ------------------------------------- */

STORE_CASE(filtered_state)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    nd_store_subj_state_t ss = fstate(&t, NULL, 0);
    cr_assert_eq(ss.msgs, 6);
    cr_assert_eq(ss.first_seq, 1);
    cr_assert_eq(ss.last_seq, 6);
    ss = fstate(&t, "foo.*", 0);
    cr_assert_eq(ss.msgs, 3);
    cr_assert_eq(ss.first_seq, 1);
    cr_assert_eq(ss.last_seq, 4);
    ss = fstate(&t, "foo.*", 2);
    cr_assert_eq(ss.msgs, 2);
    cr_assert_eq(ss.first_seq, 2);
    cr_assert_eq(ss.last_seq, 4);
    ss = fstate(&t, "foo.>", 3);
    cr_assert_eq(ss.msgs, 2);
    cr_assert_eq(ss.first_seq, 4);
    cr_assert_eq(ss.last_seq, 5);
    ss = fstate(&t, "bar", 4);
    cr_assert_eq(ss.msgs, 1);
    cr_assert_eq(ss.first_seq, 6);
    ss = fstate(&t, ">", 5);
    cr_assert_eq(ss.msgs, 2);
    cr_assert_eq(ss.first_seq, 5);
    ss = fstate(&t, "nope", 0);
    cr_assert_eq(ss.msgs, 0);
    ss = fstate(&t, NULL, 7);
    cr_assert_eq(ss.msgs, 0);
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    ss = fstate(&t, "foo.a", 0);
    cr_assert_eq(ss.msgs, 1);
    cr_assert_eq(ss.first_seq, 4);
    t_done(&t);
}

STORE_CASE(subjects_state)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    subj_tab_t tab = {0};
    t.st->ops->subjects_state(t.st, NULL, 0, subj_cb, &tab);
    cr_assert_eq(tab.n, 4);
    cr_assert_eq(row(&tab, "foo.a")->msgs, 2);
    cr_assert_eq(row(&tab, "foo.a")->first_seq, 1);
    cr_assert_eq(row(&tab, "foo.a")->last_seq, 4);
    cr_assert_eq(row(&tab, "bar")->msgs, 2);
    cr_assert_eq(row(&tab, "foo.b.c")->last_seq, 5);
    memset(&tab, 0, sizeof tab);
    t.st->ops->subjects_state(t.st, "foo.*", 5, subj_cb, &tab);
    cr_assert_eq(tab.n, 2);
    cr_assert_not_null(row(&tab, "foo.a"));
    cr_assert_not_null(row(&tab, "foo.b"));
    memset(&tab, 0, sizeof tab);
    t.st->ops->subjects_state(t.st, "bar", 3, subj_cb, &tab);
    cr_assert_eq(tab.n, 1);
    cr_assert_eq(row(&tab, "bar")->first_seq, 3);
    cr_assert_eq(row(&tab, "bar")->last_seq, 6);
    /* Removing a subject's first/last updates them. */
    cr_assert_eq(t.st->ops->remove(t.st, 1, false), ND_OK);
    cr_assert_eq(t.st->ops->remove(t.st, 6, false), ND_OK);
    memset(&tab, 0, sizeof tab);
    t.st->ops->subjects_state(t.st, ">", 1, subj_cb, &tab);
    cr_assert_eq(tab.n, 4);
    cr_assert_eq(row(&tab, "foo.a")->msgs, 1);
    cr_assert_eq(row(&tab, "foo.a")->first_seq, 4);
    cr_assert_eq(row(&tab, "bar")->last_seq, 3);
    /* The callback stops the walk. */
    memset(&tab, 0, sizeof tab);
    tab.stop_after = 2;
    t.st->ops->subjects_state(t.st, NULL, 0, subj_cb, &tab);
    cr_assert_eq(tab.n, 2);
    t_reopen(&t);
    memset(&tab, 0, sizeof tab);
    t.st->ops->subjects_state(t.st, NULL, 0, subj_cb, &tab);
    cr_assert_eq(tab.n, 4);
    cr_assert_eq(row(&tab, "bar")->msgs, 1);
    t_done(&t);
}

STORE_CASE(num_pending)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    cr_assert_eq(pending(&t, NULL, 1, false), 6);
    cr_assert_eq(pending(&t, NULL, 4, false), 3);
    cr_assert_eq(pending(&t, "foo.*", 1, false), 3);
    cr_assert_eq(pending(&t, "foo.*", 3, false), 1);
    cr_assert_eq(pending(&t, "bar", 0, false), 2);
    cr_assert_eq(pending(&t, "foo.>", 5, false), 1);
    cr_assert_eq(pending(&t, NULL, 7, false), 0);
    t_done(&t);
}

STORE_CASE(num_pending_last_per_subject)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    /* Subjects: foo.a (last 4), foo.b (2), bar (6), foo.b.c (5). */
    cr_assert_eq(pending(&t, NULL, 1, true), 4);
    cr_assert_eq(pending(&t, "foo.*", 1, true), 2);
    cr_assert_eq(pending(&t, "foo.>", 1, true), 3);
    cr_assert_eq(pending(&t, NULL, 3, true), 3); /* foo.b's last (2) is before 3 */
    cr_assert_eq(pending(&t, "bar", 1, true), 1);
    cr_assert_eq(pending(&t, "none", 1, true), 0);
    cr_assert_eq(t.st->ops->remove(t.st, 4, false), ND_OK);
    cr_assert_eq(pending(&t, NULL, 3, true), 2); /* foo.a's last is now 1 */
    t_done(&t);
}

/* ---- consumers ------------------------------------------------------------------------ */

static nd_consumer_state_t
sample_cstate(void)
{
    nd_consumer_state_t cs = {
        .delivered_cseq = 20, .delivered_sseq = 33, .ack_floor_cseq = 10, .ack_floor_sseq = 15};
    cs.npending = 3;
    cs.pending = malloc(3 * sizeof *cs.pending);
    cs.pending[0] = (nd_store_pending_t){16, 11, 1000000000001};
    cs.pending[1] = (nd_store_pending_t){20, 15, -5};
    cs.pending[2] = (nd_store_pending_t){33, 20, INT64_MAX};
    cs.nredelivered = 2;
    cs.redelivered = malloc(2 * sizeof *cs.redelivered);
    cs.redelivered[0] = (nd_store_redelivered_t){16, 3};
    cs.redelivered[1] = (nd_store_redelivered_t){20, UINT64_MAX};
    return cs;
}

static void
cstate_eq(const nd_consumer_state_t *a, const nd_consumer_state_t *b)
{
    cr_assert_eq(a->delivered_cseq, b->delivered_cseq);
    cr_assert_eq(a->delivered_sseq, b->delivered_sseq);
    cr_assert_eq(a->ack_floor_cseq, b->ack_floor_cseq);
    cr_assert_eq(a->ack_floor_sseq, b->ack_floor_sseq);
    cr_assert_eq(a->npending, b->npending);
    cr_assert_eq(a->nredelivered, b->nredelivered);
    for (size_t i = 0; i < a->npending; i++) {
        cr_assert_eq(a->pending[i].sseq, b->pending[i].sseq);
        cr_assert_eq(a->pending[i].dseq, b->pending[i].dseq);
        cr_assert_eq(a->pending[i].ts, b->pending[i].ts);
    }
    for (size_t i = 0; i < a->nredelivered; i++) {
        cr_assert_eq(a->redelivered[i].sseq, b->redelivered[i].sseq);
        cr_assert_eq(a->redelivered[i].count, b->redelivered[i].count);
    }
}

static size_t
list_consumers(tctx_t *t, const char *want_name, bool *found)
{
    char **names = NULL;
    size_t n = 0;
    cr_assert_eq(t->st->ops->consumer_list(t->st, &names, &n), ND_OK);
    *found = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], want_name) == 0)
            *found = true;
        free(names[i]);
    }
    free(names);
    return n;
}

STORE_CASE(consumer_round_trip)
{
    tctx_t t;
    t_open(&t, op, NULL);
    nd_cstore_t *c;
    cr_assert_eq(t.st->ops->consumer_open(t.st, "dur1", &c), ND_OK);
    nd_consumer_state_t got;
    cr_assert_eq(t.st->ops->consumer_state(c, &got), ND_OK);
    nd_consumer_state_t zero = {0};
    cstate_eq(&got, &zero);
    nd_consumer_state_free(&got);
    nd_consumer_state_t cs = sample_cstate();
    cr_assert_eq(t.st->ops->consumer_update(c, &cs), ND_OK);
    cr_assert_eq(t.st->ops->consumer_state(c, &got), ND_OK);
    cstate_eq(&got, &cs);
    nd_consumer_state_free(&got);
    t.st->ops->consumer_close(c);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.consumers, 1);
    t_reopen(&t);
    bool found;
    cr_assert_eq(list_consumers(&t, "dur1", &found), 1);
    cr_assert(found);
    cr_assert_eq(t.st->ops->consumer_open(t.st, "dur1", &c), ND_OK);
    cr_assert_eq(t.st->ops->consumer_state(c, &got), ND_OK);
    cstate_eq(&got, &cs);
    nd_consumer_state_free(&got);
    /* An update replaces the whole state. */
    nd_consumer_state_t small = {.delivered_cseq = 1, .delivered_sseq = 2};
    cr_assert_eq(t.st->ops->consumer_update(c, &small), ND_OK);
    cr_assert_eq(t.st->ops->consumer_state(c, &got), ND_OK);
    cstate_eq(&got, &small);
    nd_consumer_state_free(&got);
    t.st->ops->consumer_close(c);
    nd_consumer_state_free(&cs);
    t_done(&t);
}

STORE_CASE(consumer_delete_and_list)
{
    tctx_t t;
    t_open(&t, op, NULL);
    nd_cstore_t *a, *b;
    cr_assert_eq(t.st->ops->consumer_open(t.st, "a", &a), ND_OK);
    cr_assert_eq(t.st->ops->consumer_open(t.st, "b", &b), ND_OK);
    nd_consumer_state_t st1 = {.delivered_cseq = 7};
    cr_assert_eq(t.st->ops->consumer_update(a, &st1), ND_OK);
    cr_assert_eq(t.st->ops->consumer_update(b, &st1), ND_OK);
    bool found;
    cr_assert_eq(list_consumers(&t, "b", &found), 2);
    cr_assert(found);
    cr_assert_eq(t.st->ops->consumer_delete(b), ND_OK);
    cr_assert_eq(list_consumers(&t, "b", &found), 1);
    cr_assert(!found);
    t.st->ops->consumer_close(a);
    t_reopen(&t);
    cr_assert_eq(list_consumers(&t, "a", &found), 1);
    cr_assert(found);
    nd_store_state_t s;
    nd_store_state(t.st, &s);
    cr_assert_eq(s.consumers, 1);
    t_done(&t);
}

/* ---- snapshot / restore --------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t len, cap, pos;
    size_t chunk;   /* reader: at most this many bytes per call (0 = all) */
    size_t fail_at; /* writer: fail once this many bytes were written (0 = never) */
} buf_t;

static int
buf_write(void *arg, const void *p, size_t n)
{
    buf_t *b = arg;
    if (b->fail_at && b->len + n >= b->fail_at)
        return -1;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static long
buf_read(void *arg, void *p, size_t n)
{
    buf_t *b = arg;
    size_t left = b->len - b->pos;
    if (n > left)
        n = left;
    if (b->chunk && n > b->chunk)
        n = b->chunk;
    memcpy(p, b->p + b->pos, n);
    b->pos += n;
    return (long)n;
}

/* Asserts that a and b hold the same messages, gaps and consumers. */
static void
stores_equal(nd_store_t *a, nd_store_t *b, bool same_last_ts)
{
    nd_store_state_t sa, sb;
    a->ops->state(a, &sa);
    b->ops->state(b, &sb);
    cr_assert_eq(sa.msgs, sb.msgs);
    cr_assert_eq(sa.bytes, sb.bytes);
    cr_assert_eq(sa.first_seq, sb.first_seq);
    cr_assert_eq(sa.last_seq, sb.last_seq);
    cr_assert_eq(sa.num_deleted, sb.num_deleted);
    cr_assert_eq(sa.num_subjects, sb.num_subjects);
    cr_assert_eq(sa.consumers, sb.consumers);
    cr_assert_eq(sa.first_ts, sb.first_ts);
    if (same_last_ts)
        cr_assert_eq(sa.last_ts, sb.last_ts);
    nd_store_msg_t ma = {0}, mb = {0};
    for (uint64_t seq = sa.first_seq; seq <= sa.last_seq; seq++) {
        nd_err_t ea = a->ops->load(a, seq, &ma), eb = b->ops->load(b, seq, &mb);
        cr_assert_eq(ea, eb, "seq %lu: %d vs %d", seq, ea, eb);
        if (ea != ND_OK)
            continue;
        cr_assert_eq(ma.ts, mb.ts);
        cr_assert_eq(ma.subj_len, mb.subj_len);
        cr_assert(memcmp(ma.subj, mb.subj, ma.subj_len) == 0);
        cr_assert_eq(ma.hdr_len, mb.hdr_len);
        cr_assert(ma.hdr_len == 0 || memcmp(ma.hdr, mb.hdr, ma.hdr_len) == 0);
        cr_assert_eq(ma.data_len, mb.data_len);
        cr_assert(ma.data_len == 0 || memcmp(ma.data, mb.data, ma.data_len) == 0);
    }
    nd_store_msg_free(&ma);
    nd_store_msg_free(&mb);
    uint64_t *da, *db;
    size_t na, nb;
    cr_assert_eq(a->ops->deleted(a, &da, &na), ND_OK);
    cr_assert_eq(b->ops->deleted(b, &db, &nb), ND_OK);
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++)
        cr_assert_eq(da[i], db[i]);
    free(da);
    free(db);
    char **names;
    size_t nn;
    cr_assert_eq(a->ops->consumer_list(a, &names, &nn), ND_OK);
    for (size_t i = 0; i < nn; i++) {
        nd_cstore_t *ca, *cb;
        nd_consumer_state_t csa, csb;
        cr_assert_eq(a->ops->consumer_open(a, names[i], &ca), ND_OK);
        cr_assert_eq(b->ops->consumer_open(b, names[i], &cb), ND_OK);
        cr_assert_eq(a->ops->consumer_state(ca, &csa), ND_OK);
        cr_assert_eq(b->ops->consumer_state(cb, &csb), ND_OK);
        cstate_eq(&csa, &csb);
        nd_consumer_state_free(&csa);
        nd_consumer_state_free(&csb);
        a->ops->consumer_close(ca);
        b->ops->consumer_close(cb);
        free(names[i]);
    }
    free(names);
}

/* A store with gaps, several subjects, headers, a trailing deleted sequence and consumers. */
static void
fill_for_snapshot(tctx_t *t)
{
    fill6(t);
    cr_assert_eq(
        nd_store_put(t->st, "h.x", 3, "NATS/1.0\r\n\r\n", 12, "with header", 11, NULL, NULL),
        ND_OK);
    put(t, "foo.a", "8");
    put(t, "last", "9");
    cr_assert_eq(t->st->ops->remove(t->st, 1, false), ND_OK);
    cr_assert_eq(t->st->ops->remove(t->st, 4, false), ND_OK);
    cr_assert_eq(t->st->ops->remove(t->st, 9, false), ND_OK);
    nd_cstore_t *c;
    cr_assert_eq(t->st->ops->consumer_open(t->st, "c1", &c), ND_OK);
    nd_consumer_state_t cs = sample_cstate();
    cr_assert_eq(t->st->ops->consumer_update(c, &cs), ND_OK);
    nd_consumer_state_free(&cs);
    t->st->ops->consumer_close(c);
    cr_assert_eq(t->st->ops->consumer_open(t->st, "c2", &c), ND_OK);
    t->st->ops->consumer_close(c);
}

static void
restore_into(bool file, buf_t *b, nd_store_t *orig)
{
    char dir[64] = "", sdir[96];
    nd_store_cfg_t cfg = {0};
    if (file) {
        make_tmpdir(dir, sizeof dir);
        snprintf(sdir, sizeof sdir, "%s/restored", dir);
        cfg.dir = sdir;
    }
    b->pos = 0;
    nd_store_t *st = NULL;
    nd_err_t e = nd_store_restore(&cfg, buf_read, b, &st);
    cr_assert_eq(e, ND_OK, "restore: %s", nd_strerror(e));
    stores_equal(orig, st, false);
    nd_store_close(st);
    if (file) {
        /* And once more after a reopen of the restored file store. */
        cr_assert_eq(open_kind(true, &cfg, &st), ND_OK);
        stores_equal(orig, st, false);
        nd_store_close(st);
        rm_rf(dir);
    }
}

STORE_CASE(snapshot_restore_into_memory)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill_for_snapshot(&t);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    restore_into(false, &b, t.st);
    b.chunk = 3; /* a reader that returns a few bytes at a time */
    restore_into(false, &b, t.st);
    free(b.p);
    t_done(&t);
}

STORE_CASE(snapshot_restore_into_file)
{
    FILE_SKIP();
    tctx_t t;
    t_open(&t, op, NULL);
    fill_for_snapshot(&t);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    restore_into(true, &b, t.st);
    free(b.p);
    t_done(&t);
}

STORE_CASE(snapshot_empty_store_keeps_sequences)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put_n(&t, "a", 5);
    purge(&t, NULL, 0, 0);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    b.pos = 0;
    nd_store_t *st;
    cr_assert_eq(nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &b, &st), ND_OK);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, 0);
    cr_assert_eq(s.first_seq, 6);
    cr_assert_eq(s.last_seq, 5);
    uint64_t seq;
    cr_assert_eq(nd_store_put(st, "a", 1, NULL, 0, "y", 1, &seq, NULL), ND_OK);
    cr_assert_eq(seq, 6);
    nd_store_close(st);
    free(b.p);
    t_done(&t);
}

STORE_CASE(snapshot_corrupt_or_truncated_refused)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill_for_snapshot(&t);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    size_t full = b.len;
    /* Every truncation is refused. */
    for (size_t n = 0; n < full; n++) {
        buf_t tb = {.p = b.p, .len = n};
        nd_store_t *st = (nd_store_t *)1;
        nd_err_t e = nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &tb, &st);
        cr_assert_eq(e, ND_ERR_STORE_CORRUPT, "truncated at %zu: %s", n, nd_strerror(e));
        cr_assert_null(st);
    }
    /* Every single flipped byte is refused (a newer version number as VERSION). */
    for (size_t i = 0; i < full; i++) {
        b.p[i] ^= 0x5a;
        buf_t cb = {.p = b.p, .len = full};
        nd_store_t *st = NULL;
        nd_err_t e = nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &cb, &st);
        cr_assert(e == ND_ERR_STORE_CORRUPT || (i >= 4 && i < 8 && e == ND_ERR_STORE_VERSION),
                  "flip at %zu: %s", i, nd_strerror(e));
        cr_assert_null(st);
        b.p[i] ^= 0x5a;
    }
    /* Trailing garbage too. */
    buf_write(&b, "x", 1);
    b.pos = 0;
    nd_store_t *st = NULL;
    cr_assert_eq(nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &b, &st), ND_ERR_STORE_CORRUPT);
    free(b.p);
    t_done(&t);
}

Test(store_snapshot, version_and_lying_length)
{
    tctx_t t;
    t_open(&t, &mem_opener, NULL);
    put(&t, "a", "x");
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    /* Version 2 (little endian at offset 4). */
    b.p[4] = 2;
    nd_store_t *st = NULL;
    cr_assert_eq(nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &b, &st), ND_ERR_STORE_VERSION);
    b.p[4] = 1;
    /* The first record's length says 4 GiB: refused without allocating it. */
    b.p[9] = b.p[10] = b.p[11] = b.p[12] = 0xff;
    b.pos = 0;
    cr_assert_eq(nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &b, &st), ND_ERR_STORE_CORRUPT);
    free(b.p);
    t_done(&t);
}

Test(store_snapshot, writer_failure_is_io)
{
    tctx_t t;
    t_open(&t, &mem_opener, NULL);
    for (int i = 0; i < 10; i++)
        put(&t, "a", "0123456789");
    buf_t b = {.fail_at = 100};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_ERR_STORE_IO);
    free(b.p);
    t_done(&t);
}

Test(store_snapshot, restore_refuses_non_empty_target)
{
    FILE_SKIP();
#if HAVE_FILESTORE
    tctx_t t;
    t_open(&t, &file_opener, NULL);
    put(&t, "a", "x");
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    nd_store_close(t.st);
    t.st = NULL;
    nd_store_t *st = NULL;
    /* The directory still holds a stream: restoring over it would mix two histories. */
    nd_err_t e = nd_store_restore(&t.cfg, buf_read, &b, &st);
    cr_assert_eq(e, ND_ERR_STORE_BAD_ARG, "%s", nd_strerror(e));
    cr_assert_null(st);
    /* And the stream is still there. */
    cr_assert_eq(open_kind(true, &t.cfg, &t.st), ND_OK);
    check_state(&t, 1, 1, 1, 0);
    free(b.p);
    t_done(&t);
#endif
}

/* ---- more edges ----------------------------------------------------------------------- */

STORE_CASE(bad_filters_refused)
{
    tctx_t t;
    t_open(&t, op, NULL);
    fill6(&t);
    nd_store_msg_t m = {0};
    cr_assert_eq(t.st->ops->load_next(t.st, "foo.", 4, 1, &m), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(t.st->ops->load_last(t.st, "a.>.b", 5, &m), ND_ERR_STORE_BAD_ARG);
    uint64_t n = 0;
    cr_assert_eq(t.st->ops->purge(t.st, "..", 2, 0, 0, &n), ND_ERR_STORE_BAD_ARG);
    check_state(&t, 6, 1, 6, 0);
    nd_store_msg_free(&m);
    t_done(&t);
}

STORE_CASE(store_raw_applies_limits)
{
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.max_msgs = 2, .max_msgs_per_subject = 1});
    cr_assert_eq(raw(&t, 10, 1, "a", "1"), ND_OK);
    cr_assert_eq(raw(&t, 11, 2, "a", "2"), ND_OK);
    check_state(&t, 1, 11, 11, 0);
    cr_assert_eq(raw(&t, 12, 3, "b", "1"), ND_OK);
    cr_assert_eq(raw(&t, 14, 4, "c", "1"), ND_OK);
    check_state(&t, 2, 12, 14, 1);
    check_deleted(&t, (uint64_t[]){13}, 1);
    t_done(&t);
}

STORE_CASE(wildcard_state_with_many_subjects)
{
    /* More subjects than messages after removals: the answers must not depend on which way
     * a store computes them. */
    tctx_t t;
    t_open(&t, op, NULL);
    char subj[32];
    for (int i = 0; i < 50; i++) {
        snprintf(subj, sizeof subj, "m.%d.%s", i, i % 2 ? "odd" : "even");
        put(&t, subj, "x");
    }
    for (uint64_t seq = 1; seq <= 50; seq += 3)
        cr_assert_eq(t.st->ops->remove(t.st, seq, false), ND_OK);
    /* Left: seqs not = 1 mod 3: 33 messages; odd i = even seq. */
    nd_store_subj_state_t ss = fstate(&t, "m.*.odd", 0);
    uint64_t want = 0, first = 0, last = 0;
    for (uint64_t seq = 1; seq <= 50; seq++) {
        if (seq % 3 == 1 || seq % 2 == 1)
            continue;
        want++;
        if (!first)
            first = seq;
        last = seq;
    }
    cr_assert_eq(ss.msgs, want);
    cr_assert_eq(ss.first_seq, first);
    cr_assert_eq(ss.last_seq, last);
    cr_assert_eq(last_seq_of(&t, "m.*.odd"), last);
    cr_assert_eq(last_seq_of(&t, "m.>"), 50);
    cr_assert_eq(pending(&t, "m.*.even", 40, false), 3); /* 41, 45, 47 (43, 49: 1 mod 3) */
    cr_assert_eq(pending(&t, "m.>", 40, true), 7);       /* one per subject: all distinct */
    t_done(&t);
}

STORE_CASE(consumer_open_twice)
{
    tctx_t t;
    t_open(&t, op, NULL);
    nd_cstore_t *a, *b;
    cr_assert_eq(t.st->ops->consumer_open(t.st, "same", &a), ND_OK);
    nd_consumer_state_t cs = {.delivered_cseq = 5, .delivered_sseq = 6};
    cr_assert_eq(t.st->ops->consumer_update(a, &cs), ND_OK);
    t.st->ops->consumer_close(a);
    cr_assert_eq(t.st->ops->consumer_open(t.st, "same", &b), ND_OK);
    nd_consumer_state_t got;
    cr_assert_eq(t.st->ops->consumer_state(b, &got), ND_OK);
    cstate_eq(&got, &cs);
    nd_consumer_state_free(&got);
    t.st->ops->consumer_close(b);
    bool found;
    cr_assert_eq(list_consumers(&t, "same", &found), 1);
    t_done(&t);
}

STORE_CASE(snapshot_of_new_store)
{
    tctx_t t;
    t_open(&t, op, NULL);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    restore_into(false, &b, t.st);
    free(b.p);
    t_done(&t);
}

STORE_CASE(snapshot_big_messages_chunked)
{
    tctx_t t;
    t_open(&t, op, NULL);
    size_t big = 300000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)(i * 7);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(nd_store_put(t.st, "big", 3, "h", 1, data, big - (size_t)i, NULL, NULL),
                     ND_OK);
    buf_t b = {0};
    cr_assert_eq(t.st->ops->snapshot(t.st, buf_write, &b), ND_OK);
    b.chunk = 4093;
    restore_into(false, &b, t.st);
    free(b.p);
    free(data);
    t_done(&t);
}

STORE_CASE(skip_after_purge_and_compact)
{
    tctx_t t;
    t_open(&t, op, NULL);
    put(&t, "a", "1");
    purge(&t, NULL, 0, 0);
    uint64_t seq;
    cr_assert_eq(t.st->ops->skip(t.st, &seq), ND_OK);
    cr_assert_eq(seq, 2);
    check_state(&t, 0, 3, 2, 0);
    uint64_t n;
    cr_assert_eq(t.st->ops->compact(t.st, 10, &n), ND_OK);
    cr_assert_eq(t.st->ops->skip(t.st, &seq), ND_OK);
    cr_assert_eq(seq, 10);
    t_reopen(&t);
    check_state(&t, 0, 11, 10, 0);
    cr_assert_eq(put(&t, "a", "2"), 11);
    t_done(&t);
}

/* ---- a random workload checked against a model ------------------------------------- */

STORE_CASE(random_ops_match_model)
{
    enum { N = 3000 };
    tctx_t t;
    t_open(&t, op, &(nd_store_cfg_t){.block_size = 4096});
    static bool live[N + 1];
    static int subj_of[N + 1];
    memset(live, 0, sizeof live);
    unsigned rnd = 12345;
#define RND() (rnd = rnd * 1103515245u + 12345u, (rnd >> 16) & 0x7fff)
    char subj[16];
    for (uint64_t seq = 1; seq <= N; seq++) {
        int s = (int)(RND() % 7);
        snprintf(subj, sizeof subj, "s.%d", s);
        cr_assert_eq(put(&t, subj, "payload"), seq);
        live[seq] = true;
        subj_of[seq] = s;
        if (RND() % 3 == 0) {
            uint64_t victim = 1 + RND() % seq;
            nd_err_t e = t.st->ops->remove(t.st, victim, false);
            cr_assert_eq(e, live[victim] ? ND_OK : ND_ERR_STORE_NOT_FOUND);
            live[victim] = false;
        }
        if (seq % 1000 == 0)
            t_reopen(&t);
    }
    uint64_t msgs = 0, first = 0, per[7] = {0}, pfirst[7] = {0}, plast[7] = {0};
    for (uint64_t seq = 1; seq <= N; seq++) {
        if (!live[seq]) {
            cr_assert_eq(load_err(&t, seq), ND_ERR_STORE_NOT_FOUND, "seq %lu", seq);
            continue;
        }
        snprintf(subj, sizeof subj, "s.%d", subj_of[seq]);
        check_msg(&t, seq, subj, "payload");
        msgs++;
        if (!first)
            first = seq;
        int s = subj_of[seq];
        if (per[s]++ == 0)
            pfirst[s] = seq;
        plast[s] = seq;
    }
    check_state(&t, msgs, first, N, (N - first + 1) - msgs);
    for (int s = 0; s < 7; s++) {
        snprintf(subj, sizeof subj, "s.%d", s);
        check_subj(&t, subj, per[s], pfirst[s], plast[s]);
        cr_assert_eq(last_seq_of(&t, subj), plast[s]);
    }
    /* load_next walks exactly the live sequences. */
    uint64_t seen = 0;
    for (uint64_t seq = next_seq(&t, NULL, 0); seq; seq = next_seq(&t, NULL, seq + 1)) {
        cr_assert(live[seq]);
        seen++;
    }
    cr_assert_eq(seen, msgs);
    t_done(&t);
#undef RND
}

/* ---- common functions and the consumer-state codec --------------------------------- */

Test(store, strerror_texts)
{
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_NOT_FOUND), "no message found");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_EOF), "stream store EOF");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_CLOSED), "store is closed");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_MAX_MSGS), "maximum messages exceeded");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_MAX_BYTES), "maximum bytes exceeded");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_MAX_PER_SUBJECT),
                     "maximum messages per subject exceeded");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_MSG_TOO_BIG), "message size exceeds maximum allowed");
    cr_assert_str_eq(nd_strerror(ND_ERR_STORE_BAD_SEQUENCE), "invalid sequence");
    cr_assert_not_null(nd_strerror((nd_err_t)999));
}

Test(store, msg_size_and_errno)
{
    cr_assert_eq(nd_store_msg_size(3, 10, 100), 129);
    cr_assert_eq(nd_store_msg_size(0, 0, 0), 16);
    /* The errno of an I/O error stays with the store that failed. */
    nd_store_t st = {0};
    cr_assert_eq(nd_store_io_errno(&st), 0);
    cr_assert_eq(nd_store_io_error(&st, 28), ND_ERR_STORE_IO);
    cr_assert_eq(nd_store_io_errno(&st), 28);
}

Test(cstate, round_trip)
{
    nd_consumer_state_t cs = sample_cstate(), got;
    uint8_t *enc;
    size_t len;
    nd_cstate_encode(&cs, &enc, &len);
    cr_assert_eq(nd_cstate_decode(enc, len, &got), ND_OK);
    cstate_eq(&got, &cs);
    nd_consumer_state_free(&got);
    free(enc);
    nd_consumer_state_t empty = {0};
    nd_cstate_encode(&empty, &enc, &len);
    cr_assert_eq(nd_cstate_decode(enc, len, &got), ND_OK);
    cstate_eq(&got, &empty);
    cr_assert_null(got.pending);
    free(enc);
    nd_consumer_state_free(&cs);
}

Test(cstate, corrupt_input_refused)
{
    nd_consumer_state_t cs = sample_cstate(), got;
    uint8_t *enc;
    size_t len;
    nd_cstate_encode(&cs, &enc, &len);
    for (size_t n = 0; n < len; n++)
        cr_assert_eq(nd_cstate_decode(enc, n, &got), ND_ERR_STORE_CORRUPT, "truncated %zu", n);
    /* Flipped bytes never crash; what decodes is freed cleanly. */
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            enc[i] ^= (uint8_t)(1 << bit);
            nd_err_t e = nd_cstate_decode(enc, len, &got);
            if (e == ND_OK)
                nd_consumer_state_free(&got);
            else
                cr_assert_null(got.pending);
            enc[i] ^= (uint8_t)(1 << bit);
        }
    }
    cr_assert_eq(nd_cstate_decode(NULL, 0, &got), ND_ERR_STORE_CORRUPT);
    /* An array32 claiming 4 billion entries in 6 bytes. */
    const uint8_t lying[] = {0x97, 0x01, 0x00, 0x00, 0x00, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff};
    cr_assert_eq(nd_cstate_decode(lying, sizeof lying, &got), ND_ERR_STORE_CORRUPT);
    free(enc);
    nd_consumer_state_free(&cs);
}

Test(cstate, newer_version_refused)
{
    nd_consumer_state_t cs = {.delivered_cseq = 1}, got;
    uint8_t *enc;
    size_t len;
    nd_cstate_encode(&cs, &enc, &len);
    cr_assert_eq(enc[1], ND_CSTATE_VERSION); /* fixarray, then the version as a fixint */
    enc[1] = ND_CSTATE_VERSION + 1;
    cr_assert_eq(nd_cstate_decode(enc, len, &got), ND_ERR_STORE_VERSION);
    /* A newer writer may also have more fields: still VERSION, not CORRUPT. */
    const uint8_t v2[] = {0x98, 0x02, 0, 0, 0, 0, 0x90, 0x90, 0x00};
    cr_assert_eq(nd_cstate_decode(v2, sizeof v2, &got), ND_ERR_STORE_VERSION);
    free(enc);
}

Test(store_snapshot, random_garbage_never_crashes)
{
    /* A valid header followed by random records: refused, never a crash or a huge allocation. */
    unsigned x = 7;
    for (int round = 0; round < 300; round++) {
        uint8_t buf[512];
        memcpy(buf, "NDSS\x01\x00\x00\x00", 8);
        size_t len = 8 + (size_t)(round * 37 % 500);
        for (size_t i = 8; i < len; i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (uint8_t)(x >> 16);
        }
        /* Make the first record a plausible STATE now and then, so later records get read. */
        if (round % 2 && len >= 8 + 5 + 32) {
            buf[8] = 1;
            memcpy(buf + 9, "\x20\x00\x00\x00", 4);
            memset(buf + 13, 0, 32);
            buf[13] = 1;
            buf[21] = 100;
        }
        buf_t b = {.p = buf, .len = len};
        nd_store_t *st = NULL;
        nd_err_t e = nd_store_restore(&(nd_store_cfg_t){0}, buf_read, &b, &st);
        cr_assert_eq(e, ND_ERR_STORE_CORRUPT, "round %d: %s", round, nd_strerror(e));
        cr_assert_null(st);
    }
}
