/* File store in-memory state: which sequences are live in which block, the per-subject index,
 * and the stream totals. Writers change it only after their records are written (and synced
 * where the policy says so); recovery drives the same functions from the records it reads, so
 * a store rebuilt from its blocks goes through exactly the code that built it. */
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/store/filestore.h"

size_t
nd_fs_find_blk_pos(nd_filestore_t *fs, uint64_t seq)
{
    /* Bases never decrease along the list (an empty block's base is the next sequence at its
     * creation), so the block that may hold seq is the last one whose base is <= seq. */
    size_t n = fs->nblks;
    if (!n)
        return 0;
    if (fs->blks[n - 1]->base <= seq)
        return n - 1;
    size_t lo = 0, hi = n; /* first position with base > seq */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fs->blks[mid]->base <= seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo - 1 : 0;
}

nd_fs_blk_t *
nd_fs_find_blk(nd_filestore_t *fs, uint64_t seq)
{
    if (!fs->nblks)
        return NULL;
    nd_fs_blk_t *b = fs->blks[nd_fs_find_blk_pos(fs, seq)];
    if (!b->nslots || seq < b->base || seq - b->base >= b->nslots)
        return NULL;
    return b;
}

void
nd_fs_add_blk(nd_filestore_t *fs, nd_fs_blk_t *b)
{
    if (fs->nblks == fs->capblks) {
        size_t nc = fs->capblks ? fs->capblks * 2 : 16;
        fs->blks = nd_xrealloc(fs->blks, nc * sizeof(*fs->blks));
        fs->capblks = nc;
    }
    fs->blks[fs->nblks++] = b;
    if (b->idx >= fs->next_idx)
        fs->next_idx = b->idx + 1;
}

bool
nd_fs_locate(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot)
{
    nd_fs_blk_t *b = nd_fs_find_blk(fs, seq);
    if (!b || b->off[seq - b->base] == ND_FS_NOOFF)
        return false;
    *blk = b;
    *slot = (uint32_t)(seq - b->base);
    return true;
}

uint64_t
nd_fs_next_live(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot)
{
    if (!fs->msgs || seq > fs->last_seq)
        return 0;
    for (size_t p = nd_fs_find_blk_pos(fs, seq); p < fs->nblks; p++) {
        nd_fs_blk_t *b = fs->blks[p];
        if (!b->msgs)
            continue;
        uint32_t i = b->first_slot;
        if (seq > b->base && seq - b->base > i) {
            if (seq - b->base >= b->nslots)
                continue;
            i = (uint32_t)(seq - b->base);
        }
        for (; i < b->nslots; i++) {
            if (b->off[i] != ND_FS_NOOFF) {
                if (blk)
                    *blk = b;
                if (slot)
                    *slot = i;
                return b->base + i;
            }
        }
    }
    return 0;
}

uint64_t
nd_fs_prev_live(nd_filestore_t *fs, uint64_t seq, nd_fs_blk_t **blk, uint32_t *slot)
{
    if (!fs->msgs || !fs->nblks || seq < fs->first_seq)
        return 0;
    for (size_t p = nd_fs_find_blk_pos(fs, seq) + 1; p-- > 0;) {
        nd_fs_blk_t *b = fs->blks[p];
        if (!b->msgs || seq < b->base)
            continue;
        uint64_t i = seq - b->base;
        if (i >= b->nslots)
            i = b->nslots - 1;
        for (;; i--) {
            if (b->off[i] != ND_FS_NOOFF) {
                if (blk)
                    *blk = b;
                if (slot)
                    *slot = (uint32_t)i;
                return b->base + i;
            }
            if (i == b->first_slot || i == 0)
                break;
        }
    }
    return 0;
}

bool
nd_fs_state_add(nd_filestore_t *fs, nd_fs_blk_t *b, uint64_t seq, uint32_t off, const char *subj,
                size_t sl, uint32_t sid, uint32_t msz, int64_t ts)
{
    if (sid == ND_FS_NOSID)
        sid = nd_fs_subj_intern(&fs->subj, subj, sl);
    bool was_empty = b->msgs == 0;
    if (!nd_fs_blk_slot_add(b, seq, off, sid, msz, ts)) {
        if (!fs->subj.ents[sid].msgs)
            nd_fs_subj_release(&fs->subj, sid);
        return false;
    }
    if (was_empty)
        b->first_slot = (uint32_t)(seq - b->base);
    b->msgs++;
    b->bytes += msz;
    nd_fs_subj_t *e = &fs->subj.ents[sid];
    if (e->msgs++ == 0) {
        e->first = e->last = seq;
        e->first_stale = e->last_stale = false;
    } else {
        /* A stale last is older than seq anyway: seq is the newest message of all. */
        e->last = seq;
        e->last_stale = false;
    }
    if (fs->msgs++ == 0)
        fs->first_seq = seq;
    fs->bytes += msz;
    if (seq > fs->last_seq)
        fs->last_seq = seq;
    fs->last_ts = ts;
    return true;
}

bool
nd_fs_state_remove(nd_filestore_t *fs, uint64_t seq)
{
    nd_fs_blk_t *b;
    uint32_t i;
    if (!nd_fs_locate(fs, seq, &b, &i))
        return false;
    uint32_t sid = b->sid[i];
    b->off[i] = ND_FS_NOOFF;
    b->msgs--;
    b->bytes -= b->msz[i];
    fs->msgs--;
    fs->bytes -= b->msz[i];
    if (i == b->first_slot && b->msgs) {
        while (b->first_slot < b->nslots && b->off[b->first_slot] == ND_FS_NOOFF)
            b->first_slot++;
    }
    nd_fs_subj_t *e = &fs->subj.ents[sid];
    if (--e->msgs == 0) {
        nd_fs_subj_release(&fs->subj, sid);
    } else {
        if (seq == e->first)
            e->first_stale = true;
        if (seq == e->last)
            e->last_stale = true;
    }
    if (!fs->msgs) {
        fs->first_seq = fs->last_seq + 1;
    } else if (seq <= fs->first_seq) {
        uint64_t n = nd_fs_next_live(fs, seq + 1, NULL, NULL);
        fs->first_seq = n ? n : fs->last_seq + 1;
    }
    return true;
}

uint64_t
nd_fs_state_mark(nd_filestore_t *fs, uint64_t first)
{
    uint64_t n = 0;
    for (;;) {
        uint64_t s = nd_fs_next_live(fs, 0, NULL, NULL);
        if (!s || s >= first)
            break;
        nd_fs_state_remove(fs, s);
        n++;
    }
    if (first > 0 && first - 1 > fs->last_seq)
        fs->last_seq = first - 1;
    if (!fs->msgs)
        fs->first_seq = fs->last_seq + 1;
    else if (fs->first_seq < first)
        fs->first_seq = nd_fs_next_live(fs, first, NULL, NULL);
    return n;
}

nd_fs_subj_t *
nd_fs_subj_fresh(nd_filestore_t *fs, uint32_t sid)
{
    nd_fs_subj_t *e = &fs->subj.ents[sid];
    /* One message left: first and last are the same one (no scan; the common case of a
     * subject kept at one message, a KV key). */
    if (e->msgs == 1 && e->first_stale != e->last_stale) {
        if (e->first_stale)
            e->first = e->last;
        else
            e->last = e->first;
        e->first_stale = e->last_stale = false;
    }
    if (e->first_stale) {
        nd_fs_blk_t *b;
        uint32_t i;
        for (uint64_t s = nd_fs_next_live(fs, e->first + 1, &b, &i); s;
             s = nd_fs_next_live(fs, s + 1, &b, &i)) {
            if (b->sid[i] == sid) {
                e->first = s;
                break;
            }
        }
        e->first_stale = false;
    }
    if (e->last_stale) {
        nd_fs_blk_t *b;
        uint32_t i;
        for (uint64_t s = nd_fs_prev_live(fs, e->last - 1, &b, &i); s;
             s = nd_fs_prev_live(fs, s - 1, &b, &i)) {
            if (b->sid[i] == sid) {
                e->last = s;
                break;
            }
        }
        e->last_stale = false;
    }
    return e;
}
