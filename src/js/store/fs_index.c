/* File store index (index.db): a checksummed image of the in-memory index, so that a clean
 * restart does not scan the blocks. It is trusted only when its checksum holds and every block
 * it names exists with the size, mtime and inode it recorded, and no other block exists; any
 * doubt means a rebuild from the blocks (fs_recover.c). Layout: see filestore.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"

#define IDX_HDR_LEN  48u
#define IDX_BLK_LEN  56u
#define IDX_SLOT_LEN 20u

typedef struct wr {
    uint8_t *p;
    size_t n;
} wr_t;

static inline void
w32(wr_t *w, uint32_t v)
{
    memcpy(w->p + w->n, &v, 4);
    w->n += 4;
}
static inline void
w64(wr_t *w, uint64_t v)
{
    memcpy(w->p + w->n, &v, 8);
    w->n += 8;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, o;
    bool bad;
} rd_t;

static inline uint32_t
r32(rd_t *r)
{
    uint32_t v = 0;
    if (r->o + 4 > r->n) {
        r->bad = true;
        return 0;
    }
    memcpy(&v, r->p + r->o, 4);
    r->o += 4;
    return v;
}

static inline uint64_t
r64(rd_t *r)
{
    uint64_t v = 0;
    if (r->o + 8 > r->n) {
        r->bad = true;
        return 0;
    }
    memcpy(&v, r->p + r->o, 8);
    r->o += 8;
    return v;
}

static int
blk_stat(nd_filestore_t *fs, uint32_t idx, struct stat *sb)
{
    char name[32];
    nd_fs_blk_name(idx, name);
    return fstatat(fs->msgsfd, name, sb, 0);
}

static inline int64_t
mtime_ns(const struct stat *sb)
{
    return (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec;
}

nd_err_t
nd_fs_index_write(nd_filestore_t *fs)
{
    size_t n = IDX_HDR_LEN + fs->nblks * IDX_BLK_LEN + 8;
    for (size_t i = 0; i < fs->nblks; i++)
        n += (size_t)fs->blks[i]->nslots * IDX_SLOT_LEN;
    for (uint32_t k = 0; k < fs->subj.nents; k++)
        n += 4 + (fs->subj.ents[k].s ? fs->subj.ents[k].len : 0);
    wr_t w = {nd_xmalloc(n), 0};
    memcpy(w.p, ND_FS_IDX_MAGIC, 8);
    w.n = 8;
    w32(&w, ND_FS_VERSION);
    w32(&w, (uint32_t)fs->nblks);
    w32(&w, fs->subj.nents);
    w32(&w, 0);
    w64(&w, fs->first_seq);
    w64(&w, fs->last_seq);
    w64(&w, (uint64_t)fs->last_ts);
    for (size_t i = 0; i < fs->nblks; i++) {
        nd_fs_blk_t *b = fs->blks[i];
        struct stat sb;
        if (blk_stat(fs, b->idx, &sb) < 0 || (uint64_t)sb.st_size != b->size) {
            int e = errno;
            free(w.p);
            return nd_store_io_error(&fs->base, e ? e : EIO);
        }
        w32(&w, b->idx);
        w32(&w, b->nslots);
        w64(&w, b->size);
        w64(&w, (uint64_t)mtime_ns(&sb));
        w64(&w, (uint64_t)sb.st_ino);
        w64(&w, b->base);
        w32(&w, b->nctl);
        w32(&w, b->first_slot);
        w64(&w, b->keep_bytes);
    }
    for (size_t i = 0; i < fs->nblks; i++) {
        nd_fs_blk_t *b = fs->blks[i];
        size_t k = b->nslots;
        if (!k)
            continue;
        memcpy(w.p + w.n, b->off, k * 4);
        w.n += k * 4;
        memcpy(w.p + w.n, b->sid, k * 4);
        w.n += k * 4;
        memcpy(w.p + w.n, b->msz, k * 4);
        w.n += k * 4;
        memcpy(w.p + w.n, b->ts, k * 8);
        w.n += k * 8;
    }
    for (uint32_t k = 0; k < fs->subj.nents; k++) {
        const nd_fs_subj_t *e = &fs->subj.ents[k];
        uint32_t len = e->s ? e->len : 0;
        w32(&w, len);
        if (len) {
            memcpy(w.p + w.n, e->s, len);
            w.n += len;
        }
    }
    w64(&w, XXH64(w.p, w.n, 0));
    int rc = nd_fs_write_file_atomic(fs->dirfd, ND_FS_INDEX_FILE, w.p, w.n, true);
    int e = errno;
    free(w.p);
    return rc < 0 ? nd_store_io_error(&fs->base, e) : ND_OK;
}

static bool
load_arrays(nd_fs_blk_t *b, rd_t *r)
{
    size_t k = b->nslots;
    if (!k)
        return true;
    if (r->o + k * IDX_SLOT_LEN > r->n)
        return false;
    /* k was checked against the file's length above, so a damaged count cannot ask for more
     * memory than the index file holds. */
    b->off = nd_xmalloc(k * 4);
    b->sid = nd_xmalloc(k * 4);
    b->msz = nd_xmalloc(k * 4);
    b->ts = nd_xmalloc(k * 8);
    b->cap = (uint32_t)k;
    memcpy(b->off, r->p + r->o, k * 4);
    r->o += k * 4;
    memcpy(b->sid, r->p + r->o, k * 4);
    r->o += k * 4;
    memcpy(b->msz, r->p + r->o, k * 4);
    r->o += k * 4;
    memcpy(b->ts, r->p + r->o, k * 8);
    r->o += k * 8;
    return true;
}

nd_err_t
nd_fs_index_load(nd_filestore_t *fs, const uint32_t *idxs, size_t n)
{
    uint8_t *p;
    size_t len;
    if (nd_fs_read_file(fs->dirfd, ND_FS_INDEX_FILE, &p, &len) < 0)
        return ND_ERR_STORE_NOT_FOUND;
    nd_err_t res = ND_ERR_STORE_NOT_FOUND;
    if (len < IDX_HDR_LEN + 8 || memcmp(p, ND_FS_IDX_MAGIC, 8) != 0)
        goto out;
    uint64_t sum;
    memcpy(&sum, p + len - 8, 8);
    if (sum != XXH64(p, len - 8, 0))
        goto out;
    rd_t r = {p, len - 8, 8, false};
    uint32_t ver = r32(&r);
    if (ver > ND_FS_VERSION) {
        res = ND_ERR_STORE_VERSION;
        goto out;
    }
    uint32_t nblks = r32(&r), nsubj = r32(&r);
    (void)r32(&r);
    uint64_t first = r64(&r), last = r64(&r);
    int64_t last_ts = (int64_t)r64(&r);
    if (r.bad || nblks != n || (uint64_t)nblks * IDX_BLK_LEN > len)
        goto out;
    for (uint32_t i = 0; i < nblks; i++) {
        nd_fs_blk_t *b = nd_fs_blk_new(0);
        nd_fs_add_blk(fs, b);
        b->idx = r32(&r);
        b->nslots = r32(&r);
        b->size = b->wsize = r64(&r);
        int64_t mt = (int64_t)r64(&r);
        uint64_t ino = r64(&r);
        b->base = r64(&r);
        b->nctl = r32(&r);
        b->first_slot = r32(&r);
        b->keep_bytes = r64(&r);
        if (r.bad || b->idx != idxs[i] || b->size < ND_FS_BLK_HDR_LEN || b->size >= UINT32_MAX)
            goto out;
        if (b->idx >= fs->next_idx)
            fs->next_idx = b->idx + 1;
        struct stat sb;
        if (blk_stat(fs, b->idx, &sb) < 0 || (uint64_t)sb.st_size != b->size ||
            mtime_ns(&sb) != mt || (uint64_t)sb.st_ino != ino)
            goto out;
        if (i > 0 && b->base < fs->blks[i - 1]->base)
            goto out;
    }
    for (uint32_t i = 0; i < nblks; i++)
        if (!load_arrays(fs->blks[i], &r))
            goto out;
    for (uint32_t k = 0; k < nsubj; k++) {
        uint32_t sl = r32(&r);
        if (r.bad || sl > UINT16_MAX || r.o + sl > r.n)
            goto out;
        if (sl && !nd_fs_subj_put_at(&fs->subj, k, (const char *)p + r.o, sl))
            goto out;
        if (!sl && !nd_fs_subj_put_at(&fs->subj, k, "", 0))
            goto out;
        r.o += sl;
    }
    if (r.o != r.n)
        goto out;
    /* Placeholders for free ids were given "" above; finish_load drops every id without
     * messages. Now count the live slots and check them against the blocks. */
    fs->last_seq = last;
    fs->last_ts = last_ts;
    for (uint32_t i = 0; i < nblks; i++) {
        nd_fs_blk_t *b = fs->blks[i];
        bool seen = false;
        for (uint32_t s = 0; s < b->nslots; s++) {
            if (b->off[s] == ND_FS_NOOFF)
                continue;
            uint64_t seq = b->base + s;
            if (b->sid[s] >= fs->subj.nents || !fs->subj.ents[b->sid[s]].len ||
                b->off[s] < ND_FS_BLK_HDR_LEN || b->msz[s] < 16 ||
                (uint64_t)b->off[s] + ND_FS_REC_OVERHEAD > b->size || seq > last)
                goto out;
            if (!seen) {
                b->first_slot = s;
                seen = true;
            }
            nd_fs_subj_t *e = &fs->subj.ents[b->sid[s]];
            if (e->msgs++ == 0)
                e->first = seq;
            e->last = seq;
            b->msgs++;
            b->bytes += b->msz[s];
            fs->msgs++;
            fs->bytes += b->msz[s];
        }
        if (!seen)
            b->first_slot = 0;
    }
    nd_fs_subj_finish_load(&fs->subj);
    fs->first_seq = fs->msgs ? nd_fs_next_live(fs, 0, NULL, NULL) : last + 1;
    if (fs->first_seq != first)
        goto out;
    res = ND_OK;
out:
    free(p);
    return res;
}
