/* -sl/--signal; see sigctl.h.
 *
 * Follows nats-server 2.10 (server/opts.go processSignal + maybeReadPidFile, server/signal.go
 * ProcessSignal + resolvePids) step for step, so scripts see the same texts and exit codes:
 *   1. "cmd=x=y" is refused (`invalid signal parameters: [x y]`, Go's %v of the rest);
 *   2. after '=', a readable file's contents replace the text (a pid file), else the text is
 *      the pid; one trailing '*' makes it a prefix glob; anything not an integer is
 *      `invalid pid: <text>`;
 *   3. with no pid, or a glob, every process of our name except ourselves is a candidate
 *      (nats-server asks pgrep; we read /proc/<pid>/comm and skip zombies), and several without
 *      a glob is an error listing them;
 *   4. the command is mapped to its signal only then (so a bad command with no server running
 *      says "no ... processes running", as nats-server does), and kill errors are collected as
 *      "\nsignal \"cmd\" <pid>: <error>" lines.
 * One leniency: whitespace around a pid read from a file is ignored (nats-server writes none;
 * other tools end the line with a newline).
 */
#include "server/sigctl.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "actors/alloc.h"

int
nd_sigctl_signal(const char *cmd)
{
    static const struct {
        const char *name;
        int sig;
    } cmds[] = {
        {"stop", SIGKILL},  {"quit", SIGINT}, {"reopen", SIGUSR1},
        {"reload", SIGHUP}, {"ldm", SIGUSR2}, {"term", SIGTERM},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0)
            return cmds[i].sig;
    return -1;
}

/* Reads /proc/<pid>/comm (or "self") into out without the newline. Returns: false if gone. */
static bool
read_comm(const char *pid, char *out, size_t cap)
{
    char path[300];
    snprintf(path, sizeof path, "/proc/%s/comm", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return false;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return true;
}

static bool
is_zombie(const char *pid)
{
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return true;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    return rp == NULL || rp[1] != ' ' || rp[2] == 'Z';
}

static int
cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Every live process named like us, except us, in pid order. Returns: the count. */
static size_t
resolve_pids(const char *name, int **out)
{
    size_t n = 0, cap = 0;
    int *pids = NULL;
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t self = getpid();
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        int pid = atoi(e->d_name);
        char comm[64];
        if (pid == self || !read_comm(e->d_name, comm, sizeof comm) || strcmp(comm, name) != 0 ||
            is_zombie(e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            pids = nd_xrealloc(pids, cap * sizeof *pids);
        }
        pids[n++] = pid;
    }
    if (d != NULL)
        closedir(d);
    if (n > 1)
        qsort(pids, n, sizeof *pids, cmp_int);
    *out = pids;
    return n;
}

/* Go's strconv.Atoi: optional sign and decimal digits, nothing else, within int64. */
static bool
go_atoi(const char *s, int *out)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '\0')
        return false;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return false;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno != 0 || v > INT32_MAX || v < INT32_MIN)
        return false;
    *out = (int)v;
    return true;
}

/* Appends to a growing error text. */
static void append(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
append(char *err, size_t errlen, const char *fmt, ...)
{
    size_t n = strnlen(err, errlen);
    if (n + 1 >= errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - n, fmt, ap);
    va_end(ap);
}

/* Go's syscall error texts are strerror's, starting lower-case. */
static void
go_errno_text(int e, char *out, size_t cap)
{
    snprintf(out, cap, "%s", strerror(e));
    out[0] = (char)tolower((unsigned char)out[0]);
}

int
nd_sigctl_send(const char *arg, char *err, size_t errlen)
{
    err[0] = '\0';
    char *cmd = nd_xstrdup(arg), *pidexpr = NULL;
    char *eq = strchr(cmd, '=');
    int rc = -1;
    if (eq != NULL) {
        *eq = '\0';
        char *rest = eq + 1;
        char *eq2 = strchr(rest, '=');
        if (eq2 != NULL) {
            /* Go's %v of the parts after the second one: "[a b]". */
            snprintf(err, errlen, "invalid signal parameters: [");
            for (char *p = eq2 + 1, *e; p != NULL; p = e ? e + 1 : NULL) {
                e = strchr(p, '=');
                append(err, errlen, "%.*s%s", e ? (int)(e - p) : (int)strlen(p), p, e ? " " : "]");
            }
            nd_free(cmd);
            return -1;
        }
        /* maybeReadPidFile: the contents of a readable file, else the text itself. */
        FILE *f = fopen(rest, "r");
        if (f != NULL) {
            char buf[64] = "";
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            char *s = buf, *e = buf + n;
            while (*s && isspace((unsigned char)*s))
                s++;
            while (e > s && isspace((unsigned char)e[-1]))
                *--e = '\0';
            pidexpr = nd_xstrdup(s);
        } else {
            pidexpr = nd_xstrdup(rest);
        }
    } else {
        pidexpr = nd_xstrdup("");
    }

    size_t plen = strlen(pidexpr);
    bool glob = plen > 0 && pidexpr[plen - 1] == '*';
    if (glob)
        pidexpr[--plen] = '\0';
    int *pids = NULL;
    size_t npids = 0;
    int one = 0;
    if (plen > 0) {
        if (!go_atoi(pidexpr, &one)) {
            snprintf(err, errlen, "invalid pid: %s", pidexpr);
            goto out;
        }
        npids = 1;
    }
    char name[64] = "natsd";
    read_comm("self", name, sizeof name);
    if (plen == 0 || glob) {
        npids = resolve_pids(name, &pids);
    } else {
        pids = nd_xmalloc(sizeof *pids);
        pids[0] = one;
    }
    if (npids > 1 && !glob) {
        snprintf(err, errlen, "multiple %s processes running:", name);
        for (size_t i = 0; i < npids; i++)
            append(err, errlen, "\n%d", pids[i]);
        goto out;
    }
    if (npids == 0) {
        snprintf(err, errlen, "no %s processes running", name);
        goto out;
    }
    int sig = nd_sigctl_signal(cmd);
    if (sig < 0) {
        snprintf(err, errlen, "unknown signal \"%s\"", cmd);
        goto out;
    }
    for (size_t i = 0; i < npids; i++) {
        char ps[16];
        snprintf(ps, sizeof ps, "%d", pids[i]);
        if (plen > 0 && strcmp(ps, pidexpr) != 0 && (!glob || strncmp(ps, pidexpr, plen) != 0))
            continue;
        if (kill(pids[i], sig) != 0) {
            char why[128];
            go_errno_text(errno, why, sizeof why);
            append(err, errlen, "\nsignal \"%s\" %d: %s", cmd, pids[i], why);
        }
    }
    rc = err[0] != '\0' ? -1 : 0;
out:
    nd_free(pids);
    nd_free(pidexpr);
    nd_free(cmd);
    return rc;
}

int
nd_sigctl_cli(const char *arg)
{
    char err[1024];
    if (nd_sigctl_send(arg, err, sizeof err) == 0)
        return 2;
    fprintf(stderr, "nats-server: %s\n", err);
    return 1;
}
