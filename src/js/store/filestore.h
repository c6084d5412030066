/* File store internals, shared by src/js/filestore*.c, src/js/fs_*.c and the crash/corruption
 * tests. The on-disk format and the recovery algorithm are described at the top of filestore.c.
 *
 * Ctx: a file store belongs to one stream actor (see natsd/store.h); nothing here is thread-safe.
 */
#ifndef NATSD_FILESTORE_H
#define NATSD_FILESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "js/store/store.h"
#include "js/store/store_ttl.h"

/* ---- File names inside cfg->dir (subjects never appear in a file name). ---- */
#define ND_FS_MSGS_DIR   "msgs" /* message blocks: msgs/<index>.blk, index in decimal */
#define ND_FS_BLK_SUFFIX ".blk"
#define ND_FS_INDEX_FILE "index.db" /* the stream index (a cache of the blocks) */
#define ND_FS_META_FILE  "meta.dat" /* format version and the cipher/compression in use */
#define ND_FS_OBS_DIR    "obs"      /* consumer states: obs/<name>.cs */
#define ND_FS_OBS_SUFFIX ".cs"
#define ND_FS_TMP_SUFFIX ".tmp" /* a file being replaced; removed at open */

/* ---- Format. All integers little endian. ---- */
#define ND_FS_VERSION 1u

/* Block file header: magic[8] version u32 flags u32 salt[16] reserved[8] xxh64(previous 40).
 * flags: the cipher (low byte) and compression (next byte) the block was started with; the salt
 * seeds the block's sealing context (fs_crypt.h), so every block has its own record keys. */
#define ND_FS_BLK_MAGIC    "NDFSBLK1"
#define ND_FS_BLK_HDR_LEN  48u
#define ND_FS_BLK_SALT_OFF 16u

/* Record: a fixed header, the body (subject, headers, payload) and an XXH64 of header + body.
 *   0 magic u32 | 4 kind u8 | 5 flags u8 | 6 subj_len u16 | 8 hdr_len u32 | 12 data_len u32 |
 *   16 seq u64 | 24 ts i64 | 32 hck u32 (low half of XXH3-64 of bytes 0..31) | 36 zero u32
 * The header checksum lets recovery resynchronise after a damaged record: a position is a
 * record start only when the magic, the kind, the zero word and the header checksum all agree. */
#define ND_FS_REC_MAGIC 0x3152534Eu /* "NSR1" */
/* Record flags. A transformed MSG record has subj_len = hdr_len = 0 and data_len = the stored
 * body's length; the body, once opened and decompressed, is {subj_len u16, hdr_len u32,
 * data_len u32} (ND_FS_INNER_LEN bytes) then subject, headers, payload. Compression comes
 * first, then sealing (AAD = the record header's first 32 bytes, nonce = seq). */
#define ND_FS_RECF_COMPRESSED 0x01u
#define ND_FS_RECF_SEALED     0x02u
#define ND_FS_INNER_LEN       10u
#define ND_FS_REC_HDR_LEN     40u
#define ND_FS_REC_SUM_LEN     8u
#define ND_FS_REC_OVERHEAD    (ND_FS_REC_HDR_LEN + ND_FS_REC_SUM_LEN)
/* Field limits a header must respect to be believed (protects recovery from huge lengths). */
#define ND_FS_REC_MAX_FIELD (256u << 20)

enum {
    ND_FS_REC_MSG = 1,    /* a message: seq, ts, subject, headers, payload */
    ND_FS_REC_TOMB = 2,   /* seq was removed (also: skip). Bumps last_seq to seq. */
    ND_FS_REC_MARK = 3,   /* every seq < `seq` is gone; ts holds last_seq, the payload last_ts */
    ND_FS_REC_ERASED = 4, /* a message removed securely: body zeroed in place, seq removed */
};

/* Index file: magic[8] version u32 nblks u32 nsubj u32 zero u32 first u64 last u64 last_ts
 * i64, then per block: idx u32 nslots u32 size u64 mtime_ns i64 ino u64 base u64 nctl u32
 * first_slot u32 keep_bytes u64, then the slot arrays of each block (off u32[], sid u32[],
 * msz u32[], ts i64[]), then the subjects (len u32, bytes; 0 for a free id), then an XXH64 of
 * everything before it. Consumer file: magic[8] version u32 len u32, cstate bytes, XXH64.
 * meta.dat: magic[8] version u32 cipher u32 compression u32 zero u32 XXH64. */
#define ND_FS_IDX_MAGIC  "NDFSIDX1"
#define ND_FS_META_MAGIC "NDFSMETA"
#define ND_FS_CON_MAGIC  "NDFSCON1"

#define ND_FS_DEFAULT_BLOCK_SIZE (8ull << 20)
#define ND_FS_MAX_BLOCK_SIZE     (1ull << 30)
#define ND_FS_MIN_BLOCK_SIZE     256ull
#define ND_FS_DEFAULT_SYNC_NS    (120ll * 1000000000ll)
/* With the interval policy, buffered appends reach write() at most this long after the call
 * that made them (tick's deadline includes it), so a process crash loses at most this much. */
#define ND_FS_FLUSH_NS      (10ll * 1000000ll)
#define ND_FS_WBUF_FLUSH_AT (256u << 10)
/* Read-ahead window (read_at in filestore.c): reads that walk a block in file order are served
 * from one pread of this many bytes; a read larger than a quarter of it goes straight to the
 * file. One window per store, allocated on first use and freed by a tick that finds it idle. */
#define ND_FS_RA_SIZE (128u << 10)
/* A sealed block is compacted when less than this share (percent) of it is still live. */
#define ND_FS_COMPACT_LIVE_PCT 50u
#define ND_FS_MAX_OPEN_FDS     64u
/* store_raw with a gap larger than this starts a new block (slot arrays stay dense). */
#define ND_FS_MAX_SLOT_GAP 65536u

#define ND_FS_NOOFF UINT32_MAX
#define ND_FS_NOSID UINT32_MAX

/* ---- In-memory structures. ---- */

/* One block: its file and, per sequence base..base+nslots-1, where the record is (ND_FS_NOOFF
 * when the sequence is not a live message of this block), its subject id, size and time. */
typedef struct nd_fs_blk {
    uint32_t idx;
    int fd;        /* -1 when closed (reopened on demand; at most ND_FS_MAX_OPEN_FDS open) */
    uint64_t base; /* sequence of slot 0 (0 = no slot yet) */
    uint32_t nslots, cap;
    uint32_t *off;
    uint32_t *sid;
    uint32_t *msz; /* nd_store_msg_size of the message */
    int64_t *ts;
    uint64_t size;  /* logical size: bytes in the file plus bytes still buffered */
    uint64_t wsize; /* bytes in the file */
    uint64_t msgs, bytes;
    uint64_t keep_bytes;       /* bytes a compaction could not drop (header, control records) */
    uint32_t nctl;             /* TOMB/MARK/ERASED records it holds */
    uint32_t first_slot;       /* no live slot below this one */
    bool unsynced;             /* written since the last fdatasync */
    struct nd_fs_crypt *crypt; /* sealing context from the block's salt (cipher stores only) */
    bool hdr_bad;              /* its header failed its checksum: append nothing sealed to it */
} nd_fs_blk_t;

typedef struct nd_fs_subj {
    char *s; /* NULL when the id is free */
    uint32_t len;
    uint64_t hash;
    uint64_t msgs, first, last;
    bool first_stale; /* first was removed; the next one is found lazily */
    bool last_stale;  /* last was removed; the previous one is found lazily */
} nd_fs_subj_t;

typedef struct nd_fs_subjtab {
    nd_fs_subj_t *ents;
    uint32_t nents, capents;
    uint32_t *freeids;
    uint32_t nfree, capfree;
    uint32_t *slots; /* open addressing, linear probing: sid + 1, 0 = empty */
    size_t mask;
    size_t used; /* live subjects */
} nd_fs_subjtab_t;

typedef struct nd_filestore nd_filestore_t;

struct nd_cstore {
    nd_filestore_t *fs;
    char *name;
    uint8_t *enc; /* the last state, encoded (nd_cstate_encode), or NULL when none yet */
    size_t enc_len;
    bool unsynced; /* written (renamed into place) but not fsynced yet */
    struct nd_cstore *next;
};

struct nd_filestore {
    nd_store_t base;
    nd_store_cfg_t cfg;
    char *dir;
    int dirfd, msgsfd, obsfd;
    uint64_t block_size;
    int64_t sync_ns;

    nd_fs_blk_t **blks; /* ascending idx, which is ascending seq */
    size_t nblks, capblks;
    uint32_t next_idx;
    uint32_t nopen; /* open block fds */

    uint8_t *wbuf; /* buffered bytes of the last block (from its wsize to its size) */
    size_t wlen, wcap;

    uint64_t first_seq, last_seq, msgs, bytes;
    int64_t last_ts;
    nd_fs_subjtab_t subj;

    bool failed; /* an fsync failed: every write is refused */
    int failed_errno;
    bool closed;
    bool deriving;      /* appending records made by the limits (see changed() in filestore.c) */
    bool dir_unsynced;  /* a file was created, renamed or removed since the last dir fsync */
    bool index_on_disk; /* index.db exists and describes the blocks; unlink before any rewrite */
    bool index_stale;   /* state changed since index.db was written */
    int64_t next_sync;  /* interval policy: when the next fsync is due (0 = nothing unsynced) */
    int64_t next_flush; /* when buffered bytes must reach write() (0 = none buffered) */

    bool xform;      /* new records are compressed or sealed (cipher or compression set) */
    bool force_roll; /* a sealed record was rolled back: its sequence needs a fresh salt */
    uint64_t sealed_ok, sealed_bad; /* recovery: sealed records that opened / did not */
    uint8_t key[32];                /* copy of cfg->key when a cipher is set */
    uint8_t *xbuf;                  /* scratch for transformed bodies */
    size_t xcap;

    nd_cstore_t *consumers; /* every consumer on disk or opened; freed at close */
    uint64_t nconsumers;
    uint8_t *rbuf; /* scratch for scans and rewrites */
    size_t rcap;

    /* Read-ahead (read_at in filestore.c). The window holds bytes [ra_off, ra_off + ra_len) of
     * block ra_blk's file, all below its wsize when read. Appends only ever write at or past
     * wsize, so they leave it valid; everything else that changes bytes below wsize or ends
     * the block (rollback's ftruncate, an in-place erase, a rewrite, a block freed) drops it
     * first (ra_drop). ra_last_* remember the previous file read, to tell in-order reads. */
    uint8_t *ra_buf;     /* ND_FS_RA_SIZE bytes, or NULL */
    nd_fs_blk_t *ra_blk; /* NULL: the window holds nothing */
    uint64_t ra_off;
    size_t ra_len;
    nd_fs_blk_t *ra_last_blk;
    uint64_t ra_last_off, ra_last_end;
    bool ra_used; /* the window served or was filled since the last tick */

    nd_store_ttls_t ttls; /* TTL deadlines (allow_msg_ttl), rebuilt from headers at open */
    uint64_t age_from;    /* every live seq in [first_seq, age_from) has TTL "never" */
};

/* ---- Test hook: makes the next I/O calls fail, to test error paths without a full disk. ----
 * kind: 0 = off, 1 = write/pwrite, 2 = fdatasync/fsync. After `after` successful calls of that
 * kind, every further one fails with err (e.g. ENOSPC, EIO) until the hook is reset. A short
 * write can be simulated with short_write: the failing write first writes half its bytes. */
typedef struct nd_fs_fault {
    int kind;
    int err;
    long after;
    bool short_write;
} nd_fs_fault_t;
void nd_fs_fault_set(const nd_fs_fault_t *f);

/* ---- Record codec (fs_block.c). ---- */
typedef struct nd_fs_rec {
    uint8_t kind, flags;
    uint64_t seq;
    int64_t ts;
    const char *subj;
    size_t subj_len;
    const uint8_t *hdr;
    size_t hdr_len;
    const uint8_t *data;
    size_t data_len;
    size_t len; /* whole record */
} nd_fs_rec_t;

static inline size_t
nd_fs_rec_len(size_t sl, size_t hl, size_t dl)
{
    return ND_FS_REC_OVERHEAD + sl + hl + dl;
}
/* Writes a record into out (nd_fs_rec_len bytes). */
void nd_fs_rec_encode(uint8_t *out, uint8_t kind, uint64_t seq, int64_t ts, const char *subj,
                      size_t sl, const void *hdr, size_t hl, const void *data, size_t dl);
void nd_fs_rec_encode_flags(uint8_t *out, uint8_t kind, uint8_t flags, uint64_t seq, int64_t ts,
                            const char *subj, size_t sl, const void *hdr, size_t hl,
                            const void *data, size_t dl);
/* The first 32 header bytes exactly as encode writes them (the AAD of a sealed body). */
void nd_fs_rec_hdr32(uint8_t *out, uint8_t kind, uint8_t flags, uint64_t seq, int64_t ts, size_t sl,
                     size_t hl, size_t dl);
/* Parses a record header at p (avail bytes). Returns: 1 valid header (rec filled but the body
 * unchecked, rec->len may exceed avail), 0 not a record header, -1 too few bytes to tell. */
int nd_fs_rec_header(const uint8_t *p, size_t avail, nd_fs_rec_t *rec);
/* Checks the trailing checksum of a record whose header parsed and whose rec->len bytes are at
 * p, and fills in the body pointers. */
bool nd_fs_rec_verify(const uint8_t *p, nd_fs_rec_t *rec);
void nd_fs_blk_hdr_encode(uint8_t out[ND_FS_BLK_HDR_LEN], uint32_t flags);
void nd_fs_blk_hdr_encode_salt(uint8_t out[ND_FS_BLK_HDR_LEN], uint32_t flags, const uint8_t *salt);
/* Returns: OK, ERR_CORRUPT (bad header) or ERR_VERSION. */
ND_MUST_CHECK nd_err_t nd_fs_blk_hdr_check(const uint8_t *p, size_t n);

/* ---- I/O helpers (fs_block.c): each honours the fault hook and sets errno. ---- */
int nd_fs_write_all(int fd, const void *p, size_t n);             /* 0 or -1 */
int nd_fs_pwrite_all(int fd, const void *p, size_t n, off_t off); /* 0 or -1 */
int nd_fs_datasync(int fd);                                       /* 0 or -1 */
int nd_fs_pread_all(int fd, void *p, size_t n, off_t off);        /* 0, or -1 (short = EIO) */
/* Writes a whole small file atomically: dir/name.tmp, fsync, rename, fsync dir. */
int nd_fs_write_file_atomic(int dirfd, const char *name, const void *p, size_t n, bool sync);
/* Reads a whole file. Returns: 0, -1 with errno (ENOENT when missing). *out malloc'd. */
int nd_fs_read_file(int dirfd, const char *name, uint8_t **out, size_t *n);

/* ---- Blocks (fs_block.c). ---- */
nd_fs_blk_t *nd_fs_blk_new(uint32_t idx);
void nd_fs_blk_free(nd_fs_blk_t *b);
/* Makes room for slot seq and returns its index (base set on the first slot). */
bool nd_fs_blk_slot_add(nd_fs_blk_t *b, uint64_t seq, uint32_t off, uint32_t sid, uint32_t msz,
                        int64_t ts);
static inline bool
nd_fs_blk_has(const nd_fs_blk_t *b, uint64_t seq)
{
    return b->nslots && seq >= b->base && seq - b->base < b->nslots &&
           b->off[seq - b->base] != ND_FS_NOOFF;
}
static inline uint64_t
nd_fs_blk_last(const nd_fs_blk_t *b)
{
    return b->nslots ? b->base + b->nslots - 1 : 0;
}
void nd_fs_blk_name(uint32_t idx, char out[32]);
/* An fd for reading/writing block b (reopens a closed one). Returns: -1 on error (errno). */
int nd_fs_blk_fd(nd_filestore_t *fs, nd_fs_blk_t *b);
void nd_fs_blk_close_fd(nd_filestore_t *fs, nd_fs_blk_t *b);

/* ---- Subjects (fs_subj.c). ---- */
void nd_fs_subj_init(nd_fs_subjtab_t *t);
void nd_fs_subj_free(nd_fs_subjtab_t *t);
uint32_t nd_fs_subj_find(const nd_fs_subjtab_t *t, const char *s, size_t len);
/* The id of s, created (msgs = 0) if new. */
uint32_t nd_fs_subj_intern(nd_fs_subjtab_t *t, const char *s, size_t len);
/* Forgets sid (called when its msgs drop to 0). */
void nd_fs_subj_release(nd_fs_subjtab_t *t, uint32_t sid);
/* Sets an exact id (index load); returns false on a duplicate or bad id. */
bool nd_fs_subj_put_at(nd_fs_subjtab_t *t, uint32_t sid, const char *s, size_t len);
void nd_fs_subj_finish_load(nd_fs_subjtab_t *t);

/* ---- Index (fs_index.c). ---- */
/* Writes index.db from the current state (blocks flushed and synced first by the caller). */
ND_MUST_CHECK nd_err_t nd_fs_index_write(nd_filestore_t *fs);
/* Loads index.db into fs when it is present, intact and matches the blocks on disk.
 * Returns: OK (loaded), ERR_NOT_FOUND (missing, corrupt or stale: rebuild), ERR_VERSION. */
ND_MUST_CHECK nd_err_t nd_fs_index_load(nd_filestore_t *fs, const uint32_t *idxs, size_t n);

/* ---- Recovery (fs_recover.c). ---- */
/* Rebuilds fs's blocks and subjects from the block files idxs[0..n) (ascending). */
ND_MUST_CHECK nd_err_t nd_fs_recover_blocks(nd_filestore_t *fs, const uint32_t *idxs, size_t n,
                                            nd_store_recovery_t *rep);
/* Block list: the block whose slots may hold seq (NULL when none), and appending one. */
nd_fs_blk_t *nd_fs_find_blk(nd_filestore_t *fs, uint64_t seq);
size_t nd_fs_find_blk_pos(nd_filestore_t *fs, uint64_t seq);
void nd_fs_add_blk(nd_filestore_t *fs, nd_fs_blk_t *b);

/* ---- Record transforms (fs_xform.c): compression and sealing. ---- */
/* The stored form of a message body for block b: either plain (flags 0: *body points at
 * nothing, the caller stores subj/hdr/data as they are) or transformed into fs->xbuf. */
ND_MUST_CHECK nd_err_t nd_fs_xform_encode(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t seq,
                                          int64_t ts, const char *subj, size_t sl, const void *hdr,
                                          size_t hl, const void *data, size_t dl, uint8_t *flags,
                                          const uint8_t **body, size_t *blen);
/* Turns a verified transformed record (rec, r) back into plain fields, copied into *buf (grown
 * as needed); r's subj/hdr/data and lengths are replaced by the plain ones.
 * Returns: OK, ERR_CORRUPT (does not open or decompress). */
ND_MUST_CHECK nd_err_t nd_fs_xform_decode(nd_filestore_t *fs, nd_fs_blk_t *b, const uint8_t *rec,
                                          nd_fs_rec_t *r, uint8_t **buf, size_t *cap);
/* b's sealing context, made from its header's salt on first use (NULL: no cipher or no salt). */
struct nd_fs_crypt *nd_fs_blk_crypt(nd_filestore_t *fs, nd_fs_blk_t *b, const uint8_t *hdr);

/* ---- Consumers (fs_consumer.c). ---- */
ND_MUST_CHECK nd_err_t nd_fs_consumer_open(nd_store_t *st, const char *name, nd_cstore_t **out);
ND_MUST_CHECK nd_err_t nd_fs_consumer_update(nd_cstore_t *cs, const nd_consumer_state_t *state);
ND_MUST_CHECK nd_err_t nd_fs_consumer_state(nd_cstore_t *cs, nd_consumer_state_t *out);
void nd_fs_consumer_close(nd_cstore_t *cs);
ND_MUST_CHECK nd_err_t nd_fs_consumer_delete(nd_cstore_t *cs);
ND_MUST_CHECK nd_err_t nd_fs_consumer_list(nd_store_t *st, char ***names, size_t *n);
/* fsyncs the consumer files written since the last sync. Returns: 0 or -1 (errno). */
int nd_fs_consumers_sync(nd_filestore_t *fs);
/* Makes a handle for every consumer file in obs/ (at open). */
ND_MUST_CHECK nd_err_t nd_fs_consumers_load(nd_filestore_t *fs);

/* cfg.now, or CLOCK_REALTIME in ns. */
int64_t nd_fs_now(nd_filestore_t *fs);

/* ---- In-memory state (fs_state.c). ---- */
/* Records a live message in block b (the caller wrote its record at off). sid is the
 * subject's id when the caller knows it, else ND_FS_NOSID. */
bool nd_fs_state_add(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t seq, uint32_t off,
                     const char *subj, size_t sl, uint32_t sid, uint32_t msz, int64_t ts);
/* Forgets live message seq. Returns: false when it was not live. */
bool nd_fs_state_remove(nd_filestore_t *fs, uint64_t seq);
/* Forgets every live message below first; last_seq becomes at least first - 1. Returns: count. */
uint64_t nd_fs_state_mark(nd_filestore_t *fs, uint64_t first);
/* The first live sequence >= seq (0 when none), with its block and slot. */
uint64_t nd_fs_next_live(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot);
/* The last live sequence <= seq (0 when none). */
uint64_t nd_fs_prev_live(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot);
/* A subject's first/last live sequences, refreshed when a removal made them stale. */
nd_fs_subj_t *nd_fs_subj_fresh(nd_filestore_t *fs, uint32_t sid);
/* The slot of live message seq, or false. */
bool nd_fs_locate(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot);

#endif
