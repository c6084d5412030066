/* libFuzzer driver for file store recovery (reliability spec R-13, F-1 "store recovery").
 *
 * The first input byte's low bits pick a store configuration (plain, compressed, AES-GCM,
 * ChaCha20 + compressed; a store that refuses a cipher falls back to plain). With its high bit
 * set, the driver first recomputes every checksum in the input (block header, and each record's
 * header and body checksum at every record magic it finds, with the lengths the header gives):
 * a fuzzer cannot forge XXH64, so without this it would only ever exercise the resync and torn
 * tail paths, never what recovery does with well-formed records of nonsense content (sequences
 * going backwards, huge gaps, TOMBs and MARKs for anything). The rest is written as the
 * stream's only block file, msgs/1.blk, into a store directory created once per configuration
 * (so its meta file is valid), with the index removed so that recovery must scan the block.
 * The driver then opens the store, walks every message with load_next and loads first and last,
 * appends one message, closes, reopens and checks that the appended message is there with its
 * content: recovery must leave a store that works, not just one that opens.
 *
 * Index mode (first byte's bit 6 set): the input is index.db instead, next to a fixed valid block
 * (five messages, one removed) written at start-up. The driver patches the first block entry's
 * size, mtime and inode to match that block file and recomputes the index checksum, so the
 * store believes the index and its validation (slot arrays, offsets, subjects, first/last) is
 * what gets fuzzed; random index bytes alone would only ever fail the checksum. A lying index
 * that passes validation may make loads fail (ERR_CORRUPT), so in this mode only crashes,
 * leaks, hangs and sanitizer reports count, not the consistency checks. Offsets are those of
 * src/js/store/fs_index.c (a 48-byte header, 56-byte block entries).
 *
 * Pass: no crash, leak, hang or sanitizer report; an open either succeeds or fails with
 * ERR_CORRUPT / ERR_VERSION / ERR_IO (a clear error).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "js/store/filestore.h"
#include "js/store/store.h"

#define NCFG 4

static char dirs[NCFG][256];
/* The valid block of each configuration that index mode puts next to the fuzzed index. */
static uint8_t *tmpl_blk[NCFG];
static size_t tmpl_len[NCFG];

static void put_block(const char *dir, const uint8_t *p, size_t n);
static nd_store_cfg_t cfgs[NCFG];
static const uint8_t key[32] = "natsd-fuzz-store-key-32-bytes!!";

static void
clean_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            clean_dir(p);
            rmdir(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
}

static void
init_once(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    char root[200];
    snprintf(root, sizeof(root), "%s/ndfuzz-store-%d", base, (int)getpid());
    mkdir(root, 0700);
    for (int i = 0; i < NCFG; i++) {
        snprintf(dirs[i], sizeof(dirs[i]), "%s/s%d", root, i);
        nd_store_cfg_t *c = &cfgs[i];
        memset(c, 0, sizeof(*c));
        c->max_msgs = -1;
        c->max_bytes = -1;
        c->max_msgs_per_subject = -1;
        c->max_msg_size = -1;
        c->dir = dirs[i];
        c->block_size = 4096;
        c->compression = (i == 1 || i == 3) ? ND_STORE_S2 : ND_STORE_NONE;
        c->cipher = i == 2 ? ND_CIPHER_AES_GCM : i == 3 ? ND_CIPHER_CHACHA : ND_CIPHER_NONE;
        c->key = c->cipher != ND_CIPHER_NONE ? key : NULL;
        nd_store_t *st = NULL;
        nd_err_t rc = nd_filestore_open(c, &st, NULL);
        if (rc == ND_ERR_STORE_BAD_ARG) {
            c->compression = ND_STORE_NONE;
            c->cipher = ND_CIPHER_NONE;
            c->key = NULL;
            rc = nd_filestore_open(c, &st, NULL);
        }
        if (rc != ND_OK) {
            fprintf(stderr, "fuzz_store_recover: cannot create %s: %s\n", dirs[i], nd_strerror(rc));
            abort();
        }
        nd_store_close(st);
        /* The template block for index mode: five messages, the third removed. */
        if (nd_filestore_open(c, &st, NULL) != ND_OK)
            abort();
        for (int k = 0; k < 5; k++) {
            uint64_t seq;
            int64_t ts;
            if (nd_store_put(st, k % 2 ? "fuzz.b" : "fuzz.a", 6, NULL, 0, "template", 8, &seq,
                             &ts) != ND_OK)
                abort();
        }
        if (st->ops->remove(st, 3, false) != ND_OK)
            abort();
        nd_store_close(st);
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/1%s", dirs[i], ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
        FILE *f = fopen(path, "rb");
        if (f == NULL)
            abort();
        tmpl_blk[i] = malloc(65536);
        tmpl_len[i] = fread(tmpl_blk[i], 1, 65536, f);
        fclose(f);
    }
}

#define IDX_HDR 48u
#define IDX_ENT 56u

/* Makes the fuzzed index describe the block file now on disk (entry 0: idx 1, its size, mtime
 * and inode) and gives it a valid checksum. */
static void
fix_index(uint8_t *p, size_t n, const char *blk)
{
    if (n < IDX_HDR + IDX_ENT + 8)
        return;
    struct stat sb;
    if (stat(blk, &sb) != 0)
        return;
    uint32_t one = 1;
    uint64_t size = (uint64_t)sb.st_size, ino = (uint64_t)sb.st_ino;
    int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    memcpy(p + IDX_HDR + 0, &one, 4);
    memcpy(p + IDX_HDR + 8, &size, 8);
    memcpy(p + IDX_HDR + 16, &mt, 8);
    memcpy(p + IDX_HDR + 24, &ino, 8);
    uint64_t h = XXH64(p, n - 8, 0);
    memcpy(p + n - 8, &h, 8);
}

/* Index mode: the template block plus the fuzzed index. */
static void
put_index(int ci, const uint8_t *p, size_t n)
{
    put_block(dirs[ci], tmpl_blk[ci], tmpl_len[ci]);
    char blk[512], idx[512];
    snprintf(blk, sizeof(blk), "%s/%s/1%s", dirs[ci], ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    snprintf(idx, sizeof(idx), "%s/%s", dirs[ci], ND_FS_INDEX_FILE);
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    fix_index(copy, n, blk);
    FILE *f = fopen(idx, "wb");
    if (f == NULL)
        abort();
    if (n && fwrite(copy, 1, n, f) != n)
        abort();
    fclose(f);
    free(copy);
}

static uint32_t
get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Makes every checksum in a block image valid (see the top comment). */
static void
fix_checksums(uint8_t *p, size_t n)
{
    if (n >= ND_FS_BLK_HDR_LEN && memcmp(p, ND_FS_BLK_MAGIC, 8) == 0) {
        uint64_t h = XXH64(p, 40, 0);
        memcpy(p + 40, &h, 8);
    }
    size_t o = ND_FS_BLK_HDR_LEN;
    while (o + ND_FS_REC_HDR_LEN <= n) {
        if (get32(p + o) != ND_FS_REC_MAGIC) {
            o++;
            continue;
        }
        memset(p + o + 36, 0, 4);
        uint32_t hck = (uint32_t)XXH64(p + o, 32, 0);
        memcpy(p + o + 32, &hck, 4);
        uint16_t sl;
        memcpy(&sl, p + o + 6, 2);
        uint64_t len = (uint64_t)ND_FS_REC_OVERHEAD + sl + get32(p + o + 8) + get32(p + o + 12);
        if (o + len > n)
            break;
        uint64_t h = XXH64(p + o, (size_t)len - ND_FS_REC_SUM_LEN, 0);
        memcpy(p + o + len - ND_FS_REC_SUM_LEN, &h, 8);
        o += (size_t)len;
    }
}

static void
put_block(const char *dir, const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, ND_FS_MSGS_DIR);
    clean_dir(path);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s", dir, ND_FS_INDEX_FILE);
    unlink(path);
    snprintf(path, sizeof(path), "%s/%s/1%s", dir, ND_FS_MSGS_DIR, ND_FS_BLK_SUFFIX);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (n && fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    if (size < 1)
        return 0;
    int ci = (data[0] & 0x3f) % NCFG;
    nd_store_cfg_t *c = &cfgs[ci];
    bool index_mode = (data[0] & 0x40) != 0;
    if (index_mode) {
        put_index(ci, data + 1, size - 1);
    } else if (data[0] & 0x80) {
        uint8_t *copy = malloc(size);
        memcpy(copy, data + 1, size - 1);
        fix_checksums(copy, size - 1);
        put_block(dirs[ci], copy, size - 1);
        free(copy);
    } else {
        put_block(dirs[ci], data + 1, size - 1);
    }

    nd_store_t *st = NULL;
    nd_store_recovery_t rep;
    nd_err_t rc = nd_filestore_open(c, &st, &rep);
    if (rc != ND_OK) {
        if (rc != ND_ERR_STORE_CORRUPT && rc != ND_ERR_STORE_VERSION && rc != ND_ERR_STORE_IO) {
            fprintf(stderr, "open failed with an unexpected error: %s\n", nd_strerror(rc));
            abort();
        }
        if (st != NULL)
            abort(); /* a failed open hands nothing back */
        return 0;
    }

    nd_store_state_t s;
    nd_store_state(st, &s);
    nd_store_msg_t m;
    memset(&m, 0, sizeof(m));
    if (index_mode) {
        /* A believed index may lie about offsets: read everything, judge nothing. */
        uint64_t next = 0;
        for (uint64_t k = 0; k <= s.msgs; k++) {
            if (st->ops->load_next(st, NULL, 0, next, &m) != ND_OK || m.seq == UINT64_MAX)
                break;
            next = m.seq + 1;
        }
        for (uint64_t q = s.first_seq; q <= s.last_seq && q - s.first_seq < 64; q++)
            (void)nd_store_load(st, q, &m);
        (void)st->ops->load_last(st, "fuzz.*", 6, &m);
        nd_store_subj_state_t fss;
        st->ops->filtered_state(st, "fuzz.a", 6, 0, &fss);
        nd_store_msg_free(&m);
        nd_store_close(st);
        return 0;
    }
    uint64_t walked = 0, next = 0;
    /* Bounded by the message count: a garbage sequence must not make this loop long. */
    while (walked <= s.msgs) {
        rc = st->ops->load_next(st, NULL, 0, next, &m);
        if (rc != ND_OK)
            break;
        if (m.seq < next || m.seq < s.first_seq || m.seq > s.last_seq)
            abort(); /* load_next went backwards or outside the state */
        walked++;
        if (m.seq == UINT64_MAX)
            break;
        next = m.seq + 1;
    }
    if (walked != s.msgs) {
        fprintf(stderr, "load_next walked %lu messages, state says %lu\n", (unsigned long)walked,
                (unsigned long)s.msgs);
        abort();
    }
    if (s.msgs > 0 && (nd_store_load(st, s.first_seq, &m) != ND_OK))
        abort(); /* the first sequence of a non-empty store is a message */
    (void)nd_store_load(st, s.last_seq, &m);
    (void)st->ops->load_last(st, ">", 1, &m);

    /* The recovered store must accept a new message and keep it across a reopen. */
    uint64_t seq = 0;
    int64_t ts = 0;
    bool can_append = s.last_seq < UINT64_MAX - 1;
    if (can_append) {
        rc = nd_store_put(st, "fuzz.new", 8, NULL, 0, "payload", 7, &seq, &ts);
        if (rc != ND_OK || seq != s.last_seq + 1) {
            fprintf(stderr, "append after recovery: %s, seq %lu (last was %lu)\n", nd_strerror(rc),
                    (unsigned long)seq, (unsigned long)s.last_seq);
            abort();
        }
    }
    nd_store_close(st);
    if (can_append) {
        rc = nd_filestore_open(c, &st, &rep);
        if (rc != ND_OK) {
            fprintf(stderr, "reopen after append: %s\n", nd_strerror(rc));
            abort();
        }
        rc = nd_store_load(st, seq, &m);
        if (rc != ND_OK || m.data_len != 7 || memcmp(m.data, "payload", 7) != 0 ||
            m.subj_len != 8 || memcmp(m.subj, "fuzz.new", 8) != 0) {
            fprintf(stderr, "the appended message %lu did not survive a reopen: %s\n",
                    (unsigned long)seq, nd_strerror(rc));
            abort();
        }
        nd_store_close(st);
    }
    nd_store_msg_free(&m);
    return 0;
}
