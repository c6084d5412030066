/* The connect-time windows of user JWTs ("times", "times_location"); see jwt.h.
 *
 * As nats-server 2.9.10 (server/auth.go validateTimes, with the Go jwt library's
 * UserLimits.Validate run first):
 * - every window's start and end must parse as Go's "15:04:05" layout (the hour one or two
 *   digits, minutes and seconds two, an optional fraction of a second), and times_location, when
 *   set, must load as a Go time.Location: "UTC", "Local", or a zoneinfo file under
 *   /usr/share/zoneinfo (names with ".." or a leading slash are refused, as Go refuses them);
 *   anything else refuses the user;
 * - "now" is taken in that location (none: the server's local zone); each window is placed on
 *   today's date there, and a window whose start is after its end ends tomorrow. The first window
 *   with start < now < end admits the login, and its end is when the server closes the
 *   connection. Like nats-server, the early-morning part of a window that crosses midnight does
 *   not admit (its start is placed today).
 *
 * Zone offsets come from the zoneinfo file (TZif v2+: 64-bit transitions). After the file's last
 * transition its footer rule applies when it is a fixed offset; a footer with daylight saving
 * rules is not evaluated and the last transition's offset stays (distributions' "fat" zoneinfo
 * files carry transitions up to 2037).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/jwt.h"
#include "actors/alloc.h"

#define ZONEINFO_DIR    "/usr/share/zoneinfo/"
#define ZONEINFO_MAX    (1u << 20) /* larger files are not zoneinfo */
#define NS_PER_S        1000000000LL
#define SECONDS_PER_DAY 86400LL

typedef enum { ZONE_UTC, ZONE_LOCAL, ZONE_FILE } zone_kind_t;

/* A loaded location: for ZONE_FILE, the transitions (Unix seconds, ascending) and the offset in
 * force from each one, the offset before the first, and a fixed offset after the last (when the
 * footer is one). */
typedef struct zone {
    zone_kind_t kind;
    int64_t *trans;
    int32_t *off;
    size_t n;
    int32_t first_off;
    bool has_tail;
    int32_t tail_off;
} zone_t;

static uint32_t
be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t
be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* Parses a POSIX TZ footer that is a fixed offset ("UTC0", "<+03>-3", "CET-1:30"): returns false
 * for anything else (a daylight saving part, or no footer). */
static bool
footer_fixed(const char *s, size_t len, int32_t *off)
{
    const char *p = s, *end = s + len;
    if (p < end && *p == '<') {
        while (p < end && *p != '>')
            p++;
        if (p == end)
            return false;
        p++;
    } else {
        const char *name = p;
        while (p < end && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
            p++;
        if (p - name < 3)
            return false;
    }
    int sign = 1;
    if (p < end && (*p == '+' || *p == '-'))
        sign = *p++ == '-' ? -1 : 1;
    int32_t part[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        if (i > 0) {
            if (p == end || *p != ':')
                break;
            p++;
        }
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9' && p - d < 3)
            part[i] = part[i] * 10 + (*p++ - '0');
        if (p == d)
            return false;
    }
    if (p != end)
        return false; /* a daylight saving zone follows */
    /* POSIX offsets are west of Greenwich: "EST5" is UTC-5. */
    *off = -sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    return true;
}

/* Reads a TZif file. Returns: false when it is not one. */
static bool
zone_parse(zone_t *z, const unsigned char *b, size_t len)
{
    if (len < 44 || memcmp(b, "TZif", 4) != 0)
        return false;
    bool v2 = b[4] >= '2';
    const unsigned char *h = b;
    size_t tsize = 4;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t isut = be32(h + 20), isstd = be32(h + 24), leap = be32(h + 28);
        uint32_t timecnt = be32(h + 32), typecnt = be32(h + 36), charcnt = be32(h + 40);
        size_t body = (size_t)timecnt * tsize + timecnt + (size_t)typecnt * 6 + charcnt +
                      (size_t)leap * (tsize + 4) + isstd + isut;
        const unsigned char *data = h + 44;
        if (typecnt == 0 || timecnt > ZONEINFO_MAX || typecnt > 256 ||
            (size_t)(data - b) + body > len)
            return false;
        if (v2 && pass == 0) {
            h = data + body; /* the v1 block: skip to the 64-bit one */
            tsize = 8;
            if ((size_t)(h - b) + 44 > len || memcmp(h, "TZif", 4) != 0)
                return false;
            continue;
        }
        const unsigned char *idx = data + (size_t)timecnt * tsize;
        const unsigned char *types = idx + timecnt;
        for (uint32_t i = 0; i < timecnt; i++)
            if (idx[i] >= typecnt)
                return false;
        z->trans = nd_xmalloc((timecnt ? timecnt : 1) * sizeof *z->trans);
        z->off = nd_xmalloc((timecnt ? timecnt : 1) * sizeof *z->off);
        z->n = timecnt;
        for (uint32_t i = 0; i < timecnt; i++) {
            z->trans[i] = tsize == 8 ? be64(data + 8 * (size_t)i) : (int32_t)be32(data + 4 * i);
            z->off[i] = (int32_t)be32(types + 6 * (size_t)idx[i]);
        }
        /* Before the first transition: the first standard-time type (Go's lookupFirstZone). */
        z->first_off = (int32_t)be32(types);
        for (uint32_t t = 0; t < typecnt; t++) {
            if (types[6 * t + 4] == 0) {
                z->first_off = (int32_t)be32(types + 6 * t);
                break;
            }
        }
        const unsigned char *foot = data + body;
        if (v2 && foot < b + len && *foot == '\n') {
            const unsigned char *nl = memchr(foot + 1, '\n', (size_t)(b + len - foot - 1));
            if (nl != NULL)
                z->has_tail =
                    footer_fixed((const char *)foot + 1, (size_t)(nl - foot - 1), &z->tail_off);
        }
        return true;
    }
    return false;
}

/* Loads Go's time.LoadLocation(name). Returns: false when it would fail there. */
static bool
zone_load(zone_t *z, const char *name)
{
    memset(z, 0, sizeof *z);
    if (name == NULL || name[0] == '\0' || strcmp(name, "UTC") == 0) {
        z->kind = ZONE_UTC;
        return true;
    }
    if (strcmp(name, "Local") == 0) {
        z->kind = ZONE_LOCAL;
        return true;
    }
    if (strstr(name, "..") != NULL || name[0] == '/' || name[0] == '\\')
        return false;
    char path[512];
    if (snprintf(path, sizeof path, "%s%s", ZONEINFO_DIR, name) >= (int)sizeof path)
        return false;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    size_t cap = 8192, len = 0, r;
    unsigned char *buf = nd_xmalloc(cap);
    while ((r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            if (cap >= ZONEINFO_MAX)
                break;
            cap *= 2;
            buf = nd_xrealloc(buf, cap);
        }
    }
    fclose(f);
    z->kind = ZONE_FILE;
    bool ok = len < ZONEINFO_MAX && zone_parse(z, buf, len);
    nd_free(buf);
    return ok;
}

static void
zone_free(zone_t *z)
{
    nd_free(z->trans);
    nd_free(z->off);
}

/* Returns: the zone's offset east of UTC, in seconds, at Unix time t. */
static int32_t
zone_offset(const zone_t *z, int64_t t)
{
    if (z->kind == ZONE_UTC)
        return 0;
    if (z->kind == ZONE_LOCAL) {
        time_t tt = (time_t)t;
        struct tm tm;
        return localtime_r(&tt, &tm) != NULL ? (int32_t)tm.tm_gmtoff : 0;
    }
    if (z->n == 0 || t < z->trans[0])
        return z->n == 0 && z->has_tail ? z->tail_off : z->first_off;
    if (t >= z->trans[z->n - 1] && z->has_tail)
        return z->tail_off;
    size_t lo = 0, hi = z->n; /* the last transition <= t */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->trans[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return z->off[lo];
}

/* Go's time.Date for a local wall time (seconds since the epoch as if the zone were UTC): the
 * offset at that wall time, corrected once when it lies on the other side of a transition. */
static int64_t
zone_unix(const zone_t *z, int64_t local)
{
    int32_t off = zone_offset(z, local);
    int32_t off2 = zone_offset(z, local - off);
    return local - (off2 != off ? off2 : off);
}

/* Parses Go's "15:04:05": into seconds of the day and nanoseconds. Returns: false on error. */
static bool
parse_clock(const char *s, int64_t *sec, int64_t *ns)
{
    if (s == NULL || s[0] < '0' || s[0] > '9')
        return false;
    int h = s[0] - '0';
    const char *p = s + 1;
    if (*p >= '0' && *p <= '9')
        h = h * 10 + (*p++ - '0');
    int v[2];
    for (int i = 0; i < 2; i++) {
        if (p[0] != ':' || p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9')
            return false;
        v[i] = (p[1] - '0') * 10 + (p[2] - '0');
        p += 3;
    }
    if (h >= 24 || v[0] >= 60 || v[1] >= 60)
        return false;
    int64_t frac = 0;
    if ((p[0] == '.' || p[0] == ',') && p[1] >= '0' && p[1] <= '9') {
        /* A fraction of a second the layout does not name: Go's Parse takes it (up to 9 digits
         * count). */
        int64_t scale = NS_PER_S / 10;
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (*p != '\0')
        return false;
    *sec = (int64_t)h * 3600 + v[0] * 60 + v[1];
    *ns = frac;
    return true;
}

nd_jwt_times_t
nd_jwt_check_user_times(const nd_jwt_user_limits_t *lim, int64_t now_ns, int64_t *left_ns)
{
    *left_ns = 0;
    int64_t sec[2], ns[2];
    for (size_t i = 0; i < lim->ntimes; i++)
        if (!parse_clock(lim->times[i].start, &sec[0], &ns[0]) ||
            !parse_clock(lim->times[i].end, &sec[1], &ns[1]))
            return ND_JWT_TIMES_INVALID;
    zone_t z;
    bool named = lim->locale != NULL && lim->locale[0] != '\0';
    if (!zone_load(&z, named ? lim->locale : "Local")) {
        zone_free(&z);
        return ND_JWT_TIMES_INVALID;
    }
    if (lim->ntimes == 0) {
        zone_free(&z);
        return ND_JWT_TIMES_OK;
    }
    int64_t now = now_ns / NS_PER_S;
    int64_t local = now + zone_offset(&z, now);
    /* Today's midnight in the zone, as a wall time (floor division: before 1970 too). */
    int64_t midnight = local - ((local % SECONDS_PER_DAY) + SECONDS_PER_DAY) % SECONDS_PER_DAY;
    nd_jwt_times_t r = ND_JWT_TIMES_OUTSIDE;
    for (size_t i = 0; i < lim->ntimes && r != ND_JWT_TIMES_OK; i++) {
        (void)parse_clock(lim->times[i].start, &sec[0], &ns[0]);
        (void)parse_clock(lim->times[i].end, &sec[1], &ns[1]);
        bool crosses = sec[0] * NS_PER_S + ns[0] > sec[1] * NS_PER_S + ns[1];
        int64_t start = zone_unix(&z, midnight + sec[0]) * NS_PER_S + ns[0];
        int64_t end =
            zone_unix(&z, midnight + (crosses ? SECONDS_PER_DAY : 0) + sec[1]) * NS_PER_S + ns[1];
        if (start < now_ns && end > now_ns) {
            *left_ns = end - now_ns;
            r = ND_JWT_TIMES_OK;
        }
    }
    zone_free(&z);
    return r;
}
