/* Unit tests of the WebSocket frame codec and transport (src/net/ws.c): the transport runs over
 * one end of a socketpair, the test plays the client on the other end byte by byte. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/ws.h"

static int peer;
static nd_transport_t tr;

static void
setup(void)
{
    int sv[2];
    cr_assert(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    nd_tcp_init(&tr, sv[0]);
    nd_ws_wrap(&tr, NULL, 0);
    peer = sv[1];
}

static void
teardown(void)
{
    tr.vt->close(&tr);
    close(tr.fd);
    close(peer);
}

TestSuite(ws, .init = setup, .fini = teardown);

/* A masked client frame. */
static size_t
frame(uint8_t *out, uint8_t b0, const char *p, size_t n)
{
    static const uint8_t key[4] = {1, 2, 3, 4};
    size_t h = 0;
    out[h++] = b0;
    if (n < 126) {
        out[h++] = (uint8_t)(0x80 | n);
    } else {
        out[h++] = 0x80 | 126;
        out[h++] = (uint8_t)(n >> 8);
        out[h++] = (uint8_t)n;
    }
    memcpy(out + h, key, 4);
    h += 4;
    for (size_t i = 0; i < n; i++)
        out[h + i] = (uint8_t)p[i] ^ key[i & 3];
    return h + n;
}

/* Reads everything the transport gives now. */
static size_t
drain(char *buf, size_t cap)
{
    size_t got = 0;
    for (;;) {
        ssize_t n = tr.vt->read(&tr, buf + got, cap - got);
        if (n <= 0)
            return got;
        got += (size_t)n;
    }
}

Test(ws, accept_key_rfc6455_example)
{
    char out[29];
    nd_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
    cr_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

Test(ws, header_lengths)
{
    uint8_t h[14];
    cr_assert_eq(nd_ws_frame_header(h, 2, 125), 2);
    cr_assert_eq(h[0], 0x82);
    cr_assert_eq(h[1], 125);
    cr_assert_eq(nd_ws_frame_header(h, 2, 126), 4);
    cr_assert_eq(h[1], 126);
    cr_assert_eq((h[2] << 8) | h[3], 126);
    cr_assert_eq(nd_ws_frame_header(h, 2, 70000), 10);
    cr_assert_eq(h[1], 127);
    cr_assert_eq(h[7], 0x01); /* 70000 = 0x11170 */
    cr_assert_eq(h[8], 0x11);
    cr_assert_eq(h[9], 0x70);
}

/* Two frames (one text, one a fragment with a continuation) delivered one byte at a time:
 * headers split anywhere, the payload comes out as one stream. */
Test(ws, byte_by_byte)
{
    uint8_t w[512];
    size_t n = frame(w, 0x81, "PUB a 2\r\n", 9);
    n += frame(w + n, 0x02, "hi", 2);
    n += frame(w + n, 0x80, "\r\nPING\r\n", 8);
    char got[64] = "";
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert(write(peer, w + i, 1) == 1);
        have += drain(got + have, sizeof got - 1 - have);
    }
    cr_assert_eq(have, 19);
    cr_assert_str_eq(got, "PUB a 2\r\nhi\r\nPING\r\n");
}

Test(ws, long_frame)
{
    static char p[300];
    memset(p, 'x', sizeof p);
    uint8_t w[400];
    size_t n = frame(w, 0x82, p, sizeof p);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char got[400];
    cr_assert_eq(drain(got, sizeof got), sizeof p);
    cr_assert(memcmp(got, p, sizeof p) == 0);
}

Test(ws, ping_answered_and_close_echoed)
{
    uint8_t w[64];
    size_t n = frame(w, 0x89, "ab", 2);
    n += frame(w + n, 0x88, "\x03\xe8ok", 4);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), 0); /* the close: end of stream */
    tr.vt->close(&tr);                                  /* writes the echo */
    nd_tcp_init(&tr, tr.fd);
    uint8_t r[64];
    ssize_t k = read(peer, r, sizeof r);
    cr_assert_eq(k, 4 + 6);
    cr_assert(memcmp(r,
                     "\x8a\x02"
                     "ab",
                     4) == 0);
    cr_assert(memcmp(r + 4, "\x88\x04\x03\xe8ok", 6) == 0);
}

Test(ws, unmasked_is_protocol_error)
{
    cr_assert(write(peer, "\x82\x02hi", 4) == 4);
    char buf[16];
    errno = 0;
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), -1);
    cr_assert_eq(errno, EPROTO);
    tr.vt->close(&tr);
    nd_tcp_init(&tr, tr.fd);
    uint8_t r[64];
    ssize_t k = read(peer, r, sizeof r);
    cr_assert_eq(k, 2 + 2 + 16);
    cr_assert_eq(r[0], 0x88);
    cr_assert_eq((r[2] << 8) | r[3], 1002);
    cr_assert(memcmp(r + 4, "mask bit missing", 16) == 0);
}

Test(ws, oversized_frame_closes_1009)
{
    uint8_t w[14] = {0x82, 0x80 | 127, 0, 0, 0, 0, 0x04, 0, 0, 1, 1, 2, 3, 4}; /* 64 MiB + 1 */
    cr_assert(write(peer, w, sizeof w) == (ssize_t)sizeof w);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), -1);
    tr.vt->close(&tr);
    nd_tcp_init(&tr, tr.fd);
    uint8_t r[64];
    cr_assert(read(peer, r, sizeof r) >= 4);
    cr_assert_eq((r[2] << 8) | r[3], 1009);
}

/* Output is one unmasked binary frame per write, the header in the same writev. */
Test(ws, write_frames)
{
    cr_assert_eq(nd_transport_write(&tr, "PONG\r\n", 6), 6);
    uint8_t r[16];
    cr_assert_eq(read(peer, r, sizeof r), 8);
    cr_assert(memcmp(r, "\x82\x06PONG\r\n", 8) == 0);
}

/* A frame the socket takes in part is finished by the next writes before a new one starts. */
Test(ws, partial_write_resumes)
{
    int sz = 4096;
    setsockopt(tr.fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    static char big[1 << 20];
    memset(big, 'y', sizeof big);
    size_t off = 0;
    ssize_t n = nd_transport_write(&tr, big, sizeof big);
    cr_assert(n > 0 && (size_t)n < sizeof big);
    off += (size_t)n;
    /* The peer reads everything while the writer retries the rest. */
    size_t seen = 0;
    static uint8_t r[(1 << 20) + 64];
    while (off < sizeof big) {
        ssize_t k = read(peer, r + seen, sizeof r - seen);
        cr_assert(k > 0);
        seen += (size_t)k;
        n = nd_transport_write(&tr, big + off, sizeof big - off);
        if (n > 0)
            off += (size_t)n;
        else
            cr_assert(errno == EAGAIN);
    }
    cr_assert_eq(nd_transport_write(&tr, "z", 1), 1);
    while (seen < 10 + sizeof big + 3) {
        ssize_t k = read(peer, r + seen, sizeof r - seen);
        cr_assert(k > 0);
        seen += (size_t)k;
    }
    cr_assert_eq(r[0], 0x82);
    cr_assert_eq(r[1], 127);
    cr_assert_eq(r[10], 'y');
    cr_assert_eq(r[10 + sizeof big - 1], 'y');
    cr_assert(memcmp(r + 10 + sizeof big, "\x82\x01z", 3) == 0);
}
