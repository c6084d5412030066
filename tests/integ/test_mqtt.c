/* MQTT 3.1.1 clients (issue 17): the server as a process with an `mqtt { port }`, driven by raw
 * sockets that encode MQTT packets themselves (a tiny encoder below), by NATS clients over the
 * raw NATS protocol (the harness) to see the topic <-> subject mapping from the other side, and
 * by the mosquitto command line clients (mosquitto_pub, mosquitto_sub) as real MQTT clients.
 *
 * Every expectation was probed against nats-server 2.9.10 (integ.mqtt.reference runs this file
 * against /usr/sbin/nats-server), which needs `server_name`, `jetstream { store_dir }` and
 * `mqtt { port }` to serve MQTT. Where 2.9.10 is knowingly wrong and later nats-server releases
 * (2.10+) fixed it, the test asserts 2.9.10's behaviour for the reference and the fixed one for
 * natsd, branching on nd_integ_is_reference() with a comment that says so:
 *   - `#` and `+` at the start of a filter match subjects starting with `$` in 2.9.10 (even the
 *     server's own `$MQTT.*` and `$JS.*` traffic); [MQTT-4.7.2-1] says they must not.
 *   - A NUL in a PUBLISH topic is published as is in 2.9.10; [MQTT-4.7.3-2] forbids it and 2.10+
 *     closes the connection.
 *   - Reserved fixed-header flags of CONNECT and PINGREQ are not checked by 2.9.10; 2.10+ closes
 *     ([MQTT-2.2.2-2]). (SUBSCRIBE, PUBLISH QoS 3 and PUBREL are checked by both.)
 *   - max_payload is not applied to an MQTT PUBLISH in 2.9.10; 2.10+ closes the connection.
 *   - 2.9.10 has no QoS 2: a QoS 2 PUBLISH, PUBREC, PUBREL or PUBCOMP closes the connection and a
 *     QoS 2 subscription is granted QoS 1. natsd does QoS 2 as 2.10+ (test_mqtt_natsd.c tests
 *     it); here it runs with 2.10's reject_qos2_publish and downgrade_qos2_subscribe, which give
 *     2.9.10's answers to a PUBLISH and a SUBSCRIBE, and PUBREC, PUBREL and PUBCOMP get 2.10's.
 * Everything else (return codes, session present, retained and will messages, takeover) is
 * 2.9.10's behaviour and asserted for both.
 *
 * Synchronisation is a protocol round trip: a CONNACK, SUBACK, PUBACK or PINGRESP on an MQTT
 * connection, a PONG on a NATS one, a mosquitto client's own debug line saying it received a
 * SUBACK, or its exit. mosquitto_sub runs with -W (its own timeout) or -E (exit after the SUBACK)
 * and every wait for a child has the harness's hang guard. Nothing is asserted on time.
 *
 * Some expectations pin one of several behaviours the MQTT spec allows, the one nats-server has
 * (natsd is to match it, a client may see the difference): packet ids of deliveries numbered
 * from 1 per session, one copy per matching subscription for overlapping filters, the will of a
 * connection replaced by a takeover dropped. Their tests say so. Orders the spec leaves open
 * (retained messages for a wildcard filter, two subscriptions' copies) are read unordered.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "mqtt_util.h"

/* ---- the server ---- */

static nd_integ_conf_t conf;
static nd_integ_server_t *srv;
static int mqtt_port;
static char conf_text[1024];

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The harness waits for the client port's line; the MQTT port has a line of its own (nats-server
 * logs it before the client port's, but a test that waits for what it needs does not depend on
 * that order). */
static void
wait_mqtt_listening(void)
{
    char line[96];
    snprintf(line, sizeof line, "Listening for MQTT clients on mqtt://127.0.0.1:%d", mqtt_port);
    /* natsd before issue 17 says so when it reads the config (logged before the client port's
     * line): fail at once rather than after the hang guard, in every test. */
    cr_assert(!nd_integ_server_log_has(srv, 0, "MQTT is configured but not supported"),
              "the server under test has no MQTT");
    nd_integ_server_wait_log(srv, 0, line);
}

/* Starts the server with MQTT on a free port, JetStream in the conf directory, `mqtt_extra` (may
 * be NULL) inside the mqtt block and `extra` (may be NULL) appended to the config. */
static void
up_with(const char *extra, const char *mqtt_extra)
{
    char store[256];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    srv = NULL;
    for (int tries = 0; srv == NULL; tries++) {
        cr_assert(tries < 10, "no free MQTT port after 10 tries");
        mqtt_port = nd_integ_free_port(); /* below the ephemeral range */
        snprintf(conf_text, sizeof conf_text,
                 "server_name: mqtt_test\njetstream { store_dir: \"%s\" }\n"
                 "mqtt { host: 127.0.0.1, port: %d%s%s }\n%s",
                 store, mqtt_port, mqtt_extra ? ", " : "", mqtt_extra ? mqtt_extra : "",
                 extra ? extra : "");
        srv = nd_integ_conf_try_start(&conf, conf_text);
    }
    wait_mqtt_listening();
}

static void
up(const char *extra)
{
    up_with(extra, NULL);
}

/* Stops the server and starts it again on the same config (same store, same MQTT port). */
static void
restart(void)
{
    nd_integ_server_stop(srv);
    srv = nd_integ_conf_start(&conf, conf_text);
    wait_mqtt_listening();
}

/* Children (mosquitto clients) still running when a test fails are killed in fini. */
#define MAX_CHILDREN 16
static pid_t children[MAX_CHILDREN];

static void
suite_fini(void)
{
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    if (srv != NULL)
        nd_integ_conf_stop(srv, &conf);
    srv = NULL;
    nd_integ_cleanup();
}

TestSuite(mqtt, .fini = suite_fini, .timeout = 60);

/* ---- the MQTT encoder ---- */

typedef struct {
    const char *cid;
    bool persistent;   /* clean session off */
    int level;         /* protocol level, 0 means 4 */
    const char *proto; /* protocol name, NULL means "MQTT" */
    uint8_t flags_or;  /* extra connect flag bits (the reserved bit) */
    uint8_t header;    /* fixed header byte, 0 means 0x10 */
    const char *user, *pass;
    const char *will_topic, *will_msg;
    int will_qos;
    bool will_retain;
} conn_opts_t;

static void
connect_pkt(mbuf_t *out, const conn_opts_t *o)
{
    mbuf_t b = {.n = 0};
    put_str(&b, o->proto ? o->proto : "MQTT");
    put_u8(&b, (uint8_t)(o->level ? o->level : 4));
    uint8_t f = o->flags_or;
    if (!o->persistent)
        f |= 0x02;
    if (o->will_topic != NULL)
        f |= (uint8_t)(0x04 | (o->will_qos << 3) | (o->will_retain ? 0x20 : 0));
    if (o->user != NULL)
        f |= 0x80;
    if (o->pass != NULL)
        f |= 0x40;
    put_u8(&b, f);
    put_u16(&b, 30); /* keep-alive, seconds */
    put_str(&b, o->cid ? o->cid : "");
    if (o->will_topic != NULL) {
        put_str(&b, o->will_topic);
        put_str(&b, o->will_msg);
    }
    if (o->user != NULL)
        put_str(&b, o->user);
    if (o->pass != NULL)
        put_str(&b, o->pass);
    pkt(out, o->header ? o->header : 0x10, &b);
}

static void
publish_pktn(mbuf_t *out, const char *topic, size_t tlen, const void *msg, size_t mlen, int qos,
             uint16_t pid, bool retain)
{
    mbuf_t b = {.n = 0};
    put_strn(&b, topic, tlen);
    if (qos > 0)
        put_u16(&b, pid);
    put(&b, msg, mlen);
    pkt(out, (uint8_t)(0x30 | (qos << 1) | (retain ? 1 : 0)), &b);
}

static void
publish_pkt(mbuf_t *out, const char *topic, const char *msg, int qos, uint16_t pid, bool retain)
{
    publish_pktn(out, topic, strlen(topic), msg, strlen(msg), qos, pid, retain);
}

/* SUBSCRIBE with n filters, filters[i] at qos[i], fixed header h (0x82 when right). */
static void
subscribe_pkt(mbuf_t *out, uint8_t h, uint16_t pid, const char *const *filters, const int *qos,
              size_t n)
{
    mbuf_t b = {.n = 0};
    put_u16(&b, pid);
    for (size_t i = 0; i < n; i++) {
        put_str(&b, filters[i]);
        put_u8(&b, (uint8_t)qos[i]);
    }
    pkt(out, h, &b);
}

/* A packet whose body is only a packet identifier (PUBACK, PUBREC, PUBREL, PUBCOMP). */
static void
id_pkt(mbuf_t *out, uint8_t h, uint16_t pid)
{
    mbuf_t b = {.n = 0};
    put_u16(&b, pid);
    pkt(out, h, &b);
}

/* ---- raw MQTT connections ---- */

static int
mq_dial(void)
{
    return tcp_dial(mqtt_port);
}

static void
send_pkt(int fd, const mbuf_t *m)
{
    send_raw(fd, m->b, m->n);
}

/* Reads one whole packet (fixed header, remaining length, body) into out. Returns: false at end
 * of stream before its first byte. */
static bool
recv_pkt(int fd, mbuf_t *out)
{
    out->n = 0;
    uint8_t h;
    if (!recv_n(fd, &h, 1))
        return false;
    put_u8(out, h);
    size_t len = 0, mul = 1;
    for (int i = 0;; i++) {
        uint8_t b;
        cr_assert(i < 4 && recv_n(fd, &b, 1), "bad remaining length from the server");
        put_u8(out, b);
        len += (size_t)(b & 0x7F) * mul;
        mul *= 128;
        if ((b & 0x80) == 0)
            break;
    }
    cr_assert(out->n + len <= sizeof out->b, "packet from the server too large");
    cr_assert(len == 0 || recv_n(fd, out->b + out->n, len), "end of stream inside a packet");
    out->n += len;
    return true;
}

/* Reads the next packet and fails unless it is exactly want (wn bytes). */
static void
expect_pkt_at(const char *file, int line, int fd, const void *want, size_t wn)
{
    mbuf_t got;
    char *w = nd_integ_escape(want, wn, 200);
    cr_assert(recv_pkt(fd, &got), "%s:%d: end of stream, wanted %s", file, line, w);
    char *g = nd_integ_escape(got.b, got.n, 200);
    cr_assert(got.n == wn && memcmp(got.b, want, wn) == 0, "%s:%d: got %s, wanted %s", file, line,
              g, w);
    free(g);
    free(w);
}
#define expect_pkt(fd, lit) expect_pkt_at(__FILE__, __LINE__, (fd), (lit), sizeof(lit) - 1)
#define expect_mbuf(fd, m)  expect_pkt_at(__FILE__, __LINE__, (fd), (m)->b, (m)->n)

/* Fails unless the server closes the connection without sending anything more. */
static void
expect_close_at(const char *file, int line, int fd)
{
    mbuf_t got;
    if (recv_pkt(fd, &got)) {
        char *g = nd_integ_escape(got.b, got.n, 200);
        cr_assert_fail("%s:%d: wanted a close, got %s", file, line, g);
    }
    close(fd);
}
#define expect_close(fd) expect_close_at(__FILE__, __LINE__, (fd))

/* PINGREQ, PINGRESP: the round trip that says everything sent before was handled. */
static void
mq_ping_at(const char *file, int line, int fd)
{
    static const uint8_t req[] = {0xC0, 0x00};
    send_raw(fd, req, 2);
    expect_pkt_at(file, line, fd, "\xD0\x00", 2);
}
#define mq_ping(fd) mq_ping_at(__FILE__, __LINE__, (fd))

/* Connects with o and expects CONNACK with session-present sp and return code rc. */
static int
mq_open_opts_at(const char *file, int line, const conn_opts_t *o, int sp, int rc)
{
    int fd = mq_dial();
    mbuf_t m;
    connect_pkt(&m, o);
    send_pkt(fd, &m);
    uint8_t want[4] = {0x20, 0x02, (uint8_t)sp, (uint8_t)rc};
    expect_pkt_at(file, line, fd, want, 4);
    return fd;
}
#define mq_open_opts(o, sp, rc) mq_open_opts_at(__FILE__, __LINE__, (o), (sp), (rc))

/* A clean-session connection with client id cid, accepted. */
static int
mq_open_at(const char *file, int line, const char *cid)
{
    conn_opts_t o = {.cid = cid};
    return mq_open_opts_at(file, line, &o, 0, 0);
}
#define mq_open(cid) mq_open_at(__FILE__, __LINE__, (cid))

static void
mq_send_disconnect(int fd)
{
    send_raw(fd, "\xE0\x00", 2);
}

/* Subscribes to one filter at qos and expects the SUBACK granting granted. */
static void
mq_sub_at(const char *file, int line, int fd, uint16_t pid, const char *filter, int qos,
          int granted)
{
    mbuf_t m;
    subscribe_pkt(&m, 0x82, pid, &filter, &qos, 1);
    send_pkt(fd, &m);
    uint8_t want[5] = {0x90, 0x03, (uint8_t)(pid >> 8), (uint8_t)pid, (uint8_t)granted};
    expect_pkt_at(file, line, fd, want, 5);
}
#define mq_sub(fd, pid, filter, qos, granted)                                                      \
    mq_sub_at(__FILE__, __LINE__, (fd), (pid), (filter), (qos), (granted))

/* As mq_sub, for a filter that the reference lets match the server's own `$MQTT` traffic (`#`):
 * PUBLISH packets on `$` topics before the SUBACK are skipped (nats-server 2.9.10 delivers the
 * session record that the SUBSCRIBE itself writes, before the SUBACK). */
static void
mq_sub_dollar(int fd, uint16_t pid, const char *filter)
{
    mbuf_t m;
    int qos = 0;
    subscribe_pkt(&m, 0x82, pid, &filter, &qos, 1);
    send_pkt(fd, &m);
    uint8_t want[5] = {0x90, 0x03, (uint8_t)(pid >> 8), (uint8_t)pid, 0};
    for (;;) {
        cr_assert(recv_pkt(fd, &m), "end of stream before the SUBACK");
        size_t i = 1;
        while (m.b[i] & 0x80)
            i++;
        i++;
        if (nd_integ_is_reference() && (m.b[0] & 0xF0) == 0x30 && m.n > i + 2 && m.b[i + 2] == '$')
            continue;
        char *g = nd_integ_escape(m.b, m.n, 200);
        cr_assert(m.n == 5 && memcmp(m.b, want, 5) == 0, "not the SUBACK: %s", g);
        free(g);
        return;
    }
}

/* Sends a PUBLISH; QoS 1 waits for its PUBACK, QoS 0 for a PINGRESP. */
static void
mq_pub_at(const char *file, int line, int fd, const char *topic, const char *msg, int qos,
          uint16_t pid, bool retain)
{
    mbuf_t m;
    publish_pkt(&m, topic, msg, qos, pid, retain);
    send_pkt(fd, &m);
    if (qos == 1) {
        uint8_t want[4] = {0x40, 0x02, (uint8_t)(pid >> 8), (uint8_t)pid};
        expect_pkt_at(file, line, fd, want, 4);
    } else {
        mq_ping_at(file, line, fd);
    }
}
#define mq_pub(fd, topic, msg, qos, pid, retain)                                                   \
    mq_pub_at(__FILE__, __LINE__, (fd), (topic), (msg), (qos), (pid), (retain))

/* Expects the next packet to be a PUBLISH with exactly these fields. */
static void
expect_publish_at(const char *file, int line, int fd, const char *topic, const char *msg, int qos,
                  uint16_t pid, bool retain)
{
    mbuf_t m;
    publish_pkt(&m, topic, msg, qos, pid, retain);
    expect_pkt_at(file, line, fd, m.b, m.n);
}
#define expect_publish(fd, topic, msg, qos, pid, retain)                                           \
    expect_publish_at(__FILE__, __LINE__, (fd), (topic), (msg), (qos), (pid), (retain))

/* Splits a PUBLISH packet (m) into its parts. Returns: false when it is not a PUBLISH. */
static bool
parse_publish(const mbuf_t *m, char *topic, size_t tcap, char *msg, size_t mcap, int *qos,
              bool *retain, unsigned *pid)
{
    if ((m->b[0] & 0xF0) != 0x30)
        return false;
    size_t i = 1;
    while (m->b[i] & 0x80)
        i++;
    i++;
    size_t tl = ((size_t)m->b[i] << 8) | m->b[i + 1];
    i += 2;
    cr_assert(tl < tcap);
    memcpy(topic, m->b + i, tl);
    topic[tl] = '\0';
    i += tl;
    *qos = (m->b[0] >> 1) & 3;
    *retain = (m->b[0] & 1) != 0;
    *pid = 0;
    if (*qos > 0) {
        *pid = ((unsigned)m->b[i] << 8) | m->b[i + 1];
        i += 2;
    }
    cr_assert(m->n - i < mcap);
    memcpy(msg, m->b + i, m->n - i);
    msg[m->n - i] = '\0';
    return true;
}

/* Reads PUBLISH packets until one on topic `until`; returns whether one on topic `seen` came
 * before it. Other packets fail the test. */
static bool
publish_seen_before(int fd, const char *seen, const char *until)
{
    bool found = false;
    for (;;) {
        mbuf_t m;
        cr_assert(recv_pkt(fd, &m), "end of stream before the PUBLISH on %s", until);
        cr_assert((m.b[0] & 0xF0) == 0x30, "not a PUBLISH: 0x%02x", m.b[0]);
        size_t i = 1;
        while (m.b[i] & 0x80)
            i++;
        i++;
        size_t tl = ((size_t)m.b[i] << 8) | m.b[i + 1];
        const char *t = (const char *)m.b + i + 2;
        if (tl == strlen(until) && memcmp(t, until, tl) == 0)
            return found;
        if (tl == strlen(seen) && memcmp(t, seen, tl) == 0)
            found = true;
    }
}

/* ---- NATS connections ---- */

/* A NATS connection subscribed to subject (NULL: none), the SUB confirmed by a PONG. */
static nd_integ_conn_t *
nats_open(const char *subject)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    ND_SEND(c, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    if (subject != NULL) {
        char line[256];
        snprintf(line, sizeof line, "SUB %s 1\r\n", subject);
        ND_SENDS(c, line);
    }
    ND_PING(c);
    return c;
}

/* The next MSG frame on a subject not starting with `$` (the server's own JetStream and $MQTT
 * traffic that a `>` subscriber also sees is skipped). Returns: owned by the caller. */
static char *
nats_next_user_msg(nd_integ_conn_t *c)
{
    for (;;) {
        char *f = nd_integ_read_frame(c);
        cr_assert(f != NULL, "end of stream on the NATS connection");
        if (strncmp(f, "MSG $", 5) != 0)
            return f;
        free(f);
    }
}

/* ---- mosquitto clients as children ---- */

typedef struct {
    pid_t pid;
    int out; /* stdout and stderr together */
    char buf[16384];
    size_t len;
    int slot;
} child_t;

/* Starts a mosquitto client tool with args (NULL-terminated), its "-p PORT" added first. */
static void
child_start(child_t *ch, const char *tool, const char *const *args)
{
    int p[2];
    cr_assert(pipe(p) == 0);
    char port[16];
    snprintf(port, sizeof port, "%d", mqtt_port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        /* stdbuf: the tools' stdout is a pipe here, fully buffered unless told otherwise, and
         * the test reads their lines (a SUBACK seen) while they run. */
        char *argv[40] = {"stdbuf", "-oL", (char *)tool, "-h", "127.0.0.1", "-p", port};
        int n = 7;
        for (size_t i = 0; args[i] != NULL && n < 39; i++)
            argv[n++] = (char *)args[i];
        argv[n] = NULL;
        execvp("stdbuf", argv);
        _exit(127);
    }
    close(p[1]);
    memset(ch, 0, sizeof *ch);
    ch->pid = pid;
    ch->out = p[0];
    ch->slot = -1;
    for (int i = 0; i < MAX_CHILDREN; i++)
        if (children[i] == 0) {
            children[i] = pid;
            ch->slot = i;
            break;
        }
}

/* Reads more output. Returns: false at end of stream. */
static bool
child_read(child_t *ch, long long deadline)
{
    long long left = deadline - now_ms();
    struct pollfd pf = {.fd = ch->out, .events = POLLIN};
    cr_assert(left > 0 && poll(&pf, 1, (int)left) == 1, "%d: no output in time; so far:\n%.*s",
              (int)ch->pid, (int)ch->len, ch->buf);
    cr_assert(ch->len + 1 < sizeof ch->buf, "too much output");
    ssize_t k = read(ch->out, ch->buf + ch->len, sizeof ch->buf - ch->len - 1);
    if (k <= 0)
        return false;
    ch->len += (size_t)k;
    ch->buf[ch->len] = '\0';
    return true;
}

/* Waits until the output has a line equal to line (or containing it when partial). */
static void
child_wait_line_at(const char *file, int line_no, child_t *ch, const char *line, bool partial)
{
    long long deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    for (;;) {
        ch->buf[ch->len] = '\0';
        for (char *s = ch->buf; *s != '\0';) {
            char *nl = strchr(s, '\n');
            if (nl == NULL)
                break;
            size_t n = (size_t)(nl - s);
            if (partial ? memmem(s, n, line, strlen(line)) != NULL
                        : (n == strlen(line) && memcmp(s, line, n) == 0))
                return;
            s = nl + 1;
        }
        cr_assert(child_read(ch, deadline), "%s:%d: output ended without \"%s\":\n%s", file,
                  line_no, line, ch->buf);
    }
}
#define child_wait_line(ch, line) child_wait_line_at(__FILE__, __LINE__, (ch), (line), false)
/* mosquitto_sub -d: the SUBACK has come, so the subscription is in place. */
#define child_wait_suback(ch) child_wait_line_at(__FILE__, __LINE__, (ch), " received SUBACK", true)

/* Waits for the child to exit (reading its output to the end). Returns: its exit status. */
static int
child_wait_exit_at(const char *file, int line, child_t *ch)
{
    long long deadline = now_ms() + ND_INTEG_TIMEOUT_MS;
    while (child_read(ch, deadline)) {
    }
    close(ch->out);
    int st = 0;
    while (waitpid(ch->pid, &st, WNOHANG) == 0) {
        cr_assert(now_ms() < deadline, "%s:%d: %d did not exit", file, line, (int)ch->pid);
        /* The output has ended, so the exit is moments away: this only reaps it. */
        usleep(1000);
    }
    if (ch->slot >= 0)
        children[ch->slot] = 0;
    cr_assert(WIFEXITED(st), "%s:%d: died by a signal:\n%s", file, line, ch->buf);
    return WEXITSTATUS(st);
}
#define child_wait_exit(ch) child_wait_exit_at(__FILE__, __LINE__, (ch))

/* Runs a tool to completion and fails unless it exits with want; returns its output. */
static void
run_tool(child_t *ch, const char *tool, const char *const *args, int want)
{
    child_start(ch, tool, args);
    int rc = child_wait_exit(ch);
    cr_assert_eq(rc, want, "%s exited %d, wanted %d:\n%s", tool, rc, want, ch->buf);
}

/* ---- CONNECT and CONNACK ---- */

Test(mqtt, connect_and_ping)
{
    up(NULL);
    int fd = mq_open("c1");
    mq_ping(fd);
    mq_ping(fd);
    mq_send_disconnect(fd);
    expect_close(fd);
}

/* Level 4 is MQTT 3.1.1. Level 5 (MQTT 5) and level 3 named "MQTT" get return code 1
 * (unacceptable protocol version) and the close; level 3 under its 3.1 name "MQIsdp" is closed
 * at once, with no CONNACK (nats-server checks the name first and only knows "MQTT"). */
Test(mqtt, connect_protocol_levels)
{
    up(NULL);
    conn_opts_t v5 = {.cid = "v5", .level = 5};
    expect_close(mq_open_opts(&v5, 0, 1));
    conn_opts_t v3 = {.cid = "v3", .level = 3};
    expect_close(mq_open_opts(&v3, 0, 1));

    conn_opts_t isdp = {.cid = "v3i", .level = 3, .proto = "MQIsdp"};
    int fd = mq_dial();
    mbuf_t m;
    connect_pkt(&m, &isdp);
    send_pkt(fd, &m);
    expect_close(fd);

    conn_opts_t bad = {.cid = "x", .proto = "MQTX"};
    fd = mq_dial();
    connect_pkt(&m, &bad);
    send_pkt(fd, &m);
    expect_close(fd);
}

/* An empty client id is allowed with a clean session (the server makes one up) and refused
 * with return code 2 (identifier rejected) without one. */
Test(mqtt, connect_empty_client_id)
{
    up(NULL);
    conn_opts_t keep = {.cid = "", .persistent = true};
    expect_close(mq_open_opts(&keep, 0, 2));
    conn_opts_t clean = {.cid = ""};
    int fd = mq_open_opts(&clean, 0, 0);
    mq_ping(fd);
    close(fd);
}

/* The reserved bit of the connect flags set: closed without a CONNACK. */
Test(mqtt, connect_reserved_flag)
{
    up(NULL);
    conn_opts_t o = {.cid = "r", .flags_or = 0x01};
    int fd = mq_dial();
    mbuf_t m;
    connect_pkt(&m, &o);
    send_pkt(fd, &m);
    expect_close(fd);
}

/* The first packet must be a CONNECT, and there is only one. */
Test(mqtt, connect_order)
{
    up(NULL);
    int fd = mq_dial();
    mbuf_t m;
    publish_pkt(&m, "a", "x", 0, 0, false);
    send_pkt(fd, &m);
    expect_close(fd);

    fd = mq_open("twice");
    conn_opts_t o = {.cid = "twice2"};
    connect_pkt(&m, &o);
    send_pkt(fd, &m);
    expect_close(fd);
}

Test(mqtt, connect_auth)
{
    up("authorization { users: [ {user: u, password: p} ] }\n");
    /* Return code 5, not authorized, then the close, for every wrong or missing credential. */
    conn_opts_t none = {.cid = "a1"};
    expect_close(mq_open_opts(&none, 0, 5));
    conn_opts_t badpw = {.cid = "a2", .user = "u", .pass = "x"};
    expect_close(mq_open_opts(&badpw, 0, 5));
    conn_opts_t baduser = {.cid = "a3", .user = "x", .pass = "p"};
    expect_close(mq_open_opts(&baduser, 0, 5));
    conn_opts_t nopass = {.cid = "a4", .user = "u"};
    expect_close(mq_open_opts(&nopass, 0, 5));
    conn_opts_t ok = {.cid = "a5", .user = "u", .pass = "p"};
    int fd = mq_open_opts(&ok, 0, 0);
    mq_ping(fd);
    close(fd);
}

/* ---- malformed packets ---- */

/* A remaining length of five bytes (four is the most) closes the connection, before and after
 * the CONNECT. */
Test(mqtt, remaining_length_5_bytes)
{
    up(NULL);
    static const uint8_t pub5[] = {0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    int fd = mq_open("rl");
    send_raw(fd, pub5, sizeof pub5);
    expect_close(fd);

    static const uint8_t conn5[] = {0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0x01};
    fd = mq_dial();
    send_raw(fd, conn5, sizeof conn5);
    expect_close(fd);
}

/* Fixed-header flags that [MQTT-2.2.2-2] fixes: SUBSCRIBE must have 0010, PUBREL 0010; a PUBLISH
 * with QoS 3 is malformed. Each closes the connection. */
Test(mqtt, fixed_header_flags)
{
    up(NULL);
    mbuf_t m;
    const char *f = "a";
    int q = 0;
    int fd = mq_open("f1");
    subscribe_pkt(&m, 0x80, 1, &f, &q, 1);
    send_pkt(fd, &m);
    expect_close(fd);

    fd = mq_open("f2");
    publish_pkt(&m, "a", "x", 1, 1, false);
    m.b[0] = 0x36; /* QoS bits 11 */
    send_pkt(fd, &m);
    expect_close(fd);

    fd = mq_open("f3");
    id_pkt(&m, 0x60, 7);
    send_pkt(fd, &m);
    expect_close(fd);

    /* CONNECT with 0001 and PINGREQ with 0001: nats-server 2.9.10 does not look at these flags
     * and goes on; 2.10+ (and natsd) close as [MQTT-2.2.2-2] says. */
    conn_opts_t o = {.cid = "f4", .header = 0x11};
    fd = mq_dial();
    connect_pkt(&m, &o);
    send_pkt(fd, &m);
    if (nd_integ_is_reference()) {
        expect_pkt(fd, "\x20\x02\x00\x00");
        send_raw(fd, "\xC1\x00", 2);
        expect_pkt(fd, "\xD0\x00");
        close(fd);
    } else {
        expect_close(fd);
        fd = mq_open("f5");
        send_raw(fd, "\xC1\x00", 2);
        expect_close(fd);
    }

    /* DISCONNECT with 0001 and UNSUBSCRIBE with 0000: both close, 2.9.10 too. */
    fd = mq_open("f6");
    send_raw(fd, "\xE1\x00", 2);
    expect_close(fd);
    fd = mq_open("f7");
    mbuf_t b = {.n = 0};
    put_u16(&b, 4);
    put_str(&b, "x");
    pkt(&m, 0xA0, &b);
    send_pkt(fd, &m);
    expect_close(fd);

    /* A PINGREQ with a remaining length of 1: 2.9.10 skips the byte and answers; 2.10+ (and
     * natsd) close, a PINGREQ has no body. */
    fd = mq_open("f8");
    send_raw(fd, "\xC0\x01\x00", 3);
    if (nd_integ_is_reference()) {
        expect_pkt(fd, "\xD0\x00");
        close(fd);
    } else {
        expect_close(fd);
    }
}

/* Packet types 0 and 15 are reserved, CONNACK, SUBACK and the others are the server's to send,
 * and a PUBLISH too short for its own topic length is malformed: each closes the connection. */
Test(mqtt, unexpected_packets)
{
    up(NULL);
    static const struct {
        const char *what;
        uint8_t bytes[6];
        size_t n;
    } cases[] = {
        {"type 0", {0x00, 0x00}, 2},
        {"type 15", {0xF0, 0x00}, 2},
        {"CONNACK", {0x20, 0x02, 0x00, 0x00}, 4},
        {"SUBACK", {0x90, 0x03, 0x00, 0x01, 0x00}, 5},
        {"UNSUBACK", {0xB0, 0x02, 0x00, 0x01}, 4},
        {"PINGRESP", {0xD0, 0x00}, 2},
        {"PUBLISH topic length 5 in 2 bytes", {0x30, 0x02, 0x00, 0x05}, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nd_integ_context("%s", cases[i].what);
        int fd = mq_open("up");
        send_raw(fd, cases[i].bytes, cases[i].n);
        expect_close(fd);
    }
    nd_integ_context(NULL);
}

/* The rules between the connect flags and the payload ([MQTT-3.1.2-11..22]): each broken one
 * closes the connection without a CONNACK. Client ids with a space, a dot or 200 characters are
 * fine (nats-server hashes them for its own names). */
Test(mqtt, connect_flag_rules)
{
    up(NULL);
    static const struct {
        const char *what;
        uint8_t flags;
        const char *fields[3];
    } bad[] = {
        {"will QoS 3", 0x02 | 0x04 | 0x18, {"c", "w/t", "m"}},
        {"will retain without will", 0x02 | 0x20, {"c"}},
        {"will QoS without will", 0x02 | 0x08, {"c"}},
        {"password without user name", 0x02 | 0x40, {"c", "secret"}},
        {"will topic with a wildcard", 0x02 | 0x04, {"c", "w/#", "m"}},
        {"empty will topic", 0x02 | 0x04, {"c", "", "m"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nd_integ_context("%s", bad[i].what);
        mbuf_t b = {.n = 0}, m;
        put_str(&b, "MQTT");
        put_u8(&b, 4);
        put_u8(&b, bad[i].flags);
        put_u16(&b, 30);
        for (size_t k = 0; k < 3 && bad[i].fields[k] != NULL; k++)
            put_str(&b, bad[i].fields[k]);
        pkt(&m, 0x10, &b);
        int fd = mq_dial();
        send_pkt(fd, &m);
        expect_close(fd);
    }
    nd_integ_context(NULL);

    static char long_id[201];
    memset(long_id, 'c', 200);
    const char *ids[] = {"a b", "a.b", long_id};
    for (size_t i = 0; i < 3; i++) {
        int fd = mq_open(ids[i]);
        mq_ping(fd);
        close(fd);
    }
}

/* ---- topics in PUBLISH ---- */

/* A space (no NATS subject can hold one), a '.' (the NATS separator; 2.10+ would map it to
 * "//", 2.9.10 refuses it), a wildcard ([MQTT-3.3.2-2]) or an empty topic in a PUBLISH close
 * the connection. */
Test(mqtt, publish_bad_topics)
{
    up(NULL);
    static const char *const bad[] = {"a b", "a.b", "a/+", "a/#", "+", "#", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nd_integ_context("topic \"%s\"", bad[i]);
        int fd = mq_open("bt");
        mbuf_t m;
        publish_pkt(&m, bad[i], "x", 0, 0, false);
        send_pkt(fd, &m);
        expect_close(fd);
    }
    nd_integ_context(NULL);
}

/* A NUL in the topic. nats-server 2.9.10 publishes it as is, the NUL inside the NATS subject;
 * [MQTT-4.7.3-2] forbids it and 2.10+ closes the connection, as natsd does. */
Test(mqtt, publish_topic_nul)
{
    up(NULL);
    /* `*`: one token, so the server's own multi-token `$MQTT`/`$JS` traffic stays out. */
    nd_integ_conn_t *n = nats_open("*");
    int fd = mq_open("nul");
    mbuf_t m;
    publish_pktn(&m, "a\0b", 3, "hi", 2, 0, 0, false);
    send_pkt(fd, &m);
    if (nd_integ_is_reference()) {
        mq_ping(fd);
        ND_EXPECT(n, "MSG a\0b 1 2\r\nhi\r\n");
        close(fd);
    } else {
        expect_close(fd);
    }
    nd_integ_conn_close(n);
}

/* A PUBLISH over max_payload. nats-server 2.9.10 does not apply max_payload to MQTT and
 * delivers it; 2.10+ closes the connection (natsd too). */
Test(mqtt, publish_over_max_payload)
{
    up("max_payload: 1000\n");
    nd_integ_conn_t *n = nats_open("big");
    int fd = mq_open("big");
    static char body[2001];
    memset(body, 'x', 2000);
    mbuf_t m;
    publish_pkt(&m, "big", body, 0, 0, false);
    send_pkt(fd, &m);
    if (nd_integ_is_reference()) {
        mq_ping(fd);
        char *f = nd_integ_read_frame(n);
        cr_assert(strncmp(f, "MSG big 1 2000\r\n", 16) == 0, "%.40s", f);
        free(f);
        close(fd);
    } else {
        expect_close(fd);
    }
    nd_integ_conn_close(n);
}

/* A message of almost 1 MiB (under the default max_payload of 1 MiB, with room for the header
 * that 2.10+ counts in) arrives whole: the server reads it in many pieces. */
Test(mqtt, publish_large)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open("big");
    int fd = mq_open("big");
    size_t len = 1024 * 1024 - 1000;
    char *body = malloc(len);
    memset(body, 'y', len);
    /* Too big for mbuf_t: the header by hand, then the body. */
    uint8_t h[16];
    size_t rl = 2 + 3 + len, hn = 0;
    h[hn++] = 0x30;
    do {
        uint8_t b = (uint8_t)(rl % 128);
        rl /= 128;
        h[hn++] = rl ? (uint8_t)(b | 0x80) : b;
    } while (rl);
    static const uint8_t topic[5] = {0x00, 0x03, 'b', 'i', 'g'};
    memcpy(h + hn, topic, sizeof topic);
    send_raw(fd, h, hn + 5);
    send_raw(fd, body, len);
    mq_ping(fd);
    char *f = nd_integ_read_frame(n);
    static const char head[] = "MSG big 1 1047576\r\n";
    cr_assert(strncmp(f, head, sizeof head - 1) == 0, "%.40s", f);
    cr_assert(memcmp(f + sizeof head - 1, body, len) == 0 &&
                  strcmp(f + sizeof head - 1 + len, "\r\n") == 0,
              "the body differs");
    free(f);
    free(body);
    close(fd);
    nd_integ_conn_close(n);
}

/* ---- QoS 1 and QoS 2 handshakes ---- */

Test(mqtt, qos_handshakes)
{
    up_with(NULL, nd_integ_is_reference() ? NULL : "reject_qos2_publish: true");
    mbuf_t m;
    /* QoS 1: PUBACK with the same id. */
    int fd = mq_open("q1");
    mq_pub(fd, "q/1", "x", 1, 5, false);
    /* A PUBACK for an id the server never sent is ignored. */
    id_pkt(&m, 0x40, 9);
    send_pkt(fd, &m);
    mq_ping(fd);
    close(fd);

    /* QoS 1 with packet id 0: closed ([MQTT-2.3.1-1]). */
    fd = mq_open("q1z");
    publish_pkt(&m, "q/1", "x", 1, 0, false);
    send_pkt(fd, &m);
    expect_close(fd);

    /* QoS 2 is not supported by nats-server 2.9.10: a QoS 2 PUBLISH closes the connection (as
     * 2.10+ with reject_qos2_publish), and so do PUBREC, PUBREL (right flags) and PUBCOMP for
     * any id. */
    fd = mq_open("q2");
    publish_pkt(&m, "q/2", "x", 2, 5, false);
    send_pkt(fd, &m);
    expect_close(fd);
    static const uint8_t hs[] = {0x50, 0x62, 0x70};
    for (size_t i = 0; i < sizeof hs; i++) {
        nd_integ_context("packet 0x%02x", hs[i]);
        fd = mq_open("q2h");
        id_pkt(&m, hs[i], 7);
        send_pkt(fd, &m);
        if (nd_integ_is_reference()) {
            expect_close(fd);
            continue;
        }
        /* 2.10+ (natsd): a PUBREL for an id it holds no message of is completed (PUBCOMP);
         * a PUBREC or PUBCOMP for an id it never sent is ignored. */
        if (hs[i] == 0x62)
            expect_pkt(fd, "\x70\x02\x00\x07");
        mq_ping(fd);
        close(fd);
    }
    nd_integ_context(NULL);
}

/* ---- SUBSCRIBE and UNSUBSCRIBE ---- */

Test(mqtt, subscribe_granted_qos)
{
    up_with(NULL, nd_integ_is_reference() ? NULL : "downgrade_qos2_subscribe: true");
    mbuf_t m;
    int fd = mq_open("s1");
    /* QoS 0, 1 and 2: QoS 2 is granted as 1 (2.9.10; 2.10+ with downgrade_qos2_subscribe). */
    static const char *const f3[] = {"x/y", "x/z", "x/w"};
    static const int q3[] = {0, 1, 2};
    subscribe_pkt(&m, 0x82, 3, f3, q3, 3);
    send_pkt(fd, &m);
    expect_pkt(fd, "\x90\x05\x00\x03\x00\x01\x01");
    /* A filter with a space is refused with 0x80 in its slot; the connection stays. */
    mq_sub(fd, 4, "a b", 0, 0x80);
    /* Packet identifier 0 is answered as it is. */
    mq_sub(fd, 0, "x/v", 1, 1);
    /* UNSUBSCRIBE of a filter never subscribed: UNSUBACK all the same. */
    mbuf_t b = {.n = 0};
    put_u16(&b, 4);
    put_str(&b, "nothere");
    pkt(&m, 0xA2, &b);
    send_pkt(fd, &m);
    expect_pkt(fd, "\xB0\x02\x00\x04");
    mq_ping(fd);
    close(fd);

    /* Return codes per filter: a '#' that is not last, or a '.' (no NATS mapping in 2.9.10), get
     * 0x80 each, the good ones beside them their QoS. */
    fd = mq_open("s1b");
    static const char *const f4[] = {"ok/1", "a/#/b", "a.b", "ok/2"};
    static const int q4[] = {1, 0, 0, 0};
    subscribe_pkt(&m, 0x82, 5, f4, q4, 4);
    send_pkt(fd, &m);
    expect_pkt(fd, "\x90\x06\x00\x05\x01\x80\x80\x00");
    mq_ping(fd);
    close(fd);

    /* An empty filter: closed ([MQTT-4.7.3-1]). */
    fd = mq_open("s4");
    const char *empty = "";
    int q0 = 0;
    subscribe_pkt(&m, 0x82, 1, &empty, &q0, 1);
    send_pkt(fd, &m);
    expect_close(fd);

    /* UNSUBSCRIBE without any filter: closed ([MQTT-3.10.3-2]). */
    fd = mq_open("s5");
    mbuf_t u = {.n = 0};
    put_u16(&u, 4);
    pkt(&m, 0xA2, &u);
    send_pkt(fd, &m);
    expect_close(fd);

    /* A requested QoS of 3 is malformed: closed. */
    fd = mq_open("s2");
    const char *f = "a";
    int q = 3;
    subscribe_pkt(&m, 0x82, 1, &f, &q, 1);
    send_pkt(fd, &m);
    expect_close(fd);

    /* A SUBSCRIBE without any filter: closed ([MQTT-3.8.3-3]). */
    fd = mq_open("s3");
    subscribe_pkt(&m, 0x82, 1, NULL, NULL, 0);
    send_pkt(fd, &m);
    expect_close(fd);
}

/* An UNSUBSCRIBE stops the delivery. */
Test(mqtt, unsubscribe_stops_delivery)
{
    up(NULL);
    int s = mq_open("us");
    mq_sub(s, 1, "u/1", 0, 0);
    mq_sub(s, 2, "u/2", 0, 0);
    int p = mq_open("up");
    mq_pub(p, "u/1", "one", 0, 0, false);
    expect_publish(s, "u/1", "one", 0, 0, false);
    mbuf_t b = {.n = 0}, m;
    put_u16(&b, 3);
    put_str(&b, "u/1");
    pkt(&m, 0xA2, &b);
    send_pkt(s, &m);
    expect_pkt(s, "\xB0\x02\x00\x03");
    mq_pub(p, "u/1", "gone", 0, 0, false);
    mq_pub(p, "u/2", "two", 0, 0, false);
    expect_publish(s, "u/2", "two", 0, 0, false);
    close(s);
    close(p);
}

/* ---- topic <-> subject ---- */

/* An MQTT topic as the NATS subject a `>` subscriber sees: '/' becomes '.', and an empty level
 * (leading, trailing or doubled '/') keeps a '/' as its token. */
Test(mqtt, topic_to_subject)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open(">");
    static const struct {
        const char *topic, *subject;
    } cases[] = {
        {"a/b", "a.b"}, {"/a", "/.a"},   {"a/", "a./"}, {"a//b", "a./.b"},
        {"/", "/./"},   {"//", "/././"}, {"a", "a"},    {"\xc3\xbc/x", "\xc3\xbc.x"},
    };
    int fd = mq_open("tts");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nd_integ_context("topic \"%s\"", cases[i].topic);
        mq_pub(fd, cases[i].topic, "hi", 0, 0, false);
        char want[128];
        snprintf(want, sizeof want, "MSG %s 1 2\r\nhi\r\n", cases[i].subject);
        char *f = nats_next_user_msg(n);
        cr_assert_str_eq(f, want);
        free(f);
    }
    nd_integ_context(NULL);
    close(fd);
    nd_integ_conn_close(n);
}

/* A NATS publish as MQTT subscribers see it: subject tokens become levels; `a/#` also matches
 * the parent `a`; a `/` token becomes an empty level again. */
Test(mqtt, subject_to_topic)
{
    up(NULL);
    int s1 = mq_open("s1"), s2 = mq_open("s2"), s3 = mq_open("s3");
    mq_sub(s1, 1, "a/b", 0, 0);
    mq_sub(s2, 1, "a/+", 0, 0);
    mq_sub(s3, 1, "a/#", 0, 0);
    nd_integ_conn_t *n = nats_open(NULL);
    /* The last publish, on a.end, is one that a/+ and a/# get: a delivery that should not
     * happen would show before it. */
    ND_SEND(n, "PUB a.b 2\r\nhi\r\n");
    ND_SEND(n, "PUB a 2\r\nhi\r\n");
    ND_SEND(n, "PUB a.b.c 2\r\nhi\r\n");
    ND_SEND(n, "PUB a./ 2\r\nhi\r\n");
    ND_SEND(n, "PUB b 2\r\nhi\r\n");
    ND_SEND(n, "PUB a.end 3\r\nend\r\n");
    ND_PING(n);
    /* a/b: only a.b. */
    expect_publish(s1, "a/b", "hi", 0, 0, false);
    /* a/+: a.b and a./ (topic "a/"). */
    expect_publish(s2, "a/b", "hi", 0, 0, false);
    expect_publish(s2, "a/", "hi", 0, 0, false);
    expect_publish(s2, "a/end", "end", 0, 0, false);
    /* a/#: all but b. */
    expect_publish(s3, "a/b", "hi", 0, 0, false);
    expect_publish(s3, "a", "hi", 0, 0, false);
    expect_publish(s3, "a/b/c", "hi", 0, 0, false);
    expect_publish(s3, "a/", "hi", 0, 0, false);
    expect_publish(s3, "a/end", "end", 0, 0, false);
    /* s1 got nothing after a/b: its next is a PINGRESP. */
    mq_ping(s1);
    close(s1);
    close(s2);
    close(s3);
    nd_integ_conn_close(n);
}

/* Subjects starting with `$` and wildcard filters. [MQTT-4.7.2-1]: `#` and `+` at the start of a
 * filter do not match topics starting with `$`; a filter that starts with `$foo` does. nats-server
 * 2.9.10 ignores the rule (its `#` even gets the server's own $MQTT and $JS traffic); 2.10+ keeps
 * it, as natsd does. */
Test(mqtt, dollar_subjects_and_wildcards)
{
    up(NULL);
    int hash = mq_open("hash"), plus = mq_open("plus"), foo = mq_open("foo");
    mq_sub_dollar(hash, 1, "#");
    mq_sub(plus, 1, "+", 0, 0);
    mq_sub(foo, 1, "$foo/#", 0, 0);
    nd_integ_conn_t *n = nats_open(NULL);
    ND_SEND(n, "PUB $JS.x 2\r\nhi\r\n");
    ND_SEND(n, "PUB $foo 2\r\nhi\r\n");
    ND_SEND(n, "PUB $foo.bar 2\r\nhi\r\n");
    ND_SEND(n, "PUB end 3\r\nend\r\n");
    ND_PING(n);
    bool ref = nd_integ_is_reference();
    /* Each connection reads up to `end`, the marker published last, which all of `#` and `+`
     * get. The order of the publications from one NATS connection is kept. */
    cr_assert_eq(publish_seen_before(hash, "$JS/x", "end"), ref);
    cr_assert_eq(publish_seen_before(plus, "$foo", "end"), ref);
    expect_publish(foo, "$foo", "hi", 0, 0, false);
    expect_publish(foo, "$foo/bar", "hi", 0, 0, false);
    /* And the other `$` ones on `#` (a fresh connection, the first marker read past them). */
    int hash2 = mq_open("hash2");
    mq_sub_dollar(hash2, 1, "#");
    ND_SEND(n, "PUB $foo.bar 2\r\nhi\r\n");
    ND_SEND(n, "PUB end 3\r\nend\r\n");
    ND_PING(n);
    cr_assert_eq(publish_seen_before(hash2, "$foo/bar", "end"), ref);
    close(hash);
    close(hash2);
    close(plus);
    close(foo);
    nd_integ_conn_close(n);
}

/* ---- mosquitto clients ---- */

static void
mosquitto_round_trip(const char *qos, const char *topic)
{
    child_t sub, pub;
    const char *sargs[] = {"-d", "-q", qos,  "-t", topic,    "-C", "1",
                           "-W", "10", "-v", "-i", "rt-sub", NULL};
    child_start(&sub, "mosquitto_sub", sargs);
    child_wait_suback(&sub);
    const char *pargs[] = {"-q", qos, "-t", topic, "-m", "hello", NULL};
    run_tool(&pub, "mosquitto_pub", pargs, 0);
    char line[128];
    snprintf(line, sizeof line, "%s hello", topic);
    child_wait_line(&sub, line);
    cr_assert_eq(child_wait_exit(&sub), 0, "%s", sub.buf);
    /* The subscription was granted the QoS asked for, and the message came at it. */
    char sub_line[64];
    snprintf(sub_line, sizeof sub_line, "Subscribed (mid: 1): %s", qos);
    cr_assert(strstr(sub.buf, sub_line) != NULL, "%s", sub.buf);
    char got[64];
    snprintf(got, sizeof got, "received PUBLISH (d0, q%s, r0, m", qos);
    cr_assert(strstr(sub.buf, got) != NULL, "%s", sub.buf);
}

Test(mqtt, mosquitto_qos0)
{
    up(NULL);
    mosquitto_round_trip("0", "m/q0");
}

Test(mqtt, mosquitto_qos1)
{
    up(NULL);
    mosquitto_round_trip("1", "m/q1");
}

/* QoS 2 with mosquitto: a QoS 2 publish loses its connection (mosquitto_pub exits 7,
 * MOSQ_ERR_CONN_LOST) and the message goes nowhere; a QoS 2 subscription is granted QoS 1.
 * (2.9.10; 2.10+ with reject_qos2_publish and downgrade_qos2_subscribe.) */
Test(mqtt, mosquitto_qos2)
{
    up_with(NULL, nd_integ_is_reference()
                      ? NULL
                      : "reject_qos2_publish: true, downgrade_qos2_subscribe: true");
    nd_integ_conn_t *n = nats_open("m.>");
    child_t pub, sub;
    const char *pargs[] = {"-q", "2", "-t", "m/q2", "-m", "lost", NULL};
    child_start(&pub, "mosquitto_pub", pargs);
    cr_assert_neq(child_wait_exit(&pub), 0, "%s", pub.buf);
    const char *sargs[] = {"-d", "-q", "2", "-t", "m/q2", "-E", "-i", "q2sub", NULL};
    run_tool(&sub, "mosquitto_sub", sargs, 0);
    cr_assert(strstr(sub.buf, "Subscribed (mid: 1): 1") != NULL, "%s", sub.buf);
    int fd = mq_open("q2m");
    mq_pub(fd, "m/after", "after", 1, 1, false);
    ND_EXPECT(n, "MSG m.after 1 5\r\nafter\r\n");
    close(fd);
    nd_integ_conn_close(n);
}

/* A retained message goes to a later subscriber (right after the SUBACK, with the retain flag,
 * at the lower of the two QoS) and an empty retained publish deletes it. A live delivery to a
 * subscriber already there carries no retain flag. */
Test(mqtt, retained)
{
    up(NULL);
    child_t c;
    const char *pargs[] = {"-r", "-q", "1", "-t", "r/1", "-m", "kept", NULL};
    run_tool(&c, "mosquitto_pub", pargs, 0);

    int fd = mq_open("rs1");
    mbuf_t m;
    const char *f = "r/1";
    int q = 1;
    subscribe_pkt(&m, 0x82, 1, &f, &q, 1);
    send_pkt(fd, &m);
    expect_pkt(fd, "\x90\x03\x00\x01\x01");
    expect_publish(fd, "r/1", "kept", 1, 1, true);
    id_pkt(&m, 0x40, 1);
    send_pkt(fd, &m);
    mq_ping(fd);

    /* mosquitto_sub gets it too. */
    const char *sargs[] = {"-t", "r/1", "-C", "1", "-W", "10", "-v", NULL};
    run_tool(&c, "mosquitto_sub", sargs, 0);
    cr_assert_str_eq(c.buf, "r/1 kept\n");

    /* A live retained publish reaches the existing subscriber without the retain flag. */
    int p = mq_open("rp");
    mq_pub(p, "r/1", "live", 0, 0, true);
    expect_publish(fd, "r/1", "live", 0, 0, false);
    close(fd);

    /* A QoS 0 retained message to a QoS 0 subscriber. */
    fd = mq_open("rs2");
    q = 0;
    subscribe_pkt(&m, 0x82, 2, &f, &q, 1);
    send_pkt(fd, &m);
    expect_pkt(fd, "\x90\x03\x00\x02\x00");
    expect_publish(fd, "r/1", "live", 0, 0, true);
    mq_ping(fd);
    close(fd);

    /* The empty retained publish deletes it: a new subscriber gets the SUBACK and nothing. */
    const char *dargs[] = {"-r", "-n", "-q", "1", "-t", "r/1", NULL};
    run_tool(&c, "mosquitto_pub", dargs, 0);
    fd = mq_open("rs3");
    mq_sub(fd, 1, "r/1", 1, 1);
    mq_ping(fd);
    close(fd);
    close(p);
}

/* Clean session off: the subscription outlives the connection, a QoS 1 message published while
 * the client is away is delivered when it comes back, and the CONNACK says the session was
 * there. A clean-session connection with the same id wipes it. */
Test(mqtt, persistent_session)
{
    up(NULL);
    child_t c;
    const char *sargs[] = {"-c", "-i", "ps1", "-q", "1", "-t", "p/1", "-E", NULL};
    run_tool(&c, "mosquitto_sub", sargs, 0);
    const char *pargs[] = {"-q", "1", "-t", "p/1", "-m", "away", NULL};
    run_tool(&c, "mosquitto_pub", pargs, 0);
    const char *rargs[] = {"-c", "-i", "ps1", "-q", "1",  "-t", "p/1",
                           "-C", "1",  "-W",  "10", "-v", NULL};
    run_tool(&c, "mosquitto_sub", rargs, 0);
    cr_assert_str_eq(c.buf, "p/1 away\n");

    /* Raw: a new persistent session is not present, a returning one is, and its message comes
     * right after the CONNACK (QoS 1, first packet id). */
    conn_opts_t o = {.cid = "ps2", .persistent = true};
    int fd = mq_open_opts(&o, 0, 0);
    mq_sub(fd, 1, "p/2", 1, 1);
    mq_send_disconnect(fd);
    expect_close(fd);
    int p = mq_open("pp");
    mq_pub(p, "p/2", "while away", 1, 3, false);
    fd = mq_open_opts(&o, 1, 0);
    expect_publish(fd, "p/2", "while away", 1, 1, false);
    mbuf_t m;
    id_pkt(&m, 0x40, 1);
    send_pkt(fd, &m);
    mq_ping(fd);
    mq_send_disconnect(fd);
    expect_close(fd);

    /* Clean session on with the same id: the session goes (not present), and a later persistent
     * connection finds none and gets nothing. */
    conn_opts_t clean = {.cid = "ps2"};
    fd = mq_open_opts(&clean, 0, 0);
    mq_send_disconnect(fd);
    expect_close(fd);
    mq_pub(p, "p/2", "nobody", 1, 4, false);
    fd = mq_open_opts(&o, 0, 0);
    mq_ping(fd);
    close(fd);
    close(p);
}

/* The same across a restart of the server on the same store: a message published before the
 * restart and one after it both reach the returning client, and a retained message survives. */
Test(mqtt, persistent_session_restart)
{
    up(NULL);
    conn_opts_t o = {.cid = "rp1", .persistent = true};
    int fd = mq_open_opts(&o, 0, 0);
    mq_sub(fd, 1, "rp/1", 1, 1);
    mq_send_disconnect(fd);
    expect_close(fd);
    child_t c;
    const char *before[] = {"-q", "1", "-t", "rp/1", "-m", "before", NULL};
    run_tool(&c, "mosquitto_pub", before, 0);
    const char *ret[] = {"-r", "-q", "1", "-t", "rr/1", "-m", "ret", NULL};
    run_tool(&c, "mosquitto_pub", ret, 0);

    restart();

    const char *after[] = {"-q", "1", "-t", "rp/1", "-m", "after", NULL};
    run_tool(&c, "mosquitto_pub", after, 0);
    const char *sargs[] = {"-c", "-i", "rp1", "-q", "1",  "-t", "rp/1",
                           "-C", "2",  "-W",  "10", "-v", NULL};
    run_tool(&c, "mosquitto_sub", sargs, 0);
    cr_assert_str_eq(c.buf, "rp/1 before\nrp/1 after\n");

    fd = mq_open("rs");
    mq_sub(fd, 1, "rr/1", 1, 1);
    expect_publish(fd, "rr/1", "ret", 1, 1, true);
    close(fd);
}

/* The will: published when the connection ends without a DISCONNECT (reset, plain close, or a
 * protocol violation that makes the server close it), not after a DISCONNECT; a retained QoS 1
 * will is kept as a retained message. */
Test(mqtt, will)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open("w.>");
    conn_opts_t o = {.cid = "w1", .will_topic = "w/1", .will_msg = "gone"};
    int fd = mq_open_opts(&o, 0, 0);
    /* A TCP reset, as a killed client. */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
    ND_EXPECT(n, "MSG w.1 1 4\r\ngone\r\n");

    o.cid = "w2";
    o.will_topic = "w/2";
    fd = mq_open_opts(&o, 0, 0);
    close(fd);
    ND_EXPECT(n, "MSG w.2 1 4\r\ngone\r\n");

    o.cid = "w3";
    o.will_topic = "w/3";
    fd = mq_open_opts(&o, 0, 0);
    send_raw(fd, "\xF0\x00", 2);
    expect_close(fd);
    ND_EXPECT(n, "MSG w.3 1 4\r\ngone\r\n");

    /* After a DISCONNECT: no will. The server has closed (read as EOF) before the marker is
     * published, and the marker is the next message. */
    o.cid = "w4";
    o.will_topic = "w/4";
    fd = mq_open_opts(&o, 0, 0);
    mq_send_disconnect(fd);
    expect_close(fd);
    int p = mq_open("wp");
    mq_pub(p, "w/marker", "m", 1, 1, false);
    ND_EXPECT(n, "MSG w.marker 1 1\r\nm\r\n");

    /* A retained QoS 1 will. */
    conn_opts_t r = {
        .cid = "w5", .will_topic = "w/5", .will_msg = "last", .will_qos = 1, .will_retain = true};
    fd = mq_open_opts(&r, 0, 0);
    close(fd);
    ND_EXPECT(n, "MSG w.5 1 4\r\nlast\r\n");
    int s = mq_open("ws");
    mq_sub(s, 1, "w/5", 1, 1);
    expect_publish(s, "w/5", "last", 1, 1, true);
    close(s);
    close(p);
    nd_integ_conn_close(n);
}

/* A second connection with the same client id takes over: it gets its CONNACK and the older one
 * is closed, without its will. */
Test(mqtt, duplicate_client_id)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open("d.>");
    conn_opts_t o = {.cid = "dup", .will_topic = "d/will", .will_msg = "old"};
    int a = mq_open_opts(&o, 0, 0);
    mq_sub(a, 1, "d/x", 0, 0);
    int b = mq_open("dup");
    expect_close(a);
    mq_ping(b);
    /* The will of the replaced connection was dropped: the marker is the next message. */
    mq_pub(b, "d/marker", "m", 1, 1, false);
    ND_EXPECT(n, "MSG d.marker 1 1\r\nm\r\n");
    close(b);
    nd_integ_conn_close(n);
}

/* What crosses between MQTT and NATS besides the subject. A NATS subscriber that speaks headers
 * gets an MQTT publish as an HMSG with nats-server's `Nmqtt-Pub:<qos>` header (no space after
 * the colon), for QoS 0 too; NATS headers and reply subjects are not passed to MQTT (only the
 * body is). The delivered QoS is the lower of the publish and the subscription; QoS 1
 * deliveries number their packet ids from 1 up, acked or not. */
Test(mqtt, nats_headers_and_qos)
{
    up(NULL);
    nd_integ_conn_t *n = nd_integ_conn_open(srv);
    ND_SEND(n, "CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB h.> 1\r\n");
    ND_PING(n);
    int p = mq_open("hp");
    mq_pub(p, "h/1", "q1", 1, 2, false);
    ND_EXPECT(n, "HMSG h.1 1 25 27\r\nNATS/1.0\r\nNmqtt-Pub:1\r\n\r\nq1\r\n");
    mq_pub(p, "h/1", "q0", 0, 0, false);
    ND_EXPECT(n, "HMSG h.1 1 25 27\r\nNATS/1.0\r\nNmqtt-Pub:0\r\n\r\nq0\r\n");
    mq_pub(p, "h/1", "r1", 1, 3, true);
    ND_EXPECT(n, "HMSG h.1 1 25 27\r\nNATS/1.0\r\nNmqtt-Pub:1\r\n\r\nr1\r\n");

    int s0 = mq_open("h0"), s1 = mq_open("h1");
    mq_sub(s0, 1, "k/2", 0, 0);
    mq_sub(s1, 1, "k/2", 1, 1);
    mq_pub(p, "k/2", "A", 1, 4, false);
    expect_publish(s0, "k/2", "A", 0, 0, false);
    expect_publish(s1, "k/2", "A", 1, 1, false);
    mq_pub(p, "k/2", "B", 1, 5, false);
    expect_publish(s0, "k/2", "B", 0, 0, false);
    expect_publish(s1, "k/2", "B", 1, 2, false);
    mq_pub(p, "k/2", "C", 0, 0, false);
    expect_publish(s0, "k/2", "C", 0, 0, false);
    expect_publish(s1, "k/2", "C", 0, 0, false);

    /* From NATS: headers dropped, reply subject ignored, the body delivered at QoS 0. */
    ND_SEND(n, "HPUB k.2 20 21\r\nNATS/1.0\r\nX-A: 1\r\n\r\nD\r\n");
    ND_SEND(n, "PUB k.2 r.x 1\r\nE\r\n");
    ND_PING(n);
    expect_publish(s0, "k/2", "D", 0, 0, false);
    expect_publish(s0, "k/2", "E", 0, 0, false);
    expect_publish(s1, "k/2", "D", 0, 0, false);
    expect_publish(s1, "k/2", "E", 0, 0, false);
    close(s0);
    close(s1);
    close(p);
    nd_integ_conn_close(n);
}

/* Retained messages for a wildcard filter: every match (`#` includes the parent level) comes
 * right after the SUBACK, in no defined order, each with the retain flag; QoS 1 ones take packet
 * ids 1, 2, ... in the order they are sent. A second, overlapping subscription gets the retained
 * messages it matches as well. Overlapping subscriptions of one connection get one copy each
 * (3.1.1 allows it: [MQTT-3.3.5-1] asks only that the highest QoS be among them), and
 * SUBSCRIBE to a filter already held replaces its QoS. */
Test(mqtt, retained_wildcard_and_overlap)
{
    up(NULL);
    int p = mq_open("rwp");
    mq_pub(p, "rw/a", "1", 1, 1, true);
    mq_pub(p, "rw/b", "2", 1, 2, true);
    mq_pub(p, "rw/c/d", "3", 1, 3, true);
    mq_pub(p, "rw", "4", 1, 4, true);
    mq_pub(p, "other", "5", 1, 5, true);

    int s = mq_open("rws");
    mq_sub(s, 1, "rw/#", 1, 1);
    static const char *const want[] = {"rw/a 1", "rw/b 2", "rw/c/d 3", "rw 4"};
    bool seen[4] = {false}, pid_seen[5] = {false};
    for (int k = 0; k < 4; k++) {
        mbuf_t m;
        cr_assert(recv_pkt(s, &m), "end of stream after %d retained messages", k);
        char topic[64], msg[64], both[160];
        int qos;
        bool retain;
        unsigned pid;
        cr_assert(parse_publish(&m, topic, sizeof topic, msg, sizeof msg, &qos, &retain, &pid),
                  "not a PUBLISH: 0x%02x", m.b[0]);
        cr_assert(qos == 1 && retain, "%s: qos %d retain %d", topic, qos, retain);
        cr_assert(pid >= 1 && pid <= 4 && !pid_seen[pid], "%s: packet id %u", topic, pid);
        pid_seen[pid] = true;
        snprintf(both, sizeof both, "%s %s", topic, msg);
        int j = 0;
        while (j < 4 && strcmp(want[j], both) != 0)
            j++;
        cr_assert(j < 4 && !seen[j], "unexpected or repeated retained message %s", both);
        seen[j] = true;
    }
    mq_ping(s);

    /* rw/+ matches rw/a and rw/b only (not rw, not rw/c/d); QoS 0 here. */
    mq_sub(s, 2, "rw/+", 0, 0);
    bool a = false, b = false;
    for (int k = 0; k < 2; k++) {
        mbuf_t m;
        cr_assert(recv_pkt(s, &m));
        char topic[64], msg[64];
        int qos;
        bool retain;
        unsigned pid;
        cr_assert(parse_publish(&m, topic, sizeof topic, msg, sizeof msg, &qos, &retain, &pid));
        cr_assert(qos == 0 && retain);
        if (strcmp(topic, "rw/a") == 0 && strcmp(msg, "1") == 0)
            a = true;
        else if (strcmp(topic, "rw/b") == 0 && strcmp(msg, "2") == 0)
            b = true;
        else
            cr_assert_fail("unexpected %s %s", topic, msg);
    }
    cr_assert(a && b);
    mq_ping(s);
    close(s);

    /* Overlap: ov/# and ov/b on one connection, two copies. */
    int o = mq_open("ov");
    static const char *const f2[] = {"ov/#", "ov/b"};
    static const int q2[] = {0, 0};
    mbuf_t m;
    subscribe_pkt(&m, 0x82, 1, f2, q2, 2);
    send_pkt(o, &m);
    expect_pkt(o, "\x90\x04\x00\x01\x00\x00");
    mq_pub(p, "ov/b", "O", 0, 0, false);
    expect_publish(o, "ov/b", "O", 0, 0, false);
    expect_publish(o, "ov/b", "O", 0, 0, false);
    /* ov/b again at QoS 1: replaced, one copy at QoS 0 (ov/#) and one at QoS 1 (ov/b), in no
     * defined order. */
    mq_sub(o, 2, "ov/b", 1, 1);
    mq_pub(p, "ov/b", "P", 1, 6, false);
    bool q0 = false, q1 = false;
    for (int k = 0; k < 2; k++) {
        mbuf_t r;
        cr_assert(recv_pkt(o, &r));
        char topic[64], msg[64];
        int qos;
        bool retain;
        unsigned pid;
        cr_assert(parse_publish(&r, topic, sizeof topic, msg, sizeof msg, &qos, &retain, &pid));
        cr_assert(strcmp(topic, "ov/b") == 0 && strcmp(msg, "P") == 0 && !retain);
        if (qos == 0)
            q0 = true;
        else if (qos == 1 && pid == 1)
            q1 = true;
    }
    cr_assert(q0 && q1, "wanted one copy at QoS 0 and one at QoS 1 (packet id 1)");
    id_pkt(&m, 0x40, 1);
    send_pkt(o, &m);
    mq_ping(o);
    close(o);
    close(p);
}

/* MQTT clients live in the account of their user: what an MQTT client of account A publishes
 * reaches A's NATS subscribers and not B's, and client ids are per account (the same id in A and
 * B is no takeover). */
Test(mqtt, accounts)
{
    up("accounts {\n"
       "  A: { jetstream: enabled, users: [ {user: a, password: a} ] }\n"
       "  B: { jetstream: enabled, users: [ {user: b, password: b} ] }\n"
       "}\n");
    nd_integ_conn_t *na = nd_integ_conn_open(srv), *nb = nd_integ_conn_open(srv);
    ND_SEND(na, "CONNECT {\"verbose\":false,\"user\":\"a\",\"pass\":\"a\"}\r\nSUB x.> 1\r\n");
    ND_PING(na);
    ND_SEND(nb, "CONNECT {\"verbose\":false,\"user\":\"b\",\"pass\":\"b\"}\r\nSUB x.> 1\r\n");
    ND_PING(nb);
    conn_opts_t oa = {.cid = "same", .user = "a", .pass = "a"};
    conn_opts_t ob = {.cid = "same", .user = "b", .pass = "b"};
    int ma = mq_open_opts(&oa, 0, 0);
    int mb = mq_open_opts(&ob, 0, 0);
    mq_sub(mb, 1, "x/#", 1, 1);
    mq_ping(ma); /* still connected: B's "same" did not replace it */

    mq_pub(ma, "x/1", "fromA", 1, 1, false);
    ND_EXPECT(na, "MSG x.1 1 5\r\nfromA\r\n");
    ND_SEND(na, "PUB x.2 2\r\nhA\r\n");
    ND_EXPECT(na, "MSG x.2 1 2\r\nhA\r\n");
    /* B sees only B's own: its first message is the one B's NATS client publishes now. */
    ND_SEND(nb, "PUB x.3 2\r\nhB\r\n");
    ND_EXPECT(nb, "MSG x.3 1 2\r\nhB\r\n");
    expect_publish(mb, "x/3", "hB", 0, 0, false);
    close(ma);
    close(mb);
    nd_integ_conn_close(na);
    nd_integ_conn_close(nb);
}

/* QoS 1 deliveries that are not acked: at most max_ack_pending are outstanding per session, and
 * after ack_wait they come again with the DUP flag and their packet ids; acking lets the next one
 * through under a new id. (`mqtt { ack_wait, max_ack_pending }` are nats-server options; the
 * test waits for the redelivery, it asserts nothing on when it comes.) */
Test(mqtt, qos1_redelivery)
{
    up_with(NULL, "ack_wait: \"1s\", max_ack_pending: 2");

    conn_opts_t o = {.cid = "rd", .persistent = true};
    int s = mq_open_opts(&o, 0, 0);
    mq_sub(s, 1, "rd/1", 1, 1);
    int p = mq_open("rdp");
    mq_pub(p, "rd/1", "m0", 1, 10, false);
    mq_pub(p, "rd/1", "m1", 1, 11, false);
    mq_pub(p, "rd/1", "m2", 1, 12, false);
    expect_publish(s, "rd/1", "m0", 1, 1, false);
    expect_publish(s, "rd/1", "m1", 1, 2, false);
    /* Two outstanding: m2 waits; what comes next is the redelivery, DUP set (0x08). */
    mbuf_t m;
    publish_pkt(&m, "rd/1", "m0", 1, 1, false);
    m.b[0] |= 0x08;
    expect_mbuf(s, &m);
    publish_pkt(&m, "rd/1", "m1", 1, 2, false);
    m.b[0] |= 0x08;
    expect_mbuf(s, &m);
    id_pkt(&m, 0x40, 1);
    send_pkt(s, &m);
    id_pkt(&m, 0x40, 2);
    send_pkt(s, &m);
    /* m2 now, under id 3 (a further DUP of m0 or m1 may come first if this machine stalled for
     * ack_wait before the acks arrived). */
    for (;;) {
        mbuf_t r;
        cr_assert(recv_pkt(s, &r), "end of stream before m2");
        char topic[64], msg[64];
        int qos;
        bool retain;
        unsigned pid;
        cr_assert(parse_publish(&r, topic, sizeof topic, msg, sizeof msg, &qos, &retain, &pid));
        if (strcmp(msg, "m2") == 0) {
            cr_assert(pid == 3 && qos == 1 && (r.b[0] & 0x08) == 0, "m2: id %u qos %d dup %d", pid,
                      qos, (r.b[0] & 0x08) != 0);
            break;
        }
        cr_assert((r.b[0] & 0x08) != 0, "%s again without DUP", msg);
    }
    id_pkt(&m, 0x40, 3);
    send_pkt(s, &m);
    mq_ping(s);
    close(s);
    close(p);
}

/* A reload applies the mqtt block's ack_wait, max_ack_pending, replicas, consumer storage and
 * inactive threshold (logged one line each, as nats-server does) and refuses any other change
 * to it with nats-server's text. The new max_ack_pending holds for the next subscription. */
Test(mqtt, reload)
{
    up(NULL);
    char store[256], text[1024];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    snprintf(text, sizeof text,
             "server_name: mqtt_test\njetstream { store_dir: \"%s\" }\n"
             "mqtt { host: 127.0.0.1, port: %d, ack_wait: \"10s\", max_ack_pending: 1 }\n",
             store, mqtt_port);
    nd_integ_conf_write(&conf, text);
    size_t mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, true);
    static const char *const lines[] = {
        "Reloaded: MQTT ack_wait = 10s",
        "Reloaded: MQTT max_ack_pending = 1",
        "Reloaded: MQTT stream_replicas = 0",
        "Reloaded: MQTT consumer_replicas = 0",
        "Reloaded: MQTT consumer_memory_storage = false",
        "Reloaded: MQTT consumer_inactive_threshold = 0s",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert(nd_integ_server_log_has(srv, mark, lines[i]), "no \"%s\" in the log", lines[i]);

    /* One QoS 1 message outstanding at a time now: m1 waits for m0's PUBACK. */
    conn_opts_t o = {.cid = "rl", .persistent = false};
    int s = mq_open_opts(&o, 0, 0);
    mq_sub(s, 1, "rl/1", 1, 1);
    int p = mq_open("rlp");
    mq_pub(p, "rl/1", "m0", 1, 10, false);
    mq_pub(p, "rl/1", "m1", 1, 11, false);
    expect_publish(s, "rl/1", "m0", 1, 1, false);
    static const uint8_t pingreq[] = {0xC0, 0x00};
    send_raw(s, pingreq, sizeof pingreq);
    mbuf_t m;
    cr_assert(recv_pkt(s, &m));
    cr_assert(m.b[0] == 0xD0, "packet 0x%02x before the PINGRESP: m1 came while m0 waited for "
              "its PUBACK", m.b[0]);
    id_pkt(&m, 0x40, 1);
    send_pkt(s, &m);
    /* m1's packet id: nats-server 2.9.10 takes 1 again (free once acknowledged), natsd 2. */
    cr_assert(recv_pkt(s, &m));
    char topic[64], msg[64];
    int qos;
    bool retain;
    unsigned pid;
    cr_assert(parse_publish(&m, topic, sizeof topic, msg, sizeof msg, &qos, &retain, &pid));
    cr_assert(strcmp(msg, "m1") == 0 && qos == 1 && pid != 0, "%s qos %d id %u", msg, qos, pid);
    close(s);
    close(p);

    /* Another port: refused, and the server keeps serving on the old one. */
    snprintf(text, sizeof text,
             "server_name: mqtt_test\njetstream { store_dir: \"%s\" }\n"
             "mqtt { host: 127.0.0.1, port: %d }\n",
             store, mqtt_port + 1);
    nd_integ_conf_write(&conf, text);
    mark = nd_integ_server_log_mark(srv);
    nd_integ_server_reload(srv, false);
    cr_assert(nd_integ_server_log_has(srv, mark, "config reload not supported for MQTT"));
    mq_ping(mq_open("rl2"));
}
