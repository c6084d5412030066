/* WebSocket clients (src/net/ws.c, conn_ws.c): the server as a process with a websocket port,
 * driven by raw sockets that speak RFC 6455 themselves (masked client frames, fragments,
 * control frames) and by bad upgrade requests; MQTT over WebSocket on the path /mqtt (suite
 * wsmqtt, raw MQTT packets in frames) and X-Forwarded-For.
 *
 * Every expectation was checked against nats-server 2.9.10 (integ.ws.reference runs this file
 * against /usr/sbin/nats-server): the 101 and its Sec-WebSocket-Accept, the INFO in one binary
 * frame, the status line, Sec-Websocket-Version header and body of each refused upgrade, the
 * close frame for an unmasked client frame (1002 "mask bit missing"), the pong, the close echo.
 * nats-server keeps an HTTP/1.1 connection open after a refused upgrade and natsd closes it, so
 * the tests read a refusal by its Content-Length and do not look at what follows.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "harness.h"
#include "mqtt_util.h"

static nd_integ_conf_t conf;
static nd_integ_server_t *srv;
static int ws_port, http_port;

static void
suite_init(void)
{
    ws_port = nd_integ_free_port();
    http_port = nd_integ_free_port();
    char text[256];
    snprintf(text, sizeof text,
             "http: \"127.0.0.1:%d\"\n"
             "websocket { host: 127.0.0.1, port: %d, no_tls: true, compression: true }\n",
             http_port, ws_port);
    srv = nd_integ_conf_start(&conf, text);
}

static void
suite_fini(void)
{
    if (srv != NULL)
        nd_integ_conf_stop(srv, &conf);
    srv = NULL;
    nd_integ_cleanup();
}

TestSuite(ws, .init = suite_init, .fini = suite_fini, .timeout = 60);

/* ---- raw sockets ---- */

static int
ws_dial(void)
{
    return tcp_dial(ws_port);
}

/* The HTTP response head (through the empty line) into out. */
static void
recv_head(int fd, char *out, size_t cap)
{
    size_t n = 0;
    while (n < 4 || memcmp(out + n - 4, "\r\n\r\n", 4) != 0) {
        cr_assert(n + 1 < cap, "response head too long");
        cr_assert(recv_n(fd, out + n, 1), "end of stream in the response head: %.*s", (int)n, out);
        n++;
    }
    out[n] = '\0';
}

static const char key_hdr[] = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
static const char upgrade_101[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  "Connection: Upgrade\r\n"
                                  "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

/* A server frame: opcode and fin in *b0, payload malloc'd into *p (NUL-terminated). Returns:
 * false at end of stream. */
static bool
recv_frame(int fd, uint8_t *b0, char **p, size_t *n)
{
    uint8_t h[2];
    if (!recv_n(fd, h, 2))
        return false;
    cr_assert((h[1] & 0x80) == 0, "server frames are not masked");
    uint64_t len = h[1] & 0x7F;
    if (len == 126) {
        uint8_t e[2];
        cr_assert(recv_n(fd, e, 2));
        len = ((uint64_t)e[0] << 8) | e[1];
    } else if (len == 127) {
        uint8_t e[8];
        cr_assert(recv_n(fd, e, 8));
        len = 0;
        for (int i = 0; i < 8; i++)
            len = (len << 8) | e[i];
    }
    cr_assert(len < (1u << 24));
    *p = malloc(len + 1);
    cr_assert(len == 0 || recv_n(fd, *p, len));
    (*p)[len] = '\0';
    *b0 = h[0];
    *n = (size_t)len;
    return true;
}

/* Sends a client frame with b0 (fin and opcode), masked unless unmasked. */
static void
send_frame(int fd, uint8_t b0, const void *data, size_t n, bool unmasked)
{
    uint8_t *f = malloc(n + 14);
    size_t h = 0;
    f[h++] = b0;
    uint8_t m = unmasked ? 0 : 0x80;
    if (n <= 125) {
        f[h++] = (uint8_t)(m | n);
    } else if (n < 65536) {
        f[h++] = m | 126;
        f[h++] = (uint8_t)(n >> 8);
        f[h++] = (uint8_t)n;
    } else {
        f[h++] = m | 127;
        for (int i = 7; i >= 0; i--)
            f[h++] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    static const uint8_t key[4] = {0x12, 0x34, 0x56, 0x78};
    if (!unmasked) {
        memcpy(f + h, key, 4);
        h += 4;
    }
    for (size_t i = 0; i < n; i++)
        f[h + i] = ((const uint8_t *)data)[i] ^ (unmasked ? 0 : key[i & 3]);
    send_raw(fd, f, h + n);
    free(f);
}

#define BIN  0x82
#define TEXT 0x81

static void
send_text(int fd, const char *s)
{
    send_frame(fd, BIN, s, strlen(s), false);
}

/* RFC 7692: a raw deflate stream of p, sync-flushed, without its final 00 00 ff ff. */
static uint8_t *
deflate_msg(const void *p, size_t n, size_t *out_len)
{
    z_stream z = {0};
    cr_assert(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&z, n) + 16;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    cr_assert(deflate(&z, Z_SYNC_FLUSH) == Z_OK);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    cr_assert(len >= 4 && memcmp(out + len - 4, "\x00\x00\xff\xff", 4) == 0);
    *out_len = len - 4;
    return out;
}

/* Inflates a compressed frame's payload (p, n) in place of *p. */
static void
inflate_msg(char **p, size_t *n)
{
    z_stream z = {0};
    cr_assert(inflateInit2(&z, -15) == Z_OK);
    uint8_t *in = malloc(*n + 4);
    memcpy(in, *p, *n);
    memcpy(in + *n, "\x00\x00\xff\xff", 4);
    size_t cap = 1 << 20;
    char *out = malloc(cap + 1);
    z.next_in = in;
    z.avail_in = (uInt)(*n + 4);
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_SYNC_FLUSH);
    cr_assert(rc == Z_OK || rc == Z_STREAM_END, "inflate: %d", rc);
    size_t len = cap - z.avail_out;
    inflateEnd(&z);
    out[len] = '\0';
    free(in);
    free(*p);
    *p = out;
    *n = len;
}

/* Upgrades a new connection with extra request headers (may be ""), checks that the 101 has
 * want_extra (the lines between Sec-WebSocket-Accept and the end) and reads the INFO frame
 * (inflated when compressed). Returns: the socket. */
static int
ws_open_info(const char *extra, const char *want_extra, char **info)
{
    int fd = ws_dial();
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\n%sSec-WebSocket-Version: 13\r\n%s\r\n",
                     ws_port, key_hdr, extra);
    send_raw(fd, req, (size_t)n);
    char head[1024], want[1024];
    recv_head(fd, head, sizeof head);
    snprintf(want, sizeof want, "%.*s%s\r\n", (int)(sizeof upgrade_101 - 3), upgrade_101,
             want_extra);
    cr_assert_str_eq(head, want);
    uint8_t b0;
    char *p;
    size_t len;
    cr_assert(recv_frame(fd, &b0, &p, &len), "no INFO frame");
    if (b0 == (BIN | 0x40))
        inflate_msg(&p, &len);
    else
        cr_assert_eq(b0, BIN, "INFO frame: 0x%02x", b0);
    cr_assert(strncmp(p, "INFO {", 6) == 0 && len > 8 && strcmp(p + len - 4, "} \r\n") == 0,
              "INFO: %s", p);
    cr_assert(strstr(p, "\"client_ip\":\"127.0.0.1\"") != NULL, "INFO: %s", p);
    if (info != NULL)
        *info = p;
    else
        free(p);
    return fd;
}

static int
ws_open_ext(const char *extra, const char *want_extra)
{
    return ws_open_info(extra, want_extra, NULL);
}

/* Upgrades a new connection and reads the INFO frame. Returns: the socket. */
static int
ws_open(void)
{
    return ws_open_ext("", "");
}

/* Reads data frames until their concatenated payloads are want's length, then compares (the
 * server may split or join its operations across frames). */
static void
expect_stream(int fd, const char *want)
{
    size_t wl = strlen(want), have = 0;
    char *acc = calloc(1, wl + 1);
    while (have < wl) {
        uint8_t b0;
        char *p;
        size_t n;
        cr_assert(recv_frame(fd, &b0, &p, &n), "end of stream, had \"%s\"", acc);
        if (b0 == (BIN | 0x40))
            inflate_msg(&p, &n);
        else
            cr_assert(b0 == BIN, "frame 0x%02x (%s), had \"%s\"", b0, p, acc);
        cr_assert(have + n <= wl, "more than expected: \"%s%s\", wanted \"%s\"", acc, p, want);
        memcpy(acc + have, p, n);
        have += n;
        free(p);
    }
    cr_assert_str_eq(acc, want);
    free(acc);
}

static void
expect_eof(int fd)
{
    char b;
    cr_assert(!recv_n(fd, &b, 1), "more bytes after the close");
}

/* ---- upgrade ---- */

Test(ws, upgrade_ok)
{
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
}

/* The refusals: status line, nats-server's extra header and body (Go's http.Error). */
static void
bad_upgrade(const char *req, const char *status, const char *body)
{
    nd_integ_context("%s", status);
    int fd = ws_dial();
    send_raw(fd, req, strlen(req));
    char head[2048];
    recv_head(fd, head, sizeof head);
    cr_assert(strncmp(head, status, strlen(status)) == 0, "head: %s", head);
    cr_assert(strstr(head, "\r\nSec-Websocket-Version: 13\r\n") != NULL, "head: %s", head);
    cr_assert(strstr(head, "\r\nContent-Type: text/plain; charset=utf-8\r\n") != NULL, "head: %s",
              head);
    char cl[64];
    snprintf(cl, sizeof cl, "\r\nContent-Length: %zu\r\n", strlen(body));
    cr_assert(strstr(head, cl) != NULL, "head: %s", head);
    char got[64] = "";
    cr_assert(recv_n(fd, got, strlen(body)));
    cr_assert_str_eq(got, body);
    close(fd);
    nd_integ_context(NULL);
}

Test(ws, bad_upgrades)
{
    bad_upgrade("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n",
                "HTTP/1.1 400 Bad Request\r\n", "Bad Request\n");
    bad_upgrade("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 12\r\n\r\n",
                "HTTP/1.1 400 Bad Request\r\n", "Bad Request\n");
    bad_upgrade("POST / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "HTTP/1.1 405 Method Not Allowed\r\n", "Method Not Allowed\n");
    bad_upgrade("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "HTTP/1.1 400 Bad Request\r\n", "Bad Request\n");
    bad_upgrade("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                "HTTP/1.1 400 Bad Request\r\n", "Bad Request\n");
}

/* An HTTP/1.1 request without Host is refused by Go's server itself, with its own text. */
Test(ws, missing_host)
{
    int fd = ws_dial();
    const char *req = "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n";
    send_raw(fd, req, strlen(req));
    static const char want[] = "HTTP/1.1 400 Bad Request: missing required Host header\r\n"
                               "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                               "\r\n400 Bad Request: missing required Host header";
    char got[sizeof want] = "";
    cr_assert(recv_n(fd, got, sizeof want - 1));
    cr_assert_str_eq(got, want);
    expect_eof(fd);
    close(fd);
}

/* ---- the NATS protocol in frames ---- */

Test(ws, pub_sub)
{
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false}\r\n");
    send_text(fd, "SUB foo 1\r\n");
    send_text(fd, "PUB foo 5\r\nhello\r\n");
    send_text(fd, "PING\r\n");
    expect_stream(fd, "MSG foo 1 5\r\nhello\r\nPONG\r\n");
    /* A plain TCP client sees the WebSocket client's messages and the other way round. */
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nSUB foo 9\r\n");
    ND_PING(c);
    send_text(fd, "PUB foo 2\r\nhi\r\nPING\r\n");
    expect_stream(fd, "MSG foo 1 2\r\nhi\r\nPONG\r\n");
    ND_EXPECT(c, "MSG foo 9 2\r\nhi\r\n");
    ND_SEND(c, "PUB foo 3\r\ntcp\r\nPING\r\n");
    ND_EXPECT(c, "MSG foo 9 3\r\ntcp\r\nPONG\r\n");
    send_text(fd, "PING\r\n");
    expect_stream(fd, "MSG foo 1 3\r\ntcp\r\nPONG\r\n");
    nd_integ_conn_close(c);
    close(fd);
}

/* A PUB split across two messages, one of them a text frame, and a message in fragments (a
 * binary frame without fin and a continuation frame): a byte stream for the parser. */
Test(ws, split_frames)
{
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false}\r\nSUB foo 1\r\n");
    send_frame(fd, BIN, "PUB foo 5\r\nhel", 14, false);
    send_frame(fd, TEXT, "lo\r\n", 4, false);
    send_frame(fd, 0x02, "PUB fo", 6, false);    /* binary, not final */
    send_frame(fd, 0x00, "o 2\r\nab", 7, false); /* continuation, not final */
    send_frame(fd, 0x80, "\r\nPING\r\n", 8, false);
    expect_stream(fd, "MSG foo 1 5\r\nhello\r\nMSG foo 1 2\r\nab\r\nPONG\r\n");
    close(fd);
}

/* One frame carrying several operations. */
Test(ws, ops_in_one_frame)
{
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false}\r\nSUB a 1\r\nSUB b 2\r\nPUB a 1\r\nx\r\n"
                  "PUB b 2\r\nyz\r\nPING\r\n");
    expect_stream(fd, "MSG a 1 1\r\nx\r\nMSG b 2 2\r\nyz\r\nPONG\r\n");
    close(fd);
}

/* ---- control frames and errors ---- */

static void
expect_close_frame(int fd, int status, const char *body)
{
    uint8_t b0;
    char *p;
    size_t n;
    for (;;) {
        cr_assert(recv_frame(fd, &b0, &p, &n), "end of stream before the close frame");
        if (b0 != BIN)
            break;
        free(p); /* a server PING in a data frame */
    }
    cr_assert_eq(b0, 0x88, "frame 0x%02x", b0);
    cr_assert(n >= 2);
    cr_assert_eq(((uint8_t)p[0] << 8) | (uint8_t)p[1], status);
    cr_assert_str_eq(p + 2, body);
    free(p);
}

/* nats-server 2.9.10 queues the same close frame but races it with closing the socket (the
 * reference often reads end-of-stream at once); natsd always writes it first, as RFC 6455
 * 7.1.7 asks. */
Test(ws, unmasked_frame_closes)
{
    int fd = ws_open();
    send_frame(fd, BIN, "PING\r\n", 6, true);
    uint8_t b0;
    char *p;
    size_t n;
    if (recv_frame(fd, &b0, &p, &n)) {
        cr_assert_eq(b0, 0x88, "frame 0x%02x", b0);
        cr_assert(n >= 2 && (((uint8_t)p[0] << 8) | (uint8_t)p[1]) == 1002);
        cr_assert_str_eq(p + 2, "mask bit missing");
        free(p);
    } else {
        cr_assert(nd_integ_is_reference(), "natsd closed without the close frame");
    }
    expect_eof(fd);
    close(fd);
}

Test(ws, ping_pong)
{
    int fd = ws_open();
    send_frame(fd, 0x89, "hi", 2, false);
    uint8_t b0;
    char *p;
    size_t n;
    cr_assert(recv_frame(fd, &b0, &p, &n));
    cr_assert_eq(b0, 0x8A, "frame 0x%02x", b0);
    cr_assert_str_eq(p, "hi");
    free(p);
    /* Still a client after it. */
    send_text(fd, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
}

Test(ws, close_echo)
{
    int fd = ws_open();
    send_frame(fd, 0x88,
               "\x03\xe8"
               "bye",
               5, false);
    expect_close_frame(fd, 1000, "bye");
    expect_eof(fd);
    close(fd);
}

/* ---- monitoring ---- */

/* GET path on the monitoring port. Returns: the body's JSON (owned). */
static json_t *
http_json(const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)http_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    char req[256];
    int n =
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    send_raw(fd, req, (size_t)n);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        cr_assert(poll(&pf, 1, ND_INTEG_TIMEOUT_MS) == 1);
        ssize_t k = recv(fd, buf + len, cap - len - 1, 0);
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    buf[len] = '\0';
    close(fd);
    char *body = strstr(buf, "\r\n\r\n");
    cr_assert_not_null(body);
    json_error_t e;
    json_t *j = json_loads(body + 4, 0, &e);
    cr_assert_not_null(j, "%s: %s", path, e.text);
    free(buf);
    return j;
}

/* /connz lists a WebSocket client as a client of type "websocket"; /varz shows the port. */
Test(ws, monitoring)
{
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false,\"name\":\"wsmon\"}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    json_t *cz = http_json("/connz");
    json_t *conns = json_object_get(cz, "connections");
    bool found = false;
    for (size_t i = 0; i < json_array_size(conns); i++) {
        json_t *c = json_array_get(conns, i);
        const char *name = json_string_value(json_object_get(c, "name"));
        if (name == NULL || strcmp(name, "wsmon") != 0)
            continue;
        found = true;
        cr_assert_str_eq(json_string_value(json_object_get(c, "kind")), "Client");
        cr_assert_str_eq(json_string_value(json_object_get(c, "type")), "websocket");
    }
    cr_assert(found, "no wsmon in /connz");
    json_decref(cz);
    json_t *vz = http_json("/varz");
    json_t *w = json_object_get(vz, "websocket");
    cr_assert_str_eq(json_string_value(json_object_get(w, "host")), "127.0.0.1");
    cr_assert_eq(json_integer_value(json_object_get(w, "port")), ws_port);
    cr_assert(json_is_true(json_object_get(w, "no_tls")));
    json_decref(vz);
    close(fd);
}

/* ---- permessage-deflate (RFC 7692) and Nats-No-Masking ---- */

static const char pmd_offer[] =
    "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";
static const char pmd_answer[] = "Sec-WebSocket-Extensions: permessage-deflate; "
                                 "server_no_context_takeover; client_no_context_takeover\r\n";

/* Sends s as one compressed message, in two frames when split (the second a continuation). */
static void
send_compressed(int fd, const char *s, bool split)
{
    size_t n;
    uint8_t *d = deflate_msg(s, strlen(s), &n);
    if (split && n > 2) {
        send_frame(fd, 0x40 | 0x02, d, 2, false); /* RSV1, binary, not final */
        send_frame(fd, 0x80, d + 2, n - 2, false);
    } else {
        send_frame(fd, 0xC2, d, n, false);
    }
    free(d);
}

/* compression: true and a client that offers permessage-deflate: the 101 accepts it with no
 * context takeover both ways; the INFO (over 64 bytes) comes compressed; compressed client
 * messages, whole or in fragments, carry the protocol. */
Test(ws, compression)
{
    int fd = ws_open_ext(pmd_offer, pmd_answer);
    send_compressed(fd, "CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPING\r\n", false);
    expect_stream(fd, "PONG\r\n");
    send_compressed(fd, "PUB foo 5\r\nhello\r\nPING\r\n", true);
    expect_stream(fd, "MSG foo 1 5\r\nhello\r\nPONG\r\n");
    /* A big message is compressed on the way out: the frame has RSV1 and is smaller. */
    char pub[512], want[512];
    char payload[301];
    memset(payload, 'x', 300);
    payload[300] = '\0';
    snprintf(pub, sizeof pub, "PUB foo 300\r\n%s\r\n", payload);
    snprintf(want, sizeof want, "MSG foo 1 300\r\n%s\r\n", payload);
    send_compressed(fd, pub, false);
    uint8_t b0;
    char *p;
    size_t n;
    cr_assert(recv_frame(fd, &b0, &p, &n));
    cr_assert_eq(b0, BIN | 0x40, "frame 0x%02x", b0);
    cr_assert(n < strlen(want), "%zu bytes", n);
    inflate_msg(&p, &n);
    cr_assert_str_eq(p, want);
    free(p);
    /* Uncompressed messages stay allowed. */
    send_text(fd, "PING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
}

/* A compressed message and plain frames after it in one TCP segment: the inflated bytes come
 * first, in order. */
Test(ws, compression_then_plain)
{
    int fd = ws_open_ext(pmd_offer, pmd_answer);
    send_text(fd, "CONNECT {\"verbose\":false}\r\nSUB foo 1\r\n");
    size_t n;
    const char *m = "PUB foo 1\r\na\r\n";
    uint8_t *d = deflate_msg(m, strlen(m), &n);
    uint8_t seg[256];
    static const uint8_t key[4] = {0, 0, 0, 0}; /* a zero key: the payload goes as it is */
    size_t k = 0;
    seg[k++] = 0xC2;
    seg[k++] = (uint8_t)(0x80 | n);
    memcpy(seg + k, key, 4), k += 4;
    memcpy(seg + k, d, n), k += n;
    const char *plain = "PUB foo 1\r\nb\r\nPING\r\n";
    seg[k++] = 0x82;
    seg[k++] = (uint8_t)(0x80 | strlen(plain));
    memcpy(seg + k, key, 4), k += 4;
    memcpy(seg + k, plain, strlen(plain)), k += strlen(plain);
    send_raw(fd, seg, k);
    free(d);
    expect_stream(fd, "MSG foo 1 1\r\na\r\nMSG foo 1 1\r\nb\r\nPONG\r\n");
    close(fd);
}

/* Without the offer the extension is not in the 101 (ws_open checks it) and a frame with RSV1
 * is refused with nats-server 2.11's close frame. 2.9.10 does not check: with compression
 * enabled it inflates the frame anyway, so the reference is not asked. */
Test(ws, compressed_frame_not_negotiated)
{
    if (nd_integ_is_reference())
        return;
    int fd = ws_open();
    send_compressed(fd, "PING\r\n", false);
    uint8_t b0;
    char *p;
    size_t n;
    cr_assert(recv_frame(fd, &b0, &p, &n));
    cr_assert_eq(b0, 0x88, "frame 0x%02x", b0);
    cr_assert(n >= 2 && (((uint8_t)p[0] << 8) | (uint8_t)p[1]) == 1002);
    cr_assert_str_eq(p + 2, "compressed frame received without negotiated permessage-deflate");
    free(p);
    expect_eof(fd);
    close(fd);
}

/* A deflate bomb: a small compressed message that inflates past max_payload (1 MB here) in
 * valid operations. natsd lets the parser see max_payload bytes and closes with 1009, as
 * nats-server 2.11's wsDecompressAndParse limits it; 2.9.10 inflates without a limit, so the
 * reference is not asked. */
Test(ws, deflate_bomb)
{
    if (nd_integ_is_reference())
        return;
    int fd = ws_open_ext(pmd_offer, pmd_answer);
    send_text(fd, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    static const char op[] = "PUB foo 0\r\n\r\n";
    size_t count = 200000, len = (sizeof op - 1) * count;
    char *big = malloc(len + 1);
    for (size_t i = 0; i < count; i++)
        memcpy(big + i * (sizeof op - 1), op, sizeof op - 1);
    big[len] = '\0';
    size_t n;
    uint8_t *d = deflate_msg(big, len, &n);
    cr_assert(n < 64 * 1024, "%zu compressed bytes", n);
    send_frame(fd, 0xC2, d, n, false);
    free(d);
    free(big);
    expect_close_frame(fd, 1009, "Maximum Message Payload Exceeded");
    expect_eof(fd);
    close(fd);
}

/* Nats-No-Masking: true: the 101 repeats it and the client's frames may be unmasked. */
Test(ws, no_masking)
{
    int fd = ws_open_ext("Nats-No-Masking: true\r\n", "Nats-No-Masking: true\r\n");
    send_frame(fd, BIN, "CONNECT {\"verbose\":false}\r\nPING\r\n", 33, true);
    expect_stream(fd, "PONG\r\n");
    close(fd);
}

/* ---- websocket authorization, no_auth_user and cookies ---- */

/* A server of its own with websocket {} settings ws_extra and top-level text top (both may be
 * ""); ws_port points at it for the helpers above. */
static nd_integ_server_t *
auth_server(nd_integ_conf_t *cf, const char *top, const char *ws_extra)
{
    ws_port = nd_integ_free_port();
    char text[1024];
    snprintf(
        text, sizeof text,
        "listen: 127.0.0.1:%d\n%s\nwebsocket { host: 127.0.0.1, port: %d, no_tls: true\n%s\n}\n",
        nd_integ_free_port(), top, ws_port, ws_extra);
    return nd_integ_conf_start(cf, text);
}

/* Reads data frames until a complete line ends the stream; returns it (owned). */
static char *
ws_line(int fd)
{
    size_t cap = 4096, have = 0;
    char *acc = calloc(1, cap);
    while (have < 2 || memcmp(acc + have - 2, "\r\n", 2) != 0) {
        uint8_t b0;
        char *p;
        size_t n;
        cr_assert(recv_frame(fd, &b0, &p, &n), "end of stream, had \"%s\"", acc);
        if (b0 == 0x88) {
            free(p);
            break;
        }
        cr_assert(have + n < cap);
        memcpy(acc + have, p, n);
        have += n;
        free(p);
    }
    return acc;
}

/* websocket { authorization { user, password } } replaces the server's (empty) authorization
 * for WebSocket clients only: their INFO says auth_required, the right credentials pass, others
 * get 'Authorization Violation'; a TCP client still needs none. */
Test(wsauth, override, .timeout = 30)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *s2 = auth_server(&cf, "", "authorization { user: wsu, password: wsp }");
    nd_integ_conn_t *c = nd_integ_conn_open(s2);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    nd_integ_conn_close(c);
    char *info;
    int fd = ws_open_info("", "", &info);
    cr_assert(strstr(info, "\"auth_required\":true") != NULL, "INFO: %s", info);
    free(info);
    send_text(fd, "CONNECT {\"verbose\":false,\"user\":\"wsu\",\"pass\":\"wsp\"}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
    fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false,\"user\":\"wsu\",\"pass\":\"bad\"}\r\nPING\r\n");
    char *l = ws_line(fd);
    cr_assert_str_eq(l, "-ERR 'Authorization Violation'\r\n");
    free(l);
    close(fd);
    nd_integ_conf_stop(s2, &cf);
}

/* websocket { no_auth_user } names one of the server's users for WebSocket clients without
 * credentials; TCP clients without credentials are still refused. */
Test(wsauth, no_auth_user, .timeout = 30)
{
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *s2 = auth_server(
        &cf, "authorization { users: [ {user: a, password: pa}, {user: b, password: pb} ] }",
        "no_auth_user: b");
    char *info;
    int fd = ws_open_info("", "", &info);
    cr_assert(strstr(info, "\"auth_required\":true") != NULL, "INFO: %s", info);
    free(info);
    send_text(fd, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
    nd_integ_conn_t *c = nd_integ_conn_open(s2);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Authorization Violation'\r\n");
    nd_integ_conn_close(c);
    nd_integ_conf_stop(s2, &cf);
}

/* user_cookie, pass_cookie (2.11; 2.9.10 has jwt_cookie only, so the reference is not asked):
 * the upgrade's cookies stand in for the credentials that CONNECT lacks. */
Test(wsauth, cookies, .timeout = 30)
{
    if (nd_integ_is_reference())
        return;
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *s2 = auth_server(
        &cf, "", "authorization { user: wsu, password: wsp }\nuser_cookie: nu\npass_cookie: np");
    int fd = ws_open_ext("Cookie: other=1; nu=wsu\r\nCookie: np=\"wsp\"\r\n", "");
    send_text(fd, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    close(fd);
    /* A credential in CONNECT wins over the cookie. */
    fd = ws_open_ext("Cookie: nu=wsu; np=wsp\r\n", "");
    send_text(fd, "CONNECT {\"verbose\":false,\"pass\":\"bad\"}\r\nPING\r\n");
    char *l = ws_line(fd);
    cr_assert_str_eq(l, "-ERR 'Authorization Violation'\r\n");
    free(l);
    close(fd);
    nd_integ_conf_stop(s2, &cf);
}

/* ---- clusters: ws_connect_urls ---- */

/* Reads frames until an INFO containing want arrives; returns it (owned). Server PINGs and
 * other data between are skipped. */
static char *
ws_wait_info(int fd, const char *want)
{
    for (;;) {
        uint8_t b0;
        char *p;
        size_t n;
        cr_assert(recv_frame(fd, &b0, &p, &n), "end of stream before an INFO with %s", want);
        if (b0 == (BIN | 0x40))
            inflate_msg(&p, &n);
        if (strncmp(p, "PING\r\n", 6) == 0) {
            send_text(fd, "PONG\r\n");
        } else if (strncmp(p, "INFO ", 5) == 0 && strstr(p, want) != NULL) {
            return p;
        }
        free(p);
    }
}

/* Two servers in a cluster, the second with websocket { advertise }: a WebSocket client of the
 * first learns both WebSocket URLs as connect_urls (the routes carry them as ws_connect_urls),
 * not the client URLs. second: the binary of the second server (NULL: the one under test). */
static void
ws_cluster(const char *second)
{
    nd_integ_conf_t c1 = {0}, c2 = {0};
    int cport = nd_integ_free_port(), w2 = nd_integ_free_port();
    ws_port = nd_integ_free_port();
    char text[1024];
    snprintf(text, sizeof text,
             "listen: 127.0.0.1:%d\nwebsocket { host: 127.0.0.1, port: %d, no_tls: true }\n"
             "cluster { name: wsc, listen: 127.0.0.1:%d }\n",
             nd_integ_free_port(), ws_port, cport);
    nd_integ_server_t *s1 = nd_integ_conf_start(&c1, text);
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false,\"protocol\":1}\r\nPING\r\n");
    expect_stream(fd, "PONG\r\n");
    snprintf(text, sizeof text,
             "listen: 127.0.0.1:%d\nwebsocket { host: 127.0.0.1, port: %d, no_tls: true, "
             "advertise: \"wsadv.example:1234\" }\n"
             "cluster { name: wsc, listen: 127.0.0.1:%d, routes: [\"nats://127.0.0.1:%d\"] }\n",
             nd_integ_free_port(), w2, nd_integ_free_port(), cport);
    nd_integ_server_t *s2;
    if (second != NULL) {
        nd_integ_conf_write(&c2, text);
        s2 = nd_integ_server_start_bin(second, (const char *const[]){"-c", c2.path, NULL});
    } else {
        s2 = nd_integ_conf_start(&c2, text);
    }
    char *info = ws_wait_info(fd, "\"wsadv.example:1234\"");
    char own[64];
    snprintf(own, sizeof own, "\"127.0.0.1:%d\"", ws_port);
    cr_assert(strstr(info, own) != NULL, "INFO: %s", info);
    cr_assert(strstr(info, "ws_connect_urls") == NULL, "INFO: %s", info);
    free(info);
    /* A new WebSocket client gets the same list in its first INFO. */
    int fd2 = ws_open_info("", "", &info);
    cr_assert(strstr(info, own) != NULL && strstr(info, "\"wsadv.example:1234\"") != NULL,
              "INFO: %s", info);
    free(info);
    close(fd2);
    close(fd);
    nd_integ_conf_stop(s2, &c2);
    nd_integ_conf_stop(s1, &c1);
}

Test(wscluster, ws_connect_urls, .timeout = 60)
{
    ws_cluster(NULL);
}

/* The same with nats-server 2.9.10 as the second server (natsd only: the reference run has
 * the reference on both sides above). */
Test(wscluster, ws_connect_urls_mixed, .timeout = 60)
{
    if (nd_integ_is_reference() || nd_integ_reference_path() == NULL)
        return;
    ws_cluster(nd_integ_reference_path());
}

/* websocket { ping_interval } (2.11; natsd only: 2.9.10 does not know the field): WebSocket
 * clients are pinged on their own period. With the server's default (2 minutes) a client that
 * never answers would not be dropped within the test; here it gets two PINGs and is closed as
 * stale. */
Test(wsauth, ping_interval, .timeout = 30)
{
    if (nd_integ_is_reference())
        return;
    nd_integ_conf_t cf = {0};
    nd_integ_server_t *s2 = auth_server(&cf, "", "ping_interval: \"100ms\"");
    int fd = ws_open();
    send_text(fd, "CONNECT {\"verbose\":false}\r\n");
    int pings = 0;
    for (;;) {
        uint8_t b0;
        char *p;
        size_t n;
        cr_assert(recv_frame(fd, &b0, &p, &n), "end of stream after %d PINGs", pings);
        bool close_frame = b0 == 0x88;
        if (!close_frame && strstr(p, "PING\r\n") != NULL)
            pings++;
        free(p);
        if (close_frame)
            break;
    }
    cr_assert_eq(pings, 2);
    close(fd);
    nd_integ_conf_stop(s2, &cf);
}

/* ---- leaf nodes over WebSocket ---- */

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The subscriptions count of the first leaf connection in /leafz (-1: none). */
static int
leaf_subs(int mport)
{
    char *body = nd_integ_http_get(mport, "/leafz");
    json_error_t err;
    json_t *o = json_loads(body, 0, &err);
    free(body);
    cr_assert_not_null(o);
    json_t *l = json_array_get(json_object_get(o, "leafs"), 0);
    int n = l != NULL ? (int)json_integer_value(json_object_get(l, "subscriptions")) : -1;
    json_decref(o);
    return n;
}

/* Waits (polling /leafz, as test_leaf.c) until the leaf connection on mport holds n
 * subscriptions: the peer's LS+ has arrived. */
static void
wait_leaf_subs(int mport, int n)
{
    int64_t deadline = mono_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    int got;
    while ((got = leaf_subs(mport)) != n) {
        cr_assert(mono_ms() < deadline, "/leafz on %d: %d subscriptions, want %d", mport, got, n);
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

typedef struct ws_node {
    nd_integ_conf_t cf;
    nd_integ_server_t *srv;
    int port, mport;
} ws_node_t;

static void
ws_node_start(ws_node_t *n, const char *bin, const char *text)
{
    /* Exactly the config's ports (nd_integ_conf_start would add a random client port). */
    nd_integ_conf_write(&n->cf, text);
    n->srv = nd_integ_server_start_bin(bin != NULL ? bin : nd_integ_server_path(),
                                       (const char *const[]){"-c", n->cf.path, NULL});
}

/* A hub with a leafnodes port and a websocket port, and a leaf whose remote is the hub's
 * ws:// URL (path /leafnode, masked frames): messages and interest cross both ways. hub_bin,
 * leaf_bin: a binary other than the server under test (the reference), or NULL. */
static void
ws_leaf_opts(const char *hub_bin, const char *leaf_bin, const char *hub_ws, const char *remote)
{
    ws_node_t hub = {0}, leaf = {0};
    int hws = nd_integ_free_port();
    hub.port = nd_integ_free_port();
    hub.mport = nd_integ_free_port();
    leaf.port = nd_integ_free_port();
    leaf.mport = nd_integ_free_port();
    char text[1024];
    snprintf(text, sizeof text,
             "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\nleafnodes { listen: 127.0.0.1:%d }\n"
             "websocket { host: 127.0.0.1, port: %d, no_tls: true %s }\n",
             hub.port, hub.mport, nd_integ_free_port(), hws, hub_ws);
    ws_node_start(&hub, hub_bin, text);
    snprintf(text, sizeof text,
             "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n"
             "leafnodes { remotes: [ { url: \"ws://127.0.0.1:%d\" %s } ] }\n",
             leaf.port, leaf.mport, hws, remote);
    ws_node_start(&leaf, leaf_bin, text);
    nd_integ_wait_leafs(hub.mport, 1);
    nd_integ_wait_leafs(leaf.mport, 1);
    nd_integ_conn_t *h = nd_integ_conn_open_port(hub.port);
    nd_integ_conn_t *l = nd_integ_conn_open_port(leaf.port);
    ND_SEND(h, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_SEND(l, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    /* Each side's first LS+ is the peer's $LDS. loop-detection subject; it may arrive after
     * /leafz lists the connection, so the baselines are taken once it is there. */
    int64_t deadline = mono_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    while (leaf_subs(hub.mport) < 1 || leaf_subs(leaf.mport) < 1) {
        cr_assert(mono_ms() < deadline, "no $LDS. subscription on a side");
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    int hbase = leaf_subs(hub.mport), lbase = leaf_subs(leaf.mport);
    /* leaf -> hub */
    ND_SEND(h, "SUB hub.foo 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    wait_leaf_subs(leaf.mport, lbase + 1);
    ND_SEND(l, "PUB hub.foo 5\r\nhello\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    ND_EXPECT(h, "MSG hub.foo 1 5\r\nhello\r\n");
    /* hub -> leaf, a payload big enough to be framed with a 16-bit length */
    ND_SEND(l, "SUB leaf.foo 7\r\nPING\r\n");
    ND_EXPECT(l, "PONG\r\n");
    wait_leaf_subs(hub.mport, hbase + 1);
    char big[400], line[512];
    memset(big, 'z', 300);
    big[300] = '\0';
    snprintf(line, sizeof line, "PUB leaf.foo 300\r\n%s\r\nPING\r\n", big);
    ND_SENDS(h, line);
    ND_EXPECT(h, "PONG\r\n");
    snprintf(line, sizeof line, "MSG leaf.foo 7 300\r\n%s\r\n", big);
    nd_integ_expect(l, line, strlen(line));
    nd_integ_conn_close(h);
    nd_integ_conn_close(l);
    nd_integ_conf_stop(leaf.srv, &leaf.cf);
    nd_integ_conf_stop(hub.srv, &hub.cf);
}

static void
ws_leaf(const char *hub_bin, const char *leaf_bin)
{
    ws_leaf_opts(hub_bin, leaf_bin, "", "");
}

Test(wsleaf, natsd_both, .timeout = 60)
{
    ws_leaf(NULL, NULL);
}

/* The server under test as the hub, nats-server 2.9.10 as the leaf, and the other way round
 * (natsd only: the reference run has the reference in both roles above). */
Test(wsleaf, mixed_hub, .timeout = 60)
{
    if (nd_integ_is_reference() || nd_integ_reference_path() == NULL)
        return;
    ws_leaf(NULL, nd_integ_reference_path());
}

Test(wsleaf, mixed_leaf, .timeout = 60)
{
    if (nd_integ_is_reference() || nd_integ_reference_path() == NULL)
        return;
    ws_leaf(nd_integ_reference_path(), NULL);
}

/* A leaf that asks for compression and no masking (nats-server's ws_compression,
 * ws_no_masking) of a hub with compression on: compressed frames both ways, unmasked from the
 * leaf. The leaf is the reference; in the reference run, both. */
Test(wsleaf, compressed_unmasked, .timeout = 60)
{
    const char *leaf = nd_integ_reference_path();
    if (leaf == NULL)
        return;
    ws_leaf_opts(NULL, leaf, ", compression: true", ", ws_compression: true, ws_no_masking: true");
}

/* The same with natsd as the leaf asking for them, of a natsd hub and of a nats-server hub. */
Test(wsleaf, natsd_leaf_compressed_unmasked, .timeout = 60)
{
    if (nd_integ_is_reference())
        return;
    ws_leaf_opts(NULL, NULL, ", compression: true", ", ws_compression: true, ws_no_masking: true");
    if (nd_integ_reference_path() != NULL)
        ws_leaf_opts(nd_integ_reference_path(), NULL, ", compression: true",
                     ", ws_compression: true, ws_no_masking: true");
}

/* /leafnode on a server without a leafnodes port: the 101, then the socket closes without a
 * frame (nats-server logs "Not configured to accept leaf node connections"). */
Test(ws, leafnode_path_without_leafnodes)
{
    int fd = ws_dial();
    char req[512];
    int n = snprintf(req, sizeof req,
                     "GET /leafnode HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\n%sSec-WebSocket-Version: 13\r\n\r\n",
                     ws_port, key_hdr);
    send_raw(fd, req, (size_t)n);
    char head[1024];
    recv_head(fd, head, sizeof head);
    cr_assert_str_eq(head, upgrade_101);
    expect_eof(fd);
    close(fd);
}

/* ---- start-up checks ---- */

/* Runs the server under test with `-c` text to its exit; returns its exit status and its
 * output (stdout and stderr, owned) in *out. */
static int
run_conf(const char *text, char **out)
{
    nd_integ_conf_t cf = {0};
    nd_integ_conf_write(&cf, text);
    char op[256];
    nd_integ_conf_file(&cf, "run.out", op, sizeof op);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execl(nd_integ_server_path(), nd_integ_server_path(), "-c", cf.path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    int64_t deadline = mono_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("the server did not exit");
        }
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    FILE *f = fopen(op, "r");
    cr_assert_not_null(f);
    *out = calloc(1, 65536);
    size_t n = fread(*out, 1, 65535, f);
    (*out)[n] = '\0';
    fclose(f);
    nd_integ_conf_remove(&cf);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* nats-server's validateWebsocketOptions refuses to start (exit 1) with these, in its words;
 * `-t` does not check them (both say the file is valid). */
Test(wsstart, refusals, .timeout = 60)
{
    static const struct {
        const char *conf, *text;
    } cases[] = {
        {"websocket { host: 127.0.0.1, port: -1 }\n", "websocket requires TLS configuration"},
        {"websocket { host: 127.0.0.1, port: -1, no_tls: true, no_auth_user: x }\n",
         "no_auth_user: \"x\" present, but users are not defined"},
        {"authorization { users: [ {user: a, password: b} ] }\n"
         "websocket { host: 127.0.0.1, port: -1, no_tls: true, no_auth_user: x }\n",
         "no_auth_user: \"x\" not present as user in authorization block or account "
         "configuration"},
        {"authorization { users: [ {user: a, password: b} ] }\n"
         "websocket { host: 127.0.0.1, port: -1, no_tls: true, authorization { user: u, "
         "password: p } }\n",
         "websocket authentication username not compatible with presence of users/nkeys"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "listen: 127.0.0.1:-1\n%s", cases[i].conf);
        char *out;
        int st = run_conf(text, &out);
        cr_assert_eq(st, 1, "%s: exit %d: %s", cases[i].text, st, out);
        cr_assert(strstr(out, cases[i].text) != NULL, "want %s in: %s", cases[i].text, out);
        free(out);
    }
}

/* ---- MQTT over WebSocket ---- */

/* The path /mqtt of the websocket port carries MQTT in binary frames (nats-server's mqttWSPath;
 * 2.9.10 serves it too and every expectation below holds for both unless a test says so): the
 * 101 names the subprotocol "mqtt" whether the client asked for it or not, MQTT packets may
 * span frames or share one, the connection follows the mqtt block's authorization (not the
 * websocket block's) and /connz lists it as an MQTT client. X-Forwarded-For goes in front of
 * the address in the connection's log lines only: /connz keeps the socket's address. */

static nd_integ_conf_t mconf;
static nd_integ_server_t *msrv;

/* A server with websocket and mqtt (which needs server_name and JetStream in 2.9.10), debug
 * logging for the log line checks; ws_extra and mqtt_extra go inside those blocks. */
static void
mq_up(const char *ws_extra, const char *mqtt_extra)
{
    ws_port = nd_integ_free_port();
    http_port = nd_integ_free_port();
    int mport = nd_integ_free_port();
    char store[256], text[2048];
    nd_integ_conf_file(&mconf, "store", store, sizeof store);
    snprintf(text, sizeof text,
             "server_name: wsmqtt\ndebug: true\nlisten: 127.0.0.1:%d\nhttp: \"127.0.0.1:%d\"\n"
             "jetstream { store_dir: \"%s\" }\n"
             "websocket { host: 127.0.0.1, port: %d, no_tls: true\n%s\n}\n"
             "mqtt { host: 127.0.0.1, port: %d\n%s\n}\n",
             nd_integ_free_port(), http_port, store, ws_port, ws_extra ? ws_extra : "", mport,
             mqtt_extra ? mqtt_extra : "");
    msrv = nd_integ_conf_start(&mconf, text);
    char line[128];
    snprintf(line, sizeof line, "Listening for MQTT clients on mqtt://127.0.0.1:%d", mport);
    nd_integ_server_wait_log(msrv, 0, line);
}

static void
mq_fini(void)
{
    if (msrv != NULL)
        nd_integ_conf_stop(msrv, &mconf);
    msrv = NULL;
    nd_integ_cleanup();
}

TestSuite(wsmqtt, .fini = mq_fini, .timeout = 60);

/* An MQTT connection over WebSocket: the socket and what its frames brought that no packet has
 * taken yet. */
typedef struct {
    int fd;
    int port; /* our end's port, as the server sees it */
    uint8_t b[65536];
    size_t n;
} mqws_t;

/* body wrapped in a fixed header with type/flags tf. */
static mbuf_t
mp_wrap(uint8_t tf, const mbuf_t *body)
{
    mbuf_t o;
    pkt(&o, tf, body);
    return o;
}

static mbuf_t
mp_connect(const char *cid, const char *user, const char *pass)
{
    mbuf_t b = {.n = 0};
    put_str(&b, "MQTT");
    b.b[b.n++] = 4;                                                       /* 3.1.1 */
    b.b[b.n++] = (uint8_t)(0x02 | (user ? 0x80 : 0) | (pass ? 0x40 : 0)); /* clean session */
    put_u16(&b, 60);
    put_str(&b, cid);
    if (user)
        put_str(&b, user);
    if (pass)
        put_str(&b, pass);
    return mp_wrap(0x10, &b);
}

static mbuf_t
mp_subscribe(uint16_t pid, const char *filter, int qos)
{
    mbuf_t b = {.n = 0};
    put_u16(&b, pid);
    put_str(&b, filter);
    b.b[b.n++] = (uint8_t)qos;
    return mp_wrap(0x82, &b);
}

static mbuf_t
mp_publish(const char *topic, const char *msg, int qos, uint16_t pid)
{
    mbuf_t b = {.n = 0};
    put_str(&b, topic);
    if (qos > 0)
        put_u16(&b, pid);
    memcpy(b.b + b.n, msg, strlen(msg));
    b.n += strlen(msg);
    return mp_wrap((uint8_t)(0x30 | (qos << 1)), &b);
}

/* Sends p in one binary frame. */
static void
mq_send(const mqws_t *m, const mbuf_t *p)
{
    send_frame(m->fd, BIN, p->b, p->n, false);
}

/* Reads the next MQTT packet (fixed header included) into out, reading frames as needed.
 * Returns: false when the server closed (a close frame or the end of the stream). */
static bool
mq_recv(mqws_t *m, mbuf_t *out)
{
    for (;;) {
        if (m->n >= 2) {
            size_t rl = 0, i = 1;
            unsigned shift = 0;
            bool done = false;
            while (i < m->n && i <= 4) {
                rl |= (size_t)(m->b[i] & 0x7F) << shift;
                shift += 7;
                if (!(m->b[i++] & 0x80)) {
                    done = true;
                    break;
                }
            }
            if (done && m->n >= i + rl) {
                cr_assert(i + rl <= sizeof out->b, "packet too large");
                memcpy(out->b, m->b, i + rl);
                out->n = i + rl;
                memmove(m->b, m->b + i + rl, m->n - i - rl);
                m->n -= i + rl;
                return true;
            }
        }
        uint8_t b0;
        char *p;
        size_t n;
        if (!recv_frame(m->fd, &b0, &p, &n))
            return false;
        if (b0 == 0x88) {
            free(p);
            return false;
        }
        cr_assert_eq(b0, BIN, "frame 0x%02x", b0);
        cr_assert(m->n + n <= sizeof m->b);
        memcpy(m->b + m->n, p, n);
        m->n += n;
        free(p);
    }
}

static void
mq_expect(mqws_t *m, const void *want, size_t wn)
{
    mbuf_t p;
    cr_assert(mq_recv(m, &p), "closed, expected a packet 0x%02x", ((const uint8_t *)want)[0]);
    cr_assert(p.n == wn && memcmp(p.b, want, wn) == 0, "got %s, want %s",
              nd_integ_escape(p.b, p.n, 64), nd_integ_escape(want, wn, 64));
}

#define MQ_EXPECT(m, lit) mq_expect((m), (lit), sizeof(lit) - 1)

/* Upgrades a new connection on /mqtt with extra request headers (may be ""), checks the 101
 * (the subprotocol named whatever the request said), then sends CONNECT split over two frames
 * and checks the CONNACK's return code rc. */
static void
mq_ws_open(mqws_t *m, const char *extra, const char *cid, const char *user, const char *pass,
           int rc)
{
    m->fd = ws_dial();
    m->n = 0;
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    cr_assert(getsockname(m->fd, (struct sockaddr *)&a, &al) == 0);
    m->port = ntohs(a.sin_port);
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\n%sSec-WebSocket-Version: 13\r\n%s\r\n",
                     ws_port, key_hdr, extra);
    send_raw(m->fd, req, (size_t)n);
    char head[1024], want[1024];
    recv_head(m->fd, head, sizeof head);
    snprintf(want, sizeof want, "%.*sSec-Websocket-Protocol: mqtt\r\n\r\n",
             (int)(sizeof upgrade_101 - 3), upgrade_101);
    cr_assert_str_eq(head, want);
    mbuf_t c = mp_connect(cid, user, pass);
    send_frame(m->fd, BIN, c.b, 5, false);
    send_frame(m->fd, BIN, c.b + 5, c.n - 5, false);
    uint8_t ack[4] = {0x20, 0x02, 0x00, (uint8_t)rc};
    mq_expect(m, ack, sizeof ack);
}

/* The CONNECT in two frames, a PUBLISH in three, two packets in one frame; the server's packets
 * come back in binary frames. The subprotocol is named when asked for and when not. */
Test(wsmqtt, packets_in_frames)
{
    mq_up(NULL, NULL);
    mqws_t *m = calloc(1, sizeof *m);
    mq_ws_open(m, "Sec-WebSocket-Protocol: mqtt\r\n", "wsframes", NULL, NULL, 0);
    mbuf_t s = mp_subscribe(1, "ws/t", 0);
    mq_send(m, &s);
    MQ_EXPECT(m, "\x90\x03\x00\x01\x00");
    mbuf_t p = mp_publish("ws/t", "hello", 0, 0);
    send_frame(m->fd, BIN, p.b, 1, false);
    send_frame(m->fd, BIN, p.b + 1, 4, false);
    send_frame(m->fd, BIN, p.b + 5, p.n - 5, false);
    MQ_EXPECT(m, "\x30\x0b\x00\x04ws/thello");
    /* Two PUBLISHes and a PINGREQ in one frame, the last one also split over a fragment. */
    mbuf_t a = mp_publish("ws/t", "a", 0, 0), b = mp_publish("ws/t", "b", 0, 0);
    uint8_t both[64];
    memcpy(both, a.b, a.n);
    memcpy(both + a.n, b.b, b.n);
    memcpy(both + a.n + b.n, "\xc0", 1);
    send_frame(m->fd, 0x02, both, a.n + b.n + 1, false); /* binary, not final */
    send_frame(m->fd, 0x80, "\x00", 1, false);           /* continuation, final */
    MQ_EXPECT(m, "\x30\x07\x00\x04ws/ta");
    MQ_EXPECT(m, "\x30\x07\x00\x04ws/tb");
    MQ_EXPECT(m, "\xd0\x00");
    close(m->fd);
    /* No Sec-WebSocket-Protocol in the request: the 101 names it all the same. */
    mq_ws_open(m, "", "wsframes2", NULL, NULL, 0);
    mbuf_t q = mp_publish("ws/q", "x", 1, 9);
    mq_send(m, &q);
    MQ_EXPECT(m, "\x40\x02\x00\x09");
    close(m->fd);
    free(m);
    nd_integ_conf_stop(msrv, &mconf);
    msrv = NULL;
}

/* An MQTT client over WebSocket and a NATS client see each other's messages (topic a/b is
 * subject a.b), and a plain MQTT client would too: it is the same MQTT. */
Test(wsmqtt, nats_both_ways)
{
    mq_up(NULL, NULL);
    nd_integ_conn_t *c = nd_integ_conn_open(msrv);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nSUB from.ws 1\r\n");
    ND_PING(c);
    mqws_t *m = calloc(1, sizeof *m);
    mq_ws_open(m, "", "wsnats", NULL, NULL, 0);
    mbuf_t s = mp_subscribe(1, "from/nats", 0);
    mq_send(m, &s);
    MQ_EXPECT(m, "\x90\x03\x00\x01\x00");
    mbuf_t p = mp_publish("from/ws", "to nats", 1, 3);
    mq_send(m, &p);
    MQ_EXPECT(m, "\x40\x02\x00\x03");
    ND_EXPECT(c, "MSG from.ws 1 7\r\nto nats\r\n");
    ND_SEND(c, "PUB from.nats 7\r\nto mqtt\r\n");
    ND_PING(c);
    MQ_EXPECT(m, "\x30\x12\x00\x09"
                 "from/natsto mqtt");
    nd_integ_conn_close(c);
    close(m->fd);
    free(m);
    nd_integ_conf_stop(msrv, &mconf);
    msrv = NULL;
}

/* The connection of a client id in /connz: NULL when none. */
static json_t *
connz_mqtt_client(json_t *cz, const char *cid)
{
    json_t *conns = json_object_get(cz, "connections");
    for (size_t i = 0; i < json_array_size(conns); i++) {
        json_t *c = json_array_get(conns, i);
        const char *id = json_string_value(json_object_get(c, "mqtt_client"));
        if (id != NULL && strcmp(id, cid) == 0)
            return c;
    }
    return NULL;
}

/* /connz lists an MQTT client over WebSocket as an MQTT client (type "mqtt", its client id),
 * with the socket's address even when the upgrade carried X-Forwarded-For, which shows in the
 * log lines instead ("10.1.2.3/127.0.0.1:<port> - ..."), for MQTT and NATS clients alike: the
 * first header line, when it is one address (IPv6 in brackets); a list is not one. The id tag
 * after the address is nats-server's: "mid_ws:<cid>" for MQTT over WebSocket, "wid:<cid>" for a
 * NATS client over WebSocket. */
Test(wsmqtt, connz_and_forwarded_for)
{
    mq_up(NULL, NULL);
    size_t mark = nd_integ_server_log_mark(msrv);
    mqws_t *m = calloc(1, sizeof *m);
    mq_ws_open(m, "X-Forwarded-For: 10.1.2.3\r\nX-Forwarded-For: 10.4.5.6\r\n", "wsmon", NULL, NULL,
               0);
    json_t *cz = http_json("/connz");
    json_t *c = connz_mqtt_client(cz, "wsmon");
    cr_assert_not_null(c, "no wsmon in /connz");
    cr_assert_str_eq(json_string_value(json_object_get(c, "type")), "mqtt");
    cr_assert_str_eq(json_string_value(json_object_get(c, "kind")), "Client");
    cr_assert_str_eq(json_string_value(json_object_get(c, "ip")), "127.0.0.1");
    cr_assert_eq(json_integer_value(json_object_get(c, "port")), m->port);
    json_decref(cz);
    char want[128];
    snprintf(want, sizeof want, "10.1.2.3/127.0.0.1:%d - mid_ws:", m->port);
    nd_integ_server_wait_log(msrv, mark, want);
    cr_assert(!nd_integ_server_log_has(msrv, mark, "10.4.5.6"));
    close(m->fd);
    free(m);

    /* NATS clients over WebSocket: an IPv6 address; a list. */
    int fd6 = ws_open_ext("X-Forwarded-For: fd00::7\r\n", "");
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    cr_assert(getsockname(fd6, (struct sockaddr *)&a, &al) == 0);
    send_text(fd6, "CONNECT {\"verbose\":false,\"name\":\"xff6\"}\r\nPING\r\n");
    expect_stream(fd6, "PONG\r\n");
    snprintf(want, sizeof want, "[fd00::7]/127.0.0.1:%d - wid:", ntohs(a.sin_port));
    nd_integ_server_wait_log(msrv, mark, want);
    cz = http_json("/connz");
    json_t *conns = json_object_get(cz, "connections");
    bool found = false;
    for (size_t i = 0; i < json_array_size(conns); i++) {
        json_t *e = json_array_get(conns, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name != NULL && strcmp(name, "xff6") == 0) {
            found = true;
            cr_assert_str_eq(json_string_value(json_object_get(e, "ip")), "127.0.0.1");
        }
    }
    cr_assert(found, "no xff6 in /connz");
    json_decref(cz);
    int fdl = ws_open_ext("X-Forwarded-For: 10.7.7.7, 10.8.8.8\r\n", "");
    al = sizeof a;
    cr_assert(getsockname(fdl, (struct sockaddr *)&a, &al) == 0);
    send_text(fdl, "CONNECT {\"verbose\":false}\r\nPING\r\n");
    expect_stream(fdl, "PONG\r\n");
    snprintf(want, sizeof want, " 127.0.0.1:%d - wid:", ntohs(a.sin_port));
    nd_integ_server_wait_log(msrv, mark, want);
    cr_assert(!nd_integ_server_log_has(msrv, mark, "10.7.7.7"));
    close(fd6);
    close(fdl);
    nd_integ_conf_stop(msrv, &mconf);
    msrv = NULL;
}

/* The mqtt block's authorization applies to MQTT over WebSocket, the websocket block's does
 * not (nats-server's clientType is MQTT for it): a refused CONNECT gets return code 5, then the
 * close frame (1008 "Authentication Failure"). Without an mqtt authorization, the websocket
 * block's does not apply either. */
Test(wsmqtt, authorization)
{
    mq_up("authorization { user: wsu, password: wsp }",
          "authorization { user: mqu, password: mqp }");
    mqws_t *m = calloc(1, sizeof *m);
    mq_ws_open(m, "", "auth1", "mqu", "mqp", 0);
    close(m->fd);
    mq_ws_open(m, "", "auth2", "wsu", "wsp", 5);
    mbuf_t p;
    cr_assert(!mq_recv(m, &p), "still open after return code 5");
    close(m->fd);
    mq_ws_open(m, "", "auth3", NULL, NULL, 5);
    close(m->fd);
    nd_integ_conf_stop(msrv, &mconf);
    mq_up("authorization { user: wsu, password: wsp }", NULL);
    mq_ws_open(m, "", "auth4", NULL, NULL, 0);
    close(m->fd);
    free(m);
    nd_integ_conf_stop(msrv, &mconf);
    msrv = NULL;
}

/* /mqtt on a server without an mqtt block: nats-server 2.10+ answers 404 before looking at the
 * request further ("mqtt websocket endpoint not enabled" in its log), as natsd. 2.9.10 upgrades
 * and fails the MQTT CONNECT later (after a JetStream timeout), which the reference shows here
 * as its 101. */
Test(ws, mqtt_path_without_mqtt)
{
    char req[512];
    snprintf(req, sizeof req,
             "GET /mqtt HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
             "Connection: Upgrade\r\n%sSec-WebSocket-Version: 13\r\n\r\n",
             ws_port, key_hdr);
    if (nd_integ_is_reference()) {
        int fd = ws_dial();
        send_raw(fd, req, strlen(req));
        char head[1024], want[1024];
        recv_head(fd, head, sizeof head);
        snprintf(want, sizeof want, "%.*sSec-Websocket-Protocol: mqtt\r\n\r\n",
                 (int)(sizeof upgrade_101 - 3), upgrade_101);
        cr_assert_str_eq(head, want);
        close(fd);
        return;
    }
    size_t mark = nd_integ_server_log_mark(srv);
    bad_upgrade(req, "HTTP/1.1 404 Not Found\r\n", "Not Found\n");
    nd_integ_server_wait_log(srv, mark,
                             "websocket handshake error: mqtt websocket endpoint not "
                             "enabled");
}
