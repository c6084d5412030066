/* The raw NATS text-protocol client of the stress programs that drive servers over loopback
 * with many plain sockets (stress_server, stress_route), and what they share around it.
 *
 * A cli_t is a blocking socket with a growing read buffer; cli_parse cuts one protocol item
 * (MSG/HMSG with its payload, PING, PONG, +OK, -ERR, INFO) off the front, cli_handle counts it,
 * answers PINGs and hands messages to on_msg; cli_step/cli_sync/cli_handshake wait with the hang
 * guard only (no timing expectation). Every parsed item other than a PING bumps g_progress, the
 * counter wait_count watches; a program sets g_stall_s (stress_stall_limit_s) before it starts a
 * client. Probes: messages on probe_sid are not given to on_msg; their one-digit payload sets
 * that bit of probe_mask (stress_route proves routes with them).
 *
 * Also here: mix64 (a payload hash), NATS subject matching for expectations, decimal payload
 * fields, and join/spawn/wait_count for the client threads. Every program is one translation
 * unit, so the functions are static inline and the two globals static.
 */
#ifndef ND_STRESS_CLI_H
#define ND_STRESS_CLI_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stress_util.h"

static double g_stall_s;            /* the hang guard's limit, set by main */
static _Atomic uint64_t g_progress; /* every protocol event any client parses */

typedef unsigned long long ull;

static inline uint64_t
mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* ---- subjects ---- */

/* Splits a subject into at most 16 tokens. Returns: the token count. */
static inline int
split_tokens(const char *s, size_t n, const char **tok, size_t *len)
{
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n && k < 16; i++) {
        if (i == n || s[i] == '.') {
            tok[k] = s + start;
            len[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    return k;
}

/* NATS matching: `*` matches one token, a final `>` one or more. */
static inline bool
subj_match(const char *pat, const char *subj, size_t subj_len)
{
    const char *pt[16], *st[16];
    size_t pl[16], sl[16];
    int np = split_tokens(pat, strlen(pat), pt, pl);
    int ns = split_tokens(subj, subj_len, st, sl);
    for (int i = 0; i < np; i++) {
        if (pl[i] == 1 && pt[i][0] == '>')
            return ns > i;
        if (i >= ns)
            return false;
        if (pl[i] == 1 && pt[i][0] == '*')
            continue;
        if (pl[i] != sl[i] || memcmp(pt[i], st[i], pl[i]) != 0)
            return false;
    }
    return np == ns;
}

static inline bool
str_eq(const char *p, size_t n, const char *s)
{
    return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* Parses a decimal field of a payload; fails on anything else. */
static inline uint64_t
parse_u64(const char *p, size_t n, const char *what)
{
    uint64_t v = 0;
    if (n == 0 || n > 19)
        stress_fail("%s: bad number '%.*s'", what, (int)(n > 40 ? 40 : n), p);
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            stress_fail("%s: bad number '%.*s'", what, (int)(n > 40 ? 40 : n), p);
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    return v;
}

/* Splits a payload "a.b.c.d..." into up to n dot-separated decimal fields. Returns: the bytes
 * used by those fields (with their dots). */
static inline size_t
payload_fields(const char *p, size_t len, uint64_t *out, int n, const char *what)
{
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        const char *dot = memchr(p + off, '.', len - off);
        if (dot == NULL)
            stress_fail("%s: payload '%.*s' lacks field %d", what, (int)(len < 40 ? len : 40), p,
                        i);
        out[i] = parse_u64(p + off, (size_t)(dot - (p + off)), what);
        off = (size_t)(dot - p) + 1;
    }
    return off;
}

/* ---- the raw-protocol client ---- */

typedef enum { EV_MSG = 1, EV_PING, EV_PONG, EV_OK, EV_ERR, EV_INFO } ev_kind_t;

typedef struct ev {
    ev_kind_t kind;
    bool hmsg;
    uint64_t sid;
    const char *subj, *reply, *hdr, *data, *line;
    size_t subj_len, reply_len, hdr_len, data_len, line_len;
} ev_t;

typedef struct cli cli_t;
typedef void cli_msg_fn(cli_t *c, const ev_t *ev);

struct cli {
    int fd;
    const char *name;
    char *buf;
    size_t off, len, cap;
    uint64_t pongs, oks, errs, msgs, infos;
    uint64_t events; /* everything but the server's PINGs, which come on a timer */
    cli_msg_fn *on_msg;
    void *arg;
    bool allow_err;      /* -ERR is recorded in err instead of failing the run */
    bool closed;         /* EOF or reset seen */
    uint64_t probe_sid;  /* messages on this sid are probes (probe_until), not for on_msg */
    unsigned probe_mask; /* which probers' messages arrived on probe_sid */
    char err[160];
};

static inline bool
cli_open(cli_t *c, const char *name, int port, int rcvbuf)
{
    memset(c, 0, sizeof(*c));
    c->name = name;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        stress_fail("%s: socket: %s", name, strerror(errno));
    if (rcvbuf > 0)
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    /* A send blocked for the stall limit means the server stopped reading us: a hang guard. */
    struct timeval tv = {.tv_sec = (time_t)g_stall_s};
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int r;
    do
        r = connect(c->fd, (struct sockaddr *)&a, sizeof a);
    while (r < 0 && errno == EINTR);
    return r == 0;
}

static inline void
cli_close(cli_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->off = c->len = c->cap = 0;
}

/* Closes with an RST instead of a FIN. */
static inline void
cli_reset(cli_t *c)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    cli_close(c);
}

static inline bool
cli_send_try(cli_t *c, const void *p, size_t n)
{
    const char *s = p;
    while (n > 0) {
        ssize_t w = send(c->fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}

static inline void
cli_send(cli_t *c, const void *p, size_t n)
{
    if (!cli_send_try(c, p, n))
        stress_fail("%s: send: %s", c->name, strerror(errno));
}

/* Sends a string literal. */
#define CLI_SEND_LIT(c, lit) cli_send((c), (lit), sizeof(lit) - 1)
#define CLI_TRY_LIT(c, lit)  cli_send_try((c), (lit), sizeof(lit) - 1)

static inline void cli_sendf(cli_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void
cli_sendf(cli_t *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        stress_fail("%s: line too long", c->name);
    cli_send(c, line, (size_t)n);
}

/* Reads what the socket has, waiting up to timeout_ms for it. Returns: bytes read, 0 when none
 * came, -1 once the connection is closed or reset. */
static inline int
cli_fill(cli_t *c, int timeout_ms)
{
    if (c->closed)
        return -1;
    if (c->off == c->len) {
        c->off = c->len = 0;
    } else if (c->off > 0 && c->cap - c->len < 16384) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->cap - c->len < 16384) {
        c->cap = c->cap ? c->cap * 2 : 65536;
        c->buf = realloc(c->buf, c->cap);
        if (c->buf == NULL)
            stress_fail("out of memory");
    }
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int r;
    do
        r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return 0;
    ssize_t n;
    do
        n = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        c->len += (size_t)n;
        return (int)n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    c->closed = true;
    return -1;
}

/* Parses one protocol item at the front of the buffer. Returns: 1 (ev filled, consumed) or 0
 * when more bytes are needed. The pointers in ev are valid until the next read. */
static inline int
cli_parse(cli_t *c, ev_t *ev)
{
    char *p = c->buf + c->off;
    size_t avail = c->len - c->off;
    char *eol = avail ? memmem(p, avail, "\r\n", 2) : NULL;
    if (eol == NULL) {
        if (avail > 8192)
            stress_fail("%s: no line end in %zu bytes", c->name, avail);
        return 0;
    }
    size_t ll = (size_t)(eol - p);
    memset(ev, 0, sizeof(*ev));
    ev->line = p;
    ev->line_len = ll;
    if ((ll > 4 && memcmp(p, "MSG ", 4) == 0) || (ll > 5 && memcmp(p, "HMSG ", 5) == 0)) {
        bool h = p[0] == 'H';
        size_t skip = h ? 5 : 4;
        const char *tok[6];
        size_t tl[6];
        int nt = 0;
        for (size_t i = skip; i < ll && nt < 6;) {
            while (i < ll && p[i] == ' ')
                i++;
            if (i == ll)
                break;
            size_t s = i;
            while (i < ll && p[i] != ' ')
                i++;
            tok[nt] = p + s;
            tl[nt] = i - s;
            nt++;
        }
        int want = h ? 4 : 3;
        if (nt != want && nt != want + 1)
            stress_fail("%s: bad line '%.*s'", c->name, (int)ll, p);
        size_t total = (size_t)parse_u64(tok[nt - 1], tl[nt - 1], c->name);
        size_t hdr = h ? (size_t)parse_u64(tok[nt - 2], tl[nt - 2], c->name) : 0;
        if (hdr > total)
            stress_fail("%s: header size over total in '%.*s'", c->name, (int)ll, p);
        if (avail < ll + 2 + total + 2)
            return 0;
        char *pl = eol + 2;
        if (pl[total] != '\r' || pl[total + 1] != '\n')
            stress_fail("%s: payload of '%.*s' not followed by CRLF", c->name, (int)ll, p);
        ev->kind = EV_MSG;
        ev->hmsg = h;
        ev->subj = tok[0];
        ev->subj_len = tl[0];
        ev->sid = parse_u64(tok[1], tl[1], c->name);
        if (nt == want + 1) {
            ev->reply = tok[2];
            ev->reply_len = tl[2];
        }
        ev->hdr = pl;
        ev->hdr_len = hdr;
        ev->data = pl + hdr;
        ev->data_len = total - hdr;
        c->off += ll + 2 + total + 2;
        return 1;
    }
    if (ll == 4 && memcmp(p, "PING", 4) == 0)
        ev->kind = EV_PING;
    else if (ll == 4 && memcmp(p, "PONG", 4) == 0)
        ev->kind = EV_PONG;
    else if (ll == 3 && memcmp(p, "+OK", 3) == 0)
        ev->kind = EV_OK;
    else if (ll >= 4 && memcmp(p, "-ERR", 4) == 0)
        ev->kind = EV_ERR;
    else if (ll > 5 && memcmp(p, "INFO ", 5) == 0)
        ev->kind = EV_INFO;
    else
        stress_fail("%s: unexpected line '%.*s'", c->name, (int)(ll > 200 ? 200 : ll), p);
    c->off += ll + 2;
    return 1;
}

static inline void
cli_handle(cli_t *c, const ev_t *ev)
{
    if (ev->kind != EV_PING) {
        c->events++;
        atomic_fetch_add_explicit(&g_progress, 1, memory_order_relaxed);
    }
    switch (ev->kind) {
    case EV_PING:
        (void)cli_send_try(c, "PONG\r\n", 6); /* a closing socket may refuse it */
        break;
    case EV_PONG:
        c->pongs++;
        break;
    case EV_OK:
        c->oks++;
        break;
    case EV_INFO:
        c->infos++;
        break;
    case EV_ERR:
        c->errs++;
        snprintf(c->err, sizeof c->err, "%.*s", (int)ev->line_len, ev->line);
        if (!c->allow_err)
            stress_fail("%s: unexpected %s", c->name, c->err);
        break;
    case EV_MSG:
        c->msgs++;
        if (c->probe_sid != 0 && ev->sid == c->probe_sid) {
            /* A probe: its one-byte payload names who sent it (probe_until). */
            if (ev->data_len == 1 && ev->data[0] >= '0' && ev->data[0] <= '9')
                c->probe_mask |= 1u << (ev->data[0] - '0');
            break;
        }
        if (c->on_msg == NULL)
            stress_fail("%s: unexpected '%.*s'", c->name, (int)ev->line_len, ev->line);
        c->on_msg(c, ev);
        break;
    }
}

/* Handles what is buffered, else waits up to timeout_ms for more and handles that.
 * Returns: > 0 when anything arrived, 0 when nothing did, -1 when the connection is closed (after
 * handling every complete item it sent). */
static inline int
cli_pump(cli_t *c, int timeout_ms)
{
    ev_t ev;
    int n = 0;
    while (cli_parse(c, &ev)) {
        cli_handle(c, &ev);
        n++;
    }
    if (n > 0)
        return n;
    int r = cli_fill(c, timeout_ms);
    while (cli_parse(c, &ev)) {
        cli_handle(c, &ev);
        n++;
    }
    if (r < 0)
        return -1;
    return n > 0 || r > 0 ? 1 : 0;
}

/* One step of a wait on c: pumps, fails when the connection closed (unless may_close) or when
 * nothing but PINGs arrived for the stall limit. Returns: false when closed and may_close. */
static inline bool
cli_step(cli_t *c, double *since, const char *what, bool may_close)
{
    uint64_t before = c->events;
    size_t buffered = c->len - c->off;
    int r = cli_pump(c, 50);
    double now = stress_now_s();
    if (r < 0) {
        if (may_close)
            return false;
        stress_fail("%s: connection closed while %s", c->name, what);
    }
    if (c->events != before || c->len - c->off > buffered)
        *since = now;
    else if (now - *since > g_stall_s)
        stress_fail("%s: nothing for %.0f s while %s", c->name, g_stall_s, what);
    return true;
}

/* Waits for the INFO and sends CONNECT. Returns: false when the connection closed first. */
static inline bool
cli_handshake(cli_t *c, const char *connect_json, bool may_close)
{
    double since = stress_now_s();
    while (c->infos == 0)
        if (!cli_step(c, &since, "waiting for INFO", may_close))
            return false;
    char line[512];
    int n = snprintf(line, sizeof line, "CONNECT %s\r\n", connect_json);
    if (!cli_send_try(c, line, (size_t)n)) {
        if (may_close)
            return false;
        stress_fail("%s: send CONNECT: %s", c->name, strerror(errno));
    }
    return true;
}

/* PING, then handles everything up to the PONG. Returns: false when closed and may_close. */
static inline bool
cli_sync_try(cli_t *c, bool may_close)
{
    uint64_t want = c->pongs + 1;
    if (!cli_send_try(c, "PING\r\n", 6)) {
        if (may_close)
            return false;
        stress_fail("%s: send PING: %s", c->name, strerror(errno));
    }
    double since = stress_now_s();
    while (c->pongs < want)
        if (!cli_step(c, &since, "waiting for PONG", may_close))
            return false;
    return true;
}

static inline void
cli_sync(cli_t *c)
{
    (void)cli_sync_try(c, false);
}

/* Sends PING on every connection, then waits for every PONG. */
static inline void
cli_sync_all(cli_t **cs, int n)
{
    uint64_t want[8];
    for (int i = 0; i < n; i++) {
        want[i] = cs[i]->pongs + 1;
        cli_send(cs[i], "PING\r\n", 6);
    }
    for (int i = 0; i < n; i++) {
        double since = stress_now_s();
        while (cs[i]->pongs < want[i])
            cli_step(cs[i], &since, "waiting for PONG", false);
    }
}

/* Waits up to timeout_ms for any of the connections to be readable, then pumps each.
 * Fails when one closes. */
static inline void
cli_pump_many(cli_t **cs, int n, int timeout_ms)
{
    struct pollfd pfd[8];
    for (int i = 0; i < n; i++)
        pfd[i] = (struct pollfd){.fd = cs[i]->fd, .events = POLLIN};
    int r;
    do
        r = poll(pfd, (nfds_t)n, timeout_ms);
    while (r < 0 && errno == EINTR);
    for (int i = 0; i < n; i++)
        if (cli_pump(cs[i], 0) < 0)
            stress_fail("%s: connection closed", cs[i]->name);
}

static inline void
join(pthread_t t)
{
    int e = pthread_join(t, NULL);
    if (e != 0)
        stress_fail("pthread_join: %s", strerror(e));
}

static inline void
spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    int e = pthread_create(t, NULL, fn, arg);
    if (e != 0)
        stress_fail("pthread_create: %s", strerror(e));
}

/* Waits until *counter reaches want, failing when the whole run makes no progress. */
static inline void
wait_count(const char *what, _Atomic int *counter, int want)
{
    uint64_t last = atomic_load_explicit(&g_progress, memory_order_relaxed);
    double since = stress_now_s();
    /* acquire: pairs with the release increments, so the counted threads' results are visible. */
    while (atomic_load_explicit(counter, memory_order_acquire) < want) {
        stress_sleep_us(2000);
        uint64_t p = atomic_load_explicit(&g_progress, memory_order_relaxed);
        if (p != last) {
            last = p;
            since = stress_now_s();
        } else if (stress_now_s() - since > g_stall_s) {
            stress_fail("%s: no progress for %.0f s (%d of %d)", what, g_stall_s,
                        atomic_load_explicit(counter, memory_order_relaxed), want);
        }
    }
}

#endif
