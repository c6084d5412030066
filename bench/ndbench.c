/* ndbench: a NATS load generator that speaks the raw client protocol over TCP, in the spirit of
 * `nats bench`, built with the project so that natsd and nats-server can be measured with the
 * same client on the same machine (bench/compare.sh runs them side by side).
 *
 * Usage: ndbench MODE [options]        (ndbench --help lists the options and their defaults)
 *
 * Modes:
 *   pub        P publishers (-P) each send their share of N messages (-n) of S bytes (-z) to a
 *              subject nobody subscribes to; the clock stops when every publisher has had the
 *              PONG of a final PING, i.e. when the server has processed every message.
 *   pubsub     one publisher, one subscriber on one subject; the rate is measured at the
 *              subscriber, from its first message to its N-th.
 *   fanout     one publisher, K subscribers (-k) on one subject; deliveries (K * N) per second
 *              between the first delivery to any subscriber and the last one.
 *   queue      one publisher, a queue group of Q members (-q); messages received in total per
 *              second, and a check that every member got some.
 *   reqrep     one responder (SUB to the request subject, answers each request) and one
 *              requester doing sequential requests (SUB to its inbox, PUB with a reply subject);
 *              round-trip latency percentiles p50/p90/p99/max in microseconds.
 *   idleconns  C connections (-c) send CONNECT+PING and wait for their PONG, then stay idle; the
 *              server's RSS growth (VmRSS in /proc/<pid>/status, pid from --pid or found from the
 *              listening port) is reported per connection.
 *   subs       one connection makes N distinct subscriptions (-N), then PING/PONG; the server's
 *              RSS growth per subscription.
 *   wait       connects until a handshake (CONNECT, PING, PONG) succeeds or --timeout passes;
 *              exits 0 when the server is ready. compare.sh uses it after starting a server.
 *
 * JetStream modes (the server runs with -js; compare.sh gives each run a fresh store dir). Each
 * first creates its stream with $JS.API.STREAM.CREATE.<name> (--stream, default NDBENCH; subject
 * --subject, default ndbench.js; file storage unless --storage) and fails on anything but a
 * create response. Every PubAck is checked: an HMSG status (503: no responders) or a body with
 * an "error" member ends the run with exit 1, and at the end STREAM.INFO must count exactly the
 * messages published.
 *   jspub      one connection publishes N messages (PUB with a reply inbox) with at most
 *              --inflight (256) PubAcks outstanding; msgs/s from the first write to the last ack.
 *   jspubid    the same with a unique Nats-Msg-Id header on every message (HPUB); a PubAck
 *              marked duplicate fails the run.
 *   jssync     one publish at a time (after --warmup untimed ones): PubAck latency percentiles.
 *   jsmem      N messages into a memory stream; the server's RSS growth per stored message.
 *   jscreate   N streams (NDBC_<i>, subject ndbench.create.<i>) created one request at a time:
 *              latency percentiles of STREAM.CREATE.
 *   jsfsync    jspub with fewer messages, for a server configured with `sync_interval: always`
 *              (compare.sh writes the config).
 *   fsync      no server: N appends of a message-sized record to a file in --dir, each followed
 *              by fsync; the one-fsync-per-message rate that group commit is compared with.
 *
 * Consumer and KV modes (a fresh server; the consumer modes first preload N messages into the
 * stream, untimed; consumers are made with $JS.API.CONSUMER.DURABLE.CREATE, which nats-server
 * 2.9 knows too):
 *   jspull     a durable pull consumer (ack explicit) fetches the N messages --fetch (100) at a
 *              time ($JS.API.CONSUMER.MSG.NEXT with batch and expires, one request outstanding,
 *              the next one sent when the previous is filled) and acks each one (+ACK published
 *              to its reply, no reply asked); msgs/s from the first fetch until CONSUMER.INFO
 *              shows the ack floor at N and nothing pending.
 *   jspush     a durable push consumer (ack none) delivers the N messages to a core subscriber
 *              on its own connection; msgs/s from the create request to the N-th delivery.
 *   jspushack  the same with ack explicit, each delivery acked; until the ack floor reaches N.
 *   kvput      a KV bucket's stream (KV_b on $KV.b.>, max_msgs_per_subject 1, allow_direct)
 *              and sequential puts (publish to $KV.b.k<i mod --keys> with a reply, wait for the
 *              PubAck): latency percentiles.
 *   kvget      --keys puts, then sequential direct gets ($JS.API.DIRECT.GET.KV_b.$KV.b.k<i>),
 *              each checked for its value: latency percentiles.
 *   jspending  a memory stream of N messages, an explicit-ack consumer (ack_wait 1 h,
 *              max_ack_pending above N) pulled N messages without acks (--fetch 1000 at a time):
 *              the server's RSS growth per pending message.
 *   jsidle     --consumers (10000) durable pull consumers on one empty stream, created with up
 *              to --inflight requests outstanding: the server's RSS growth per consumer.
 *
 * WebSocket (--ws): every connection is a WebSocket client of the server's websocket port
 * (--port): an RFC 6455 upgrade on connect, then the same protocol in binary frames, each write
 * one frame masked with a fresh key (as a browser or nats.ws does; the copy and XOR are the
 * client's cost, not the server's), each read decoded in place. No compression is offered.
 * Works in the core modes (pub, pubsub, fanout, queue, reqrep, idleconns, subs).
 *
 * Output: every mode prints one machine-readable line, `RESULT mode=<mode> key=value ...`, and
 * one line for humans. On failure (a refused connection, an -ERR, a message that never arrived)
 * it prints `ndbench: <mode>: <why>` to stderr and exits 1. The throughput and reqrep modes add
 * `srv_cpu_s` and `srv_cpu_ns_per_op` when the server's pid is known (--pid, or found from the
 * port): its user+system CPU time from /proc/<pid>/stat over the run, per message, delivery or
 * request. On a machine shared with other work the rates swing with the CPU the server happens to
 * get, while the CPU time per operation stays close to the server's own cost.
 *
 * Protocol handling: the client sends CONNECT with verbose and pedantic off, so the server
 * answers nothing but PONGs, MSGs and -ERRs. Publishers pre-build a buffer of identical
 * `PUB <subject> <n>\r\n<payload>\r\n` records and write it in large chunks (one write(2) per
 * ~256 KiB). Subscribers read up to 1 MiB per read(2) and walk the buffer: a MSG line is found
 * with memchr and only its last token, the payload size, is parsed (backwards from the CR), so
 * the cost per message is a few dozen instructions.
 *
 * Flow control, so that results are stable and no subscriber is closed as a slow consumer
 * (nats-server does that at 64 MiB pending): a publisher ends every window of --window bytes
 * with a PING and never has more than two windows without their PONG, which bounds what it
 * queues in the server. In the modes with subscribers it also waits, before each window, until
 * no subscriber (for a queue group: the group in total) trails it by more than --lag bytes of MSG
 * records. Counters shared between threads are only read for this pacing, so they are relaxed.
 *
 * Memory modes read VmRSS before and after (after a --settle pause); the growth divided by the
 * number of connections or subscriptions includes everything the server allocated for them
 * (buffers, tables, allocator slack), which is what an operator pays. Run them against a fresh
 * server: memory freed by earlier work (closing connections) would be netted against the growth.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define KIB        1024u
#define MIB        (1024u * 1024u)
#define RD_INITIAL (1u * MIB)   /* read buffer of a subscriber; grows for larger messages */
#define RD_SMALL   (16u * KIB)  /* read buffer of a publisher or a control connection */
#define PUB_CHUNK  (256u * KIB) /* bytes of PUB records per write(2) */
#define SUBS_CHUNK (256u * KIB) /* bytes of SUB lines per write(2) in the subs mode */
#define MAX_LINE   (64u * KIB)  /* a control line longer than this is a protocol error */
#define CONNECT_LINE                                                                               \
    "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"ndbench\",\"lang\":\"c\","           \
    "\"version\":\"0.1.0\",\"protocol\":1,\"echo\":true}\r\n"
/* The JetStream modes publish with headers (HPUB) and want a 503 status, not silence, when
 * nothing answers an API request or a publish (JetStream disabled, no stream for the subject). */
#define CONNECT_LINE_JS                                                                            \
    "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"ndbench\",\"lang\":\"c\","           \
    "\"version\":\"0.1.0\",\"protocol\":1,\"echo\":true,\"headers\":true,"                         \
    "\"no_responders\":true}\r\n"

/* ---------------------------------------------------------------------------------------------- */
/* Options */

typedef struct opts {
    const char *mode;
    const char *host;
    int port;
    uint64_t msgs; /* 0 = the mode's default */
    size_t size;
    int pubs;
    int subs;
    int members;
    uint64_t conns;
    uint64_t nsubs;
    pid_t pid;
    size_t window;
    size_t lag;
    double timeout;
    uint64_t warmup;
    int settle_ms;
    int batch;
    const char *sub_ports; /* subscribers connect to these ports in turn (a cluster) */
    const char *subject;
    const char *stream;
    const char *storage;
    const char *dir;
    int inflight;
    uint64_t fetch; /* 0 = the mode's default */
    uint64_t keys;
    uint64_t consumers;
    bool ws; /* --ws: WebSocket clients of the websocket port */
} opts_t;

static opts_t g_opt;
static const char *g_mode = "ndbench";
/* Set by main before it shuts the sockets of queue members down on purpose; relaxed because
 * pthread_join orders everything that matters and a late read only makes an EOF look expected. */
static atomic_bool g_stopping;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Failures end the whole program: a benchmark with a broken connection has no result to report,
 * and exiting at once stops the other threads without any teardown protocol. */
static void
fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ndbench: %s: ", g_mode);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stdout);
    _exit(1);
}

static void *
xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        fail("out of memory (%zu bytes)", n);
    return p;
}

static void *
xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (p == NULL)
        fail("out of memory (%zu x %zu bytes)", n, sz);
    return p;
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Sockets */

/* --ws: one socket's frame decoder (the server's frames are not masked). Indexed by fd; each
 * fd is used by one thread. */
typedef struct ws_rd {
    uint8_t hdr[10];
    uint8_t hlen;
    bool in_frame, control, eof;
    uint64_t rem;
} ws_rd_t;
#define WS_MAX_FD (1 << 20)
static ws_rd_t **g_ws_rd;

static void raw_write_all(int fd, const void *buf, size_t len);

/* A masked client frame of the bytes buf[0..len) (opcode binary), written whole. */
static void
ws_write_frame(int fd, const void *buf, size_t len)
{
    static __thread uint8_t *out;
    static __thread size_t cap;
    static __thread uint64_t rnd;
    if (rnd == 0)
        rnd = (uint64_t)now_ns() ^ ((uint64_t)fd << 32) ^ 0x9E3779B97F4A7C15ull;
    if (cap < len + 14) {
        free(out);
        cap = len + 14 > 64 * KIB ? len + 14 : 64 * KIB;
        out = xmalloc(cap);
    }
    size_t h = 0;
    out[h++] = 0x82;
    if (len <= 125) {
        out[h++] = (uint8_t)(0x80 | len);
    } else if (len < 65536) {
        out[h++] = 0x80 | 126;
        out[h++] = (uint8_t)(len >> 8);
        out[h++] = (uint8_t)len;
    } else {
        out[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--)
            out[h++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
    uint32_t key = (uint32_t)rnd;
    memcpy(out + h, &key, 4);
    h += 4;
    const uint8_t *p = buf;
    uint64_t k8 = ((uint64_t)key << 32) | key;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        v ^= k8;
        memcpy(out + h + i, &v, 8);
    }
    const uint8_t *kb = (const uint8_t *)&key;
    for (; i < len; i++)
        out[h + i] = p[i] ^ kb[i & 3];
    raw_write_all(fd, out, h + len);
}

/* Decodes the server's frames in buf[0..n) in place. Returns: the data bytes now at buf[0..);
 * a close frame marks the end of the stream. */
static size_t
ws_decode(ws_rd_t *w, char *buf, size_t n)
{
    size_t i = 0, o = 0;
    while (i < n && !w->eof) {
        if (!w->in_frame) {
            w->hdr[w->hlen++] = (uint8_t)buf[i++];
            if (w->hlen < 2)
                continue;
            uint8_t l7 = w->hdr[1] & 0x7F;
            size_t need = l7 == 126 ? 4 : l7 == 127 ? 10 : 2;
            if (w->hlen < need)
                continue;
            uint64_t len = l7;
            if (l7 == 126)
                len = ((uint64_t)w->hdr[2] << 8) | w->hdr[3];
            else if (l7 == 127)
                for (int k = 0; k < 8; k++)
                    len = (len << 8) | w->hdr[2 + k];
            if (w->hdr[0] & 0x40)
                fail("websocket: a compressed frame, but no compression was offered");
            uint8_t op = w->hdr[0] & 0x0F;
            if (op == 8) {
                w->eof = true;
                break;
            }
            w->control = op >= 8; /* ping/pong: skipped */
            w->rem = len;
            w->hlen = 0;
            w->in_frame = len > 0;
            continue;
        }
        size_t k = n - i;
        if (k > w->rem)
            k = (size_t)w->rem;
        if (!w->control) {
            memmove(buf + o, buf + i, k);
            o += k;
        }
        i += k;
        w->rem -= k;
        if (w->rem == 0)
            w->in_frame = false;
    }
    return o;
}

/* The client side of the upgrade on a connected blocking socket. Reads the 101 byte by byte so
 * that the INFO frame behind it stays in the socket. Returns: false with errno set. */
static bool
ws_handshake(int fd)
{
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n",
                     g_opt.host, g_opt.port);
    raw_write_all(fd, req, (size_t)n);
    char head[2048];
    size_t hl = 0;
    while (hl < 4 || memcmp(head + hl - 4, "\r\n\r\n", 4) != 0) {
        if (hl + 1 >= sizeof head)
            fail("websocket: upgrade answer too long");
        ssize_t k = read(fd, head + hl, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = ECONNRESET;
            return false;
        }
        hl++;
    }
    head[hl] = '\0';
    if (strncmp(head, "HTTP/1.1 101 ", 13) != 0)
        fail("websocket: upgrade refused: %.*s", (int)strcspn(head, "\r"), head);
    if (fd >= WS_MAX_FD)
        fail("websocket: descriptor %d above %d", fd, WS_MAX_FD);
    if (g_ws_rd[fd] == NULL)
        g_ws_rd[fd] = xcalloc(1, sizeof(ws_rd_t));
    memset(g_ws_rd[fd], 0, sizeof(ws_rd_t));
    return true;
}

static void
write_all(int fd, const void *buf, size_t len)
{
    if (g_opt.ws) {
        ws_write_frame(fd, buf, len);
        return;
    }
    raw_write_all(fd, buf, len);
}

static void
raw_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                fail("write: timed out after %.0f s without progress", g_opt.timeout);
            fail("write: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
}

static void
set_timeouts(int fd, double secs)
{
    struct timeval tv = {(time_t)secs, (suseconds_t)((secs - (double)(time_t)secs) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* Resolves --server/--port once; every connection reuses the address. */
static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;

static void
resolve(void)
{
    struct addrinfo hints = {0}, *res = NULL;
    char port[16];
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", g_opt.port);
    int rc = getaddrinfo(g_opt.host, port, &hints, &res);
    if (rc != 0)
        fail("cannot resolve %s: %s", g_opt.host, gai_strerror(rc));
    memcpy(&g_addr, res->ai_addr, res->ai_addrlen);
    g_addrlen = res->ai_addrlen;
    freeaddrinfo(res);
}

/* --sub-ports: the subscribers' addresses, and which one the next subscriber takes. */
static struct sockaddr_storage g_sub_addr[16];
static socklen_t g_sub_addrlen[16];
static int g_nsub_addr, g_sub_next;
static const struct sockaddr_storage *g_connect_to; /* set: sock_connect uses it */
static socklen_t g_connect_len;

static void
resolve_sub_ports(void)
{
    for (const char *p = g_opt.sub_ports; p != NULL && *p != '\0' && g_nsub_addr < 16;) {
        struct addrinfo hints = {0}, *res = NULL;
        char port[16];
        size_t n = strcspn(p, ",");
        snprintf(port, sizeof port, "%.*s", (int)n, p);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(g_opt.host, port, &hints, &res) != 0)
            fail("cannot resolve %s:%s", g_opt.host, port);
        memcpy(&g_sub_addr[g_nsub_addr], res->ai_addr, res->ai_addrlen);
        g_sub_addrlen[g_nsub_addr++] = res->ai_addrlen;
        freeaddrinfo(res);
        p += n + (p[n] == ',');
    }
}

/* Returns a connected blocking socket with TCP_NODELAY (requests and PINGs must not wait for
 * Nagle) and the --timeout on reads and writes, or -1 with errno set. */
static int
sock_connect(void)
{
    int fd = socket(g_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)(g_connect_to ? g_connect_to : &g_addr),
                g_connect_to ? g_connect_len : g_addrlen) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    set_timeouts(fd, g_opt.timeout);
    if (g_opt.ws && !ws_handshake(fd)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* ---------------------------------------------------------------------------------------------- */
/* Protocol reader: a growable buffer and a parser of the server's operations. */

enum { EV_NONE, EV_MSG, EV_PING, EV_PONG, EV_OK, EV_ERR, EV_INFO };

typedef struct rd {
    int fd;
    char *buf;
    size_t cap, beg, end;
    size_t need; /* bytes the operation at beg needs in total, when known */
} rd_t;

typedef struct ev {
    const char *line; /* the control line, without CR LF */
    size_t line_len;
    const char *subj, *reply; /* MSG fields, parsed only when asked for */
    size_t subj_len, reply_len;
    const char *data; /* the payload; for an HMSG the headers followed by the payload */
    size_t len;
    bool hmsg; /* an HMSG: data starts with hdr_len bytes of headers */
    size_t hdr_len;
} ev_t;

static void
rd_init(rd_t *r, int fd, size_t cap)
{
    r->fd = fd;
    r->buf = xmalloc(cap);
    r->cap = cap;
    r->beg = r->end = r->need = 0;
}

static void
rd_free(rd_t *r)
{
    free(r->buf);
    r->buf = NULL;
}

/* Reads more bytes, first moving the unparsed tail to the front and growing the buffer when the
 * pending operation is larger than it. Returns false on EOF; fails on an error or timeout. */
static bool
rd_fill(rd_t *r)
{
    if (r->beg > 0) {
        memmove(r->buf, r->buf + r->beg, r->end - r->beg);
        r->end -= r->beg;
        r->beg = 0;
    }
    if (r->need > r->cap || r->end == r->cap) {
        size_t cap = r->cap * 2;
        while (cap < r->need)
            cap *= 2;
        char *nb = realloc(r->buf, cap);
        if (nb == NULL)
            fail("out of memory (%zu bytes)", cap);
        r->buf = nb;
        r->cap = cap;
    }
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (n > 0 && g_opt.ws) {
            ws_rd_t *w = g_ws_rd[r->fd];
            n = (ssize_t)ws_decode(w, r->buf + r->end, (size_t)n);
            if (n == 0 && w->eof)
                return false;
            if (n == 0)
                continue; /* only frame headers or control frames */
        }
        if (n > 0) {
            r->end += (size_t)n;
            return true;
        }
        if (n == 0)
            return false;
        if (errno == EINTR)
            continue;
        /* A socket shut down on purpose: a WebSocket server's close frame then meets a reset. */
        if (errno == ECONNRESET && atomic_load_explicit(&g_stopping, memory_order_relaxed))
            return false;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            fail("no data from the server for %.0f s (--timeout)", g_opt.timeout);
        fail("read: %s", strerror(errno));
    }
}

/* Splits a MSG control line `MSG <subject> <sid> [reply] <size>` (or `HMSG <subject> <sid>
 * [reply] <hdr size> <total size>`) into its fields. */
static void
parse_msg_fields(ev_t *ev)
{
    const char *tok[6];
    size_t len[6];
    int n = 0;
    const char *p = ev->line, *e = ev->line + ev->line_len;
    while (p < e && n < 6) {
        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        if (p == e)
            break;
        tok[n] = p;
        while (p < e && *p != ' ' && *p != '\t')
            p++;
        len[n] = (size_t)(p - tok[n]);
        n++;
    }
    int extra = ev->hmsg ? 1 : 0; /* HMSG has the header size before the total */
    if (n != 4 + extra && n != 5 + extra)
        fail("malformed MSG line: %.*s", (int)ev->line_len, ev->line);
    ev->subj = tok[1];
    ev->subj_len = len[1];
    ev->reply = n == 5 + extra ? tok[3] : NULL;
    ev->reply_len = n == 5 + extra ? len[3] : 0;
}

/* Parses the operation at the head of the buffer without reading. Returns EV_NONE when it is not
 * complete yet (r->need then says how many bytes it takes, when known). */
static inline int
rd_parse(rd_t *r, ev_t *ev, bool fields)
{
    size_t avail = r->end - r->beg;
    char *p = r->buf + r->beg;
    if (avail == 0)
        return EV_NONE;
    char *nl = memchr(p, '\n', avail);
    if (nl == NULL) {
        if (avail > MAX_LINE)
            fail("control line longer than %u bytes", MAX_LINE);
        r->need = 0;
        return EV_NONE;
    }
    size_t ll = (size_t)(nl - p) + 1;
    const char *le = (nl > p && nl[-1] == '\r') ? nl - 1 : nl;
    ev->line = p;
    ev->line_len = (size_t)(le - p);
    switch (p[0]) {
    case 'H':
    case 'h':
    case 'M':
    case 'm': {
        /* The size is the last token: parse it backwards from the end of the line. For an HMSG
         * it is the total of headers and payload, and the header size is the token before it. */
        const char *d = le;
        size_t size = 0, mul = 1;
        while (d > p && d[-1] >= '0' && d[-1] <= '9') {
            d--;
            size += (size_t)(*d - '0') * mul;
            mul *= 10;
        }
        if (d == le || d == p)
            fail("malformed MSG line: %.*s", (int)ev->line_len, p);
        size_t total = ll + size + 2;
        if (avail < total) {
            r->need = total;
            return EV_NONE;
        }
        ev->data = nl + 1;
        ev->len = size;
        ev->hmsg = p[0] == 'H' || p[0] == 'h';
        ev->hdr_len = 0;
        if (ev->hmsg) {
            const char *h = d;
            size_t hl = 0, hm = 1;
            while (h > p && h[-1] == ' ')
                h--;
            while (h > p && h[-1] >= '0' && h[-1] <= '9') {
                h--;
                hl += (size_t)(*h - '0') * hm;
                hm *= 10;
            }
            if (hl > size)
                fail("malformed HMSG line: %.*s", (int)ev->line_len, p);
            ev->hdr_len = hl;
        }
        if (fields)
            parse_msg_fields(ev);
        r->beg += total;
        r->need = 0;
        return EV_MSG;
    }
    case 'P':
    case 'p':
        r->beg += ll;
        return (p[1] == 'I' || p[1] == 'i') ? EV_PING : EV_PONG;
    case '+':
        r->beg += ll;
        return EV_OK;
    case '-':
        r->beg += ll;
        return EV_ERR;
    case 'I':
    case 'i':
        r->beg += ll;
        return EV_INFO;
    default:
        fail("unexpected data from the server: %.*s", (int)ev->line_len, p);
    }
}

/* The server's max_payload from its INFO (0 until an INFO has been seen): a publisher checks its
 * message size against it up front, because the server answers a larger PUB by closing the
 * connection, which a writer only sees as a reset. Relaxed: every connection sees the same value.
 */
static _Atomic int64_t g_max_payload;

static void
note_info(const ev_t *ev)
{
    static const char key[] = "\"max_payload\":";
    const char *p = memmem(ev->line, ev->line_len, key, sizeof key - 1);
    if (p != NULL)
        atomic_store_explicit(&g_max_payload, strtoll(p + sizeof key - 1, NULL, 10),
                              memory_order_relaxed);
}

static void
check_payload(void)
{
    int64_t max = atomic_load_explicit(&g_max_payload, memory_order_relaxed);
    if (max > 0 && g_opt.size > (uint64_t)max)
        fail("payload of %zu bytes is over the server's max_payload of %" PRId64, g_opt.size, max);
}

/* Returns the next operation, reading as needed. PINGs are answered and INFOs skipped here;
 * an -ERR or EOF fails the run. */
static int
rd_next(rd_t *r, ev_t *ev, bool fields)
{
    for (;;) {
        int k = rd_parse(r, ev, fields);
        switch (k) {
        case EV_NONE:
            if (!rd_fill(r))
                fail("the server closed the connection");
            break;
        case EV_PING:
            write_all(r->fd, "PONG\r\n", 6);
            break;
        case EV_INFO:
            note_info(ev);
            break;
        case EV_OK:
            break;
        case EV_ERR:
            fail("server error: %.*s", (int)ev->line_len, ev->line);
        default:
            return k;
        }
    }
}

/* Waits for the PONG that answers an earlier PING; MSGs before it are counted into *msgs. */
static void
rd_wait_pong(rd_t *r, uint64_t *msgs)
{
    ev_t ev;
    for (;;) {
        int k = rd_next(r, &ev, false);
        if (k == EV_PONG)
            return;
        if (k == EV_MSG && msgs != NULL)
            (*msgs)++;
    }
}

/* Connects, sends CONNECT and any extra protocol (SUBs), then PING, and waits for the PONG: after
 * it the server has processed everything sent before. Returns the socket; *r is its reader. */
static int
conn_open_with(rd_t *r, size_t rdcap, const char *connect, const char *extra)
{
    int fd = sock_connect();
    if (fd < 0)
        fail("connect to %s:%d: %s", g_opt.host, g_opt.port, strerror(errno));
    rd_init(r, fd, rdcap);
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%s%sPING\r\n", connect, extra ? extra : "");
    if (n < 0 || (size_t)n >= sizeof buf)
        fail("handshake line too long");
    write_all(fd, buf, (size_t)n);
    rd_wait_pong(r, NULL);
    return fd;
}

static int
conn_open(rd_t *r, size_t rdcap, const char *extra)
{
    return conn_open_with(r, rdcap, CONNECT_LINE, extra);
}

/* ---------------------------------------------------------------------------------------------- */
/* Subscribers */

typedef struct sub {
    pthread_t th;
    int fd;
    rd_t rd;
    uint64_t target; /* stop after this many messages (UINT64_MAX: until the socket is shut) */
    _Atomic uint64_t count; /* relaxed: read by the publisher for pacing and by main for progress */
    double t_first, t_last; /* read by main after pthread_join */
} sub_t;

static void *
sub_main(void *arg)
{
    sub_t *s = arg;
    rd_t *r = &s->rd;
    uint64_t count = 0;
    ev_t ev;
    while (count < s->target) {
        if (!rd_fill(r)) {
            if (!atomic_load_explicit(&g_stopping, memory_order_relaxed))
                fail("the server closed a subscriber after %" PRIu64 " messages (slow consumer?)",
                     count);
            break;
        }
        uint64_t before = count;
        for (;;) {
            int k = rd_parse(r, &ev, false);
            if (k == EV_MSG) {
                count++;
                continue;
            }
            if (k == EV_NONE)
                break;
            if (k == EV_PING)
                write_all(s->fd, "PONG\r\n", 6);
            else if (k == EV_ERR)
                fail("server error on subscriber: %.*s", (int)ev.line_len, ev.line);
        }
        if (count != before) {
            double t = now_s();
            if (before == 0)
                s->t_first = t;
            s->t_last = t;
            atomic_store_explicit(&s->count, count, memory_order_relaxed);
        }
    }
    return NULL;
}

/* Opens a subscriber on `subject` (in queue group `queue` when not NULL) and waits until the
 * server has confirmed the SUB with a PONG, so the publisher can start without losing messages. */
static void
sub_open(sub_t *s, const char *subject, const char *queue, uint64_t target)
{
    char extra[512];
    snprintf(extra, sizeof extra, "SUB %s%s%s 1\r\n", subject, queue ? " " : "",
             queue ? queue : "");
    if (g_nsub_addr > 0) {
        int i = g_sub_next++ % g_nsub_addr;
        g_connect_to = &g_sub_addr[i];
        g_connect_len = g_sub_addrlen[i];
    }
    s->fd = conn_open(&s->rd, RD_INITIAL, extra);
    g_connect_to = NULL;
    s->target = target;
    atomic_init(&s->count, 0);
    s->t_first = s->t_last = 0;
    if (pthread_create(&s->th, NULL, sub_main, s) != 0)
        fail("pthread_create failed");
}

/* ---------------------------------------------------------------------------------------------- */
/* Publishers */

typedef struct pubr {
    pthread_t th;
    int fd;
    rd_t rd;
    uint64_t n;
    const char *subject;
    pthread_barrier_t *start;
    /* pacing against subscribers; nsubs == 0 in the pub mode */
    sub_t *subs;
    int nsubs;
    bool sum;         /* queue group: the members' total must keep up, not each member */
    uint64_t max_lag; /* in messages */
    double t_start, t_end;
} pubr_t;

/* Messages the slowest subscriber (or the queue group in total) has received so far. */
static uint64_t
pub_received(const pubr_t *p)
{
    uint64_t acc = p->sum ? 0 : UINT64_MAX;
    for (int i = 0; i < p->nsubs; i++) {
        uint64_t c = atomic_load_explicit(&p->subs[i].count, memory_order_relaxed);
        if (p->sum)
            acc += c;
        else if (c < acc)
            acc = c;
    }
    return acc;
}

static void *
pub_main(void *arg)
{
    pubr_t *p = arg;
    size_t size = g_opt.size;
    check_payload();
    char hdr[300];
    int hl = snprintf(hdr, sizeof hdr, "PUB %s %zu\r\n", p->subject, size);
    size_t reclen = (size_t)hl + size + 2;
    size_t per_chunk = PUB_CHUNK / reclen ? PUB_CHUNK / reclen : 1;
    size_t per_window = g_opt.window / reclen ? g_opt.window / reclen : 1;
    if (per_chunk > per_window)
        per_chunk = per_window;
    char *chunk = xmalloc(per_chunk * reclen);
    for (size_t i = 0; i < per_chunk; i++) {
        char *rec = chunk + i * reclen;
        memcpy(rec, hdr, (size_t)hl);
        for (size_t j = 0; j < size; j++)
            rec[hl + j] = (char)('a' + j % 26);
        memcpy(rec + hl + size, "\r\n", 2);
    }

    if (p->start != NULL)
        pthread_barrier_wait(p->start);
    p->t_start = now_s();
    uint64_t sent = 0, pings = 0, pongs = 0;
    while (sent < p->n) {
        if (p->nsubs > 0 && p->max_lag > 0) {
            /* Sleep rather than spin: on a small machine the subscribers need the CPU. */
            uint64_t seen = pub_received(p), got;
            double since = now_s();
            while (sent - (got = pub_received(p)) > p->max_lag) {
                if (got != seen) {
                    seen = got;
                    since = now_s();
                } else if (now_s() - since > g_opt.timeout) {
                    fail("subscribers stuck at %" PRIu64 " of %" PRIu64 " messages sent", got,
                         sent);
                }
                sleep_us(50);
            }
        }
        uint64_t win = p->n - sent < per_window ? p->n - sent : per_window;
        for (uint64_t left = win; left > 0;) {
            uint64_t k = left < per_chunk ? left : per_chunk;
            write_all(p->fd, chunk, (size_t)k * reclen);
            left -= k;
        }
        sent += win;
        if (sent < p->n) {
            write_all(p->fd, "PING\r\n", 6);
            pings++;
            /* At most two windows without their PONG: the server never holds more than that. */
            while (pings - pongs > 1) {
                rd_wait_pong(&p->rd, NULL);
                pongs++;
            }
        }
    }
    /* The final round trip: the PONG comes after the server has processed every PUB. */
    write_all(p->fd, "PING\r\n", 6);
    pings++;
    while (pongs < pings) {
        rd_wait_pong(&p->rd, NULL);
        pongs++;
    }
    p->t_end = now_s();
    free(chunk);
    return NULL;
}

static void
pub_open(pubr_t *p, const char *subject, uint64_t n, pthread_barrier_t *start)
{
    memset(p, 0, sizeof *p);
    p->fd = conn_open(&p->rd, RD_SMALL, NULL);
    p->subject = subject;
    p->n = n;
    p->start = start;
    p->nsubs = 0;
}

static void
pub_start(pubr_t *p)
{
    if (pthread_create(&p->th, NULL, pub_main, p) != 0)
        fail("pthread_create failed");
}

/* Messages a subscriber may trail by: --lag bytes of MSG records. */
static uint64_t
lag_msgs(const char *subject)
{
    size_t msglen = strlen("MSG  1 \r\n\r\n") + strlen(subject) + 20 + g_opt.size;
    uint64_t m = g_opt.lag / msglen;
    return m > 0 ? m : 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* The server process: memory and CPU time */

/* VmRSS of a process in KiB, from /proc/<pid>/status. */
static long
rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail("cannot open %s: %s (is --pid right?)", path, strerror(errno));
    long kb = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    if (kb < 0)
        fail("no VmRSS in %s", path);
    return kb;
}

/* Inode of the socket listening on g_opt.port, from /proc/net/tcp and tcp6 (0 if none). */
static unsigned long
listen_inode(void)
{
    static const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    for (size_t f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        if (fp == NULL)
            continue;
        char line[512];
        if (fgets(line, sizeof line, fp) == NULL) { /* header */
            fclose(fp);
            continue;
        }
        while (fgets(line, sizeof line, fp) != NULL) {
            char local[128], remote[128];
            unsigned st;
            unsigned long inode;
            /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(line, "%*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st,
                       &inode) != 4)
                continue;
            const char *colon = strrchr(local, ':');
            if (colon == NULL || st != 0x0A)
                continue;
            if ((int)strtol(colon + 1, NULL, 16) == g_opt.port && inode != 0) {
                fclose(fp);
                return inode;
            }
        }
        fclose(fp);
    }
    return 0;
}

/* The pid of the process that holds the listening socket of --port, found through the socket
 * links in /proc/<pid>/fd (only processes of the same user are visible, which a benchmark
 * run satisfies). */
static pid_t
find_server_pid(bool required)
{
    if (g_opt.pid > 0)
        return g_opt.pid;
    unsigned long inode = listen_inode();
    if (inode == 0) {
        if (!required)
            return 0;
        fail("no listening socket on port %d; pass --pid", g_opt.port);
    }
    char want[64];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        fail("cannot open /proc");
    struct dirent *de;
    pid_t found = 0;
    while (found == 0 && (de = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/fd", de->d_name);
        DIR *fds = opendir(path);
        if (fds == NULL)
            continue;
        struct dirent *fe;
        while ((fe = readdir(fds)) != NULL) {
            char link[600], target[128];
            snprintf(link, sizeof link, "%s/%s", path, fe->d_name);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strcmp(target, want) == 0) {
                found = (pid_t)atoi(de->d_name);
                break;
            }
        }
        closedir(fds);
    }
    closedir(proc);
    if (found == 0 && required)
        fail("no process found for the socket listening on port %d; pass --pid", g_opt.port);
    return found;
}

/* CPU time (user + system) the process has used so far, in seconds; -1 if it cannot be read. */
static double
proc_cpu_s(pid_t pid)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name may contain spaces; the fields after it start past the last ')'. */
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The throughput and latency modes also report the server's CPU time per operation when its pid
 * is known (--pid, or a listening socket of this user on --port): unlike a rate, it hardly
 * changes when other processes compete for the CPUs, so it compares the servers' efficiency
 * even on a busy machine. */
static pid_t g_cpu_pid;
static double g_cpu0;

static void
cpu_begin(void)
{
    static bool looked;
    if (!looked) {
        g_cpu_pid = find_server_pid(false);
        looked = true;
    }
    g_cpu0 = proc_cpu_s(g_cpu_pid);
}

/* Fills kv with " srv_cpu_s=.. srv_cpu_ns_per_op=.." and human with "; server CPU ..", or both
 * with "" when the server's CPU time is unknown. */
static void
cpu_end(uint64_t ops, const char *op, char *kv, size_t kvn, char *human, size_t hn)
{
    double c1 = proc_cpu_s(g_cpu_pid);
    kv[0] = human[0] = '\0';
    if (g_cpu0 < 0 || c1 < 0 || ops == 0)
        return;
    double cpu = c1 - g_cpu0, ns = cpu * 1e9 / (double)ops;
    snprintf(kv, kvn, " srv_cpu_s=%.2f srv_cpu_ns_per_op=%.0f", cpu, ns);
    snprintf(human, hn, "; server CPU %.2f s, %.0f ns per %s", cpu, ns, op);
}

/* ---------------------------------------------------------------------------------------------- */
/* Modes */

static const char *
subject_or(const char *dflt)
{
    return g_opt.subject ? g_opt.subject : dflt;
}

static uint64_t
msgs_or(uint64_t dflt)
{
    return g_opt.msgs ? g_opt.msgs : dflt;
}

static void
human_rate(char *buf, size_t n, double rate)
{
    if (rate >= 1e6)
        snprintf(buf, n, "%.2f M", rate / 1e6);
    else if (rate >= 1e3)
        snprintf(buf, n, "%.1f k", rate / 1e3);
    else
        snprintf(buf, n, "%.0f", rate);
}

static int
mode_pub(void)
{
    uint64_t n = msgs_or(10000000);
    int np = g_opt.pubs;
    const char *subject = subject_or("ndbench.pub");
    pubr_t *ps = xcalloc((size_t)np, sizeof *ps);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)np + 1);
    for (int i = 0; i < np; i++)
        pub_open(&ps[i], subject, n / (uint64_t)np + ((uint64_t)i < n % (uint64_t)np), &start);
    cpu_begin();
    for (int i = 0; i < np; i++)
        pub_start(&ps[i]);
    pthread_barrier_wait(&start);
    double t0 = now_s(), t1 = t0;
    for (int i = 0; i < np; i++) {
        pthread_join(ps[i].th, NULL);
        if (ps[i].t_end > t1)
            t1 = ps[i].t_end;
    }
    double secs = t1 - t0;
    double rate = (double)n / secs, mbs = (double)n * (double)g_opt.size / secs / 1e6;
    char h[32], kv[96], hc[96];
    human_rate(h, sizeof h, rate);
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    printf("RESULT mode=pub pubs=%d msgs=%" PRIu64 " size=%zu secs=%.4f msgs_per_s=%.0f "
           "mb_per_s=%.2f%s\n",
           np, n, g_opt.size, secs, rate, mbs, kv);
    printf("pub: %" PRIu64
           " msgs of %zu B from %d publisher(s) in %.3f s: %s msgs/s, %.1f MB/s%s\n",
           n, g_opt.size, np, secs, h, mbs, hc);
    return 0;
}

/* Runs one publisher against `ns` subscribers that have already been opened; returns the
 * publisher's own elapsed time. */
static double
run_publisher(const char *subject, uint64_t n, sub_t *subs, int ns, bool sum)
{
    pubr_t p;
    pub_open(&p, subject, n, NULL);
    p.subs = subs;
    p.nsubs = ns;
    p.sum = sum;
    p.max_lag = lag_msgs(subject);
    pub_start(&p);
    pthread_join(p.th, NULL);
    close(p.fd);
    rd_free(&p.rd);
    return p.t_end - p.t_start;
}

static void
join_subs(sub_t *subs, int ns, uint64_t n)
{
    for (int i = 0; i < ns; i++) {
        pthread_join(subs[i].th, NULL);
        uint64_t c = atomic_load_explicit(&subs[i].count, memory_order_relaxed);
        if (c < n)
            fail("subscriber %d received %" PRIu64 " of %" PRIu64 " messages", i, c, n);
    }
}

static int
mode_pubsub(void)
{
    uint64_t n = msgs_or(4000000);
    const char *subject = subject_or("ndbench.pubsub");
    sub_t s;
    sub_open(&s, subject, NULL, n);
    if (g_nsub_addr > 0)
        sleep_us((long)g_opt.settle_ms * 1000); /* the interest crosses the routes */
    cpu_begin();
    double pubsecs = run_publisher(subject, n, &s, 1, false);
    join_subs(&s, 1, n);
    double secs = s.t_last - s.t_first;
    if (secs <= 0)
        secs = 1e-9;
    double rate = (double)n / secs, mbs = (double)n * (double)g_opt.size / secs / 1e6;
    char h[32], kv[96], hc[96];
    human_rate(h, sizeof h, rate);
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    printf("RESULT mode=pubsub msgs=%" PRIu64 " size=%zu secs=%.4f msgs_per_s=%.0f mb_per_s=%.2f "
           "pub_msgs_per_s=%.0f%s\n",
           n, g_opt.size, secs, rate, mbs, (double)n / pubsecs, kv);
    printf("pubsub: %" PRIu64 " msgs of %zu B, 1 publisher -> 1 subscriber in %.3f s: "
           "%s msgs/s received, %.1f MB/s%s\n",
           n, g_opt.size, secs, h, mbs, hc);
    close(s.fd);
    rd_free(&s.rd);
    return 0;
}

static int
mode_fanout(void)
{
    uint64_t n = msgs_or(2000000);
    int k = g_opt.subs;
    const char *subject = subject_or("ndbench.fanout");
    sub_t *subs = xcalloc((size_t)k, sizeof *subs);
    for (int i = 0; i < k; i++)
        sub_open(&subs[i], subject, NULL, n);
    if (g_nsub_addr > 0)
        sleep_us((long)g_opt.settle_ms * 1000); /* the interest crosses the routes */
    cpu_begin();
    run_publisher(subject, n, subs, k, false);
    join_subs(subs, k, n);
    double t0 = subs[0].t_first, t1 = subs[0].t_last;
    for (int i = 1; i < k; i++) {
        if (subs[i].t_first < t0)
            t0 = subs[i].t_first;
        if (subs[i].t_last > t1)
            t1 = subs[i].t_last;
    }
    double secs = t1 - t0 > 0 ? t1 - t0 : 1e-9;
    double total = (double)n * (double)k;
    double rate = total / secs, mbs = total * (double)g_opt.size / secs / 1e6;
    char h[32], kv[96], hc[96];
    human_rate(h, sizeof h, rate);
    cpu_end(n * (uint64_t)k, "delivery", kv, sizeof kv, hc, sizeof hc);
    printf("RESULT mode=fanout subs=%d msgs=%" PRIu64 " size=%zu secs=%.4f deliveries_per_s=%.0f "
           "mb_per_s=%.2f%s\n",
           k, n, g_opt.size, secs, rate, mbs, kv);
    printf("fanout: %" PRIu64 " msgs of %zu B, 1 publisher -> %d subscribers in %.3f s: "
           "%s deliveries/s, %.1f MB/s%s\n",
           n, g_opt.size, k, secs, h, mbs, hc);
    for (int i = 0; i < k; i++) {
        close(subs[i].fd);
        rd_free(&subs[i].rd);
    }
    free(subs);
    return 0;
}

static int
mode_queue(void)
{
    uint64_t n = msgs_or(3000000);
    int q = g_opt.members;
    const char *subject = subject_or("ndbench.queue");
    sub_t *subs = xcalloc((size_t)q, sizeof *subs);
    for (int i = 0; i < q; i++)
        sub_open(&subs[i], subject, "ndbench_q", UINT64_MAX);
    cpu_begin();
    run_publisher(subject, n, subs, q, true);
    /* Members cannot know when the group as a whole is done: wait for the total, then shut their
     * sockets so that their blocked reads return. */
    uint64_t last = 0;
    double since = now_s();
    for (;;) {
        uint64_t tot = 0;
        for (int i = 0; i < q; i++)
            tot += atomic_load_explicit(&subs[i].count, memory_order_relaxed);
        if (tot >= n)
            break;
        if (tot != last) {
            last = tot;
            since = now_s();
        } else if (now_s() - since > g_opt.timeout) {
            fail("the queue group received %" PRIu64 " of %" PRIu64 " messages", tot, n);
        }
        sleep_us(1000);
    }
    atomic_store_explicit(&g_stopping, true, memory_order_relaxed);
    for (int i = 0; i < q; i++)
        shutdown(subs[i].fd, SHUT_RDWR);
    uint64_t tot = 0, mn = UINT64_MAX, mx = 0;
    double t0 = 0, t1 = 0;
    bool first = true;
    for (int i = 0; i < q; i++) {
        pthread_join(subs[i].th, NULL);
        uint64_t c = atomic_load_explicit(&subs[i].count, memory_order_relaxed);
        tot += c;
        mn = c < mn ? c : mn;
        mx = c > mx ? c : mx;
        if (c == 0)
            continue;
        if (first || subs[i].t_first < t0)
            t0 = subs[i].t_first;
        if (first || subs[i].t_last > t1)
            t1 = subs[i].t_last;
        first = false;
    }
    if (tot != n)
        fail("the queue group received %" PRIu64 " messages for %" PRIu64 " published", tot, n);
    if (mn == 0)
        fail("a queue member received no message (of %" PRIu64 ")", n);
    double secs = t1 - t0 > 0 ? t1 - t0 : 1e-9;
    double rate = (double)n / secs;
    char h[32], kv[96], hc[96];
    human_rate(h, sizeof h, rate);
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    printf("RESULT mode=queue members=%d msgs=%" PRIu64 " size=%zu secs=%.4f msgs_per_s=%.0f "
           "min_member=%" PRIu64 " max_member=%" PRIu64 "%s\n",
           q, n, g_opt.size, secs, rate, mn, mx, kv);
    printf("queue: %" PRIu64 " msgs of %zu B, 1 publisher -> queue group of %d in %.3f s: "
           "%s msgs/s received; per member %" PRIu64 "..%" PRIu64 "%s\n",
           n, g_opt.size, q, secs, h, mn, mx, hc);
    for (int i = 0; i < q; i++) {
        close(subs[i].fd);
        rd_free(&subs[i].rd);
    }
    free(subs);
    return 0;
}

/* The responder of the reqrep mode: answers every request with a payload of the same size,
 * batching the answers to the requests found in one read into one write. */
typedef struct responder {
    pthread_t th;
    int fd;
    rd_t rd;
} responder_t;

static void *
responder_main(void *arg)
{
    responder_t *rs = arg;
    rd_t *r = &rs->rd;
    size_t cap = 64 * KIB, len = 0;
    char *out = xmalloc(cap);
    ev_t ev;
    for (;;) {
        if (!rd_fill(r))
            break;
        for (;;) {
            int k = rd_parse(r, &ev, true);
            if (k == EV_NONE)
                break;
            if (k == EV_PING) {
                write_all(rs->fd, "PONG\r\n", 6);
                continue;
            }
            if (k != EV_MSG || ev.reply == NULL)
                continue;
            size_t need = ev.reply_len + ev.len + 40;
            if (len + need > cap) {
                write_all(rs->fd, out, len);
                len = 0;
                if (need > cap) {
                    cap = need;
                    free(out);
                    out = xmalloc(cap);
                }
            }
            len +=
                (size_t)sprintf(out + len, "PUB %.*s %zu\r\n", (int)ev.reply_len, ev.reply, ev.len);
            memcpy(out + len, ev.data, ev.len);
            len += ev.len;
            memcpy(out + len, "\r\n", 2);
            len += 2;
        }
        if (len > 0) {
            write_all(rs->fd, out, len);
            len = 0;
        }
    }
    free(out);
    return NULL;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array, in microseconds. */
static double
pct_us(const uint64_t *v, uint64_t n, double p)
{
    uint64_t i = (uint64_t)(p / 100.0 * (double)n + 0.999999);
    if (i < 1)
        i = 1;
    if (i > n)
        i = n;
    return (double)v[i - 1] / 1e3;
}

static int
mode_reqrep(void)
{
    uint64_t n = msgs_or(20000);
    const char *subject = subject_or("ndbench.req");
    char inbox[64];
    snprintf(inbox, sizeof inbox, "_INBOX.ndbench.%d", (int)getpid());

    responder_t rs;
    char extra[512];
    snprintf(extra, sizeof extra, "SUB %s 1\r\n", subject);
    rs.fd = conn_open(&rs.rd, RD_SMALL, extra);
    if (pthread_create(&rs.th, NULL, responder_main, &rs) != 0)
        fail("pthread_create failed");

    rd_t r;
    snprintf(extra, sizeof extra, "SUB %s 1\r\n", inbox);
    int fd = conn_open(&r, RD_SMALL, extra);

    size_t size = g_opt.size;
    check_payload();
    char hdr[300];
    int hl = snprintf(hdr, sizeof hdr, "PUB %s %s %zu\r\n", subject, inbox, size);
    size_t reclen = (size_t)hl + size + 2;
    char *req = xmalloc(reclen);
    memcpy(req, hdr, (size_t)hl);
    memset(req + hl, 'r', size);
    memcpy(req + hl + size, "\r\n", 2);

    uint64_t *lat = xcalloc(n, sizeof *lat);
    cpu_begin(); /* finds the server's pid now, outside the timed requests */
    uint64_t total = g_opt.warmup + n;
    ev_t ev;
    double t0 = 0;
    for (uint64_t i = 0; i < total; i++) {
        if (i == g_opt.warmup) {
            cpu_begin();
            t0 = now_s();
        }
        uint64_t a = now_ns();
        write_all(fd, req, reclen);
        int k;
        while ((k = rd_next(&r, &ev, false)) != EV_MSG) {
        }
        if (ev.len != size)
            fail("reply of %zu bytes to a request of %zu", ev.len, size);
        uint64_t b = now_ns();
        if (i >= g_opt.warmup)
            lat[i - g_opt.warmup] = b - a;
    }
    double secs = now_s() - t0;
    char kv[96], hc[96];
    cpu_end(n, "request", kv, sizeof kv, hc, sizeof hc);
    atomic_store_explicit(&g_stopping, true, memory_order_relaxed);
    shutdown(rs.fd, SHUT_RDWR);
    pthread_join(rs.th, NULL);

    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    double p50 = pct_us(lat, n, 50), p90 = pct_us(lat, n, 90), p99 = pct_us(lat, n, 99);
    double mx = (double)lat[n - 1] / 1e3, mean = sum / (double)n / 1e3;
    printf("RESULT mode=reqrep reqs=%" PRIu64 " size=%zu p50_us=%.1f p90_us=%.1f p99_us=%.1f "
           "max_us=%.1f mean_us=%.1f reqs_per_s=%.0f%s\n",
           n, size, p50, p90, p99, mx, mean, (double)n / secs, kv);
    printf("reqrep: %" PRIu64 " sequential requests of %zu B: p50 %.1f us, p90 %.1f us, "
           "p99 %.1f us, max %.1f us (mean %.1f us, %.0f req/s)%s\n",
           n, size, p50, p90, p99, mx, mean, (double)n / secs, hc);
    free(lat);
    free(req);
    close(fd);
    rd_free(&r);
    close(rs.fd);
    rd_free(&rs.rd);
    return 0;
}

/* Raises the soft RLIMIT_NOFILE to hold `want` descriptors. */
static void
raise_nofile(rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur >= want)
        return;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
        fail("%llu descriptors needed but the hard RLIMIT_NOFILE is %llu (raise it, or use -c)",
             (unsigned long long)want, (unsigned long long)rl.rlim_max);
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        fail("setrlimit(RLIMIT_NOFILE, %llu): %s", (unsigned long long)want, strerror(errno));
}

static int
mode_idleconns(void)
{
    uint64_t c = g_opt.conns;
    pid_t pid = find_server_pid(true);
    raise_nofile((rlim_t)c + 64);
    int *fds = xcalloc(c, sizeof *fds);
    uint8_t *state = xcalloc(c, 1); /* chars of "PONG\r\n" matched so far */
    static const char pong[] = "PONG\r\n";
    static const char hello[] = CONNECT_LINE "PING\r\n";
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        fail("epoll_create1: %s", strerror(errno));

    long before = rss_kb(pid);
    double t0 = now_s();
    uint64_t opened = 0, done = 0, inflight = 0;
    struct epoll_event evs[256];
    char buf[4096];
    while (done < c) {
        /* Keep at most --batch connections waiting for their PONG, so the server's accept
         * backlog never overflows (a dropped SYN costs a one-second retransmit). */
        while (opened < c && inflight < (uint64_t)g_opt.batch) {
            int fd = sock_connect();
            if (fd < 0)
                fail("connection %" PRIu64 " of %" PRIu64 ": %s", opened + 1, c, strerror(errno));
            write_all(fd, hello, sizeof hello - 1);
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
            struct epoll_event ev = {.events = EPOLLIN, .data.u64 = opened};
            if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
                fail("epoll_ctl: %s", strerror(errno));
            fds[opened++] = fd;
            inflight++;
        }
        int n = epoll_wait(ep, evs, 256, (int)(g_opt.timeout * 1000));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail("epoll_wait: %s", strerror(errno));
        if (n == 0)
            fail("no PONG for %.0f s; %" PRIu64 " of %" PRIu64 " connections ready", g_opt.timeout,
                 done, c);
        for (int i = 0; i < n; i++) {
            uint64_t idx = evs[i].data.u64;
            int fd = fds[idx];
            for (;;) {
                ssize_t got = read(fd, buf, sizeof buf);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                if (got <= 0)
                    fail("the server closed connection %" PRIu64 " (%" PRIu64 " ready)%s%s",
                         idx + 1, done, got < 0 ? ": " : "", got < 0 ? strerror(errno) : "");
                /* "PONG\r\n" has no proper prefix that is also a suffix, so on a mismatch the
                 * match restarts at this byte. */
                for (ssize_t j = 0; j < got && state[idx] < 6; j++) {
                    if (buf[j] == pong[state[idx]])
                        state[idx]++;
                    else
                        state[idx] = buf[j] == 'P';
                    if (buf[j] == '-' && state[idx] == 0 && j + 4 < got &&
                        memcmp(buf + j, "-ERR", 4) == 0)
                        fail("connection %" PRIu64 ": %.*s", idx + 1, (int)(got - j), buf + j);
                }
                if (state[idx] == 6)
                    break;
            }
            if (state[idx] == 6) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                done++;
                inflight--;
            }
        }
    }
    double secs = now_s() - t0;
    sleep_us((long)g_opt.settle_ms * 1000);
    long after = rss_kb(pid);
    double per = ((double)after - (double)before) * 1024.0 / (double)c;
    printf("RESULT mode=idleconns conns=%" PRIu64 " pid=%d rss_before_kb=%ld rss_after_kb=%ld "
           "bytes_per_conn=%.0f secs=%.3f\n",
           c, (int)pid, before, after, per, secs);
    printf("idleconns: %" PRIu64 " connections in %.2f s; server RSS %ld -> %ld KiB: %.1f KB per "
           "connection\n",
           c, secs, before, after, per / 1000.0);
    for (uint64_t i = 0; i < c; i++)
        close(fds[i]);
    close(ep);
    free(fds);
    free(state);
    return 0;
}

static int
mode_subs(void)
{
    uint64_t n = g_opt.nsubs;
    const char *prefix = subject_or("ndbench.subs");
    pid_t pid = find_server_pid(true);
    rd_t r;
    int fd = conn_open(&r, RD_SMALL, NULL);
    long before = rss_kb(pid);
    double t0 = now_s();
    char *buf = xmalloc(SUBS_CHUNK + 512);
    size_t len = 0;
    for (uint64_t i = 1; i <= n; i++) {
        len += (size_t)snprintf(buf + len, 512, "SUB %s.%" PRIu64 " %" PRIu64 "\r\n", prefix, i, i);
        if (len >= SUBS_CHUNK) {
            write_all(fd, buf, len);
            len = 0;
        }
    }
    memcpy(buf + len, "PING\r\n", 6);
    write_all(fd, buf, len + 6);
    rd_wait_pong(&r, NULL);
    double secs = now_s() - t0;
    sleep_us((long)g_opt.settle_ms * 1000);
    long after = rss_kb(pid);
    double per = ((double)after - (double)before) * 1024.0 / (double)n;
    printf("RESULT mode=subs subs=%" PRIu64 " pid=%d rss_before_kb=%ld rss_after_kb=%ld "
           "bytes_per_sub=%.0f subs_per_s=%.0f\n",
           n, (int)pid, before, after, per, (double)n / secs);
    printf("subs: %" PRIu64 " subscriptions on one connection in %.3f s; server RSS %ld -> %ld "
           "KiB: %.0f B per subscription\n",
           n, secs, before, after, per);
    free(buf);
    close(fd);
    rd_free(&r);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* JetStream modes */

/* One connection for the API and the publishes, subscribed to its own inbox wildcard: every MSG
 * it receives is an answer (an API response or a PubAck). */
typedef struct jsc {
    int fd;
    rd_t rd;
    char inbox[64]; /* `_INBOX.ndbench.<pid>`; the subscription is `<inbox>.>` */
    uint64_t req;   /* API requests sent, for distinct reply subjects */
} jsc_t;

static void
js_open(jsc_t *c)
{
    char extra[128];
    snprintf(c->inbox, sizeof c->inbox, "_INBOX.ndbench.%d", (int)getpid());
    snprintf(extra, sizeof extra, "SUB %s.> 1\r\n", c->inbox);
    c->fd = conn_open_with(&c->rd, RD_SMALL, CONNECT_LINE_JS, extra);
    c->req = 0;
}

static void
js_close(jsc_t *c)
{
    close(c->fd);
    rd_free(&c->rd);
}

/* The status code of an HMSG (`NATS/1.0 503` -> 503), 0 when it has none or is a MSG. */
static int
js_status(const ev_t *ev)
{
    if (!ev->hmsg || ev->hdr_len < 12 || memcmp(ev->data, "NATS/1.0 ", 9) != 0)
        return 0;
    return atoi(ev->data + 9);
}

/* Fails the run unless the answer is a plain JSON body without an error: an HMSG with a status
 * (503: nothing answered, i.e. JetStream is off or no stream takes the subject) or a body with
 * an "error" member ends it with the server's words. */
static void
js_check_reply(const ev_t *ev, const char *what)
{
    int st = js_status(ev);
    if (st != 0) {
        const char *eol = memchr(ev->data, '\r', ev->hdr_len);
        int l = eol ? (int)(eol - ev->data) : (int)ev->hdr_len;
        fail("%s: the server answered with status '%.*s'%s", what, l, ev->data,
             st == 503 ? " (no responders: JetStream not enabled, or no stream for the subject)"
                       : "");
    }
    const char *body = ev->data + ev->hdr_len;
    size_t blen = ev->len - ev->hdr_len;
    if (memmem(body, blen, "\"error\"", 7) != NULL)
        fail("%s: error response: %.*s", what, (int)blen, body);
}

/* Sends one API request and returns its answer (valid until the next read on c), waiting at
 * most --timeout. */
static void
js_request(jsc_t *c, const char *subject, const char *body, ev_t *ev)
{
    char hdr[512];
    size_t blen = strlen(body);
    int hl = snprintf(hdr, sizeof hdr, "PUB %s %s.r%" PRIu64 " %zu\r\n", subject, c->inbox,
                      ++c->req, blen);
    if (hl < 0 || (size_t)hl >= sizeof hdr)
        fail("request subject too long: %s", subject);
    size_t tot = (size_t)hl + blen + 2;
    char *buf = xmalloc(tot);
    memcpy(buf, hdr, (size_t)hl);
    memcpy(buf + hl, body, blen);
    memcpy(buf + hl + blen, "\r\n", 2);
    write_all(c->fd, buf, tot);
    free(buf);
    while (rd_next(&c->rd, ev, false) != EV_MSG) {
    }
}

/* The number after `"key":` in s (after `after` when given), or fails. */
static uint64_t
json_u64(const char *s, size_t n, const char *after, const char *key, const char *what)
{
    const char *p = s, *e = s + n;
    if (after != NULL) {
        p = memmem(s, n, after, strlen(after));
        if (p == NULL)
            fail("%s: no %s in the answer: %.*s", what, after, (int)n, s);
    }
    char k[64];
    int kl = snprintf(k, sizeof k, "\"%s\":", key);
    const char *f = memmem(p, (size_t)(e - p), k, (size_t)kl);
    if (f == NULL)
        fail("%s: no \"%s\" in the answer: %.*s", what, key, (int)n, s);
    f += kl;
    while (f < e && *f == ' ')
        f++;
    if (f == e || *f < '0' || *f > '9')
        fail("%s: \"%s\" is not a number in: %.*s", what, key, (int)n, s);
    return strtoull(f, NULL, 10);
}

/* Creates a stream (or finds it with the same config: a create is idempotent) and returns the
 * number of messages it holds. A 503 right after the server started is retried for 2 s, in
 * case JetStream comes up after the client port; anything else that is not a stream create
 * response fails the run. */
static uint64_t
js_stream_create_body(jsc_t *c, const char *name, const char *body)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.%s", name);
    double deadline = now_s() + 2;
    ev_t ev;
    for (;;) {
        js_request(c, subj, body, &ev);
        if (js_status(&ev) == 503 && now_s() < deadline) {
            sleep_us(50000);
            continue;
        }
        break;
    }
    char what[300];
    snprintf(what, sizeof what, "STREAM.CREATE %s", name);
    js_check_reply(&ev, what);
    if (memmem(ev.data, ev.len, "\"config\"", 8) == NULL)
        fail("%s: not a stream create response: %.*s", what, (int)ev.len, ev.data);
    return json_u64(ev.data, ev.len, "\"state\"", "messages", what);
}

static uint64_t
js_stream_create(jsc_t *c, const char *name, const char *subject, const char *storage)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"subjects\":[\"%s\"],\"storage\":\"%s\",\"retention\":\"limits\","
             "\"num_replicas\":1}",
             name, subject, storage);
    return js_stream_create_body(c, name, body);
}

/* Messages the stream holds now, from STREAM.INFO. */
static uint64_t
js_stream_msgs(jsc_t *c, const char *name)
{
    char subj[256], what[300];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", name);
    snprintf(what, sizeof what, "STREAM.INFO %s", name);
    ev_t ev;
    js_request(c, subj, "", &ev);
    js_check_reply(&ev, what);
    return json_u64(ev.data, ev.len, "\"state\"", "messages", what);
}

/* Checks one PubAck: no status, no error, a sequence, and with message ids no duplicate (every
 * id is unique, so a duplicate means the server matched the wrong ids). */
static void
js_check_ack(const ev_t *ev, bool ids)
{
    js_check_reply(ev, "PubAck");
    const char *body = ev->data + ev->hdr_len;
    size_t blen = ev->len - ev->hdr_len;
    if (memmem(body, blen, "\"seq\":", 6) == NULL)
        fail("PubAck without a sequence: %.*s", (int)blen, body);
    if (ids && memmem(body, blen, "\"duplicate\":true", 16) != NULL)
        fail("PubAck marks a unique Nats-Msg-Id as a duplicate: %.*s", (int)blen, body);
}

/* Waits for at least one PubAck, then takes every other one already read; returns how many. */
static uint64_t
js_take_acks(jsc_t *c, bool ids)
{
    uint64_t got = 0;
    ev_t ev;
    for (;;) {
        int k = rd_parse(&c->rd, &ev, false);
        switch (k) {
        case EV_NONE:
            if (got > 0)
                return got;
            if (!rd_fill(&c->rd))
                fail("the server closed the connection");
            break;
        case EV_MSG:
            js_check_ack(&ev, ids);
            got++;
            break;
        case EV_PING:
            write_all(c->fd, "PONG\r\n", 6);
            break;
        case EV_INFO:
            note_info(&ev);
            break;
        case EV_ERR:
            fail("server error: %.*s", (int)ev.line_len, ev.line);
        default:
            break;
        }
    }
}

/* Builds the publish records of a JetStream publisher: `PUB <subject> <reply> <size>` or, with
 * message ids, `HPUB` with a `Nats-Msg-Id` header unique to this run and message. */
typedef struct jsrec {
    const char *subject;
    char reply[96];
    bool ids;
    char idpfx[48];
    char *buf;      /* room for --inflight records */
    size_t reclen;  /* without ids: every record has this length and buf holds them all */
    size_t max_rec; /* with ids: an upper bound of one record */
} jsrec_t;

static void
jsrec_init(jsrec_t *r, const jsc_t *c, const char *subject, bool ids, size_t count)
{
    size_t size = g_opt.size;
    r->subject = subject;
    r->ids = ids;
    snprintf(r->reply, sizeof r->reply, "%s.a", c->inbox);
    snprintf(r->idpfx, sizeof r->idpfx, "%d-%" PRIx64, (int)getpid(), now_ns());
    if (!ids) {
        char hdr[400];
        int hl = snprintf(hdr, sizeof hdr, "PUB %s %s %zu\r\n", subject, r->reply, size);
        r->reclen = (size_t)hl + size + 2;
        r->buf = xmalloc(count * r->reclen);
        for (size_t i = 0; i < count; i++) {
            char *rec = r->buf + i * r->reclen;
            memcpy(rec, hdr, (size_t)hl);
            for (size_t j = 0; j < size; j++)
                rec[hl + j] = (char)('a' + j % 26);
            memcpy(rec + hl + size, "\r\n", 2);
        }
    } else {
        r->max_rec = 400 + 128 + size + 2;
        r->buf = xmalloc(count * r->max_rec);
    }
}

/* Writes records for messages [from, from + k) (numbered from 1). */
static void
jsrec_send(jsrec_t *r, int fd, uint64_t from, uint64_t k)
{
    if (!r->ids) {
        write_all(fd, r->buf, (size_t)k * r->reclen);
        return;
    }
    size_t size = g_opt.size, len = 0;
    for (uint64_t i = 0; i < k; i++) {
        char h[128];
        int hl = snprintf(h, sizeof h, "NATS/1.0\r\nNats-Msg-Id: %s-%" PRIu64 "\r\n\r\n", r->idpfx,
                          from + i);
        len += (size_t)sprintf(r->buf + len, "HPUB %s %s %d %zu\r\n", r->subject, r->reply, hl,
                               (size_t)hl + size);
        memcpy(r->buf + len, h, (size_t)hl);
        len += (size_t)hl;
        for (size_t j = 0; j < size; j++)
            r->buf[len + j] = (char)('a' + j % 26);
        len += size;
        memcpy(r->buf + len, "\r\n", 2);
        len += 2;
    }
    write_all(fd, r->buf, len);
}

/* Publishes n messages with at most --inflight PubAcks outstanding (an async publisher with a
 * bounded window, as the clients' publishAsync with a max pending), checking every PubAck.
 * Returns the seconds from the first write to the last PubAck. */
static double
js_publish_async(jsc_t *c, const char *subject, uint64_t n, bool ids)
{
    check_payload();
    uint64_t w = (uint64_t)g_opt.inflight;
    jsrec_t r;
    jsrec_init(&r, c, subject, ids, (size_t)w);
    uint64_t sent = 0, acked = 0;
    double t0 = now_s();
    while (acked < n) {
        uint64_t room = w - (sent - acked);
        if (sent < n && room > 0) {
            uint64_t k = n - sent < room ? n - sent : room;
            jsrec_send(&r, c->fd, sent + 1, k);
            sent += k;
        }
        acked += js_take_acks(c, ids);
        if (acked > sent)
            fail("%" PRIu64 " PubAcks for %" PRIu64 " messages sent", acked, sent);
    }
    double secs = now_s() - t0;
    free(r.buf);
    return secs;
}

static const char *
stream_or(const char *dflt)
{
    return g_opt.stream ? g_opt.stream : dflt;
}

/* Checks with STREAM.INFO that the stream holds exactly `want` messages. */
static void
js_expect_msgs(jsc_t *c, const char *stream, uint64_t want)
{
    uint64_t have = js_stream_msgs(c, stream);
    if (have != want)
        fail("stream %s holds %" PRIu64 " messages, %" PRIu64 " expected", stream, have, want);
}

/* jspub, jspubid and jsfsync: async publish to a stream (file storage unless --storage). */
static int
js_pub_mode(const char *mode, uint64_t dflt, bool ids)
{
    uint64_t n = msgs_or(dflt);
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    uint64_t base = js_stream_create(&c, stream, subject, storage);
    cpu_begin();
    double secs = js_publish_async(&c, subject, n, ids);
    char kv[96], hc[96], h[32];
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    js_expect_msgs(&c, stream, base + n);
    double rate = (double)n / secs;
    human_rate(h, sizeof h, rate);
    printf("RESULT mode=%s msgs=%" PRIu64 " size=%zu inflight=%d storage=%s secs=%.4f "
           "msgs_per_s=%.0f%s\n",
           mode, n, g_opt.size, g_opt.inflight, storage, secs, rate, kv);
    printf("%s: %" PRIu64 " msgs of %zu B%s to a %s stream, %d PubAcks in flight, in %.3f s: "
           "%s msgs/s%s\n",
           mode, n, g_opt.size, ids ? " with a Nats-Msg-Id each" : "", storage, g_opt.inflight,
           secs, h, hc);
    js_close(&c);
    return 0;
}

static int
mode_jspub(void)
{
    return js_pub_mode("jspub", 1000000, false);
}

static int
mode_jspubid(void)
{
    return js_pub_mode("jspubid", 500000, true);
}

/* The server runs with `sync_interval: always` (compare.sh writes the config): every PubAck
 * waits for an fsync, and group commit decides how many messages share one. */
static int
mode_jsfsync(void)
{
    return js_pub_mode("jsfsync", 50000, false);
}

/* One publish at a time: the latency from the PUB to its PubAck. */
static int
mode_jssync(void)
{
    uint64_t n = msgs_or(20000);
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    uint64_t base = js_stream_create(&c, stream, subject, storage);
    check_payload();
    jsrec_t r;
    jsrec_init(&r, &c, subject, false, 1);
    uint64_t *lat = xcalloc(n, sizeof *lat);
    cpu_begin();
    uint64_t total = g_opt.warmup + n;
    double t0 = 0;
    for (uint64_t i = 0; i < total; i++) {
        if (i == g_opt.warmup) {
            cpu_begin();
            t0 = now_s();
        }
        uint64_t a = now_ns();
        jsrec_send(&r, c.fd, i + 1, 1);
        if (js_take_acks(&c, false) != 1)
            fail("more than one PubAck for one publish");
        uint64_t b = now_ns();
        if (i >= g_opt.warmup)
            lat[i - g_opt.warmup] = b - a;
    }
    double secs = now_s() - t0;
    char kv[96], hc[96];
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    js_expect_msgs(&c, stream, base + total);
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    double p50 = pct_us(lat, n, 50), p90 = pct_us(lat, n, 90), p99 = pct_us(lat, n, 99);
    double mx = (double)lat[n - 1] / 1e3, mean = sum / (double)n / 1e3;
    printf("RESULT mode=jssync msgs=%" PRIu64 " size=%zu storage=%s p50_us=%.1f p90_us=%.1f "
           "p99_us=%.1f max_us=%.1f mean_us=%.1f msgs_per_s=%.0f%s\n",
           n, g_opt.size, storage, p50, p90, p99, mx, mean, (double)n / secs, kv);
    printf("jssync: %" PRIu64 " publishes of %zu B to a %s stream, one at a time: PubAck p50 "
           "%.1f us, p90 %.1f us, p99 %.1f us, max %.1f us (mean %.1f us, %.0f msgs/s)%s\n",
           n, g_opt.size, storage, p50, p90, p99, mx, mean, (double)n / secs, hc);
    free(lat);
    free(r.buf);
    js_close(&c);
    return 0;
}

/* A memory stream: the server's RSS growth per stored message. */
static int
mode_jsmem(void)
{
    uint64_t n = msgs_or(1000000);
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "memory";
    pid_t pid = find_server_pid(true);
    jsc_t c;
    js_open(&c);
    uint64_t base = js_stream_create(&c, stream, subject, storage);
    sleep_us((long)g_opt.settle_ms * 1000);
    long before = rss_kb(pid);
    double secs = js_publish_async(&c, subject, n, false);
    js_expect_msgs(&c, stream, base + n);
    sleep_us((long)g_opt.settle_ms * 1000);
    long after = rss_kb(pid);
    double per = ((double)after - (double)before) * 1024.0 / (double)n;
    printf("RESULT mode=jsmem msgs=%" PRIu64 " size=%zu storage=%s pid=%d rss_before_kb=%ld "
           "rss_after_kb=%ld bytes_per_msg=%.0f msgs_per_s=%.0f\n",
           n, g_opt.size, storage, (int)pid, before, after, per, (double)n / secs);
    printf("jsmem: %" PRIu64 " msgs of %zu B stored in a %s stream in %.2f s; server RSS %ld -> "
           "%ld KiB: %.0f B per message\n",
           n, g_opt.size, storage, secs, before, after, per);
    js_close(&c);
    return 0;
}

/* Stream creation, one request at a time: the latency of each STREAM.CREATE. */
static int
mode_jscreate(void)
{
    uint64_t n = msgs_or(1000);
    const char *prefix = stream_or("NDBC");
    const char *sprefix = subject_or("ndbench.create");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    uint64_t *lat = xcalloc(n, sizeof *lat);
    cpu_begin();
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        char name[256], subj[300];
        snprintf(name, sizeof name, "%s_%" PRIu64, prefix, i + 1);
        snprintf(subj, sizeof subj, "%s.%" PRIu64, sprefix, i + 1);
        uint64_t a = now_ns();
        js_stream_create(&c, name, subj, storage);
        lat[i] = now_ns() - a;
    }
    double secs = now_s() - t0;
    char kv[96], hc[96];
    cpu_end(n, "create", kv, sizeof kv, hc, sizeof hc);
    qsort(lat, n, sizeof *lat, cmp_u64);
    double p50 = pct_us(lat, n, 50), p90 = pct_us(lat, n, 90), p99 = pct_us(lat, n, 99);
    double mx = (double)lat[n - 1] / 1e3;
    printf("RESULT mode=jscreate streams=%" PRIu64 " storage=%s p50_us=%.1f p90_us=%.1f "
           "p99_us=%.1f max_us=%.1f creates_per_s=%.0f%s\n",
           n, storage, p50, p90, p99, mx, (double)n / secs, kv);
    printf("jscreate: %" PRIu64 " %s streams created one at a time: p50 %.3f ms, p90 %.3f ms, "
           "p99 %.3f ms, max %.3f ms (%.0f creates/s)%s\n",
           n, storage, p50 / 1e3, p90 / 1e3, p99 / 1e3, mx / 1e3, (double)n / secs, hc);
    free(lat);
    js_close(&c);
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* JetStream consumer and KV modes */

/* An output buffer: the acks (and the next pull request) of one read's worth of deliveries go
 * out in one write. */
typedef struct obuf {
    char *p;
    size_t len, cap;
} obuf_t;

static void
ob_add(obuf_t *o, const void *d, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 64 * KIB;
        while (cap < o->len + n)
            cap *= 2;
        char *np = realloc(o->p, cap);
        if (np == NULL)
            fail("out of memory (%zu bytes)", cap);
        o->p = np;
        o->cap = cap;
    }
    memcpy(o->p + o->len, d, n);
    o->len += n;
}

static void
ob_flush(obuf_t *o, int fd)
{
    if (o->len > 0)
        write_all(fd, o->p, o->len);
    o->len = 0;
}

/* Creates a durable consumer with $JS.API.CONSUMER.DURABLE.CREATE (nats-server 2.9 and natsd
 * both know it); cfg holds the config members other than durable_name, without braces. */
static void
js_consumer_create(jsc_t *c, const char *stream, const char *durable, const char *cfg)
{
    char subj[512], body[1024], what[600];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DURABLE.CREATE.%s.%s", stream, durable);
    snprintf(body, sizeof body, "{\"stream_name\":\"%s\",\"config\":{\"durable_name\":\"%s\",%s}}",
             stream, durable, cfg);
    snprintf(what, sizeof what, "CONSUMER.DURABLE.CREATE %s > %s", stream, durable);
    ev_t ev;
    js_request(c, subj, body, &ev);
    js_check_reply(&ev, what);
    if (memmem(ev.data, ev.len, "\"config\"", 8) == NULL)
        fail("%s: not a consumer create response: %.*s", what, (int)ev.len, ev.data);
}

/* CONSUMER.INFO: the ack floor's stream sequence and num_ack_pending. */
static void
js_consumer_acks(jsc_t *c, const char *stream, const char *cons, uint64_t *floor, uint64_t *pend)
{
    char subj[512], what[600];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.%s.%s", stream, cons);
    snprintf(what, sizeof what, "CONSUMER.INFO %s > %s", stream, cons);
    ev_t ev;
    js_request(c, subj, "", &ev);
    js_check_reply(&ev, what);
    *floor = json_u64(ev.data, ev.len, "\"ack_floor\"", "stream_seq", what);
    *pend = json_u64(ev.data, ev.len, NULL, "num_ack_pending", what);
}

/* Polls CONSUMER.INFO until the server has processed every ack (ack floor at `last`, nothing
 * pending): acks are fire-and-forget, so only then is the work done. */
static void
js_wait_all_acked(jsc_t *c, const char *stream, const char *cons, uint64_t last)
{
    double deadline = now_s() + g_opt.timeout;
    uint64_t floor, pend;
    for (;;) {
        js_consumer_acks(c, stream, cons, &floor, &pend);
        if (floor >= last && pend == 0)
            return;
        if (now_s() > deadline)
            fail("consumer %s: ack floor %" PRIu64 " of %" PRIu64 ", %" PRIu64
                 " pending after --timeout",
                 cons, floor, last, pend);
        sleep_us(200);
    }
}

/* Creates the stream (file storage unless --storage) and fills it with n messages; the stream
 * must be new (a consumer mode counts on exactly n messages). Untimed. */
static void
js_preload(jsc_t *c, const char *stream, const char *subject, const char *storage, uint64_t n)
{
    uint64_t base = js_stream_create(c, stream, subject, storage);
    if (base != 0)
        fail("stream %s already holds %" PRIu64 " messages: run against a fresh server", stream,
             base);
    js_publish_async(c, subject, n, false);
    js_expect_msgs(c, stream, n);
}

/* Reads deliveries on r until *got reaches `until`, adding an +ACK for each to o when `ack`
 * (o is flushed before every read, so acks leave in one write per read). A delivery must carry
 * a $JS.ACK reply when acked and the payload size sent; a status message (an HMSG with a code:
 * 408 request expired, 409, 404 no messages) fails the run. */
static void
cons_read(rd_t *r, int fd, obuf_t *o, uint64_t until, bool ack, uint64_t *got)
{
    ev_t ev;
    while (*got < until) {
        int k = rd_parse(r, &ev, true);
        switch (k) {
        case EV_NONE:
            ob_flush(o, fd);
            if (!rd_fill(r))
                fail("the server closed the connection after %" PRIu64 " messages", *got);
            break;
        case EV_MSG: {
            int st = js_status(&ev);
            if (st != 0) {
                const char *eol = memchr(ev.data, '\r', ev.hdr_len);
                fail("status message after %" PRIu64 " messages: %.*s", *got,
                     eol ? (int)(eol - ev.data) : (int)ev.hdr_len, ev.data);
            }
            if (ev.len - ev.hdr_len != g_opt.size)
                fail("delivery of %zu bytes, %zu expected", ev.len - ev.hdr_len, g_opt.size);
            (*got)++;
            if (ack) {
                if (ev.reply == NULL || ev.reply_len < 8 || memcmp(ev.reply, "$JS.ACK.", 8) != 0)
                    fail("a delivery without a $JS.ACK reply: %.*s", (int)ev.line_len, ev.line);
                ob_add(o, "PUB ", 4);
                ob_add(o, ev.reply, ev.reply_len);
                ob_add(o, " 4\r\n+ACK\r\n", 10);
            }
            break;
        }
        case EV_PING:
            ob_add(o, "PONG\r\n", 6);
            break;
        case EV_INFO:
            note_info(&ev);
            break;
        case EV_ERR:
            fail("server error: %.*s", (int)ev.line_len, ev.line);
        default:
            break;
        }
    }
}

/* Adds a pull request for `batch` messages ($JS.API.CONSUMER.MSG.NEXT, replies to <inbox>.f). */
static void
pull_request(obuf_t *o, const jsc_t *c, const char *stream, const char *cons, uint64_t batch)
{
    char body[128], rec[768];
    int bl = snprintf(body, sizeof body, "{\"batch\":%" PRIu64 ",\"expires\":%" PRId64 "}", batch,
                      (int64_t)(g_opt.timeout * 1e9));
    int rl = snprintf(rec, sizeof rec, "PUB $JS.API.CONSUMER.MSG.NEXT.%s.%s %s.f %d\r\n%s\r\n",
                      stream, cons, c->inbox, bl, body);
    if (rl < 0 || (size_t)rl >= sizeof rec)
        fail("pull request too long");
    ob_add(o, rec, (size_t)rl);
}

/* Pulls n messages in batches of `batch` (one pull request outstanding, the next sent when the
 * previous one is filled, as a client's fetch loop does), acking each when `ack`. */
static void
pull_all(jsc_t *c, obuf_t *o, const char *stream, const char *cons, uint64_t n, uint64_t batch,
         bool ack)
{
    uint64_t got = 0, asked = 0;
    while (got < n) {
        uint64_t k = n - asked < batch ? n - asked : batch;
        pull_request(o, c, stream, cons, k);
        asked += k;
        cons_read(&c->rd, c->fd, o, asked, ack, &got);
    }
    ob_add(o, "PING\r\n", 6);
    ob_flush(o, c->fd);
    rd_wait_pong(&c->rd, NULL);
}

/* jspull: a durable pull consumer fetching preloaded messages in batches, acking each one. */
static int
mode_jspull(void)
{
    uint64_t n = msgs_or(200000), batch = g_opt.fetch ? g_opt.fetch : 100;
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    js_preload(&c, stream, subject, storage, n);
    js_consumer_create(&c, stream, "PULL",
                       "\"deliver_policy\":\"all\",\"ack_policy\":\"explicit\","
                       "\"ack_wait\":30000000000,\"max_ack_pending\":10000,\"max_waiting\":512");
    obuf_t o = {0};
    cpu_begin();
    double t0 = now_s();
    pull_all(&c, &o, stream, "PULL", n, batch, true);
    js_wait_all_acked(&c, stream, "PULL", n);
    double secs = now_s() - t0;
    char kv[96], hc[96], h[32];
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    double rate = (double)n / secs;
    human_rate(h, sizeof h, rate);
    printf("RESULT mode=jspull msgs=%" PRIu64 " size=%zu batch=%" PRIu64 " storage=%s "
           "secs=%.4f msgs_per_s=%.0f%s\n",
           n, g_opt.size, batch, storage, secs, rate, kv);
    printf("jspull: %" PRIu64 " msgs of %zu B from a %s stream, fetched %" PRIu64
           " at a time, each acked, in %.3f s: %s msgs/s%s\n",
           n, g_opt.size, storage, batch, secs, h, hc);
    free(o.p);
    js_close(&c);
    return 0;
}

/* jspush and jspushack: a push consumer delivering preloaded messages to a core subscriber on
 * its own connection (ack none; jspushack: explicit, each message acked on that connection).
 * The clock runs from the create request to the n-th delivery (with acks: to the ack floor
 * reaching n), so it includes the consumer's start. */
static int
push_mode(const char *mode, bool ack)
{
    uint64_t n = msgs_or(500000);
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    js_preload(&c, stream, subject, storage, n);
    char dsubj[96], extra[160];
    snprintf(dsubj, sizeof dsubj, "ndbench.push.%d", (int)getpid());
    snprintf(extra, sizeof extra, "SUB %s 1\r\n", dsubj);
    rd_t r;
    int fd = conn_open_with(&r, RD_INITIAL, CONNECT_LINE_JS, extra);

    /* The create request goes out first and its answer is read after the deliveries: they
     * queue in the subscriber's socket meanwhile, and a failed create shows as no deliveries
     * (after --timeout) followed by the create's error. */
    char cfg[512], subj[512], body[1024];
    snprintf(cfg, sizeof cfg,
             "\"deliver_subject\":\"%s\",\"deliver_policy\":\"all\",\"ack_policy\":\"%s\"%s", dsubj,
             ack ? "explicit" : "none",
             ack ? ",\"ack_wait\":30000000000,\"max_ack_pending\":10000" : "");
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DURABLE.CREATE.%s.PUSH", stream);
    snprintf(body, sizeof body,
             "{\"stream_name\":\"%s\",\"config\":{\"durable_name\":\"PUSH\",%s}}", stream, cfg);
    char rec[1600];
    int rl = snprintf(rec, sizeof rec, "PUB %s %s.r%" PRIu64 " %zu\r\n%s\r\n", subj, c.inbox,
                      ++c.req, strlen(body), body);
    obuf_t o = {0};
    cpu_begin();
    double t0 = now_s();
    write_all(c.fd, rec, (size_t)rl);
    uint64_t got = 0;
    cons_read(&r, fd, &o, n, ack, &got);
    ob_add(&o, "PING\r\n", 6);
    ob_flush(&o, fd);
    rd_wait_pong(&r, NULL);
    ev_t ev;
    while (rd_next(&c.rd, &ev, false) != EV_MSG) {
    }
    js_check_reply(&ev, "CONSUMER.DURABLE.CREATE (push)");
    if (ack)
        js_wait_all_acked(&c, stream, "PUSH", n);
    double secs = now_s() - t0;
    char kv[96], hc[96], h[32];
    cpu_end(n, "msg", kv, sizeof kv, hc, sizeof hc);
    double rate = (double)n / secs;
    human_rate(h, sizeof h, rate);
    printf("RESULT mode=%s msgs=%" PRIu64 " size=%zu ack=%s storage=%s secs=%.4f "
           "msgs_per_s=%.0f%s\n",
           mode, n, g_opt.size, ack ? "explicit" : "none", storage, secs, rate, kv);
    printf("%s: %" PRIu64 " msgs of %zu B pushed from a %s stream to one subscriber%s in %.3f "
           "s: %s msgs/s%s\n",
           mode, n, g_opt.size, storage, ack ? ", each acked," : "", secs, h, hc);
    free(o.p);
    close(fd);
    rd_free(&r);
    js_close(&c);
    return 0;
}

static int
mode_jspush(void)
{
    return push_mode("jspush", false);
}

static int
mode_jspushack(void)
{
    return push_mode("jspushack", true);
}

/* The KV bucket `b` as the clients make it: stream KV_b on $KV.b.>, one message per subject,
 * direct gets allowed. */
static void
kv_bucket(jsc_t *c, const char *storage)
{
    char body[600];
    snprintf(body, sizeof body,
             "{\"name\":\"KV_b\",\"subjects\":[\"$KV.b.>\"],\"storage\":\"%s\","
             "\"retention\":\"limits\",\"max_msgs_per_subject\":1,\"discard\":\"new\","
             "\"allow_direct\":true,\"allow_rollup_hdrs\":true,\"deny_delete\":true,"
             "\"num_replicas\":1}",
             storage);
    js_stream_create_body(c, "KV_b", body);
}

/* One KV put of key k<key>: a publish to $KV.b.k<key> with a reply, written to fd. */
static void
kv_put_send(const jsc_t *c, uint64_t key, const char *payload)
{
    char rec[512];
    int hl =
        snprintf(rec, sizeof rec, "PUB $KV.b.k%" PRIu64 " %s.a %zu\r\n", key, c->inbox, g_opt.size);
    size_t tot = (size_t)hl + g_opt.size + 2;
    char *buf = tot <= sizeof rec ? rec : xmalloc(tot);
    if (buf != rec)
        memcpy(buf, rec, (size_t)hl);
    memcpy(buf + hl, payload, g_opt.size);
    memcpy(buf + hl + g_opt.size, "\r\n", 2);
    write_all(c->fd, buf, tot);
    if (buf != rec)
        free(buf);
}

static void
print_latency(const char *mode, const char *what, uint64_t *lat, uint64_t n, double secs,
              const char *kv, const char *hc)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    qsort(lat, n, sizeof *lat, cmp_u64);
    double p50 = pct_us(lat, n, 50), p90 = pct_us(lat, n, 90), p99 = pct_us(lat, n, 99);
    double mx = (double)lat[n - 1] / 1e3, mean = sum / (double)n / 1e3;
    printf("RESULT mode=%s ops=%" PRIu64 " size=%zu keys=%" PRIu64 " p50_us=%.1f p90_us=%.1f "
           "p99_us=%.1f max_us=%.1f mean_us=%.1f ops_per_s=%.0f%s\n",
           mode, n, g_opt.size, g_opt.keys, p50, p90, p99, mx, mean, (double)n / secs, kv);
    printf("%s: %" PRIu64 " %s of %zu B over %" PRIu64 " keys, one at a time: p50 %.1f us, p90 "
           "%.1f us, p99 %.1f us, max %.1f us (mean %.1f us, %.0f ops/s)%s\n",
           mode, n, what, g_opt.size, g_opt.keys, p50, p90, p99, mx, mean, (double)n / secs, hc);
}

/* kvput: sequential puts over --keys keys, each waiting for its PubAck. */
static int
mode_kvput(void)
{
    uint64_t n = msgs_or(20000), keys = g_opt.keys;
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    kv_bucket(&c, storage);
    check_payload();
    char *payload = xmalloc(g_opt.size);
    for (size_t j = 0; j < g_opt.size; j++)
        payload[j] = (char)('a' + j % 26);
    uint64_t *lat = xcalloc(n, sizeof *lat);
    cpu_begin();
    uint64_t total = g_opt.warmup + n;
    double t0 = 0;
    for (uint64_t i = 0; i < total; i++) {
        if (i == g_opt.warmup) {
            cpu_begin();
            t0 = now_s();
        }
        uint64_t a = now_ns();
        kv_put_send(&c, i % keys, payload);
        if (js_take_acks(&c, false) != 1)
            fail("more than one PubAck for one put");
        if (i >= g_opt.warmup)
            lat[i - g_opt.warmup] = now_ns() - a;
    }
    double secs = now_s() - t0;
    char kv[96], hc[96];
    cpu_end(n, "put", kv, sizeof kv, hc, sizeof hc);
    uint64_t want = total < keys ? total : keys;
    js_expect_msgs(&c, "KV_b", want);
    print_latency("kvput", "puts", lat, n, secs, kv, hc);
    free(lat);
    free(payload);
    js_close(&c);
    return 0;
}

/* kvget: --keys keys put first (untimed), then sequential direct gets of the last message of
 * $KV.b.k<i> ($JS.API.DIRECT.GET.KV_b.$KV.b.k<i>), each checked for its payload. */
static int
mode_kvget(void)
{
    uint64_t n = msgs_or(20000), keys = g_opt.keys;
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    jsc_t c;
    js_open(&c);
    kv_bucket(&c, storage);
    check_payload();
    char *payload = xmalloc(g_opt.size);
    for (size_t j = 0; j < g_opt.size; j++)
        payload[j] = (char)('a' + j % 26);
    for (uint64_t k = 0; k < keys; k++) {
        kv_put_send(&c, k, payload);
        if (js_take_acks(&c, false) != 1)
            fail("more than one PubAck for one put");
    }
    js_expect_msgs(&c, "KV_b", keys);
    uint64_t *lat = xcalloc(n, sizeof *lat);
    cpu_begin();
    uint64_t total = g_opt.warmup + n;
    double t0 = 0;
    ev_t ev;
    for (uint64_t i = 0; i < total; i++) {
        if (i == g_opt.warmup) {
            cpu_begin();
            t0 = now_s();
        }
        char rec[512];
        int rl = snprintf(rec, sizeof rec,
                          "PUB $JS.API.DIRECT.GET.KV_b.$KV.b.k%" PRIu64 " %s.g 0\r\n\r\n", i % keys,
                          c.inbox);
        uint64_t a = now_ns();
        write_all(c.fd, rec, (size_t)rl);
        while (rd_next(&c.rd, &ev, false) != EV_MSG) {
        }
        uint64_t b = now_ns();
        js_check_reply(&ev, "DIRECT.GET");
        if (ev.len - ev.hdr_len != g_opt.size)
            fail("DIRECT.GET: a value of %zu bytes, %zu expected", ev.len - ev.hdr_len, g_opt.size);
        if (i >= g_opt.warmup)
            lat[i - g_opt.warmup] = b - a;
    }
    double secs = now_s() - t0;
    char kv[96], hc[96];
    cpu_end(n, "get", kv, sizeof kv, hc, sizeof hc);
    print_latency("kvget", "direct gets", lat, n, secs, kv, hc);
    free(lat);
    free(payload);
    js_close(&c);
    return 0;
}

/* jspending: the server's RSS growth per delivered, unacknowledged message. The stream is in
 * memory by default, filled before the first reading, so that the growth is the consumer's
 * pending state (and not a file store's block cache); ack_wait is an hour, so nothing is
 * redelivered while the readings are taken. */
static int
mode_jspending(void)
{
    uint64_t n = msgs_or(200000), batch = g_opt.fetch ? g_opt.fetch : 1000;
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "memory";
    pid_t pid = find_server_pid(true);
    jsc_t c;
    js_open(&c);
    js_preload(&c, stream, subject, storage, n);
    char cfg[256];
    snprintf(cfg, sizeof cfg,
             "\"deliver_policy\":\"all\",\"ack_policy\":\"explicit\",\"ack_wait\":3600000000000,"
             "\"max_ack_pending\":%" PRIu64 ",\"max_waiting\":512",
             n + 1000);
    js_consumer_create(&c, stream, "PEND", cfg);
    sleep_us((long)g_opt.settle_ms * 1000);
    long before = rss_kb(pid);
    obuf_t o = {0};
    double t0 = now_s();
    pull_all(&c, &o, stream, "PEND", n, batch, false);
    double secs = now_s() - t0;
    uint64_t floor, pend;
    js_consumer_acks(&c, stream, "PEND", &floor, &pend);
    if (pend != n)
        fail("consumer PEND has %" PRIu64 " acks pending, %" PRIu64 " expected", pend, n);
    sleep_us((long)g_opt.settle_ms * 1000);
    long after = rss_kb(pid);
    double per = ((double)after - (double)before) * 1024.0 / (double)n;
    printf("RESULT mode=jspending msgs=%" PRIu64 " size=%zu batch=%" PRIu64 " storage=%s pid=%d "
           "rss_before_kb=%ld rss_after_kb=%ld bytes_per_pending=%.1f msgs_per_s=%.0f\n",
           n, g_opt.size, batch, storage, (int)pid, before, after, per, (double)n / secs);
    printf("jspending: %" PRIu64 " msgs pulled from a %s stream and left unacked; server RSS "
           "%ld -> %ld KiB: %.1f B per pending message\n",
           n, storage, before, after, per);
    free(o.p);
    js_close(&c);
    return 0;
}

/* jsidle: --consumers durable pull consumers on one empty stream (file storage unless
 * --storage), created with up to --inflight requests outstanding: the server's RSS growth per
 * consumer, and the creation rate. */
static int
mode_jsidle(void)
{
    uint64_t n = g_opt.consumers;
    const char *stream = stream_or("NDBENCH"), *subject = subject_or("ndbench.js");
    const char *storage = g_opt.storage ? g_opt.storage : "file";
    pid_t pid = find_server_pid(true);
    jsc_t c;
    js_open(&c);
    js_stream_create(&c, stream, subject, storage);
    sleep_us((long)g_opt.settle_ms * 1000);
    long before = rss_kb(pid);
    uint64_t w = (uint64_t)g_opt.inflight, sent = 0, got = 0;
    double t0 = now_s();
    ev_t ev;
    while (got < n) {
        if (sent < n && sent - got < w) {
            char subj[512], body[600], rec[1200];
            snprintf(subj, sizeof subj, "$JS.API.CONSUMER.DURABLE.CREATE.%s.I%" PRIu64, stream,
                     sent + 1);
            int bl = snprintf(body, sizeof body,
                              "{\"stream_name\":\"%s\",\"config\":{\"durable_name\":\"I%" PRIu64
                              "\",\"deliver_policy\":\"all\",\"ack_policy\":\"explicit\"}}",
                              stream, sent + 1);
            int rl = snprintf(rec, sizeof rec, "PUB %s %s.c %d\r\n%s\r\n", subj, c.inbox, bl, body);
            write_all(c.fd, rec, (size_t)rl);
            sent++;
            continue;
        }
        while (rd_next(&c.rd, &ev, false) != EV_MSG) {
        }
        js_check_reply(&ev, "CONSUMER.DURABLE.CREATE");
        if (memmem(ev.data, ev.len, "\"config\"", 8) == NULL)
            fail("not a consumer create response: %.*s", (int)ev.len, ev.data);
        got++;
    }
    double secs = now_s() - t0;
    sleep_us((long)g_opt.settle_ms * 1000);
    long after = rss_kb(pid);
    double per = ((double)after - (double)before) * 1024.0 / (double)n;
    printf("RESULT mode=jsidle consumers=%" PRIu64 " storage=%s pid=%d rss_before_kb=%ld "
           "rss_after_kb=%ld bytes_per_consumer=%.0f creates_per_s=%.0f\n",
           n, storage, (int)pid, before, after, per, (double)n / secs);
    printf("jsidle: %" PRIu64 " idle durable pull consumers on a %s stream, created in %.2f s "
           "(%.0f/s); server RSS %ld -> %ld KiB: %.0f B per consumer\n",
           n, storage, secs, (double)n / secs, before, after, per);
    js_close(&c);
    return 0;
}

/* No server: the rate of one write + fsync per message on a file in --dir, the baseline that
 * group commit under `sync_interval: always` is measured against. A record is the message plus
 * about what a file store adds to it (a header, the subject, a checksum). */
static int
mode_fsync(void)
{
    uint64_t n = msgs_or(2000);
    if (g_opt.dir == NULL)
        fail("--dir is required (a directory on the disk the store uses)");
    char path[4200];
    snprintf(path, sizeof path, "%s/ndbench-fsync.%d", g_opt.dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        fail("open %s: %s", path, strerror(errno));
    size_t reclen = g_opt.size + 48;
    char *rec = xmalloc(reclen);
    memset(rec, 'f', reclen);
    uint64_t *lat = xcalloc(n, sizeof *lat);
    double t0 = now_s();
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = now_ns();
        write_all(fd, rec, reclen);
        if (fsync(fd) != 0)
            fail("fsync %s: %s", path, strerror(errno));
        lat[i] = now_ns() - a;
    }
    double secs = now_s() - t0;
    close(fd);
    unlink(path);
    qsort(lat, n, sizeof *lat, cmp_u64);
    double p50 = pct_us(lat, n, 50), p99 = pct_us(lat, n, 99), rate = (double)n / secs;
    printf("RESULT mode=fsync msgs=%" PRIu64 " record=%zu secs=%.4f msgs_per_s=%.0f p50_us=%.1f "
           "p99_us=%.1f\n",
           n, reclen, secs, rate, p50, p99);
    printf("fsync: %" PRIu64 " appends of %zu B, each followed by fsync, in %s: %.0f per second "
           "(p50 %.1f us, p99 %.1f us)\n",
           n, reclen, g_opt.dir, rate, p50, p99);
    free(rec);
    free(lat);
    return 0;
}

static int
mode_wait(void)
{
    double deadline = now_s() + g_opt.timeout;
    for (;;) {
        int fd = sock_connect();
        if (fd >= 0) {
            rd_t r;
            rd_init(&r, fd, RD_SMALL);
            static const char hello[] = CONNECT_LINE "PING\r\n";
            write_all(fd, hello, sizeof hello - 1);
            rd_wait_pong(&r, NULL);
            rd_free(&r);
            close(fd);
            return 0;
        }
        if (now_s() > deadline)
            fail("%s:%d not ready after %.1f s: %s", g_opt.host, g_opt.port, g_opt.timeout,
                 strerror(errno));
        sleep_us(20000);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Command line */

static void
usage(FILE *f)
{
    fprintf(
        f,
        "Usage: ndbench MODE [options]\n"
        "Modes: pub pubsub fanout queue reqrep idleconns subs wait\n"
        "       jspub jspubid jssync jsmem jscreate jsfsync fsync (see the source's header)\n"
        "       jspull jspush jspushack kvput kvget jspending jsidle (consumers and KV)\n"
        "  -s, --server HOST    server address (default 127.0.0.1)\n"
        "  -p, --port PORT      server port (default 4222)\n"
        "  -n, --msgs N         messages (pub 10M, pubsub 4M, fanout 2M, queue 3M) or\n"
        "                       requests (reqrep 20000); jspub 1M, jspubid 500k, jssync 20000,\n"
        "                       jsmem 1M, jsfsync 50000 messages; jscreate 1000 streams;\n"
        "                       fsync 2000 appends; jspull, jspending 200k, jspush(ack) 500k\n"
        "                       preloaded messages; kvput, kvget 20000 operations\n"
        "  -z, --size BYTES     payload size (default 16)\n"
        "  -P, --pubs P         publishers in the pub mode (default 1)\n"
        "  -k, --subs K         subscribers in the fanout mode (default 5)\n"
        "  -q, --members Q      queue group members in the queue mode (default 4)\n"
        "  -c, --conns C        connections in the idleconns mode (default 10000)\n"
        "  -N, --nsubs N        subscriptions in the subs mode (default 100000)\n"
        "      --pid PID        server pid for the memory modes (default: found from --port)\n"
        "      --subject S      subject (subs mode: prefix) instead of ndbench.<mode>\n"
        "      --window BYTES   PING/PONG window of a publisher (default 1048576)\n"
        "      --lag BYTES      how far a subscriber may trail the publisher (default 16 MiB)\n"
        "      --timeout SEC    give up after this long without progress (default 10)\n"
        "      --warmup N       untimed requests before the reqrep and jssync measurement\n"
        "                       (default 1000)\n"
        "      --settle MS      pause before the second RSS reading, and after the subscribers\n"
        "                       of --sub-ports subscribed (default 500)\n"
        "      --sub-ports P,.. pubsub, fanout: subscribers connect to these ports in turn (other\n"
        "                       servers of a cluster; the publisher uses --port)\n"
        "      --batch N        idleconns connections awaiting their PONG at once (default "
        "256)\n"
        "      --inflight N     PubAcks outstanding in jspub, jspubid, jsmem, jsfsync and the\n"
        "                       preloads, consumer creates outstanding in jsidle (default 256)\n"
        "      --stream NAME    stream of the js modes (default NDBENCH; jscreate: prefix, NDBC)\n"
        "      --storage KIND   file or memory (default file; jsmem memory)\n"
        "      --dir DIR        directory of the fsync mode (on the store's disk)\n"
        "      --fetch N        pull batch of jspull (default 100) and jspending (1000)\n"
        "      --keys K         keys of kvput and kvget (default 1000)\n"
        "      --consumers C    idle consumers of jsidle (default 10000)\n"
        "      --ws             connect as WebSocket clients (--port: the websocket port)\n"
        "  -h, --help\n"
        "Every mode prints `RESULT mode=<mode> key=value ...` and one line for humans.\n"
        "Run idleconns, subs, jsmem, jspending and jsidle against a freshly started server.\n");
}

static uint64_t
parse_u64(const char *name, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* Accept k/M suffixes (and 1e6 forms) for counts: -n 10M. */
    if (*end == 'k' || *end == 'K')
        v *= 1e3, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1e6, end++;
    if (errno != 0 || *end != '\0' || v < 0 || v > 1e18) {
        fprintf(stderr, "ndbench: bad value for %s: %s\n", name, s);
        exit(2);
    }
    return (uint64_t)(v + 0.5);
}

int
main(int argc, char **argv)
{
    enum {
        O_PID = 256,
        O_SUBJECT,
        O_WINDOW,
        O_LAG,
        O_TIMEOUT,
        O_WARMUP,
        O_SETTLE,
        O_BATCH,
        O_STREAM,
        O_STORAGE,
        O_DIR,
        O_INFLIGHT,
        O_FETCH,
        O_KEYS,
        O_CONSUMERS,
        O_SUB_PORTS,
        O_WS,
    };
    static const struct option longopts[] = {
        {"server", required_argument, NULL, 's'},
        {"port", required_argument, NULL, 'p'},
        {"msgs", required_argument, NULL, 'n'},
        {"size", required_argument, NULL, 'z'},
        {"pubs", required_argument, NULL, 'P'},
        {"subs", required_argument, NULL, 'k'},
        {"members", required_argument, NULL, 'q'},
        {"conns", required_argument, NULL, 'c'},
        {"nsubs", required_argument, NULL, 'N'},
        {"pid", required_argument, NULL, O_PID},
        {"subject", required_argument, NULL, O_SUBJECT},
        {"window", required_argument, NULL, O_WINDOW},
        {"lag", required_argument, NULL, O_LAG},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"settle", required_argument, NULL, O_SETTLE},
        {"batch", required_argument, NULL, O_BATCH},
        {"stream", required_argument, NULL, O_STREAM},
        {"storage", required_argument, NULL, O_STORAGE},
        {"dir", required_argument, NULL, O_DIR},
        {"inflight", required_argument, NULL, O_INFLIGHT},
        {"fetch", required_argument, NULL, O_FETCH},
        {"keys", required_argument, NULL, O_KEYS},
        {"consumers", required_argument, NULL, O_CONSUMERS},
        {"sub-ports", required_argument, NULL, O_SUB_PORTS},
        {"ws", no_argument, NULL, O_WS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    g_opt = (opts_t){
        .host = "127.0.0.1",
        .port = 4222,
        .size = 16,
        .pubs = 1,
        .subs = 5,
        .members = 4,
        .conns = 10000,
        .nsubs = 100000,
        .window = 1 * MIB,
        .lag = 16 * MIB,
        .timeout = 10,
        .warmup = 1000,
        .settle_ms = 500,
        .batch = 256,
        .inflight = 256,
        .keys = 1000,
        .consumers = 10000,
    };
    int c;
    while ((c = getopt_long(argc, argv, "s:p:n:z:P:k:q:c:N:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            g_opt.host = optarg;
            break;
        case 'p':
            g_opt.port = (int)parse_u64("--port", optarg);
            break;
        case 'n':
            g_opt.msgs = parse_u64("--msgs", optarg);
            break;
        case 'z':
            g_opt.size = (size_t)parse_u64("--size", optarg);
            break;
        case 'P':
            g_opt.pubs = (int)parse_u64("--pubs", optarg);
            break;
        case 'k':
            g_opt.subs = (int)parse_u64("--subs", optarg);
            break;
        case 'q':
            g_opt.members = (int)parse_u64("--members", optarg);
            break;
        case 'c':
            g_opt.conns = parse_u64("--conns", optarg);
            break;
        case 'N':
            g_opt.nsubs = parse_u64("--nsubs", optarg);
            break;
        case O_PID:
            g_opt.pid = (pid_t)parse_u64("--pid", optarg);
            break;
        case O_SUBJECT:
            g_opt.subject = optarg;
            break;
        case O_WINDOW:
            g_opt.window = (size_t)parse_u64("--window", optarg);
            break;
        case O_LAG:
            g_opt.lag = (size_t)parse_u64("--lag", optarg);
            break;
        case O_TIMEOUT:
            g_opt.timeout = strtod(optarg, NULL);
            break;
        case O_WARMUP:
            g_opt.warmup = parse_u64("--warmup", optarg);
            break;
        case O_SUB_PORTS:
            g_opt.sub_ports = optarg;
            break;
        case O_WS:
            g_opt.ws = true;
            g_ws_rd = xcalloc(WS_MAX_FD, sizeof *g_ws_rd);
            break;
        case O_SETTLE:
            g_opt.settle_ms = (int)parse_u64("--settle", optarg);
            break;
        case O_BATCH:
            g_opt.batch = (int)parse_u64("--batch", optarg);
            break;
        case O_STREAM:
            g_opt.stream = optarg;
            break;
        case O_STORAGE:
            if (strcmp(optarg, "file") != 0 && strcmp(optarg, "memory") != 0) {
                fprintf(stderr, "ndbench: --storage is file or memory\n");
                return 2;
            }
            g_opt.storage = optarg;
            break;
        case O_DIR:
            g_opt.dir = optarg;
            break;
        case O_INFLIGHT:
            g_opt.inflight = (int)parse_u64("--inflight", optarg);
            break;
        case O_FETCH:
            g_opt.fetch = parse_u64("--fetch", optarg);
            break;
        case O_KEYS:
            g_opt.keys = parse_u64("--keys", optarg);
            break;
        case O_CONSUMERS:
            g_opt.consumers = parse_u64("--consumers", optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    g_opt.mode = g_mode = argv[optind];
    if (g_opt.pubs < 1 || g_opt.subs < 1 || g_opt.members < 1 || g_opt.conns < 1 ||
        g_opt.nsubs < 1 || g_opt.batch < 1 || g_opt.timeout <= 0 || g_opt.window < 1 ||
        g_opt.inflight < 1 || g_opt.keys < 1 || g_opt.consumers < 1) {
        fprintf(stderr, "ndbench: counts must be at least 1 and --timeout positive\n");
        return 2;
    }
    if (g_opt.subject != NULL && strlen(g_opt.subject) > 200) {
        fprintf(stderr, "ndbench: --subject is limited to 200 characters\n");
        return 2;
    }
    if (g_opt.stream != NULL && strlen(g_opt.stream) > 200) {
        fprintf(stderr, "ndbench: --stream is limited to 200 characters\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    resolve();
    resolve_sub_ports();

    static const struct {
        const char *name;
        int (*run)(void);
    } modes[] = {
        {"pub", mode_pub},           {"pubsub", mode_pubsub},   {"fanout", mode_fanout},
        {"queue", mode_queue},       {"reqrep", mode_reqrep},   {"idleconns", mode_idleconns},
        {"subs", mode_subs},         {"wait", mode_wait},       {"jspub", mode_jspub},
        {"jspubid", mode_jspubid},   {"jssync", mode_jssync},   {"jsmem", mode_jsmem},
        {"jscreate", mode_jscreate}, {"jsfsync", mode_jsfsync}, {"fsync", mode_fsync},
        {"jspull", mode_jspull},     {"jspush", mode_jspush},   {"jspushack", mode_jspushack},
        {"kvput", mode_kvput},       {"kvget", mode_kvget},     {"jspending", mode_jspending},
        {"jsidle", mode_jsidle},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(modes[i].name, g_opt.mode) == 0)
            return modes[i].run();
    fprintf(stderr, "ndbench: unknown mode '%s'\n", g_opt.mode);
    usage(stderr);
    return 2;
}
