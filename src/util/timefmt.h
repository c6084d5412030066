/* Go's time formats that the wire shows: RFC 3339 with nanoseconds (trailing zeros trimmed, as
 * Go's time.RFC3339Nano), in UTC. Used by the monitoring JSON, JetStream's API and its
 * Nats-Time-Stamp header. */
#ifndef ND_UTIL_TIMEFMT_H
#define ND_UTIL_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Writes wall_ns (Unix nanoseconds) as "2006-01-02T15:04:05.999999999Z"; returns its length. */
int nd_time_rfc3339(int64_t wall_ns, char out[48]);
/* Parses that format (any fraction, 'Z' or a +hh:mm offset). Returns: 0, or -1 when malformed. */
int nd_time_parse_rfc3339(const char *s, int64_t *wall_ns);

/* Writes Go's time.Duration.String() of ns into buf ("0s", "850ns", "1.5µs", "100ms", "2m0s",
 * "1h0m5s", negatives with "-"). Returns: its length, or 0 (buf "" when room > 0) when it does
 * not fit. */
size_t nd_time_go_duration(char *buf, size_t room, int64_t ns);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (Howard Hinnant's
 * days_from_civil / civil_from_days): any year, without the C library's time zone or time_t. */
int64_t nd_days_from_civil(int64_t y, int m, int d);
void nd_civil_from_days(int64_t days, int64_t *y, int *m, int *d);

#endif
