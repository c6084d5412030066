/* RFC 3339 times as Go writes them: see timefmt.h. */
#include "util/timefmt.h"

#include <inttypes.h>
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
