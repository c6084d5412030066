/* Go's time.Time as a JetStream config carries it (a consumer's opt_start_time, pause_until):
 * the instant and the UTC offset it was written with, since Go keeps the zone and writes the
 * time back in it. Read with Go's strict RFC 3339 (time.Time's UnmarshalJSON), written as Go's
 * RFC3339Nano. Ctx: any thread.
 */
#ifndef ND_JS_GOTIME_H
#define ND_JS_GOTIME_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct nd_gotime {
    bool set;    /* false: a nil *time.Time */
    int64_t sec; /* Unix seconds (any year Go's RFC 3339 reads) */
    int32_t nsec;
    int off_s; /* the offset it was written with */
} nd_gotime_t;

/* Go's strict RFC 3339 ("2006-01-02T15:04:05[.frac](Z|±07:00)"): fields of fixed width, real
 * calendar days, no leap second. Returns: success (out set), or false (out untouched). */
bool nd_gotime_parse(const char *s, nd_gotime_t *out);

/* Returns: whether t is Go's zero time (January 1, year 1, 00:00:00 UTC). */
bool nd_gotime_is_zero(const nd_gotime_t *t);

/* Returns: the Unix nanoseconds of t, saturated (years before 1678 or after 2262); 0 for a nil
 * or zero time. */
int64_t nd_gotime_ns(const nd_gotime_t *t);

/* Returns: a new JSON string of t as Go's RFC3339Nano in the zone it was written with (Z for
 * offset 0). */
json_t *nd_gotime_json(const nd_gotime_t *t);

#endif
