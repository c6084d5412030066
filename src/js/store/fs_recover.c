/* File store recovery from the blocks alone (the index was missing, damaged or stale).
 *
 * Each block is read whole and its records applied in file order through the state functions
 * the writers use (fs_state.c). Damage is skipped, never "repaired" into something else:
 *   - a header whose checksum holds but whose body checksum fails: the record is skipped by its
 *     length (the header is trusted, so exactly one record is lost);
 *   - a position that is not a record header: scan forward for the next offset where a header
 *     and its body checksum both hold (resync); the bytes in between are one dropped record;
 *   - bytes at the end of a block that hold no complete valid record (a torn write, or garbage
 *     after one): truncated away, counted as a torn tail.
 * A record may not move sequences backwards (MSG seq must exceed every sequence seen before);
 * one that does is counted as dropped. When sealed records exist and none of them opens, the
 * key is wrong: the open is refused (ERR_CORRUPT) before anything is changed for good.
 * Ctx: the store's opener. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"
#include "js/store/fs_crypt.h"

/* The next offset >= from where a complete, valid record starts, or n when there is none. */
static uint64_t
resync(const uint8_t *p, uint64_t n, uint64_t from)
{
    const uint8_t m0 = (uint8_t)(ND_FS_REC_MAGIC & 0xff);
    for (uint64_t o = from; o + ND_FS_REC_OVERHEAD <= n; o++) {
        const uint8_t *q = memchr(p + o, m0, n - o);
        if (!q)
            return n;
        o = (uint64_t)(q - p);
        nd_fs_rec_t r;
        if (nd_fs_rec_header(p + o, n - o, &r) == 1 && o + r.len <= n &&
            nd_fs_rec_verify(p + o, &r))
            return o;
    }
    return n;
}

static void
apply(nd_filestore_t *fs, nd_fs_blk_t *b, const uint8_t *rec, nd_fs_rec_t *r, uint64_t off,
      bool *bad)
{
    switch (r->kind) {
    case ND_FS_REC_MSG: {
        /* A transformed body is opened for its subject and lengths (a body that does not open
         * or decompress counts as a damaged record). */
        if (r->flags) {
            bool ok = nd_fs_xform_decode(fs, b, rec, r, &fs->rbuf, &fs->rcap) == ND_OK;
            if (r->flags & ND_FS_RECF_SEALED) {
                if (ok)
                    fs->sealed_ok++;
                else
                    fs->sealed_bad++;
            }
            if (!ok) {
                *bad = true;
                return;
            }
        }
        if (r->seq <= fs->last_seq || r->subj_len == 0 ||
            (b->nslots && r->seq > nd_fs_blk_last(b) + ND_FS_MAX_SLOT_GAP) || off >= UINT32_MAX) {
            *bad = true;
            return;
        }
        uint64_t msz = nd_store_msg_size(r->subj_len, r->hdr_len, r->data_len);
        if (!nd_fs_state_add(fs, b, r->seq, (uint32_t)off, r->subj, r->subj_len, ND_FS_NOSID,
                             (uint32_t)msz, r->ts))
            *bad = true;
        return;
    }
    case ND_FS_REC_TOMB:
    case ND_FS_REC_ERASED:
        b->nctl += r->kind == ND_FS_REC_TOMB;
        if (r->kind == ND_FS_REC_TOMB)
            b->keep_bytes += r->len;
        if (r->seq > fs->last_seq) {
            /* A skip (or a removed last message whose record is gone). */
            fs->last_seq = r->seq;
            if (r->ts > fs->last_ts)
                fs->last_ts = r->ts;
            if (!fs->msgs)
                fs->first_seq = fs->last_seq + 1;
        } else {
            nd_fs_state_remove(fs, r->seq);
        }
        return;
    case ND_FS_REC_MARK:
        b->nctl++;
        b->keep_bytes += r->len;
        /* The newest word on last_seq also carries last_ts (the payload). */
        if ((uint64_t)r->ts >= fs->last_seq && r->data_len == sizeof(int64_t))
            memcpy(&fs->last_ts, r->data, sizeof(int64_t));
        if ((uint64_t)r->ts > fs->last_seq && r->ts > 0)
            fs->last_seq = (uint64_t)r->ts;
        nd_fs_state_mark(fs, r->seq);
        if (!fs->msgs)
            fs->first_seq = fs->last_seq + 1;
        return;
    }
}

static nd_err_t
recover_one(nd_filestore_t *fs, uint32_t idx, nd_store_recovery_t *rep)
{
    char name[32];
    nd_fs_blk_name(idx, name);
    int fd = openat(fs->msgsfd, name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return nd_store_io_error(&fs->base, errno);
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        int e = errno;
        close(fd);
        return nd_store_io_error(&fs->base, e);
    }
    uint64_t n = (uint64_t)sb.st_size;
    uint8_t *p = nd_xmalloc(n);
    if (n && nd_fs_pread_all(fd, p, n, 0) < 0) {
        int e = errno;
        free(p);
        close(fd);
        return nd_store_io_error(&fs->base, e);
    }
    nd_fs_blk_t *b = nd_fs_blk_new(idx);
    nd_fs_add_blk(fs, b);
    b->fd = fd;
    fs->nopen++;
    b->base = fs->last_seq + 1;
    b->keep_bytes = ND_FS_BLK_HDR_LEN;

    bool corrupt = false;
    uint64_t end = n; /* where the valid content ends */
    if (n < ND_FS_BLK_HDR_LEN) {
        /* Created but its header never fully written: an empty block. */
        end = 0;
    } else {
        nd_err_t he = nd_fs_blk_hdr_check(p, n);
        if (he == ND_ERR_STORE_VERSION) {
            free(p);
            return ND_ERR_STORE_VERSION;
        }
        if (he != ND_OK)
            corrupt = true;
        if (fs->cfg.cipher != ND_CIPHER_NONE)
            (void)nd_fs_blk_crypt(fs, b, p);
        uint64_t o = ND_FS_BLK_HDR_LEN;
        while (o < n) {
            nd_fs_rec_t r;
            int h = nd_fs_rec_header(p + o, n - o, &r);
            if (h == 1 && o + r.len <= n) {
                if (nd_fs_rec_verify(p + o, &r)) {
                    bool bad = false;
                    apply(fs, b, p + o, &r, o, &bad);
                    if (bad) {
                        rep->records_dropped++;
                        rep->bytes_dropped += r.len;
                        corrupt = true;
                    }
                } else {
                    rep->records_dropped++;
                    rep->bytes_dropped += r.len;
                    corrupt = true;
                }
                o += r.len;
                continue;
            }
            /* Not a record here (or one running past the end): find the next valid one. */
            uint64_t next = resync(p, n, o + 1);
            if (next >= n) {
                end = o; /* nothing valid follows: a torn tail */
                break;
            }
            rep->records_dropped++;
            rep->bytes_dropped += next - o;
            corrupt = true;
            o = next;
        }
    }
    if (corrupt)
        rep->blocks_corrupt++;
    if (end < n || n < ND_FS_BLK_HDR_LEN) {
        if (n > 0) {
            rep->torn_tails++;
            rep->bytes_dropped += n - (end < ND_FS_BLK_HDR_LEN ? 0 : end);
        }
        if (end < ND_FS_BLK_HDR_LEN) {
            /* No record survives: a fresh header, with a fresh salt for a cipher store. */
            uint8_t hdr[ND_FS_BLK_HDR_LEN], salt[ND_FS_SALT_LEN] = {0};
            if (fs->cfg.cipher != ND_CIPHER_NONE && !nd_fs_salt_random(salt)) {
                free(p);
                return nd_store_io_error(&fs->base, EIO);
            }
            nd_fs_blk_hdr_encode_salt(hdr, (uint32_t)fs->cfg.cipher, salt);
            if (ftruncate(fd, 0) < 0 || nd_fs_pwrite_all(fd, hdr, sizeof(hdr), 0) < 0) {
                free(p);
                return nd_store_io_error(&fs->base, errno);
            }
            nd_fs_crypt_free(b->crypt);
            b->crypt = NULL;
            b->hdr_bad = false;
            end = ND_FS_BLK_HDR_LEN;
        } else if (ftruncate(fd, (off_t)end) < 0) {
            free(p);
            return nd_store_io_error(&fs->base, errno);
        }
        if (nd_fs_datasync(fd) < 0) {
            free(p);
            return nd_store_io_error(&fs->base, errno);
        }
    } else if (corrupt && n >= ND_FS_BLK_HDR_LEN && nd_fs_blk_hdr_check(p, n) != ND_OK &&
               fs->cfg.cipher == ND_CIPHER_NONE) {
        /* Give a damaged block header a fresh one so the next open does not count it again
         * (not with a cipher: the damaged header may still hold the salt its records need). */
        uint8_t hdr[ND_FS_BLK_HDR_LEN];
        nd_fs_blk_hdr_encode(hdr, 0);
        (void)nd_fs_pwrite_all(fd, hdr, sizeof(hdr), 0);
    }
    b->size = b->wsize = end;
    free(p);
    return ND_OK;
}

nd_err_t
nd_fs_recover_blocks(nd_filestore_t *fs, const uint32_t *idxs, size_t n, nd_store_recovery_t *rep)
{
    fs->sealed_ok = fs->sealed_bad = 0;
    for (size_t i = 0; i < n; i++) {
        nd_err_t e = recover_one(fs, idxs[i], rep);
        if (e != ND_OK)
            return e;
        /* Keep the number of open descriptors bounded on stores with many blocks. */
        if (i + 1 < n && fs->nopen > ND_FS_MAX_OPEN_FDS / 2)
            nd_fs_blk_close_fd(fs, fs->blks[fs->nblks - 1]);
    }
    if (!fs->msgs)
        fs->first_seq = fs->last_seq + 1;
    /* Sealed records exist and not one of them opens: the key is wrong (or every record is
     * damaged alike). Refuse, rather than go on with an empty stream whose blocks would be
     * dropped as empty: the right key must still find everything. */
    if (fs->sealed_bad && !fs->sealed_ok)
        return ND_ERR_STORE_CORRUPT;
    return ND_OK;
}
