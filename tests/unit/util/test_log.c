/* Unit tests of the server log (src/util/log.c): line format, logtime_utc, levels at run time,
 * size rotation with log_max_num, reopen after a rename (logrotate), remote syslog to a UDP
 * socket of the test, and configuration errors. Each test writes into a fresh mkdtemp
 * directory; Criterion runs each test in its own process, so the log's global state starts
 * fresh. Nothing depends on speed: rotation is driven by sizes, never by time.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cfg/opts.h"
#include "util/log.h"

static char dir[64];
static char path[128];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_log_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/natsd.log", dir);
}

static void
teardown(void)
{
    nd_log_close();
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

TestSuite(log, .init = setup, .fini = teardown, .timeout = 60);

/* Reads a whole file into a malloc'd string ("" if missing). */
static char *
slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t r = fread(buf, 1, (size_t)n, f);
    buf[r] = '\0';
    fclose(f);
    return buf;
}

static void
configure(nd_opts_t *o)
{
    char err[512] = "";
    cr_assert_eq(nd_opts_configure_log(o, err, sizeof err), 0, "%s", err);
}

static bool
matches(const char *re, const char *s)
{
    regex_t r;
    cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE), 0, "%s", re);
    bool ok = regexec(&r, s, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

Test(log, file_line_format)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    configure(&o);
    nd_log_info("hello %d", 42);
    nd_log_warn("careful");
    nd_log_error("broken");
    nd_log_debug("not shown");
    nd_log_trace("not shown");
    char *text = slurp(path);
    char re[256];
    snprintf(re, sizeof re,
             "^\\[%d\\] [0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} "
             "\\[INF\\] hello 42\n",
             (int)getpid());
    cr_assert(matches(re, text), "%s", text);
    cr_assert(matches("\\[WRN\\] careful\n", text), "%s", text);
    cr_assert(matches("\\[ERR\\] broken\n", text), "%s", text);
    cr_assert_null(strstr(text, "not shown"));
    free(text);
    nd_opts_free(&o);
}

Test(log, no_logtime)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.logtime = false;
    configure(&o);
    nd_log_info("plain");
    char *text = slurp(path);
    char want[64];
    snprintf(want, sizeof want, "[%d] [INF] plain\n", (int)getpid());
    cr_assert_str_eq(text, want);
    free(text);
    nd_opts_free(&o);
}

/* Parses the "YYYY/MM/DD hh:mm:ss" of a log line as UTC seconds. */
static time_t
line_time_utc(const char *line)
{
    struct tm tm = {0};
    const char *p = strchr(line, ']');
    cr_assert_not_null(p);
    cr_assert_not_null(strptime(p + 2, "%Y/%m/%d %H:%M:%S", &tm), "%s", line);
    return timegm(&tm);
}

/* Seconds of the clock the log uses (time() may lag gettimeofday by a tick: it is coarse). */
static time_t
now_s(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec;
}

Test(log, logtime_utc)
{
    /* A zone far from UTC (POSIX form, no tzdata needed) so local and UTC times differ. */
    setenv("TZ", "XST-9", 1);
    tzset();
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.logtime_utc = true;
    configure(&o);
    time_t before = now_s();
    nd_log_info("utc");
    time_t after = now_s();
    char *text = slurp(path);
    time_t t = line_time_utc(text);
    cr_assert(t >= before && t <= after, "%s (%ld..%ld)", text, (long)before, (long)after);
    free(text);

    /* Without logtime_utc the same moment is written in local time, 9 hours ahead. */
    unlink(path);
    o.logtime_utc = false;
    configure(&o);
    before = now_s();
    nd_log_info("local");
    after = now_s();
    text = slurp(path);
    t = line_time_utc(text) - 9 * 3600;
    cr_assert(t >= before && t <= after, "%s", text);
    free(text);
    nd_opts_free(&o);
}

Test(log, levels_at_run_time)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    configure(&o);
    cr_assert(!nd_log_enabled(ND_LOG_DEBUG) && !nd_log_enabled(ND_LOG_TRACE));
    nd_log_set_levels(true, false);
    cr_assert(nd_log_enabled(ND_LOG_DEBUG) && !nd_log_enabled(ND_LOG_TRACE));
    nd_log_debug("dbg line");
    nd_log_trace("trc hidden");
    nd_log_set_levels(true, true);
    nd_log_trace("trc line");
    nd_log_set_levels(false, false);
    nd_log_debug("dbg hidden");
    char *text = slurp(path);
    cr_assert(matches("\\[DBG\\] dbg line\n", text), "%s", text);
    cr_assert(matches("\\[TRC\\] trc line\n", text), "%s", text);
    cr_assert_null(strstr(text, "hidden"));
    free(text);
    /* trace_verbose implies trace, as in nats-server. */
    o.trace_verbose = true;
    configure(&o);
    cr_assert(nd_log_enabled(ND_LOG_TRACE));
    nd_opts_free(&o);
}

static int
is_backup(const struct dirent *e)
{
    regex_t r;
    regcomp(&r,
            "^natsd\\.log\\.[0-9]{4}\\.[0-9]{2}\\.[0-9]{2}\\.[0-9]{2}\\.[0-9]{2}\\.[0-9]{2}\\.[0-9]"
            "{9}$",
            REG_EXTENDED | REG_NOSUB);
    int ok = regexec(&r, e->d_name, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

static int
count_backups(struct dirent ***list)
{
    return scandir(dir, list, is_backup, alphasort);
}

static void
free_list(struct dirent **list, int n)
{
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

Test(log, rotation_by_size_keeps_max_num)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.log_size_limit = 300;
    o.log_max_num = 3;
    configure(&o);
    /* Each line is ~80 bytes: about one rotation per four lines, so 40 lines rotate ~10 times. */
    for (int i = 0; i < 40; i++)
        nd_log_info("line %02d padding padding padding padding", i);
    struct dirent **list;
    int n = count_backups(&list);
    /* max_num counts the live file too: two backups are left. */
    cr_assert_eq(n, 2, "backups: %d", n);
    char *text = slurp(path);
    cr_assert(matches("^\\[[0-9]+\\] [^[]*\\[INF\\] Rotated log, backup saved as "
                      "\"[^\"]*natsd\\.log\\.[0-9.]+\"\n",
                      text),
              "%s", text);
    cr_assert(strlen(text) < 300 + 200, "live file too big: %zu", strlen(text));
    /* The newest lines are in the live file or the newest backup (a write that crosses the
     * limit ends in the file it was written to). */
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, list[1]->d_name);
    char *newest = slurp(p);
    cr_assert(strstr(text, "line 39") || strstr(newest, "line 39"), "%s\n--\n%s", text, newest);
    cr_assert(matches("line [0-9]{2} padding", newest), "%s", newest);
    free(newest);
    free(text);
    free_list(list, n);
    nd_opts_free(&o);
}

Test(log, rotation_without_max_num_keeps_all)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.log_size_limit = 200;
    configure(&o);
    for (int i = 0; i < 30; i++)
        nd_log_info("line %02d padding padding padding padding", i);
    struct dirent **list;
    int n = count_backups(&list);
    cr_assert_geq(n, 5, "backups: %d", n);
    /* Every line is somewhere, exactly once. */
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, list[i]->d_name);
        char *t = slurp(p);
        for (const char *q = t; (q = strstr(q, "padding padding padding padding")) != NULL; q++)
            total++;
        free(t);
    }
    char *t = slurp(path);
    for (const char *q = t; (q = strstr(q, "padding padding padding padding")) != NULL; q++)
        total++;
    free(t);
    cr_assert_eq(total, 30);
    free_list(list, n);
    nd_opts_free(&o);
}

Test(log, existing_file_over_limit_rotates_at_start)
{
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 100; i++)
        fputs("old line old line old line\n", f);
    fclose(f);
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.log_size_limit = 1000;
    configure(&o);
    struct dirent **list;
    int n = count_backups(&list);
    cr_assert_eq(n, 1);
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, list[0]->d_name);
    char *bak = slurp(p);
    cr_assert(matches("\\[INF\\] Rotating logfile\\.\\.\\.\n$", bak), "%s", bak);
    free(bak);
    free_list(list, n);
    nd_opts_free(&o);
}

Test(log, reopen_after_rename)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    configure(&o);
    nd_log_info("before rotate");
    char moved[256];
    snprintf(moved, sizeof moved, "%s.1", path);
    cr_assert_eq(rename(path, moved), 0);
    /* Until the reopen, lines still go to the moved file (its descriptor). */
    nd_log_info("still old file");
    nd_log_reopen();
    nd_log_info("after reopen");
    char *old = slurp(moved), *cur = slurp(path);
    cr_assert_not_null(strstr(old, "before rotate"));
    cr_assert_not_null(strstr(old, "still old file"));
    cr_assert_null(strstr(old, "after reopen"));
    cr_assert(matches("\\[INF\\] File log re-opened\n", cur), "%s", cur);
    cr_assert_not_null(strstr(cur, "after reopen"));
    free(old);
    free(cur);
    nd_opts_free(&o);
}

Test(log, reopen_without_file_is_ignored)
{
    nd_log_reopen(); /* stderr: logs that it is ignored, must not crash */
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    configure(&o);
    nd_log_info("x");
    nd_opts_free(&o);
}

Test(log, open_error_keeps_previous_sink)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    configure(&o);
    nd_opts_t bad;
    nd_opts_defaults(&bad);
    bad.log_file = strdup("/nonexistent-dir/x.log");
    char err[512];
    cr_assert_eq(nd_opts_configure_log(&bad, err, sizeof err), -1);
    cr_assert_str_eq(err,
                     "error opening file: open /nonexistent-dir/x.log: no such file or directory");
    nd_log_info("still here");
    char *text = slurp(path);
    cr_assert_not_null(strstr(text, "still here"));
    free(text);
    nd_opts_free(&bad);
    nd_opts_free(&o);
}

/* Receives one datagram (hang guard only). */
static char *
recv_line(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    cr_assert_eq(poll(&p, 1, 10000), 1, "no syslog datagram");
    char buf[2048];
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    cr_assert_gt(n, 0);
    buf[n] = '\0';
    return strdup(buf);
}

Test(log, remote_syslog_udp)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    nd_opts_t o;
    nd_opts_defaults(&o);
    char url[64];
    snprintf(url, sizeof url, "udp://127.0.0.1:%d", ntohs(sa.sin_port));
    o.remote_syslog = strdup(url);
    o.debug = true;
    configure(&o);
    nd_log_info("Server is ready");
    nd_log_warn("careful");
    nd_log_debug("dbg");
    nd_log_error("bad");
    nd_log_trace("not traced");
    char host[256];
    gethostname(host, sizeof host);
    /* Go's log/syslog network form: <pri>RFC3339 host tag[pid]: msg */
    const char *want[] = {"<5>", "Server is ready", "<4>", "careful", "<7>", "dbg", "<3>", "bad"};
    for (int i = 0; i < 4; i++) {
        char *line = recv_line(fd);
        char re[512];
        snprintf(
            re, sizeof re,
            "^%s[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(Z|[+-][0-9]{2}:[0-9]{2}) "
            "%s [^ ]+\\[%d\\]: %s\n$",
            want[2 * i], host, (int)getpid(), want[2 * i + 1]);
        cr_assert(matches(re, line), "%s !~ %s", line, re);
        free(line);
    }
    nd_log_close();
    close(fd);
    nd_opts_free(&o);
}

Test(log, remote_syslog_bad_url)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.remote_syslog = strdup("foo://127.0.0.1:514");
    char err[512];
    cr_assert_eq(nd_opts_configure_log(&o, err, sizeof err), -1);
    cr_assert_str_eq(err, "error invalid network type: \"foo\"");
    nd_opts_free(&o);
}

Test(log, local_syslog_does_not_crash)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.syslog = true;
    configure(&o);
    nd_log_info("natsd unit test: local syslog");
    nd_log_close();
    nd_opts_free(&o);
}

Test(log, file_wins_over_syslog)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    o.log_file = strdup(path);
    o.remote_syslog = strdup("udp://127.0.0.1:9");
    o.syslog = true;
    configure(&o);
    nd_log_info("to the file");
    char *text = slurp(path);
    cr_assert_not_null(strstr(text, "to the file"));
    free(text);
    nd_opts_free(&o);
}
