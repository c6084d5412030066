/* RFC 3339 times as Go writes them: see timefmt.h. */
#include "util/timefmt.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int
nd_time_rfc3339(int64_t wall_ns, char out[48])
{
    int64_t secs = wall_ns / 1000000000LL, frac = wall_ns % 1000000000LL;
    if (frac < 0) {
        frac += 1000000000LL;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    gmtime_r(&t, &tm);
    char fr[16] = "";
    if (frac != 0) {
        snprintf(fr, sizeof fr, ".%09" PRId64, frac);
        size_t n = strlen(fr);
        while (n > 1 && fr[n - 1] == '0')
            fr[--n] = '\0';
    }
    int year = tm.tm_year + 1900;
    if (year < 0 || year > 9999)
        year = year < 0 ? 0 : 9999;
    return snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", year, (tm.tm_mon + 1) % 100,
                    tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100, fr);
}

int
nd_time_parse_rfc3339(const char *s, int64_t *wall_ns)
{
    struct tm tm = {0};
    int n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    const char *p = s + n;
    int64_t frac = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9)
                frac = frac * 10 + (*p - '0');
        if (digits == 0)
            return -1;
        for (; digits < 9; digits++)
            frac *= 10;
    }
    int64_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return -1;
        off = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    int64_t secs = (int64_t)timegm(&tm) - off;
    /* beyond what nanoseconds since 1970 hold (years < 1678 or > 2262): saturate */
    if (secs >= INT64_MAX / 1000000000LL)
        *wall_ns = INT64_MAX;
    else if (secs <= INT64_MIN / 1000000000LL)
        *wall_ns = INT64_MIN;
    else
        *wall_ns = secs * 1000000000LL + frac;
    return 0;
}

/* ---- Go's time.Duration.String() ---- */

/* Go's fmtFrac: the prec low digits of v as a fraction without trailing zeros (and without the
 * point when they are all zero), written backwards ending at *w. Returns: v without them. */
static uint64_t
fmt_frac(char *buf, size_t *w, uint64_t v, int prec)
{
    bool print = false;
    for (int i = 0; i < prec; i++) {
        unsigned digit = (unsigned)(v % 10);
        print = print || digit != 0;
        if (print)
            buf[--*w] = (char)('0' + digit);
        v /= 10;
    }
    if (print)
        buf[--*w] = '.';
    return v;
}

/* v's decimal digits written backwards ending at *w. */
static void
fmt_int(char *buf, size_t *w, uint64_t v)
{
    do {
        buf[--*w] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
}

size_t
nd_time_go_duration(char *buf, size_t room, int64_t ns)
{
    char b[32];
    size_t w = sizeof b;
    bool neg = ns < 0;
    uint64_t u = neg ? 0 - (uint64_t)ns : (uint64_t)ns;
    if (u < 1000000000) {
        int prec;
        if (u == 0) {
            b[--w] = 's';
            b[--w] = '0';
            goto done;
        } else if (u < 1000) {
            prec = 0;
            b[--w] = 's';
            b[--w] = 'n';
        } else if (u < 1000000) {
            prec = 3;
            b[--w] = 's';
            b[--w] = (char)0xb5; /* U+00B5 MICRO SIGN, as Go writes it */
            b[--w] = (char)0xc2;
        } else {
            prec = 6;
            b[--w] = 's';
            b[--w] = 'm';
        }
        u = fmt_frac(b, &w, u, prec);
        fmt_int(b, &w, u);
    } else {
        b[--w] = 's';
        u = fmt_frac(b, &w, u, 9);
        fmt_int(b, &w, u % 60);
        u /= 60;
        if (u > 0) {
            b[--w] = 'm';
            fmt_int(b, &w, u % 60);
            u /= 60;
            if (u > 0) {
                b[--w] = 'h';
                fmt_int(b, &w, u);
            }
        }
    }
    if (neg)
        b[--w] = '-';
done:;
    size_t n = sizeof b - w;
    if (n + 1 > room) {
        if (room > 0)
            buf[0] = '\0';
        return 0;
    }
    memcpy(buf, b + w, n);
    buf[n] = '\0';
    return n;
}

int64_t
nd_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void
nd_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}
