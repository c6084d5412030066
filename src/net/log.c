/* Server log; see log.h. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct {
    int fd;
    bool debug, trace, logtime;
} g_log = {.fd = 2, .logtime = true};

void
nd_log_setup(bool debug, bool trace, bool logtime, const char *file)
{
    g_log.debug = debug;
    g_log.trace = trace;
    g_log.logtime = logtime;
    if (file != NULL && *file) {
        int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0)
            g_log.fd = fd;
        else
            nd_log(ND_LOG_ERROR, "cannot open log file %s: %s", file, strerror(errno));
    }
}

bool
nd_log_enabled(nd_log_level_t level)
{
    if (level == ND_LOG_TRACE)
        return g_log.trace;
    if (level == ND_LOG_DEBUG)
        return g_log.debug;
    return true;
}

void
nd_log(nd_log_level_t level, const char *fmt, ...)
{
    static const char *tags[] = {"FTL", "ERR", "WRN", "INF", "DBG", "TRC"};
    char line[2048];
    size_t n = (size_t)snprintf(line, sizeof line, "[%d] ", (int)getpid());
    if (g_log.logtime) {
        struct timeval tv;
        struct tm tm;
        gettimeofday(&tv, NULL);
        localtime_r(&tv.tv_sec, &tm);
        n += strftime(line + n, sizeof line - n, "%Y/%m/%d %H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof line - n, ".%06ld ", (long)tv.tv_usec);
    }
    n += (size_t)snprintf(line + n, sizeof line - n, "[%s] ", tags[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : (n + (size_t)m >= sizeof line - 1 ? sizeof line - 2 : n + (size_t)m);
    line[n++] = '\n';
    ssize_t w = write(g_log.fd, line, n);
    (void)w;
}
