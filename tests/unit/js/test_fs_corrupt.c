/* File store recovery from damaged files, with exact expectations (reliability spec ):
 * bit flips in a record's body, header and checksum lose exactly that record; a cut anywhere in
 * the last record is a torn tail; zeroed ranges lose the records they touch and nothing else;
 * a missing or damaged index is rebuilt to the same state; a newer format version is refused;
 * garbage, empty blocks and a directory that is a file neither crash nor hang.
 *
 * Offsets come from the documented format (src/js/store/filestore.h): a block is a 48-byte header
 * followed by records of a 40-byte header, the body (subject, headers, payload) and an 8-byte
 * XXH64 of header + body. Records are walked with nd_fs_rec_header so that the test follows
 * the codec, and the damage is done with plain file I/O.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "js/store/filestore.h"
#include "js/store/fs_crypt.h"
#include "js/store/store.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static char tmp_root[256];
static char sdir[300];

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
    if (rmdir(path) != 0 && errno == ENOTDIR)
        unlink(path);
}

static void
setup(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmp_root, sizeof(tmp_root), "%s/ndfscorrupt-XXXXXX", t ? t : "/tmp");
    cr_assert_not_null(mkdtemp(tmp_root));
    snprintf(sdir, sizeof(sdir), "%s/stream", tmp_root);
}

static void
teardown(void)
{
    rm_rf(tmp_root);
}

TestSuite(fs_corrupt, .init = setup, .fini = teardown, .timeout = 120);

static nd_store_cfg_t
cfg_for(uint64_t block_size)
{
    nd_store_cfg_t c;
    memset(&c, 0, sizeof(c));
    c.max_msgs = -1;
    c.max_bytes = -1;
    c.max_msgs_per_subject = -1;
    c.max_msg_size = -1;
    c.dir = sdir;
    c.block_size = block_size;
    return c;
}

static int
subj_of(uint64_t seq, char *buf, size_t cap)
{
    return snprintf(buf, cap, "corrupt.%u", (unsigned)(seq % 4));
}

static size_t
data_of(uint64_t seq, uint8_t *buf)
{
    size_t n = 20 + (size_t)(seq * 7 % 50);
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(seq * 31 + i);
    return n;
}

/* Creates a store of n messages (seq 1..n) in sdir and closes it. */
static void
make_store(uint64_t n, uint64_t block_size)
{
    nd_store_cfg_t c = cfg_for(block_size);
    nd_store_t *st = NULL;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    char subj[32];
    uint8_t data[128];
    for (uint64_t s = 1; s <= n; s++) {
        int sl = subj_of(s, subj, sizeof(subj));
        size_t dl = data_of(s, data);
        uint64_t seq;
        int64_t ts;
        const char *hdr = (s % 5 == 0) ? "NATS/1.0\r\nX: y\r\n\r\n" : NULL;
        cr_assert_eq(
            nd_store_put(st, subj, (size_t)sl, hdr, hdr ? strlen(hdr) : 0, data, dl, &seq, &ts),
            ND_OK);
        cr_assert_eq(seq, s);
    }
    nd_store_close(st);
}

/* The block files, ascending by index. */
typedef struct blocks {
    char path[64][700];
    uint32_t idx[64];
    int n;
} blocks_t;

static void
list_blocks(blocks_t *b)
{
    char md[400];
    snprintf(md, sizeof(md), "%s/%s", sdir, ND_FS_MSGS_DIR);
    DIR *d = opendir(md);
    cr_assert_not_null(d, "no %s", md);
    b->n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), sl = strlen(ND_FS_BLK_SUFFIX);
        if (l <= sl || strcmp(e->d_name + l - sl, ND_FS_BLK_SUFFIX) != 0)
            continue;
        cr_assert_lt(b->n, 64);
        b->idx[b->n] = (uint32_t)strtoul(e->d_name, NULL, 10);
        snprintf(b->path[b->n], sizeof(b->path[0]), "%s/%s", md, e->d_name);
        b->n++;
    }
    closedir(d);
    for (int i = 1; i < b->n; i++) /* insertion sort by index */
        for (int j = i; j > 0 && b->idx[j] < b->idx[j - 1]; j--) {
            uint32_t t = b->idx[j];
            b->idx[j] = b->idx[j - 1];
            b->idx[j - 1] = t;
            char tp[700];
            memcpy(tp, b->path[j], sizeof(tp));
            memcpy(b->path[j], b->path[j - 1], sizeof(tp));
            memcpy(b->path[j - 1], tp, sizeof(tp));
        }
}

static uint8_t *
read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)sz + 1);
    cr_assert_eq(fread(p, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return p;
}

static void
write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "create %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void
index_path(char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", sdir, ND_FS_INDEX_FILE);
}

/* The MSG records of a block file: offset, length, seq (control records, e.g. the MARK that may
 * open a block, are skipped but counted in nall). */
typedef struct recs {
    size_t off[4096], len[4096];
    uint64_t seq[4096];
    int n, nall;
    size_t end; /* the offset after the last record */
} recs_t;

static recs_t g_recs;

static recs_t *
walk(const char *path)
{
    size_t n;
    uint8_t *p = read_file(path, &n);
    recs_t *r = &g_recs;
    r->n = 0;
    r->nall = 0;
    cr_assert_geq(n, ND_FS_BLK_HDR_LEN);
    size_t off = ND_FS_BLK_HDR_LEN;
    while (off < n) {
        nd_fs_rec_t rec;
        int h = nd_fs_rec_header(p + off, n - off, &rec);
        cr_assert_eq(h, 1, "no record header at %zu of %s", off, path);
        cr_assert_leq(off + rec.len, n);
        cr_assert(nd_fs_rec_verify(p + off, &rec));
        r->nall++;
        if (rec.kind == ND_FS_REC_MSG) {
            cr_assert_lt(r->n, 4096);
            r->off[r->n] = off;
            r->len[r->n] = rec.len;
            r->seq[r->n] = rec.seq;
            r->n++;
        }
        off += rec.len;
    }
    r->end = off;
    free(p);
    return r;
}

static void
flip(const char *path, size_t off, uint8_t mask)
{
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= mask;
    cr_assert_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

static void
zero_range(const char *path, size_t off, size_t len)
{
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t *z = calloc(1, len);
    cr_assert_eq(pwrite(fd, z, len, (off_t)off), (ssize_t)len);
    free(z);
    close(fd);
}

static void
truncate_to(const char *path, size_t len)
{
    cr_assert_eq(truncate(path, (off_t)len), 0);
}

/* Opens the store and checks: exactly the seqs in [1, n] except those in `lost` load, with
 * their content, and the state agrees. Returns the recovery report. */
static nd_store_recovery_t
expect_store(uint64_t n, const uint64_t *lost, size_t nlost, uint64_t block_size)
{
    nd_store_cfg_t c = cfg_for(block_size);
    nd_store_t *st = NULL;
    nd_store_recovery_t rep;
    memset(&rep, 0, sizeof(rep));
    nd_err_t rc = nd_filestore_open(&c, &st, &rep);
    cr_assert_eq(rc, ND_OK, "open: %s", nd_strerror(rc));
    nd_store_msg_t m;
    memset(&m, 0, sizeof(m));
    uint64_t count = 0, bytes = 0, lo = 0;
    for (uint64_t s = 1; s <= n + 1; s++) {
        bool want = s <= n;
        for (size_t i = 0; i < nlost; i++)
            if (lost[i] == s)
                want = false;
        rc = nd_store_load(st, s, &m);
        if (!want) {
            cr_assert(rc == ND_ERR_STORE_NOT_FOUND || rc == ND_ERR_STORE_EOF,
                      "seq %" PRIu64 " should be lost, load gave %s", s, nd_strerror(rc));
            continue;
        }
        cr_assert_eq(rc, ND_OK, "seq %" PRIu64 " should be kept: %s", s, nd_strerror(rc));
        char subj[32];
        uint8_t data[128];
        int sl = subj_of(s, subj, sizeof(subj));
        size_t dl = data_of(s, data);
        cr_assert_eq(m.seq, s);
        cr_assert_eq(m.subj_len, (size_t)sl);
        cr_assert_eq(memcmp(m.subj, subj, (size_t)sl), 0);
        cr_assert_eq(m.data_len, dl, "seq %" PRIu64 " data_len", s);
        cr_assert_eq(memcmp(m.data, data, dl), 0);
        cr_assert_eq(m.hdr_len, (s % 5 == 0) ? strlen("NATS/1.0\r\nX: y\r\n\r\n") : 0);
        count++;
        bytes += nd_store_msg_size(m.subj_len, m.hdr_len, m.data_len);
        if (lo == 0)
            lo = s;
    }
    nd_store_msg_free(&m);
    nd_store_state_t ss;
    nd_store_state(st, &ss);
    cr_assert_eq(ss.msgs, count, "state.msgs %" PRIu64 " loadable %" PRIu64, ss.msgs, count);
    cr_assert_eq(ss.bytes, bytes);
    cr_assert_eq(rep.msgs, count, "report.msgs %" PRIu64 " loadable %" PRIu64, rep.msgs, count);
    if (count)
        cr_assert_eq(ss.first_seq, lo);
    nd_store_close(st);
    return rep;
}

#define N 40

/* ---- bit flips ---------------------------------------------------------------------------- */

/* One flip in a middle record's body, then in its checksum: exactly that record is lost. */
Test(fs_corrupt, body_flip_loses_one_record)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    cr_assert_eq(b.n, 1);
    recs_t *r = walk(b.path[0]);
    cr_assert_eq(r->n, N);
    int i = N / 2;
    /* The last byte of the payload. */
    flip(b.path[0], r->off[i] + r->len[i] - ND_FS_REC_SUM_LEN - 1, 0x10);
    uint64_t lost = r->seq[i];
    nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
    cr_assert_eq(rep.records_dropped, 1);
    cr_assert_eq(rep.blocks_corrupt, 1);
    cr_assert_eq(rep.torn_tails, 0);
    cr_assert_geq(rep.bytes_dropped, r->len[i]);
}

Test(fs_corrupt, subject_flip_loses_one_record)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    int i = 3;
    flip(b.path[0], r->off[i] + ND_FS_REC_HDR_LEN, 0x01);
    uint64_t lost = r->seq[i];
    nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
    cr_assert_eq(rep.records_dropped, 1);
    cr_assert_eq(rep.blocks_corrupt, 1);
}

Test(fs_corrupt, checksum_flip_loses_one_record)
{
    for (int k = 0; k < (int)ND_FS_REC_SUM_LEN; k++) {
        rm_rf(sdir);
        make_store(N, 0);
        blocks_t b;
        list_blocks(&b);
        recs_t *r = walk(b.path[0]);
        int i = 7 + k;
        flip(b.path[0], r->off[i] + r->len[i] - ND_FS_REC_SUM_LEN + (size_t)k, 0x80);
        uint64_t lost = r->seq[i];
        nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
        cr_assert_eq(rep.records_dropped, 1, "checksum byte %d", k);
        cr_assert_eq(rep.blocks_corrupt, 1);
    }
}

/* Every byte of a middle record's 40-byte header, one bit each: the header checksum (or the
 * magic, kind or zero word) catches it, recovery resynchronises on the next record, and only
 * that record is lost. */
Test(fs_corrupt, header_flip_every_byte_loses_one_record)
{
    for (int k = 0; k < (int)ND_FS_REC_HDR_LEN; k++) {
        rm_rf(sdir);
        make_store(N, 0);
        blocks_t b;
        list_blocks(&b);
        recs_t *r = walk(b.path[0]);
        int i = 10;
        /* Vary the bit too, so length fields get both small and large changes. */
        flip(b.path[0], r->off[i] + (size_t)k, (uint8_t)(1u << (k % 8)));
        uint64_t lost = r->seq[i];
        nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
        cr_assert_eq(rep.records_dropped, 1, "header byte %d: dropped %" PRIu64, k,
                     rep.records_dropped);
        cr_assert_eq(rep.blocks_corrupt, 1, "header byte %d", k);
        cr_assert_eq(rep.torn_tails, 0, "header byte %d", k);
    }
}

/* The first record of a block is damaged: the rest of the block still recovers. */
Test(fs_corrupt, first_record_flip)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    flip(b.path[0], r->off[0] + 20, 0x04); /* inside seq */
    uint64_t lost = 1;
    nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
    cr_assert_eq(rep.records_dropped, 1);
}

/* ---- torn tails --------------------------------------------------------------------------- */

/* A cut at every byte offset inside the last record: the records before it are kept, the
 * report says one torn tail, and the store appends cleanly after recovery (the next message
 * gets the lost sequence and is readable after another reopen). */
Test(fs_corrupt, truncation_at_every_offset_of_last_record)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    cr_assert_eq(r->n, N);
    size_t last_off = r->off[N - 1], last_len = r->len[N - 1];
    size_t fsz;
    uint8_t *orig = read_file(b.path[0], &fsz);
    cr_assert_eq(fsz, last_off + last_len, "the last message is not the block's last record");
    char idx[400];
    index_path(idx, sizeof(idx));
    for (size_t cut = last_off; cut < last_off + last_len; cut++) {
        write_file(b.path[0], orig, fsz);
        truncate_to(b.path[0], cut);
        uint64_t lost = N;
        nd_store_recovery_t rep = expect_store(N, &lost, 1, 0);
        cr_assert_eq(rep.records_dropped, 0, "cut at %zu", cut);
        cr_assert_eq(rep.torn_tails, cut == last_off ? 0 : 1, "cut at %zu: torn %" PRIu64, cut,
                     rep.torn_tails);
        cr_assert_eq(rep.bytes_dropped, cut - last_off, "cut at %zu", cut);
        cr_assert_eq(rep.blocks_corrupt, 0, "cut at %zu", cut);

        /* Appending after a torn tail must not leave the garbage in front of the new record. */
        nd_store_cfg_t c = cfg_for(0);
        nd_store_t *st;
        cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
        char subj[32];
        uint8_t data[128];
        int sl = subj_of(N, subj, sizeof(subj));
        size_t dl = data_of(N, data);
        uint64_t seq;
        int64_t ts;
        const char *hdr = (N % 5 == 0) ? "NATS/1.0\r\nX: y\r\n\r\n" : NULL;
        cr_assert_eq(
            nd_store_put(st, subj, (size_t)sl, hdr, hdr ? strlen(hdr) : 0, data, dl, &seq, &ts),
            ND_OK);
        cr_assert_eq(seq, N, "cut at %zu: the next message got seq %" PRIu64, cut, seq);
        nd_store_close(st);
        unlink(idx); /* force a scan of the blocks, not a read of the index */
        rep = expect_store(N, NULL, 0, 0);
        cr_assert_eq(rep.records_dropped + rep.torn_tails, 0,
                     "cut at %zu: appended record "
                     "followed garbage",
                     cut);
    }
    free(orig);
}

/* A cut inside the block header of the only block. */
Test(fs_corrupt, truncation_inside_block_header)
{
    make_store(5, 0);
    blocks_t b;
    list_blocks(&b);
    for (size_t cut = 0; cut < ND_FS_BLK_HDR_LEN; cut += 7) {
        size_t fsz;
        uint8_t *orig = read_file(b.path[0], &fsz);
        truncate_to(b.path[0], cut);
        nd_store_cfg_t c = cfg_for(0);
        nd_store_t *st = NULL;
        nd_store_recovery_t rep;
        nd_err_t rc = nd_filestore_open(&c, &st, &rep);
        /* Either recovered as empty or refused with a clear error; never a crash. */
        cr_assert(rc == ND_OK || rc == ND_ERR_STORE_CORRUPT, "cut %zu: %s", cut, nd_strerror(rc));
        if (rc == ND_OK) {
            nd_store_state_t ss;
            nd_store_state(st, &ss);
            cr_assert_eq(ss.msgs, 0);
            nd_store_close(st);
        }
        write_file(b.path[0], orig, fsz);
        free(orig);
        char idx[400];
        index_path(idx, sizeof(idx));
        unlink(idx);
    }
}

/* ---- zeroed ranges ----------------------------------------------------------------------- */

/* Zeros from the middle of record i to the middle of record i + 2: those three are lost,
 * everything before and after is kept. */
Test(fs_corrupt, zeroed_range_spanning_records)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    int i = 12;
    size_t from = r->off[i] + r->len[i] / 2;
    size_t to = r->off[i + 2] + r->len[i + 2] / 2;
    zero_range(b.path[0], from, to - from);
    uint64_t lost[3] = {r->seq[i], r->seq[i + 1], r->seq[i + 2]};
    nd_store_recovery_t rep = expect_store(N, lost, 3, 0);
    cr_assert_geq(rep.records_dropped, 1);
    cr_assert_leq(rep.records_dropped, 3);
    cr_assert_eq(rep.blocks_corrupt, 1);
    cr_assert_eq(rep.torn_tails, 0);
}

/* A zeroed tail (a file extended by the kernel but never written: ext4 after a power loss). */
Test(fs_corrupt, zeroed_tail)
{
    make_store(N, 0);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    int i = N - 3;
    size_t fsz;
    free(read_file(b.path[0], &fsz));
    zero_range(b.path[0], r->off[i], fsz - r->off[i]);
    uint64_t lost[3] = {N - 2, N - 1, N};
    nd_store_recovery_t rep = expect_store(N, lost, 3, 0);
    cr_assert_eq(rep.records_dropped + rep.torn_tails,
                 rep.records_dropped ? rep.records_dropped : 1);
    cr_assert_geq(rep.bytes_dropped, fsz - r->off[i]);
}

/* ---- several blocks ---------------------------------------------------------------------- */

/* Damage in one block of several: only that block's record is lost. */
Test(fs_corrupt, flip_in_middle_block)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    cr_assert_geq(b.n, 3, "block_size 512 should give several blocks, got %d", b.n);
    recs_t *r = walk(b.path[1]);
    cr_assert_gt(r->n, 0);
    int i = r->n / 2;
    flip(b.path[1], r->off[i] + r->len[i] - 1, 0x02);
    uint64_t lost = r->seq[i];
    nd_store_recovery_t rep = expect_store(N, &lost, 1, 512);
    cr_assert_eq(rep.records_dropped, 1);
    cr_assert_eq(rep.blocks_corrupt, 1);
}

/* A middle block replaced by random bytes: its messages are lost, the other blocks' are kept
 * (or the open is refused with ERR_CORRUPT); never a crash. */
Test(fs_corrupt, block_replaced_by_garbage)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    cr_assert_geq(b.n, 3);
    recs_t *r = walk(b.path[1]);
    uint64_t lost[64];
    size_t nlost = 0;
    for (int i = 0; i < r->n; i++)
        lost[nlost++] = r->seq[i];
    size_t fsz;
    free(read_file(b.path[1], &fsz));
    uint8_t *g = malloc(fsz);
    uint64_t x = 0x1234567;
    for (size_t i = 0; i < fsz; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        g[i] = (uint8_t)(x >> 56);
    }
    write_file(b.path[1], g, fsz);
    free(g);
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st = NULL;
    nd_store_recovery_t rep;
    nd_err_t rc = nd_filestore_open(&c, &st, &rep);
    cr_assert(rc == ND_OK || rc == ND_ERR_STORE_CORRUPT, "%s", nd_strerror(rc));
    if (rc == ND_OK) {
        cr_assert_geq(rep.blocks_corrupt, 1);
        cr_assert_eq(rep.msgs, N - nlost);
        nd_store_close(st);
        expect_store(N, lost, nlost, 512);
    }
}

/* An empty block file (created, never written: a crash right after the rollover). */
Test(fs_corrupt, empty_block_file)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    char p[500];
    snprintf(p, sizeof(p), "%s/%s/%u%s", sdir, ND_FS_MSGS_DIR, b.idx[b.n - 1] + 1,
             ND_FS_BLK_SUFFIX);
    write_file(p, "", 0);
    nd_store_recovery_t rep = expect_store(N, NULL, 0, 512);
    cr_assert_eq(rep.records_dropped, 0);
    cr_assert_eq(rep.blocks_corrupt, 0);
    /* And the store keeps working: the next message is N + 1 and survives a reopen. */
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    uint64_t seq;
    int64_t ts;
    cr_assert_eq(nd_store_put(st, "x", 1, NULL, 0, "y", 1, &seq, &ts), ND_OK);
    cr_assert_eq(seq, N + 1);
    nd_store_close(st);
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    nd_store_state_t ss;
    nd_store_state(st, &ss);
    cr_assert_eq(ss.msgs, N + 1);
    cr_assert_eq(ss.last_seq, N + 1);
    nd_store_close(st);
}

/* The only block truncated to 0 bytes (also a header-less block). */
Test(fs_corrupt, block_truncated_to_zero)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[b.n - 1]);
    uint64_t lost[64];
    size_t nlost = 0;
    for (int i = 0; i < r->n; i++)
        lost[nlost++] = r->seq[i];
    truncate_to(b.path[b.n - 1], 0);
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert(rc == ND_OK || rc == ND_ERR_STORE_CORRUPT, "%s", nd_strerror(rc));
    if (rc == ND_OK) {
        nd_store_close(st);
        expect_store(N, lost, nlost, 512);
    }
}

/* ---- the index --------------------------------------------------------------------------- */

/* Builds a store with gaps (removes, a purge of one subject) so the index has something to say,
 * and returns its state. */
static void
make_store_with_gaps(nd_store_state_t *out)
{
    make_store(N, 512);
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    cr_assert_eq(st->ops->remove(st, 5, false), ND_OK);
    cr_assert_eq(st->ops->remove(st, 17, true), ND_OK);
    cr_assert_eq(st->ops->remove(st, N, false), ND_OK);
    uint64_t purged;
    cr_assert_eq(st->ops->purge(st, "corrupt.3", 9, 0, 0, &purged), ND_OK);
    nd_store_state(st, out);
    nd_store_close(st);
}

static void
expect_same_state(const nd_store_state_t *want, bool rebuilt)
{
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    nd_store_recovery_t rep;
    cr_assert_eq(nd_filestore_open(&c, &st, &rep), ND_OK);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, want->msgs);
    cr_assert_eq(s.bytes, want->bytes);
    cr_assert_eq(s.first_seq, want->first_seq);
    cr_assert_eq(s.last_seq, want->last_seq, "last_seq %" PRIu64 " want %" PRIu64, s.last_seq,
                 want->last_seq);
    cr_assert_eq(s.num_deleted, want->num_deleted);
    cr_assert_eq(s.num_subjects, want->num_subjects);
    if (rebuilt)
        cr_assert(rep.index_rebuilt);
    cr_assert_eq(rep.records_dropped, 0);
    /* Every message that should be there is, with its content. */
    nd_store_msg_t m;
    memset(&m, 0, sizeof(m));
    for (uint64_t q = 1; q <= N; q++) {
        bool gone = q == 5 || q == 17 || q == N || q % 4 == 3;
        nd_err_t rc = nd_store_load(st, q, &m);
        if (gone) {
            cr_assert_neq(rc, ND_OK, "seq %" PRIu64 " came back", q);
        } else {
            cr_assert_eq(rc, ND_OK, "seq %" PRIu64 ": %s", q, nd_strerror(rc));
            uint8_t data[128];
            size_t dl = data_of(q, data);
            cr_assert_eq(m.data_len, dl);
            cr_assert_eq(memcmp(m.data, data, dl), 0);
        }
    }
    nd_store_msg_free(&m);
    nd_store_close(st);
}

Test(fs_corrupt, index_deleted_is_rebuilt)
{
    nd_store_state_t want;
    make_store_with_gaps(&want);
    char idx[400];
    index_path(idx, sizeof(idx));
    cr_assert_eq(access(idx, F_OK), 0, "no index after a clean close");
    unlink(idx);
    expect_same_state(&want, true);
}

Test(fs_corrupt, index_flips_are_rebuilt)
{
    nd_store_state_t want;
    make_store_with_gaps(&want);
    char idx[400];
    index_path(idx, sizeof(idx));
    size_t n;
    uint8_t *orig = read_file(idx, &n);
    /* A flip at a spread of offsets, every one caught by the index checksum. */
    for (size_t off = 0; off < n; off += (n / 23) + 1) {
        write_file(idx, orig, n);
        flip(idx, off, 0x20);
        expect_same_state(&want, true);
        /* The clean close rewrote the index; restore the original for the next round. */
    }
    free(orig);
}

Test(fs_corrupt, index_truncated_or_garbage_is_rebuilt)
{
    nd_store_state_t want;
    make_store_with_gaps(&want);
    char idx[400];
    index_path(idx, sizeof(idx));
    size_t n;
    uint8_t *orig = read_file(idx, &n);
    for (size_t cut = 0; cut < n; cut += n / 7 + 1) {
        write_file(idx, orig, cut);
        expect_same_state(&want, true);
    }
    uint8_t *g = malloc(n);
    for (size_t i = 0; i < n; i++)
        g[i] = (uint8_t)(i * 151 + 7);
    write_file(idx, g, n);
    expect_same_state(&want, true);
    free(g);
    free(orig);
}

/* The same, after removals that make the store write MARKs and TOMBs and compact (rewrite) and
 * drop sealed blocks: the blocks alone must describe the state (filestore.c's invariant), so a
 * rebuild from them gives exactly what the index said. Checked after every step. */
Test(fs_corrupt, index_deleted_after_compaction_is_rebuilt)
{
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    char idx[400];
    index_path(idx, sizeof(idx));
    uint64_t x = 42;
    uint64_t next = 1;
    for (int step = 0; step < 60; step++) {
        cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
        /* A few stores, then a few removals (the first message and random ones). */
        char subj[32];
        uint8_t data[128];
        for (int k = 0; k < 4; k++, next++) {
            int sl = subj_of(next, subj, sizeof(subj));
            size_t dl = data_of(next, data);
            uint64_t seq;
            int64_t ts;
            const char *hdr = (next % 5 == 0) ? "NATS/1.0\r\nX: y\r\n\r\n" : NULL;
            cr_assert_eq(
                nd_store_put(st, subj, (size_t)sl, hdr, hdr ? strlen(hdr) : 0, data, dl, &seq, &ts),
                ND_OK);
            cr_assert_eq(seq, next);
        }
        nd_store_state_t s;
        nd_store_state(st, &s);
        for (int k = 0; k < 3 && s.msgs > 0; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint64_t victim = (x >> 33) % 3 == 0
                                  ? s.first_seq
                                  : s.first_seq + (x >> 20) % (s.last_seq - s.first_seq + 1);
            nd_err_t re = st->ops->remove(st, victim, (x >> 40) % 4 == 0);
            cr_assert(re == ND_OK || re == ND_ERR_STORE_NOT_FOUND, "%s", nd_strerror(re));
            nd_store_state(st, &s);
        }
        nd_store_state_t before;
        nd_store_state(st, &before);
        /* Which sequences are there, with what content. */
        uint8_t live[512] = {0};
        nd_store_msg_t m;
        memset(&m, 0, sizeof(m));
        for (uint64_t q = 1; q < next; q++)
            live[q] = nd_store_load(st, q, &m) == ND_OK;
        nd_store_close(st);
        unlink(idx);

        nd_store_recovery_t rep;
        cr_assert_eq(nd_filestore_open(&c, &st, &rep), ND_OK);
        cr_assert(rep.index_rebuilt);
        cr_assert_eq(rep.records_dropped, 0,
                     "step %d: a rebuild from intact blocks dropped %" PRIu64 " records", step,
                     rep.records_dropped);
        nd_store_state_t after;
        nd_store_state(st, &after);
        for (uint64_t q = 1; q < next; q++) {
            nd_err_t rc = nd_store_load(st, q, &m);
            cr_assert_eq(rc == ND_OK, live[q] != 0,
                         "step %d: seq %" PRIu64 " was %s before the rebuild, now %s", step, q,
                         live[q] ? "present" : "absent", nd_strerror(rc));
            if (rc == ND_OK) {
                size_t dl = data_of(q, data);
                cr_assert_eq(m.data_len, dl);
                cr_assert_eq(memcmp(m.data, data, dl), 0);
            }
        }
        nd_store_msg_free(&m);
        cr_assert_eq(after.msgs, before.msgs, "step %d", step);
        cr_assert_eq(after.bytes, before.bytes, "step %d", step);
        cr_assert_eq(after.first_seq, before.first_seq, "step %d", step);
        cr_assert_eq(after.last_seq, before.last_seq, "step %d", step);
        cr_assert_eq(after.num_deleted, before.num_deleted, "step %d", step);
        nd_store_close(st);
    }
}

/* An index that is intact but describes an older state of the blocks (written, then more
 * messages appended without a clean close: here, an old index put back) must not be believed. */
Test(fs_corrupt, stale_index_is_not_believed)
{
    make_store(N / 2, 512);
    char idx[400];
    index_path(idx, sizeof(idx));
    size_t n;
    uint8_t *old = read_file(idx, &n);
    /* Append the rest. */
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    char subj[32];
    uint8_t data[128];
    for (uint64_t s = N / 2 + 1; s <= N; s++) {
        int sl = subj_of(s, subj, sizeof(subj));
        size_t dl = data_of(s, data);
        uint64_t seq;
        int64_t ts;
        const char *hdr = (s % 5 == 0) ? "NATS/1.0\r\nX: y\r\n\r\n" : NULL;
        cr_assert_eq(
            nd_store_put(st, subj, (size_t)sl, hdr, hdr ? strlen(hdr) : 0, data, dl, &seq, &ts),
            ND_OK);
    }
    nd_store_close(st);
    write_file(idx, old, n);
    free(old);
    expect_store(N, NULL, 0, 512);
}

/* ---- versions and odd files --------------------------------------------------------------- */

Test(fs_corrupt, future_block_version_refused)
{
    make_store(5, 0);
    blocks_t b;
    list_blocks(&b);
    size_t n;
    uint8_t *p = read_file(b.path[0], &n);
    uint32_t v = ND_FS_VERSION + 1;
    memcpy(p + 8, &v, 4);
    uint64_t h = XXH64(p, 40, 0);
    memcpy(p + 40, &h, 8);
    write_file(b.path[0], p, n);
    free(p);
    char idx[400];
    index_path(idx, sizeof(idx));
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_eq(rc, ND_ERR_STORE_VERSION, "got %s", nd_strerror(rc));
    cr_assert_null(st);
    /* Also when the index is gone and the blocks must be scanned. */
    unlink(idx);
    rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_eq(rc, ND_ERR_STORE_VERSION, "got %s", nd_strerror(rc));
}

Test(fs_corrupt, future_index_version_not_misread)
{
    make_store(5, 0);
    char idx[400];
    index_path(idx, sizeof(idx));
    size_t n;
    uint8_t *p = read_file(idx, &n);
    uint32_t v = ND_FS_VERSION + 1;
    memcpy(p + 8, &v, 4);
    uint64_t h = XXH64(p, n - 8, 0);
    memcpy(p + n - 8, &h, 8);
    write_file(idx, p, n);
    free(p);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_store_recovery_t rep;
    nd_err_t rc = nd_filestore_open(&c, &st, &rep);
    /* The index is a cache: refusing (ERR_VERSION) or rebuilding from the blocks are both
     * right; reading it as version 1 is not. */
    cr_assert(rc == ND_ERR_STORE_VERSION || (rc == ND_OK && rep.index_rebuilt), "%s",
              nd_strerror(rc));
    if (rc == ND_OK)
        nd_store_close(st);
}

Test(fs_corrupt, dir_is_a_file)
{
    write_file(sdir, "not a directory", 15);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_neq(rc, ND_OK);
    cr_assert_null(st);
    cr_assert(rc == ND_ERR_STORE_IO || rc == ND_ERR_STORE_BAD_ARG, "%s", nd_strerror(rc));
}

Test(fs_corrupt, msgs_dir_is_a_file)
{
    make_store(3, 0);
    char md[400];
    snprintf(md, sizeof(md), "%s/%s", sdir, ND_FS_MSGS_DIR);
    rm_rf(md);
    write_file(md, "x", 1);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_neq(rc, ND_OK);
    cr_assert_null(st);
}

/* A block file name that is not a number, and a directory named like a block: ignored or
 * refused, never a crash. */
Test(fs_corrupt, odd_names_in_msgs)
{
    make_store(N, 512);
    char p[500];
    snprintf(p, sizeof(p), "%s/%s/abc%s", sdir, ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    write_file(p, "junk", 4);
    snprintf(p, sizeof(p), "%s/%s/99999999999999999999%s", sdir, ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    write_file(p, "junk", 4);
    snprintf(p, sizeof(p), "%s/%s/77%s", sdir, ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    cr_assert_eq(mkdir(p, 0755), 0);
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    if (rc == ND_OK)
        nd_store_close(st);
}

/* ---- meta file, duplicates, leftovers, consumers ------------------------------------------ */

static void
meta_rewrite(uint32_t version, uint32_t cipher)
{
    char p[400];
    snprintf(p, sizeof(p), "%s/%s", sdir, ND_FS_META_FILE);
    size_t n;
    uint8_t *m = read_file(p, &n);
    cr_assert_eq(n, 32, "meta.dat is %zu bytes, the format says 32", n);
    memcpy(m + 8, &version, 4);
    memcpy(m + 12, &cipher, 4);
    uint64_t h = XXH64(m, 24, 0);
    memcpy(m + 24, &h, 8);
    write_file(p, m, n);
    free(m);
}

Test(fs_corrupt, meta_future_version_refused)
{
    make_store(5, 0);
    meta_rewrite(ND_FS_VERSION + 1, ND_CIPHER_NONE);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_eq(rc, ND_ERR_STORE_VERSION, "got %s", nd_strerror(rc));
    cr_assert_null(st);
}

/* Records sealed with one cipher cannot be read without it: a store opened with another cipher
 * than its meta file records is refused, not read as garbage. */
Test(fs_corrupt, meta_other_cipher_refused)
{
    make_store(5, 0);
    meta_rewrite(ND_FS_VERSION, ND_CIPHER_AES_GCM);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st = NULL;
    nd_err_t rc = nd_filestore_open(&c, &st, NULL);
    cr_assert_neq(rc, ND_OK);
    cr_assert_null(st);
}

/* A damaged meta file is rewritten; the messages are all there. */
Test(fs_corrupt, meta_damaged_is_rewritten)
{
    make_store(N, 0);
    char p[400];
    snprintf(p, sizeof(p), "%s/%s", sdir, ND_FS_META_FILE);
    flip(p, 3, 0x40);
    expect_store(N, NULL, 0, 0);
    write_file(p, "", 0);
    expect_store(N, NULL, 0, 0);
    unlink(p);
    expect_store(N, NULL, 0, 0);
}

/* A block file duplicated under a later index (a botched copy): its messages repeat sequences
 * already seen, so they are dropped, counted, and nothing else changes. */
Test(fs_corrupt, duplicated_block_dropped)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    cr_assert_geq(b.n, 2);
    recs_t *r = walk(b.path[0]);
    int dup_msgs = r->n;
    size_t n;
    uint8_t *p = read_file(b.path[0], &n);
    char path[500];
    snprintf(path, sizeof(path), "%s/%s/%u%s", sdir, ND_FS_MSGS_DIR, b.idx[b.n - 1] + 1,
             ND_FS_BLK_SUFFIX);
    write_file(path, p, n);
    free(p);
    nd_store_recovery_t rep = expect_store(N, NULL, 0, 512);
    cr_assert_eq(rep.records_dropped, (uint64_t)dup_msgs, "dropped %" PRIu64 ", expected %d",
                 rep.records_dropped, dup_msgs);
}

/* A leftover temp file (a crash in the middle of a block rewrite) is removed and ignored. */
Test(fs_corrupt, leftover_tmp_ignored)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    char path[800];
    snprintf(path, sizeof(path), "%s%s", b.path[0], ND_FS_TMP_SUFFIX);
    write_file(path, "half a block", 12);
    nd_store_recovery_t rep = expect_store(N, NULL, 0, 512);
    cr_assert_eq(rep.records_dropped, 0);
    cr_assert_neq(access(path, F_OK), 0, "the temp file is still there");
}

/* A TOMB damaged by a flip: reported like any record; its message comes back (the removal is
 * lost, which no single-copy format can avoid), and nothing else changes. */
Test(fs_corrupt, tomb_flip_reported)
{
    make_store(N, 0);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    cr_assert_eq(st->ops->remove(st, 20, false), ND_OK);
    /* One more message, so the TOMB is not the last record (a damaged last record is a torn
     * tail, tested above). */
    char subj[32];
    uint8_t data[128];
    int sl = subj_of(N + 1, subj, sizeof(subj));
    size_t dl = data_of(N + 1, data);
    uint64_t seq;
    int64_t ts;
    cr_assert_eq(nd_store_put(st, subj, (size_t)sl, NULL, 0, data, dl, &seq, &ts), ND_OK);
    cr_assert_eq(seq, N + 1);
    nd_store_close(st);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    cr_assert_eq(r->nall, N + 2);
    size_t tomb = r->off[N] - ND_FS_REC_OVERHEAD; /* the record before message N + 1 */
    flip(b.path[0], tomb + 17, 0x01);             /* inside its seq */
    nd_store_recovery_t rep;
    cr_assert_eq(nd_filestore_open(&c, &st, &rep), ND_OK);
    cr_assert_eq(rep.records_dropped, 1);
    cr_assert_eq(rep.blocks_corrupt, 1);
    cr_assert_eq(rep.torn_tails, 0);
    nd_store_state_t s;
    nd_store_state(st, &s);
    cr_assert_eq(s.msgs, N + 1);
    cr_assert_eq(s.last_seq, N + 1);
    nd_store_close(st);
}

/* A damaged consumer file: the stream opens with all its messages; the consumer's state is
 * refused or empty, never garbage, and the consumer can be written again. */
Test(fs_corrupt, consumer_file_damaged)
{
    make_store(N, 0);
    nd_store_cfg_t c = cfg_for(0);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    nd_cstore_t *cs;
    cr_assert_eq(st->ops->consumer_open(st, "dur", &cs), ND_OK);
    nd_store_pending_t pend[2] = {{.sseq = 5, .dseq = 3, .ts = 77},
                                  {.sseq = 9, .dseq = 4, .ts = 78}};
    nd_consumer_state_t cst = {.delivered_cseq = 4,
                               .delivered_sseq = 9,
                               .ack_floor_cseq = 2,
                               .ack_floor_sseq = 4,
                               .pending = pend,
                               .npending = 2};
    cr_assert_eq(st->ops->consumer_update(cs, &cst), ND_OK);
    st->ops->consumer_close(cs);
    nd_store_close(st);

    char path[500];
    snprintf(path, sizeof(path), "%s/%s/dur%s", sdir, ND_FS_OBS_DIR, ND_FS_OBS_SUFFIX);
    size_t n;
    uint8_t *orig = read_file(path, &n);
    for (size_t off = 0; off < n; off += 5) {
        write_file(path, orig, n);
        flip(path, off, 0x08);
        cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK, "flip at %zu", off);
        nd_store_state_t s;
        nd_store_state(st, &s);
        cr_assert_eq(s.msgs, N);
        nd_cstore_t *cs2 = NULL;
        nd_err_t rc = st->ops->consumer_open(st, "dur", &cs2);
        if (rc == ND_OK) {
            nd_consumer_state_t got;
            memset(&got, 0, sizeof(got));
            rc = st->ops->consumer_state(cs2, &got);
            if (rc == ND_OK) {
                /* Either empty (started over) or exactly what was written: never garbage. */
                bool empty = got.delivered_sseq == 0 && got.npending == 0;
                bool same =
                    got.delivered_sseq == 9 && got.npending == 2 && got.pending[1].sseq == 9;
                cr_assert(empty || same, "flip at %zu: consumer state is garbage", off);
            }
            nd_consumer_state_free(&got);
            cr_assert_eq(st->ops->consumer_update(cs2, &cst), ND_OK);
            st->ops->consumer_close(cs2);
        }
        nd_store_close(st);
    }
    free(orig);
}

/* ---- encrypted stores ---------------------------------------------------------------------- */

static const uint8_t key_a[32] = "corrupt-test-key-a-0123456789abc";
static const uint8_t key_b[32] = "corrupt-test-key-b-0123456789abc";

static void
make_sealed_store(uint64_t n, const uint8_t *key, uint64_t block_size)
{
    nd_store_cfg_t c = cfg_for(block_size);
    c.cipher = ND_CIPHER_AES_GCM;
    c.key = key;
    nd_store_t *st = NULL;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    char subj[32];
    uint8_t data[128];
    for (uint64_t s = 1; s <= n; s++) {
        int sl = subj_of(s, subj, sizeof(subj));
        size_t dl = data_of(s, data);
        uint64_t seq;
        int64_t ts;
        cr_assert_eq(nd_store_put(st, subj, (size_t)sl, NULL, 0, data, dl, &seq, &ts), ND_OK);
    }
    nd_store_close(st);
}

static uint64_t
sealed_msgs(const uint8_t *key, nd_err_t *rc, nd_store_recovery_t *rep)
{
    nd_store_cfg_t c = cfg_for(512);
    c.cipher = ND_CIPHER_AES_GCM;
    c.key = key;
    nd_store_t *st = NULL;
    memset(rep, 0, sizeof(*rep));
    *rc = nd_filestore_open(&c, &st, rep);
    if (*rc != ND_OK)
        return 0;
    uint64_t ok = 0;
    nd_store_msg_t m;
    memset(&m, 0, sizeof(m));
    for (uint64_t s = 1; s <= N; s++) {
        if (nd_store_load(st, s, &m) != ND_OK)
            continue;
        uint8_t data[128];
        size_t dl = data_of(s, data);
        cr_assert(m.data_len == dl && memcmp(m.data, data, dl) == 0,
                  "seq %" PRIu64 " opened to the wrong plaintext", s);
        ok++;
    }
    nd_store_msg_free(&m);
    nd_store_close(st);
    return ok;
}

/* A flipped ciphertext byte with a recomputed record checksum: only the AEAD tag can tell, and
 * exactly that record is lost. */
Test(fs_corrupt, sealed_body_flip_loses_one_record)
{
    make_sealed_store(N, key_a, 512);
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[1]);
    cr_assert_gt(r->n, 1);
    int i = r->n / 2;
    size_t n;
    uint8_t *p = read_file(b.path[1], &n);
    size_t body = r->off[i] + r->len[i] - ND_FS_REC_SUM_LEN;
    p[body - 3] ^= 0x01;
    uint64_t h = XXH64(p + r->off[i], body - r->off[i], 0);
    memcpy(p + body, &h, 8);
    write_file(b.path[1], p, n);
    free(p);
    nd_err_t rc;
    nd_store_recovery_t rep;
    uint64_t got = sealed_msgs(key_a, &rc, &rep);
    cr_assert_eq(rc, ND_OK);
    cr_assert_eq(got, N - 1);
    cr_assert_eq(rep.records_dropped, 1);
}

/* Opening with the wrong key must not destroy the store: either it is refused, or it shows no
 * message; and afterwards the right key still finds every message. */
Test(fs_corrupt, wrong_key_does_not_destroy)
{
    make_sealed_store(N, key_a, 512);
    char idx[400];
    index_path(idx, sizeof(idx));
    /* Twice: with the index (nothing is decrypted unless the store checks the key) and
     * without it (recovery scans, and must not take every record for a damaged one). */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            unlink(idx);
        nd_err_t rc;
        nd_store_recovery_t rep;
        uint64_t got = sealed_msgs(key_b, &rc, &rep);
        cr_assert_eq(got, 0, "pass %d: the wrong key opened %" PRIu64 " messages", pass, got);
        got = sealed_msgs(key_a, &rc, &rep);
        cr_assert_eq(rc, ND_OK, "pass %d: %s", pass, nd_strerror(rc));
        cr_assert_eq(got, N,
                     "pass %d: after an open with the wrong key, the right key finds %" PRIu64
                     " of %d messages",
                     pass, got, N);
    }
}

/* ---- compressed records --------------------------------------------------------------------- */

/* A well-checksummed record flagged compressed whose LZ4 body lies: a huge declared length (a
 * bomb), a declared length the data does not decode to, inner lengths that disagree with the
 * decoded size. Each is dropped as one bad record, nothing is allocated for the lie (ASan and the
 * 120 s timeout would notice), and everything else is kept. */
Test(fs_corrupt, compressed_lies_dropped)
{
    for (int variant = 0; variant < 3; variant++) {
        rm_rf(sdir);
        make_store(N, 0);
        blocks_t b;
        list_blocks(&b);
        recs_t *r = walk(b.path[0]);
        int i = N / 2;
        size_t n;
        uint8_t *p = read_file(b.path[0], &n);

        /* The inner body: {subj_len u16, hdr_len u32, data_len u32} subject payload. */
        uint8_t inner[ND_FS_INNER_LEN + 4096];
        memset(inner, 0, sizeof(inner));
        uint16_t sl = 3;
        uint32_t hl = 0, dl = (uint32_t)(sizeof(inner) - ND_FS_INNER_LEN - sl);
        if (variant == 2)
            dl += 1; /* disagrees with what decodes */
        memcpy(inner, &sl, 2);
        memcpy(inner + 2, &hl, 4);
        memcpy(inner + 6, &dl, 4);
        memcpy(inner + ND_FS_INNER_LEN, "a.b", 3);
        uint8_t z[8192];
        size_t zn;
        cr_assert(nd_fs_compress(inner, sizeof(inner), z, sizeof(z), &zn));
        uint32_t claim = variant == 0 ? 0x7E000000u : variant == 1 ? (1u << 20) : 0;
        if (claim)
            memcpy(z, &claim, 4);

        uint8_t rec[8192 + ND_FS_REC_OVERHEAD];
        size_t rl = nd_fs_rec_len(0, 0, zn);
        nd_fs_rec_encode_flags(rec, ND_FS_REC_MSG, ND_FS_RECF_COMPRESSED, r->seq[i], 1, NULL, 0,
                               NULL, 0, z, zn);
        size_t tail = n - (r->off[i] + r->len[i]);
        uint8_t *q = malloc(r->off[i] + rl + tail);
        memcpy(q, p, r->off[i]);
        memcpy(q + r->off[i], rec, rl);
        memcpy(q + r->off[i] + rl, p + r->off[i] + r->len[i], tail);
        write_file(b.path[0], q, r->off[i] + rl + tail);
        free(q);
        free(p);
        char idx[400];
        index_path(idx, sizeof(idx));
        unlink(idx);

        nd_store_cfg_t c = cfg_for(0);
        c.compression = ND_STORE_S2;
        nd_store_t *st = NULL;
        nd_store_recovery_t rep;
        nd_err_t rc = nd_filestore_open(&c, &st, &rep);
        cr_assert_eq(rc, ND_OK, "variant %d: %s", variant, nd_strerror(rc));
        nd_store_msg_t m;
        memset(&m, 0, sizeof(m));
        rc = nd_store_load(st, r->seq[i], &m);
        cr_assert_neq(rc, ND_OK, "variant %d: the lying record loaded", variant);
        for (uint64_t q2 = 1; q2 <= N; q2++)
            if (q2 != r->seq[i])
                cr_assert_eq(nd_store_load(st, q2, &m), ND_OK, "variant %d: seq %" PRIu64, variant,
                             q2);
        nd_store_msg_free(&m);
        cr_assert_eq(rep.records_dropped, 1, "variant %d: dropped %" PRIu64, variant,
                     rep.records_dropped);
        nd_store_close(st);
    }
}

/* A sealed (not the last) block cut inside its last record: that record is lost, the report
 * says one torn tail, the later blocks are all kept, and appending goes on at the end. */
Test(fs_corrupt, sealed_block_torn)
{
    make_store(N, 512);
    blocks_t b;
    list_blocks(&b);
    cr_assert_geq(b.n, 3);
    recs_t *r = walk(b.path[1]);
    cr_assert_gt(r->n, 0);
    cr_assert_eq(r->end, r->off[r->n - 1] + r->len[r->n - 1], "block 2 does not end in a message");
    uint64_t lost = r->seq[r->n - 1];
    truncate_to(b.path[1], r->off[r->n - 1] + r->len[r->n - 1] / 2);
    nd_store_recovery_t rep = expect_store(N, &lost, 1, 512);
    cr_assert_eq(rep.torn_tails, 1);
    cr_assert_eq(rep.records_dropped, 0);
    nd_store_cfg_t c = cfg_for(512);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    uint64_t seq;
    int64_t ts;
    cr_assert_eq(nd_store_put(st, "x", 1, NULL, 0, "y", 1, &seq, &ts), ND_OK);
    cr_assert_eq(seq, N + 1, "a torn sealed block must not move last_seq back");
    nd_store_close(st);
}

/* ---- process death with the interval policy ------------------------------------------------ */

/* With the interval policy, appends wait in a user-space buffer, so a process that dies loses
 * the newest ones. What it must never do is keep a LATER removal while losing an EARLIER store:
 * the disk must hold a prefix of the calls. These cases run the calls in a child that _exits
 * without closing (what a kill does to the buffer) right after a removal that the store makes
 * durable outside the buffer: an in-place secure erase, a block rewrite (compaction), and the
 * drop of the first block. Then: if the store made before the removal is lost, the removed
 * messages must still be there. */
static void
interval_case(int which)
{
    rm_rf(sdir);
    make_store(N, 2048); /* several blocks, all written and closed; big enough to compact */
    blocks_t b;
    list_blocks(&b);
    recs_t *r = walk(b.path[0]);
    int n0 = r->n;
    uint64_t first_blk[64];
    for (int i = 0; i < n0; i++)
        first_blk[i] = r->seq[i];

    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        nd_store_cfg_t c = cfg_for(2048);
        nd_store_t *st;
        if (nd_filestore_open(&c, &st, NULL) != ND_OK)
            _exit(10);
        char subj[32];
        uint8_t data[128];
        int sl = subj_of(N + 1, subj, sizeof(subj));
        size_t dl = data_of(N + 1, data);
        uint64_t seq;
        int64_t ts;
        if (nd_store_put(st, subj, (size_t)sl, NULL, 0, data, dl, &seq, &ts) != ND_OK ||
            seq != N + 1)
            _exit(11);
        if (which == 0) {
            /* A secure erase of a message in the first (sealed) block. */
            if (st->ops->remove(st, first_blk[n0 - 1], true) != ND_OK)
                _exit(12);
        } else if (which == 1) {
            /* Enough removals (not of the first message) to make the first block sparse. */
            for (int i = 1; i < n0; i++)
                if (st->ops->remove(st, first_blk[i], false) != ND_OK)
                    _exit(13);
        } else {
            /* Every message of the first block: it is dropped. */
            for (int i = 0; i < n0; i++)
                if (st->ops->remove(st, first_blk[i], false) != ND_OK)
                    _exit(14);
        }
        _exit(0); /* no close: the write buffer dies with the process */
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: %d",
              WEXITSTATUS(status));

    nd_store_cfg_t c = cfg_for(2048);
    nd_store_t *st;
    cr_assert_eq(nd_filestore_open(&c, &st, NULL), ND_OK);
    nd_store_msg_t m;
    memset(&m, 0, sizeof(m));
    bool stored = nd_store_load(st, N + 1, &m) == ND_OK;
    int removed = 0, expect_removed = which == 0 ? 1 : which == 1 ? n0 - 1 : n0;
    for (int i = 0; i < n0; i++) {
        bool targeted = which == 0 ? i == n0 - 1 : which == 1 ? i > 0 : true;
        if (targeted && nd_store_load(st, first_blk[i], &m) != ND_OK)
            removed++;
    }
    nd_store_msg_free(&m);
    nd_store_close(st);
    static const char *what[] = {"secure erase", "block rewrite", "first block drop"};
    cr_assert(stored || removed == 0,
              "%s: the store made BEFORE the removal is lost, but %d of %d removals made after it "
              "are on disk (a state that never existed)",
              what[which], removed, expect_removed);
}

Test(fs_corrupt, interval_death_keeps_prefix_erase)
{
    interval_case(0);
}

Test(fs_corrupt, interval_death_keeps_prefix_rewrite)
{
    interval_case(1);
}

Test(fs_corrupt, interval_death_keeps_prefix_drop)
{
    interval_case(2);
}
