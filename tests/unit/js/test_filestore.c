/* File store behaviour that the shared store table (test_store.c) cannot see: the index and its
 * rebuild, block rollover and compaction, tombstones across restarts, torn tails and flipped
 * bytes with exact recovery reports, a future format version, I/O errors through the fault hook
 * (write errors, short writes, ENOSPC, fsync errors) and the interval policy's buffering. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "js/store/filestore.h"
#include "js/store/store.h"

static char root[64];
static char sdir[128];
static int64_t fake_clock = 1000000000000;

static int64_t
fake_now(void *arg)
{
    (void)arg;
    return fake_clock;
}

static int
rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(path);
}

static void
setup(void)
{
    snprintf(root, sizeof(root), "/tmp/ndfs.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(sdir, sizeof(sdir), "%s/stream", root);
    fake_clock = 1000000000000;
    nd_fs_fault_set(NULL);
}

static void
teardown(void)
{
    nd_fs_fault_set(NULL);
    nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(filestore, .init = setup, .fini = teardown, .timeout = 120);

static nd_store_cfg_t
cfg_of(uint64_t block_size, bool always)
{
    nd_store_cfg_t c;
    memset(&c, 0, sizeof(c));
    c.dir = sdir;
    c.block_size = block_size;
    c.sync_always = always;
    c.now = fake_now;
    return c;
}

static nd_store_t *
open_ok(const nd_store_cfg_t *c, nd_store_recovery_t *rep)
{
    nd_store_t *st = NULL;
    nd_err_t e = nd_filestore_open(c, &st, rep);
    cr_assert_eq(e, ND_OK, "open: %s", nd_strerror(e));
    return st;
}

static void
subj_of(uint64_t seq, char *out, size_t n)
{
    snprintf(out, n, "orders.%u", (unsigned)(seq % 7));
}

static size_t
data_of(uint64_t seq, char *out)
{
    size_t n = 10 + seq % 50;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)('a' + (seq + i) % 26);
    return n;
}

static void
put_n(nd_store_t *st, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        nd_store_state_t s;
        nd_store_state(st, &s);
        uint64_t seq = s.last_seq + 1;
        char subj[32], data[64];
        subj_of(seq, subj, sizeof(subj));
        size_t dl = data_of(seq, data);
        uint64_t got;
        fake_clock += 1000;
        nd_err_t e = nd_store_put(st, subj, strlen(subj), NULL, 0, data, dl, &got, NULL);
        cr_assert_eq(e, ND_OK, "put: %s", nd_strerror(e));
        cr_assert_eq(got, seq);
    }
}

static void
check_msg(nd_store_t *st, uint64_t seq)
{
    nd_store_msg_t m = {0};
    nd_err_t e = nd_store_load(st, seq, &m);
    cr_assert_eq(e, ND_OK, "load %lu: %s", (unsigned long)seq, nd_strerror(e));
    if (m.subj_len == 7 && !memcmp(m.subj, "big.one", 7)) {
        nd_store_msg_free(&m);
        return; /* the compression tests' own message, checked there */
    }
    char subj[32], data[64];
    subj_of(seq, subj, sizeof(subj));
    size_t dl = data_of(seq, data);
    cr_assert_eq(m.subj_len, strlen(subj));
    cr_assert_eq(memcmp(m.subj, subj, m.subj_len), 0);
    cr_assert_eq(m.data_len, dl);
    cr_assert_eq(memcmp(m.data, data, dl), 0);
    nd_store_msg_free(&m);
}

/* Everything observable through the interface, to compare two opens of the same directory. */
typedef struct snap {
    nd_store_state_t s;
    uint64_t *del;
    size_t ndel;
    uint64_t subj_msgs[7], subj_first[7], subj_last[7];
} snap_t;

static void
take(nd_store_t *st, snap_t *sn)
{
    memset(sn, 0, sizeof(*sn));
    nd_store_state(st, &sn->s);
    cr_assert_eq(st->ops->deleted(st, &sn->del, &sn->ndel), ND_OK);
    for (int k = 0; k < 7; k++) {
        char subj[32];
        snprintf(subj, sizeof(subj), "orders.%d", k);
        nd_store_subj_state_t ss;
        st->ops->filtered_state(st, subj, strlen(subj), 0, &ss);
        sn->subj_msgs[k] = ss.msgs;
        sn->subj_first[k] = ss.first_seq;
        sn->subj_last[k] = ss.last_seq;
    }
}

static void
same(const snap_t *a, const snap_t *b)
{
    cr_assert_eq(a->s.msgs, b->s.msgs);
    cr_assert_eq(a->s.bytes, b->s.bytes);
    cr_assert_eq(a->s.first_seq, b->s.first_seq);
    cr_assert_eq(a->s.last_seq, b->s.last_seq);
    cr_assert_eq(a->s.first_ts, b->s.first_ts);
    cr_assert_eq(a->s.last_ts, b->s.last_ts);
    cr_assert_eq(a->s.num_deleted, b->s.num_deleted);
    cr_assert_eq(a->s.num_subjects, b->s.num_subjects);
    cr_assert_eq(a->ndel, b->ndel);
    for (size_t i = 0; i < a->ndel; i++)
        cr_assert_eq(a->del[i], b->del[i]);
    for (int k = 0; k < 7; k++) {
        cr_assert_eq(a->subj_msgs[k], b->subj_msgs[k]);
        cr_assert_eq(a->subj_first[k], b->subj_first[k]);
        cr_assert_eq(a->subj_last[k], b->subj_last[k]);
    }
}

static void
check_all(nd_store_t *st, const snap_t *sn)
{
    size_t d = 0;
    for (uint64_t seq = sn->s.first_seq; seq <= sn->s.last_seq; seq++) {
        if (d < sn->ndel && sn->del[d] == seq) {
            nd_store_msg_t m = {0};
            cr_assert_eq(nd_store_load(st, seq, &m), ND_ERR_STORE_NOT_FOUND);
            d++;
            continue;
        }
        check_msg(st, seq);
    }
}

static void
path_of(char *out, size_t n, const char *rel)
{
    snprintf(out, n, "%s/%s", sdir, rel);
}

static size_t
count_blocks(void)
{
    char p[256];
    path_of(p, sizeof(p), ND_FS_MSGS_DIR);
    DIR *d = opendir(p);
    cr_assert_not_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ND_FS_BLK_SUFFIX) && !strstr(e->d_name, ND_FS_TMP_SUFFIX))
            n++;
    closedir(d);
    return n;
}

static off_t
file_size(const char *rel)
{
    char p[256];
    path_of(p, sizeof(p), rel);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0, "stat %s", p);
    return sb.st_size;
}

static void
remove_index(void)
{
    char p[256];
    path_of(p, sizeof(p), ND_FS_INDEX_FILE);
    cr_assert_eq(unlink(p), 0);
}

static void
free_snap(snap_t *sn)
{
    free(sn->del);
    sn->del = NULL;
}

/* Builds a store with gaps of every kind: removes in the middle, a removed first message, a
 * skip, a filtered purge. */
static void
build_mixed(nd_store_t *st)
{
    put_n(st, 200);
    cr_assert_eq(st->ops->remove(st, 10, false), ND_OK);
    cr_assert_eq(st->ops->remove(st, 11, false), ND_OK);
    cr_assert_eq(st->ops->remove(st, 1, false), ND_OK);
    cr_assert_eq(st->ops->remove(st, 150, true), ND_OK);
    uint64_t seq;
    cr_assert_eq(st->ops->skip(st, &seq), ND_OK);
    cr_assert_eq(seq, 201);
    uint64_t purged;
    cr_assert_eq(st->ops->purge(st, "orders.3", 8, 100, 0, &purged), ND_OK);
    cr_assert_gt(purged, 0);
    put_n(st, 20);
}

Test(filestore, reopen_after_clean_close_keeps_everything)
{
    nd_store_cfg_t c = cfg_of(4096, false);
    nd_store_t *st = open_ok(&c, NULL);
    build_mixed(st);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(!rep.index_rebuilt);
    cr_assert_eq(rep.msgs, a.s.msgs);
    cr_assert_eq(rep.records_dropped + rep.torn_tails + rep.blocks_corrupt, 0);
    take(st, &b);
    same(&a, &b);
    check_all(st, &b);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

Test(filestore, index_deleted_is_rebuilt_with_identical_state)
{
    nd_store_cfg_t c = cfg_of(4096, false);
    nd_store_t *st = open_ok(&c, NULL);
    build_mixed(st);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(rep.index_rebuilt);
    cr_assert_eq(rep.msgs, a.s.msgs);
    cr_assert_eq(rep.records_dropped + rep.torn_tails + rep.blocks_corrupt, 0);
    take(st, &b);
    same(&a, &b);
    check_all(st, &b);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

Test(filestore, corrupt_index_is_rebuilt)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    build_mixed(st);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    char p[256];
    path_of(p, sizeof(p), ND_FS_INDEX_FILE);
    int fd = open(p, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t x = 0x5a;
    cr_assert_eq(pwrite(fd, &x, 1, 60), 1);
    close(fd);
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(rep.index_rebuilt);
    take(st, &b);
    same(&a, &b);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

/* An index that describes older blocks (the state of a crash after a checkpoint): rebuilt. */
Test(filestore, stale_index_is_rebuilt)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 50);
    nd_store_close(st);
    char p[256], saved[256];
    path_of(p, sizeof(p), ND_FS_INDEX_FILE);
    snprintf(saved, sizeof(saved), "%s/index.saved", root);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "cp %s %s", p, saved);
    cr_assert_eq(system(cmd), 0);
    st = open_ok(&c, NULL);
    put_n(st, 5);
    cr_assert_eq(st->ops->remove(st, 20, false), ND_OK);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    snprintf(cmd, sizeof(cmd), "cp %s %s", saved, p);
    cr_assert_eq(system(cmd), 0);
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(rep.index_rebuilt);
    take(st, &b);
    same(&a, &b);
    cr_assert_eq(b.s.last_seq, 55);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

Test(filestore, block_rollover)
{
    nd_store_cfg_t c = cfg_of(1024, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 300);
    nd_store_close(st);
    cr_assert_gt(count_blocks(), 10);
    char p[64];
    snprintf(p, sizeof(p), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    /* A block is cut before the record that would take it past block_size. */
    cr_assert_leq(file_size(p), 1024);
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(rep.index_rebuilt);
    cr_assert_eq(rep.msgs, 300);
    for (uint64_t s = 1; s <= 300; s++)
        check_msg(st, s);
    nd_store_close(st);
}

Test(filestore, mostly_deleted_blocks_are_compacted)
{
    nd_store_cfg_t c = cfg_of(4096, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 600);
    cr_assert_eq(st->ops->sync(st), ND_OK);
    char b1[64];
    snprintf(b1, sizeof(b1), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    off_t before = file_size(b1);
    size_t nblocks = count_blocks();
    /* Keep every 10th message of the first 500 (the first one stays, so no block is simply
     * dropped from the front). */
    for (uint64_t s = 2; s <= 500; s++)
        if (s % 10)
            cr_assert_eq(st->ops->remove(st, s, false), ND_OK);
    cr_assert_eq(st->ops->sync(st), ND_OK);
    /* The first block kept a tenth of its messages (the tombstones live in later blocks). */
    off_t after = file_size(b1);
    cr_assert_lt(after, before / 2, "before %ld after %ld", (long)before, (long)after);
    cr_assert_leq(count_blocks(), nblocks);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.records_dropped + rep.torn_tails + rep.blocks_corrupt, 0);
    take(st, &b);
    same(&a, &b);
    check_all(st, &b);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

Test(filestore, fully_deleted_middle_block_is_dropped_and_tombstones_survive)
{
    nd_store_cfg_t c = cfg_of(1024, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 100);
    size_t nblocks = count_blocks();
    /* Tombstones for early messages are written into a middle block, then every message
     * around them goes except the first: the middle blocks are dropped, and the tombstones
     * they held must be carried forward. */
    cr_assert_eq(st->ops->remove(st, 3, false), ND_OK);
    cr_assert_eq(st->ops->remove(st, 5, false), ND_OK);
    put_n(st, 30);
    for (uint64_t s = 20; s <= 110; s++)
        cr_assert_eq(st->ops->remove(st, s, false), ND_OK);
    cr_assert_lt(count_blocks(), nblocks + 3);
    snap_t a, b;
    take(st, &a);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    take(st, &b);
    same(&a, &b);
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(st, 3, &m), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(nd_store_load(st, 5, &m), ND_ERR_STORE_NOT_FOUND);
    cr_assert_eq(nd_store_load(st, 50, &m), ND_ERR_STORE_NOT_FOUND);
    check_msg(st, 4);
    check_msg(st, 111);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

Test(filestore, purge_compact_truncate_survive_rebuild)
{
    nd_store_cfg_t c = cfg_of(2048, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 100);
    uint64_t purged;
    cr_assert_eq(st->ops->compact(st, 30, &purged), ND_OK);
    cr_assert_eq(purged, 29);
    cr_assert_eq(st->ops->remove(st, 40, false), ND_OK);
    cr_assert_eq(st->ops->truncate(st, 80), ND_OK);
    put_n(st, 10);
    snap_t a, b;
    take(st, &a);
    cr_assert_eq(a.s.first_seq, 30);
    cr_assert_eq(a.s.last_seq, 90);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    take(st, &b);
    same(&a, &b);
    check_all(st, &b);
    /* Purge everything: the sequence goes on after a rebuild. */
    cr_assert_eq(st->ops->purge(st, NULL, 0, 0, 0, &purged), ND_OK);
    free_snap(&b);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    take(st, &b);
    cr_assert_eq(b.s.msgs, 0);
    cr_assert_eq(b.s.first_seq, 91);
    cr_assert_eq(b.s.last_seq, 90);
    cr_assert_eq(count_blocks(), 1);
    /* Compact past the end: the next store gets that sequence, also after a rebuild. */
    cr_assert_eq(st->ops->compact(st, 500, &purged), ND_OK);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    uint64_t seq;
    cr_assert_eq(nd_store_put(st, "x", 1, NULL, 0, "y", 1, &seq, NULL), ND_OK);
    cr_assert_eq(seq, 500);
    nd_store_close(st);
    free_snap(&a);
    free_snap(&b);
}

/* Record layout of put_n's messages (no headers): 40 + subject + data + 8 bytes. */
static size_t
rec_len_of(uint64_t seq)
{
    char subj[32], data[64];
    subj_of(seq, subj, sizeof(subj));
    return ND_FS_REC_OVERHEAD + strlen(subj) + data_of(seq, data);
}

static size_t
rec_off_of(uint64_t seq)
{
    size_t off = ND_FS_BLK_HDR_LEN;
    for (uint64_t s = 1; s < seq; s++)
        off += rec_len_of(s);
    return off;
}

Test(filestore, torn_tail_is_truncated_with_exact_report)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 10);
    nd_store_close(st);
    remove_index();
    char p[64];
    snprintf(p, sizeof(p), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    off_t sz = file_size(p);
    cr_assert_eq((size_t)sz, rec_off_of(11));
    char full[256];
    path_of(full, sizeof(full), p);
    cr_assert_eq(truncate(full, sz - 5), 0);
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.torn_tails, 1);
    cr_assert_eq(rep.records_dropped, 0);
    cr_assert_eq(rep.blocks_corrupt, 0);
    cr_assert_eq(rep.bytes_dropped, rec_len_of(10) - 5);
    cr_assert_eq(rep.msgs, 9);
    cr_assert_eq((size_t)file_size(p), rec_off_of(10));
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.last_seq, 9);
    put_n(st, 1); /* seq 10 again: it was never durable */
    check_msg(st, 10);
    nd_store_close(st);
}

static void
flip_at(const char *rel, size_t off)
{
    char p[256];
    path_of(p, sizeof(p), rel);
    int fd = open(p, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t x;
    cr_assert_eq(pread(fd, &x, 1, (off_t)off), 1);
    x ^= 0x40;
    cr_assert_eq(pwrite(fd, &x, 1, (off_t)off), 1);
    close(fd);
}

static void
flipped_loses_exactly(size_t where_in_record)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 20);
    nd_store_close(st);
    remove_index();
    char p[64];
    snprintf(p, sizeof(p), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    uint64_t k = 7;
    flip_at(p, rec_off_of(k) + where_in_record);
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.records_dropped, 1);
    cr_assert_eq(rep.blocks_corrupt, 1);
    cr_assert_eq(rep.torn_tails, 0);
    cr_assert_eq(rep.bytes_dropped, rec_len_of(k));
    cr_assert_eq(rep.msgs, 19);
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(st, k, &m), ND_ERR_STORE_NOT_FOUND);
    for (uint64_t s = 1; s <= 20; s++)
        if (s != k)
            check_msg(st, s);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.last_seq, 20);
    cr_assert_eq(s.num_deleted, 1);
    nd_store_close(st);
}

Test(filestore, flipped_body_byte_loses_exactly_that_record)
{
    flipped_loses_exactly(ND_FS_REC_HDR_LEN + 3);
}

Test(filestore, flipped_header_byte_loses_exactly_that_record)
{
    flipped_loses_exactly(17); /* inside the sequence number */
}

Test(filestore, flipped_magic_loses_exactly_that_record)
{
    flipped_loses_exactly(0);
}

static void
rewrite_version(const char *rel, size_t ver_off, size_t sum_off, size_t sum_len)
{
    char p[256];
    path_of(p, sizeof(p), rel);
    int fd = open(p, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t buf[64];
    cr_assert_eq(pread(fd, buf, sum_off + 8, 0), (ssize_t)(sum_off + 8));
    uint32_t v = ND_FS_VERSION + 1;
    memcpy(buf + ver_off, &v, 4);
    uint64_t sum = XXH64(buf, sum_len, 0);
    memcpy(buf + sum_off, &sum, 8);
    cr_assert_eq(pwrite(fd, buf, sum_off + 8, 0), (ssize_t)(sum_off + 8));
    close(fd);
}

Test(filestore, future_version_is_refused)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 3);
    nd_store_close(st);
    rewrite_version(ND_FS_META_FILE, 8, 24, 24);
    nd_store_t *st2 = NULL;
    cr_assert_eq(nd_filestore_open(&c, &st2, NULL), ND_ERR_STORE_VERSION);
    /* Back to our version in meta.dat, then a block from the future. */
    char p[256];
    path_of(p, sizeof(p), ND_FS_META_FILE);
    unlink(p);
    remove_index();
    char b[64];
    snprintf(b, sizeof(b), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    rewrite_version(b, 8, 40, 40);
    cr_assert_eq(nd_filestore_open(&c, &st2, NULL), ND_ERR_STORE_VERSION);
}

Test(filestore, write_error_is_returned_and_nothing_is_stored)
{
    nd_store_cfg_t c = cfg_of(0, true);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 5);
    char p[64];
    snprintf(p, sizeof(p), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    off_t sz = file_size(p);
    nd_fs_fault_set(&(nd_fs_fault_t){.kind = 1, .err = ENOSPC, .short_write = true});
    uint64_t seq = 0;
    nd_err_t e = nd_store_put(st, "a.b", 3, NULL, 0, "data", 4, &seq, NULL);
    cr_assert_eq(e, ND_ERR_STORE_IO);
    cr_assert_eq(nd_store_io_errno(st), ENOSPC);
    cr_assert_eq(file_size(p), sz, "the partial record is cut off");
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, 5);
    cr_assert_eq(s.last_seq, 5);
    cr_assert_eq(st->ops->remove(st, 2, false), ND_ERR_STORE_IO);
    /* Space is back: writes resume, with the next sequence. */
    nd_fs_fault_set(NULL);
    cr_assert_eq(nd_store_put(st, "a.b", 3, NULL, 0, "data", 4, &seq, NULL), ND_OK);
    cr_assert_eq(seq, 6);
    cr_assert_eq(st->ops->remove(st, 2, false), ND_OK);
    nd_store_close(st);
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.msgs, 5);
    cr_assert_eq(rep.torn_tails + rep.records_dropped, 0);
    nd_store_close(st);
}

Test(filestore, fsync_error_refuses_every_later_write)
{
    nd_store_cfg_t c = cfg_of(0, true);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 3);
    nd_fs_fault_set(&(nd_fs_fault_t){.kind = 2, .err = EIO});
    uint64_t seq;
    cr_assert_eq(nd_store_put(st, "a", 1, NULL, 0, "x", 1, &seq, NULL), ND_ERR_STORE_IO);
    cr_assert_eq(nd_store_io_errno(st), EIO);
    nd_fs_fault_set(NULL);
    /* Never retried, never ignored: the store stays read-only. */
    cr_assert_eq(nd_store_put(st, "a", 1, NULL, 0, "x", 1, &seq, NULL), ND_ERR_STORE_IO);
    cr_assert_eq(st->ops->remove(st, 1, false), ND_ERR_STORE_IO);
    cr_assert_eq(st->ops->sync(st), ND_ERR_STORE_IO);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, 3);
    check_msg(st, 2);
    nd_store_close(st);
}

Test(filestore, interval_policy_buffers_until_tick)
{
    nd_store_cfg_t c = cfg_of(0, false);
    c.sync_interval_ns = 5 * 1000000000ll;
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 1);
    char p[64];
    snprintf(p, sizeof(p), "%s/1%s", ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    off_t sz = file_size(p);
    put_n(st, 10);
    cr_assert_eq(file_size(p), sz, "appends are buffered");
    check_msg(st, 5); /* loads read the buffer */
    int64_t dl = st->ops->tick(st, fake_clock);
    cr_assert_gt(file_size(p), sz, "a tick writes the buffer");
    cr_assert_gt(dl, fake_clock);
    cr_assert_leq(dl, fake_clock + c.sync_interval_ns);
    /* A write error while flushing (ENOSPC) is reported and the data stays buffered: once
     * space is back, nothing was lost. */
    put_n(st, 3);
    nd_fs_fault_set(&(nd_fs_fault_t){.kind = 1, .err = ENOSPC});
    cr_assert_eq(st->ops->sync(st), ND_ERR_STORE_IO);
    nd_fs_fault_set(NULL);
    cr_assert_eq(st->ops->sync(st), ND_OK);
    nd_store_close(st);
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.msgs, 14);
    nd_store_close(st);
}

Test(filestore, secure_remove_erases_bytes)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 3);
    const char *secret = "TOP-SECRET-PAYLOAD";
    uint64_t seq;
    cr_assert_eq(nd_store_put(st, "s", 1, NULL, 0, secret, strlen(secret), &seq, NULL), ND_OK);
    put_n(st, 3);
    cr_assert_eq(st->ops->sync(st), ND_OK);
    cr_assert_eq(st->ops->remove(st, seq, true), ND_OK);
    nd_store_close(st);
    char p[256];
    path_of(p, sizeof(p), ND_FS_MSGS_DIR "/1" ND_FS_BLK_SUFFIX);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    cr_assert_null(memmem(buf, n, secret, strlen(secret)));
    remove_index();
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.records_dropped, 0);
    cr_assert_eq(rep.msgs, 6);
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(st, seq, &m), ND_ERR_STORE_NOT_FOUND);
    nd_store_close(st);
}

Test(filestore, limits_are_applied_at_recovery)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 50);
    nd_store_close(st);
    c.max_msgs = 10;
    st = open_ok(&c, NULL);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, 10);
    cr_assert_eq(s.first_seq, 41);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, 10);
    cr_assert_eq(s.first_seq, 41);
    nd_store_close(st);
}

Test(filestore, consumer_names_cannot_escape)
{
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    nd_cstore_t *cs;
    cr_assert_eq(st->ops->consumer_open(st, "../x", &cs), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(st->ops->consumer_open(st, "..", &cs), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(st->ops->consumer_open(st, "a/b", &cs), ND_ERR_STORE_BAD_ARG);
    cr_assert_eq(st->ops->consumer_open(st, "ok-name", &cs), ND_OK);
    nd_store_close(st);
}

Test(filestore, destroy_removes_directory)
{
    nd_store_cfg_t c = cfg_of(1024, false);
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 100);
    nd_cstore_t *cs;
    cr_assert_eq(st->ops->consumer_open(st, "d", &cs), ND_OK);
    nd_consumer_state_t state = {.delivered_cseq = 3};
    cr_assert_eq(st->ops->consumer_update(cs, &state), ND_OK);
    cr_assert_eq(st->ops->destroy(st), ND_OK);
    struct stat sb;
    cr_assert_neq(stat(sdir, &sb), 0);
}

/* ---- compression and encryption at rest ---------------------------------------------------- */

static const uint8_t test_key[32] = "0123456789abcdef0123456789abcdef";

static bool
file_contains(const char *path, const void *needle, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t got = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return memmem(buf, got, needle, n) != NULL;
}

static void
xform_round_trip(nd_store_cipher_t cipher, nd_store_compression_t comp)
{
    nd_store_cfg_t c = cfg_of(4096, false);
    c.cipher = cipher;
    c.compression = comp;
    c.key = cipher != ND_CIPHER_NONE ? test_key : NULL;
    nd_store_t *st = open_ok(&c, NULL);
    build_mixed(st);
    /* A compressible message, and a secret to look for on disk. */
    char big[2000];
    memset(big, 'z', sizeof(big));
    memcpy(big, "SECRET-MARKER", 13);
    uint64_t bigseq;
    cr_assert_eq(nd_store_put(st, "big.one", 7, "H: v\r\n", 6, big, sizeof(big), &bigseq, NULL),
                 ND_OK);
    /* Truncate and store again: the reused sequences go to a new block (new salt). */
    cr_assert_eq(st->ops->truncate(st, bigseq - 3), ND_OK);
    put_n(st, 2);
    cr_assert_eq(nd_store_put(st, "big.one", 7, "H: v\r\n", 6, big, sizeof(big), &bigseq, NULL),
                 ND_OK);
    snap_t a, b, d;
    take(st, &a);
    nd_store_msg_t m = {0};
    cr_assert_eq(nd_store_load(st, bigseq, &m), ND_OK);
    cr_assert_eq(m.data_len, sizeof(big));
    cr_assert_eq(memcmp(m.data, big, sizeof(big)), 0);
    cr_assert_eq(m.hdr_len, 6);
    nd_store_close(st);

    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert(!rep.index_rebuilt);
    take(st, &b);
    same(&a, &b);
    check_all(st, &b);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, &rep);
    cr_assert(rep.index_rebuilt);
    cr_assert_eq(rep.records_dropped, 0);
    take(st, &d);
    same(&a, &d);
    check_all(st, &d);
    cr_assert_eq(nd_store_load(st, bigseq, &m), ND_OK);
    cr_assert_eq(memcmp(m.data, big, sizeof(big)), 0);
    nd_store_msg_free(&m);
    nd_store_close(st);

    /* On disk: no plaintext with a cipher; the long run of 'z' shrank with compression. */
    char p[256];
    path_of(p, sizeof(p), ND_FS_MSGS_DIR);
    DIR *dir = opendir(p);
    struct dirent *e;
    bool seen = false;
    while ((e = readdir(dir))) {
        if (!strstr(e->d_name, ND_FS_BLK_SUFFIX))
            continue;
        char f[512];
        snprintf(f, sizeof(f), "%s/%s", p, e->d_name);
        seen = seen || file_contains(f, "SECRET-MARKER", 13);
    }
    closedir(dir);
    if (cipher != ND_CIPHER_NONE)
        cr_assert(!seen, "plaintext found in a sealed store");
    else
        cr_assert(seen, "compressed records keep their plaintext prefix in LZ4 literals");
    free_snap(&a);
    free_snap(&b);
    free_snap(&d);
}

Test(filestore, compressed_round_trip)
{
    xform_round_trip(ND_CIPHER_NONE, ND_STORE_S2);
}

Test(filestore, aes_gcm_round_trip)
{
    xform_round_trip(ND_CIPHER_AES_GCM, ND_STORE_NONE);
}

Test(filestore, chacha_compressed_round_trip)
{
    xform_round_trip(ND_CIPHER_CHACHA, ND_STORE_S2);
}

Test(filestore, wrong_key_or_no_key)
{
    nd_store_cfg_t c = cfg_of(0, false);
    c.cipher = ND_CIPHER_AES_GCM;
    c.key = test_key;
    nd_store_t *st = open_ok(&c, NULL);
    put_n(st, 10);
    nd_store_close(st);
    /* Without the cipher the store refuses to open. */
    nd_store_cfg_t plain = cfg_of(0, false);
    nd_store_t *st2 = NULL;
    cr_assert_eq(nd_filestore_open(&plain, &st2, NULL), ND_ERR_STORE_BAD_ARG);
    c.key = NULL;
    cr_assert_eq(nd_filestore_open(&c, &st2, NULL), ND_ERR_STORE_BAD_ARG);
    /* With another key nothing opens: refused, with or without the index, and nothing is
     * lost for the right key. */
    uint8_t other[32];
    memcpy(other, test_key, 32);
    other[0] ^= 1;
    c.key = other;
    cr_assert_eq(nd_filestore_open(&c, &st2, NULL), ND_ERR_STORE_CORRUPT);
    remove_index();
    cr_assert_eq(nd_filestore_open(&c, &st2, NULL), ND_ERR_STORE_CORRUPT);
    c.key = test_key;
    nd_store_recovery_t rep;
    st = open_ok(&c, &rep);
    cr_assert_eq(rep.msgs, 10);
    cr_assert_eq(rep.records_dropped, 0);
    nd_store_close(st);
}

/* ---- every intermediate state is recoverable from the blocks alone -------------------------- */

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t
rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* After each random operation the directory is copied (what a crash right then would leave,
 * as everything was written), and each copy, opened without its index, must show exactly the
 * state the store had at that moment. Small blocks make rollovers, drops of emptied blocks,
 * compactions and carried tombstones frequent. */
static void
random_ops_recoverable(bool always)
{
    nd_store_cfg_t c = cfg_of(600, always);
    c.max_msgs_per_subject = 5;
    /* ND_FS_SEED picks another sequence of operations (for longer runs by hand). */
    const char *seed = getenv("ND_FS_SEED");
    if (seed)
        rnd_state = strtoull(seed, NULL, 10) * 2654435761u + 1;
    const char *bs = getenv("ND_FS_BLOCK");
    if (bs)
        c.block_size = strtoull(bs, NULL, 10);
    nd_store_t *st = open_ok(&c, NULL);
    enum { NOPS = 120 };
    snap_t want[NOPS];
    for (int op = 0; op < NOPS; op++) {
        nd_store_state_t s;
        nd_store_state(st, &s);
        uint64_t r = rnd() % 100, purged;
        if (r < 55 || s.msgs < 5) {
            put_n(st, 1 + rnd() % 4);
        } else if (r < 75) {
            uint64_t seq = s.first_seq + rnd() % (s.last_seq - s.first_seq + 1);
            nd_err_t e = st->ops->remove(st, seq, rnd() % 4 == 0);
            cr_assert(e == ND_OK || e == ND_ERR_STORE_NOT_FOUND);
        } else if (r < 82) {
            cr_assert_eq(st->ops->compact(st, s.first_seq + rnd() % 5, &purged), ND_OK);
        } else if (r < 88) {
            char subj[32];
            snprintf(subj, sizeof(subj), "orders.%u", (unsigned)(rnd() % 7));
            cr_assert_eq(st->ops->purge(st, subj, strlen(subj), 0, rnd() % 2, &purged), ND_OK);
        } else if (r < 93) {
            uint64_t seq;
            cr_assert_eq(st->ops->skip(st, &seq), ND_OK);
        } else if (r < 97) {
            /* Truncate to a live message near the end. */
            nd_store_msg_t m = {0};
            if (st->ops->load_last(st, "orders.1", 8, &m) == ND_OK)
                cr_assert_eq(st->ops->truncate(st, m.seq), ND_OK);
            nd_store_msg_free(&m);
        } else {
            cr_assert_eq(st->ops->purge(st, NULL, 0, 0, 0, &purged), ND_OK);
        }
        if (!always)
            cr_assert_eq(st->ops->sync(st), ND_OK);
        take(st, &want[op]);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "cp -r %s %s/copy%d && rm -f %s/copy%d/%s", sdir, root, op, root,
                 op, ND_FS_INDEX_FILE);
        cr_assert_eq(system(cmd), 0);
    }
    nd_store_close(st);
    for (int op = 0; op < NOPS; op++) {
        char d[256];
        snprintf(d, sizeof(d), "%s/copy%d", root, op);
        nd_store_cfg_t cc = c;
        cc.dir = d;
        nd_store_recovery_t rep;
        nd_store_t *r = open_ok(&cc, &rep);
        cr_assert_eq(rep.records_dropped + rep.torn_tails + rep.blocks_corrupt, 0, "op %d", op);
        snap_t got;
        take(r, &got);
        same(&want[op], &got);
        nd_store_close(r);
        free_snap(&got);
        free_snap(&want[op]);
    }
}

Test(filestore, every_state_recoverable_always)
{
    random_ops_recoverable(true);
}

Test(filestore, every_state_recoverable_interval)
{
    rnd_state = 1234567;
    random_ops_recoverable(false);
}

/* ---- I/O failures at every point --------------------------------------------------------------
 */

/* Random operations with sync_always while the k-th write (or fsync) fails, for every k: the
 * calls that failed must leave no trace and the ones that succeeded must all be there, so the
 * directory, reopened without its index, shows exactly the store's state at that moment. */
static void
failure_points(int kind)
{
    const char *kmax_env = getenv("ND_FS_KMAX");
    long kmax = kmax_env ? atol(kmax_env) : 70;
    for (long k = 0; k < kmax; k++) {
        char d[256];
        snprintf(d, sizeof(d), "%s/fp%ld", root, k);
        nd_store_cfg_t c = cfg_of(700, true);
        c.dir = d;
        c.max_msgs_per_subject = 4;
        rnd_state = 99991 + (uint64_t)k;
        nd_store_t *st = open_ok(&c, NULL);
        nd_fs_fault_set(
            &(nd_fs_fault_t){.kind = kind, .err = kind == 1 ? ENOSPC : EIO, .after = k});
        int failed = 0;
        for (int op = 0; op < 60; op++) {
            nd_store_state_t s;
            nd_store_state(st, &s);
            uint64_t r = rnd() % 10, purged, seq;
            nd_err_t e;
            char subj[32], data[64];
            subj_of(s.last_seq + 1, subj, sizeof(subj));
            size_t dl = data_of(s.last_seq + 1, data);
            if (r < 6 || !s.msgs)
                e = nd_store_put(st, subj, strlen(subj), NULL, 0, data, dl, &seq, NULL);
            else if (r < 8)
                e = st->ops->remove(st, s.first_seq + rnd() % (s.last_seq - s.first_seq + 1),
                                    rnd() % 3 == 0);
            else if (r < 9)
                e = st->ops->compact(st, s.first_seq + 2, &purged);
            else
                e = st->ops->skip(st, &seq);
            cr_assert(e == ND_OK || e == ND_ERR_STORE_IO || e == ND_ERR_STORE_NOT_FOUND,
                      "k %ld op %d: %s", k, op, nd_strerror(e));
            if (e == ND_ERR_STORE_IO) {
                cr_assert_eq(nd_store_io_errno(st), kind == 1 ? ENOSPC : EIO);
                failed++;
            }
        }
        snap_t want, got;
        take(st, &want);
        nd_fs_fault_set(NULL);
        nd_store_close(st);
        char idx[300];
        snprintf(idx, sizeof(idx), "%s/%s", d, ND_FS_INDEX_FILE);
        unlink(idx);
        nd_store_recovery_t rep;
        st = open_ok(&c, &rep);
        take(st, &got);
        cr_assert_eq(rep.records_dropped, 0, "k %ld", k);
        cr_assert_eq(want.s.msgs, got.s.msgs, "k %ld (%d failed calls): msgs %lu, reopened %lu", k,
                     failed, (unsigned long)want.s.msgs, (unsigned long)got.s.msgs);
        cr_assert_eq(want.s.last_seq, got.s.last_seq, "k %ld: last %lu, reopened %lu", k,
                     (unsigned long)want.s.last_seq, (unsigned long)got.s.last_seq);
        same(&want, &got);
        check_all(st, &got);
        nd_store_close(st);
        free_snap(&want);
        free_snap(&got);
    }
}

Test(filestore, write_failure_at_every_point)
{
    failure_points(1);
}

Test(filestore, fsync_failure_at_every_point)
{
    failure_points(2);
}

/* ---- read-ahead and unfiltered counts --------------------------------------------------------
 * In-order loads are served from a read-ahead window (read_at in filestore.c). Each test below
 * first walks part of a block in order, so the window holds its bytes, then changes the files
 * in a way that moves, rewrites or removes those bytes, and checks every later load against a
 * model of what the store holds. A window that outlived its bytes shows up as a wrong payload
 * or as ERR_STORE_CORRUPT (a record header with another sequence). */

#define RA_MAX 8192
static char ra_model[RA_MAX][40]; /* the payload of each live sequence, "" when none */

static uint64_t
ra_put(nd_store_t *st, const char *tag)
{
    nd_store_state_t s;
    nd_store_state(st, &s);
    uint64_t seq = s.last_seq + 1, got;
    cr_assert_lt(seq, RA_MAX);
    char subj[16], data[40];
    snprintf(subj, sizeof(subj), "ra.%u", (unsigned)(seq % 3));
    int n = snprintf(data, sizeof(data), "%s-%lu-%.*s", tag, (unsigned long)seq, (int)(seq % 13),
                     "xxxxxxxxxxxxx");
    cr_assert_eq(nd_store_put(st, subj, strlen(subj), NULL, 0, data, (size_t)n, &got, NULL), ND_OK);
    cr_assert_eq(got, seq);
    memcpy(ra_model[seq], data, (size_t)n + 1);
    return seq;
}

static void
ra_put_n(nd_store_t *st, int n, const char *tag)
{
    for (int i = 0; i < n; i++)
        (void)ra_put(st, tag);
}

static void
ra_model_reset(void)
{
    memset(ra_model, 0, sizeof(ra_model));
}

/* Drops the model's sequences in [lo, hi]. */
static void
ra_model_drop(uint64_t lo, uint64_t hi)
{
    for (uint64_t s = lo; s <= hi && s < RA_MAX; s++)
        ra_model[s][0] = 0;
}

static void
ra_check_msg(const nd_store_msg_t *m)
{
    cr_assert_lt(m->seq, RA_MAX);
    cr_assert_neq(ra_model[m->seq][0], 0, "seq %lu is not live", (unsigned long)m->seq);
    cr_assert_eq(m->data_len, strlen(ra_model[m->seq]), "seq %lu", (unsigned long)m->seq);
    cr_assert_eq(memcmp(m->data, ra_model[m->seq], m->data_len), 0, "seq %lu: %.*s",
                 (unsigned long)m->seq, (int)m->data_len, (const char *)m->data);
    char subj[16];
    snprintf(subj, sizeof(subj), "ra.%u", (unsigned)(m->seq % 3));
    cr_assert_eq(m->subj_len, strlen(subj));
    cr_assert_eq(memcmp(m->subj, subj, m->subj_len), 0);
}

/* Loads [from, to] in order with load_next, checking each against the model and that nothing
 * live was skipped. */
static void
ra_walk(nd_store_t *st, uint64_t from, uint64_t to)
{
    nd_store_msg_t m = {0};
    uint64_t s = from;
    for (;;) {
        nd_err_t e = st->ops->load_next(st, ">", 1, s, &m);
        if (e == ND_ERR_STORE_EOF)
            break;
        cr_assert_eq(e, ND_OK, "load_next %lu: %s", (unsigned long)s, nd_strerror(e));
        if (m.seq > to)
            break;
        for (uint64_t k = s; k < m.seq && k < RA_MAX; k++)
            cr_assert_eq(ra_model[k][0], 0, "live seq %lu skipped", (unsigned long)k);
        ra_check_msg(&m);
        s = m.seq + 1;
    }
    for (uint64_t k = s; k <= to && k < RA_MAX; k++)
        cr_assert_eq(ra_model[k][0], 0, "live seq %lu missing", (unsigned long)k);
    nd_store_msg_free(&m);
}

static nd_filestore_t *
fs_of(nd_store_t *st)
{
    return (nd_filestore_t *)st;
}

/* The window refers only to a block the store still has, and only to bytes below its wsize
 * (a freed block's address may be given to the next one, so a dangling window could serve a
 * later block's reads). */
static void
ra_window_sane(nd_store_t *st)
{
    nd_filestore_t *fs = fs_of(st);
    bool blk = !fs->ra_blk, last = !fs->ra_last_blk;
    for (size_t i = 0; i < fs->nblks; i++) {
        blk = blk || fs->blks[i] == fs->ra_blk;
        last = last || fs->blks[i] == fs->ra_last_blk;
    }
    cr_assert(blk, "the read-ahead window refers to a block the store no longer has");
    cr_assert(last, "the in-order tracking refers to a block the store no longer has");
    if (fs->ra_blk)
        cr_assert_leq(fs->ra_off + fs->ra_len, fs->ra_blk->wsize);
}

/* Every sequence by load (in order too), then the whole stream by load_next. */
static void
ra_check_all(nd_store_t *st)
{
    ra_window_sane(st);
    nd_store_msg_t m = {0};
    for (uint64_t s = 1; s < RA_MAX; s++) {
        nd_err_t e = nd_store_load(st, s, &m);
        if (ra_model[s][0]) {
            cr_assert_eq(e, ND_OK, "load %lu: %s", (unsigned long)s, nd_strerror(e));
            ra_check_msg(&m);
        } else {
            cr_assert_neq(e, ND_OK, "seq %lu loads but was removed", (unsigned long)s);
        }
    }
    nd_store_msg_free(&m);
    ra_walk(st, 0, RA_MAX);
}

/* The first live sequence of the model (0 when none). */
static uint64_t
ra_model_first(void)
{
    for (uint64_t s = 1; s < RA_MAX; s++)
        if (ra_model[s][0])
            return s;
    return 0;
}

Test(filestore, readahead_serves_in_order_loads_and_sees_appends)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 1500, "a");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_walk(st, 1, 700);
    cr_assert_not_null(fs_of(st)->ra_blk, "in-order loads fill the window");
    /* Appends: some buffered, some flushed past the window's end. */
    ra_put_n(st, 300, "b");
    ra_walk(st, 700, RA_MAX);
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_put_n(st, 300, "c");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_check_all(st);
    nd_store_close(st);
    /* After a reopen every byte comes from the files. */
    st = open_ok(&c, NULL);
    ra_check_all(st);
    nd_store_close(st);
}

Test(filestore, readahead_dropped_by_compaction)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(16384, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 1500, "a");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    cr_assert_gt(fs_of(st)->nblks, 3);
    nd_fs_blk_t *b1 = fs_of(st)->blks[0];
    uint64_t last1 = nd_fs_blk_last(b1);
    ra_walk(st, 1, 40);
    cr_assert_eq(fs_of(st)->ra_blk, b1);
    /* Most of block 1 goes (not its first message: TOMBs), so maintain() rewrites it and
     * every record left moves. */
    for (uint64_t s = 2; s <= last1; s++) {
        if (s % 8 == 0)
            continue;
        cr_assert_eq(st->ops->remove(st, s, false), ND_OK);
        ra_model_drop(s, s);
    }
    cr_assert_lt(fs_of(st)->blks[0]->size, 16384 / 2, "block 1 was compacted");
    ra_check_all(st);
    nd_store_close(st);
    remove_index();
    st = open_ok(&c, NULL);
    ra_check_all(st);
    nd_store_close(st);
}

Test(filestore, readahead_dropped_by_truncate)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(16384, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 1500, "a");
    cr_assert_eq(st->ops->remove(st, 600, false), ND_OK);
    ra_model_drop(600, 600);
    cr_assert_eq(st->ops->flush(st), ND_OK);
    /* The window covers the cut point and well past it. */
    ra_walk(st, 590, 640);
    cr_assert_not_null(fs_of(st)->ra_blk);
    cr_assert_eq(st->ops->truncate(st, 610), ND_OK);
    ra_model_drop(611, RA_MAX - 1);
    /* The sequences after the cut come back with other payloads, in the rewritten block. */
    ra_put_n(st, 40, "second");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_walk(st, 590, RA_MAX);
    ra_check_all(st);
    nd_store_close(st);
}

Test(filestore, readahead_dropped_with_its_block)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(4096, false);
    nd_store_t *st = open_ok(&c, NULL);
    for (int round = 0; round < 3; round++) {
        ra_put_n(st, 300, round == 0 ? "a" : round == 1 ? "b" : "c");
        cr_assert_eq(st->ops->flush(st), ND_OK);
        uint64_t first = ra_model_first();
        nd_fs_blk_t *b1 = fs_of(st)->blks[0];
        uint64_t last1 = nd_fs_blk_last(b1);
        ra_walk(st, first, first + 20);
        cr_assert_eq(fs_of(st)->ra_blk, b1);
        /* The front block's messages go: the block is dropped (freed), and the blocks made
         * next may well get its address. */
        uint64_t purged;
        cr_assert_eq(st->ops->compact(st, last1 + 1, &purged), ND_OK);
        ra_model_drop(1, last1);
        cr_assert_neq(fs_of(st)->blks[0], b1, "the front block was dropped");
        ra_window_sane(st);
        ra_put_n(st, 200, "d");
        cr_assert_eq(st->ops->flush(st), ND_OK);
        ra_check_all(st);
    }
    /* Purge everything: every block goes at once. */
    ra_walk(st, ra_model_first(), ra_model_first() + 20);
    uint64_t purged;
    cr_assert_eq(st->ops->purge(st, ">", 1, 0, 0, &purged), ND_OK);
    ra_window_sane(st);
    ra_model_reset();
    ra_put_n(st, 300, "e");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_check_all(st);
    nd_store_close(st);
}

Test(filestore, readahead_forgets_securely_erased_bytes)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 100, "a");
    const char *secret = "TOP-SECRET-PAYLOAD";
    uint64_t seq;
    cr_assert_eq(nd_store_put(st, "s", 1, NULL, 0, secret, strlen(secret), &seq, NULL), ND_OK);
    ra_put_n(st, 100, "b");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_walk(st, 1, 50);
    nd_filestore_t *fs = fs_of(st);
    cr_assert_not_null(fs->ra_blk);
    cr_assert_not_null(memmem(fs->ra_buf, fs->ra_len, secret, strlen(secret)));
    cr_assert_eq(st->ops->remove(st, seq, true), ND_OK);
    cr_assert(!fs->ra_blk || !memmem(fs->ra_buf, fs->ra_len, secret, strlen(secret)),
              "an erased message stays readable in the read-ahead window");
    ra_check_all(st);
    cr_assert(!fs->ra_blk || !memmem(fs->ra_buf, fs->ra_len, secret, strlen(secret)));
    nd_store_close(st);
}

static void
ra_transformed(nd_store_cipher_t cipher, nd_store_compression_t comp)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(8192, false);
    c.cipher = cipher;
    c.compression = comp;
    c.key = cipher != ND_CIPHER_NONE ? test_key : NULL;
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 800, "a");
    for (uint64_t s = 5; s < 800; s += 7) {
        cr_assert_eq(st->ops->remove(st, s, s % 2 == 0), ND_OK);
        ra_model_drop(s, s);
    }
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_check_all(st);
    cr_assert_eq(st->ops->truncate(st, 700), ND_OK);
    ra_model_drop(701, RA_MAX - 1);
    ra_put_n(st, 50, "b");
    ra_check_all(st);
    nd_store_close(st);
    st = open_ok(&c, NULL);
    ra_check_all(st);
    cr_assert_eq(st->ops->destroy(st), ND_OK);
}

Test(filestore, readahead_sealed_and_compressed)
{
    ra_transformed(ND_CIPHER_CHACHA, ND_STORE_S2);
    ra_transformed(ND_CIPHER_AES_GCM, ND_STORE_NONE);
    ra_transformed(ND_CIPHER_NONE, ND_STORE_S2);
}

Test(filestore, readahead_window_freed_when_idle)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 500, "a");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    ra_walk(st, 1, 200);
    cr_assert_not_null(fs_of(st)->ra_buf);
    (void)st->ops->tick(st, fake_clock);
    cr_assert_not_null(fs_of(st)->ra_buf, "used since the last tick: kept");
    (void)st->ops->tick(st, fake_clock);
    cr_assert_null(fs_of(st)->ra_buf, "idle for a whole tick: freed");
    cr_assert_null(fs_of(st)->ra_blk);
    ra_check_all(st);
    nd_store_close(st);
}

/* Loads that do not go forward do not read ahead: each is one exact read, as before. */
Test(filestore, readahead_not_used_by_random_loads)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(0, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 3000, "a");
    cr_assert_eq(st->ops->flush(st), ND_OK);
    nd_store_msg_t m = {0};
    for (uint64_t k = 0; k < 200; k++) {
        uint64_t s = 3000 - k * 13;
        cr_assert_eq(nd_store_load(st, s, &m), ND_OK);
        ra_check_msg(&m);
    }
    nd_store_msg_free(&m);
    cr_assert_null(fs_of(st)->ra_buf);
    nd_store_close(st);
}

/* Random operations with in-order walks between them, against the model. */
Test(filestore, readahead_random_ops_match_model)
{
    for (int pol = 0; pol < 2; pol++) {
        ra_model_reset();
        nd_store_cfg_t c = cfg_of(2048, pol == 1);
        nd_store_t *st = open_ok(&c, NULL);
        rnd_state = 4242 + (uint64_t)pol;
        for (int op = 0; op < 600; op++) {
            nd_store_state_t s;
            nd_store_state(st, &s);
            uint64_t r = rnd() % 20, purged;
            if (s.last_seq > RA_MAX - 50) {
                cr_assert_eq(st->ops->purge(st, ">", 1, 0, 0, &purged), ND_OK);
                ra_model_reset();
                continue;
            }
            if (r < 8 || !s.msgs) {
                ra_put_n(st, 1 + (int)(rnd() % 10), "p");
            } else if (r < 11) {
                uint64_t v = s.first_seq + rnd() % (s.last_seq - s.first_seq + 1);
                nd_err_t e = st->ops->remove(st, v, rnd() % 2 == 0);
                cr_assert(e == ND_OK || e == ND_ERR_STORE_NOT_FOUND);
                ra_model_drop(v, v);
            } else if (r < 12) {
                uint64_t v = s.first_seq + rnd() % 8;
                cr_assert_eq(st->ops->compact(st, v, &purged), ND_OK);
                if (v > 1)
                    ra_model_drop(1, v - 1);
            } else if (r < 13) {
                uint64_t v = s.first_seq + rnd() % (s.last_seq - s.first_seq + 1);
                if (ra_model[v][0]) {
                    cr_assert_eq(st->ops->truncate(st, v), ND_OK);
                    ra_model_drop(v + 1, RA_MAX - 1);
                }
            } else if (r < 14) {
                cr_assert_eq(st->ops->flush(st), ND_OK);
            } else if (r < 15) {
                fake_clock += 1000;
                (void)st->ops->tick(st, fake_clock);
            } else {
                uint64_t from = s.first_seq + rnd() % (s.last_seq - s.first_seq + 1);
                ra_walk(st, from, from + rnd() % 200);
            }
            ra_window_sane(st);
        }
        ra_check_all(st);
        nd_store_close(st);
        st = open_ok(&c, NULL);
        ra_check_all(st);
        cr_assert_eq(st->ops->destroy(st), ND_OK);
    }
}

/* filtered_state without a filter (and with one that covers every subject) counts from the
 * block counters; it must agree with a walk of the model from every start. */
static void
ra_check_counts(nd_store_t *st)
{
    nd_store_state_t s;
    nd_store_state(st, &s);
    static const char *filters[] = {">", "ra.*", "ra.>", "ra.1", "ra.*.x"};
    for (uint64_t start = 0; start <= s.last_seq + 2; start++) {
        for (size_t f = 0; f < sizeof(filters) / sizeof(filters[0]); f++) {
            uint64_t n = 0, first = 0, last = 0;
            for (uint64_t k = start ? start : 1; k <= s.last_seq && k < RA_MAX; k++) {
                if (!ra_model[k][0] || (f == 3 && k % 3 != 1) || f == 4)
                    continue;
                n++;
                if (!first)
                    first = k;
                last = k;
            }
            nd_store_subj_state_t ss;
            st->ops->filtered_state(st, filters[f], strlen(filters[f]), start, &ss);
            cr_assert_eq(ss.msgs, n, "filter %s start %lu: %lu msgs, want %lu", filters[f],
                         (unsigned long)start, (unsigned long)ss.msgs, (unsigned long)n);
            if (n) {
                cr_assert_eq(ss.first_seq, first, "filter %s start %lu", filters[f],
                             (unsigned long)start);
                cr_assert_eq(ss.last_seq, last, "filter %s start %lu", filters[f],
                             (unsigned long)start);
            }
            cr_assert_eq(st->ops->num_pending(st, filters[f], strlen(filters[f]), start, false), n);
        }
        nd_store_subj_state_t ss;
        st->ops->filtered_state(st, NULL, 0, start, &ss);
        nd_store_subj_state_t all;
        st->ops->filtered_state(st, ">", 1, start, &all);
        cr_assert_eq(ss.msgs, all.msgs);
    }
}

Test(filestore, unfiltered_counts_from_block_counters)
{
    ra_model_reset();
    nd_store_cfg_t c = cfg_of(1024, false);
    nd_store_t *st = open_ok(&c, NULL);
    ra_put_n(st, 400, "a");
    ra_check_counts(st);
    /* Holes: single ones, a run inside a block, a whole block, the first messages. */
    for (uint64_t s = 3; s < 400; s += 11) {
        cr_assert_eq(st->ops->remove(st, s, false), ND_OK);
        ra_model_drop(s, s);
    }
    for (uint64_t s = 100; s < 160; s++) {
        if (ra_model[s][0]) {
            cr_assert_eq(st->ops->remove(st, s, false), ND_OK);
            ra_model_drop(s, s);
        }
    }
    ra_check_counts(st);
    uint64_t purged;
    cr_assert_eq(st->ops->compact(st, 20, &purged), ND_OK);
    ra_model_drop(1, 19);
    uint64_t skipped;
    cr_assert_eq(st->ops->skip(st, &skipped), ND_OK);
    ra_put_n(st, 30, "b");
    ra_check_counts(st);
    nd_store_close(st);
}
