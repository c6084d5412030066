/* File store record transforms: compression (LZ4 via fs_crypt.h) and sealing (AES-256-GCM or
 * ChaCha20-Poly1305 with a per-block salt). A transformed record's body is
 *   [sealed]( [compressed]( subj_len u16 | hdr_len u32 | data_len u32 | subj | hdr | data ) )
 * with the record header's first 32 bytes as AAD and the sequence as nonce, so a body moved to
 * another record, or given another header, does not open. Compression is kept only when it
 * makes the body smaller. Sequences are never sealed twice under one salt with different
 * contents: a truncation, the only way a sequence comes back, starts a new block (new salt).
 * Ctx: the store's owner. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"
#include "js/store/fs_crypt.h"

/* Messages smaller than this are not worth an LZ4 attempt. */
#define MIN_COMPRESS 64u

/* Sizes are a message's (bounded by max_msg_size) or a verified record's (bounded by its block). */
static void
grow(uint8_t **p, size_t *cap, size_t n)
{
    if (*cap >= n && *p)
        return;
    *cap = nd_grow_cap(*cap, n, 256);
    *p = nd_xrealloc(*p, *cap);
}

struct nd_fs_crypt *
nd_fs_blk_crypt(nd_filestore_t *fs, nd_fs_blk_t *b, const uint8_t *hdr)
{
    if (fs->cfg.cipher == ND_CIPHER_NONE)
        return NULL;
    if (b->crypt)
        return b->crypt;
    uint8_t buf[ND_FS_BLK_HDR_LEN];
    if (!hdr) {
        int fd = nd_fs_blk_fd(fs, b);
        if (fd < 0 || nd_fs_pread_all(fd, buf, sizeof(buf), 0) < 0)
            return NULL;
        hdr = buf;
    }
    /* A damaged header may still hold the right salt (a flipped magic byte, say): try it for
     * reading, since a wrong salt only makes the records fail to open. New records never go
     * into such a block (make_room starts a fresh one), so a doubtful salt is never reused. */
    if (nd_fs_blk_hdr_check(hdr, ND_FS_BLK_HDR_LEN) != ND_OK)
        b->hdr_bad = true;
    b->crypt = nd_fs_crypt_new(fs->cfg.cipher, fs->key, hdr + ND_FS_BLK_SALT_OFF);
    return b->crypt;
}

nd_err_t
nd_fs_xform_encode(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t seq, int64_t ts, const char *subj,
                   size_t sl, const void *hdr, size_t hl, const void *data, size_t dl,
                   uint8_t *flags, const uint8_t **body, size_t *blen)
{
    *flags = 0;
    *body = NULL;
    *blen = 0;
    if (!fs->xform)
        return ND_OK;
    size_t n = ND_FS_INNER_LEN + sl + hl + dl;
    size_t bound = nd_fs_compress_bound(n);
    /* Layout of xbuf: [0, n) the inner body, then room for the compressed form, then room for
     * the sealed form. */
    size_t cap = n + bound + n + bound + ND_FS_TAG_LEN + 64;
    grow(&fs->xbuf, &fs->xcap, cap);
    uint8_t *in = fs->xbuf;
    uint16_t s16 = (uint16_t)sl;
    uint32_t h32 = (uint32_t)hl, d32 = (uint32_t)dl;
    memcpy(in, &s16, 2);
    memcpy(in + 2, &h32, 4);
    memcpy(in + 6, &d32, 4);
    if (sl)
        memcpy(in + ND_FS_INNER_LEN, subj, sl);
    if (hl)
        memcpy(in + ND_FS_INNER_LEN + sl, hdr, hl);
    if (dl)
        memcpy(in + ND_FS_INNER_LEN + sl + hl, data, dl);
    const uint8_t *cur = in;
    size_t curn = n;
    uint8_t f = 0;
    if (fs->cfg.compression != ND_STORE_NONE && n >= MIN_COMPRESS && n <= ND_FS_COMPRESS_MAX) {
        uint8_t *c = in + n;
        size_t cn;
        if (nd_fs_compress(in, n, c, bound, &cn) && cn < n) {
            cur = c;
            curn = cn;
            f |= ND_FS_RECF_COMPRESSED;
        }
    }
    if (fs->cfg.cipher != ND_CIPHER_NONE) {
        struct nd_fs_crypt *cr = nd_fs_blk_crypt(fs, b, NULL);
        if (!cr)
            return nd_store_io_error(&fs->base, EIO);
        f |= ND_FS_RECF_SEALED;
        uint8_t aad[32];
        nd_fs_rec_hdr32(aad, ND_FS_REC_MSG, f, seq, ts, 0, 0, curn + ND_FS_TAG_LEN);
        uint8_t *out = in + n + bound;
        size_t on;
        if (!nd_fs_seal(cr, seq, aad, sizeof(aad), cur, curn, out, &on))
            return nd_store_io_error(&fs->base, EIO);
        cur = out;
        curn = on;
    }
    *flags = f;
    *body = cur;
    *blen = curn;
    return ND_OK;
}

nd_err_t
nd_fs_xform_decode(nd_filestore_t *fs, nd_fs_blk_t *b, const uint8_t *rec, nd_fs_rec_t *r,
                   uint8_t **buf, size_t *cap)
{
    const uint8_t *cur = r->data;
    size_t curn = r->data_len;
    uint8_t *opened = NULL, *inflated = NULL;
    nd_err_t e = ND_ERR_STORE_CORRUPT;
    if (r->subj_len || r->hdr_len)
        goto out;
    if (r->flags & ND_FS_RECF_SEALED) {
        struct nd_fs_crypt *cr = nd_fs_blk_crypt(fs, b, NULL);
        if (!cr || curn < ND_FS_TAG_LEN)
            goto out;
        opened = nd_xmalloc(curn);
        size_t on;
        if (!nd_fs_open_sealed(cr, r->seq, rec, 32, cur, curn, opened, &on))
            goto out;
        cur = opened;
        curn = on;
    }
    if (r->flags & ND_FS_RECF_COMPRESSED) {
        /* LZ4 expands at most about 255 times: a body claiming more is damaged, and is
         * refused before anything that large is allocated. */
        size_t max = ND_FS_INNER_LEN + UINT16_MAX + 2 * (size_t)ND_FS_REC_MAX_FIELD;
        if (curn < max / 256)
            max = curn * 256 + 64;
        size_t dn;
        if (!nd_fs_decompress_alloc(cur, curn, max, &inflated, &dn))
            goto out;
        cur = inflated;
        curn = dn;
    }
    if (curn < ND_FS_INNER_LEN)
        goto out;
    uint16_t sl;
    uint32_t hl, dl;
    memcpy(&sl, cur, 2);
    memcpy(&hl, cur + 2, 4);
    memcpy(&dl, cur + 6, 4);
    if ((size_t)ND_FS_INNER_LEN + sl + hl + dl != curn)
        goto out;
    size_t n = curn - ND_FS_INNER_LEN;
    grow(buf, cap, n ? n : 1);
    memcpy(*buf, cur + ND_FS_INNER_LEN, n);
    r->subj = (const char *)*buf;
    r->subj_len = sl;
    r->hdr = *buf + sl;
    r->hdr_len = hl;
    r->data = *buf + sl + hl;
    r->data_len = dl;
    e = ND_OK;
out:
    free(opened);
    free(inflated);
    return e;
}
