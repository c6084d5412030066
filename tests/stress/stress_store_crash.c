/* Crash points for the file store (reliability spec for a single node).
 *
 * A writer child opens a file store and runs a random mix of stores, removes (plain and
 * secure), purges (by subject, wildcard, up_to, keep, all), compacts, skips, truncates, syncs,
 * ticks, consumer state updates and close+reopen cycles, with small blocks so that rollovers, block
 * compaction and block drops happen all the time. Around every call it writes a record to a pipe:
 * an INTENT before the call, an ACK after it returned OK (with what it returned). The parent kills
 * the child with SIGKILL at a random point (after a random number of acks plus a random delay,
 * so kills land inside writes, fsyncs, block rollovers, index writes and recoveries), then opens
 * the store itself and checks it against a model built from the acks:
 *
 *   - every acknowledged store is present with exactly its content (payload, headers and
 *     subject are functions of the sequence, so any message can be checked) and its timestamp,
 *     unless an acknowledged remove/purge/compact covered it;
 *   - nothing unacknowledged appears beyond the one in-flight op (whose store may or may not be
 *     there; whose removal may be partly done);
 *   - an acknowledged remove never comes back; sequences are never renumbered or reused
 *     (last_seq never goes below an acknowledged store, skip or removed last message, except
 *     by an acknowledged truncate, and never above what was acknowledged or in flight);
 *   - the semantics are nats-server's: purge with keep and no filter is Compact(last - keep + 1),
 *     compact (and purge up_to) beyond the end moves last_seq to seq - 1; purge/remove return
 *     counts that the model checks as the writer runs;
 *   - the state is consistent: msgs = the loadable sequences, bytes = their sizes, first_seq =
 *     the lowest, num_deleted = the gaps, load_next walks exactly that set;
 *   - recovery reports no corrupt records (a process kill tears at most the tail);
 *   - a durable consumer's state (also written by the writer, as a function of one growing
 *     value) is exactly its last acknowledged update or the in-flight one, never a mix.
 * The verified state then becomes the model for the next child, which reopens the same
 * directory, so recovery of recovered stores is exercised too. Each directory sees 1-4 crashes.
 *
 * Modes: "always" (sync_always: every call is durable before it returns) and "interval"
 * (default sync interval). A process kill does not lose data the store handed to write(): it
 * is in the page cache. But with the interval policy the file store buffers appends in user
 * space for up to ND_FS_FLUSH_NS (filestore.h), so a kill may lose the newest acknowledged ops.
 * The interval mode therefore checks that the state equals a prefix of the acknowledged ops
 * (plus possibly a part of the next one), and that the prefix reaches at least the last
 * acknowledged sync() or close+reopen: after those, everything is in the kernel. With
 * NATSD_CRASH_STRICT=2 it demands the whole sequence of acknowledged ops (for a store that does
 * not buffer); NATSD_CRASH_STRICT=0 drops the sync floor too.
 *
 * I/O errors: one sync_always writer in four gets the file store's fault hook
 * (filestore.h nd_fs_fault_set): after a random number of calls, writes fail (ENOSPC or EIO,
 * sometimes after writing half) or fsyncs fail. The op that gets ERR_IO is treated as in
 * flight; after an fsync error the writer checks that one more store is refused (never an
 * acknowledgement after a failed fsync), then dies without closing, and recovery is checked as
 * after a kill.
 *
 * Per directory a random choice of cipher (none / AES-GCM / ChaCha) and compression is made,
 * and a third of the directories get limits (max_msgs, max_bytes, max_msgs_per_subject with
 * discard old, modelled as nats-server applies them); a store that refuses a cipher
 * (ERR_BAD_ARG) is run without, once reported.
 *
 * Usage: stress_store_crash [crash_points] [seed] [always|interval|both]
 *   crash_points: argv[1], else $NATSD_CRASH_ITERS, else 200 (the interval mode runs a third).
 *   seed: argv[2], else $NATSD_CRASH_SEED, else from the clock; always printed, so a failure is
 *   replayed with the same seed (the kill timing is random, so a replay is likely, not certain,
 *   to hit the same point). Directories go under $NATSD_CRASH_DIR, else /dev/shm, else /tmp.
 *   A failed run leaves its directory, and beside it <dir>.crash: the files as the kill left
 *   them, before the parent's recovery touched them; it prints the writer's last acknowledged
 *   ops. NATSD_CRASH_DEBUG=1 also prints, in interval mode, how each prefix differs;
 *   NATSD_CRASH_NO_TRUNCATE=1 leaves truncate out of the mix.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "js/store/filestore.h"
#include "js/store/store.h"

/* ---- plumbing ---------------------------------------------------------------------------- */

static uint64_t g_seed;
static char g_dir[512];
static const char *g_mode = "?";
static int g_point;

/* The last acknowledged ops of the current writer, printed with a failure. */
#define NHIST 24
static struct {
    uint32_t op;
    uint64_t a, b, r;
    int32_t rc;
} g_hist[NHIST];
static uint64_t g_nhist;
static uint64_t g_limit_removed; /* messages the model removed by limits (for the summary) */
static const char *op_name(uint32_t op);

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void
fail(const char *fmt, ...)
{
    fprintf(stderr, "the last acknowledged ops of this writer (oldest first):\n");
    for (uint64_t i = g_nhist > NHIST ? g_nhist - NHIST : 0; i < g_nhist; i++) {
        const __typeof__(g_hist[0]) *h = &g_hist[i % NHIST];
        fprintf(stderr, "  #%" PRIu64 " %s a=%" PRIu64 " b=%" PRIu64 " -> r=%" PRIu64 " rc=%d\n",
                i + 1, op_name(h->op), h->a, h->b, h->r, h->rc);
    }
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL (seed %" PRIu64 ", mode %s, crash point %d, dir %s): ", g_seed, g_mode,
            g_point, g_dir);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    _exit(1);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__VA_ARGS__);                                                                     \
    } while (0)

/* splitmix64: small, seedable, good enough to pick ops and crash points. */
static uint64_t
rnd_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t
rnd_below(uint64_t *s, uint64_t n)
{
    return n == 0 ? 0 : rnd_next(s) % n;
}

static void
rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[1024];
            snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                rm_rf(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* Copies a directory tree (regular files and directories only): the state a kill left is kept
 * in <dir>.crash until it has been verified, so a failure can be examined as the kill left it,
 * before recovery changed anything. */
static void
copy_tree(const char *from, const char *to)
{
    mkdir(to, 0755);
    DIR *d = opendir(from);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char a[1024], b[1024];
        snprintf(a, sizeof(a), "%s/%s", from, e->d_name);
        snprintf(b, sizeof(b), "%s/%s", to, e->d_name);
        struct stat st;
        if (lstat(a, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            copy_tree(a, b);
            continue;
        }
        int in = open(a, O_RDONLY), out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        char buf[65536];
        ssize_t n;
        while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
            if (write(out, buf, (size_t)n) != n)
                break;
        if (in >= 0)
            close(in);
        if (out >= 0)
            close(out);
    }
    closedir(d);
}

/* ---- message content: a function of the sequence ------------------------------------------- */

#define NSUBJ 5

static uint64_t
mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static int
msg_subj(uint64_t seq, char *buf, size_t cap)
{
    return snprintf(buf, cap, "crash.%u.x", (unsigned)(seq % NSUBJ));
}

static int
msg_hdr(uint64_t seq, char *buf, size_t cap)
{
    if (seq % 3 != 0)
        return 0;
    return snprintf(buf, cap, "NATS/1.0\r\nSeq: %" PRIu64 "\r\n\r\n", seq);
}

/* Mostly small payloads, 1 in 8 up to 2 KB so that small blocks roll over often. */
static size_t
msg_data(uint64_t seq, uint8_t *buf, size_t cap)
{
    uint64_t h = mix(seq * 0x9e3779b97f4a7c15ull + 1);
    size_t n = (h % 8 == 0) ? 300 + (size_t)((h >> 8) % 1800) : (size_t)((h >> 8) % 120);
    if (n > cap)
        n = cap;
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            h = mix(h + i);
        /* Half of the messages are text-like, so compression has something to do. */
        buf[i] =
            (seq % 2 == 0) ? (uint8_t)('a' + (seq + i / 16) % 26) : (uint8_t)(h >> (8 * (i % 8)));
    }
    return n;
}

/* ---- the pipe protocol ------------------------------------------------------------------- */

enum { REC_INTENT = 1, REC_ACK = 2, REC_FAIL = 3, REC_OPENED = 4, REC_NACK = 5 };
enum {
    OP_STORE = 1,
    OP_REMOVE,
    OP_REMOVE_SECURE,
    OP_PURGE_SUBJ, /* a: subject index, b: keep (0 = all) */
    OP_PURGE_WILD, /* a: subject index, filter crash.<a>.* */
    OP_PURGE_UPTO, /* a: up_to */
    OP_PURGE_KEEP, /* a: keep */
    OP_PURGE_ALL,
    OP_COMPACT, /* a: seq */
    OP_SKIP,
    OP_REOPEN,
    OP_SYNC,
    OP_TICK,
    OP_TRUNCATE, /* a: the new last sequence */
    OP_CONSUMER, /* a: the value the consumer state is made from (cons_state) */
};

static const char *op_names[] = {"?",          "store",      "remove",     "remove_secure",
                                 "purge_subj", "purge_wild", "purge_upto", "purge_keep",
                                 "purge_all",  "compact",    "skip",       "reopen",
                                 "sync",       "tick",       "truncate",   "consumer"};

static const char *
op_name(uint32_t op)
{
    return op < sizeof(op_names) / sizeof(op_names[0]) ? op_names[op] : "?";
}

typedef struct rec {
    uint32_t kind;
    uint32_t op;
    uint64_t a, b; /* arguments (intent) */
    uint64_t r;    /* ack: the seq stored/skipped, or the purged count */
    int64_t ts;    /* ack of a store: its timestamp */
    int32_t rc;    /* ack: the call's result (remove may ack NOT_FOUND); fail: the error */
    uint32_t pad;  /* fail: the errno behind an ND_ERR_STORE_IO */
} rec_t;

_Static_assert(sizeof(rec_t) <= 512, "records must be written atomically (PIPE_BUF)");

static void
send_rec(int fd, const rec_t *r)
{
    /* A pipe write of at most PIPE_BUF bytes is atomic: the parent sees whole records only. */
    ssize_t w;
    do {
        w = write(fd, r, sizeof(*r));
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)sizeof(*r))
        _exit(4);
}

/* ---- store configuration --------------------------------------------------------------- */

typedef struct dircfg {
    bool always;
    int64_t max_msgs, max_bytes, max_per_subj; /* 0 = none */
    nd_store_cipher_t cipher;
    nd_store_compression_t compression;
    uint64_t block_size;
} dircfg_t;

static const uint8_t key[32] = "natsd-crash-test-key-32-bytes!!";

static nd_store_cfg_t
make_cfg(const dircfg_t *dc)
{
    nd_store_cfg_t c;
    memset(&c, 0, sizeof(c));
    c.max_msgs = dc->max_msgs ? dc->max_msgs : -1;
    c.max_bytes = dc->max_bytes ? dc->max_bytes : -1;
    c.max_age_ns = 0;
    c.max_msgs_per_subject = dc->max_per_subj ? dc->max_per_subj : -1;
    c.max_msg_size = -1;
    c.dir = g_dir;
    c.block_size = dc->block_size;
    c.sync_always = dc->always;
    c.sync_interval_ns = 0;
    c.compression = dc->compression;
    c.cipher = dc->cipher;
    c.key = dc->cipher != ND_CIPHER_NONE ? key : NULL;
    return c;
}

/* ---- consumer state: a function of one value ------------------------------------------- */

static const char cons_name[] = "crash-dur";

/* The state written for value v (pending and redelivered point at owned scratch). */
static void
cons_state(uint64_t v, nd_consumer_state_t *cs, nd_store_pending_t *pend,
           nd_store_redelivered_t *red)
{
    memset(cs, 0, sizeof(*cs));
    cs->delivered_cseq = v;
    cs->delivered_sseq = 2 * v;
    cs->ack_floor_cseq = v / 2;
    cs->ack_floor_sseq = v;
    pend->sseq = 2 * v;
    pend->dseq = v;
    pend->ts = (int64_t)v * 1000;
    red->sseq = 2 * v;
    red->count = v % 7 + 1;
    cs->pending = pend;
    cs->npending = 1;
    cs->redelivered = red;
    cs->nredelivered = 1;
}

/* The value a stored state was made from, or false when it is no state cons_state makes (an
 * empty state, never written, is value 0). */
static bool
cons_value(const nd_consumer_state_t *cs, uint64_t *v)
{
    if (cs->delivered_cseq == 0 && cs->npending == 0 && cs->nredelivered == 0 &&
        cs->delivered_sseq == 0) {
        *v = 0;
        return true;
    }
    nd_consumer_state_t want;
    nd_store_pending_t pend;
    nd_store_redelivered_t red;
    cons_state(cs->delivered_cseq, &want, &pend, &red);
    *v = cs->delivered_cseq;
    return cs->delivered_sseq == want.delivered_sseq && cs->ack_floor_cseq == want.ack_floor_cseq &&
           cs->ack_floor_sseq == want.ack_floor_sseq && cs->npending == 1 &&
           cs->pending[0].sseq == pend.sseq && cs->pending[0].dseq == pend.dseq &&
           cs->pending[0].ts == pend.ts && cs->nredelivered == 1 &&
           cs->redelivered[0].sseq == red.sseq && cs->redelivered[0].count == red.count;
}

/* Reads the consumer's value from an open store. Returns: false when the consumer does not
 * exist; fails the run when its state is no state the writer wrote. */
static bool
cons_read(nd_store_t *st, uint64_t *v)
{
    char **names = NULL;
    size_t n = 0;
    nd_err_t rc = st->ops->consumer_list(st, &names, &n);
    CHECK(rc == ND_OK, "consumer_list: %s", nd_strerror(rc));
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found = found || strcmp(names[i], cons_name) == 0;
        free(names[i]);
    }
    free(names);
    if (!found)
        return false;
    nd_cstore_t *cs = NULL;
    rc = st->ops->consumer_open(st, cons_name, &cs);
    CHECK(rc == ND_OK, "consumer_open: %s", nd_strerror(rc));
    nd_consumer_state_t got;
    memset(&got, 0, sizeof(got));
    rc = st->ops->consumer_state(cs, &got);
    CHECK(rc == ND_OK, "consumer_state: %s", nd_strerror(rc));
    CHECK(cons_value(&got, v),
          "the consumer state is not one the writer wrote (delivered %" PRIu64 "/%" PRIu64
          ", %zu pending)",
          got.delivered_cseq, got.delivered_sseq, got.npending);
    nd_consumer_state_free(&got);
    st->ops->consumer_close(cs);
    return true;
}

/* ---- the writer child -------------------------------------------------------------------- */

static void child_fail(int fd, uint32_t op, nd_err_t rc, int err) __attribute__((noreturn));
static void
child_fail(int fd, uint32_t op, nd_err_t rc, int err)
{
    rec_t r = {.kind = REC_FAIL, .op = op, .rc = (int32_t)rc, .pad = (uint32_t)err};
    send_rec(fd, &r);
    _exit(3);
}

/* After an I/O error the fault hook injected: the failed op is reported (the parent treats it
 * as in flight: it may or may not be on disk), a store is tried once more, which must fail after
 * an fsync error (never acknowledge after a failed fsync: reliability spec R-12), and the
 * writer dies without closing, like a crash. */
static void __attribute__((noreturn))
child_io_error(int fd, nd_store_t *st, const rec_t *in, const nd_fs_fault_t *fault)
{
    rec_t nack = *in;
    nack.kind = REC_NACK;
    send_rec(fd, &nack);
    if (st != NULL && fault->kind == 2) {
        uint64_t seq;
        int64_t ts;
        nd_store_state_t s;
        nd_store_state(st, &s);
        char subj[64];
        int sl = msg_subj(s.last_seq + 1, subj, sizeof(subj));
        nd_err_t rc = nd_store_put(st, subj, (size_t)sl, NULL, 0, "x", 1, &seq, &ts);
        if (rc == ND_OK) {
            rec_t r = {.kind = REC_FAIL, .op = OP_STORE, .rc = -1};
            send_rec(fd, &r);
            _exit(3);
        }
    }
    _exit(0);
}

static void __attribute__((noreturn))
child_main(int fd, const dircfg_t *dc, uint64_t rs, const nd_fs_fault_t *fault)
{
    nd_store_cfg_t cfg = make_cfg(dc);
    nd_store_t *st = NULL;
    nd_store_recovery_t rep;
    nd_err_t rc = nd_filestore_open(&cfg, &st, &rep);
    if (rc != ND_OK)
        child_fail(fd, 0, rc, rep.io_errno);
    rec_t opened = {.kind = REC_OPENED};
    send_rec(fd, &opened);
    /* The consumer's values only grow: go on from what the disk holds. */
    uint64_t cval = 0;
    (void)cons_read(st, &cval);
    nd_cstore_t *cs = NULL;
    if (fault != NULL)
        nd_fs_fault_set(fault);
    /* NATSD_CRASH_NO_TRUNCATE=1 leaves truncate out (to run the rest while a truncate bug is
     * open). */
    const char *nt = getenv("NATSD_CRASH_NO_TRUNCATE");
    bool no_truncate = nt != NULL && strcmp(nt, "0") != 0;

    char subj[64], hdr[64];
    uint8_t data[4096];
    /* Bounded so a child the parent forgot never runs forever; the parent kills far earlier. */
    for (int i = 0; i < 100000; i++) {
        nd_store_state_t s;
        nd_store_state(st, &s);
        uint64_t p = rnd_below(&rs, 1000);
        rec_t in = {.kind = REC_INTENT};
        if (p < 640) {
            in.op = OP_STORE;
            in.a = s.last_seq + 1;
        } else if (p < 800) {
            in.op = p < 780 ? OP_REMOVE : OP_REMOVE_SECURE;
            uint64_t span = s.last_seq >= s.first_seq ? s.last_seq - s.first_seq + 3 : 3;
            in.a = s.first_seq + rnd_below(&rs, span) - (s.first_seq > 1 ? 1 : 0);
        } else if (p < 830) {
            in.op = OP_PURGE_SUBJ;
            in.a = rnd_below(&rs, NSUBJ);
            in.b = rnd_below(&rs, 3) == 0 ? 1 + rnd_below(&rs, 4) : 0;
        } else if (p < 845) {
            in.op = OP_PURGE_WILD;
            in.a = rnd_below(&rs, NSUBJ);
        } else if (p < 870) {
            in.op = OP_PURGE_UPTO;
            uint64_t span = s.last_seq >= s.first_seq ? s.last_seq - s.first_seq + 2 : 2;
            in.a = s.first_seq + rnd_below(&rs, span / 2 + 1);
        } else if (p < 885) {
            in.op = OP_PURGE_KEEP;
            in.a = 1 + rnd_below(&rs, 20);
        } else if (p < 890) {
            in.op = OP_PURGE_ALL;
        } else if (p < 915) {
            in.op = OP_COMPACT;
            uint64_t span = s.last_seq >= s.first_seq ? s.last_seq - s.first_seq + 2 : 2;
            in.a = s.first_seq + rnd_below(&rs, span / 2 + 1);
        } else if (p < 940) {
            in.op = OP_SKIP;
            in.a = s.last_seq + 1;
        } else if (p < 950) {
            in.op = OP_REOPEN;
        } else if (p < 960) {
            in.op = OP_CONSUMER;
            in.a = ++cval;
        } else if (p < 980) {
            in.op = OP_SYNC;
        } else if (p < 990 || s.msgs == 0 || no_truncate) {
            in.op = OP_TICK;
        } else {
            /* Raft's log truncation, the only call that makes sequences reusable. Its target
             * must be a message (nats-server: "invalid sequence" otherwise). */
            in.op = OP_TRUNCATE;
            in.a = s.first_seq + rnd_below(&rs, s.last_seq - s.first_seq + 1);
            nd_store_msg_t lm;
            memset(&lm, 0, sizeof(lm));
            /* With no message at or after in.a, the first one is (the store is not empty). */
            if (st->ops->load_next(st, NULL, 0, in.a, &lm) != ND_OK &&
                st->ops->load_next(st, NULL, 0, s.first_seq, &lm) != ND_OK)
                lm.seq = 0;
            in.a = lm.seq;
            nd_store_msg_free(&lm);
        }
        send_rec(fd, &in);

        rec_t ack = in;
        ack.kind = REC_ACK;
        rc = ND_OK;
        switch (in.op) {
        case OP_STORE: {
            int sl = msg_subj(in.a, subj, sizeof(subj));
            int hl = msg_hdr(in.a, hdr, sizeof(hdr));
            size_t dl = msg_data(in.a, data, sizeof(data));
            uint64_t seq = 0;
            int64_t ts = 0;
            rc = nd_store_put(st, subj, (size_t)sl, hl ? hdr : NULL, (size_t)hl, data, dl, &seq,
                              &ts);
            ack.r = seq;
            ack.ts = ts;
            break;
        }
        case OP_REMOVE:
        case OP_REMOVE_SECURE:
            rc = st->ops->remove(st, in.a, in.op == OP_REMOVE_SECURE);
            ack.rc = (int32_t)rc;
            if (rc == ND_ERR_STORE_NOT_FOUND || rc == ND_ERR_STORE_EOF)
                rc = ND_OK;
            break;
        case OP_PURGE_SUBJ: {
            int sl = msg_subj(in.a, subj, sizeof(subj));
            rc = st->ops->purge(st, subj, (size_t)sl, 0, in.b, &ack.r);
            break;
        }
        case OP_PURGE_WILD: {
            int sl = snprintf(subj, sizeof(subj), "crash.%u.*", (unsigned)in.a);
            rc = st->ops->purge(st, subj, (size_t)sl, 0, 0, &ack.r);
            break;
        }
        case OP_PURGE_UPTO:
            rc = st->ops->purge(st, NULL, 0, in.a, 0, &ack.r);
            break;
        case OP_PURGE_KEEP:
            rc = st->ops->purge(st, NULL, 0, 0, in.a, &ack.r);
            break;
        case OP_PURGE_ALL:
            rc = st->ops->purge(st, ">", 1, 0, 0, &ack.r);
            break;
        case OP_COMPACT:
            rc = st->ops->compact(st, in.a, &ack.r);
            break;
        case OP_SKIP:
            rc = st->ops->skip(st, &ack.r);
            break;
        case OP_CONSUMER: {
            if (cs == NULL && (rc = st->ops->consumer_open(st, cons_name, &cs)) != ND_OK)
                break;
            nd_consumer_state_t cst;
            nd_store_pending_t pend;
            nd_store_redelivered_t red;
            cons_state(in.a, &cst, &pend, &red);
            rc = st->ops->consumer_update(cs, &cst);
            break;
        }
        case OP_REOPEN:
            if (cs != NULL)
                st->ops->consumer_close(cs);
            cs = NULL;
            nd_store_close(st);
            st = NULL;
            rc = nd_filestore_open(&cfg, &st, &rep);
            break;
        case OP_SYNC:
            rc = st->ops->sync(st);
            break;
        case OP_TRUNCATE:
            rc = st->ops->truncate(st, in.a);
            break;
        case OP_TICK: {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            (void)st->ops->tick(st, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
            break;
        }
        }
        if (rc == ND_ERR_STORE_IO && fault != NULL)
            child_io_error(fd, st, &in, fault);
        if (rc != ND_OK)
            child_fail(fd, in.op, rc, st ? nd_store_io_errno(st) : rep.io_errno);
        send_rec(fd, &ack);
    }
    if (cs != NULL)
        st->ops->consumer_close(cs);
    nd_store_close(st);
    _exit(0);
}

/* ---- the model -------------------------------------------------------------------------- */

/* What the parent knows about every sequence of one directory. */
typedef struct model {
    uint8_t *present; /* [seq]: 1 when the message must be there */
    int64_t *ts;      /* [seq]: its timestamp, 0 when unknown (an in-flight store) */
    size_t cap;
    uint64_t max_seq; /* the highest sequence acknowledged as used (store, skip) */
    /* The directory's limits (0 = none), discard old: a store removes the oldest messages. */
    uint64_t max_msgs, max_bytes, max_per_subj;
} model_t;

static void
model_grow(model_t *m, uint64_t seq)
{
    if (seq < m->cap)
        return;
    size_t nc = m->cap ? m->cap : 1024;
    while (nc <= seq)
        nc *= 2;
    m->present = realloc(m->present, nc);
    m->ts = realloc(m->ts, nc * sizeof(int64_t));
    CHECK(m->present && m->ts, "out of memory");
    memset(m->present + m->cap, 0, nc - m->cap);
    memset(m->ts + m->cap, 0, (nc - m->cap) * sizeof(int64_t));
    m->cap = nc;
}

static bool
model_has(const model_t *m, uint64_t seq)
{
    return seq < m->cap && m->present[seq];
}

static uint64_t
msg_bytes(uint64_t seq)
{
    char subj[64], hdr[64];
    static uint8_t data[4096];
    int sl = msg_subj(seq, subj, sizeof(subj));
    int hl = msg_hdr(seq, hdr, sizeof(hdr));
    size_t dl = msg_data(seq, data, sizeof(data));
    return nd_store_msg_size((size_t)sl, (size_t)hl, dl);
}

/* Applies the limits after seq was stored, as the store does (nats-server's order: per subject,
 * then max_msgs, then max_bytes, each removing the oldest). Returns the removed seqs (malloc'd,
 * *n of them; NULL when none). */
static uint64_t *
limit_apply(model_t *m, uint64_t seq, size_t *n)
{
    *n = 0;
    if (!m->max_msgs && !m->max_bytes && !m->max_per_subj)
        return NULL;
    size_t cap = 8;
    uint64_t *v = malloc(cap * sizeof(uint64_t));
    uint64_t msgs = 0, bytes = 0, in_subj = 0;
    for (uint64_t s = 1; s <= m->max_seq && s < m->cap; s++)
        if (m->present[s]) {
            msgs++;
            bytes += msg_bytes(s);
            in_subj += s % NSUBJ == seq % NSUBJ;
        }
    for (int pass = 0; pass < 3; pass++) {
        for (uint64_t s = 1; s <= m->max_seq && s < m->cap; s++) {
            bool over = pass == 0   ? m->max_per_subj && in_subj > m->max_per_subj
                        : pass == 1 ? m->max_msgs && msgs > m->max_msgs
                                    : m->max_bytes && bytes > m->max_bytes;
            if (!over)
                break;
            if (!m->present[s] || (pass == 0 && s % NSUBJ != seq % NSUBJ))
                continue;
            m->present[s] = 0;
            msgs--;
            bytes -= msg_bytes(s);
            in_subj -= s % NSUBJ == seq % NSUBJ;
            if (*n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(uint64_t));
            }
            v[(*n)++] = s;
        }
    }
    return v;
}

/* One acknowledged op's effect, kept so an interval-mode state can be matched to a prefix. */
typedef struct effect {
    uint32_t op;
    uint64_t added;    /* seq stored, 0 if none */
    uint64_t *removed; /* seqs removed */
    size_t nremoved;
    uint64_t prev_max; /* max_seq before the op */
    uint64_t arg;      /* the op's argument a */
} effect_t;

typedef struct effects {
    effect_t *v;
    size_t n, cap;
} effects_t;

static void
effects_clear(effects_t *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].removed);
    e->n = 0;
}

static effect_t *
effects_push(effects_t *e)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->v = realloc(e->v, e->cap * sizeof(effect_t));
        CHECK(e->v, "out of memory");
    }
    effect_t *x = &e->v[e->n++];
    memset(x, 0, sizeof(*x));
    return x;
}

static bool
subj_is(uint64_t seq, uint64_t k)
{
    return seq % NSUBJ == k;
}

/* The sequences an op removes from model m (present ones only), ascending. */
static uint64_t *
removal_set(const model_t *m, const rec_t *in, size_t *n)
{
    size_t cap = 16, k = 0;
    uint64_t *v = malloc(cap * sizeof(uint64_t));
    uint64_t top = m->cap ? m->cap - 1 : 0;
    /* keep: the newest `keep` matching messages stay, so count matches from the top first. */
    uint64_t keep = 0;
    if (in->op == OP_PURGE_SUBJ)
        keep = in->b;
    uint64_t matched_from_top = 0, cutoff = UINT64_MAX;
    if (in->op == OP_PURGE_KEEP) {
        /* nats-server's PurgeEx without a filter keeps a range, not a count: it is
         * Compact(last_seq - keep + 1), and nothing at all when keep >= msgs. */
        uint64_t msgs = 0;
        for (uint64_t s = 1; s <= top; s++)
            msgs += model_has(m, s);
        cutoff = in->a >= msgs ? 0 : m->max_seq - in->a + 1;
    } else if (keep > 0) {
        for (uint64_t s = top; s >= 1; s--) {
            if (!model_has(m, s))
                continue;
            if (in->op == OP_PURGE_SUBJ && !subj_is(s, in->a))
                continue;
            if (++matched_from_top == keep) {
                cutoff = s; /* s and above stay */
                break;
            }
        }
        if (matched_from_top < keep)
            cutoff = 0; /* fewer than keep: everything stays */
    }
    for (uint64_t s = 1; s <= top; s++) {
        if (!model_has(m, s))
            continue;
        bool hit = false;
        switch (in->op) {
        case OP_REMOVE:
        case OP_REMOVE_SECURE:
            hit = s == in->a;
            break;
        case OP_PURGE_SUBJ:
            hit = subj_is(s, in->a) && (keep == 0 || s < cutoff);
            break;
        case OP_PURGE_WILD:
            hit = subj_is(s, in->a);
            break;
        case OP_PURGE_UPTO:
        case OP_COMPACT:
            hit = s < in->a;
            break;
        case OP_PURGE_KEEP:
            hit = s < cutoff;
            break;
        case OP_PURGE_ALL:
            hit = true;
            break;
        case OP_TRUNCATE:
            hit = s > in->a;
            break;
        default:
            break;
        }
        if (hit) {
            if (k == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(uint64_t));
            }
            v[k++] = s;
        }
    }
    *n = k;
    return v;
}

static bool
is_removal(uint32_t op)
{
    return op == OP_REMOVE || op == OP_REMOVE_SECURE || op == OP_PURGE_SUBJ ||
           op == OP_PURGE_WILD || op == OP_PURGE_UPTO || op == OP_PURGE_KEEP ||
           op == OP_PURGE_ALL || op == OP_COMPACT || op == OP_TRUNCATE;
}

/* Applies an acknowledged op to the model, checking what the store returned against it. */
static void
model_apply(model_t *m, effects_t *ef, const rec_t *ack)
{
    effect_t *e = effects_push(ef);
    e->op = ack->op;
    e->prev_max = m->max_seq;
    e->arg = ack->a;
    switch (ack->op) {
    case OP_STORE:
        CHECK(ack->r == ack->a, "store returned seq %" PRIu64 ", the child expected %" PRIu64,
              ack->r, ack->a);
        CHECK(ack->r > m->max_seq,
              "store reused sequence %" PRIu64 " (highest acknowledged %" PRIu64 ")", ack->r,
              m->max_seq);
        model_grow(m, ack->r);
        m->present[ack->r] = 1;
        m->ts[ack->r] = ack->ts;
        m->max_seq = ack->r;
        e->added = ack->r;
        e->removed = limit_apply(m, ack->r, &e->nremoved);
        g_limit_removed += e->nremoved;
        break;
    case OP_SKIP:
        CHECK(ack->r == ack->a && ack->r > m->max_seq,
              "skip returned %" PRIu64 " (expected %" PRIu64 ", highest used %" PRIu64 ")", ack->r,
              ack->a, m->max_seq);
        m->max_seq = ack->r;
        break;
    default:
        if (is_removal(ack->op)) {
            size_t n;
            uint64_t *v = removal_set(m, ack, &n);
            if (ack->op == OP_TRUNCATE) {
                /* No count to check. */
            } else if (ack->op == OP_REMOVE || ack->op == OP_REMOVE_SECURE) {
                bool found = ack->rc == ND_OK;
                CHECK(found == (n == 1), "remove(%" PRIu64 ") returned %s but the model says %s",
                      ack->a, nd_strerror((nd_err_t)ack->rc), n ? "present" : "absent");
            } else {
                CHECK(ack->r == n,
                      "%s(a=%" PRIu64 " b=%" PRIu64 ") purged %" PRIu64 ", the model says %zu",
                      op_names[ack->op], ack->a, ack->b, ack->r, n);
            }
            for (size_t i = 0; i < n; i++)
                m->present[v[i]] = 0;
            e->removed = v;
            e->nremoved = n;
            /* Compact (and purge with up_to, which is Compact) beyond the end makes first_seq
             * the given sequence, so last_seq becomes seq - 1 (nats-server's shape). */
            if ((ack->op == OP_COMPACT || ack->op == OP_PURGE_UPTO) && ack->a > 1 &&
                ack->a - 1 > m->max_seq)
                m->max_seq = ack->a - 1;
            if (ack->op == OP_TRUNCATE && ack->a < m->max_seq) {
                /* The sequences above a are free again; their old timestamps mean nothing. */
                for (uint64_t q = ack->a + 1; q <= m->max_seq && q < m->cap; q++)
                    m->ts[q] = 0;
                m->max_seq = ack->a;
            }
        }
        break;
    }
}

/* Undoes the last effect (interval mode walks back to find the prefix the disk holds). */
static void
model_undo(model_t *m, effects_t *ef)
{
    effect_t *e = &ef->v[--ef->n];
    if (e->added)
        m->present[e->added] = 0;
    for (size_t i = 0; i < e->nremoved; i++)
        m->present[e->removed[i]] = 1;
    m->max_seq = e->prev_max;
    free(e->removed);
}

/* The lowest last_seq the disk may show for model m when op `next` (may be NULL) may have run
 * too: a truncate lowers it. */
static uint64_t
last_floor(const model_t *m, const rec_t *next)
{
    if (next != NULL && next->op == OP_TRUNCATE && next->a < m->max_seq)
        return next->a;
    return m->max_seq;
}

/* ---- checking a recovered store -------------------------------------------------------- */

static void
check_content(const nd_store_msg_t *msg, uint64_t seq)
{
    char subj[64], hdr[64];
    static uint8_t data[4096];
    int sl = msg_subj(seq, subj, sizeof(subj));
    int hl = msg_hdr(seq, hdr, sizeof(hdr));
    size_t dl = msg_data(seq, data, sizeof(data));
    CHECK(msg->seq == seq, "load(%" PRIu64 ") gave seq %" PRIu64, seq, msg->seq);
    CHECK(msg->subj_len == (size_t)sl && memcmp(msg->subj, subj, (size_t)sl) == 0,
          "seq %" PRIu64 ": subject '%.*s', expected '%s'", seq, (int)msg->subj_len, msg->subj,
          subj);
    CHECK(msg->hdr_len == (size_t)hl && (hl == 0 || memcmp(msg->hdr, hdr, (size_t)hl) == 0),
          "seq %" PRIu64 ": headers differ (%zu bytes, expected %d)", seq, msg->hdr_len, hl);
    CHECK(msg->data_len == dl && (dl == 0 || memcmp(msg->data, data, dl) == 0),
          "seq %" PRIu64 ": payload differs (%zu bytes, expected %zu)", seq, msg->data_len, dl);
}

typedef struct observed {
    uint8_t *present; /* [seq] loadable */
    size_t cap;
    uint64_t count, bytes, lo, hi;
    nd_store_state_t st;
    nd_store_recovery_t rep;
    bool chas;     /* the consumer exists */
    uint64_t cval; /* its value */
} observed_t;

/* Opens the directory, reads everything back and checks the store against itself. */
static void
observe(const dircfg_t *dc, const model_t *m, uint64_t inflight_seq, observed_t *o)
{
    nd_store_cfg_t cfg = make_cfg(dc);
    nd_store_t *st = NULL;
    memset(o, 0, sizeof(*o));
    nd_err_t rc = nd_filestore_open(&cfg, &st, &o->rep);
    CHECK(rc == ND_OK, "reopen after the kill failed: %s (errno %d)", nd_strerror(rc),
          o->rep.io_errno);
    nd_store_state(st, &o->st);
    uint64_t top = o->st.last_seq;
    if (m->max_seq > top)
        top = m->max_seq;
    if (inflight_seq > top)
        top = inflight_seq;
    top += 2;
    o->cap = (size_t)top + 1;
    o->present = calloc(o->cap, 1);
    o->lo = UINT64_MAX;
    nd_store_msg_t msg;
    memset(&msg, 0, sizeof(msg));
    for (uint64_t s = 1; s <= top; s++) {
        rc = nd_store_load(st, s, &msg);
        if (rc == ND_ERR_STORE_NOT_FOUND || rc == ND_ERR_STORE_EOF)
            continue;
        CHECK(rc == ND_OK, "load(%" PRIu64 ") failed: %s", s, nd_strerror(rc));
        check_content(&msg, s);
        if (s < m->cap && m->ts[s] != 0)
            CHECK(msg.ts == m->ts[s],
                  "seq %" PRIu64 ": timestamp %" PRId64 ", acknowledged %" PRId64, s, msg.ts,
                  m->ts[s]);
        o->present[s] = 1;
        o->count++;
        o->bytes += nd_store_msg_size(msg.subj_len, msg.hdr_len, msg.data_len);
        if (s < o->lo)
            o->lo = s;
        o->hi = s;
    }
    /* load_next must walk exactly the loadable set, in order. */
    uint64_t next = 1, walked = 0;
    for (;;) {
        rc = st->ops->load_next(st, NULL, 0, next, &msg);
        if (rc == ND_ERR_STORE_EOF)
            break;
        CHECK(rc == ND_OK, "load_next(%" PRIu64 ") failed: %s", next, nd_strerror(rc));
        CHECK(msg.seq >= next && msg.seq < o->cap && o->present[msg.seq],
              "load_next(%" PRIu64 ") gave %" PRIu64 ", which load() does not have", next, msg.seq);
        for (uint64_t s = next; s < msg.seq; s++)
            CHECK(!o->present[s], "load_next(%" PRIu64 ") skipped loadable %" PRIu64, next, s);
        walked++;
        next = msg.seq + 1;
    }
    CHECK(walked == o->count, "load_next walked %" PRIu64 " messages, load() found %" PRIu64,
          walked, o->count);

    const nd_store_state_t *s = &o->st;
    CHECK(s->msgs == o->count, "state.msgs %" PRIu64 " but %" PRIu64 " loadable", s->msgs,
          o->count);
    CHECK(s->bytes == o->bytes, "state.bytes %" PRIu64 " but loadable messages sum to %" PRIu64,
          s->bytes, o->bytes);
    if (o->count > 0) {
        CHECK(s->first_seq == o->lo, "state.first_seq %" PRIu64 ", lowest loadable %" PRIu64,
              s->first_seq, o->lo);
        CHECK(s->last_seq >= o->hi, "state.last_seq %" PRIu64 " < loadable %" PRIu64, s->last_seq,
              o->hi);
        CHECK(s->num_deleted == s->last_seq - s->first_seq + 1 - s->msgs,
              "num_deleted %" PRIu64 " for first %" PRIu64 " last %" PRIu64 " msgs %" PRIu64,
              s->num_deleted, s->first_seq, s->last_seq, s->msgs);
    } else {
        CHECK(s->first_seq == s->last_seq + 1, "empty store: first %" PRIu64 " last %" PRIu64,
              s->first_seq, s->last_seq);
        CHECK(s->num_deleted == 0, "empty store with num_deleted %" PRIu64, s->num_deleted);
    }
    nd_store_msg_free(&msg);
    o->chas = cons_read(st, &o->cval);

    /* A clean close writes the index; opening again must give the same state. */
    nd_store_close(st);
    nd_store_recovery_t rep2;
    rc = nd_filestore_open(&cfg, &st, &rep2);
    CHECK(rc == ND_OK, "reopen after a clean close failed: %s", nd_strerror(rc));
    nd_store_state_t s2;
    nd_store_state(st, &s2);
    CHECK(s2.msgs == s->msgs && s2.bytes == s->bytes && s2.first_seq == s->first_seq &&
              s2.last_seq == s->last_seq && s2.num_deleted == s->num_deleted,
          "state changed across a clean close/open: msgs %" PRIu64 "->%" PRIu64 " bytes %" PRIu64
          "->%" PRIu64 " first %" PRIu64 "->%" PRIu64 " last %" PRIu64 "->%" PRIu64,
          s->msgs, s2.msgs, s->bytes, s2.bytes, s->first_seq, s2.first_seq, s->last_seq,
          s2.last_seq);
    CHECK(rep2.records_dropped == 0 && rep2.torn_tails == 0 && rep2.blocks_corrupt == 0,
          "a clean reopen reported damage: dropped %" PRIu64 " torn %" PRIu64 " corrupt %" PRIu64,
          rep2.records_dropped, rep2.torn_tails, rep2.blocks_corrupt);
    nd_store_close(st);
}

/* Does the observed set equal model m, give or take what op `in` (the one after m) may have
 * done partly? in may be NULL. */
static bool
matches(const model_t *m, const observed_t *o, const rec_t *in, const uint64_t *rm, size_t nrm,
        uint64_t *bad)
{
    uint64_t top = o->cap;
    if (m->cap > top)
        top = m->cap;
    for (uint64_t s = 1; s < top; s++) {
        bool want = model_has(m, s);
        bool got = s < o->cap && o->present[s];
        if (want == got)
            continue;
        if (in != NULL && in->op == OP_STORE && s == in->a && got)
            continue; /* the in-flight store made it */
        if (in != NULL && want && !got) {
            bool in_rm = false;
            for (size_t i = 0; i < nrm && !in_rm; i++)
                in_rm = rm[i] == s;
            if (in_rm)
                continue; /* the in-flight removal got this far */
        }
        *bad = s;
        return false;
    }
    return true;
}

/* For a failure message: what the acknowledged ops of this run did to seq, and what the disk
 * has. */
static void
describe(const effects_t *ef, const model_t *m, const observed_t *o, uint64_t seq, char *buf,
         size_t cap)
{
    size_t added = 0, removed = 0;
    uint32_t rm_op = 0;
    for (size_t i = 0; i < ef->n; i++) {
        if (ef->v[i].added == seq)
            added = i + 1;
        if (ef->v[i].added == seq && removed > added)
            removed = 0;
        for (size_t k = 0; k < ef->v[i].nremoved; k++)
            if (ef->v[i].removed[k] == seq) {
                removed = i + 1;
                rm_op = ef->v[i].op;
            }
    }
    snprintf(buf, cap,
             "on disk %s, model %s; stored by op %zu, removed by op %zu (%s) of this run "
             "(0 = not in this run)",
             seq < o->cap && o->present[seq] ? "present" : "absent",
             model_has(m, seq) ? "present" : "absent", added, removed, op_names[rm_op]);
}

/* For a failure message: the mismatches between model m and the disk (up to 8 listed). */
static size_t
mismatches(const model_t *m, const observed_t *o, char *buf, size_t cap)
{
    uint64_t top = o->cap > m->cap ? o->cap : m->cap;
    size_t n = 0, w = 0;
    buf[0] = '\0';
    for (uint64_t s = 1; s < top; s++) {
        bool want = model_has(m, s), got = s < o->cap && o->present[s];
        if (want == got)
            continue;
        if (n++ < 8 && w < cap)
            w += (size_t)snprintf(buf + w, cap - w, " %" PRIu64 "%s", s, got ? "+" : "-");
    }
    return n;
}

/* ---- one directory, several crashes -------------------------------------------------------- */

static int g_cipher_refused;

typedef struct stats {
    uint64_t acks, kills, torn, inflight_stores_kept, inflight_stores_lost, prefix_short;
    uint64_t nacks;
    uint64_t exited;
} stats_t;

static void
run_dir(const char *base, uint64_t *rs, bool always, int crashes, stats_t *stats, int strict)
{
    snprintf(g_dir, sizeof(g_dir), "%s/ndcrash-%d-XXXXXX", base, (int)getpid());
    CHECK(mkdtemp(g_dir) != NULL, "mkdtemp(%s): %s", g_dir, strerror(errno));
    /* The store creates its directory itself: hand it a path below the temp dir. */
    strncat(g_dir, "/stream", sizeof(g_dir) - strlen(g_dir) - 1);

    dircfg_t dc = {.always = always, .block_size = 1024 + rnd_below(rs, 4) * 1024};
    /* A third of the directories run with limits (discard old), so stores remove messages too. */
    switch (rnd_below(rs, 9)) {
    case 0:
        dc.max_msgs = 20 + (int64_t)rnd_below(rs, 80);
        break;
    case 1:
        dc.max_per_subj = 2 + (int64_t)rnd_below(rs, 10);
        break;
    case 2:
        dc.max_bytes = 4000 + (int64_t)rnd_below(rs, 16000);
        dc.max_msgs = rnd_below(rs, 2) ? 40 + (int64_t)rnd_below(rs, 40) : 0;
        break;
    default:
        break;
    }
    if (!g_cipher_refused) {
        uint64_t c = rnd_below(rs, 4);
        dc.cipher = c == 1 ? ND_CIPHER_AES_GCM : c == 2 ? ND_CIPHER_CHACHA : ND_CIPHER_NONE;
        dc.compression = rnd_below(rs, 2) ? ND_STORE_S2 : ND_STORE_NONE;
    }
    /* Probe once that the store accepts the cipher/compression; fall back when it does not. */
    {
        nd_store_cfg_t cfg = make_cfg(&dc);
        nd_store_t *st = NULL;
        nd_err_t rc = nd_filestore_open(&cfg, &st, NULL);
        if (rc == ND_ERR_STORE_BAD_ARG && (dc.cipher != ND_CIPHER_NONE || dc.compression)) {
            if (!g_cipher_refused)
                printf("note: the file store refused cipher %d / compression %d; running "
                       "without\n",
                       dc.cipher, dc.compression);
            g_cipher_refused = 1;
            dc.cipher = ND_CIPHER_NONE;
            dc.compression = ND_STORE_NONE;
            cfg = make_cfg(&dc);
            rc = nd_filestore_open(&cfg, &st, NULL);
        }
        CHECK(rc == ND_OK, "first open failed: %s", nd_strerror(rc));
        nd_store_close(st);
    }

    model_t m = {0};
    m.max_msgs = (uint64_t)dc.max_msgs;
    m.max_bytes = (uint64_t)dc.max_bytes;
    m.max_per_subj = (uint64_t)dc.max_per_subj;
    effects_t ef = {0};
    uint64_t cons_acked = 0; /* the consumer value the disk must hold (0: none yet) */
    for (int c = 0; c < crashes; c++, g_point++) {
        int fds[2];
        CHECK(pipe(fds) == 0, "pipe: %s", strerror(errno));
        uint64_t child_seed = rnd_next(rs);
        /* Most kills come after some ops; some during open (0 acks) and some after a long run. */
        uint64_t kill_after = rnd_below(rs, 8) == 0 ? 0 : rnd_below(rs, 200);
        uint64_t delay_us = rnd_below(rs, 2) ? 0 : rnd_below(rs, 2000);
        /* One writer in four (sync_always only) gets an injected I/O error: a failed write
         * (ENOSPC or EIO, sometimes short) or a failed fsync after a random number of calls. */
        nd_fs_fault_t fault = {0};
        bool faulty = always && rnd_below(rs, 4) == 0;
        if (faulty) {
            fault.kind = 1 + (int)rnd_below(rs, 2);
            fault.err = rnd_below(rs, 2) ? ENOSPC : EIO;
            fault.after = (long)rnd_below(rs, 300);
            fault.short_write = rnd_below(rs, 2) != 0;
            kill_after = 1000000; /* the error ends the writer */
        }
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0) {
            close(fds[0]);
            child_main(fds[1], &dc, child_seed, faulty ? &fault : NULL);
        }
        close(fds[1]);

        rec_t intent = {0}, r;
        bool have_intent = false, killed = false, opened = false;
        uint64_t acks = 0;
        int child_failed = 0;
        rec_t failrec = {0};
        size_t durable = 0;
        uint64_t cons_at_sync = cons_acked;
        effects_clear(&ef);
        g_nhist = 0;
        for (;;) {
            if (!killed && acks >= kill_after && (opened || kill_after == 0)) {
                if (delay_us)
                    usleep((useconds_t)delay_us);
                kill(pid, SIGKILL);
                killed = true;
            }
            /* A hang guard, not a timing assertion: a healthy child acks in microseconds. */
            struct pollfd pf = {.fd = fds[0], .events = POLLIN};
            int pr = poll(&pf, 1, 120000);
            if (pr == 0) {
                kill(pid, SIGKILL);
                fail("the writer made no progress for 120 s (hang?) after %" PRIu64 " acks", acks);
            }
            ssize_t n = read(fds[0], &r, sizeof(r));
            if (n < 0 && errno == EINTR)
                continue;
            if (n == 0)
                break; /* the child is gone and everything it wrote has been read */
            CHECK(n == (ssize_t)sizeof(r), "short pipe read %zd", n);
            switch (r.kind) {
            case REC_OPENED:
                opened = true;
                break;
            case REC_INTENT:
                intent = r;
                have_intent = true;
                break;
            case REC_ACK:
                g_hist[g_nhist % NHIST].op = r.op;
                g_hist[g_nhist % NHIST].a = r.a;
                g_hist[g_nhist % NHIST].b = r.b;
                g_hist[g_nhist % NHIST].r = r.r;
                g_hist[g_nhist % NHIST].rc = r.rc;
                g_nhist++;
                model_apply(&m, &ef, &r);
                if (r.op == OP_CONSUMER) {
                    CHECK(r.a > cons_acked, "consumer value %" PRIu64 " after %" PRIu64, r.a,
                          cons_acked);
                    cons_acked = r.a;
                }
                if (r.op == OP_SYNC || r.op == OP_REOPEN) {
                    durable = ef.n; /* everything up to here reached the kernel */
                    cons_at_sync = cons_acked;
                }
                have_intent = false;
                acks++;
                break;
            case REC_NACK:
                /* The op failed with the injected error: it stays the in-flight op. */
                CHECK(have_intent && r.op == intent.op, "a NACK without its intent");
                stats->nacks++;
                break;
            case REC_FAIL:
                child_failed = 1;
                failrec = r;
                break;
            default:
                fail("bad pipe record kind %u", r.kind);
            }
        }
        close(fds[0]);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
        if (child_failed && failrec.rc == -1)
            fail("a store was acknowledged after a failed fsync (fault kind %d, after %ld)",
                 fault.kind, fault.after);
        if (child_failed)
            fail("the writer's %s failed: %s (errno %d in the child)", op_names[failrec.op],
                 nd_strerror((nd_err_t)failrec.rc), (int)failrec.pad);
        if (WIFEXITED(status)) {
            CHECK(WEXITSTATUS(status) == 0, "the writer exited with %d", WEXITSTATUS(status));
            stats->exited++;
        } else {
            CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "the writer died of signal %d, not our SIGKILL",
                  WIFSIGNALED(status) ? WTERMSIG(status) : -1);
            stats->kills++;
        }
        stats->acks += acks;

        /* What the in-flight op could remove, computed on the model before it. */
        const rec_t *inflight = have_intent ? &intent : NULL;
        uint64_t *rm = NULL;
        size_t nrm = 0;
        if (inflight != NULL && is_removal(inflight->op))
            rm = removal_set(&m, inflight, &nrm);
        if (inflight != NULL && inflight->op == OP_STORE && inflight->a > m.max_seq) {
            /* What its limits would remove, computed on the model and undone. */
            model_grow(&m, inflight->a);
            uint8_t *save = malloc(m.cap);
            memcpy(save, m.present, m.cap);
            uint64_t save_max = m.max_seq;
            m.present[inflight->a] = 1;
            m.max_seq = inflight->a;
            rm = limit_apply(&m, inflight->a, &nrm);
            memcpy(m.present, save, m.cap);
            m.max_seq = save_max;
            free(save);
        }
        uint64_t inflight_seq = inflight != NULL && inflight->op == OP_STORE ? inflight->a : 0;

        char snap[600];
        snprintf(snap, sizeof(snap), "%s.crash", g_dir);
        rm_rf(snap);
        copy_tree(g_dir, snap);
        observed_t o;
        observe(&dc, &m, inflight_seq, &o);
        if (o.rep.torn_tails)
            stats->torn++;
        bool secure_inflight = inflight != NULL && inflight->op == OP_REMOVE_SECURE;
        CHECK(o.rep.records_dropped == 0 || (secure_inflight && o.rep.records_dropped <= 1),
              "recovery after a process kill dropped %" PRIu64 " records (%" PRIu64
              " corrupt blocks): a kill must not corrupt the middle of a block",
              o.rep.records_dropped, o.rep.blocks_corrupt);

        uint64_t bad = 0;
        size_t applied = ef.n;
        bool ok = matches(&m, &o, inflight, rm, nrm, &bad);
        rec_t next_op = inflight != NULL ? *inflight : (rec_t){0};
        if ((!ok || o.st.last_seq < last_floor(&m, &next_op)) && !always) {
            /* Walk back: the disk may hold a prefix of the acknowledged ops. */
            uint64_t first_bad = bad;
            char why[600];
            describe(&ef, &m, &o, bad, why, sizeof(why));
            /* A prefix must also explain last_seq: a lost skip or removal of the last message
             * leaves the present set alone but not last_seq. */
            while ((!ok || o.st.last_seq < last_floor(&m, &next_op)) && ef.n > 0) {
                effect_t *last = &ef.v[ef.n - 1];
                rec_t pseudo = {.op = last->op, .a = last->arg};
                if (last->op == OP_STORE)
                    pseudo.a = last->added;
                next_op = pseudo;
                free(rm);
                rm = NULL;
                nrm = 0;
                if (last->nremoved) {
                    rm = malloc(last->nremoved * sizeof(uint64_t));
                    memcpy(rm, last->removed, last->nremoved * sizeof(uint64_t));
                    nrm = last->nremoved;
                }
                model_undo(&m, &ef);
                ok = matches(&m, &o, &pseudo, rm, nrm, &bad);
                if (!ok && getenv("NATSD_CRASH_DEBUG")) {
                    char list[200];
                    size_t nm = mismatches(&m, &o, list, sizeof(list));
                    fprintf(stderr, "  prefix %zu (next op %s a=%" PRIu64 "): %zu differ:%s\n",
                            ef.n, op_names[pseudo.op], pseudo.a, nm, list);
                }
                if (!ok && ef.n == durable) {
                    char w2[256];
                    describe(&ef, &m, &o, bad, w2, sizeof(w2));
                    snprintf(why, sizeof(why), "at the sync floor (op %zu): seq %" PRIu64 " %s",
                             durable, bad, w2);
                }
            }
            CHECK(ok,
                  "interval mode: the recovered state is no prefix of the acknowledged ops "
                  "(first difference at seq %" PRIu64 ": %s; %zu ops acknowledged, the last "
                  "sync/reopen after op %zu, in flight: %s)",
                  first_bad, why, applied, durable, inflight ? op_names[inflight->op] : "none");
            if (ef.n < applied) {
                stats->prefix_short++;
                CHECK(strict < 1 || ef.n >= durable,
                      "%zu acknowledged ops lost by a process kill (seq %" PRIu64
                      " differs), including ops before an acknowledged sync/reopen (the disk "
                      "holds %zu ops, the sync covered %zu): a kill must not lose what sync() "
                      "or close() handed to the kernel",
                      applied - ef.n, first_bad, ef.n, durable);
                CHECK(strict < 2,
                      "%zu acknowledged ops lost by a process kill (seq %" PRIu64
                      " differs; NATSD_CRASH_STRICT=2 forbids any)",
                      applied - ef.n, first_bad);
            }
        }
        if (!ok) {
            char why[300];
            describe(&ef, &m, &o, bad, why, sizeof(why));
            fail("seq %" PRIu64 " is %s after recovery but the model says %s (%s; in-flight op: "
                 "%s a=%" PRIu64 "; %" PRIu64 " acks this run)",
                 bad, bad < o.cap && o.present[bad] ? "present" : "absent",
                 model_has(&m, bad) ? "present" : "absent", why,
                 inflight ? op_names[inflight->op] : "none", inflight ? inflight->a : 0, acks);
        }
        CHECK(o.st.last_seq >= last_floor(&m, &next_op),
              "last_seq went back to %" PRIu64 " below the acknowledged %" PRIu64
              " (sequences would be reused)",
              o.st.last_seq, last_floor(&m, &next_op));
        {
            uint64_t allowed = m.max_seq;
            if (inflight != NULL && (inflight->op == OP_STORE || inflight->op == OP_SKIP) &&
                inflight->a > allowed)
                allowed = inflight->a;
            if (inflight != NULL && (inflight->op == OP_COMPACT || inflight->op == OP_PURGE_UPTO) &&
                inflight->a > 1 && inflight->a - 1 > allowed)
                allowed = inflight->a - 1;
            if (ef.n < applied)
                allowed = UINT64_MAX; /* a lost-and-walked-back prefix had higher seqs */
            CHECK(o.st.last_seq <= allowed,
                  "last_seq %" PRIu64 " is beyond anything acknowledged or in flight (%" PRIu64
                  "; in-flight op: %s a=%" PRIu64 ")",
                  o.st.last_seq, allowed, inflight ? op_names[inflight->op] : "none",
                  inflight ? inflight->a : 0);
        }
        {
            /* The consumer: its last acknowledged update (or the in-flight one); with the
             * interval policy at least the one before the last sync/reopen. */
            uint64_t cv = o.chas ? o.cval : 0;
            uint64_t hi = cons_acked;
            bool cinf = inflight != NULL && inflight->op == OP_CONSUMER;
            if (cinf && inflight->a > hi)
                hi = inflight->a;
            if (always || strict >= 2)
                CHECK(cv == cons_acked || (cinf && cv == inflight->a),
                      "the consumer holds value %" PRIu64 ", acknowledged %" PRIu64
                      " (in flight: %" PRIu64 ")",
                      cv, cons_acked, cinf ? inflight->a : 0);
            else
                CHECK(cv <= hi && (strict < 1 || cv >= cons_at_sync),
                      "the consumer holds value %" PRIu64 ", acknowledged %" PRIu64
                      ", synced %" PRIu64 " (in flight: %" PRIu64 ")",
                      cv, cons_acked, cons_at_sync, cinf ? inflight->a : 0);
            cons_acked = cv;
        }
        if (inflight_seq) {
            if (o.present[inflight_seq])
                stats->inflight_stores_kept++;
            else
                stats->inflight_stores_lost++;
        }

        /* The observed state becomes the model for the next child. */
        model_grow(&m, o.cap);
        for (uint64_t s = 1; s < m.cap; s++) {
            bool got = s < o.cap && o.present[s];
            if (got && !m.present[s])
                m.ts[s] = 0; /* the in-flight store's timestamp is unknown: not checked */
            m.present[s] = got;
        }
        /* Verified to be within [last_floor, allowed]: the disk's last_seq is the truth now (it
         * may be below max_seq when an in-flight truncate ran; sequences above are free). */
        for (uint64_t q = o.st.last_seq + 1; q <= m.max_seq && q < m.cap; q++)
            m.ts[q] = 0;
        m.max_seq = o.st.last_seq;
        free(rm);
        free(o.present);
        rm_rf(snap);
    }
    effects_clear(&ef);
    free(ef.v);
    free(m.present);
    free(m.ts);
    /* Remove the temp dir (the parent of the stream directory). */
    char *slash = strrchr(g_dir, '/');
    *slash = '\0';
    rm_rf(g_dir);
}

static void
run_mode(const char *base, uint64_t seed, bool always, int points, int strict)
{
    g_mode = always ? "always" : "interval";
    uint64_t rs = seed ^ (always ? 0 : 0x5555555555555555ull);
    stats_t stats = {0};
    int dirs = 0;
    g_point = 0;
    while (g_point < points) {
        int crashes = 1 + (int)rnd_below(&rs, 4);
        if (crashes > points - g_point)
            crashes = points - g_point;
        run_dir(base, &rs, always, crashes, &stats, strict);
        dirs++;
    }
    printf("%s: %d crash points in %d directories: %" PRIu64 " kills, %" PRIu64
           " writers exited (I/O error or done), %" PRIu64 " acknowledged ops, %" PRIu64
           " torn tails, in-flight "
           "stores kept %" PRIu64 " / lost %" PRIu64 ", short prefixes %" PRIu64
           ", removed by limits %" PRIu64 ", injected I/O errors %" PRIu64 "\n",
           g_mode, points, dirs, stats.kills, stats.exited, stats.acks, stats.torn,
           stats.inflight_stores_kept, stats.inflight_stores_lost, stats.prefix_short,
           g_limit_removed, stats.nacks);
    g_limit_removed = 0;
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    const char *it = argc > 1 && argv[1][0] ? argv[1] : getenv("NATSD_CRASH_ITERS");
    int points = it != NULL ? atoi(it) : 200;
    if (points < 1)
        points = 1;
    const char *sd = argc > 2 && argv[2][0] ? argv[2] : getenv("NATSD_CRASH_SEED");
    if (sd != NULL) {
        g_seed = strtoull(sd, NULL, 0);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        g_seed = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid());
    }
    const char *mode = argc > 3 ? argv[3] : "both";
    const char *st = getenv("NATSD_CRASH_STRICT");
    int strict = st != NULL ? atoi(st) : 1;
    const char *base = getenv("NATSD_CRASH_DIR");
    if (base == NULL)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    printf("stress_store_crash: seed %" PRIu64 " (replay: stress_store_crash %d %" PRIu64
           " %s), dir %s\n",
           g_seed, points, g_seed, mode, base);
    fflush(stdout);
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(mode, "interval") != 0)
        run_mode(base, g_seed, true, points, strict);
    if (strcmp(mode, "always") != 0)
        run_mode(base, g_seed, false, strcmp(mode, "interval") == 0 ? points : points / 3 + 1,
                 strict);
    printf("PASS\n");
    return 0;
}
