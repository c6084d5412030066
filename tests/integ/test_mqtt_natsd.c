/* MQTT in natsd beyond what test_mqtt.c checks against both servers: start-up errors, keep
 * alive, /connz and /varz, QoS 1 redelivery with DUP after ack_wait, max_ack_pending, a client
 * flooding QoS 1 publishes, permissions and accounts, the mqtt block's own authorization, and
 * QoS 2 as nats-server 2.10+ does it (the reference here, 2.9.10, has none; the expectations
 * follow nats-server's mqtt.go: PUBCOMP for a PUBREL without a message, a QoS 2 will refused
 * with CONNACK 0x10 under reject_qos2_publish). natsd only (the behaviours were compared with
 * nats-server 2.9.10 by hand where they exist there). Synchronisation is a protocol round trip
 * or the server closing a connection; the only waits are for the server's own timers (keep
 * alive, ack_wait), bounded by the harness's guard.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mqtt_util.h"

static nd_integ_conf_t conf;
static nd_integ_server_t *srv;
static int mqtt_port, http_port;

static void
up(const char *extra)
{
    mqtt_port = nd_integ_free_port();
    http_port = nd_integ_free_port();
    char store[256], text[2048];
    nd_integ_conf_file(&conf, "store", store, sizeof store);
    snprintf(text, sizeof text,
             "server_name: mqtt_natsd\nhttp: \"127.0.0.1:%d\"\n"
             "jetstream { store_dir: \"%s\" }\n%s",
             http_port, store, extra ? extra : "");
    char mq[256];
    if (strstr(text, "mqtt {") == NULL) {
        snprintf(mq, sizeof mq, "mqtt { host: 127.0.0.1, port: %d }\n", mqtt_port);
        strncat(text, mq, sizeof text - strlen(text) - 1);
    }
    srv = nd_integ_conf_start(&conf, text);
}

static void
fini(void)
{
    if (srv != NULL)
        nd_integ_conf_stop(srv, &conf);
    srv = NULL;
    nd_integ_cleanup();
}

TestSuite(mqtt_natsd, .fini = fini, .timeout = 60);

/* ---- raw MQTT ---- */

/* Reads one packet: its first byte in *tf, its body in body. */
static void
read_pkt(int fd, uint8_t *tf, mbuf_t *body)
{
    cr_assert(recv_n_within(fd, tf, 1, 15000), "end of stream");
    uint32_t rl = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t d;
        cr_assert(recv_n_within(fd, &d, 1, 15000));
        rl |= (uint32_t)(d & 0x7f) << (7 * i);
        if (!(d & 0x80))
            break;
    }
    cr_assert(rl <= sizeof body->b);
    body->n = rl;
    cr_assert(recv_n_within(fd, body->b, rl, 15000));
}

/* Reads until the server closes. Returns: the bytes that came before. */
static size_t
expect_close(int fd)
{
    uint8_t b[256];
    size_t total = 0;
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        cr_assert(poll(&pf, 1, 15000) == 1, "the server did not close the connection");
        ssize_t k = recv(fd, b, sizeof b, 0);
        if (k <= 0)
            break;
        total += (size_t)k;
    }
    close(fd);
    return total;
}

typedef struct {
    const char *cid, *user, *pass, *will_topic, *will_msg;
    uint16_t ka;
    bool persistent;
} copts_t;

static void
mq_connect_send(int fd, const copts_t *o)
{
    mbuf_t b = {.n = 0}, p;
    put_str(&b, "MQTT");
    b.b[b.n++] = 4;
    uint8_t flags = o->persistent ? 0 : 0x02;
    if (o->will_topic)
        flags |= 0x04;
    if (o->user)
        flags |= 0x80;
    if (o->pass)
        flags |= 0x40;
    b.b[b.n++] = flags;
    put_u16(&b, o->ka);
    put_str(&b, o->cid);
    if (o->will_topic) {
        put_str(&b, o->will_topic);
        put_str(&b, o->will_msg);
    }
    if (o->user)
        put_str(&b, o->user);
    if (o->pass)
        put_str(&b, o->pass);
    pkt(&p, 0x10, &b);
    send_raw(fd, p.b, p.n);
}

/* CONNECT; returns the CONNACK's return code (and leaves the connection open). */
static int
mq_connect(int fd, const copts_t *o)
{
    mq_connect_send(fd, o);
    mbuf_t b;
    uint8_t tf;
    read_pkt(fd, &tf, &b);
    cr_assert_eq(tf, 0x20);
    cr_assert_eq(b.n, 2);
    return b.b[1];
}

static int
mq_open(const char *cid)
{
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = cid};
    cr_assert_eq(mq_connect(fd, &o), 0);
    return fd;
}

static void
mq_sub(int fd, uint16_t pi, const char *filter, int qos, int granted)
{
    mbuf_t b = {.n = 0}, p;
    put_u16(&b, pi);
    put_str(&b, filter);
    b.b[b.n++] = (uint8_t)qos;
    pkt(&p, 0x82, &b);
    send_raw(fd, p.b, p.n);
    uint8_t tf;
    read_pkt(fd, &tf, &b);
    cr_assert_eq(tf, 0x90);
    cr_assert_eq(b.n, 3);
    cr_assert_eq(b.b[2], granted, "granted %d, wanted %d", b.b[2], granted);
}

static void
mq_pub_pkt(mbuf_t *p, const char *topic, const char *msg, int qos, uint16_t pi)
{
    mbuf_t b = {.n = 0};
    put_str(&b, topic);
    if (qos > 0)
        put_u16(&b, pi);
    size_t n = strlen(msg);
    memcpy(b.b + b.n, msg, n);
    b.n += n;
    pkt(p, (uint8_t)(0x30 | (qos << 1)), &b);
}

/* Publishes and, at QoS 1, waits for the PUBACK. */
static void
mq_pub(int fd, const char *topic, const char *msg, int qos, uint16_t pi)
{
    mbuf_t p;
    mq_pub_pkt(&p, topic, msg, qos, pi);
    send_raw(fd, p.b, p.n);
    if (qos > 0) {
        uint8_t tf;
        read_pkt(fd, &tf, &p);
        cr_assert_eq(tf, 0x40);
        cr_assert_eq((p.b[0] << 8) | p.b[1], pi);
    }
}

static void
mq_ack(int fd, uint16_t pi)
{
    uint8_t p[4] = {0x40, 2, (uint8_t)(pi >> 8), (uint8_t)pi};
    send_raw(fd, p, 4);
}

static void
mq_ping(int fd)
{
    send_raw(fd, "\xC0\x00", 2);
    uint8_t tf;
    mbuf_t b;
    read_pkt(fd, &tf, &b);
    cr_assert_eq(tf, 0xD0, "wanted PINGRESP, got 0x%02x", tf);
}

/* Reads a PUBLISH and checks it. Returns: its packet id (0 at QoS 0). */
static uint16_t
expect_pub(int fd, const char *topic, const char *msg, int qos, bool dup)
{
    uint8_t tf;
    mbuf_t b;
    read_pkt(fd, &tf, &b);
    cr_assert_eq(tf & 0xF0, 0x30, "wanted PUBLISH, got 0x%02x", tf);
    cr_assert_eq((tf >> 1) & 3, qos, "QoS %d, wanted %d", (tf >> 1) & 3, qos);
    cr_assert_eq((tf & 0x08) != 0, dup, "DUP flag");
    size_t tl = (size_t)((b.b[0] << 8) | b.b[1]);
    cr_assert(tl == strlen(topic) && memcmp(b.b + 2, topic, tl) == 0, "topic %.*s", (int)tl,
              b.b + 2);
    size_t off = 2 + tl;
    uint16_t pi = 0;
    if (qos > 0) {
        pi = (uint16_t)((b.b[off] << 8) | b.b[off + 1]);
        off += 2;
    }
    cr_assert(b.n - off == strlen(msg) && memcmp(b.b + off, msg, b.n - off) == 0, "payload %.*s",
              (int)(b.n - off), b.b + off);
    return pi;
}

static nd_integ_conn_t *
nats_open(const char *user_pass, const char *subject)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    char line[256];
    if (user_pass != NULL) {
        char u[64], p[64];
        sscanf(user_pass, "%63[^:]:%63s", u, p);
        snprintf(
            line, sizeof line,
            "CONNECT {\"verbose\":false,\"pedantic\":false,\"user\":\"%s\",\"pass\":\"%s\"}\r\n", u,
            p);
    } else {
        snprintf(line, sizeof line, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    }
    ND_SENDS(c, line);
    if (subject != NULL) {
        snprintf(line, sizeof line, "SUB %s 1\r\n", subject);
        ND_SENDS(c, line);
    }
    ND_PING(c);
    return c;
}

/* ---- tests ---- */

/* Runs natsd on a config. Returns: its exit status; out gets its output. */
static int
run_natsd(const char *text, char *out, size_t cap)
{
    nd_integ_conf_write(&conf, text);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c %s 2>&1", nd_integ_server_path(), conf.path);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(mqtt_natsd, start_errors)
{
    char out[4096];
    int port = nd_integ_free_port();
    char text[512];
    snprintf(text, sizeof text, "port: -1\nmqtt { port: %d }\n", port);
    cr_assert_eq(run_natsd(text, out, sizeof out), 1);
    cr_assert_str_eq(out, "nats-server: mqtt requires server name to be explicitly set\n");
    snprintf(text, sizeof text, "port: -1\nserver_name: a\nmqtt { port: %d }\n", port);
    cr_assert_eq(run_natsd(text, out, sizeof out), 1);
    cr_assert_str_eq(out, "nats-server: mqtt requires JetStream to be enabled if running in "
                          "standalone mode\n");
    nd_integ_conf_remove(&conf);
}

/* No packet for 1.5 times the keep alive closes the connection, and the will goes out. A PING
 * in time keeps it. */
Test(mqtt_natsd, keep_alive)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open(NULL, "ka.>");
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = "ka", .ka = 1, .will_topic = "ka/will", .will_msg = "bye"};
    cr_assert_eq(mq_connect(fd, &o), 0);
    mq_ping(fd);
    cr_assert_eq(expect_close(fd), 0);
    ND_EXPECT(n, "MSG ka.will 1 3\r\nbye\r\n");
    nd_integ_conn_close(n);
}

Test(mqtt_natsd, monitoring)
{
    up(NULL);
    int fd = mq_open("mon1");
    mq_sub(fd, 1, "m/+", 1, 1);
    char *j = nd_integ_http_get(http_port, "/connz?mqtt_client=mon1&subs=1");
    cr_assert(strstr(j, "\"mqtt_client\": \"mon1\"") != NULL, "%s", j);
    cr_assert(strstr(j, "\"type\": \"mqtt\"") != NULL, "%s", j);
    cr_assert(strstr(j, "\"num_connections\": 1") != NULL, "%s", j);
    cr_assert(strstr(j, "\"m.*\"") != NULL, "%s", j);
    free(j);
    j = nd_integ_http_get(http_port, "/connz?mqtt_client=other");
    cr_assert(strstr(j, "\"num_connections\": 0") != NULL, "%s", j);
    free(j);
    j = nd_integ_http_get(http_port, "/varz");
    char want[64];
    snprintf(want, sizeof want, "\"port\": %d", mqtt_port);
    cr_assert(strstr(j, "\"mqtt\": {") != NULL && strstr(j, want) != NULL, "%s", j);
    free(j);
    close(fd);
}

/* An unacknowledged QoS 1 delivery comes again after ack_wait with the DUP flag and the same
 * packet id; acknowledged, it does not. */
Test(mqtt_natsd, redelivery)
{
    char extra[256];
    mqtt_port = nd_integ_free_port();
    snprintf(extra, sizeof extra, "mqtt { host: 127.0.0.1, port: %d, ack_wait: \"1s\" }\n",
             mqtt_port);
    int keep = mqtt_port;
    up(extra);
    mqtt_port = keep;
    int s = mq_open("rd-sub");
    mq_sub(s, 1, "rd/x", 1, 1);
    int p = mq_open("rd-pub");
    mq_pub(p, "rd/x", "one", 1, 7);
    uint16_t pi = expect_pub(s, "rd/x", "one", 1, false);
    cr_assert_eq(pi, 1);
    cr_assert_eq(expect_pub(s, "rd/x", "one", 1, true), pi);
    mq_ack(s, pi);
    mq_pub(p, "rd/x", "two", 1, 8);
    cr_assert_eq(expect_pub(s, "rd/x", "two", 1, false), 2);
    mq_ack(s, 2);
    mq_ping(s);
    close(s);
    close(p);
}

/* max_ack_pending bounds the QoS 1 deliveries waiting for a PUBACK. */
Test(mqtt_natsd, max_ack_pending)
{
    char extra[256];
    mqtt_port = nd_integ_free_port();
    snprintf(extra, sizeof extra, "mqtt { host: 127.0.0.1, port: %d, max_ack_pending: 2 }\n",
             mqtt_port);
    int keep = mqtt_port;
    up(extra);
    mqtt_port = keep;
    int s = mq_open("map-sub");
    mq_sub(s, 1, "map/x", 1, 1);
    int p = mq_open("map-pub");
    mq_pub(p, "map/x", "a", 1, 1);
    mq_pub(p, "map/x", "b", 1, 2);
    mq_pub(p, "map/x", "c", 1, 3);
    cr_assert_eq(expect_pub(s, "map/x", "a", 1, false), 1);
    cr_assert_eq(expect_pub(s, "map/x", "b", 1, false), 2);
    mq_ping(s); /* not "c": two are pending */
    mq_ack(s, 1);
    cr_assert_eq(expect_pub(s, "map/x", "c", 1, false), 3);
    close(s);
    close(p);
}

/* A client that sends many QoS 1 publishes without reading: every one is acknowledged, in
 * order, and delivered; the server reads it only as fast as JetStream stores. */
Test(mqtt_natsd, qos1_flood)
{
    up(NULL);
    nd_integ_conn_t *n = nats_open(NULL, "fl.x");
    int fd = mq_open("flood");
    enum { N = 2000 };
    static uint8_t all[N * 16];
    size_t len = 0;
    for (int i = 1; i <= N; i++) {
        mbuf_t p;
        mq_pub_pkt(&p, "fl/x", "m", 1, (uint16_t)i);
        memcpy(all + len, p.b, p.n);
        len += p.n;
    }
    send_raw(fd, all, len);
    for (int i = 1; i <= N; i++) {
        uint8_t tf;
        mbuf_t b;
        read_pkt(fd, &tf, &b);
        cr_assert_eq(tf, 0x40);
        cr_assert_eq((b.b[0] << 8) | b.b[1], i, "PUBACK %d out of order", i);
    }
    for (int i = 0; i < N; i++)
        ND_EXPECT(n, "MSG fl.x 1 1\r\nm\r\n");
    close(fd);
    nd_integ_conn_close(n);
}

/* MQTT clients log in as NATS users: their account and permissions apply. */
Test(mqtt_natsd, accounts_and_permissions)
{
    up("accounts {\n"
       "  A { users: [ {user: a, password: a, permissions: {publish: {deny: \"secret.>\"},"
       " subscribe: {deny: \"hidden.>\"}}}, {user: a2, password: a2} ], jetstream: enabled }\n"
       "  B { users: [ {user: b, password: b} ], jetstream: enabled }\n"
       "  C { users: [ {user: c, password: c} ] }\n"
       "}\n");
    nd_integ_conn_t *na = nats_open("a2:a2", ">");
    nd_integ_conn_t *nb = nats_open("b:b", ">");
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = "perm", .user = "a", .pass = "a"};
    cr_assert_eq(mq_connect(fd, &o), 0);
    mq_sub(fd, 1, "hidden/#", 0, 0x80);
    mq_sub(fd, 2, "open/#", 0, 0);
    mq_pub(fd, "secret/x", "no", 0, 0);
    mq_pub(fd, "open/x", "yes", 0, 0);
    expect_pub(fd, "open/x", "yes", 0, false);
    /* The other user of account A sees only the allowed one; account B sees nothing. */
    for (;;) {
        char *f = nd_integ_read_frame(na);
        cr_assert_not_null(f);
        bool user = strncmp(f, "MSG $", 5) != 0;
        if (user)
            cr_assert_str_eq(f, "MSG open.x 1 3\r\nyes\r\n");
        free(f);
        if (user)
            break;
    }
    ND_SEND(nb, "PUB b.marker 1\r\nm\r\n");
    for (;;) {
        char *f = nd_integ_read_frame(nb);
        cr_assert_not_null(f);
        bool user = strncmp(f, "MSG $", 5) != 0;
        if (user)
            cr_assert_str_eq(f, "MSG b.marker 1 1\r\nm\r\n");
        free(f);
        if (user)
            break;
    }
    /* A wrong password: CONNACK 5. */
    int bad = tcp_dial(mqtt_port);
    copts_t ob = {.cid = "bad", .user = "a", .pass = "x"};
    cr_assert_eq(mq_connect(bad, &ob), 5);
    expect_close(bad);
    /* An account without JetStream: closed without a CONNACK, as nats-server. */
    int nojs = tcp_dial(mqtt_port);
    copts_t oc = {.cid = "nojs", .user = "c", .pass = "c"};
    mq_connect_send(nojs, &oc);
    cr_assert_eq(expect_close(nojs), 0);
    /* Tried again (and refused again) on the next CONNECT. */
    nojs = tcp_dial(mqtt_port);
    mq_connect_send(nojs, &oc);
    cr_assert_eq(expect_close(nojs), 0);
    close(fd);
    nd_integ_conn_close(na);
    nd_integ_conn_close(nb);
}

/* mqtt { authorization } is the MQTT port's own user. */
Test(mqtt_natsd, own_authorization)
{
    char extra[256];
    mqtt_port = nd_integ_free_port();
    snprintf(extra, sizeof extra,
             "mqtt { host: 127.0.0.1, port: %d, authorization { user: mu, password: mp } }\n",
             mqtt_port);
    int keep = mqtt_port;
    up(extra);
    mqtt_port = keep;
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = "own", .user = "mu", .pass = "mp"};
    cr_assert_eq(mq_connect(fd, &o), 0);
    mq_ping(fd);
    close(fd);
    fd = tcp_dial(mqtt_port);
    copts_t bad = {.cid = "own2", .user = "mu", .pass = "no"};
    cr_assert_eq(mq_connect(fd, &bad), 5);
    expect_close(fd);
    fd = tcp_dial(mqtt_port);
    copts_t none = {.cid = "own3"};
    cr_assert_eq(mq_connect(fd, &none), 5);
    expect_close(fd);
}

/* Users' allowed_connection_types know MQTT, and mqtt { no_auth_user } logs in a client that
 * brings no credentials (both as nats-server 2.9.10). */
Test(mqtt_natsd, connection_types_and_no_auth_user)
{
    char extra[512];
    mqtt_port = nd_integ_free_port();
    snprintf(extra, sizeof extra,
             "authorization { users = [ {user: m, password: m, allowed_connection_types: "
             "[\"MQTT\"]}, {user: s, password: s, allowed_connection_types: [\"STANDARD\"]} ] }\n"
             "mqtt { host: 127.0.0.1, port: %d, no_auth_user: m }\n",
             mqtt_port);
    int keep = mqtt_port;
    up(extra);
    mqtt_port = keep;
    int fd = tcp_dial(mqtt_port);
    copts_t none = {.cid = "na1"};
    cr_assert_eq(mq_connect(fd, &none), 0);
    mq_ping(fd);
    close(fd);
    fd = tcp_dial(mqtt_port);
    copts_t s = {.cid = "na2", .user = "s", .pass = "s"};
    cr_assert_eq(mq_connect(fd, &s), 5);
    expect_close(fd);
    fd = tcp_dial(mqtt_port);
    copts_t m = {.cid = "na3", .user = "m", .pass = "m"};
    cr_assert_eq(mq_connect(fd, &m), 0);
    mq_ping(fd);
    close(fd);
    /* The MQTT-only user cannot log in as a NATS client. */
    nd_integ_conn_t *n = nd_integ_conn_open(srv);
    ND_SEND(n, "CONNECT {\"verbose\":false,\"user\":\"m\",\"pass\":\"m\"}\r\n");
    ND_EXPECT(n, "-ERR 'Authorization Violation'\r\n");
    nd_integ_conn_close(n);
}

/* mqtt { tls }: the handshake comes first (a plain CONNECT gets nothing back), and a TLS client
 * (mosquitto_pub --cafile) publishes. */
Test(mqtt_natsd, tls)
{
    char ca[256], cert[256], key[256], cmd[2048];
    nd_integ_conf_file(&conf, "ca.pem", ca, sizeof ca);
    nd_integ_conf_file(&conf, "server.pem", cert, sizeof cert);
    nd_integ_conf_file(&conf, "server.key", key, sizeof key);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", ca);
    *strrchr(dir, '/') = '\0';
    snprintf(cmd, sizeof cmd,
             "set -e; cd %s; K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'; "
             "openssl req -x509 $K -keyout ca.key -out ca.pem -days 2 -subj '/CN=mqtt CA'; "
             "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > srv.ext; "
             "openssl req $K -keyout server.key -out server.csr -subj '/CN=localhost'; "
             "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out server.pem -days 2 -extfile srv.ext",
             dir);
    char quiet[2200];
    snprintf(quiet, sizeof quiet, "(%s) >/dev/null 2>&1", cmd);
    cr_assert_eq(system(quiet), 0, "openssl failed");
    char extra[1024];
    mqtt_port = nd_integ_free_port();
    snprintf(extra, sizeof extra,
             "mqtt { host: 127.0.0.1, port: %d, tls { cert_file: \"%s\", key_file: \"%s\" } }\n",
             mqtt_port, cert, key);
    int keep = mqtt_port;
    up(extra);
    mqtt_port = keep;
    nd_integ_conn_t *n = nats_open(NULL, "tls.>");
    /* Plain text on the TLS port: no CONNACK, the connection closes. */
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = "plain"};
    mq_connect_send(fd, &o);
    cr_assert_eq(expect_close(fd), 0);
    snprintf(cmd, sizeof cmd,
             "mosquitto_pub -h 127.0.0.1 -p %d --cafile %s -q 1 -t tls/x -m secure "
             ">/dev/null 2>&1",
             mqtt_port, ca);
    cr_assert_eq(system(cmd), 0, "mosquitto_pub over TLS failed");
    ND_EXPECT(n, "MSG tls.x 1 6\r\nsecure\r\n");
    nd_integ_conn_close(n);
}

/* A client id that changed hands less than a second ago: the third connection gets no CONNACK
 * and is closed after that second, and the second keeps the id (nats-server 2.9.10's flappers). */
Test(mqtt_natsd, flapping_client_id)
{
    up(NULL);
    int a = mq_open("flap");
    int b = mq_open("flap");
    cr_assert_eq(expect_close(a), 0);
    /* nats-server's tag for an MQTT connection in its log lines */
    nd_integ_server_wait_log(srv, 0, "same client ID \"flap\"");
    cr_assert(nd_integ_server_log_has(srv, 0, " - mid:"));
    int c = tcp_dial(mqtt_port);
    copts_t o = {.cid = "flap"};
    mq_connect_send(c, &o);
    cr_assert_eq(expect_close(c), 0);
    mq_ping(b);
    close(b);
}

/* ---- QoS 2 (nats-server 2.10+; the reference 2.9.10 has none) ---- */

static char q2_text[1024];

/* Starts the server with `opts` in its mqtt block; restart: the same config again (the same
 * store and ports). */
static void
up_q2(const char *opts, bool restart)
{
    if (!restart) {
        mqtt_port = nd_integ_free_port();
        http_port = nd_integ_free_port();
        char store[256];
        nd_integ_conf_file(&conf, "store", store, sizeof store);
        snprintf(q2_text, sizeof q2_text,
                 "server_name: mqtt_natsd\nhttp: \"127.0.0.1:%d\"\n"
                 "jetstream { store_dir: \"%s\" }\nmqtt { host: 127.0.0.1, port: %d%s%s }\n",
                 http_port, store, mqtt_port, opts != NULL ? ", " : "", opts != NULL ? opts : "");
    }
    srv = nd_integ_conf_start(&conf, q2_text);
}

static void
send_id(int fd, uint8_t tf, uint16_t pi)
{
    uint8_t p[4] = {tf, 2, (uint8_t)(pi >> 8), (uint8_t)pi};
    send_raw(fd, p, 4);
}

static void
expect_id(int fd, uint8_t tf, uint16_t pi)
{
    uint8_t got;
    mbuf_t b;
    read_pkt(fd, &got, &b);
    cr_assert_eq(got, tf, "wanted 0x%02x, got 0x%02x", tf, got);
    cr_assert(b.n == 2 && ((b.b[0] << 8) | b.b[1]) == pi, "wanted id %u", pi);
}

/* A QoS 2 PUBLISH (dup: with the DUP flag) answered with PUBREC. */
static void
q2_publish(int fd, const char *topic, const char *msg, uint16_t pi, bool dup, bool retain)
{
    mbuf_t p;
    mq_pub_pkt(&p, topic, msg, 2, pi);
    p.b[0] |= (uint8_t)((dup ? 0x08 : 0) | (retain ? 0x01 : 0));
    send_raw(fd, p.b, p.n);
    expect_id(fd, 0x50, pi);
}

/* PUBREL answered with PUBCOMP. */
static void
q2_release(int fd, uint16_t pi)
{
    send_id(fd, 0x62, pi);
    expect_id(fd, 0x70, pi);
}

/* A NATS client that sees headers. */
static nd_integ_conn_t *
nats_open_hdrs(const char *subject)
{
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    ND_SENDS(c, "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n");
    char line[128];
    snprintf(line, sizeof line, "SUB %s 1\r\n", subject);
    ND_SENDS(c, line);
    ND_PING(c);
    return c;
}

/* A QoS 2 PUBLISH is kept until its PUBREL, once however often it comes (DUP, same id), then
 * published once as a QoS 2 message (Nmqtt-Pub:2) and completed; a PUBREL for an id with no
 * message (released already, or never published) is completed all the same. */
Test(mqtt_natsd, qos2_incoming)
{
    up_q2(NULL, false);
    nd_integ_conn_t *n = nats_open_hdrs("q2.in");
    int fd = mq_open("q2-in");
    q2_publish(fd, "q2/in", "once", 5, false, false);
    q2_publish(fd, "q2/in", "once", 5, true, false);
    ND_PING(n); /* nothing published before the PUBREL */
    q2_release(fd, 5);
    ND_EXPECT(n, "HMSG q2.in 1 25 29\r\nNATS/1.0\r\nNmqtt-Pub:2\r\n\r\nonce\r\n");
    q2_release(fd, 5); /* again: nothing left to publish */
    q2_release(fd, 9); /* never published */
    mq_ping(fd);
    ND_PING(n); /* it came once */
    /* The same id again after PUBCOMP is a new message. */
    q2_publish(fd, "q2/in", "next", 5, false, false);
    q2_release(fd, 5);
    ND_EXPECT(n, "HMSG q2.in 1 25 29\r\nNATS/1.0\r\nNmqtt-Pub:2\r\n\r\nnext\r\n");
    close(fd);
    nd_integ_conn_close(n);
}

/* A QoS 2 message received by a persistent session waits in JetStream across a reconnect and a
 * server restart for its PUBREL; a retained one is kept when released. */
Test(mqtt_natsd, qos2_incoming_persistent)
{
    up_q2(NULL, false);
    int fd = tcp_dial(mqtt_port);
    copts_t o = {.cid = "q2-keep", .persistent = true};
    cr_assert_eq(mq_connect(fd, &o), 0);
    q2_publish(fd, "q2/keep", "kept", 3, false, true);
    close(fd);
    nd_integ_server_stop(srv);
    up_q2(NULL, true);
    nd_integ_conn_t *n = nats_open(NULL, "q2.keep");
    fd = tcp_dial(mqtt_port);
    cr_assert_eq(mq_connect(fd, &o), 0);
    q2_release(fd, 3);
    ND_EXPECT(n, "MSG q2.keep 1 4\r\nkept\r\n");
    /* It was retained: a new subscriber gets it, at QoS 2 with the retain flag. */
    int s = mq_open("q2-keep-sub");
    mq_sub(s, 1, "q2/keep", 2, 2);
    uint8_t tf;
    mbuf_t b;
    read_pkt(s, &tf, &b);
    cr_assert_eq(tf, 0x35, "retained QoS 2 PUBLISH, got 0x%02x", tf);
    close(s);
    close(fd);
    nd_integ_conn_close(n);
}

/* A QoS 2 subscription is granted QoS 2: a QoS 2 message reaches it at QoS 2 (PUBREC, PUBREL
 * from the server, PUBCOMP), QoS 1 and 0 ones at theirs, and a QoS 2 message reaches a QoS 1
 * subscription at QoS 1 (the lower of the two). */
Test(mqtt_natsd, qos2_outgoing)
{
    up_q2(NULL, false);
    int s = mq_open("q2-out");
    mq_sub(s, 1, "q2/out", 2, 2);
    mq_sub(s, 2, "q2/one", 1, 1);
    int p = mq_open("q2-outp");
    q2_publish(p, "q2/out", "two", 1, false, false);
    q2_release(p, 1);
    uint16_t pi = expect_pub(s, "q2/out", "two", 2, false);
    send_id(s, 0x50, pi);
    expect_id(s, 0x62, pi);
    send_id(s, 0x70, pi);
    mq_pub(p, "q2/out", "one", 1, 2);
    uint16_t pi1 = expect_pub(s, "q2/out", "one", 1, false);
    cr_assert_neq(pi1, 0);
    mq_ack(s, pi1);
    mq_pub(p, "q2/out", "zero", 0, 0);
    expect_pub(s, "q2/out", "zero", 0, false);
    q2_publish(p, "q2/one", "down", 3, false, false);
    q2_release(p, 3);
    uint16_t pi2 = expect_pub(s, "q2/one", "down", 1, false);
    mq_ack(s, pi2);
    mq_ping(s);
    close(s);
    close(p);
}

/* Connects the persistent session "q2-rs" subscribed to q2/rs at QoS 2, has a QoS 2 message
 * delivered to it, sends PUBREC, reads the PUBREL and disconnects without PUBCOMP. Returns: the
 * packet id. */
static uint16_t
q2_leave_pubrel(int p)
{
    copts_t o = {.cid = "q2-rs", .persistent = true};
    int s = tcp_dial(mqtt_port);
    cr_assert_eq(mq_connect(s, &o), 0);
    mq_sub(s, 1, "q2/rs", 2, 2);
    q2_publish(p, "q2/rs", "m", 1, false, false);
    q2_release(p, 1);
    uint16_t pi = expect_pub(s, "q2/rs", "m", 2, false);
    send_id(s, 0x50, pi);
    expect_id(s, 0x62, pi);
    mq_ping(s);
    close(s); /* no PUBCOMP */
    return pi;
}

/* A persistent session that got a PUBREL but sent no PUBCOMP gets it again as soon as it
 * reconnects (MQTT-4.4.0-1): ack_wait is a minute here, longer than the read's timeout, so the
 * consumer's redelivery cannot be what comes. */
Test(mqtt_natsd, qos2_pubrel_resent)
{
    up_q2("ack_wait: \"1m\"", false);
    int p = mq_open("q2-rsp");
    uint16_t pi = q2_leave_pubrel(p);
    copts_t o = {.cid = "q2-rs", .persistent = true};
    int s = tcp_dial(mqtt_port);
    cr_assert_eq(mq_connect(s, &o), 0);
    expect_id(s, 0x62, pi);
    send_id(s, 0x70, pi);
    mq_ping(s);
    /* The id is free again; the next message still comes. */
    q2_publish(p, "q2/rs", "m2", 2, false, false);
    q2_release(p, 2);
    uint16_t pi2 = expect_pub(s, "q2/rs", "m2", 2, false);
    send_id(s, 0x50, pi2);
    expect_id(s, 0x62, pi2);
    send_id(s, 0x70, pi2);
    mq_ping(s);
    close(s);
    close(p);
}

/* With a short ack_wait: a PUBREL completed after a reconnect is not sent again when its
 * consumer redelivers it, and one not completed comes again after ack_wait. */
Test(mqtt_natsd, qos2_pubrel_redelivered)
{
    up_q2("ack_wait: \"1s\"", false);
    int p = mq_open("q2-rsp");
    uint16_t pi = q2_leave_pubrel(p);
    copts_t o = {.cid = "q2-rs", .persistent = true};
    int s = tcp_dial(mqtt_port);
    cr_assert_eq(mq_connect(s, &o), 0);
    expect_id(s, 0x62, pi);
    send_id(s, 0x70, pi);
    usleep(2500 * 1000); /* past ack_wait */
    mq_ping(s);
    q2_publish(p, "q2/rs", "m2", 2, false, false);
    q2_release(p, 2);
    uint16_t pi2 = expect_pub(s, "q2/rs", "m2", 2, false);
    send_id(s, 0x50, pi2);
    expect_id(s, 0x62, pi2);
    expect_id(s, 0x62, pi2);
    send_id(s, 0x70, pi2);
    /* (One more may have crossed the PUBCOMP on a slow machine.) */
    send_raw(s, "\xC0\x00", 2);
    for (;;) {
        uint8_t tf;
        mbuf_t b;
        read_pkt(s, &tf, &b);
        if (tf == 0xD0)
            break;
        cr_assert(tf == 0x62 && b.n == 2 && ((b.b[0] << 8) | b.b[1]) == pi2, "got 0x%02x", tf);
    }
    close(s);
    close(p);
}

/* reject_qos2_publish: a QoS 2 PUBLISH closes the connection and a QoS 2 will is refused with
 * nats-server's CONNACK code 0x10; downgrade_qos2_subscribe: QoS 2 is granted as 1. */
Test(mqtt_natsd, qos2_options)
{
    up_q2("reject_qos2_publish: true, downgrade_qos2_subscribe: true", false);
    int s = mq_open("q2-opt");
    mq_sub(s, 1, "q2/opt", 2, 1);
    int fd = mq_open("q2-optp");
    mbuf_t p;
    mq_pub_pkt(&p, "q2/opt", "x", 2, 1);
    send_raw(fd, p.b, p.n);
    cr_assert_eq(expect_close(fd), 0);
    /* CONNECT with a QoS 2 will (flags: clean session, will, will QoS 2). */
    mbuf_t b = {.n = 0};
    put_str(&b, "MQTT");
    b.b[b.n++] = 4;
    b.b[b.n++] = 0x02 | 0x04 | 0x10;
    put_u16(&b, 0);
    put_str(&b, "q2-will");
    put_str(&b, "w/t");
    put_str(&b, "bye");
    pkt(&p, 0x10, &b);
    fd = tcp_dial(mqtt_port);
    send_raw(fd, p.b, p.n);
    uint8_t tf;
    read_pkt(fd, &tf, &b);
    cr_assert(tf == 0x20 && b.n == 2 && b.b[1] == 0x10, "CONNACK 0x%02x", b.b[1]);
    cr_assert_eq(expect_close(fd), 0);
    mq_pub(s, "q2/other", "one", 1, 4);
    mq_ping(s);
    close(s);
}

/* mosquitto_pub -q 2 and mosquitto_sub -q 2: a persistent subscriber away when the message is
 * published gets it at QoS 2 when it comes back. */
Test(mqtt_natsd, qos2_mosquitto)
{
    up_q2(NULL, false);
    char cmd[512], out[4096];
    snprintf(cmd, sizeof cmd,
             "timeout 20 mosquitto_sub -h 127.0.0.1 -p %d -c -i q2-mos -q 2 -t mos/q2 -E 2>&1",
             mqtt_port);
    cr_assert_eq(system(cmd), 0, "mosquitto_sub -E failed");
    snprintf(cmd, sizeof cmd,
             "timeout 20 mosquitto_pub -h 127.0.0.1 -p %d -q 2 -t mos/q2 -m exactly -d 2>&1",
             mqtt_port);
    FILE *f = popen(cmd, "r");
    size_t k = fread(out, 1, sizeof out - 1, f);
    out[k] = '\0';
    cr_assert_eq(pclose(f), 0, "%s", out);
    cr_assert(strstr(out, "received PUBCOMP") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd,
             "timeout 20 mosquitto_sub -h 127.0.0.1 -p %d -c -i q2-mos -q 2 -t mos/q2 -C 1 -d "
             "2>&1",
             mqtt_port);
    f = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, f);
    out[k] = '\0';
    cr_assert_eq(pclose(f), 0, "%s", out);
    cr_assert(strstr(out, "received PUBLISH (d0, q2, r0, m1, 'mos/q2'") != NULL, "%s", out);
    cr_assert(strstr(out, "received PUBREL") != NULL && strstr(out, "\nexactly\n") != NULL, "%s",
              out);
}

/* ---- js_domain ---- */

/* Asks srv's $JS.hub.API.INFO until the hub answers through the leaf connection (its interest
 * crosses once the connection is up). */
static void
wait_hub_api(nd_integ_server_t *s)
{
    nd_integ_conn_t *c = nd_integ_conn_open(s);
    ND_SENDS(c, "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,"
                "\"no_responders\":true}\r\nSUB _INBOX.hub 1\r\n");
    for (int tries = 0;; tries++) {
        cr_assert(tries < 200, "the hub's JetStream API never answered through the leaf");
        ND_SENDS(c, "PUB $JS.hub.API.INFO _INBOX.hub 0\r\n\r\n");
        char *f = nd_integ_read_frame(c);
        bool answered = f != NULL && strstr(f, "\"domain\":\"hub\"") != NULL;
        free(f);
        if (answered)
            break;
        usleep(50 * 1000);
    }
    nd_integ_conn_close(c);
}

/* mqtt { js_domain }: a server whose own JetStream is domain "edge", a leaf of a hub whose
 * JetStream domain is "hub", keeps its MQTT state in the hub: the streams are made there
 * (through $JS.hub.API; $JS.API is the edge's own), QoS 1 goes through them, and a persistent
 * session outlives a restart of the MQTT server. */
Test(mqtt_natsd, js_domain_over_leaf)
{
    nd_integ_conf_t hconf = {0};
    char hstore[256], text[1024];
    int leaf_port = nd_integ_free_port();
    nd_integ_conf_file(&hconf, "hub", hstore, sizeof hstore);
    snprintf(text, sizeof text,
             "server_name: hub\njetstream { store_dir: \"%s\", domain: hub }\n"
             "leafnodes { listen: \"127.0.0.1:%d\" }\n",
             hstore, leaf_port);
    nd_integ_server_t *hub = nd_integ_conf_start(&hconf, text);

    mqtt_port = nd_integ_free_port();
    char estore[256];
    nd_integ_conf_file(&conf, "edge", estore, sizeof estore);
    snprintf(text, sizeof text,
             "server_name: edge\njetstream { store_dir: \"%s\", domain: edge }\n"
             "leafnodes { remotes: [ { url: \"nats-leaf://127.0.0.1:%d\" } ] }\n"
             "mqtt { host: 127.0.0.1, port: %d, js_domain: hub }\n",
             estore, leaf_port, mqtt_port);
    srv = nd_integ_conf_start(&conf, text);
    wait_hub_api(srv);

    copts_t o = {.cid = "dom-sub", .persistent = true};
    int s = tcp_dial(mqtt_port);
    cr_assert_eq(mq_connect(s, &o), 0);
    nd_integ_server_wait_log(srv, 0, "Creating MQTT streams/consumers with replicas 1 for account "
                                     "\"$G\" in domain \"hub\"");
    mq_sub(s, 1, "dom/t", 1, 1);
    int p = mq_open("dom-pub");
    mq_pub(p, "dom/t", "m0", 1, 7); /* the PUBACK: stored in the hub's $MQTT_msgs */
    uint16_t pi = expect_pub(s, "dom/t", "m0", 1, false);
    mq_ack(s, pi);
    mq_ping(s);
    close(s);
    close(p);

    /* The streams are the hub's. */
    nd_integ_conn_t *h = nd_integ_conn_open(hub);
    ND_SENDS(h, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB _INBOX.i 1\r\n"
                "PUB $JS.API.STREAM.INFO.$MQTT_msgs _INBOX.i 0\r\n\r\n");
    char *f = nd_integ_read_frame(h);
    cr_assert(f != NULL && strstr(f, "\"name\":\"$MQTT_msgs\"") != NULL, "%s", f ? f : "(none)");
    cr_assert(strstr(f, "\"messages\":") != NULL, "%s", f);
    free(f);
    nd_integ_conn_close(h);

    /* A restart of the MQTT server: the session is still in the hub (session present). */
    nd_integ_server_stop(srv);
    srv = nd_integ_conf_start(&conf, text);
    wait_hub_api(srv);
    s = tcp_dial(mqtt_port);
    mq_connect_send(s, &o);
    uint8_t tf;
    mbuf_t b;
    read_pkt(s, &tf, &b);
    cr_assert(tf == 0x20 && b.n == 2 && b.b[1] == 0, "CONNACK 0x%02x rc %d", tf, b.b[1]);
    cr_assert_eq(b.b[0] & 1, 1, "no session present after the restart");
    p = mq_open("dom-pub");
    mq_pub(p, "dom/t", "m1", 1, 8);
    expect_pub(s, "dom/t", "m1", 1, false);
    close(s);
    close(p);
    nd_integ_conf_stop(hub, &hconf);
}

/* ---- many retained messages and sessions (mqtt_index.c) ---- */

static void
mq_pub_retain(int fd, const char *topic, const char *msg)
{
    mbuf_t p;
    mq_pub_pkt(&p, topic, msg, 0, 0);
    p.b[0] |= 0x01;
    send_raw(fd, p.b, p.n);
}

/* SUBSCRIBEs to filter, then reads the retained messages up to a PINGRESP (the server reads
 * nothing after a SUBSCRIBE before its SUBACK and retained messages are out). Checks each one's
 * payload (its topic) and returns how many came; *found: whether `want` (may be NULL) did. */
static size_t
retained_of(int fd, uint16_t pi, const char *filter, const char *want, bool *found)
{
    mq_sub(fd, pi, filter, 0, 0);
    send_raw(fd, "\xC0\x00", 2);
    size_t n = 0;
    if (found != NULL)
        *found = false;
    for (;;) {
        uint8_t tf;
        mbuf_t b;
        read_pkt(fd, &tf, &b);
        if (tf == 0xD0)
            return n;
        cr_assert_eq(tf, 0x31, "wanted a retained QoS 0 PUBLISH, got 0x%02x", tf);
        size_t tl = (size_t)((b.b[0] << 8) | b.b[1]);
        cr_assert(b.n - 2 - tl == tl && memcmp(b.b + 2, b.b + 2 + tl, tl) == 0,
                  "topic %.*s, payload %.*s", (int)tl, b.b + 2, (int)(b.n - 2 - tl), b.b + 2 + tl);
        if (want != NULL && tl == strlen(want) && memcmp(b.b + 2, want, tl) == 0)
            *found = true;
        n++;
    }
}

/* 3000 retained messages r/<i % 30>/<i>, "r", three under $r; every fifth of r/4/... deleted
 * again. Literal and wildcard filters get exactly theirs; '#' and '+' at the start never a '$'
 * topic (MQTT-4.7.2-1), a filter that starts with "$r" does. */
Test(mqtt_natsd, retained_many)
{
    up(NULL);
    int pub = mq_open("ret-pub");
    enum { N = 3000 };
    char topic[64];
    size_t deleted = 0;
    for (int i = 0; i < N; i++) {
        snprintf(topic, sizeof topic, "r/%d/%d", i % 30, i);
        mq_pub_retain(pub, topic, topic);
    }
    for (int i = 4; i < N; i += 30 * 5) {
        snprintf(topic, sizeof topic, "r/%d/%d", i % 30, i);
        mq_pub_retain(pub, topic, "");
        deleted++;
    }
    mq_pub_retain(pub, "r", "r");
    mq_pub_retain(pub, "$r/x/5", "$r/x/5");
    mq_pub_retain(pub, "$r/y/5", "$r/y/5");
    mq_pub_retain(pub, "$r", "$r");
    mq_pub(pub, "sync", "sync", 1, 1); /* its PUBACK: every retained message before is in */

    int sub = mq_open("ret-sub");
    bool found;
    uint16_t pi = 1;
    cr_assert_eq(retained_of(sub, pi++, "r/7/1237", "r/7/1237", &found), 1);
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "r/7/1238", NULL, NULL), 0);
    cr_assert_eq(retained_of(sub, pi++, "r/4/154", NULL, NULL), 0); /* deleted */
    cr_assert_eq(retained_of(sub, pi++, "r/4/184", "r/4/184", &found), 1);
    cr_assert_eq(retained_of(sub, pi++, "r/7/+", "r/7/2977", &found), N / 30);
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "r/4/+", NULL, NULL), N / 30 - deleted);
    cr_assert_eq(retained_of(sub, pi++, "r/+/1237", "r/7/1237", &found), 1);
    cr_assert_eq(retained_of(sub, pi++, "+/+/5", "r/5/5", &found), 1); /* not $r/x/5 */
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "$r/+/5", "$r/y/5", &found), 2);
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "$r/#", "$r", &found), 3);
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "+", "r", &found), 1); /* not $r */
    cr_assert_eq(retained_of(sub, pi++, "r/#", "r", &found), N - deleted + 1);
    cr_assert(found);
    cr_assert_eq(retained_of(sub, pi++, "#", "r/29/2999", &found), N - deleted + 1);
    cr_assert(found);
    close(sub);
    close(pub);
}

/* CONNECT; returns the CONNACK's session-present flag (the return code must be 0). */
static bool
mq_connect_sp(int fd, const copts_t *o)
{
    mq_connect_send(fd, o);
    mbuf_t b;
    uint8_t tf;
    read_pkt(fd, &tf, &b);
    cr_assert_eq(tf, 0x20);
    cr_assert_eq(b.n, 2);
    cr_assert_eq(b.b[1], 0);
    return b.b[0] & 1;
}

static void
mq_disconnect(int fd)
{
    send_raw(fd, "\xE0\x00", 2);
    expect_close(fd);
}

/* 2000 persistent sessions, every hundredth with a QoS 1 subscription: each one comes back with
 * its own session, and its subscription's message published while it was away; a clean start
 * drops only its own session; a new id has none. */
Test(mqtt_natsd, sessions_many)
{
    up(NULL);
    enum { N = 2000 };
    char cid[32], filter[32];
    for (int i = 0; i < N; i++) {
        snprintf(cid, sizeof cid, "many-%d", i);
        int fd = tcp_dial(mqtt_port);
        copts_t o = {.cid = cid, .persistent = true};
        cr_assert_not(mq_connect_sp(fd, &o), "%s", cid);
        if (i % 100 == 0) {
            snprintf(filter, sizeof filter, "many/%d", i);
            mq_sub(fd, 1, filter, 1, 1);
        }
        mq_disconnect(fd);
    }
    /* a clean start of many-700 drops its session (and its subscription's consumer) */
    int fd = tcp_dial(mqtt_port);
    copts_t clean = {.cid = "many-700"};
    cr_assert_not(mq_connect_sp(fd, &clean));
    mq_disconnect(fd);

    const int back[] = {0, 500, 1999, 1234, 700, 701};
    int pub = mq_open("many-pub");
    for (size_t k = 0; k < sizeof back / sizeof *back; k++) {
        snprintf(filter, sizeof filter, "many/%d", back[k]);
        mq_pub(pub, filter, filter, 1, (uint16_t)(k + 1));
    }
    for (size_t k = 0; k < sizeof back / sizeof *back; k++) {
        int i = back[k];
        snprintf(cid, sizeof cid, "many-%d", i);
        fd = tcp_dial(mqtt_port);
        copts_t o = {.cid = cid, .persistent = true};
        bool sp = mq_connect_sp(fd, &o);
        cr_assert_eq(sp, i != 700, "%s: session present %d", cid, sp);
        if (i % 100 == 0 && i != 700) {
            snprintf(filter, sizeof filter, "many/%d", i);
            mq_ack(fd, expect_pub(fd, filter, filter, 1, false));
        }
        mq_ping(fd); /* and nothing else came */
        mq_disconnect(fd);
    }
    fd = tcp_dial(mqtt_port);
    copts_t fresh = {.cid = "many-new", .persistent = true};
    cr_assert_not(mq_connect_sp(fd, &fresh));
    mq_disconnect(fd);
    close(pub);
}
