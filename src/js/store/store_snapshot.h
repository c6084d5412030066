/* The one snapshot byte format of both stores.
 *
 * A snapshot is written only through the store ops (load_next, state, consumer_list,
 * consumer_open/consumer_state), so a snapshot of any store restores into any store.
 *
 *   header   "NDSS" (4 bytes), format version (u32 LE, 1)
 *   records  type (u8), payload length (u32 LE), payload
 *     1 STATE     first_seq u64, last_seq u64, msgs u64, bytes u64     (first record, once)
 *     2 MSG       seq u64, ts i64, subj_len u32, hdr_len u32, subject, headers, payload
 *     3 CONSUMER  name_len u32, name, consumer state (cstate.h msgpack)
 *     255 END     records u64 (all before END), XXH64 (seed 0) of every byte before END's type
 *   All integers little-endian. Interior deleted sequences are implied by the gaps between MSG
 *   records; a trailing run of deleted sequences by STATE's last_seq.
 *
 * The reader verifies structure as it goes and the checksum at the end; a truncated or corrupt
 * snapshot gives ND_ERR_STORE_CORRUPT (a newer version ND_ERR_STORE_VERSION), never a crash, and
 * never a large allocation from a lying length: a record's buffer grows only as its bytes arrive.
 * Ctx: the store's owner.
 */
#ifndef NATSD_JS_STORE_SNAPSHOT_H
#define NATSD_JS_STORE_SNAPSHOT_H

#include "js/store/store.h"

#define ND_SNAPSHOT_VERSION 1

/* Writes st's snapshot to w. Returns: ND_OK, ND_ERR_STORE_IO when w returned -1, or the
 * error of a store op. */
ND_MUST_CHECK nd_err_t nd_store_snapshot_write(nd_store_t *st, nd_store_write_fn w, void *arg);

/* Reads a snapshot from r into st, which must be empty. On an error st holds part of it: the
 * caller discards it (nd_store_restore destroys it). */
ND_MUST_CHECK nd_err_t nd_store_snapshot_read(nd_store_t *st, nd_store_read_fn r, void *arg);

#endif
