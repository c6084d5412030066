/* Per-message TTLs for both stores (nats-server 2.11's Nats-TTL): a min-heap of expiry
 * deadlines, and the few message headers the stores read themselves.
 *
 * A message stored with a TTL of t > 0 seconds expires at ts + t s. The stores keep one heap of
 * {deadline, seq} per store (nats-server uses a timed hash wheel; a binary heap gives the same
 * O(log n) add and pop and an exact next deadline). Entries are not removed when their message
 * goes by other means (remove, purge, limits): the owner checks that a popped sequence is still
 * live, and drops dead entries in bulk (nd_store_ttls_filter) once they outnumber the live
 * messages, so memory stays proportional to the messages held. A sequence is live again after a
 * truncate only in a store that filtered the heap at the truncate, which both stores do.
 *
 * The TTL itself is not in any on-disk record: as in nats-server, it is read back from the
 * message's Nats-TTL header (recovery, store_raw), so the header must say what the TTL is.
 *
 * Ctx: the store's owner, like every store op.
 */
#ifndef NATSD_JS_STORE_TTL_H
#define NATSD_JS_STORE_TTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nd_store_ttl_ent {
    int64_t at; /* Unix ns */
    uint64_t seq;
} nd_store_ttl_ent_t;

typedef struct nd_store_ttls {
    nd_store_ttl_ent_t *v; /* a binary min-heap on at */
    size_t n, cap;
} nd_store_ttls_t;

/* Schedules seq, stored at ts, to expire ttl_s seconds later. ttl_s <= 0 schedules nothing
 * (0: no TTL, -1: never); a deadline past INT64_MAX is never. */
void nd_store_ttls_add(nd_store_ttls_t *h, uint64_t seq, int64_t ts, int64_t ttl_s);
/* Schedules seq at the deadline at (Unix ns). The heap is a plain deadline heap: consumers
 * schedule redeliveries with it too (consumer.c). */
void nd_store_ttls_push(nd_store_ttls_t *h, int64_t at, uint64_t seq);
/* Returns: the earliest deadline, 0 when nothing is scheduled. */
static inline int64_t
nd_store_ttls_next(const nd_store_ttls_t *h)
{
    return h->n ? h->v[0].at : 0;
}
/* Pops the earliest entry when its deadline is at or before now. Returns: true with *seq. */
bool nd_store_ttls_pop(nd_store_ttls_t *h, int64_t now, uint64_t *seq);
/* Keeps only the entries for which keep(arg, seq) is true. O(n). */
void nd_store_ttls_filter(nd_store_ttls_t *h, bool (*keep)(void *arg, uint64_t seq), void *arg);
/* Filters with keep when dead entries may outnumber the live messages (n > 2 * msgs + 64):
 * amortised O(1) per add. */
void nd_store_ttls_trim(nd_store_ttls_t *h, uint64_t msgs, bool (*keep)(void *arg, uint64_t seq),
                        void *arg);
void nd_store_ttls_clear(nd_store_ttls_t *h);
void nd_store_ttls_free(nd_store_ttls_t *h);

/* The value of header key in a NATS/1.0 header block (the first one, blanks trimmed; the key
 * matches exactly, as nats-server's getHeader). Returns: a pointer into hdr with *n, or NULL. */
/* A Nats-TTL value: a Go duration of at least one second ("1h30m", "10s"), whole seconds
 * ("60", "0") or "never" (-1). Returns: false when malformed, else true with *secs. */
bool nd_store_parse_ttl(const char *v, size_t n, int64_t *secs);
/* The TTL a message's headers give it: its Nats-TTL in seconds, -1 for never, 0 when it has
 * none or a malformed one (nats-server's getMessageTTL). */
int64_t nd_store_hdr_ttl(const void *hdr, size_t len);
/* True when the headers are those of a subject delete marker (a Nats-Marker-Reason header) or
 * of a KV purge (KV-Operation: PURGE): expiring such a message leaves no new marker. */
bool nd_store_hdr_is_marker(const void *hdr, size_t len);

#endif
