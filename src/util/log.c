/* Server log; see log.h.
 *
 * Formats, all from nats-server 2.10 (logger/log.go, logger/syslog.go, server/log.go):
 *   stderr and file: "[pid] YYYY/MM/DD hh:mm:ss.uuuuuu [INF] text\n", the time only with logtime,
 *     in UTC with logtime_utc. Labels FTL ERR WRN INF DBG TRC; on a terminal they are coloured.
 *   remote syslog (Go's log/syslog network form, facility 0): "<5>2006-01-02T15:04:05Z07:00
 *     host tag[pid]: text\n", severity notice for INF and TRC, warning, err, crit (FTL), debug.
 *   local syslog: syslog(3) with facility daemon, tag = the program's base name.
 *
 * Rotation (log_size_limit): after a write takes the file over the limit, the file is renamed to
 * "<file>.YYYY.MM.DD.hh.mm.ss.nnnnnnnnn" (local time, nanoseconds), a new file is opened and
 * starts with `Rotated log, backup saved as "<backup>"`. With log_max_num N > 0 the oldest
 * backups (names of that shape, oldest first by name) are removed until N - 1 are left, so the
 * live file and its backups number N, each removal logged as `Purged log file "<name>"`.
 *
 * Invariants: every field of `g` except the level atomics is read and written under g.mu; the
 * sink is swapped only after its replacement opened, so a failed reload keeps logging.
 */
#include "util/log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"

/* Go's text for an errno (its syscall error strings are strerror's, lower-cased). */
static const char *
go_strerror(int e, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

typedef enum { SINK_STDERR, SINK_FILE, SINK_REMOTE, SINK_SYSLOG } sink_kind_t;

/* The output side; a copy is built by configure and swapped in whole. */
typedef struct sink {
    sink_kind_t kind;
    int fd;          /* stderr, the log file or the remote syslog socket */
    char *path;      /* SINK_FILE: owned */
    int64_t size;    /* SINK_FILE: bytes in the current file */
    int64_t limit;   /* SINK_FILE: rotate past this, 0 = never */
    int64_t max_num; /* SINK_FILE: files kept (live + backups), 0 = all */
    bool logtime, utc, colors;
    bool stream; /* SINK_REMOTE over TCP */
} sink_t;

static struct {
    /* any thread, atomic (relaxed: they only gate output, nothing is published with them) */
    atomic_bool debug, trace;
    atomic_int cap; /* the least severe level logged (nd_log_set_cap) */
    /* under mu */
    pthread_mutex_t mu;
    sink_t s;
    nd_log_hook_fn hook; /* an embedder's receiver instead of s, or NULL */
    void *hook_arg;
    char tag[64];       /* program base name, for syslog */
    char hostname[256]; /* for remote syslog */
} g = {
    .cap = ND_LOG_TRACE,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .s = {.kind = SINK_STDERR, .fd = 2, .logtime = true},
};

static const char *const labels[] = {"FTL", "ERR", "WRN", "INF", "DBG", "TRC"};
static const char *const colours[] = {"31", "31", "0;93", "32", "36", "33"};

/* Go's log/syslog severities for Fatalf, Errorf, Warnf, Noticef, Debugf, Tracef. */
static const int severities[] = {LOG_CRIT, LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_DEBUG, LOG_NOTICE};

static void
sink_close(sink_t *s)
{
    if (s->kind == SINK_SYSLOG)
        closelog();
    else if (s->fd > 2)
        close(s->fd);
    nd_free(s->path);
    s->path = NULL;
}

/* Appends the "[pid] time [LBL] " prefix of a stderr or file line to buf. Returns its length. */
static size_t
prefix(const sink_t *s, char *buf, size_t cap, nd_log_level_t level)
{
    size_t n = (size_t)snprintf(buf, cap, "[%d] ", (int)getpid());
    if (s->logtime) {
        struct timeval tv;
        struct tm tm;
        gettimeofday(&tv, NULL);
        if (s->utc)
            gmtime_r(&tv.tv_sec, &tm);
        else
            localtime_r(&tv.tv_sec, &tm);
        n += strftime(buf + n, cap - n, "%Y/%m/%d %H:%M:%S", &tm);
        n += (size_t)snprintf(buf + n, cap - n, ".%06ld ", (long)tv.tv_usec);
    }
    if (s->colors)
        n += (size_t)snprintf(buf + n, cap - n, "[\x1b[%sm%s\x1b[0m] ", colours[level],
                              labels[level]);
    else
        n += (size_t)snprintf(buf + n, cap - n, "[%s] ", labels[level]);
    return n;
}

static void
write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Writes one formatted line straight to the file sink, bypassing rotation (rotation's own
 * notices). Returns: the bytes written. */
static size_t file_direct(sink_t *s, nd_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static size_t
file_direct(sink_t *s, nd_log_level_t level, const char *fmt, ...)
{
    char line[2048];
    size_t n = prefix(s, line, sizeof line, level);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    n += m < 0 ? 0 : ((size_t)m >= sizeof line - n - 1 ? sizeof line - n - 2 : (size_t)m);
    line[n++] = '\n';
    write_all(s->fd, line, n);
    return n;
}

/* True for "YYYY.MM.DD.hh.mm.ss" optionally followed by ".n" with 1..9 digits: the backup
 * suffixes nats-server recognises (it parses them as a time). */
static bool
is_backup_stamp(const char *p)
{
    static const int widths[] = {4, 2, 2, 2, 2, 2};
    for (size_t f = 0; f < 6; f++) {
        for (int i = 0; i < widths[f]; i++, p++)
            if (*p < '0' || *p > '9')
                return false;
        if (f < 5 && *p++ != '.')
            return false;
    }
    if (*p == '\0')
        return true;
    if (*p++ != '.')
        return false;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        digits++;
    return *p == '\0' && digits >= 1 && digits <= 9;
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Removes the oldest backups of s->path until max_num - 1 are left. */
static void
purge(sink_t *s)
{
    char *dirc = nd_xstrdup(s->path);
    char *slash = strrchr(dirc, '/');
    const char *dname = ".", *base = dirc;
    if (slash != NULL) {
        *slash = '\0';
        dname = slash == dirc ? "/" : dirc;
        base = slash + 1;
    }
    DIR *d = opendir(dname);
    if (d == NULL) {
        file_direct(
            s, ND_LOG_ERROR,
            "Unable to read directory \"%s\" for log purge (%s), will attempt next rotation", dname,
            strerror(errno));
        nd_free(dirc);
        return;
    }
    size_t bl = strlen(base), n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, base, bl) != 0 || e->d_name[bl] != '.' ||
            !is_backup_stamp(e->d_name + bl + 1))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = nd_xrealloc(names, cap * sizeof *names);
        }
        names[n++] = nd_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    size_t keep = (size_t)(s->max_num - 1);
    for (size_t i = 0; n > keep && i < n - keep; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", dname, names[i]);
        if (unlink(full) != 0) {
            file_direct(s, ND_LOG_ERROR,
                        "Unable to remove backup log file \"%s\" (%s), will attempt next rotation",
                        names[i], strerror(errno));
            break;
        }
        file_direct(s, ND_LOG_INFO, "Purged log file \"%s\"", names[i]);
    }
    for (size_t i = 0; i < n; i++)
        nd_free(names[i]);
    nd_free(names);
    nd_free(dirc);
}

static void
rotate(sink_t *s)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    char bak[4200];
    snprintf(bak, sizeof bak, "%s.%04d.%02d.%02d.%02d.%02d.%02d.%09ld", s->path, tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec);
    if (rename(s->path, bak) != 0) {
        /* Keep writing to the current file; try again at twice the size. */
        s->limit *= 2;
        file_direct(
            s, ND_LOG_ERROR,
            "Unable to rename logfile for rotation (%s), will attempt next rotation at size %lld",
            strerror(errno), (long long)s->limit);
        return;
    }
    int fd = open(s->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0660);
    if (fd < 0) {
        /* The renamed file is still open: keep logging into it rather than losing lines. */
        file_direct(s, ND_LOG_ERROR, "Unable to re-open the logfile \"%s\" after rotation: %s",
                    s->path, strerror(errno));
        return;
    }
    close(s->fd);
    s->fd = fd;
    s->size = (int64_t)file_direct(s, ND_LOG_INFO, "Rotated log, backup saved as \"%s\"", bak);
    if (s->max_num > 0)
        purge(s);
}

/* Emits one message on the current sink. Ctx: under g.mu. */
static void
emit(nd_log_level_t level, const char *msg, size_t mlen)
{
    sink_t *s = &g.s;
    if (s->kind == SINK_SYSLOG) {
        syslog(severities[level], "%.*s", (int)mlen, msg);
        return;
    }
    char stack[4096];
    char *line = stack;
    size_t cap = sizeof stack, need;
    if (s->kind == SINK_REMOTE)
        need = 256 + strlen(g.hostname) + strlen(g.tag) + mlen;
    else
        need = 128 + mlen;
    if (need > cap) {
        line = nd_xmalloc(need);
        cap = need;
    }
    size_t n;
    if (s->kind == SINK_REMOTE) {
        struct timeval tv;
        struct tm tm;
        gettimeofday(&tv, NULL);
        localtime_r(&tv.tv_sec, &tm);
        n = (size_t)snprintf(line, cap, "<%d>", severities[level]);
        n += strftime(line + n, cap - n, "%Y-%m-%dT%H:%M:%S", &tm);
        if (tm.tm_gmtoff == 0) {
            line[n++] = 'Z';
        } else {
            long off = tm.tm_gmtoff < 0 ? -tm.tm_gmtoff : tm.tm_gmtoff;
            n += (size_t)snprintf(line + n, cap - n, "%c%02ld:%02ld", tm.tm_gmtoff < 0 ? '-' : '+',
                                  off / 3600, off / 60 % 60);
        }
        n += (size_t)snprintf(line + n, cap - n, " %s %s[%d]: ", g.hostname, g.tag, (int)getpid());
    } else {
        n = prefix(s, line, cap, level);
    }
    memcpy(line + n, msg, mlen);
    n += mlen;
    line[n++] = '\n';
    if (s->kind == SINK_REMOTE) {
        ssize_t w = send(s->fd, line, n, MSG_NOSIGNAL | (s->stream ? 0 : MSG_DONTWAIT));
        (void)w; /* a lost syslog datagram must not stop the server */
    } else {
        write_all(s->fd, line, n);
    }
    if (s->kind == SINK_FILE) {
        s->size += (int64_t)n;
        if (s->limit > 0 && s->size > s->limit)
            rotate(s);
    }
    if (line != stack)
        nd_free(line);
}

void
nd_log(nd_log_level_t level, const char *fmt, ...)
{
    char stack[2048];
    char *msg = stack;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    if (m < 0 || (int)level > atomic_load_explicit(&g.cap, memory_order_relaxed))
        return;
    if ((size_t)m >= sizeof stack) {
        msg = nd_xmalloc((size_t)m + 1);
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)m + 1, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&g.mu);
    if (g.hook != NULL)
        g.hook(g.hook_arg, level, msg);
    else
        emit(level, msg, (size_t)m);
    pthread_mutex_unlock(&g.mu);
    if (msg != stack)
        nd_free(msg);
}

void
nd_log_set_hook(nd_log_hook_fn fn, void *arg)
{
    pthread_mutex_lock(&g.mu);
    g.hook = fn;
    g.hook_arg = arg;
    pthread_mutex_unlock(&g.mu);
}

void
nd_log_set_cap(nd_log_level_t max)
{
    atomic_store_explicit(&g.cap, (int)max, memory_order_relaxed);
    if (max >= ND_LOG_DEBUG)
        atomic_store_explicit(&g.debug, true, memory_order_relaxed);
    if (max >= ND_LOG_TRACE)
        atomic_store_explicit(&g.trace, true, memory_order_relaxed);
}

bool
nd_log_enabled(nd_log_level_t level)
{
    if ((int)level > atomic_load_explicit(&g.cap, memory_order_relaxed))
        return false;
    if (level == ND_LOG_TRACE)
        return atomic_load_explicit(&g.trace, memory_order_relaxed);
    if (level == ND_LOG_DEBUG)
        return atomic_load_explicit(&g.debug, memory_order_relaxed);
    return true;
}

void
nd_log_set_levels(bool debug, bool trace)
{
    atomic_store_explicit(&g.debug, debug, memory_order_relaxed);
    atomic_store_explicit(&g.trace, trace, memory_order_relaxed);
}

/* The program's base name (Go's os.Args[0] base, the tag nats-server gives syslog). */
static void
init_names(void)
{
    if (g.tag[0] == '\0') {
        char buf[4096];
        int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[n > 0 ? n : 0] = '\0';
        const char *b = strrchr(buf, '/');
        const char *t = b ? b + 1 : (buf[0] ? buf : "natsd");
        snprintf(g.tag, sizeof g.tag, "%.*s", (int)sizeof g.tag - 1, t);
    }
    if (g.hostname[0] == '\0' && gethostname(g.hostname, sizeof g.hostname - 1) != 0)
        snprintf(g.hostname, sizeof g.hostname, "localhost");
}

/* Connects to "udp://host:port", "tcp://host:port" or "unix:///path" (nats-server's
 * remote_syslog; a missing port means 514). Returns: the socket, or -1 with err set. */
static int
remote_connect(const char *url, bool *stream, char *err, size_t errlen)
{
    const char *sep = strstr(url, "://");
    if (sep == NULL) {
        snprintf(err, errlen, "error invalid network type: \"\"");
        return -1;
    }
    size_t sl = (size_t)(sep - url);
    const char *rest = sep + 3;
    if (sl == 4 && strncmp(url, "unix", 4) == 0) {
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        snprintf(sun.sun_path, sizeof sun.sun_path, "%s", rest);
        for (int type = SOCK_DGRAM; type; type = type == SOCK_DGRAM ? SOCK_STREAM : 0) {
            int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
            if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0) {
                *stream = type == SOCK_STREAM;
                return fd;
            }
            if (fd >= 0)
                close(fd);
        }
        snprintf(err, errlen, "error connecting to syslog: \"dial unix %s: %s\"", rest,
                 strerror(errno));
        return -1;
    }
    bool udp = sl == 3 && strncmp(url, "udp", 3) == 0;
    bool tcp = sl == 3 && strncmp(url, "tcp", 3) == 0;
    if (!udp && !tcp) {
        snprintf(err, errlen, "error invalid network type: \"%.*s\"", (int)sl, url);
        return -1;
    }
    char host[256] = "", port[16] = "514";
    const char *end = rest + strcspn(rest, "/?#");
    const char *colon = NULL;
    if (rest[0] == '[') {
        const char *rb = memchr(rest, ']', (size_t)(end - rest));
        if (rb == NULL) {
            snprintf(err, errlen, "error connecting to syslog: \"bad address %s\"", rest);
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(rb - rest - 1), rest + 1);
        colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(rest, ':', (size_t)(end - rest));
        snprintf(host, sizeof host, "%.*s", (int)((colon ? colon : end) - rest), rest);
    }
    if (colon != NULL && colon + 1 < end)
        snprintf(port, sizeof port, "%.*s", (int)(end - colon - 1), colon + 1);
    struct addrinfo hints = {.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host[0] ? host : "localhost", port, &hints, &res);
    if (rc != 0) {
        snprintf(err, errlen, "error connecting to syslog: \"dial %s %s:%s: %s\"",
                 udp ? "udp" : "tcp", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        saved = errno;
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "error connecting to syslog: \"dial %s %s:%s: %s\"",
                 udp ? "udp" : "tcp", host, port, strerror(saved));
        return -1;
    }
    *stream = tcp;
    return fd;
}

int
nd_log_configure(const nd_log_cfg_t *o, char *err, size_t errlen)
{
    sink_t s = {.kind = SINK_STDERR, .fd = 2, .logtime = o->logtime, .utc = o->utc};
    /* The lock is held from opening the new sink to installing it, so a rotation cannot rename
     * the file between our open and the swap (our descriptor would then be the backup's). */
    pthread_mutex_lock(&g.mu);
    init_names();
    if (o->file != NULL && o->file[0] != '\0') {
        int fd = open(o->file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0660);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            char why[128];
            go_strerror(errno, why, sizeof why);
            snprintf(err, errlen, "error opening file: open %s: %s", o->file, why);
            if (fd >= 0)
                close(fd);
            pthread_mutex_unlock(&g.mu);
            return -1;
        }
        s.kind = SINK_FILE;
        s.fd = fd;
        s.path = nd_xstrdup(o->file);
        s.size = st.st_size;
        s.limit = o->size_limit > 0 ? o->size_limit : 0;
        s.max_num = o->max_num > 0 ? o->max_num : 0;
    } else if (o->remote_syslog != NULL && o->remote_syslog[0] != '\0') {
        int fd = remote_connect(o->remote_syslog, &s.stream, err, errlen);
        if (fd < 0) {
            pthread_mutex_unlock(&g.mu);
            return -1;
        }
        s.kind = SINK_REMOTE;
        s.fd = fd;
    } else if (o->syslog) {
        s.kind = SINK_SYSLOG;
        s.fd = -1;
    } else {
        s.colors = isatty(2) == 1;
    }
    nd_log_set_levels(o->debug, o->trace);
    sink_t old = g.s;
    /* closelog() of an old syslog sink would undo a new openlog(): close it first. */
    if (old.kind == SINK_SYSLOG)
        sink_close(&old);
    g.s = s;
    if (s.kind == SINK_SYSLOG)
        openlog(g.tag, LOG_PID, LOG_DAEMON);
    if (old.kind != SINK_SYSLOG)
        sink_close(&old);
    pthread_mutex_unlock(&g.mu);
    if (s.kind == SINK_FILE && s.limit > 0 && s.size > s.limit)
        nd_log_info("Rotating logfile...");
    return 0;
}

void
nd_log_setup(bool debug, bool trace, bool logtime, const char *file)
{
    nd_log_cfg_t o = {.debug = debug, .trace = trace, .logtime = logtime, .file = file};
    char err[512], err2[64];
    if (nd_log_configure(&o, err, sizeof err) != 0) {
        o.file = NULL;
        if (nd_log_configure(&o, err2, sizeof err2) == 0)
            nd_log_error("%s", err);
    }
}

void
nd_log_reopen(void)
{
    pthread_mutex_lock(&g.mu);
    if (g.s.kind != SINK_FILE) {
        pthread_mutex_unlock(&g.mu);
        nd_log_info("File log re-open ignored, not a file logger");
        return;
    }
    int fd = open(g.s.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0660);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        pthread_mutex_unlock(&g.mu);
        nd_log_error("Unable to re-open the logfile: %s", strerror(saved));
        return;
    }
    close(g.s.fd);
    g.s.fd = fd;
    g.s.size = st.st_size;
    pthread_mutex_unlock(&g.mu);
    nd_log_info("File log re-opened");
}

void
nd_log_close(void)
{
    pthread_mutex_lock(&g.mu);
    sink_close(&g.s);
    bool logtime = g.s.logtime, utc = g.s.utc;
    g.s = (sink_t){.kind = SINK_STDERR, .fd = 2, .logtime = logtime, .utc = utc};
    pthread_mutex_unlock(&g.mu);
}
