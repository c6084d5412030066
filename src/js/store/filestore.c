/* The file store: a JetStream stream kept in append-only files that survive a crash
 * (natsd/store.h).
 *
 * Format (cfg->dir; all integers little endian; constants in filestore.h)
 *   meta.dat          magic, format version, cipher, compression, XXH64.
 *   msgs/<n>.blk      message blocks, n = 1, 2, ... A block is a 48-byte header (magic, version,
 *                     flags = cipher | compression << 8, a random 16-byte salt, XXH64 of the
 *                     header) followed by records. A new block starts
 *                     when the next message would push the current one past cfg->block_size
 *                     (default 8 MiB). Only the last block ("active") is appended to.
 *   record            40-byte header {magic u32, kind u8, flags u8, subj_len u16, hdr_len u32,
 *                     data_len u32, seq u64, ts i64, hck u32, zero u32}, the subject, headers and
 *                     payload, then XXH64 over header and body. hck is the low half of an XXH3-64
 *                     of the first 32 header bytes, so a record start can be recognised without
 *                     trusting anything around it (resynchronisation after damage).
 *   kinds             MSG   a message.
 *                     TOMB  "seq was removed" (remove, purge with a filter, per-subject limits,
 *                           skip). It also raises last_seq to seq, which is how a skip persists.
 *                     MARK  "every seq below `seq` is gone; last_seq is at least ts"; its 8-byte
 *                           payload is last_ts (removal of the first message, limits, max_age,
 *                           compact, purge, compaction). One MARK replaces any number of TOMBs
 *                           at the front of the stream.
 *                     ERASED a message removed with secure=true: rewritten in place with a
 *                           zeroed body and a fresh checksum.
 *   transforms        with compression and/or a cipher (fs_xform.c), a MSG record's flags say
 *                     COMPRESSED/SEALED and its body is [sealed]([LZ4](lengths | subject |
 *                     headers | payload)), sealed with AES-256-GCM or ChaCha20-Poly1305 under
 *                     a key derived from the stream key and the block's salt, nonce = seq,
 *                     AAD = the record header. Subjects are inside the sealed body too. A
 *                     sequence that can come back (truncate, a rolled-back write) is sealed
 *                     again only in a new block, under a new salt.
 *   index.db          a cache of the in-memory index (per block: size, mtime, inode and the
 *                     slot arrays; the subjects), written on close and at checkpoints, XXH64
 *                     over all of it. It is used only when every block's size, mtime and inode
 *                     match and no block was added or removed; otherwise the blocks are scanned.
 *   obs/<name>.cs     a consumer's state: magic, version, length, nd_cstate_encode bytes, XXH64;
 *                     replaced by write-temp, fsync, rename, fsync-dir.
 *   Subjects never appear in file names; consumer names are checked (no '/', no "..").
 *
 * In memory: per block, for each sequence base..base+n-1, the record offset (or "none"), subject
 * id, message size and timestamp (20 bytes a message); message bodies are read with pread (or
 * from the write buffer). Reads that walk a block forward (a consumer) go through one
 * read-ahead window of ND_FS_RA_SIZE bytes per store (read_at): one pread per window instead of
 * one per message. It only ever holds bytes below the block's wsize, which appends never
 * touch; whatever else changes them (rollback's ftruncate, a secure erase, a rewrite) or frees
 * the block drops it first. A subject table maps subject -> {msgs, first, last} (fs_subj.c,
 * fs_state.c); first/last are recomputed lazily after removals, as in the memstore. Unfiltered
 * counts (filtered_state, num_pending) add up the blocks' message counters.
 *
 * Invariants
 *   - Sequences only grow along the files: the MSG records of block n+1 have higher seqs than
 *     those of block n, and inside a block they increase. A removed sequence is never reused
 *     (except by truncate, which rewrites the block it cuts and deletes the later ones).
 *   - Every removal is on disk as a TOMB, MARK or ERASED record, or by the absence of the
 *     record (compaction/truncate rewrote its block). When a block is dropped or rewritten, the
 *     TOMBs it holds for earlier, still existing blocks are carried into the rewritten block or
 *     re-appended (and synced) to the active block before the old file goes, and a MARK with the
 *     current first/last sequence goes with them, so the blocks alone always describe the state.
 *   - The active block is never dropped; a rewritten block ends with a MARK(first, last,
 *     last_ts); a dropped block's floor and ceiling go to the active block first (MARK). So
 *     last_seq and last_ts survive the loss of every message record.
 *   - A secure remove commits its TOMB/MARK before overwriting the message in place, so a
 *     failure leaves either nothing done or the message removed.
 *   - The index is a cache: it is deleted before any in-place rewrite, and it describes exact
 *     block sizes and mtimes, so a stale index is detected and ignored.
 *   - Limits/discard/max_age semantics are the memstore's (memstore.c), step by step.
 *   - Per-message TTLs are not in the records: as in nats-server, they are read back from the
 *     messages' Nats-TTL headers at open (every live message of a stream with allow_msg_ttl is
 *     read once then) into the deadline heap (store_ttl.h). Expiry by TTL and by max_age are
 *     derived removals like the limits': recovery makes them again.
 *
 * Recovery (fs_recover.c): meta.dat is checked (a newer version is ERR_VERSION), leftover *.tmp
 * files are removed, then index.db is used when it is intact and current. Otherwise every block
 * is scanned in order: a record whose header checksum fails makes the scanner look for the next
 * valid record header whose full checksum also holds (resync); a record whose header holds but
 * whose body checksum fails is skipped by its length; either counts in records_dropped and
 * blocks_corrupt. Bytes that end a block without a complete valid record (a torn write) are
 * truncated away and count in torn_tails. Records are applied in file order through the same
 * state functions the writers use, so sequences are never renumbered: a lost record becomes a
 * deleted gap. A block header from a newer version is ERR_VERSION. Limits and max_age are then
 * enforced as at any other time.
 *
 * Sync semantics
 *   sync_always: store/store_raw/skip/remove/purge/compact/truncate return only after their
 *     records were written and fdatasync'ed (plus the directory after a file was created or
 *     removed). Removals made by limits (max_msgs, max_bytes, per-subject, max_age) are written
 *     with the next call or tick, not synced at once: they are made again from the limits at
 *     recovery, so losing them loses nothing.
 *   interval (default): appends go to a per-block write buffer that reaches write() when it
 *     fills (256 KiB), on a tick at most ND_FS_FLUSH_NS (10 ms) later, on sync/close, or before
 *     an operation that needs the file. fsync runs every sync_interval (default 2 min) from tick.
 *     So a power failure loses up to sync_interval of acknowledged writes; a process crash loses
 *     only what was still in the write buffer (at most ND_FS_FLUSH_NS old when the owner ticks on
 *     time), never anything that reached write().
 *   Order: the changes made outside the append order (an in-place secure erase, a compaction
 *     rewrite, a block removal) first write the buffer and fdatasync the active block (a front
 *     block dropped under the interval policy: write only), so what survives a process crash
 *     is always a prefix of the calls, never a later removal without an earlier store.
 *   Errors: a failed or short write (EIO, ENOSPC, ...) returns ERR_IO with errno kept
 *     (nd_store_io_errno); the file is cut back to its last complete record and nothing of the
 *     failed call is reported stored. Under the interval policy, data that was buffered by
 *     earlier calls stays buffered and is retried by the next flush (a full disk may recover).
 *     A failed fsync is never retried or ignored: the store refuses every later write with
 *     ERR_IO (reads still work), as PostgreSQL learnt ("fsyncgate").
 *
 * References: nats-server server/filestore.go (blocks, tombstones, sync policy, index rebuild),
 * server/memstore.go for semantics; shared/spec/reliability.md.
 */
#include <dirent.h>
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
#include "js/store/store_snapshot.h"
#include "js/store/store_util.h"
#include "subj/subject.h"

static const nd_store_ops_t filestore_ops;

/* ---- helpers ---------------------------------------------------------------------------- */

int64_t
nd_fs_now(nd_filestore_t *fs)
{
    return nd_store_now(&fs->cfg);
}

static inline nd_fs_blk_t *
active_blk(nd_filestore_t *fs)
{
    return fs->nblks ? fs->blks[fs->nblks - 1] : NULL;
}

static nd_err_t
io_fail(nd_filestore_t *fs, int err, bool fatal)
{
    if (fatal && !fs->failed) {
        fs->failed = true;
        fs->failed_errno = err;
    }
    return nd_store_io_error(&fs->base, err);
}

static nd_err_t
writable(nd_filestore_t *fs)
{
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (fs->failed)
        return nd_store_io_error(&fs->base, fs->failed_errno);
    return ND_OK;
}

/* Notes a change of the files. Records made by the limits (fs->deriving) arm no flush or
 * sync deadline: recovery makes them again from the limits, so they can wait for the next
 * write, checkpoint or close. */
static void
changed(nd_filestore_t *fs)
{
    fs->index_stale = true;
    if (!fs->next_sync && !fs->deriving)
        fs->next_sync = nd_fs_now(fs) + fs->sync_ns;
}

/* Record length of a live slot (records are stored uncompressed). */
static inline size_t
slot_rec_len(const nd_fs_blk_t *b, uint32_t i)
{
    return (size_t)b->msz[i] - 16 + ND_FS_REC_OVERHEAD;
}

/* Forgets the read-ahead window when it (or the in-order tracking) refers to block b, or to
 * any block when b is NULL. Called before bytes below b's wsize change or b is freed. */
static void
ra_drop(nd_filestore_t *fs, const nd_fs_blk_t *b)
{
    if (!b || fs->ra_blk == b)
        fs->ra_blk = NULL;
    if (!b || fs->ra_last_blk == b)
        fs->ra_last_blk = NULL;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* Writes the buffered bytes of the active block. On failure the file is cut back to its last
 * complete record and the bytes stay buffered (a later flush retries the write). */
static nd_err_t
flush(nd_filestore_t *fs)
{
    nd_fs_blk_t *b = active_blk(fs);
    if (!b || !fs->wlen)
        return ND_OK;
    int fd = nd_fs_blk_fd(fs, b);
    if (fd < 0)
        return io_fail(fs, errno, false);
    if (nd_fs_pwrite_all(fd, fs->wbuf, fs->wlen, (off_t)b->wsize) < 0) {
        int e = errno;
        /* A partial write leaves a torn record; cut it off so the file stays well formed. If
         * even that fails, recovery will do it, but we stop writing. */
        if (ftruncate(fd, (off_t)b->wsize) < 0)
            return io_fail(fs, e, true);
        return io_fail(fs, e, false);
    }
    b->wsize += fs->wlen;
    fs->wlen = 0;
    fs->next_flush = 0;
    b->unsynced = true;
    return ND_OK;
}

static nd_err_t
sync_dirs(nd_filestore_t *fs)
{
    if (!fs->dir_unsynced)
        return ND_OK;
    if (nd_fs_datasync(fs->msgsfd) < 0 || nd_fs_datasync(fs->dirfd) < 0)
        return io_fail(fs, errno, true);
    fs->dir_unsynced = false;
    return ND_OK;
}

static nd_err_t
sync_blk(nd_filestore_t *fs, nd_fs_blk_t *b)
{
    if (!b->unsynced)
        return ND_OK;
    int fd = nd_fs_blk_fd(fs, b);
    if (fd < 0)
        return io_fail(fs, errno, true);
    if (nd_fs_datasync(fd) < 0)
        return io_fail(fs, errno, true);
    b->unsynced = false;
    return ND_OK;
}

/* Flushes and fsyncs everything: blocks, directories, consumer files. */
static nd_err_t
sync_all(nd_filestore_t *fs)
{
    if (fs->failed)
        return nd_store_io_error(&fs->base, fs->failed_errno);
    nd_err_t e = flush(fs);
    if (e != ND_OK)
        return e;
    for (size_t i = 0; i < fs->nblks; i++)
        if ((e = sync_blk(fs, fs->blks[i])) != ND_OK)
            return e;
    if ((e = sync_dirs(fs)) != ND_OK)
        return e;
    if (nd_fs_consumers_sync(fs) < 0)
        return io_fail(fs, errno, true);
    fs->next_sync = 0;
    return ND_OK;
}

/* Writes and fdatasyncs the active block: what was appended so far is durable before a change
 * made outside the append order (an in-place erase, a rewrite, a block removal). */
static nd_err_t
barrier(nd_filestore_t *fs)
{
    nd_err_t e = flush(fs);
    if (e == ND_OK && active_blk(fs))
        e = sync_blk(fs, active_blk(fs));
    return e;
}

/* Starts a new active block whose first sequence will be base. */
static nd_err_t
roll(nd_filestore_t *fs, uint64_t base)
{
    nd_fs_blk_t *old = active_blk(fs);
    nd_err_t e;
    if (old) {
        if ((e = flush(fs)) != ND_OK)
            return e;
        if (fs->cfg.sync_always && (e = sync_blk(fs, old)) != ND_OK)
            return e;
    }
    uint32_t idx = fs->next_idx ? fs->next_idx : 1;
    char name[32];
    nd_fs_blk_name(idx, name);
    int fd = openat(fs->msgsfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return io_fail(fs, errno, false);
    uint8_t hdr[ND_FS_BLK_HDR_LEN], salt[ND_FS_SALT_LEN] = {0};
    if (fs->cfg.cipher != ND_CIPHER_NONE && !nd_fs_salt_random(salt)) {
        close(fd);
        unlinkat(fs->msgsfd, name, 0);
        return io_fail(fs, EIO, false);
    }
    nd_fs_blk_hdr_encode_salt(hdr, (uint32_t)fs->cfg.cipher | (uint32_t)fs->cfg.compression << 8,
                              salt);
    nd_fs_blk_t *b = nd_fs_blk_new(idx);
    if (nd_fs_pwrite_all(fd, hdr, sizeof(hdr), 0) < 0) {
        int err = errno;
        close(fd);
        unlinkat(fs->msgsfd, name, 0);
        nd_fs_blk_free(b);
        return io_fail(fs, err ? err : EIO, false);
    }
    nd_fs_add_blk(fs, b);
    if (old && old->fd >= 0 && !old->unsynced && fs->nopen >= ND_FS_MAX_OPEN_FDS / 2)
        nd_fs_blk_close_fd(fs, old);
    b->fd = fd;
    fs->nopen++;
    b->base = base;
    b->size = b->wsize = ND_FS_BLK_HDR_LEN;
    b->keep_bytes = ND_FS_BLK_HDR_LEN;
    b->unsynced = true;
    fs->dir_unsynced = true;
    fs->force_roll = false;
    if (fs->cfg.cipher != ND_CIPHER_NONE)
        (void)nd_fs_blk_crypt(fs, b, hdr);
    changed(fs);
    return ND_OK;
}

static void
wbuf_reserve(nd_filestore_t *fs, size_t n)
{
    if (fs->wlen + n <= fs->wcap)
        return;
    size_t nc = fs->wcap ? fs->wcap : (ND_FS_WBUF_FLUSH_AT + (64u << 10));
    while (nc < fs->wlen + n)
        nc *= 2;
    fs->wbuf = nd_xrealloc(fs->wbuf, nc);
    fs->wcap = nc;
}

/* Appends one record to the active block's buffer (starting a block when there is none, or,
 * when may_roll, when the record does not fit). *off receives its offset in the block. */
/* Starts a new block when there is none, or (may_roll) when a record of len bytes does not fit
 * the active one or seq is too far past its slots. */
static nd_err_t
make_room(nd_filestore_t *fs, uint8_t kind, uint64_t seq, size_t len, bool may_roll)
{
    nd_fs_blk_t *b = active_blk(fs);
    bool roll_now = !b || (may_roll && fs->force_roll);
    if (b && may_roll && fs->cfg.cipher != ND_CIPHER_NONE &&
        (!nd_fs_blk_crypt(fs, b, NULL) || b->hdr_bad))
        roll_now = true; /* no trustworthy salt to seal with */
    if (b && may_roll) {
        if (b->size > ND_FS_BLK_HDR_LEN && b->size + len > fs->block_size)
            roll_now = true;
        else if (b->nslots && seq > nd_fs_blk_last(b) + ND_FS_MAX_SLOT_GAP)
            roll_now = true;
    }
    if (b && b->size + len >= (uint64_t)UINT32_MAX - 1)
        roll_now = true;
    if (roll_now)
        return roll(fs, kind == ND_FS_REC_MSG ? seq : fs->last_seq + 1);
    return ND_OK;
}

static nd_err_t
append_flags(nd_filestore_t *fs, uint8_t kind, uint8_t flags, uint64_t seq, int64_t ts,
             const char *subj, size_t sl, const void *hdr, size_t hl, const void *data, size_t dl,
             bool may_roll, uint32_t *off)
{
    size_t len = nd_fs_rec_len(sl, hl, dl);
    nd_err_t e = make_room(fs, kind, seq, len, may_roll);
    if (e != ND_OK)
        return e;
    nd_fs_blk_t *b = active_blk(fs);
    wbuf_reserve(fs, len);
    nd_fs_rec_encode_flags(fs->wbuf + fs->wlen, kind, flags, seq, ts, subj, sl, hdr, hl, data, dl);
    if (off)
        *off = (uint32_t)b->size;
    fs->wlen += len;
    b->size += len;
    if (kind != ND_FS_REC_MSG) {
        b->nctl++;
        b->keep_bytes += len;
    }
    if (!fs->next_flush && !fs->deriving)
        fs->next_flush = nd_fs_now(fs) + ND_FS_FLUSH_NS;
    changed(fs);
    return ND_OK;
}

static nd_err_t
append(nd_filestore_t *fs, uint8_t kind, uint64_t seq, int64_t ts, const char *subj, size_t sl,
       const void *hdr, size_t hl, const void *data, size_t dl, bool may_roll, uint32_t *off)
{
    return append_flags(fs, kind, 0, seq, ts, subj, sl, hdr, hl, data, dl, may_roll, off);
}

/* Appends a message record, compressed and/or sealed when the store says so. */
static nd_err_t
append_msg(nd_filestore_t *fs, uint64_t seq, int64_t ts, const char *subj, size_t sl,
           const void *hdr, size_t hl, const void *data, size_t dl, uint32_t *off)
{
    if (!fs->xform)
        return append(fs, ND_FS_REC_MSG, seq, ts, subj, sl, hdr, hl, data, dl, true, off);
    /* The block is chosen first (its salt seals the body); compression only ever shrinks the
     * body, so the uncompressed size plus a tag is a safe estimate for the rollover. */
    size_t est = ND_FS_REC_OVERHEAD + ND_FS_INNER_LEN + sl + hl + dl + ND_FS_TAG_LEN;
    nd_err_t e = make_room(fs, ND_FS_REC_MSG, seq, est, true);
    if (e != ND_OK)
        return e;
    uint8_t flags;
    const uint8_t *body;
    size_t blen;
    e = nd_fs_xform_encode(fs, active_blk(fs), seq, ts, subj, sl, hdr, hl, data, dl, &flags, &body,
                           &blen);
    if (e != ND_OK)
        return e;
    if (!flags)
        return append(fs, ND_FS_REC_MSG, seq, ts, subj, sl, hdr, hl, data, dl, false, off);
    return append_flags(fs, ND_FS_REC_MSG, flags, seq, ts, NULL, 0, NULL, 0, body, blen, false,
                        off);
}

/* MARK(first): ts holds last_seq, the 8-byte payload last_ts (both survive the loss of every
 * message record). */
static nd_err_t
append_mark(nd_filestore_t *fs, uint64_t first)
{
    uint64_t last = fs->last_seq > first - 1 ? fs->last_seq : first - 1;
    return append(fs, ND_FS_REC_MARK, first, (int64_t)last, NULL, 0, NULL, 0, &fs->last_ts,
                  sizeof(fs->last_ts), false, NULL);
}

static nd_err_t
append_tomb(nd_filestore_t *fs, uint64_t seq, int64_t ts)
{
    return append(fs, ND_FS_REC_TOMB, seq, ts, NULL, 0, NULL, 0, NULL, 0, false, NULL);
}

/* Where the active block stood when a call began: what rollback returns to. */
typedef struct wmark {
    nd_fs_blk_t *blk;
    uint64_t size;
} wmark_t;

static wmark_t
wmark(nd_filestore_t *fs)
{
    nd_fs_blk_t *b = active_blk(fs);
    return (wmark_t){b, b ? b->size : 0};
}

/* Forgets the records appended since m (the call that made them failed). */
static void
rollback(nd_filestore_t *fs, wmark_t m)
{
    nd_fs_blk_t *b = active_blk(fs);
    if (!b)
        return;
    /* A sealed record that was written (even in part) must not have its sequence sealed again
     * under the same salt with other contents: the next message starts a new block. */
    if (fs->cfg.cipher != ND_CIPHER_NONE)
        fs->force_roll = true;
    uint64_t target = b == m.blk ? m.size : ND_FS_BLK_HDR_LEN;
    if (target >= b->wsize) {
        fs->wlen -= (size_t)(b->size - target);
    } else {
        ra_drop(fs, b);
        int fd = nd_fs_blk_fd(fs, b);
        if (fd < 0 || ftruncate(fd, (off_t)target) < 0)
            io_fail(fs, errno, true);
        b->wsize = target;
        fs->wlen = 0;
    }
    b->size = target;
}

/* Ends a writing call: with sync_always, writes and fdatasyncs everything appended so far. On
 * failure the records since m are forgotten (and, after an fsync failure, every later write
 * refused). */
static nd_err_t
commit(nd_filestore_t *fs, wmark_t m)
{
    if (!fs->cfg.sync_always)
        return ND_OK;
    nd_err_t e = flush(fs);
    if (e == ND_OK && active_blk(fs))
        e = sync_blk(fs, active_blk(fs));
    if (e == ND_OK)
        e = sync_dirs(fs);
    if (e != ND_OK)
        rollback(fs, m);
    return e;
}

/* Called at the start of every writing call: refuses when failed or closed, and writes out a
 * full buffer so that the call itself appends to memory only. */
static nd_err_t
begin(nd_filestore_t *fs)
{
    nd_err_t e = writable(fs);
    if (e != ND_OK)
        return e;
    if (fs->wlen >= ND_FS_WBUF_FLUSH_AT)
        return flush(fs);
    return ND_OK;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* Fills the window with block b's file bytes from off (at most up to its wsize) and copies the
 * first n to p. Returns: false when the fill failed (the caller reads the n bytes directly). */
static bool
ra_fill(nd_filestore_t *fs, nd_fs_blk_t *b, int fd, uint64_t off, void *p, size_t n)
{
    size_t len = ND_FS_RA_SIZE;
    if (b->wsize - off < len)
        len = (size_t)(b->wsize - off);
    if (!fs->ra_buf)
        fs->ra_buf = nd_xmalloc(ND_FS_RA_SIZE);
    fs->ra_blk = NULL;
    /* A file shorter than wsize (damaged behind our back) fails here; the exact read may
     * still succeed, and it decides the error. */
    if (nd_fs_pread_all(fd, fs->ra_buf, len, (off_t)off) < 0)
        return false;
    fs->ra_blk = b;
    fs->ra_off = off;
    fs->ra_len = len;
    fs->ra_used = true;
    memcpy(p, fs->ra_buf, n);
    return true;
}

/* Reads n bytes of block b at off: from the write buffer, from the read-ahead window, or from
 * the file. A read that follows the previous one in the same block (a consumer walking the
 * stream) refills the window, so in-order loads cost one pread per ND_FS_RA_SIZE bytes; any
 * other read (a random load, a large record) is one exact pread as before. */
static nd_err_t
read_at(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t off, void *p, size_t n)
{
    if (b == active_blk(fs) && off >= b->wsize) {
        memcpy(p, fs->wbuf + (off - b->wsize), n);
        return ND_OK;
    }
    if (off < b->wsize && off + n > b->wsize) {
        /* Straddles the buffer: cannot happen for whole records, but stay correct. */
        nd_err_t e = flush(fs);
        if (e != ND_OK)
            return e;
    }
    bool in_order =
        b == fs->ra_last_blk && off > fs->ra_last_off && off <= fs->ra_last_end + ND_FS_RA_SIZE;
    fs->ra_last_blk = b;
    fs->ra_last_off = off;
    fs->ra_last_end = off + n;
    if (b == fs->ra_blk && off >= fs->ra_off && off + n <= fs->ra_off + fs->ra_len) {
        memcpy(p, fs->ra_buf + (off - fs->ra_off), n);
        fs->ra_used = true;
        return ND_OK;
    }
    int fd = nd_fs_blk_fd(fs, b);
    if (fd < 0)
        return nd_store_io_error(&fs->base, errno);
    if (in_order && n <= ND_FS_RA_SIZE / 4 && ra_fill(fs, b, fd, off, p, n))
        return ND_OK;
    if (nd_fs_pread_all(fd, p, n, (off_t)off) < 0)
        return nd_store_io_error(&fs->base, errno);
    return ND_OK;
}

/* The length of the record of live slot i, from its header. */
static nd_err_t
rec_len_of(nd_filestore_t *fs, nd_fs_blk_t *b, uint32_t i, size_t *len)
{
    uint8_t h[ND_FS_REC_HDR_LEN];
    nd_err_t e = read_at(fs, b, b->off[i], h, sizeof(h));
    if (e != ND_OK)
        return e;
    nd_fs_rec_t r;
    if (nd_fs_rec_header(h, sizeof(h), &r) != 1)
        return ND_ERR_STORE_CORRUPT;
    *len = r.len;
    return ND_OK;
}

/* Sizes come from records whose length was checked against their block's size. */
static void
buf_reserve(uint8_t **p, size_t *cap, size_t n)
{
    if (*cap >= n && *p)
        return;
    size_t nc = n < 256 ? 256 : n;
    *p = nd_xrealloc(*p, nc);
    *cap = nc;
}

/* Loads live slot i. A plain record's length follows from the message size, so one read
 * fetches it straight into the caller's buffer; a transformed record (compressed or sealed:
 * its header says so, and its length differs) is read whole into scratch and decoded. */
static nd_err_t
load_slot(nd_filestore_t *fs, nd_fs_blk_t *b, uint32_t i, nd_store_msg_t *out)
{
    uint64_t off = b->off[i];
    size_t len = slot_rec_len(b, i);
    if (off + len > b->size)
        len = (size_t)(b->size - off);
    if (len < ND_FS_REC_HDR_LEN)
        return ND_ERR_STORE_CORRUPT;
    buf_reserve(&out->buf, &out->cap, len);
    nd_err_t e = read_at(fs, b, off, out->buf, len);
    if (e != ND_OK)
        return e;
    nd_fs_rec_t r;
    uint64_t seq = b->base + i;
    if (nd_fs_rec_header(out->buf, len, &r) != 1 || r.kind != ND_FS_REC_MSG || r.seq != seq)
        return ND_ERR_STORE_CORRUPT;
    if (r.flags || r.len != len) {
        if (off + r.len > b->size)
            return ND_ERR_STORE_CORRUPT;
        buf_reserve(&fs->rbuf, &fs->rcap, r.len);
        if (r.len <= len) {
            memcpy(fs->rbuf, out->buf, r.len);
        } else {
            memcpy(fs->rbuf, out->buf, len);
            if ((e = read_at(fs, b, off + len, fs->rbuf + len, r.len - len)) != ND_OK)
                return e;
        }
        if (!nd_fs_rec_verify(fs->rbuf, &r))
            return ND_ERR_STORE_CORRUPT;
        if (r.flags) {
            if ((e = nd_fs_xform_decode(fs, b, fs->rbuf, &r, &out->buf, &out->cap)) != ND_OK)
                return e;
        } else {
            size_t n = r.subj_len + r.hdr_len + r.data_len;
            buf_reserve(&out->buf, &out->cap, n);
            memcpy(out->buf, fs->rbuf + ND_FS_REC_HDR_LEN, n);
            r.subj = (const char *)out->buf;
            r.hdr = out->buf + r.subj_len;
            r.data = out->buf + r.subj_len + r.hdr_len;
        }
    } else if (!nd_fs_rec_verify(out->buf, &r)) {
        return ND_ERR_STORE_CORRUPT;
    }
    out->seq = seq;
    out->ts = r.ts;
    out->subj = r.subj;
    out->subj_len = r.subj_len;
    out->hdr = r.hdr;
    out->hdr_len = r.hdr_len;
    out->data = r.data;
    out->data_len = r.data_len;
    return ND_OK;
}

static bool
slot_matches(nd_filestore_t *fs, nd_fs_blk_t *b, uint32_t i, const char *f, size_t fl, bool all,
             uint32_t lit_sid)
{
    if (all)
        return true;
    if (lit_sid != ND_FS_NOSID)
        return b->sid[i] == lit_sid;
    const nd_fs_subj_t *e = &fs->subj.ents[b->sid[i]];
    return nd_subj_match(f, fl, e->s, e->len);
}

/* ---- block maintenance ------------------------------------------------------------------ */

static void
unlink_index(nd_filestore_t *fs)
{
    if (fs->index_on_disk) {
        unlinkat(fs->dirfd, ND_FS_INDEX_FILE, 0);
        fs->index_on_disk = false;
        fs->dir_unsynced = true;
    }
}

/* Reads block b's bytes [0, wsize) (its buffer flushed first when it is the active one). */
static nd_err_t
read_blk(nd_filestore_t *fs, nd_fs_blk_t *b, uint8_t **out)
{
    nd_err_t e;
    if (b == active_blk(fs) && (e = flush(fs)) != ND_OK)
        return e;
    uint8_t *p = nd_xmalloc(b->wsize);
    int fd = nd_fs_blk_fd(fs, b);
    if (fd < 0 || nd_fs_pread_all(fd, p, b->wsize, 0) < 0) {
        free(p);
        return nd_store_io_error(&fs->base, errno);
    }
    *out = p;
    return ND_OK;
}

/* Calls fn for each valid TOMB target and returns the highest sequence the block's records
 * mention (its contribution to last_seq). */
static uint64_t
blk_scan_ctl(const uint8_t *p, uint64_t n, void (*fn)(void *, uint64_t), void *arg)
{
    uint64_t hi = 0;
    for (uint64_t o = ND_FS_BLK_HDR_LEN; o < n;) {
        nd_fs_rec_t r;
        if (nd_fs_rec_header(p + o, n - o, &r) != 1 || o + r.len > n) {
            o++;
            continue;
        }
        if (!nd_fs_rec_verify(p + o, &r)) {
            o += r.len;
            continue;
        }
        switch (r.kind) {
        case ND_FS_REC_TOMB:
            if (fn)
                fn(arg, r.seq);
            /* fallthrough */
        case ND_FS_REC_MSG:
        case ND_FS_REC_ERASED:
            if (r.seq > hi)
                hi = r.seq;
            break;
        case ND_FS_REC_MARK:
            if ((uint64_t)r.ts > hi)
                hi = (uint64_t)r.ts;
            if (r.seq - 1 > hi && r.seq > 0)
                hi = r.seq - 1;
            break;
        }
        o += r.len;
    }
    return hi;
}

typedef struct seqvec {
    uint64_t *v;
    size_t n, cap;
    uint64_t lo, hi; /* keep only targets in [lo, hi) */
} seqvec_t;

static void
seqvec_push(seqvec_t *sv, uint64_t s)
{
    if (sv->n == sv->cap) {
        size_t nc = sv->cap ? sv->cap * 2 : 64;
        sv->v = nd_xrealloc(sv->v, nc * sizeof(*sv->v));
        sv->cap = nc;
    }
    sv->v[sv->n++] = s;
}

static void
collect_tomb(void *arg, uint64_t s)
{
    seqvec_t *sv = arg;
    if (s >= sv->lo && s < sv->hi)
        seqvec_push(sv, s);
}

/* The length of the record at off in a block image of n bytes (0 when it is not one). */
static size_t
old_rec_len(const uint8_t *p, uint64_t n, uint64_t off)
{
    nd_fs_rec_t r;
    if (off >= n || nd_fs_rec_header(p + off, n - off, &r) != 1 || off + r.len > n)
        return 0;
    return r.len;
}

/* Rewrites block b with: the TOMBs in extra, the TOMBs b holds for earlier blocks, its live
 * messages with seq <= keep_max, and a MARK(first_seq, last). Temp file, fdatasync, rename,
 * fsync of the directory; b's offsets change only once the new file is in place. */
static nd_err_t
rewrite_blk(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t keep_max, const seqvec_t *extra,
            int64_t last_ts)
{
    uint8_t *old = NULL;
    nd_err_t e = read_blk(fs, b, &old);
    if (e != ND_OK)
        return e;
    seqvec_t own = {.lo = fs->first_seq, .hi = b->nslots ? b->base : fs->last_seq + 1};
    uint64_t hi = blk_scan_ctl(old, b->wsize, collect_tomb, &own);
    if (hi > keep_max)
        hi = keep_max;
    size_t nctl = own.n + (extra ? extra->n : 0) + 1;
    size_t ctl = nctl * ND_FS_REC_OVERHEAD + sizeof(last_ts);
    size_t cap = ND_FS_BLK_HDR_LEN + ctl;
    for (uint32_t i = b->first_slot; i < b->nslots; i++)
        if (b->off[i] != ND_FS_NOOFF && b->base + i <= keep_max)
            cap += old_rec_len(old, b->wsize, b->off[i]);
    uint8_t *nb = nd_xmalloc(cap);
    uint32_t *noff = nd_xmalloc((b->nslots ? b->nslots : 1) * sizeof(*noff));
    /* The header (and its salt, which the sealed records need) stays as it was. */
    if (b->wsize >= ND_FS_BLK_HDR_LEN && nd_fs_blk_hdr_check(old, b->wsize) == ND_OK)
        memcpy(nb, old, ND_FS_BLK_HDR_LEN);
    else
        nd_fs_blk_hdr_encode(nb, 0);
    size_t o = ND_FS_BLK_HDR_LEN;
    uint64_t first = fs->first_seq;
    for (int pass = 0; pass < 2; pass++) {
        const seqvec_t *sv = pass ? &own : extra;
        for (size_t k = 0; sv && k < sv->n; k++) {
            nd_fs_rec_encode(nb + o, ND_FS_REC_TOMB, sv->v[k], 0, NULL, 0, NULL, 0, NULL, 0);
            o += ND_FS_REC_OVERHEAD;
        }
    }
    size_t keep = o + ND_FS_REC_OVERHEAD + sizeof(last_ts); /* the TOMBs and the final MARK */
    for (uint32_t i = 0; i < b->nslots; i++) {
        /* Live slots above keep_max keep their old offsets: the caller removes them next. */
        noff[i] = b->off[i];
        if (b->off[i] == ND_FS_NOOFF || b->base + i > keep_max)
            continue;
        size_t len = old_rec_len(old, b->wsize, b->off[i]);
        memcpy(nb + o, old + b->off[i], len);
        noff[i] = (uint32_t)o;
        o += len;
    }
    /* The MARK goes last: it raises last_seq, and recovery accepts a message only above the
     * last_seq it has seen so far. */
    nd_fs_rec_encode(nb + o, ND_FS_REC_MARK, first, (int64_t)(hi > first - 1 ? hi : first - 1),
                     NULL, 0, NULL, 0, &last_ts, sizeof(last_ts));
    o += ND_FS_REC_OVERHEAD + sizeof(last_ts);
    free(old);
    free(own.v);

    char name[32], tmp[40];
    nd_fs_blk_name(b->idx, name);
    snprintf(tmp, sizeof(tmp), "%s%s", name, ND_FS_TMP_SUFFIX);
    int fd = openat(fs->msgsfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(nb);
        free(noff);
        return io_fail(fs, errno, false);
    }
    if (nd_fs_pwrite_all(fd, nb, o, 0) < 0 || nd_fs_datasync(fd) < 0) {
        int err = errno;
        close(fd);
        unlinkat(fs->msgsfd, tmp, 0);
        free(nb);
        free(noff);
        return io_fail(fs, err, false);
    }
    free(nb);
    /* Every earlier call's buffered records reach the disk before the rewrite does, so that a
     * crash never keeps this later change while losing an earlier append. */
    nd_err_t be = barrier(fs);
    if (be != ND_OK) {
        close(fd);
        unlinkat(fs->msgsfd, tmp, 0);
        free(noff);
        return be;
    }
    unlink_index(fs);
    /* The offsets move: nothing read from the old file may serve a later read. */
    ra_drop(fs, b);
    if (renameat(fs->msgsfd, tmp, fs->msgsfd, name) < 0) {
        int err = errno;
        close(fd);
        unlinkat(fs->msgsfd, tmp, 0);
        free(noff);
        return io_fail(fs, err, false);
    }
    nd_fs_blk_close_fd(fs, b);
    b->fd = fd;
    fs->nopen++;
    if (b->nslots)
        memcpy(b->off, noff, b->nslots * sizeof(*noff));
    free(noff);
    b->size = b->wsize = o;
    b->keep_bytes = keep;
    b->nctl = (uint32_t)nctl;
    b->unsynced = false;
    fs->dir_unsynced = true;
    changed(fs);
    return sync_dirs(fs);
}

/* Removes block blks[pos] (no live messages, not the active one). */
static nd_err_t
drop_blk(nd_filestore_t *fs, size_t pos)
{
    nd_fs_blk_t *b = fs->blks[pos];
    nd_fs_blk_t *act = active_blk(fs);
    bool carry = pos > 0 || act->size <= ND_FS_BLK_HDR_LEN;
    nd_err_t e;
    if (carry) {
        /* The TOMBs this block holds for earlier blocks, and the sequence floor and ceiling
         * it records, move to the active block and are synced before the file goes. */
        uint8_t *old = NULL;
        if ((e = read_blk(fs, b, &old)) != ND_OK)
            return e;
        seqvec_t sv = {.lo = fs->first_seq, .hi = b->nslots ? b->base : fs->last_seq + 1};
        if (pos > 0)
            blk_scan_ctl(old, b->wsize, collect_tomb, &sv);
        free(old);
        wmark_t m = wmark(fs);
        e = append_mark(fs, fs->first_seq);
        for (size_t k = 0; e == ND_OK && k < sv.n; k++)
            e = append_tomb(fs, sv.v[k], 0);
        free(sv.v);
        if (e == ND_OK)
            e = flush(fs);
        if (e == ND_OK)
            e = sync_blk(fs, act);
        if (e != ND_OK) {
            rollback(fs, m);
            return e;
        }
    }
    /* The records that removed this block's messages (and anything appended before them)
     * reach the disk before the block goes: a process crash never keeps the drop but loses an
     * earlier call. A front block under the interval policy (the steady state of a stream at
     * its limits) needs only the write; the rest also wait for fdatasync. */
    e = fs->cfg.sync_always || pos > 0 ? barrier(fs) : flush(fs);
    if (e != ND_OK)
        return e;
    char name[32];
    nd_fs_blk_name(b->idx, name);
    nd_fs_blk_close_fd(fs, b);
    unlink_index(fs);
    if (unlinkat(fs->msgsfd, name, 0) < 0 && errno != ENOENT)
        return io_fail(fs, errno, false);
    fs->dir_unsynced = true;
    ra_drop(fs, b);
    nd_fs_blk_free(b);
    memmove(&fs->blks[pos], &fs->blks[pos + 1], (fs->nblks - pos - 1) * sizeof(fs->blks[0]));
    fs->nblks--;
    changed(fs);
    return ND_OK;
}

static bool
sparse(nd_filestore_t *fs, const nd_fs_blk_t *b)
{
    if (b->size < fs->block_size / 4 || b->size < 512)
        return false;
    uint64_t live = b->bytes + (uint64_t)b->msgs * (ND_FS_REC_OVERHEAD - 16) + b->keep_bytes;
    return live * 100 < b->size * ND_FS_COMPACT_LIVE_PCT;
}

/* Drops sealed blocks that hold no message and compacts mostly-deleted ones. Errors are not the
 * caller's: the removals are already on disk; maintenance simply runs again later. */
static void
maintain(nd_filestore_t *fs)
{
    for (size_t i = 0; i + 1 < fs->nblks;) {
        nd_fs_blk_t *b = fs->blks[i];
        if (b->msgs == 0) {
            if (drop_blk(fs, i) != ND_OK)
                return;
            continue;
        }
        if (sparse(fs, b) && rewrite_blk(fs, b, UINT64_MAX, NULL, fs->last_ts) != ND_OK)
            return;
        i++;
    }
}

/* ---- removal with records --------------------------------------------------------------- */

/* Removes live seq: a MARK when it is the first message (one record covers any run of them),
 * else a TOMB. The caller commits. */
static nd_err_t
remove_rec(nd_filestore_t *fs, uint64_t seq)
{
    nd_err_t e = seq == fs->first_seq ? append_mark(fs, seq + 1) : append_tomb(fs, seq, 0);
    if (e == ND_OK)
        nd_fs_state_remove(fs, seq);
    return e;
}

/* Removes every live message below first with one MARK. */
static nd_err_t
mark_rec(nd_filestore_t *fs, uint64_t first)
{
    nd_err_t e = append_mark(fs, first);
    if (e == ND_OK)
        nd_fs_state_mark(fs, first);
    return e;
}

/* Replaces every block with a new one that holds only MARK(first, last): the stream is empty
 * and its sequences go on from first. The MARK is synced before the old files go, so a crash
 * leaves either the old state or the new one. */
static nd_err_t
reset_all(nd_filestore_t *fs, uint64_t first, uint64_t last, int64_t last_ts)
{
    nd_err_t e = roll(fs, first);
    if (e != ND_OK)
        return e;
    nd_fs_blk_t *act = active_blk(fs);
    wmark_t m = wmark(fs);
    e = append(fs, ND_FS_REC_MARK, first, (int64_t)last, NULL, 0, NULL, 0, &last_ts,
               sizeof(last_ts), false, NULL);
    if (e == ND_OK)
        e = flush(fs);
    if (e == ND_OK)
        e = sync_blk(fs, act);
    if (e == ND_OK)
        e = sync_dirs(fs);
    if (e != ND_OK) {
        rollback(fs, m);
        return e;
    }
    unlink_index(fs);
    for (size_t i = 0; i + 1 < fs->nblks; i++) {
        nd_fs_blk_t *b = fs->blks[i];
        char name[32];
        nd_fs_blk_name(b->idx, name);
        nd_fs_blk_close_fd(fs, b);
        unlinkat(fs->msgsfd, name, 0);
        ra_drop(fs, b);
        nd_fs_blk_free(b);
    }
    fs->blks[0] = act;
    fs->nblks = 1;
    fs->dir_unsynced = true;
    nd_fs_subj_free(&fs->subj);
    nd_fs_subj_init(&fs->subj);
    nd_store_ttls_clear(&fs->ttls);
    fs->age_from = 0;
    fs->msgs = fs->bytes = 0;
    fs->last_seq = last;
    fs->last_ts = last_ts;
    fs->first_seq = first;
    changed(fs);
    return sync_dirs(fs);
}

/* The subject index walk of store_util.h. */
static void
walk_subjects(nd_store_t *st, const char *filter, size_t fl, bool all, nd_store_subj_cb cb,
              void *arg)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    for (uint32_t k = 0; k < fs->subj.nents; k++) {
        nd_fs_subj_t *e = &fs->subj.ents[k];
        if (!e->s || !(all || nd_subj_match(filter, fl, e->s, e->len)))
            continue;
        nd_fs_subj_fresh(fs, k);
        nd_store_subj_state_t ss = {.msgs = e->msgs, .first_seq = e->first, .last_seq = e->last};
        if (!cb(arg, e->s, e->len, &ss))
            return;
    }
}

/* ---- limits (the memstore's, step by step) ---------------------------------------------- */

static void
enforce_per_subject(nd_filestore_t *fs, uint32_t sid)
{
    if (fs->cfg.max_msgs_per_subject <= 0)
        return;
    fs->deriving = true;
    while (fs->subj.ents[sid].s &&
           fs->subj.ents[sid].msgs > (uint64_t)fs->cfg.max_msgs_per_subject) {
        nd_fs_subj_t *e = nd_fs_subj_fresh(fs, sid);
        bool last_one = e->msgs == 1;
        if (remove_rec(fs, e->first) != ND_OK || last_one)
            break;
    }
    fs->deriving = false;
}

/* Drops every message below first for a limit (max_msgs, max_bytes, max_age) with one MARK,
 * made as a derived record (fs->deriving; see changed()). */
static void
limits_mark(nd_filestore_t *fs, uint64_t first)
{
    fs->deriving = true;
    (void)mark_rec(fs, first);
    fs->deriving = false;
}

/* Discard old: drops the oldest messages while max_msgs or max_bytes is exceeded, with one
 * MARK for the whole run. */
static void
enforce_limits(nd_filestore_t *fs)
{
    if (fs->cfg.discard != ND_DISCARD_OLD || !fs->msgs)
        return;
    uint64_t msgs = fs->msgs, bytes = fs->bytes, x = 0;
    if (!nd_store_over_limits(&fs->cfg, msgs, bytes))
        return;
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, fs->first_seq, &b, &i); s;
         s = nd_fs_next_live(fs, s + 1, &b, &i)) {
        if (!nd_store_over_limits(&fs->cfg, msgs, bytes))
            break;
        msgs--;
        bytes -= b->msz[i];
        x = s + 1;
    }
    if (x)
        limits_mark(fs, x);
}

/* ---- expiry (max_age, per-message TTLs; the memstore's, step by step) ------------------- */

/* Expiry looks at each message (never TTLs, markers) rather than cutting the front. */
static bool
per_msg_expiry(const nd_filestore_t *fs)
{
    return fs->cfg.allow_msg_ttl || fs->cfg.on_subject_expired;
}

/* The TTL the headers of live slot i of b give its message (0 when unreadable). */
static int64_t
slot_ttl(nd_filestore_t *fs, nd_fs_blk_t *b, uint32_t i)
{
    nd_store_msg_t m = {0};
    int64_t ttl = 0;
    if (load_slot(fs, b, i, &m) == ND_OK)
        ttl = nd_store_hdr_ttl(m.hdr, m.hdr_len);
    nd_store_msg_free(&m);
    return ttl;
}

/* Removes live seq (slot i of b) for expiry, reporting a subject that loses its last message. */
static void
expire_one(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t *b, uint32_t i, bool notify)
{
    if (notify && fs->cfg.on_subject_expired) {
        const nd_fs_subj_t *e = &fs->subj.ents[b->sid[i]];
        nd_store_msg_t m = {0};
        if (e->msgs == 1 && load_slot(fs, b, i, &m) == ND_OK &&
            !nd_store_hdr_is_marker(m.hdr, m.hdr_len))
            fs->cfg.on_subject_expired(fs->cfg.expired_arg, m.subj, m.subj_len);
        nd_store_msg_free(&m);
    }
    fs->deriving = true;
    (void)remove_rec(fs, seq);
    fs->deriving = false;
}

static void
expire(nd_filestore_t *fs, int64_t now, bool notify)
{
    if (fs->cfg.max_age_ns <= 0 || !fs->msgs)
        return;
    int64_t min_ts = now - fs->cfg.max_age_ns;
    nd_fs_blk_t *b;
    uint32_t i;
    if (per_msg_expiry(fs)) {
        /* Everything live before s is gone or has TTL never, which is what age_from records. */
        uint64_t from = fs->age_from > fs->first_seq ? fs->age_from : fs->first_seq;
        for (uint64_t s = nd_fs_next_live(fs, from, &b, &i); s && b->ts[i] <= min_ts;
             s = nd_fs_next_live(fs, s + 1, &b, &i)) {
            if (fs->cfg.allow_msg_ttl && slot_ttl(fs, b, i) < 0)
                fs->age_from = s + 1;
            else
                expire_one(fs, s, b, i, notify);
        }
        return;
    }
    uint64_t x = 0;
    for (uint64_t s = nd_fs_next_live(fs, fs->first_seq, &b, &i); s && b->ts[i] <= min_ts;
         s = nd_fs_next_live(fs, s + 1, &b, &i))
        x = s + 1;
    if (x)
        limits_mark(fs, x);
}

static bool
ttl_live(void *arg, uint64_t seq)
{
    nd_fs_blk_t *b;
    uint32_t i;
    return nd_fs_locate(arg, seq, &b, &i);
}

static void
expire_ttls(nd_filestore_t *fs, int64_t now)
{
    uint64_t seq;
    nd_fs_blk_t *b;
    uint32_t i;
    while (nd_store_ttls_pop(&fs->ttls, now, &seq))
        if (nd_fs_locate(fs, seq, &b, &i)) /* else removed otherwise since */
            expire_one(fs, seq, b, i, true);
}

/* Schedules every live message's TTL from its headers (open, allow_msg_ttl turned on). */
static void
ttls_rebuild(nd_filestore_t *fs)
{
    nd_store_ttls_clear(&fs->ttls);
    fs->age_from = 0;
    if (!fs->cfg.allow_msg_ttl)
        return;
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, fs->first_seq, &b, &i); s;
         s = nd_fs_next_live(fs, s + 1, &b, &i))
        nd_store_ttls_add(&fs->ttls, s, b->ts[i], slot_ttl(fs, b, i));
}

/* ---- store ------------------------------------------------------------------------------ */

static nd_err_t
put(nd_filestore_t *fs, uint64_t seq, int64_t ts, const char *subj, size_t sl, const void *hdr,
    size_t hl, const void *data, size_t dl, int64_t ttl)
{
    nd_err_t e = nd_store_check_msg(&fs->cfg, subj, sl, hdr, hl, data, dl, ND_FS_REC_MAX_FIELD);
    if (e != ND_OK || (e = begin(fs)) != ND_OK)
        return e;

    uint32_t sid = nd_fs_subj_find(&fs->subj, subj, sl);
    uint64_t size = nd_store_msg_size(sl, hl, dl);
    bool if_oldest_fits;
    e = nd_store_admit_new(&fs->cfg, fs->msgs, fs->bytes, size,
                           sid != ND_FS_NOSID ? fs->subj.ents[sid].msgs : 0, &if_oldest_fits);
    if (e != ND_OK)
        return e;
    if (if_oldest_fits) {
        /* sid exists: the subject is at its limit. */
        nd_fs_subj_t *se = nd_fs_subj_fresh(fs, sid);
        nd_fs_blk_t *b;
        uint32_t i;
        if (!nd_fs_locate(fs, se->first, &b, &i) || b->msz[i] < size)
            return ND_ERR_STORE_MAX_BYTES;
    }

    wmark_t m = wmark(fs);
    uint32_t off;
    if ((e = append_msg(fs, seq, ts, subj, sl, hdr, hl, data, dl, &off)) != ND_OK)
        return e;
    if ((e = commit(fs, m)) != ND_OK)
        return e;
    nd_fs_blk_t *act = active_blk(fs);
    if (!nd_fs_state_add(fs, act, seq, off, subj, sl, sid, (uint32_t)size, ts)) {
        /* A sequence the active block cannot hold (make_room rolls before that happens):
         * forget the record on disk too. */
        m = (wmark_t){act, off};
        rollback(fs, m);
        return ND_ERR_STORE_BAD_SEQUENCE;
    }
    if (ttl > 0 && fs->cfg.allow_msg_ttl) {
        nd_store_ttls_add(&fs->ttls, seq, ts, ttl);
        nd_store_ttls_trim(&fs->ttls, fs->msgs, ttl_live, fs);
    }
    if (fs->cfg.max_msgs_per_subject > 0 || fs->cfg.max_msgs > 0 || fs->cfg.max_bytes > 0) {
        uint64_t before = fs->msgs;
        enforce_per_subject(fs, act->sid[seq - act->base]);
        enforce_limits(fs);
        if (fs->msgs != before)
            maintain(fs);
    }
    return ND_OK;
}

static nd_err_t
fs_store_ttl(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl,
             const void *data, size_t dl, int64_t ttl, uint64_t *seq, int64_t *ts)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    int64_t now = nd_store_stamp(&fs->cfg, fs->last_ts);
    uint64_t s = fs->last_seq + 1;
    nd_err_t e = put(fs, s, now, subj, sl, hdr, hl, data, dl, ttl);
    if (e == ND_OK) {
        if (seq)
            *seq = s;
        if (ts)
            *ts = now;
    }
    return e;
}

static nd_err_t
fs_store(nd_store_t *st, const char *subj, size_t sl, const void *hdr, size_t hl, const void *data,
         size_t dl, uint64_t *seq, int64_t *ts)
{
    return fs_store_ttl(st, subj, sl, hdr, hl, data, dl, 0, seq, ts);
}

static nd_err_t
fs_store_raw(nd_store_t *st, uint64_t seq, int64_t ts, const char *subj, size_t sl, const void *hdr,
             size_t hl, const void *data, size_t dl)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (seq == 0 || seq <= fs->last_seq)
        return ND_ERR_STORE_BAD_SEQUENCE;
    int64_t ttl = fs->cfg.allow_msg_ttl ? nd_store_hdr_ttl(hdr, hl) : 0;
    return put(fs, seq, ts, subj, sl, hdr, hl, data, dl, ttl);
}

static nd_err_t
fs_skip(nd_store_t *st, uint64_t *seq)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_err_t e = begin(fs);
    if (e != ND_OK)
        return e;
    int64_t now = nd_store_stamp(&fs->cfg, fs->last_ts);
    uint64_t s = fs->last_seq + 1;
    wmark_t m = wmark(fs);
    if ((e = append_tomb(fs, s, now)) != ND_OK || (e = commit(fs, m)) != ND_OK)
        return e;
    fs->last_seq = s;
    fs->last_ts = now;
    if (fs->msgs == 0)
        fs->first_seq = fs->last_seq + 1;
    if (seq)
        *seq = s;
    return ND_OK;
}

/* ---- load ------------------------------------------------------------------------------- */

static nd_err_t
fs_load(nd_store_t *st, uint64_t seq, nd_store_msg_t *out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    nd_fs_blk_t *b;
    uint32_t i;
    if (!nd_fs_locate(fs, seq, &b, &i))
        return seq > fs->last_seq ? ND_ERR_STORE_EOF : ND_ERR_STORE_NOT_FOUND;
    return load_slot(fs, b, i, out);
}

static nd_err_t
fs_load_next(nd_store_t *st, const char *filter, size_t fl, uint64_t start, nd_store_msg_t *out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return ND_ERR_STORE_BAD_ARG;
    uint32_t lit = ND_FS_NOSID;
    if (!all && nd_subj_is_literal(filter, fl)) {
        lit = nd_fs_subj_find(&fs->subj, filter, fl);
        if (lit == ND_FS_NOSID)
            return ND_ERR_STORE_EOF;
        nd_fs_subj_t *e = nd_fs_subj_fresh(fs, lit);
        if (start > e->last)
            return ND_ERR_STORE_EOF;
        if (start < e->first)
            start = e->first;
    }
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, start, &b, &i); s; s = nd_fs_next_live(fs, s + 1, &b, &i))
        if (slot_matches(fs, b, i, filter, fl, all, lit))
            return load_slot(fs, b, i, out);
    return ND_ERR_STORE_EOF;
}

static nd_err_t
fs_load_last(nd_store_t *st, const char *filter, size_t fl, nd_store_msg_t *out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return ND_ERR_STORE_BAD_ARG;
    nd_fs_blk_t *b;
    uint32_t i;
    if (all) {
        if (!nd_fs_prev_live(fs, fs->last_seq, &b, &i))
            return ND_ERR_STORE_NOT_FOUND;
        return load_slot(fs, b, i, out);
    }
    uint64_t best = 0;
    if (nd_subj_is_literal(filter, fl)) {
        uint32_t sid = nd_fs_subj_find(&fs->subj, filter, fl);
        if (sid == ND_FS_NOSID)
            return ND_ERR_STORE_NOT_FOUND;
        best = nd_fs_subj_fresh(fs, sid)->last;
    } else {
        best = nd_store_subj_newest(st, walk_subjects, filter, fl);
    }
    if (!best || !nd_fs_locate(fs, best, &b, &i))
        return ND_ERR_STORE_NOT_FOUND;
    return load_slot(fs, b, i, out);
}

/* ---- remove, purge, compact, truncate --------------------------------------------------- */

/* Overwrites live message seq in place with an ERASED record of the same length (zeroed body,
 * valid checksum), so its bytes are gone from the disk, not only unreferenced. */
static nd_err_t
erase_in_place(nd_filestore_t *fs, nd_fs_blk_t *b, uint32_t i)
{
    size_t len;
    nd_err_t e = rec_len_of(fs, b, i, &len);
    if (e != ND_OK)
        return e;
    uint64_t off = b->off[i];
    uint8_t *rec = nd_xcalloc(1, len);
    nd_fs_rec_t r;
    e = read_at(fs, b, off, rec, len);
    if (e != ND_OK || nd_fs_rec_header(rec, len, &r) != 1) {
        free(rec);
        return e != ND_OK ? e : ND_ERR_STORE_CORRUPT;
    }
    size_t body = r.subj_len + r.hdr_len + r.data_len;
    memset(rec + ND_FS_REC_HDR_LEN, 0, body);
    /* Same lengths, so the record keeps its size and the records after it stay where they are. */
    nd_fs_rec_encode(rec, ND_FS_REC_ERASED, b->base + i, r.ts,
                     (const char *)rec + ND_FS_REC_HDR_LEN, r.subj_len,
                     rec + ND_FS_REC_HDR_LEN + r.subj_len, r.hdr_len,
                     rec + ND_FS_REC_HDR_LEN + r.subj_len + r.hdr_len, r.data_len);
    if (b == active_blk(fs) && off >= b->wsize) {
        memcpy(fs->wbuf + (off - b->wsize), rec, len);
        free(rec);
        return ND_OK;
    }
    /* Earlier calls' buffered records first: the erase must not outlive them in a crash. */
    if ((e = barrier(fs)) != ND_OK) {
        free(rec);
        return e;
    }
    unlink_index(fs);
    ra_drop(fs, b); /* the erased bytes must not be served from the window afterwards */
    int fd = nd_fs_blk_fd(fs, b);
    if (fd < 0 || nd_fs_pwrite_all(fd, rec, len, (off_t)off) < 0) {
        free(rec);
        return io_fail(fs, errno, false);
    }
    free(rec);
    b->unsynced = true;
    if (fs->cfg.sync_always)
        return sync_blk(fs, b);
    return ND_OK;
}

static nd_err_t
fs_remove(nd_store_t *st, uint64_t seq, bool secure)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_fs_blk_t *b;
    uint32_t i;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (!nd_fs_locate(fs, seq, &b, &i))
        return ND_ERR_STORE_NOT_FOUND;
    nd_err_t e = begin(fs);
    if (e != ND_OK)
        return e;
    /* The removal record goes first, so that a failure leaves either nothing done or the
     * message removed. With secure, the bytes are then overwritten in place: should that
     * fail, the message is still removed (its record says so durably) and the error says the
     * erase did not complete. */
    wmark_t m = wmark(fs);
    e = seq == fs->first_seq ? append_mark(fs, seq + 1) : append_tomb(fs, seq, 0);
    if (e != ND_OK)
        return e;
    if ((e = commit(fs, m)) != ND_OK)
        return e;
    if (secure)
        e = erase_in_place(fs, b, i);
    nd_fs_state_remove(fs, seq);
    maintain(fs);
    return e;
}

static nd_err_t
fs_compact(nd_store_t *st, uint64_t seq, uint64_t *purged)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    uint64_t before = fs->msgs;
    nd_err_t e = begin(fs);
    if (e != ND_OK)
        return e;
    if (seq != 0 && seq <= fs->first_seq && seq <= fs->last_seq) {
        if (purged)
            *purged = 0;
        return ND_OK;
    }
    if (seq == 0 || seq > fs->last_seq) {
        uint64_t first = seq > fs->last_seq ? seq : fs->last_seq + 1;
        e = reset_all(fs, first, first - 1, fs->last_ts);
    } else {
        wmark_t m = wmark(fs);
        if ((e = append_mark(fs, seq)) == ND_OK && (e = commit(fs, m)) == ND_OK) {
            nd_fs_state_mark(fs, seq);
            maintain(fs);
        }
    }
    if (e == ND_OK && purged)
        *purged = before - fs->msgs;
    return e;
}

static nd_err_t
fs_purge(nd_store_t *st, const char *filter, size_t fl, uint64_t up_to, uint64_t keep,
         uint64_t *purged)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    uint64_t dummy;
    if (!purged)
        purged = &dummy;
    *purged = 0;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    if (nd_store_filter_all(filter, fl)) {
        uint64_t below, n = fs->msgs;
        nd_err_t e = ND_OK;
        switch (nd_store_purge_all_plan(up_to, keep, fs->msgs, fs->last_seq, &below)) {
        case ND_STORE_PURGE_ALL:
            if ((e = begin(fs)) == ND_OK)
                e = reset_all(fs, fs->last_seq + 1, fs->last_seq, fs->last_ts);
            if (e == ND_OK)
                *purged = n;
            return e;
        case ND_STORE_PURGE_COMPACT:
            return fs_compact(st, below, purged);
        case ND_STORE_PURGE_NOTHING:
            break;
        }
        return ND_OK;
    }
    uint64_t first, last, max;
    nd_err_t e = nd_store_purge_filtered_plan(st, filter, fl, up_to, keep, &first, &last, &max);
    if (e != ND_OK || max == 0 || (e = begin(fs)) != ND_OK)
        return e;
    uint32_t lit =
        nd_subj_is_literal(filter, fl) ? nd_fs_subj_find(&fs->subj, filter, fl) : ND_FS_NOSID;
    seqvec_t sv = {0};
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, first, &b, &i); s && s <= last && sv.n < max;
         s = nd_fs_next_live(fs, s + 1, &b, &i))
        if (slot_matches(fs, b, i, filter, fl, false, lit))
            seqvec_push(&sv, s);
    wmark_t m = wmark(fs);
    for (size_t k = 0; e == ND_OK && k < sv.n; k++)
        e = append_tomb(fs, sv.v[k], 0);
    if (e == ND_OK)
        e = commit(fs, m);
    else
        rollback(fs, m);
    if (e == ND_OK) {
        for (size_t k = 0; k < sv.n; k++)
            nd_fs_state_remove(fs, sv.v[k]);
        *purged = sv.n;
        maintain(fs);
    }
    free(sv.v);
    return e;
}

static nd_err_t
fs_truncate(nd_store_t *st, uint64_t seq)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_err_t e = begin(fs);
    if (e != ND_OK)
        return e;
    if (seq == 0) {
        return reset_all(fs, 1, 0, 0);
    }
    nd_fs_blk_t *k;
    uint32_t ki;
    if (!nd_fs_locate(fs, seq, &k, &ki))
        return ND_ERR_STORE_BAD_SEQUENCE;
    if (seq == fs->last_seq)
        return ND_OK;
    size_t kpos = nd_fs_find_blk_pos(fs, seq);
    /* Deletions inside earlier blocks may be recorded only in the blocks about to go: the
     * rewritten block repeats them. */
    seqvec_t extra = {0};
    for (size_t p = 0; p < kpos; p++) {
        nd_fs_blk_t *b = fs->blks[p];
        for (uint32_t i = 0; i < b->nslots; i++)
            if (b->off[i] == ND_FS_NOOFF && b->base + i >= fs->first_seq)
                seqvec_push(&extra, b->base + i);
    }
    /* The buffered bytes belong to the active block; write them first so the rewrite reads a
     * complete file and nothing buffered outlives the blocks that go. */
    if ((e = flush(fs)) != ND_OK) {
        free(extra.v);
        return e;
    }
    e = rewrite_blk(fs, k, seq, &extra, k->ts[ki]);
    free(extra.v);
    if (e != ND_OK)
        return e;
    /* The cut block is the active one now; the later blocks go, oldest first: a later block may
     * hold the tombstones of messages in an earlier one, so unlinking newest first and dying
     * half-way would bring removed messages back. */
    while (fs->nblks > kpos + 1) {
        nd_fs_blk_t *b = fs->blks[kpos + 1];
        char name[32];
        nd_fs_blk_name(b->idx, name);
        for (uint32_t i = b->first_slot; i < b->nslots; i++)
            if (b->off[i] != ND_FS_NOOFF)
                nd_fs_state_remove(fs, b->base + i);
        nd_fs_blk_close_fd(fs, b);
        unlinkat(fs->msgsfd, name, 0);
        ra_drop(fs, b);
        nd_fs_blk_free(b);
        memmove(&fs->blks[kpos + 1], &fs->blks[kpos + 2],
                (fs->nblks - kpos - 2) * sizeof(fs->blks[0]));
        fs->nblks--;
        fs->dir_unsynced = true;
    }
    for (uint32_t i = ki + 1; i < k->nslots; i++)
        if (k->off[i] != ND_FS_NOOFF)
            nd_fs_state_remove(fs, k->base + i);
    k->nslots = ki + 1;
    fs->wlen = 0;
    fs->last_seq = seq;
    fs->last_ts = k->ts[ki];
    changed(fs);
    if ((e = sync_dirs(fs)) != ND_OK)
        return e;
    /* The sequences after seq will be used again: with a cipher, they must be sealed under a
     * new salt, so the next message starts a new block. */
    if (fs->cfg.cipher != ND_CIPHER_NONE)
        fs->force_roll = true;
    /* No deadline or cursor may speak for the sequences that come back. */
    nd_store_ttls_filter(&fs->ttls, ttl_live, fs);
    if (fs->age_from > seq + 1)
        fs->age_from = seq + 1;
    maintain(fs);
    return ND_OK;
}

/* ---- state ------------------------------------------------------------------------------ */

static void
fs_state(nd_store_t *st, nd_store_state_t *out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    memset(out, 0, sizeof(*out));
    out->msgs = fs->msgs;
    out->bytes = fs->bytes;
    out->first_seq = fs->first_seq;
    out->last_seq = fs->last_seq;
    nd_fs_blk_t *b;
    uint32_t i;
    if (fs->msgs && nd_fs_locate(fs, fs->first_seq, &b, &i))
        out->first_ts = b->ts[i];
    out->last_ts = fs->last_ts;
    out->num_deleted = nd_store_num_deleted(fs->first_seq, fs->last_seq, fs->msgs);
    out->num_subjects = fs->subj.used;
    out->consumers = fs->nconsumers;
}

static nd_err_t
fs_deleted(nd_store_t *st, uint64_t **seqs, size_t *n)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_store_gaps_t g;
    nd_err_t e = nd_store_gaps_begin(&g, fs->first_seq, fs->last_seq, fs->msgs, seqs, n);
    if (e != ND_OK || g.done)
        return e;
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, fs->first_seq, &b, &i); s;
         s = nd_fs_next_live(fs, s + 1, &b, &i))
        nd_store_gaps_live(&g, s);
    nd_store_gaps_end(&g, seqs, n);
    return ND_OK;
}

/* The live slots of b in [i, nslots). A block without holes from its first live slot on
 * answers at once; otherwise the shorter side of i is counted. */
static uint64_t
blk_live_from(const nd_fs_blk_t *b, uint32_t i)
{
    if (i <= b->first_slot)
        return b->msgs;
    if (i >= b->nslots)
        return 0;
    if ((uint64_t)(b->nslots - b->first_slot) == b->msgs)
        return b->nslots - i;
    uint64_t n = 0;
    if (i - b->first_slot < b->nslots - i) {
        for (uint32_t k = b->first_slot; k < i; k++)
            n += b->off[k] != ND_FS_NOOFF;
        return b->msgs - n;
    }
    for (uint32_t k = i; k < b->nslots; k++)
        n += b->off[k] != ND_FS_NOOFF;
    return n;
}

/* Every live message from start on: whole blocks by their counters, the block start falls in
 * by blk_live_from, so O(blocks) rather than O(messages). */
static void
count_all(nd_filestore_t *fs, uint64_t start, nd_store_subj_state_t *out)
{
    if (start <= fs->first_seq) {
        out->msgs = fs->msgs;
        out->first_seq = fs->first_seq;
        out->last_seq = nd_fs_prev_live(fs, fs->last_seq, NULL, NULL);
        return;
    }
    nd_fs_blk_t *b;
    uint32_t i;
    uint64_t first = nd_fs_next_live(fs, start, &b, &i);
    if (!first)
        return;
    /* next_live walks forward from the block start would fall in, so b is at or after it. */
    size_t p = nd_fs_find_blk_pos(fs, start);
    while (fs->blks[p] != b)
        p++;
    uint64_t n = blk_live_from(b, i);
    for (p++; p < fs->nblks; p++)
        n += fs->blks[p]->msgs;
    out->msgs = n;
    out->first_seq = first;
    out->last_seq = nd_fs_prev_live(fs, fs->last_seq, NULL, NULL);
}

/* Whether filter matches every subject in the store (then it counts as ">"). Only asked when
 * there are few subjects: a stream of one or a handful of subjects under a filter such as
 * "orders.>" is the common case, and the walk costs O(subjects). */
static bool
filter_covers_all(nd_filestore_t *fs, const char *filter, size_t fl)
{
    if (fs->subj.used > 64)
        return false;
    for (uint32_t k = 0; k < fs->subj.nents; k++) {
        const nd_fs_subj_t *e = &fs->subj.ents[k];
        if (e->s && !nd_subj_match(filter, fl, e->s, e->len))
            return false;
    }
    return true;
}

static void
fs_filtered_state(nd_store_t *st, const char *filter, size_t fl, uint64_t start,
                  nd_store_subj_state_t *out)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    memset(out, 0, sizeof(*out));
    if (!fs->msgs || start > fs->last_seq)
        return;
    bool all = nd_store_filter_all(filter, fl);
    if (!all && !nd_subj_valid_sub(filter, fl))
        return;
    bool literal = !all && nd_subj_is_literal(filter, fl);
    uint32_t lit = ND_FS_NOSID;
    if (literal) {
        lit = nd_fs_subj_find(&fs->subj, filter, fl);
        if (lit == ND_FS_NOSID)
            return;
    }
    if (all || (start > fs->first_seq && filter_covers_all(fs, filter, fl))) {
        count_all(fs, start, out);
        return;
    }
    if (start <= fs->first_seq) {
        if (literal) {
            nd_fs_subj_t *e = nd_fs_subj_fresh(fs, lit);
            out->msgs = e->msgs;
            out->first_seq = e->first;
            out->last_seq = e->last;
            return;
        }
        if (fs->subj.used < fs->msgs) {
            nd_store_subj_sum(st, walk_subjects, filter, fl, out);
            return;
        }
    }
    if (literal) {
        nd_fs_subj_t *e = nd_fs_subj_fresh(fs, lit);
        if (start > e->last)
            return;
        if (start < e->first)
            start = e->first;
    }
    nd_fs_blk_t *b;
    uint32_t i;
    for (uint64_t s = nd_fs_next_live(fs, start, &b, &i); s; s = nd_fs_next_live(fs, s + 1, &b, &i))
        if (slot_matches(fs, b, i, filter, fl, false, lit))
            nd_store_subj_state_count(out, s);
}

static void
fs_subjects_state(nd_store_t *st, const char *filter, size_t fl, nd_store_subj_cb cb, void *arg)
{
    nd_store_subjects_state(st, walk_subjects, filter, fl, cb, arg);
}

static uint64_t
fs_num_pending(nd_store_t *st, const char *filter, size_t fl, uint64_t start, bool lps)
{
    return nd_store_num_pending(st, walk_subjects, filter, fl, start, lps);
}

/* ---- config, tick, sync, snapshot ------------------------------------------------------- */

/* At open with subject delete markers, max_age waits for the first tick, which reports the
 * subjects it empties (nats-server does not expire at recovery then either). */
static void
apply_limits(nd_filestore_t *fs, bool at_open)
{
    if (fs->cfg.max_msgs_per_subject > 0) {
        for (uint32_t k = 0; k < fs->subj.nents; k++)
            if (fs->subj.ents[k].s &&
                fs->subj.ents[k].msgs > (uint64_t)fs->cfg.max_msgs_per_subject)
                enforce_per_subject(fs, k);
    }
    enforce_limits(fs);
    if (!at_open || !fs->cfg.on_subject_expired)
        expire(fs, nd_fs_now(fs), !at_open);
    maintain(fs);
}

static void
set_cfg(nd_filestore_t *fs, const nd_store_cfg_t *cfg)
{
    const char *dir = fs->cfg.dir;
    nd_store_cipher_t cipher = fs->cfg.cipher;
    const uint8_t *key = fs->cfg.key;
    fs->cfg = *cfg;
    fs->cfg.dir = dir;
    fs->cfg.cipher = cipher;
    fs->cfg.key = key;
    uint64_t bs = cfg->block_size ? cfg->block_size : ND_FS_DEFAULT_BLOCK_SIZE;
    if (bs < ND_FS_MIN_BLOCK_SIZE)
        bs = ND_FS_MIN_BLOCK_SIZE;
    if (bs > ND_FS_MAX_BLOCK_SIZE)
        bs = ND_FS_MAX_BLOCK_SIZE;
    fs->block_size = bs;
    fs->sync_ns = cfg->sync_interval_ns > 0 ? cfg->sync_interval_ns : ND_FS_DEFAULT_SYNC_NS;
    fs->xform = fs->cfg.cipher != ND_CIPHER_NONE || fs->cfg.compression != ND_STORE_NONE;
}

static nd_err_t
fs_update_cfg(nd_store_t *st, const nd_store_cfg_t *cfg)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_err_t e = begin(fs);
    if (e != ND_OK)
        return e;
    bool had_ttl = fs->cfg.allow_msg_ttl;
    set_cfg(fs, cfg);
    fs->cfg.dir = fs->dir;
    if (had_ttl != fs->cfg.allow_msg_ttl)
        ttls_rebuild(fs);
    apply_limits(fs, false);
    if (fs->cfg.sync_always)
        return commit(fs, wmark(fs));
    return ND_OK;
}

static nd_err_t
checkpoint(nd_filestore_t *fs)
{
    nd_err_t e = sync_all(fs);
    if (e != ND_OK)
        return e;
    if (!fs->index_stale && fs->index_on_disk)
        return ND_OK;
    if (nd_fs_index_write(fs) == ND_OK) {
        fs->index_on_disk = true;
        fs->index_stale = false;
    }
    return ND_OK;
}

static int64_t
fs_tick(nd_store_t *st, int64_t now)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return 0;
    if (!fs->failed) {
        expire(fs, now, true);
        expire_ttls(fs, now);
        maintain(fs);
        /* Whatever is buffered reaches write() at every tick (the flush deadline only makes
         * sure a tick comes soon enough). */
        if (fs->wlen) {
            if (fs->cfg.sync_always)
                (void)commit(fs, wmark(fs));
            else
                (void)flush(fs);
        }
        fs->next_flush = 0;
        if (fs->next_sync && now >= fs->next_sync)
            (void)checkpoint(fs);
    }
    /* A window nobody read from since the last tick goes back (memory per idle store). */
    if (fs->ra_buf && !fs->ra_used) {
        ra_drop(fs, NULL);
        free(fs->ra_buf);
        fs->ra_buf = NULL;
    }
    fs->ra_used = false;
    int64_t next = 0;
    nd_fs_blk_t *b;
    uint32_t i;
    if (fs->cfg.max_age_ns > 0 && fs->msgs) {
        uint64_t from = fs->first_seq;
        if (per_msg_expiry(fs) && fs->age_from > from)
            from = fs->age_from;
        if (nd_fs_next_live(fs, from, &b, &i))
            next = b->ts[i] + fs->cfg.max_age_ns;
    }
    int64_t t = nd_store_ttls_next(&fs->ttls);
    if (t && !fs->failed && (!next || t < next))
        next = t;
    if (!fs->failed) {
        if (fs->wlen && fs->next_flush && (!next || fs->next_flush < next))
            next = fs->next_flush;
        if (fs->next_sync && (!next || fs->next_sync < next))
            next = fs->next_sync;
    }
    return next;
}

static nd_err_t
fs_sync(nd_store_t *st)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_err_t e = writable(fs);
    if (e != ND_OK)
        return e;
    return sync_all(fs);
}

static nd_err_t
fs_flush(nd_store_t *st)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    nd_err_t e = writable(fs);
    if (e != ND_OK)
        return e;
    return flush(fs);
}

static nd_err_t
fs_snapshot(nd_store_t *st, nd_store_write_fn w, void *arg)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (fs->closed)
        return ND_ERR_STORE_CLOSED;
    return nd_store_snapshot_write(st, w, arg);
}

/* ---- open, close ------------------------------------------------------------------------ */

static void
free_all(nd_filestore_t *fs)
{
    for (size_t i = 0; i < fs->nblks; i++)
        nd_fs_blk_free(fs->blks[i]);
    free(fs->blks);
    nd_fs_subj_free(&fs->subj);
    nd_store_ttls_free(&fs->ttls);
    nd_cstore_t *c = fs->consumers;
    while (c) {
        nd_cstore_t *n = c->next;
        free(c->name);
        free(c->enc);
        free(c);
        c = n;
    }
    if (fs->dirfd >= 0)
        close(fs->dirfd);
    if (fs->msgsfd >= 0)
        close(fs->msgsfd);
    if (fs->obsfd >= 0)
        close(fs->obsfd);
    free(fs->wbuf);
    free(fs->rbuf);
    free(fs->ra_buf);
    free(fs->xbuf);
    free(fs->dir);
    explicit_bzero(fs->key, sizeof(fs->key));
    free(fs);
}

static void
fs_close(nd_store_t *st)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    if (!fs)
        return;
    if (!fs->failed)
        (void)checkpoint(fs);
    free_all(fs);
}

static int
rm_tree(int dirfd)
{
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (unlinkat(dirfd, de->d_name, 0) == 0)
            continue;
        if (errno == EISDIR || errno == EPERM) {
            int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0 && rm_tree(sub) == 0 && unlinkat(dirfd, de->d_name, AT_REMOVEDIR) == 0)
                continue;
        }
        rc = -1;
    }
    closedir(d);
    return rc;
}

static nd_err_t
fs_destroy(nd_store_t *st)
{
    nd_filestore_t *fs = (nd_filestore_t *)st;
    char *dir = nd_xstrdup(fs->dir);
    fs->wlen = 0;
    free_all(fs);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    nd_err_t e = ND_OK;
    if (fd >= 0) {
        /* The store is gone: there is no io_errno to keep. */
        if (rm_tree(fd) < 0 || rmdir(dir) < 0)
            e = ND_ERR_STORE_IO;
    }
    free(dir);
    return e;
}

static int
mkdir_p(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    return 0;
}

static void
remove_tmp_files(int dirfd)
{
    int fd = dup(dirfd);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    rewinddir(d); /* the dup shares the directory offset with dirfd */
    size_t sl = strlen(ND_FS_TMP_SUFFIX);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > sl && !strcmp(de->d_name + n - sl, ND_FS_TMP_SUFFIX))
            unlinkat(dirfd, de->d_name, 0);
    }
    closedir(d);
}

static int
cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The indexes of the block files in msgs/, ascending. */
static int
list_blocks(nd_filestore_t *fs, uint32_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int fd = dup(fs->msgsfd);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    uint32_t *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *de;
    rewinddir(d);
    while ((de = readdir(d))) {
        char *end;
        unsigned long idx = strtoul(de->d_name, &end, 10);
        if (end == de->d_name || strcmp(end, ND_FS_BLK_SUFFIX) != 0 || idx == 0 ||
            idx >= UINT32_MAX)
            continue;
        char canon[32];
        nd_fs_blk_name((uint32_t)idx, canon);
        if (strcmp(canon, de->d_name) != 0)
            continue; /* "01.blk" and the like are not ours */
        if (cnt == cap) {
            cap = cap ? cap * 2 : 16;
            v = nd_xrealloc(v, cap * sizeof(*v));
        }
        v[cnt++] = (uint32_t)idx;
    }
    closedir(d);
    if (cnt)
        qsort(v, cnt, sizeof(*v), cmp_u32);
    *out = v;
    *n = cnt;
    return 0;
}

/* meta.dat: magic[8] version u32 cipher u32 compression u32 zero u32 XXH64. */
static nd_err_t
check_meta(nd_filestore_t *fs)
{
    uint8_t *p;
    size_t n;
    if (nd_fs_read_file(fs->dirfd, ND_FS_META_FILE, &p, &n) == 0) {
        bool ok = n == 32 && memcmp(p, ND_FS_META_MAGIC, 8) == 0;
        uint64_t sum;
        if (ok) {
            memcpy(&sum, p + 24, 8);
            ok = sum == XXH64(p, 24, 0);
        }
        uint32_t ver = 0, cipher = 0;
        if (ok) {
            memcpy(&ver, p + 8, 4);
            memcpy(&cipher, p + 12, 4);
        }
        free(p);
        if (ok && ver > ND_FS_VERSION)
            return ND_ERR_STORE_VERSION;
        /* Records sealed with one cipher cannot be read with another (or with none). */
        if (ok && cipher != (uint32_t)fs->cfg.cipher)
            return ND_ERR_STORE_BAD_ARG;
        if (ok)
            return ND_OK;
        /* A damaged meta file says nothing we cannot rewrite: the blocks carry their own
         * versions. */
    } else if (errno != ENOENT) {
        return nd_store_io_error(&fs->base, errno);
    }
    uint8_t m[32] = {0};
    memcpy(m, ND_FS_META_MAGIC, 8);
    uint32_t v = ND_FS_VERSION, c = (uint32_t)fs->cfg.cipher, z = (uint32_t)fs->cfg.compression;
    memcpy(m + 8, &v, 4);
    memcpy(m + 12, &c, 4);
    memcpy(m + 16, &z, 4);
    uint64_t sum = XXH64(m, 24, 0);
    memcpy(m + 24, &sum, 8);
    if (nd_fs_write_file_atomic(fs->dirfd, ND_FS_META_FILE, m, sizeof(m), true) < 0)
        return nd_store_io_error(&fs->base, errno);
    return ND_OK;
}

static void
reset_mem(nd_filestore_t *fs)
{
    ra_drop(fs, NULL);
    for (size_t i = 0; i < fs->nblks; i++) {
        if (fs->blks[i]->fd >= 0)
            fs->nopen--;
        nd_fs_blk_free(fs->blks[i]);
    }
    fs->nblks = 0;
    fs->next_idx = 1;
    nd_fs_subj_free(&fs->subj);
    nd_fs_subj_init(&fs->subj);
    fs->msgs = fs->bytes = 0;
    fs->first_seq = 1;
    fs->last_seq = 0;
    fs->last_ts = 0;
}

/* With an intact index nothing is decrypted at open: try the first, a middle and the last
 * message, and call the key wrong only when none of them opens (one damaged record is not a
 * wrong key). */
static bool
key_fits(nd_filestore_t *fs)
{
    if (!fs->msgs)
        return true;
    uint64_t probes[3] = {fs->first_seq, fs->first_seq + (fs->last_seq - fs->first_seq) / 2,
                          fs->last_seq};
    nd_store_msg_t m = {0};
    bool any = false, ok = false;
    for (int k = 0; k < 3 && !ok; k++) {
        nd_fs_blk_t *b;
        uint32_t i;
        uint64_t s = nd_fs_next_live(fs, probes[k], &b, &i);
        if (!s)
            continue;
        any = true;
        ok = load_slot(fs, b, i, &m) == ND_OK;
    }
    nd_store_msg_free(&m);
    return ok || !any;
}

nd_err_t
nd_filestore_open(const nd_store_cfg_t *cfg, nd_store_t **out, nd_store_recovery_t *report)
{
    *out = NULL;
    nd_store_recovery_t dummy;
    if (!report)
        report = &dummy;
    memset(report, 0, sizeof(*report));
    if (!cfg || !cfg->dir || !*cfg->dir)
        return ND_ERR_STORE_BAD_ARG;
    if ((cfg->cipher != ND_CIPHER_NONE && cfg->cipher != ND_CIPHER_AES_GCM &&
         cfg->cipher != ND_CIPHER_CHACHA) ||
        (cfg->cipher != ND_CIPHER_NONE && !cfg->key) ||
        (cfg->compression != ND_STORE_NONE && cfg->compression != ND_STORE_S2))
        return ND_ERR_STORE_BAD_ARG;
    nd_filestore_t *fs = nd_new(nd_filestore_t);
    fs->base.ops = &filestore_ops;
    fs->dirfd = fs->msgsfd = fs->obsfd = -1;
    fs->dir = nd_xstrdup(cfg->dir);
    fs->cfg.cipher = cfg->cipher;
    set_cfg(fs, cfg);
    fs->cfg.dir = fs->dir;
    fs->cfg.key = NULL;
    if (cfg->cipher != ND_CIPHER_NONE)
        memcpy(fs->key, cfg->key, sizeof(fs->key));
    nd_fs_subj_init(&fs->subj);
    fs->first_seq = 1;
    fs->next_idx = 1;

    nd_err_t e = ND_OK;
    uint32_t *idxs = NULL;
    size_t n = 0;
    if (mkdir_p(fs->dir) < 0 ||
        (fs->dirfd = open(fs->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        (mkdirat(fs->dirfd, ND_FS_MSGS_DIR, 0755) < 0 && errno != EEXIST) ||
        (mkdirat(fs->dirfd, ND_FS_OBS_DIR, 0755) < 0 && errno != EEXIST) ||
        (fs->msgsfd = openat(fs->dirfd, ND_FS_MSGS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        (fs->obsfd = openat(fs->dirfd, ND_FS_OBS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        e = nd_store_io_error(&fs->base, errno);
        goto fail;
    }
    if ((e = check_meta(fs)) != ND_OK)
        goto fail;
    remove_tmp_files(fs->dirfd);
    remove_tmp_files(fs->msgsfd);
    remove_tmp_files(fs->obsfd);
    if (list_blocks(fs, &idxs, &n) < 0) {
        e = nd_store_io_error(&fs->base, errno);
        goto fail;
    }
    e = nd_fs_index_load(fs, idxs, n);
    if (e == ND_OK && fs->cfg.cipher != ND_CIPHER_NONE && !key_fits(fs)) {
        e = ND_ERR_STORE_CORRUPT;
        goto fail;
    }
    if (e == ND_OK) {
        fs->index_on_disk = true;
    } else if (e == ND_ERR_STORE_NOT_FOUND) {
        reset_mem(fs);
        unlinkat(fs->dirfd, ND_FS_INDEX_FILE, 0);
        e = nd_fs_recover_blocks(fs, idxs, n, report);
        if (e != ND_OK)
            goto fail;
        report->index_rebuilt = n > 0;
        fs->index_stale = true;
    } else {
        goto fail;
    }
    free(idxs);
    idxs = NULL;
    report->msgs = fs->msgs;
    /* The active block's bytes are all on disk: nothing is buffered at open. */
    if ((e = nd_fs_consumers_load(fs)) != ND_OK)
        goto fail;
    ttls_rebuild(fs);
    apply_limits(fs, true);
    if (fs->cfg.sync_always && !fs->failed)
        (void)commit(fs, wmark(fs));
    *out = &fs->base;
    return ND_OK;
fail:
    if (e == ND_ERR_STORE_IO)
        report->io_errno = fs->base.io_errno;
    free(idxs);
    free_all(fs);
    return e;
}

static const nd_store_ops_t filestore_ops = {
    .store = fs_store,
    .store_ttl = fs_store_ttl,
    .store_raw = fs_store_raw,
    .skip = fs_skip,
    .load = fs_load,
    .load_next = fs_load_next,
    .load_last = fs_load_last,
    .remove = fs_remove,
    .purge = fs_purge,
    .compact = fs_compact,
    .truncate = fs_truncate,
    .state = fs_state,
    .deleted = fs_deleted,
    .filtered_state = fs_filtered_state,
    .subjects_state = fs_subjects_state,
    .num_pending = fs_num_pending,
    .update_cfg = fs_update_cfg,
    .tick = fs_tick,
    .sync = fs_sync,
    .flush = fs_flush,
    .snapshot = fs_snapshot,
    .consumer_open = nd_fs_consumer_open,
    .consumer_update = nd_fs_consumer_update,
    .consumer_state = nd_fs_consumer_state,
    .consumer_close = nd_fs_consumer_close,
    .consumer_delete = nd_fs_consumer_delete,
    .consumer_list = nd_fs_consumer_list,
    .close = fs_close,
    .destroy = fs_destroy,
};
