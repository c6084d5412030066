/* Go's time.Time of JetStream configs (gotime.h): proleptic Gregorian dates converted with
 * Howard Hinnant's days_from_civil / civil_from_days, so that any year RFC 3339 can write
 * (0000 to 9999) round-trips without the C library's time zone or time_t limits.
 */
#include "js/gotime.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/timefmt.h"

#define NS_PER_S INT64_C(1000000000)

static int
digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

bool
nd_gotime_parse(const char *s, nd_gotime_t *out)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':')
        return false;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
        se > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] + (mo == 2 && leap))
        return false;
    const char *p = s + 19;
    int32_t nsec = 0;
    if (*p == '.') {
        int nd = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 9)
                nsec = nsec * 10 + (*p - '0');
        if (nd == 0)
            return false;
        for (; nd < 9; nd++)
            nsec *= 10;
    }
    int off = 0;
    if (*p == 'Z')
        p++;
    else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh = digits(p + 1, 2), om = digits(p + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else
        return false;
    if (*p)
        return false;
    out->set = true;
    out->sec = nd_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    out->nsec = nsec;
    out->off_s = off;
    return true;
}

bool
nd_gotime_is_zero(const nd_gotime_t *t)
{
    return t->sec == nd_days_from_civil(1, 1, 1) * 86400 && t->nsec == 0;
}

int64_t
nd_gotime_ns(const nd_gotime_t *t)
{
    if (!t->set || nd_gotime_is_zero(t))
        return 0;
    if (t->sec >= INT64_MAX / NS_PER_S)
        return INT64_MAX;
    if (t->sec <= INT64_MIN / NS_PER_S)
        return INT64_MIN;
    return t->sec * NS_PER_S + t->nsec;
}

json_t *
nd_gotime_json(const nd_gotime_t *t)
{
    char buf[80], frac[16] = "", zone[8] = "Z";
    int64_t local = t->sec + t->off_s;
    int64_t days = local >= 0 ? local / 86400 : -((-local + 86399) / 86400);
    int64_t sod = local - days * 86400, y;
    int m, d;
    nd_civil_from_days(days, &y, &m, &d);
    if (t->nsec) {
        snprintf(frac, sizeof frac, ".%09d", (int)t->nsec);
        size_t n = strlen(frac);
        while (n > 1 && frac[n - 1] == '0')
            frac[--n] = '\0';
    }
    if (t->off_s) {
        int o = t->off_s < 0 ? -t->off_s : t->off_s;
        snprintf(zone, sizeof zone, "%c%02d:%02d", t->off_s < 0 ? '-' : '+', (o / 3600) % 100,
                 (o % 3600) / 60);
    }
    snprintf(buf, sizeof buf, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d%s%s", y, m, d,
             (int)(sod / 3600), (int)(sod % 3600 / 60), (int)(sod % 60), frac, zone);
    return json_string(buf);
}
