/* mqttbench: an MQTT 3.1.1 load generator over raw TCP sockets (no client library), so that
 * natsd, nats-server and mosquitto are measured with the same client on the same machine
 * (bench/mqtt.sh runs them side by side).
 *
 * Usage: mqttbench MODE -p PORT [options]       (mqttbench --help lists the options)
 *
 * Modes:
 *   pubsub  one subscriber (SUBSCRIBE at -q) and one publisher (PUBLISH at -q) on one topic,
 *           both clean sessions on their own connections; N messages (-n) of S bytes (-z).
 *           The rate is N over the time from the first publish written to the N-th message
 *           received. QoS 1: every PUBLISH the subscriber gets is acked at once (PUBACKs
 *           batched per read), and the publisher keeps at most --inflight PUBACKs outstanding.
 *   idle    C connections (-c), each CONNECT (clean session, keep-alive off) and, with
 *           --sub-qos 0 or 1, one SUBSCRIBE to a topic of its own; when all have their CONNACK
 *           (and SUBACK) the server's RSS growth (VmRSS of --pid) per connection is reported.
 *           A warm-up connection comes first (nats-server creates its MQTT streams on the first
 *           one), then --settle seconds, then the first RSS reading; --settle again before the
 *           second.
 *   wait    connects and sends CONNECT until a CONNACK with return code 0 comes or --timeout
 *           passes; exits 0 when the server serves MQTT. mqtt.sh uses it after starting a
 *           server, and to skip a server that has no MQTT.
 *
 * Output: one machine-readable line, `RESULT mode=<mode> key=value ...`, and one for humans. On
 * failure (refused, closed, a wrong CONNACK, a message that never came within --timeout) it
 * prints `mqttbench: <mode>: <why>` to stderr and exits 1. With --pid, pubsub adds the server's
 * user+system CPU time per message (srv_cpu_ns_per_op, from /proc/<pid>/stat).
 *
 * Flow control: the publisher never runs more than --window messages ahead of what the
 * subscriber has received (both ends live in this one process, so it knows), which bounds what
 * any server queues: a QoS 0 message is never dropped for a slow subscriber and the rate is
 * the end-to-end one. Both connections are non-blocking and served by one poll loop.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct {
    const char *mode;
    int port;
    long n;
    int size;
    int qos;
    int conns;
    int sub_qos;
    long window;
    int inflight;
    int pid;
    double settle;
    double timeout;
    const char *topic;
} opt = {.port = 1883,
         .n = 200000,
         .size = 16,
         .qos = 0,
         .conns = 1000,
         .sub_qos = -1,
         .window = 20000,
         .inflight = 1000,
         .pid = 0,
         .settle = 1.0,
         .timeout = 60,
         .topic = "mqttbench/t"};

static void
fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mqttbench: %s: ", opt.mode ? opt.mode : "?");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- buffers and the encoder ---- */

typedef struct {
    uint8_t *b;
    size_t len, cap, off; /* off: bytes already consumed (read side) or written (write side) */
} buf_t;

static void
buf_reserve(buf_t *x, size_t more)
{
    if (x->len + more <= x->cap)
        return;
    size_t c = x->cap ? x->cap : 4096;
    while (c < x->len + more)
        c *= 2;
    x->b = realloc(x->b, c);
    if (x->b == NULL)
        fail("out of memory");
    x->cap = c;
}

static void
buf_put(buf_t *x, const void *p, size_t n)
{
    buf_reserve(x, n);
    memcpy(x->b + x->len, p, n);
    x->len += n;
}

static void
buf_u8(buf_t *x, uint8_t v)
{
    buf_put(x, &v, 1);
}

static void
buf_u16(buf_t *x, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    buf_put(x, b, 2);
}

static void
buf_str(buf_t *x, const char *s)
{
    buf_u16(x, (uint16_t)strlen(s));
    buf_put(x, s, strlen(s));
}

static void
buf_rl(buf_t *x, size_t v)
{
    do {
        uint8_t b = (uint8_t)(v % 128);
        v /= 128;
        buf_u8(x, v ? (uint8_t)(b | 0x80) : b);
    } while (v);
}

/* Drops the consumed prefix of a buffer. */
static void
buf_compact(buf_t *x)
{
    if (x->off == 0)
        return;
    memmove(x->b, x->b + x->off, x->len - x->off);
    x->len -= x->off;
    x->off = 0;
}

static void
put_connect(buf_t *x, const char *cid)
{
    buf_t body = {0};
    buf_str(&body, "MQTT");
    buf_u8(&body, 4);
    buf_u8(&body, 0x02); /* clean session */
    buf_u16(&body, 0);   /* keep-alive off: idle connections must stay */
    buf_str(&body, cid);
    buf_u8(x, 0x10);
    buf_rl(x, body.len);
    buf_put(x, body.b, body.len);
    free(body.b);
}

static void
put_subscribe(buf_t *x, uint16_t pid, const char *topic, int qos)
{
    size_t rl = 2 + 2 + strlen(topic) + 1;
    buf_u8(x, 0x82);
    buf_rl(x, rl);
    buf_u16(x, pid);
    buf_str(x, topic);
    buf_u8(x, (uint8_t)qos);
}

/* ---- sockets ---- */

static int
dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        fail("socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Writes what it can of x without blocking. Returns: false when the peer is gone. */
static bool
flush_some(int fd, buf_t *x)
{
    while (x->off < x->len) {
        ssize_t k = send(fd, x->b + x->off, x->len - x->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (k <= 0)
            return false;
        x->off += (size_t)k;
    }
    if (x->off == x->len)
        x->off = x->len = 0;
    return true;
}

static void
send_all(int fd, buf_t *x)
{
    while (x->off < x->len) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, (int)(opt.timeout * 1000)) != 1)
            fail("timed out writing");
        if (!flush_some(fd, x))
            fail("connection closed while writing: %s", strerror(errno));
    }
    x->off = x->len = 0;
}

/* Reads what is there into x. Returns: false at end of stream. */
static bool
read_some(int fd, buf_t *x)
{
    buf_compact(x);
    buf_reserve(x, 1 << 20);
    ssize_t k = recv(fd, x->b + x->len, x->cap - x->len, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
    if (k <= 0)
        return false;
    x->len += (size_t)k;
    return true;
}

/* The next whole packet in x: its first byte in *h, its body in *body, its length in *blen.
 * Returns: false when x holds no whole packet yet. */
static bool
next_packet(buf_t *x, uint8_t *h, const uint8_t **body, size_t *blen)
{
    size_t avail = x->len - x->off, i = 1, rl = 0, mul = 1;
    const uint8_t *p = x->b + x->off;
    if (avail < 2)
        return false;
    for (;; i++) {
        if (i >= avail)
            return false;
        if (i > 4)
            fail("malformed remaining length from the server");
        rl += (size_t)(p[i] & 0x7F) * mul;
        mul *= 128;
        if ((p[i] & 0x80) == 0)
            break;
    }
    i++;
    if (avail < i + rl)
        return false;
    *h = p[0];
    *body = p + i;
    *blen = rl;
    x->off += i + rl;
    return true;
}

/* Blocks until one packet comes on fd. */
static void
wait_packet(int fd, buf_t *rx, uint8_t *h, const uint8_t **body, size_t *blen, const char *what)
{
    double deadline = now_s() + opt.timeout;
    while (!next_packet(rx, h, body, blen)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline - now_s()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) != 1)
            fail("no %s within %.0f s", what, opt.timeout);
        if (!read_some(fd, rx))
            fail("connection closed waiting for %s", what);
    }
}

/* Connects, sends CONNECT (and a SUBSCRIBE when qos >= 0) and waits for the CONNACK (and the
 * SUBACK). Returns: the socket, or -1 with errno set when the connect itself fails. */
static int
mqtt_open(const char *cid, const char *topic, int qos, buf_t *rx)
{
    int fd = dial();
    if (fd < 0)
        return -1;
    buf_t tx = {0};
    put_connect(&tx, cid);
    if (qos >= 0)
        put_subscribe(&tx, 1, topic, qos);
    send_all(fd, &tx);
    free(tx.b);
    uint8_t h;
    const uint8_t *b;
    size_t n;
    wait_packet(fd, rx, &h, &b, &n, "CONNACK");
    if (h != 0x20 || n != 2 || b[1] != 0)
        fail("CONNACK 0x%02x return code %d", h, n == 2 ? b[1] : -1);
    if (qos >= 0) {
        wait_packet(fd, rx, &h, &b, &n, "SUBACK");
        if (h != 0x90 || n != 3 || b[2] != qos)
            fail("SUBACK 0x%02x granted %d (asked %d)", h, n == 3 ? b[2] : -1, qos);
    }
    return fd;
}

/* ---- the server process ---- */

static long
rss_kib(void)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", opt.pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fail("cannot open %s: %s", path, strerror(errno));
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            v = strtol(line + 6, NULL, 10);
    fclose(f);
    if (v < 0)
        fail("no VmRSS in %s", path);
    return v;
}

/* The server's user+system CPU seconds, or -1 without --pid. */
static double
srv_cpu_s(void)
{
    if (opt.pid <= 0)
        return -1;
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", opt.pid);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(line, sizeof line, f) == NULL)
        fail("cannot read %s", path);
    fclose(f);
    /* Fields after the command name (which may hold spaces): state is field 3, utime 14. */
    char *p = strrchr(line, ')');
    unsigned long ut = 0, st = 0;
    if (p == NULL ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        fail("cannot parse %s", path);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void
sleep_s(double s)
{
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- modes ---- */

static int
mode_wait(void)
{
    double deadline = now_s() + opt.timeout;
    for (;;) {
        int fd = dial();
        if (fd >= 0) {
            buf_t tx = {0}, rx = {0};
            put_connect(&tx, "mqttbench-wait");
            bool sent = flush_some(fd, &tx);
            struct pollfd p = {.fd = fd, .events = POLLIN};
            uint8_t h;
            const uint8_t *b;
            size_t n;
            bool ok = false;
            while (sent && poll(&p, 1, 250) == 1 && read_some(fd, &rx)) {
                if (next_packet(&rx, &h, &b, &n)) {
                    ok = h == 0x20 && n == 2 && b[1] == 0;
                    break;
                }
            }
            close(fd);
            if (ok) {
                printf("RESULT mode=wait ready=1\n");
                return 0;
            }
            free(tx.b);
            free(rx.b);
        }
        if (now_s() > deadline)
            fail("no CONNACK from 127.0.0.1:%d within %.1f s", opt.port, opt.timeout);
        sleep_s(0.1);
    }
}

static int
mode_pubsub(void)
{
    char cid[64];
    buf_t srx = {0}, prx = {0}, stx = {0}, ptx = {0};
    snprintf(cid, sizeof cid, "mqttbench-sub-%d", (int)getpid());
    int sfd = mqtt_open(cid, opt.topic, opt.qos, &srx);
    snprintf(cid, sizeof cid, "mqttbench-pub-%d", (int)getpid());
    int pfd = mqtt_open(cid, NULL, -1, &prx);
    if (sfd < 0 || pfd < 0)
        fail("connect to 127.0.0.1:%d: %s", opt.port, strerror(errno));

    char *payload = malloc((size_t)opt.size + 1);
    memset(payload, 'x', (size_t)opt.size);
    size_t tlen = strlen(opt.topic);
    size_t rl = 2 + tlen + (opt.qos ? 2 : 0) + (size_t)opt.size;

    long sent = 0, received = 0, acked = 0;
    uint16_t next_pid = 1;
    double cpu0 = srv_cpu_s(), t0 = 0, t_last = 0;
    double deadline = now_s() + opt.timeout;
    while (received < opt.n || (opt.qos && acked < opt.n)) {
        /* Fill the publisher's buffer within the window and the in-flight limit. */
        while (sent < opt.n && sent - received < opt.window &&
               (opt.qos == 0 || sent - acked < opt.inflight) && ptx.len < (256u << 10)) {
            buf_u8(&ptx, (uint8_t)(0x30 | (opt.qos << 1)));
            buf_rl(&ptx, rl);
            buf_u16(&ptx, (uint16_t)tlen);
            buf_put(&ptx, opt.topic, tlen);
            if (opt.qos) {
                buf_u16(&ptx, next_pid);
                next_pid = next_pid == 65535 ? 1 : next_pid + 1;
            }
            buf_put(&ptx, payload, (size_t)opt.size);
            if (sent == 0)
                t0 = now_s();
            sent++;
        }
        if (!flush_some(pfd, &ptx))
            fail("publisher connection closed after %ld sent", sent);
        if (!flush_some(sfd, &stx))
            fail("subscriber connection closed after %ld received", received);
        struct pollfd p[2] = {
            {.fd = sfd, .events = (short)(POLLIN | (stx.len ? POLLOUT : 0))},
            {.fd = pfd, .events = (short)(POLLIN | (ptx.len ? POLLOUT : 0))},
        };
        int ms = (int)((deadline - now_s()) * 1000);
        if (ms <= 0 || poll(p, 2, ms) <= 0)
            fail("timed out: %ld sent, %ld received, %ld acked of %ld", sent, received, acked,
                 opt.n);
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (!read_some(sfd, &srx))
                fail("subscriber connection closed after %ld received", received);
            uint8_t h;
            const uint8_t *b;
            size_t n;
            while (next_packet(&srx, &h, &b, &n)) {
                if ((h & 0xF0) != 0x30)
                    continue;
                received++;
                if (((h >> 1) & 3) == 1) {
                    size_t tl = ((size_t)b[0] << 8) | b[1];
                    uint8_t ack[4] = {0x40, 0x02, b[2 + tl], b[3 + tl]};
                    buf_put(&stx, ack, 4);
                }
            }
            t_last = now_s();
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (!read_some(pfd, &prx))
                fail("publisher connection closed after %ld sent", sent);
            uint8_t h;
            const uint8_t *b;
            size_t n;
            while (next_packet(&prx, &h, &b, &n))
                if (h == 0x40)
                    acked++;
        }
    }
    if (received > opt.n)
        fail("%ld messages received for %ld sent", received, opt.n);
    double el = t_last - t0, cpu1 = srv_cpu_s();
    double rate = (double)opt.n / el;
    printf("RESULT mode=pubsub qos=%d n=%ld size=%d elapsed_s=%.4f msgs_per_s=%.0f", opt.qos, opt.n,
           opt.size, el, rate);
    if (cpu0 >= 0)
        printf(" srv_cpu_s=%.3f srv_cpu_ns_per_op=%.0f", cpu1 - cpu0,
               (cpu1 - cpu0) * 1e9 / (double)opt.n);
    printf("\npubsub qos %d: %ld msgs of %d B in %.3f s: %.0f msgs/s\n", opt.qos, opt.n, opt.size,
           el, rate);
    close(sfd);
    close(pfd);
    return 0;
}

static int
mode_idle(void)
{
    if (opt.pid <= 0)
        fail("idle needs --pid");
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)opt.conns + 64) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char cid[64], topic[64];
    buf_t rx = {0};
    snprintf(topic, sizeof topic, "mqttbench/idle/warmup");
    int w = mqtt_open("mqttbench-warmup", topic, opt.sub_qos, &rx);
    if (w < 0)
        fail("connect: %s", strerror(errno));
    close(w);
    sleep_s(opt.settle);
    long before = rss_kib();

    int *fds = calloc((size_t)opt.conns, sizeof *fds);
    double t0 = now_s();
    for (int i = 0; i < opt.conns; i++) {
        snprintf(cid, sizeof cid, "mqttbench-idle-%d-%d", (int)getpid(), i);
        snprintf(topic, sizeof topic, "mqttbench/idle/%d", i);
        rx.len = rx.off = 0;
        fds[i] = mqtt_open(cid, topic, opt.sub_qos, &rx);
        if (fds[i] < 0)
            fail("connection %d: %s", i, strerror(errno));
    }
    double el = now_s() - t0;
    sleep_s(opt.settle);
    long after = rss_kib();
    /* Still connected? A closed one reads as end of stream. */
    for (int i = 0; i < opt.conns; i++) {
        char c;
        ssize_t k = recv(fds[i], &c, 1, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            fail("connection %d was closed by the server while idle", i);
    }
    double per = (double)(after - before) * 1024.0 / opt.conns;
    printf("RESULT mode=idle conns=%d sub_qos=%d rss_before_kib=%ld rss_after_kib=%ld "
           "bytes_per_conn=%.0f connects_per_s=%.0f\n",
           opt.conns, opt.sub_qos, before, after, per, opt.conns / el);
    printf("idle: %d connections%s: %.0f bytes each (RSS %ld -> %ld KiB), %.0f connects/s\n",
           opt.conns, opt.sub_qos >= 0 ? " with one subscription each" : "", per, before, after,
           opt.conns / el);
    for (int i = 0; i < opt.conns; i++)
        close(fds[i]);
    free(fds);
    return 0;
}

static void
usage(int rc)
{
    printf("usage: mqttbench pubsub|idle|wait -p PORT [options]\n"
           "  -n N            messages (pubsub; default %ld)\n"
           "  -z BYTES        payload size (default %d)\n"
           "  -q QOS          publish and subscribe QoS, 0 or 1 (default %d)\n"
           "  -c CONNS        idle connections (default %d)\n"
           "  --sub-qos Q     idle: one SUBSCRIBE per connection at Q (0 or 1; default none)\n"
           "  --window N      pubsub: most messages published ahead of received (default %ld)\n"
           "  --inflight N    pubsub QoS 1: most PUBACKs outstanding (default %d)\n"
           "  --topic T       pubsub topic (default %s)\n"
           "  --pid PID       the server's pid (RSS, CPU)\n"
           "  --settle S      idle: seconds before each RSS reading (default %.1f)\n"
           "  --timeout S     hang guard (default %.0f)\n",
           opt.n, opt.size, opt.qos, opt.conns, opt.window, opt.inflight, opt.topic, opt.settle,
           opt.timeout);
    exit(rc);
}

int
main(int argc, char **argv)
{
    if (argc < 2)
        usage(2);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
        usage(0);
    opt.mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            usage(2);
        if (strcmp(a, "-p") == 0)
            opt.port = atoi(v);
        else if (strcmp(a, "-n") == 0)
            opt.n = atol(v);
        else if (strcmp(a, "-z") == 0)
            opt.size = atoi(v);
        else if (strcmp(a, "-q") == 0)
            opt.qos = atoi(v);
        else if (strcmp(a, "-c") == 0)
            opt.conns = atoi(v);
        else if (strcmp(a, "--sub-qos") == 0)
            opt.sub_qos = atoi(v);
        else if (strcmp(a, "--window") == 0)
            opt.window = atol(v);
        else if (strcmp(a, "--inflight") == 0)
            opt.inflight = atoi(v);
        else if (strcmp(a, "--topic") == 0)
            opt.topic = v;
        else if (strcmp(a, "--pid") == 0)
            opt.pid = atoi(v);
        else if (strcmp(a, "--settle") == 0)
            opt.settle = atof(v);
        else if (strcmp(a, "--timeout") == 0)
            opt.timeout = atof(v);
        else
            usage(2);
        i++;
    }
    if (opt.qos < 0 || opt.qos > 1 || opt.sub_qos > 1 || opt.n < 1 || opt.size < 0 ||
        opt.window < 1 || opt.inflight < 1 || opt.inflight > 65000)
        usage(2);
    if (strcmp(opt.mode, "pubsub") == 0)
        return mode_pubsub();
    if (strcmp(opt.mode, "idle") == 0)
        return mode_idle();
    if (strcmp(opt.mode, "wait") == 0)
        return mode_wait();
    usage(2);
}
