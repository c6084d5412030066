/* Integration-test harness (see harness.h for the contract).
 *
 * Child processes: fork + execv with stdout and stderr on a pipe. A reader thread per server drains
 * that pipe into a log buffer for the whole life of the child, so the child can never block on a
 * full pipe, and it signals a condition variable on each chunk so that start-up can wait for the
 * "Listening for client connections on HOST:PORT" line without polling. Exit is awaited on a pidfd
 * (poll with the hang guard as timeout), then reaped with waitpid.
 *
 * Raw connections: bytes read from the socket go to `in`. They are cut into frames: one protocol
 * line, and for MSG/HMSG also the payload and its CRLF, sized by the last field of the line. A
 * frame that is exactly "PING\r\n" is the server's keep-alive: it is dropped, and not answered.
 * Every other frame is appended to `out`, the stream the expectations compare against. Cutting on
 * frame boundaries keeps a payload that happens to contain "PING\r\n" from being mistaken for one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ND_INTEG_DEFAULT_SERVER
#define ND_INTEG_DEFAULT_SERVER "natsd"
#endif

#define MAX_SERVERS   16
#define MAX_CONNS     128
#define LOG_CAP       (8u << 20) /* keep at most this much of a child's output */
#define SHOW_BYTES    600        /* how much of a mismatch a failure message shows */
#define LISTEN_MARKER "Listening for client connections on "

struct nd_integ_server {
    char *path; /* the binary it runs */
    pid_t pid;
    int pidfd; /* -1 where pidfd_open is unavailable */
    int port;
    bool reaped;
    int status;
    int log_fd; /* read end of the child's stdout/stderr pipe */
    pthread_t reader;
    bool joined; /* the reader thread has been joined */
    /* shared with the reader thread, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *log;
    size_t log_len, log_cap;
    bool log_eof, log_truncated;
};

struct nd_integ_conn {
    int fd;
    char *in; /* raw bytes not yet cut into frames */
    size_t in_len, in_cap;
    char *out; /* frames (server PINGs removed) not yet consumed by an expectation */
    size_t out_len, out_cap;
    bool eof;
    int err; /* errno of the read that ended the stream, 0 for an orderly close */
    char *info;
};

static char *context; /* see nd_integ_context */
/* Strings a failure message uses: fail_at leaves the test by longjmp, so they are freed by
 * nd_integ_cleanup instead, which keeps a sanitizer build's leak check quiet about them. */
static void *deferred[16];
static nd_integ_server_t *servers[MAX_SERVERS];
static nd_integ_conn_t *conns[MAX_CONNS];

/* ---- small utilities ---------------------------------------------------------------------- */

static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
remaining_ms(int64_t deadline)
{
    int64_t r = deadline - now_ms();
    return r < 0 ? 0 : (int)r;
}

static void *
xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL) {
        fprintf(stderr, "integ harness: out of memory\n");
        abort();
    }
    return q;
}

static void
buf_append(char **buf, size_t *len, size_t *cap, const void *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n + 1)
            c *= 2;
        *buf = xrealloc(*buf, c);
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static void
buf_consume(char *buf, size_t *len, size_t n)
{
    memmove(buf, buf + n, *len - n);
    *len -= n;
    buf[*len] = '\0';
}

char *
nd_integ_escape(const void *buf, size_t len, size_t max)
{
    const unsigned char *p = buf;
    size_t n = len < max ? len : max;
    char *s = xrealloc(NULL, n * 4 + 64);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = p[i];
        if (ch == '\r') {
            s[o++] = '\\';
            s[o++] = 'r';
        } else if (ch == '\n') {
            s[o++] = '\\';
            s[o++] = 'n';
        } else if (ch == '\t') {
            s[o++] = '\\';
            s[o++] = 't';
        } else if (ch == '\\') {
            s[o++] = '\\';
            s[o++] = '\\';
        } else if (ch < 0x20 || ch >= 0x7f) {
            o += (size_t)sprintf(s + o, "\\x%02x", ch);
        } else {
            s[o++] = (char)ch;
        }
    }
    if (n < len)
        o += (size_t)sprintf(s + o, "...(+%zu bytes)", len - n);
    s[o] = '\0';
    return s;
}

/* Returns p, to be freed by nd_integ_cleanup. */
static void *
defer(void *p)
{
    for (size_t i = 0; i < sizeof deferred / sizeof deferred[0]; i++)
        if (deferred[i] == NULL) {
            deferred[i] = p;
            return p;
        }
    return p; /* full: leak it, on a path that fails the test anyway */
}

/* Formats a failure message and leaves the running test (cr_assert_fail). */
static void fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void
fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    defer(msg);
    cr_assert_fail("%s:%d: %s%s%s", file, line, msg ? msg : fmt, context ? "\n  while: " : "",
                   context ? context : "");
    abort(); /* not reached: cr_assert_fail leaves the test */
}

void
nd_integ_context(const char *fmt, ...)
{
    free(context);
    context = NULL;
    if (fmt == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&context, fmt, ap) < 0)
        context = NULL;
    va_end(ap);
}

/* ---- servers ------------------------------------------------------------------------------ */

const char *
nd_integ_server_path(void)
{
    const char *p = getenv("NATSD_TEST_SERVER");
    return (p != NULL && *p != '\0') ? p : ND_INTEG_DEFAULT_SERVER;
}

static void *
log_reader(void *arg)
{
    nd_integ_server_t *s = arg;
    char chunk[4096];
    for (;;) {
        ssize_t n = read(s->log_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        pthread_mutex_lock(&s->mu);
        if (n <= 0) {
            s->log_eof = true;
            pthread_cond_broadcast(&s->cv);
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        size_t take = (size_t)n;
        if (s->log_len + take > LOG_CAP) {
            take = LOG_CAP - s->log_len;
            s->log_truncated = true;
        }
        buf_append(&s->log, &s->log_len, &s->log_cap, chunk, take);
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Returns the port from the first listening line in the log, 0 if there is none yet.
 * Ctx: caller holds s->mu. */
static int
parse_port_locked(const nd_integ_server_t *s)
{
    if (s->log == NULL)
        return 0;
    const char *m = strstr(s->log, LISTEN_MARKER);
    if (m == NULL)
        return 0;
    const char *eol = strchr(m, '\n');
    if (eol == NULL)
        return 0; /* the line is not complete yet */
    const char *colon = NULL;
    for (const char *p = m; p < eol; p++)
        if (*p == ':')
            colon = p;
    if (colon == NULL)
        return 0;
    return atoi(colon + 1);
}

static void
register_server(nd_integ_server_t *s)
{
    for (int i = 0; i < MAX_SERVERS; i++)
        if (servers[i] == NULL) {
            servers[i] = s;
            return;
        }
    fprintf(stderr, "integ harness: too many servers\n");
    abort();
}

static void
unregister_server(nd_integ_server_t *s)
{
    for (int i = 0; i < MAX_SERVERS; i++)
        if (servers[i] == s)
            servers[i] = NULL;
}

/* Waits up to timeout_ms for the child to exit and reaps it. Returns false on timeout. */
static bool
wait_exit(nd_integ_server_t *s, int timeout_ms)
{
    if (s->reaped)
        return true;
    int64_t deadline = now_ms() + timeout_ms;
    if (s->pidfd >= 0) {
        for (;;) {
            struct pollfd pfd = {.fd = s->pidfd, .events = POLLIN};
            int r = poll(&pfd, 1, remaining_ms(deadline));
            if (r > 0)
                break;
            if (r == 0)
                return false;
            if (errno != EINTR)
                break; /* fall back to the blocking waitpid below */
        }
    } else {
        /* No pidfd: poll waitpid. Only a fallback for old kernels. */
        for (;;) {
            pid_t r = waitpid(s->pid, &s->status, WNOHANG);
            if (r == s->pid) {
                s->reaped = true;
                return true;
            }
            if (remaining_ms(deadline) == 0)
                return false;
            struct timespec ts = {0, 5 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    while (waitpid(s->pid, &s->status, 0) < 0 && errno == EINTR)
        ;
    s->reaped = true;
    return true;
}

/* Reaps the child (killing it if still running), joins the reader thread, unregisters and frees
 * s. Callers look at the log first. */
static void
server_release(nd_integ_server_t *s)
{
    if (!s->reaped) {
        kill(s->pid, SIGKILL);
        wait_exit(s, ND_INTEG_PROC_TIMEOUT_MS);
    }
    if (!s->joined) {
        pthread_join(s->reader, NULL);
        s->joined = true;
    }
    close(s->log_fd);
    if (s->pidfd >= 0)
        close(s->pidfd);
    unregister_server(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->log);
    free(s->path);
    free(s);
}

static char *
describe_status(int status)
{
    char *d = NULL;
    int r;
    if (WIFEXITED(status))
        r = asprintf(&d, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        r = asprintf(&d, "killed by signal %d (%s)%s", WTERMSIG(status),
                     strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        r = asprintf(&d, "wait status 0x%x", status);
    return r < 0 ? NULL : d;
}

void
nd_integ_server_dump_log(const nd_integ_server_t *s)
{
    nd_integ_server_t *m = (nd_integ_server_t *)s;
    pthread_mutex_lock(&m->mu);
    fprintf(stderr,
            "----- %s (pid %d, port %d) output%s -----\n%s%s----- end of server output -----\n",
            s->path, (int)s->pid, s->port, s->log_truncated ? " (truncated)" : "",
            s->log ? s->log : "", (s->log_len && s->log[s->log_len - 1] != '\n') ? "\n" : "");
    pthread_mutex_unlock(&m->mu);
}

static nd_integ_server_t *start_argv(const char **argv, bool may_lose_port);

nd_integ_server_t *
nd_integ_server_start(int port, const char *const *extra_args)
{
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port > 0 ? port : -1);

    const char *argv[64];
    int argc = 0;
    argv[argc++] = nd_integ_server_path();
    argv[argc++] = "-a";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = "-p";
    argv[argc++] = portstr;
    for (int i = 0; extra_args != NULL && extra_args[i] != NULL && argc < 63; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    return start_argv(argv, false);
}

nd_integ_server_t *
nd_integ_server_start_args(const char *const *args)
{
    return nd_integ_server_start_bin(nd_integ_server_path(), args);
}

nd_integ_server_t *
nd_integ_server_start_bin(const char *path, const char *const *args)
{
    const char *argv[64];
    int argc = 0;
    argv[argc++] = path;
    for (int i = 0; args != NULL && args[i] != NULL && argc < 63; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    return start_argv(argv, false);
}

/* may_lose_port: a server that exits because a port of its config is taken ("address already
 * in use": another process bound it between our probe and the server's bind) is not a
 * failure; NULL is returned and the caller picks other ports. */
static nd_integ_server_t *
start_argv(const char **argv, bool may_lose_port)
{
    const char *path = argv[0];

    if (access(path, X_OK) != 0)
        fail_at(__FILE__, __LINE__,
                "server binary %s is not executable: %s (set NATSD_TEST_SERVER)", path,
                strerror(errno));

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        fail_at(__FILE__, __LINE__, "pipe2: %s", strerror(errno));

    nd_integ_server_t *s = xrealloc(NULL, sizeof *s);
    memset(s, 0, sizeof *s);
    s->path = xrealloc(NULL, strlen(path) + 1);
    memcpy(s->path, path, strlen(path) + 1);
    s->pidfd = -1;
    s->log_fd = pfd[0];
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        fail_at(__FILE__, __LINE__, "fork: %s", strerror(errno));
    if (pid == 0) {
        /* Child: only async-signal-safe calls from here to exec. The death signal makes sure a
         * test process that dies abruptly (Criterion timeout, crash) does not leave a server. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(pfd[1], 1);
        dup2(pfd[1], 2);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGINT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        execv(path, (char *const *)argv);
        static const char msg[] = "integ harness: execv failed\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    s->pid = pid;
    s->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    register_server(s);
    if (pthread_create(&s->reader, NULL, log_reader, s) != 0) {
        kill(pid, SIGKILL);
        fail_at(__FILE__, __LINE__, "pthread_create failed");
    }

    int64_t deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    pthread_mutex_lock(&s->mu);
    while ((s->port = parse_port_locked(s)) == 0 && !s->log_eof) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int r = remaining_ms(deadline);
        if (r == 0)
            break;
        ts.tv_sec += r / 1000;
        ts.tv_nsec += (long)(r % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    bool eof = s->log_eof;
    pthread_mutex_unlock(&s->mu);

    if (s->port <= 0) {
        /* Either it exited (eof) or it hangs without listening: show why, then fail. */
        if (!eof)
            kill(pid, SIGKILL);
        wait_exit(s, ND_INTEG_PROC_TIMEOUT_MS);
        if (eof && may_lose_port &&
            (nd_integ_server_log_has(s, 0, "address already in use") ||
             nd_integ_server_log_has(s, 0, "Address already in use"))) {
            server_release(s);
            return NULL;
        }
        nd_integ_server_dump_log(s);
        char *st = describe_status(s->status);
        char *why = NULL;
        if (asprintf(&why, "server %s did not start listening on 127.0.0.1: %s (log above)", path,
                     eof ? (st ? st : "it exited") : "timed out, killed") < 0)
            why = NULL;
        free(st);
        server_release(s);
        fail_at(__FILE__, __LINE__, "%s",
                why ? (char *)defer(why) : "server did not start listening");
    }
    return s;
}

int
nd_integ_server_port(const nd_integ_server_t *s)
{
    return s->port;
}

/* Returns the first sanitizer report marker in the log, or NULL. Ctx: caller holds s->mu. */
static const char *
sanitizer_report_locked(const nd_integ_server_t *s)
{
    static const char *const markers[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                          "WARNING: ThreadSanitizer", "runtime error:"};
    for (size_t i = 0; s->log != NULL && i < sizeof markers / sizeof markers[0]; i++)
        if (strstr(s->log, markers[i]) != NULL)
            return markers[i];
    return NULL;
}

void
nd_integ_server_signal_at(const char *file, int line, nd_integ_server_t *s, int sig)
{
    if (s->reaped || kill(s->pid, sig) != 0)
        fail_at(file, line, "kill(%d): %s", sig,
                s->reaped ? "the server has exited" : strerror(errno));
}

void
nd_integ_server_kill_at(const char *file, int line, nd_integ_server_t *s)
{
    bool had_exited = s->reaped || waitpid(s->pid, &s->status, WNOHANG) == s->pid;
    if (had_exited) {
        s->reaped = true;
        nd_integ_server_dump_log(s);
        char *st = defer(describe_status(s->status));
        server_release(s);
        fail_at(file, line, "the server had exited before SIGKILL: %s (log above)", st ? st : "?");
    }
    kill(s->pid, SIGKILL);
    server_release(s); /* reaps (it is dying already) and joins the log reader */
}

size_t
nd_integ_server_log_mark(nd_integ_server_t *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->log_len;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Returns: whether needle occurs in the log at or after byte from. Ctx: caller holds s->mu. */
static bool
log_has_locked(const nd_integ_server_t *s, size_t from, const char *needle)
{
    if (s->log == NULL || from >= s->log_len)
        return false;
    size_t nl = strlen(needle);
    for (const char *p = s->log + from; (size_t)(s->log + s->log_len - p) >= nl; p++)
        if (memcmp(p, needle, nl) == 0)
            return true;
    return false;
}

bool
nd_integ_server_log_has(nd_integ_server_t *s, size_t from, const char *needle)
{
    pthread_mutex_lock(&s->mu);
    bool has = log_has_locked(s, from, needle);
    pthread_mutex_unlock(&s->mu);
    return has;
}

void
nd_integ_server_wait_log_at(const char *file, int line, nd_integ_server_t *s, size_t from,
                            const char *needle)
{
    int64_t deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    pthread_mutex_lock(&s->mu);
    bool found;
    while (!(found = log_has_locked(s, from, needle)) && !s->log_eof) {
        int r = remaining_ms(deadline);
        if (r == 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += r / 1000;
        ts.tv_nsec += (long)(r % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    if (!found) {
        nd_integ_server_dump_log(s);
        fail_at(file, line, "the server log never showed \"%s\" (log above)", needle);
    }
}

static void finish_exit(const char *file, int line, nd_integ_server_t *s, const char *how);

void
nd_integ_server_wait_exit_at(const char *file, int line, nd_integ_server_t *s)
{
    finish_exit(file, line, s, "on its own");
}

void
nd_integ_server_stop_at(const char *file, int line, nd_integ_server_t *s)
{
    if (!s->reaped && kill(s->pid, SIGINT) != 0)
        fail_at(file, line, "kill(SIGINT): %s", strerror(errno));
    finish_exit(file, line, s, "on SIGINT");
}

/* Waits for the exit, then fails the test unless it came in time, with status 0 and without a
 * sanitizer report. Frees s. */
static void
finish_exit(const char *file, int line, nd_integ_server_t *s, const char *how)
{
    bool exited = wait_exit(s, ND_INTEG_PROC_TIMEOUT_MS);
    if (!exited) {
        kill(s->pid, SIGKILL);
        wait_exit(s, ND_INTEG_PROC_TIMEOUT_MS);
    }
    /* The child has exited, so its end of the pipe is closed and the reader reaches EOF. */
    pthread_join(s->reader, NULL);
    s->joined = true;

    pthread_mutex_lock(&s->mu);
    const char *san = sanitizer_report_locked(s);
    pthread_mutex_unlock(&s->mu);
    bool ok = exited && WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0 && san == NULL;
    char *why = NULL;
    if (!ok) {
        nd_integ_server_dump_log(s);
        char *st = describe_status(s->status);
        if (asprintf(&why, "server did not stop cleanly %s: %s%s%s (log above)", how,
                     exited ? (st ? st : "?") : "no exit within the hang guard, killed",
                     san ? "; sanitizer report: " : "", san ? san : "") < 0)
            why = NULL;
        free(st);
    }
    /* Release before failing: fail_at leaves the test. */
    server_release(s);
    if (!ok)
        fail_at(file, line, "%s", why ? (char *)defer(why) : "server did not stop cleanly");
}

/* ---- raw connections ---------------------------------------------------------------------- */

static void
register_conn(nd_integ_conn_t *c)
{
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i] == NULL) {
            conns[i] = c;
            return;
        }
    fprintf(stderr, "integ harness: too many connections\n");
    abort();
}

void
nd_integ_conn_close(nd_integ_conn_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i] == c)
            conns[i] = NULL;
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->info);
    free(c);
}

void
nd_integ_conn_reset(nd_integ_conn_t *c)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    nd_integ_conn_close(c);
}

void
nd_integ_cleanup(void)
{
    nd_integ_context(NULL);
    for (size_t i = 0; i < sizeof deferred / sizeof deferred[0]; i++) {
        free(deferred[i]);
        deferred[i] = NULL;
    }
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i] != NULL)
            nd_integ_conn_close(conns[i]);
    for (int i = 0; i < MAX_SERVERS; i++) {
        nd_integ_server_t *s = servers[i];
        if (s == NULL)
            continue;
        /* A server still registered here belongs to a test that failed (or forgot to stop it):
         * say whether it had died on its own, and show its output. */
        bool died = s->reaped || waitpid(s->pid, &s->status, WNOHANG) == s->pid;
        if (died) {
            s->reaped = true;
        } else {
            kill(s->pid, SIGKILL);
            wait_exit(s, ND_INTEG_PROC_TIMEOUT_MS);
        }
        if (!s->joined) {
            pthread_join(s->reader, NULL);
            s->joined = true;
        }
        char *st = describe_status(s->status);
        fprintf(stderr, "integ cleanup: server pid %d %s%s\n", (int)s->pid,
                died ? "had exited: " : "was still running: killed", died ? (st ? st : "?") : "");
        free(st);
        nd_integ_server_dump_log(s);
        server_release(s);
    }
}

/* Reads what is available (waiting up to timeout_ms for the first byte) into c->in.
 * Returns 1 if bytes came, 0 at end of stream, -1 on timeout. */
static int
read_some(nd_integ_conn_t *c, int timeout_ms)
{
    if (c->eof)
        return 0;
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int r;
    do
        r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return -1;
    char chunk[65536];
    ssize_t n;
    do
        n = recv(c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 1; /* spurious wake-up: nothing lost */
    if (n <= 0) {
        c->eof = true;
        c->err = n < 0 ? errno : 0;
        return 0;
    }
    buf_append(&c->in, &c->in_len, &c->in_cap, chunk, (size_t)n);
    return 1;
}

/* Returns the length of the complete frame at the start of buf, or 0 if it is not complete. */
static size_t
frame_len(const char *buf, size_t len)
{
    const char *nl = memchr(buf, '\n', len);
    if (nl == NULL)
        return 0;
    size_t line = (size_t)(nl - buf) + 1;
    bool msg =
        (line > 4 && memcmp(buf, "MSG ", 4) == 0) || (line > 5 && memcmp(buf, "HMSG ", 5) == 0);
    if (!msg)
        return line;
    /* The payload size is the last field of the line. */
    size_t end = line - 1;
    if (end > 0 && buf[end - 1] == '\r')
        end--;
    size_t start = end;
    while (start > 0 && buf[start - 1] >= '0' && buf[start - 1] <= '9')
        start--;
    if (start == end || end - start > 12)
        return line; /* malformed: let the comparison show it as a plain line */
    size_t size = 0;
    for (size_t i = start; i < end; i++)
        size = size * 10 + (size_t)(buf[i] - '0');
    size_t total = line + size + 2;
    return len >= total ? total : 0;
}

/* Moves one more frame from the socket to c->out, answering and dropping server PINGs.
 * Returns 1 when a frame was added, 0 at end of stream (a partial frame left at the end is moved
 * to out as is), -1 on timeout. */
static int
fill_frame(nd_integ_conn_t *c, int64_t deadline)
{
    for (;;) {
        size_t n = c->in_len ? frame_len(c->in, c->in_len) : 0;
        if (n > 0) {
            if (n == 6 && memcmp(c->in, "PING\r\n", 6) == 0) {
                /* The server's keep-alive. It is not answered: a PONG would be bytes the test did
                 * not send, landing anywhere in its stream (it once hid a parser stall by
                 * completing a bad trailer). Unanswered PINGs only matter after ping_max
                 * intervals of ping_interval (2 x 2 min by default), far beyond any test. */
                buf_consume(c->in, &c->in_len, n);
                continue;
            }
            buf_append(&c->out, &c->out_len, &c->out_cap, c->in, n);
            buf_consume(c->in, &c->in_len, n);
            return 1;
        }
        int r = read_some(c, remaining_ms(deadline));
        if (r < 0)
            return -1;
        if (r == 0) {
            if (c->in_len > 0) {
                buf_append(&c->out, &c->out_len, &c->out_cap, c->in, c->in_len);
                c->in_len = 0;
                return 1;
            }
            return 0;
        }
    }
}

nd_integ_conn_t *
nd_integ_conn_open_at(const char *file, int line, nd_integ_server_t *srv)
{
    return nd_integ_conn_open_port_at(file, line, srv->port);
}

nd_integ_conn_t *
nd_integ_conn_open_port_at(const char *file, int line, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fail_at(file, line, "socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        fail_at(file, line, "connect to 127.0.0.1:%d: %s", port, strerror(e));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    nd_integ_conn_t *c = xrealloc(NULL, sizeof *c);
    memset(c, 0, sizeof *c);
    c->fd = fd;
    register_conn(c);

    /* The first frame must be the INFO line. */
    int r = fill_frame(c, now_ms() + ND_INTEG_TIMEOUT_MS);
    if (r <= 0)
        fail_at(file, line, "no INFO from the server: %s",
                r < 0 ? "timed out" : "connection closed");
    size_t n = frame_len(c->out, c->out_len);
    if (n == 0)
        n = c->out_len;
    if (n < 5 || memcmp(c->out, "INFO ", 5) != 0) {
        char *got = defer(nd_integ_escape(c->out, c->out_len, SHOW_BYTES));
        fail_at(file, line, "first bytes from the server are not an INFO line: \"%s\"", got);
    }
    c->info = xrealloc(NULL, n + 1);
    memcpy(c->info, c->out, n);
    c->info[n] = '\0';
    buf_consume(c->out, &c->out_len, n);
    return c;
}

const char *
nd_integ_conn_info(const nd_integ_conn_t *c)
{
    return c->info;
}

void
nd_integ_send_at(const char *file, int line, nd_integ_conn_t *c, const void *buf, size_t len)
{
    const char *p = buf;
    int64_t deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    while (len > 0) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLOUT | (c->eof ? 0 : POLLIN)};
        int r = poll(&pfd, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            fail_at(file, line, "send: socket not writable for %d ms with %zu bytes left",
                    ND_INTEG_TIMEOUT_MS, len);
        if ((pfd.revents & POLLIN) && !c->eof)
            read_some(c, 0); /* keep the server's replies moving while we write */
        if (pfd.revents & (POLLOUT | POLLERR | POLLHUP)) {
            ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                    continue;
                fail_at(file, line, "send: %s (the server closed the connection?)",
                        strerror(errno));
            }
            p += n;
            len -= (size_t)n;
            deadline = now_ms() + ND_INTEG_TIMEOUT_MS; /* progress: restart the hang guard */
        }
    }
}

/* Appends a description of how the stream ended (or did not) to a failure message. */
static const char *
stream_state(const nd_integ_conn_t *c, bool timed_out)
{
    if (timed_out)
        return "; then nothing more within the hang guard";
    if (c->eof)
        return c->err ? "; then the connection was reset" : "; then the connection was closed";
    return "";
}

void
nd_integ_expect_at(const char *file, int line, nd_integ_conn_t *c, const void *buf, size_t len)
{
    int64_t deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    bool timed_out = false;
    while (c->out_len < len) {
        /* Stop at the first frame that already differs: no point waiting for the rest. */
        if (memcmp(c->out, buf, c->out_len) != 0)
            break;
        int r = fill_frame(c, deadline);
        if (r < 0)
            timed_out = true;
        if (r <= 0)
            break;
    }
    if (c->out_len >= len && memcmp(c->out, buf, len) == 0) {
        buf_consume(c->out, &c->out_len, len);
        return;
    }
    /* Show the neighbourhood of the first difference: the whole thing if short. */
    size_t d = 0;
    while (d < len && d < c->out_len && ((const char *)buf)[d] == c->out[d])
        d++;
    size_t from = (len > SHOW_BYTES && d > 100) ? d - 100 : 0;
    char *exp = defer(nd_integ_escape((const char *)buf + from, len - from, SHOW_BYTES));
    size_t got_len = c->out_len > from ? c->out_len - from : 0;
    char *got = defer(nd_integ_escape(c->out + from, got_len, SHOW_BYTES));
    char shown[64] = "";
    if (from > 0)
        snprintf(shown, sizeof shown, "; both shown from offset %zu", from);
    fail_at(file, line,
            "unexpected bytes from the server (first difference at offset %zu%s):\n"
            "  expected (%zu bytes): \"%s\"\n"
            "  actual   (%zu bytes): \"%s\"%s",
            d, shown, len, exp, c->out_len, got, stream_state(c, timed_out));
}

char *
nd_integ_read_frame_at(const char *file, int line, nd_integ_conn_t *c)
{
    size_t n = c->out_len ? frame_len(c->out, c->out_len) : 0;
    if (n == 0) {
        if (c->out_len == 0) {
            int r = fill_frame(c, now_ms() + ND_INTEG_TIMEOUT_MS);
            if (r < 0)
                fail_at(file, line, "no frame from the server within %d ms", ND_INTEG_TIMEOUT_MS);
            if (r == 0)
                return NULL;
        }
        n = frame_len(c->out, c->out_len);
        if (n == 0)
            n = c->out_len; /* a partial frame before the end of stream */
    }
    char *f = xrealloc(NULL, n + 1);
    memcpy(f, c->out, n);
    f[n] = '\0';
    buf_consume(c->out, &c->out_len, n);
    return f;
}

int
nd_integ_conn_wait_any(nd_integ_conn_t *const *cs, size_t n, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    struct pollfd pfd[16];
    if (n > 16)
        n = 16;
    for (;;) {
        /* Frames already cut, or complete ones still in the raw buffer, come first. */
        for (size_t i = 0; i < n; i++) {
            nd_integ_conn_t *c = cs[i];
            if (c->out_len > 0 || c->eof)
                return (int)i;
            while (c->in_len > 0 && frame_len(c->in, c->in_len) > 0) {
                if (fill_frame(c, now_ms()) == 1 && c->out_len > 0)
                    return (int)i;
            }
        }
        int left = remaining_ms(deadline);
        if (left <= 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            pfd[i] = (struct pollfd){.fd = cs[i]->fd, .events = POLLIN};
        int r;
        do
            r = poll(pfd, (nfds_t)n, left);
        while (r < 0 && errno == EINTR);
        if (r == 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (pfd[i].revents != 0)
                (void)read_some(cs[i], 0);
    }
}

void
nd_integ_expect_unordered_at(const char *file, int line, nd_integ_conn_t *c,
                             const char *const *frames, size_t n)
{
    char **got = xrealloc(NULL, (n ? n : 1) * sizeof *got);
    bool *used = xrealloc(NULL, (n ? n : 1) * sizeof *used);
    size_t ngot = 0;
    bool ok = true;
    for (; ngot < n; ngot++) {
        got[ngot] = nd_integ_read_frame_at(file, line, c);
        if (got[ngot] == NULL) {
            ok = false;
            break;
        }
    }
    for (size_t i = 0; i < n; i++)
        used[i] = false;
    for (size_t i = 0; ok && i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < ngot && !found; j++)
            if (!used[j] && strcmp(got[j], frames[i]) == 0) {
                used[j] = true;
                found = true;
            }
        ok = found;
    }
    if (ok) {
        for (size_t j = 0; j < ngot; j++)
            free(got[j]);
        free(got);
        free(used);
        return;
    }
    char *exp_all = NULL, *got_all = NULL;
    size_t el = 0, ec = 0, gl = 0, gc = 0;
    for (size_t i = 0; i < n; i++) {
        char *e = nd_integ_escape(frames[i], strlen(frames[i]), 200);
        buf_append(&exp_all, &el, &ec, "\n    \"", 6);
        buf_append(&exp_all, &el, &ec, e, strlen(e));
        buf_append(&exp_all, &el, &ec, "\"", 1);
        free(e);
    }
    for (size_t j = 0; j < ngot; j++) {
        char *e = nd_integ_escape(got[j], strlen(got[j]), 200);
        buf_append(&got_all, &gl, &gc, "\n    \"", 6);
        buf_append(&got_all, &gl, &gc, e, strlen(e));
        buf_append(&got_all, &gl, &gc, "\"", 1);
        free(e);
        free(got[j]);
    }
    free(got);
    free(used);
    defer(exp_all);
    defer(got_all);
    fail_at(file, line,
            "unexpected frames (any order accepted):\n  expected %zu:%s\n  actual %zu:%s%s", n,
            exp_all ? exp_all : "", ngot, got_all ? got_all : "",
            ngot < n ? stream_state(c, false) : "");
}

void
nd_integ_expect_close_at(const char *file, int line, nd_integ_conn_t *c)
{
    int64_t deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    while (c->out_len == 0) {
        int r = fill_frame(c, deadline);
        if (r == 0)
            return;
        if (r < 0)
            fail_at(file, line,
                    "expected the server to close the connection; it is still open "
                    "after %d ms",
                    ND_INTEG_TIMEOUT_MS);
    }
    char *got = defer(nd_integ_escape(c->out, c->out_len, SHOW_BYTES));
    fail_at(file, line, "expected the server to close the connection; got %zu bytes first: \"%s\"",
            c->out_len, got);
}

size_t
nd_integ_drain_until_close_at(const char *file, int line, nd_integ_conn_t *c)
{
    size_t n = c->in_len + c->out_len;
    c->in_len = c->out_len = 0;
    int64_t deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    for (;;) {
        int r = read_some(c, remaining_ms(deadline));
        if (r == 0)
            return n;
        if (r < 0)
            fail_at(file, line,
                    "expected the server to close the connection; it is still open after %d ms "
                    "(%zu bytes read)",
                    ND_INTEG_TIMEOUT_MS, n);
        /* A steady stream is not a hang: each chunk renews the guard. */
        n += c->in_len;
        c->in_len = 0;
        deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    }
}

/* ---- the server under test and the reference ------------------------------------------------ */

bool
nd_integ_is_reference(void)
{
    return strstr(nd_integ_server_path(), "nats-server") != NULL;
}

const char *
nd_integ_reference_path(void)
{
    const char *p = getenv("NATSD_TEST_REFERENCE");
    if (p != NULL && *p != '\0')
        return p;
    return access("/usr/sbin/nats-server", X_OK) == 0 ? "/usr/sbin/nats-server" : NULL;
}

int
nd_integ_free_port(void)
{
    /* Below the kernel's ephemeral range when there is room: a port the system hands out from
     * that range may be taken by any outgoing connection on the machine (the tests' own
     * included) before the server binds it; below it only a listener can, and one is checked
     * for. */
    int lo = 32768, hi = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2)
            lo = 32768;
        fclose(f);
    }
    static unsigned seed;
    if (seed == 0)
        seed = (unsigned)getpid() ^ (unsigned)now_ms();
    for (int tries = 0; lo > 11000 && tries < 100; tries++) {
        int port = 10000 + (int)(rand_r(&seed) % (unsigned)(lo - 10000));
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert(fd >= 0, "socket: %s", strerror(errno));
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok)
            return port;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind: %s", strerror(errno));
    socklen_t l = sizeof a;
    cr_assert(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- monitoring over HTTP ------------------------------------------------------------------ */

/* Joins the chunks of a chunked body (size line, data, CRLF, ..., a 0 size) in place.
 * Returns: false if the body is cut short. */
static bool
dechunk(char *body, size_t len, size_t *out_len)
{
    size_t in = 0, out = 0;
    for (;;) {
        char *eol = memmem(body + in, len - in, "\r\n", 2);
        if (eol == NULL)
            return false;
        size_t csz = strtoul(body + in, NULL, 16);
        in = (size_t)(eol - body) + 2;
        if (csz == 0)
            break;
        if (in + csz > len)
            return false;
        memmove(body + out, body + in, csz);
        out += csz;
        in += csz + 2;
        if (in > len)
            return false;
    }
    body[out] = '\0';
    *out_len = out;
    return true;
}

char *
nd_integ_http_get_at(const char *file, int line, int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fail_at(file, line, "socket: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        fail_at(file, line, "GET %s: connect to 127.0.0.1:%d: %s", path, port, strerror(e));
    }
    char req[1024];
    int rl = snprintf(req, sizeof req,
                      "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    if (rl < 0 || (size_t)rl >= sizeof req || send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl) {
        close(fd);
        fail_at(file, line, "GET %s: could not send the request", path);
    }
    /* Connection: close: the response ends where the stream does. */
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int64_t deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, remaining_ms(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            close(fd);
            free(buf);
            fail_at(file, line, "GET %s on port %d: no complete response within %d ms", path, port,
                    ND_INTEG_TIMEOUT_MS);
        }
        char chunk[65536];
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a reset after the whole response counts as its end too */
        buf_append(&buf, &len, &cap, chunk, (size_t)n);
    }
    close(fd);
    char *hend = buf ? strstr(buf, "\r\n\r\n") : NULL;
    int status = 0;
    if (hend == NULL || sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
        char *got = defer(nd_integ_escape(buf ? buf : "", len, SHOW_BYTES));
        free(buf);
        fail_at(file, line, "GET %s on port %d: not an HTTP response: \"%s\"", path, port, got);
    }
    *hend = '\0';
    bool chunked = strcasestr(buf, "\r\nTransfer-Encoding: chunked") != NULL;
    char *body_start = hend + 4;
    size_t blen = len - (size_t)(body_start - buf);
    char *body = xrealloc(NULL, blen + 1);
    memcpy(body, body_start, blen);
    body[blen] = '\0';
    free(buf);
    if (chunked && !dechunk(body, blen, &blen)) {
        free(body);
        fail_at(file, line, "GET %s on port %d: chunked body cut short", path, port);
    }
    if (status != 200) {
        defer(body);
        fail_at(file, line, "GET %s on port %d: status %d: %s", path, port, status, body);
    }
    return body;
}

/* GETs path and parses the body as a JSON object. Returns: owned by the caller (json_decref). */
static json_t *
http_json(const char *file, int line, int port, const char *path)
{
    char *body = nd_integ_http_get_at(file, line, port, path);
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    if (!json_is_object(o)) {
        json_decref(o);
        defer(body);
        fail_at(file, line, "GET %s on port %d: not a JSON object (%s): %s", path, port, err.text,
                body);
    }
    free(body);
    return o;
}

int
nd_integ_num_routes_at(const char *file, int line, int port)
{
    json_t *rz = http_json(file, line, port, "/routez");
    json_t *n = json_object_get(rz, "num_routes");
    if (!json_is_integer(n)) {
        char *dump = defer(json_dumps(rz, JSON_COMPACT));
        json_decref(rz);
        fail_at(file, line, "/routez on port %d has no integer num_routes: %s", port,
                dump ? dump : "?");
    }
    int v = (int)json_integer_value(n);
    json_decref(rz);
    return v;
}

/* Sleeps a poll interval: the gap between two looks at a monitoring endpoint, not a wait for
 * anything in particular. */
static void
poll_gap(void)
{
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
}

void
nd_integ_wait_routes_at(const char *file, int line, int port, int n)
{
    int64_t deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    int got;
    while ((got = nd_integ_num_routes_at(file, line, port)) != n) {
        if (remaining_ms(deadline) == 0) {
            char *body = defer(nd_integ_http_get_at(file, line, port, "/routez"));
            fail_at(file, line, "/routez on port %d: %d routes, want %d, within %d ms: %s", port,
                    got, n, ND_INTEG_PROC_TIMEOUT_MS, body);
        }
        poll_gap();
    }
}

int
nd_integ_num_leafs_at(const char *file, int line, int port)
{
    json_t *lz = http_json(file, line, port, "/leafz");
    int v = (int)json_integer_value(json_object_get(lz, "leafnodes"));
    json_decref(lz);
    return v;
}

void
nd_integ_wait_leafs_at(const char *file, int line, int port, int n)
{
    int64_t deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    int got;
    while ((got = nd_integ_num_leafs_at(file, line, port)) != n) {
        if (remaining_ms(deadline) == 0) {
            char *body = defer(nd_integ_http_get_at(file, line, port, "/leafz"));
            fail_at(file, line, "/leafz on port %d: %d leafs, want %d, within %d ms: %s", port,
                    got, n, ND_INTEG_PROC_TIMEOUT_MS, body);
        }
        poll_gap();
    }
}

int
nd_integ_route_sub_count_at(const char *file, int line, int port, const char *subject)
{
    json_t *rz = http_json(file, line, port, "/routez?subs=1");
    int count = 0;
    size_t i, j;
    json_t *r, *s;
    json_array_foreach(json_object_get(rz, "routes"), i, r)
    {
        json_array_foreach(json_object_get(r, "subscriptions_list"), j, s)
        {
            if (json_is_string(s) && strcmp(json_string_value(s), subject) == 0)
                count++;
        }
    }
    json_decref(rz);
    return count;
}

void
nd_integ_wait_route_sub_at(const char *file, int line, int port, const char *subject, int n)
{
    int64_t deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    int got;
    while ((got = nd_integ_route_sub_count_at(file, line, port, subject)) != n) {
        if (remaining_ms(deadline) == 0) {
            char *body = defer(nd_integ_http_get_at(file, line, port, "/routez?subs=1"));
            fail_at(file, line,
                    "/routez?subs=1 on port %d lists \"%s\" %d times, want %d, within %d ms: %s",
                    port, subject, got, n, ND_INTEG_PROC_TIMEOUT_MS, body);
        }
        poll_gap();
    }
}

/* ---- config files ------------------------------------------------------------------------- */

void
nd_integ_write_file(const char *path, const char *text)
{
    char tmp[PATH_MAX];
    cr_assert((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) < sizeof tmp, "path too long");
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "%s: %s", tmp, strerror(errno));
    fputs(text, f);
    cr_assert(fclose(f) == 0, "%s: %s", tmp, strerror(errno));
    cr_assert(rename(tmp, path) == 0, "%s: %s", path, strerror(errno));
}

static void
conf_mkdir(nd_integ_conf_t *c)
{
    if (c->dir[0] != '\0')
        return;
    snprintf(c->dir, sizeof c->dir, "/tmp/nd_integ_XXXXXX");
    cr_assert_not_null(mkdtemp(c->dir), "mkdtemp: %s", strerror(errno));
    snprintf(c->path, sizeof c->path, "%s/server.conf", c->dir);
}

void
nd_integ_conf_write(nd_integ_conf_t *c, const char *text)
{
    conf_mkdir(c);
    nd_integ_write_file(c->path, text);
}

void
nd_integ_conf_file(nd_integ_conf_t *c, const char *name, char *out, size_t cap)
{
    conf_mkdir(c);
    cr_assert((size_t)snprintf(out, cap, "%s/%s", c->dir, name) < cap, "path too long");
}

nd_integ_server_t *
nd_integ_conf_start(nd_integ_conf_t *c, const char *text)
{
    nd_integ_conf_write(c, text);
    const char *args[] = {"-c", c->path, NULL};
    return nd_integ_server_start(0, args);
}

nd_integ_server_t *
nd_integ_conf_try_start(nd_integ_conf_t *c, const char *text)
{
    nd_integ_conf_write(c, text);
    const char *argv[] = {nd_integ_server_path(), "-a", "127.0.0.1", "-p", "-1", "-c", c->path,
                          NULL};
    return start_argv(argv, true);
}

static int
rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

void
nd_integ_conf_remove(nd_integ_conf_t *c)
{
    /* nftw, not system("rm -rf"): a child process in a suite's .fini upsets Criterion. */
    if (c->dir[0] != '\0')
        nftw(c->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    c->dir[0] = '\0';
    c->path[0] = '\0';
}

void
nd_integ_server_reload_at(const char *file, int line, nd_integ_server_t *srv, bool want_ok)
{
    static const char ok[] = "Reloaded server configuration";
    static const char failed[] = "Failed to reload server configuration";
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_signal_at(file, line, srv, SIGHUP);
    /* Either outcome ends with one of the two lines: wait for the one wanted, then make sure the
     * other did not come instead. */
    nd_integ_server_wait_log_at(file, line, srv, mark, want_ok ? ok : failed);
    if (nd_integ_server_log_has(srv, mark, want_ok ? failed : ok)) {
        nd_integ_server_dump_log(srv);
        fail_at(file, line, "the reload logged \"%s\" (log above)", want_ok ? failed : ok);
    }
}

/* ---- waiting for callbacks ---------------------------------------------------------------- */

void
nd_integ_waiter_init(nd_integ_waiter_t *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    w->count = 0;
}

void
nd_integ_waiter_destroy(nd_integ_waiter_t *w)
{
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

void
nd_integ_waiter_bump(nd_integ_waiter_t *w)
{
    pthread_mutex_lock(&w->mu);
    w->count++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int
nd_integ_waiter_get(nd_integ_waiter_t *w)
{
    pthread_mutex_lock(&w->mu);
    int n = w->count;
    pthread_mutex_unlock(&w->mu);
    return n;
}

int
nd_integ_waiter_wait(nd_integ_waiter_t *w, int target, int timeout_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&w->mu);
    while (w->count < target && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0)
        ;
    int n = w->count;
    pthread_mutex_unlock(&w->mu);
    return n;
}

/* ---- the C client ------------------------------------------------------------------------- */

void
nd_integ_nats_url(const nd_integ_server_t *srv, char *out, size_t cap)
{
    snprintf(out, cap, "nats://127.0.0.1:%d", nd_integ_server_port(srv));
}
