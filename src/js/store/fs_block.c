/* File store records and blocks: the record codec, the block header, block slot arrays and the
 * I/O helpers (with the fault hook the error-path tests use). Format: see filestore.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"
#include "js/store/fs_crypt.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the file store writes its integers in host order and assumes a little-endian host"
#endif

static inline void
put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}
static inline void
put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static inline uint32_t
get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t
get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- Fault hook ---- */

static nd_fs_fault_t fault;
static long fault_count;

void
nd_fs_fault_set(const nd_fs_fault_t *f)
{
    if (f)
        fault = *f;
    else
        memset(&fault, 0, sizeof(fault));
    fault_count = 0;
}

/* Returns: true when this call of `kind` must fail. */
static bool
fault_hit(int kind)
{
    if (fault.kind != kind)
        return false;
    if (fault_count < fault.after) {
        fault_count++;
        return false;
    }
    return true;
}

/* The three transfers the store makes: write (appends at the file position), pwrite, pread. */
typedef enum io_op { IO_WRITE, IO_PWRITE, IO_PREAD } io_op_t;

static ssize_t
io_once(io_op_t op, int fd, const uint8_t *c, size_t n, off_t off)
{
    switch (op) {
    case IO_WRITE:
        return write(fd, c, n);
    case IO_PWRITE:
        return pwrite(fd, c, n, off);
    case IO_PREAD:
        break;
    }
    /* Reading fills the caller's (non-const) buffer that c points into. */
    return pread(fd, (void *)(uintptr_t)c, n, off);
}

/* Moves all n bytes, retrying EINTR. A transfer of zero bytes ends it with ENOSPC when writing
 * and EIO when reading (the file is shorter than the index says). Writes go through the fault
 * hook first (kind 1), which may also write half of the bytes to model a torn write. */
static int
io_all(io_op_t op, int fd, const void *p, size_t n, off_t off)
{
    const uint8_t *c = p;
    if (op != IO_PREAD && fault_hit(1)) {
        if (fault.short_write && n > 1) {
            ssize_t w = io_once(op, fd, c, n / 2, off);
            (void)w;
        }
        errno = fault.err ? fault.err : EIO;
        return -1;
    }
    while (n) {
        ssize_t r = io_once(op, fd, c, n, off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0) {
            errno = op == IO_PREAD ? EIO : ENOSPC;
            return -1;
        }
        c += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

int
nd_fs_write_all(int fd, const void *p, size_t n)
{
    return io_all(IO_WRITE, fd, p, n, 0);
}

int
nd_fs_pwrite_all(int fd, const void *p, size_t n, off_t off)
{
    return io_all(IO_PWRITE, fd, p, n, off);
}

int
nd_fs_datasync(int fd)
{
    if (fault_hit(2)) {
        errno = fault.err ? fault.err : EIO;
        return -1;
    }
    return fdatasync(fd);
}

int
nd_fs_pread_all(int fd, void *p, size_t n, off_t off)
{
    return io_all(IO_PREAD, fd, p, n, off);
}

int
nd_fs_write_file_atomic(int dirfd, const char *name, const void *p, size_t n, bool sync)
{
    char tmp[300];
    if (snprintf(tmp, sizeof(tmp), "%s%s", name, ND_FS_TMP_SUFFIX) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (nd_fs_write_all(fd, p, n) < 0 || (sync && nd_fs_datasync(fd) < 0)) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    if (close(fd) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        errno = e;
        return -1;
    }
    /* The rename is durable only once the directory itself is synced. */
    if (sync && nd_fs_datasync(dirfd) < 0)
        return -1;
    return 0;
}

int
nd_fs_read_file(int dirfd, const char *name, uint8_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    size_t sz = (size_t)sb.st_size;
    uint8_t *p = nd_xmalloc(sz);
    if (sz && nd_fs_pread_all(fd, p, sz, 0) < 0) {
        int e = errno;
        free(p);
        close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    *out = p;
    *n = sz;
    return 0;
}

/* ---- Records ---- */

void
nd_fs_rec_hdr32(uint8_t *out, uint8_t kind, uint8_t flags, uint64_t seq, int64_t ts, size_t sl,
                size_t hl, size_t dl)
{
    put32(out, ND_FS_REC_MAGIC);
    out[4] = kind;
    out[5] = flags;
    uint16_t s16 = (uint16_t)sl;
    memcpy(out + 6, &s16, 2);
    put32(out + 8, (uint32_t)hl);
    put32(out + 12, (uint32_t)dl);
    put64(out + 16, seq);
    put64(out + 24, (uint64_t)ts);
}

void
nd_fs_rec_encode(uint8_t *out, uint8_t kind, uint64_t seq, int64_t ts, const char *subj, size_t sl,
                 const void *hdr, size_t hl, const void *data, size_t dl)
{
    nd_fs_rec_encode_flags(out, kind, 0, seq, ts, subj, sl, hdr, hl, data, dl);
}

void
nd_fs_rec_encode_flags(uint8_t *out, uint8_t kind, uint8_t flags, uint64_t seq, int64_t ts,
                       const char *subj, size_t sl, const void *hdr, size_t hl, const void *data,
                       size_t dl)
{
    nd_fs_rec_hdr32(out, kind, flags, seq, ts, sl, hl, dl);
    put32(out + 32, (uint32_t)XXH3_64bits(out, 32));
    put32(out + 36, 0);
    uint8_t *b = out + ND_FS_REC_HDR_LEN;
    /* A body already in place (an in-place rewrite) is not copied onto itself. */
    if (sl && (const void *)subj != (const void *)b)
        memcpy(b, subj, sl);
    if (hl && hdr != (const void *)(b + sl))
        memcpy(b + sl, hdr, hl);
    if (dl && data != (const void *)(b + sl + hl))
        memcpy(b + sl + hl, data, dl);
    size_t body = ND_FS_REC_HDR_LEN + sl + hl + dl;
    put64(out + body, XXH64(out, body, 0));
}

int
nd_fs_rec_header(const uint8_t *p, size_t avail, nd_fs_rec_t *rec)
{
    if (avail < 4)
        return -1;
    if (get32(p) != ND_FS_REC_MAGIC)
        return 0;
    if (avail < ND_FS_REC_HDR_LEN)
        return -1;
    if (get32(p + 36) != 0 || get32(p + 32) != (uint32_t)XXH3_64bits(p, 32))
        return 0;
    uint8_t kind = p[4];
    if (kind < ND_FS_REC_MSG || kind > ND_FS_REC_ERASED)
        return 0;
    uint16_t sl;
    memcpy(&sl, p + 6, 2);
    uint32_t hl = get32(p + 8), dl = get32(p + 12);
    if (hl > ND_FS_REC_MAX_FIELD || dl > ND_FS_REC_MAX_FIELD)
        return 0;
    memset(rec, 0, sizeof(*rec));
    rec->kind = kind;
    rec->flags = p[5];
    rec->subj_len = sl;
    rec->hdr_len = hl;
    rec->data_len = dl;
    rec->seq = get64(p + 16);
    rec->ts = (int64_t)get64(p + 24);
    rec->len = nd_fs_rec_len(sl, hl, dl);
    return 1;
}

bool
nd_fs_rec_verify(const uint8_t *p, nd_fs_rec_t *rec)
{
    size_t body = rec->len - ND_FS_REC_SUM_LEN;
    if (get64(p + body) != XXH64(p, body, 0))
        return false;
    const uint8_t *b = p + ND_FS_REC_HDR_LEN;
    rec->subj = (const char *)b;
    rec->hdr = b + rec->subj_len;
    rec->data = b + rec->subj_len + rec->hdr_len;
    return true;
}

void
nd_fs_blk_hdr_encode(uint8_t out[ND_FS_BLK_HDR_LEN], uint32_t flags)
{
    nd_fs_blk_hdr_encode_salt(out, flags, NULL);
}

void
nd_fs_blk_hdr_encode_salt(uint8_t out[ND_FS_BLK_HDR_LEN], uint32_t flags, const uint8_t *salt)
{
    memset(out, 0, ND_FS_BLK_HDR_LEN);
    memcpy(out, ND_FS_BLK_MAGIC, 8);
    put32(out + 8, ND_FS_VERSION);
    put32(out + 12, flags);
    if (salt)
        memcpy(out + ND_FS_BLK_SALT_OFF, salt, 16);
    put64(out + 40, XXH64(out, 40, 0));
}

nd_err_t
nd_fs_blk_hdr_check(const uint8_t *p, size_t n)
{
    if (n < ND_FS_BLK_HDR_LEN || memcmp(p, ND_FS_BLK_MAGIC, 8) != 0 ||
        get64(p + 40) != XXH64(p, 40, 0))
        return ND_ERR_STORE_CORRUPT;
    if (get32(p + 8) > ND_FS_VERSION)
        return ND_ERR_STORE_VERSION;
    return ND_OK;
}

/* ---- Blocks ---- */

nd_fs_blk_t *
nd_fs_blk_new(uint32_t idx)
{
    nd_fs_blk_t *b = nd_new(nd_fs_blk_t);
    b->idx = idx;
    b->fd = -1;
    return b;
}

void
nd_fs_blk_free(nd_fs_blk_t *b)
{
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
    nd_fs_crypt_free(b->crypt);
    free(b->off);
    free(b->sid);
    free(b->msz);
    free(b->ts);
    free(b);
}

static void
blk_grow(nd_fs_blk_t *b, uint32_t need)
{
    if (need <= b->cap)
        return;
    uint32_t nc = b->cap ? b->cap : 64;
    while (nc < need)
        nc *= 2;
    b->off = nd_xrealloc(b->off, nc * sizeof(*b->off));
    b->sid = nd_xrealloc(b->sid, nc * sizeof(*b->sid));
    b->msz = nd_xrealloc(b->msz, nc * sizeof(*b->msz));
    b->ts = nd_xrealloc(b->ts, nc * sizeof(*b->ts));
    b->cap = nc;
}

bool
nd_fs_blk_slot_add(nd_fs_blk_t *b, uint64_t seq, uint32_t off, uint32_t sid, uint32_t msz,
                   int64_t ts)
{
    if (!b->nslots) {
        b->base = seq;
        b->first_slot = 0;
    }
    if (seq < b->base)
        return false;
    uint64_t i = seq - b->base;
    if (i >= UINT32_MAX - 1)
        return false;
    blk_grow(b, (uint32_t)i + 1);
    /* Sequences between the previous last and seq are gaps in this block. */
    for (uint32_t k = b->nslots; k < i; k++) {
        b->off[k] = ND_FS_NOOFF;
        b->sid[k] = ND_FS_NOSID;
        b->msz[k] = 0;
        b->ts[k] = 0;
    }
    b->off[i] = off;
    b->sid[i] = sid;
    b->msz[i] = msz;
    b->ts[i] = ts;
    if (i + 1 > b->nslots)
        b->nslots = (uint32_t)i + 1;
    return true;
}

void
nd_fs_blk_name(uint32_t idx, char out[32])
{
    snprintf(out, 32, "%u%s", idx, ND_FS_BLK_SUFFIX);
}

void
nd_fs_blk_close_fd(nd_filestore_t *fs, nd_fs_blk_t *b)
{
    if (b->fd >= 0) {
        close(b->fd);
        b->fd = -1;
        fs->nopen--;
    }
}

int
nd_fs_blk_fd(nd_filestore_t *fs, nd_fs_blk_t *b)
{
    if (b->fd >= 0)
        return b->fd;
    if (fs->nopen >= ND_FS_MAX_OPEN_FDS) {
        /* Close a synced, sealed block's fd: an fd of a block with unsynced data stays open
         * so that its fsync sees any write-back error (a new fd might not). */
        for (size_t i = 0; i + 1 < fs->nblks && fs->nopen >= ND_FS_MAX_OPEN_FDS; i++) {
            nd_fs_blk_t *o = fs->blks[i];
            if (o != b && o->fd >= 0 && !o->unsynced)
                nd_fs_blk_close_fd(fs, o);
        }
    }
    char name[32];
    nd_fs_blk_name(b->idx, name);
    int fd = openat(fs->msgsfd, name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    b->fd = fd;
    fs->nopen++;
    return fd;
}
