/* Shared pieces of the monitoring endpoints: nats-server's time and duration formats, Go-style
 * query parameter decoding (the 400 texts are nats-server's, which come from Go's strconv), the
 * response helpers and the process figures (/proc).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "util/timefmt.h"

/* ---- formats ---- */

/* Formats into a 48-byte output through a roomy buffer (the compiler cannot bound every
 * field, so snprintf straight into 48 bytes draws truncation warnings; real values fit). */
static void put48(char out[48], const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put48(char out[48], const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    size_t n = strlen(tmp);
    if (n > 47)
        n = 47;
    memcpy(out, tmp, n);
    out[n] = '\0';
}

void
nd_mon_fmt_time(int64_t wall_ns, char out[48])
{
    nd_time_rfc3339(wall_ns, out);
}

json_t *
nd_mon_json_time(int64_t wall_ns)
{
    char buf[48];
    nd_mon_fmt_time(wall_ns, buf);
    return json_string(buf);
}

json_t *
nd_mon_json_float(double v)
{
    return v == (double)(int64_t)v ? json_integer((json_int_t)v) : json_real(v);
}

void
nd_mon_fmt_uptime(int64_t ns, char out[48])
{
    /* nats-server's myUptime: whole seconds, with days and years. */
    int64_t tsecs = ns > 0 ? ns / 1000000000LL : 0;
    int64_t tmins = tsecs / 60, thrs = tmins / 60, tdays = thrs / 24, tyrs = tdays / 365;
    if (tyrs > 0)
        put48(out, "%" PRId64 "y%" PRId64 "d%" PRId64 "h%" PRId64 "m%" PRId64 "s", tyrs,
              tdays % 365, thrs % 24, tmins % 60, tsecs % 60);
    else if (tdays > 0)
        put48(out, "%" PRId64 "d%" PRId64 "h%" PRId64 "m%" PRId64 "s", tdays, thrs % 24, tmins % 60,
              tsecs % 60);
    else if (thrs > 0)
        put48(out, "%" PRId64 "h%" PRId64 "m%" PRId64 "s", thrs, tmins % 60, tsecs % 60);
    else if (tmins > 0)
        put48(out, "%" PRId64 "m%" PRId64 "s", tmins, tsecs % 60);
    else
        put48(out, "%" PRId64 "s", tsecs);
}

void
nd_mon_fmt_duration(int64_t ns, char out[48])
{
    (void)nd_time_go_duration(out, 48, ns); /* 48 holds any: "-2562047h47m16.854775808s" */
}

/* ---- responses ---- */

/* Rewrites, in place, every string "<ND_JSON_U64_TAG><digits>" of dumped JSON as the bare
 * number (server.h): jansson has no unsigned 64-bit integers. */
static void
u64_untag(char *text)
{
    if (strstr(text, "natsd-u64:") == NULL)
        return; /* the usual case: no tagged number */
    /* The tag as jansson escapes it (its control characters), asked from jansson itself. */
    json_t *t = json_string(ND_JSON_U64_TAG);
    char *tag = json_dumps(t, JSON_ENCODE_ANY);
    json_decref(t);
    size_t tl = strlen(tag) - 1; /* without the closing quote */
    tag[tl] = '\0';
    char *w = text, *r = text, *hit;
    while ((hit = strstr(r, tag)) != NULL) {
        size_t n = (size_t)(hit - r);
        memmove(w, r, n);
        w += n;
        r = hit + tl;
        while (*r >= '0' && *r <= '9')
            *w++ = *r++;
        if (*r == '"')
            r++;
    }
    memmove(w, r, strlen(r) + 1);
    free(tag);
}

static void
reply_json(nd_mon_req_t *req, int status, json_t *o, size_t flags)
{
    char *js = json_dumps(o, flags | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(o);
    u64_untag(js);
    const char *cb = nd_mon_param(req, "callback");
    size_t n = strlen(js);
    nd_free(req->body);
    if (cb != NULL && *cb != '\0') {
        /* JSONP, as nats-server: fn(<json>) */
        size_t cl = strlen(cb);
        req->body = nd_xmalloc(cl + n + 3);
        memcpy(req->body, cb, cl);
        req->body[cl] = '(';
        memcpy(req->body + cl + 1, js, n);
        req->body[cl + 1 + n] = ')';
        req->body_len = cl + n + 2;
        req->body[req->body_len] = '\0';
        req->ctype = "application/javascript";
    } else {
        req->body = nd_xstrdup(js);
        req->body_len = n;
        req->ctype = "application/json";
    }
    free(js);
    req->status = status;
}

void
nd_mon_reply_json(nd_mon_req_t *req, int status, json_t *o)
{
    reply_json(req, status, o, JSON_INDENT(2));
}

void
nd_mon_reply_json_compact(nd_mon_req_t *req, int status, json_t *o)
{
    reply_json(req, status, o, JSON_COMPACT);
}

void
nd_mon_reply_text(nd_mon_req_t *req, int status, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    nd_free(req->body);
    req->body = nd_xstrdup(buf);
    req->body_len = strlen(buf);
    req->ctype = "text/plain; charset=utf-8";
    req->status = status;
}

/* ---- query parameters ---- */

const char *
nd_mon_param(const nd_mon_req_t *req, const char *key)
{
    /* Go's url.Values.Get: the first value. */
    for (size_t i = 0; i < req->nparams; i++)
        if (strcmp(req->params[i].key, key) == 0)
            return req->params[i].val;
    return NULL;
}

/* Go's strconv integer syntax: optional sign (signed only), decimal digits. Returns: 0 ok,
 * 1 syntax, 2 range. */
static int
parse_int64(const char *s, bool is_signed, int64_t *out_i, uint64_t *out_u)
{
    const char *p = s;
    bool neg = false;
    if (is_signed && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    if (*p == '\0')
        return 1;
    uint64_t v = 0;
    bool over = false;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 1;
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (over)
        return 2;
    if (!is_signed) {
        *out_u = v;
        return 0;
    }
    if ((!neg && v > (uint64_t)INT64_MAX) || (neg && v > (uint64_t)INT64_MAX + 1))
        return 2;
    *out_i = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

bool
nd_mon_param_int(nd_mon_req_t *req, const char *key, int64_t *out)
{
    const char *v = nd_mon_param(req, key);
    if (v == NULL || *v == '\0')
        return true;
    uint64_t u;
    int rc = parse_int64(v, true, out, &u);
    if (rc == 0)
        return true;
    nd_mon_reply_text(req, 400, "Error decoding int for '%s': strconv.Atoi: parsing \"%.200s\": %s",
                      key, v, rc == 1 ? "invalid syntax" : "value out of range");
    return false;
}

bool
nd_mon_param_uint(nd_mon_req_t *req, const char *key, uint64_t *out)
{
    const char *v = nd_mon_param(req, key);
    if (v == NULL || *v == '\0')
        return true;
    int64_t i;
    int rc = parse_int64(v, false, &i, out);
    if (rc == 0)
        return true;
    nd_mon_reply_text(req, 400,
                      "Error decoding uint64 for '%s': strconv.ParseUint: parsing \"%.200s\": %s",
                      key, v, rc == 1 ? "invalid syntax" : "value out of range");
    return false;
}

bool
nd_mon_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
    static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcmp(s, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

bool
nd_mon_param_bool(nd_mon_req_t *req, const char *key, bool *out)
{
    const char *v = nd_mon_param(req, key);
    if (v == NULL || *v == '\0')
        return true;
    if (nd_mon_parse_bool(v, out))
        return true;
    nd_mon_reply_text(req, 400,
                      "Error decoding boolean for '%s': strconv.ParseBool: parsing \"%.200s\": "
                      "invalid syntax",
                      key, v);
    return false;
}

/* ---- process figures ---- */

/* Seconds since the Unix epoch at boot: /proc/stat's btime line, 0 when unknown. */
static int64_t
boot_time_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return 0;
    char line[256];
    long long bt = 0;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "btime %lld", &bt) == 1)
            break;
    fclose(f);
    return bt;
}

void
nd_mon_proc_read(nd_mon_proc_t *p)
{
    memset(p, 0, sizeof *p);
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f != NULL) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* The command name (field 2) may hold spaces and parentheses: fields are counted
         * from after its last closing parenthesis. utime(14) stime(15) starttime(22)
         * vsize(23) rss(24). */
        char *c = strrchr(buf, ')');
        unsigned long long ut, st, start, vsize;
        long long rss;
        if (c != NULL && tck > 0 &&
            sscanf(c + 1,
                   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d"
                   " %*d %llu %llu %lld",
                   &ut, &st, &start, &vsize, &rss) == 5) {
            p->cpu_ns = (ut + st) * (1000000000ull / (unsigned long long)tck);
            p->vsize_bytes = vsize;
            p->rss_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
            int64_t bt = boot_time_s();
            if (bt > 0)
                p->start_wall_ns =
                    bt * 1000000000ll + (int64_t)start * (1000000000ll / (int64_t)tck);
        }
    }
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                p->open_fds++;
        closedir(d);
        if (p->open_fds > 0)
            p->open_fds--; /* the directory stream's own descriptor */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        p->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
}

int64_t
nd_mon_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    long long size = 0, rss = 0;
    int n = fscanf(f, "%lld %lld", &size, &rss);
    fclose(f);
    return n == 2 ? (int64_t)rss * sysconf(_SC_PAGESIZE) : 0;
}

double
nd_mon_cpu_seconds(void)
{
    /* utime and stime are fields 14 and 15 of /proc/self/stat; the command name (field 2) may
     * hold spaces, so parsing starts after its closing parenthesis. */
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return 0;
    unsigned long long utime = 0, stime = 0;
    /* After ")": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime(14) stime(15). */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
        2)
        return 0;
    return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double
nd_mon_cpu_percent(const nd_server_t *srv, int64_t now_ns)
{
    /* As `ps -o pcpu` (which nats-server runs): CPU time over the process's lifetime. */
    double elapsed = (double)(now_ns - srv->start_wall_ns) / 1e9;
    if (elapsed <= 0)
        return 0;
    double pct = nd_mon_cpu_seconds() / elapsed * 100.0;
    return (double)(int64_t)(pct * 100.0 + 0.5) / 100.0;
}

int
nd_mon_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
