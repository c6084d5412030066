/* Unit tests of the WebSocket frame codec and transport (src/net/ws.c): the transport runs over
 * one end of a socketpair, the test plays the client on the other end byte by byte. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zlib.h>

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

/* ---- permessage-deflate ---- */

static void
use_compression(int64_t max_payload)
{
    nd_ws_configure(&tr, &(nd_ws_params_t){.compress = true, .max_payload = max_payload});
}

/* A raw deflate stream of p, sync-flushed, without the trailing 00 00 ff ff (RFC 7692). */
static size_t
deflate_msg(uint8_t *out, size_t cap, const void *p, size_t n)
{
    z_stream z = {0};
    cr_assert(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    cr_assert(deflate(&z, Z_SYNC_FLUSH) == Z_OK);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    cr_assert(len >= 4);
    return len - 4;
}

/* A masked client frame of any length (the 16-bit form when needed). */
static size_t
frame_bin(uint8_t *out, uint8_t b0, const uint8_t *p, size_t n)
{
    return frame(out, b0, (const char *)p, n);
}

/* A compressed message comes out whole even through a buffer smaller than it inflates to,
 * and the plain frame behind it in the same segment comes after it. */
Test(ws, inflate_across_small_reads)
{
    use_compression(0);
    static char msg[3000];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (char)('a' + i % 7);
    uint8_t d[4096];
    size_t dn = deflate_msg(d, sizeof d, msg, sizeof msg);
    cr_assert(dn < 4000);
    static uint8_t w[8192];
    size_t n = frame_bin(w, 0x42, d, 3);        /* RSV1, binary, not final */
    n += frame_bin(w + n, 0x80, d + 3, dn - 3); /* continuation, final */
    n += frame(w + n, 0x82, "TAIL", 4);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    static char got[4096];
    size_t have = 0;
    for (int i = 0; i < 1000 && have < sizeof msg + 4; i++) {
        ssize_t k = tr.vt->read(&tr, got + have, 100);
        cr_assert(k > 0, "read %zd (%s) after %zu", k, strerror(errno), have);
        have += (size_t)k;
        (void)nd_ws_read_again(&tr);
    }
    cr_assert_eq(have, sizeof msg + 4);
    cr_assert(memcmp(got, msg, sizeof msg) == 0);
    cr_assert(memcmp(got + sizeof msg, "TAIL", 4) == 0);
    cr_assert(!nd_ws_read_again(&tr));
}

/* More inflated bytes than max_payload: what fits is returned, then the read fails with
 * EMSGSIZE and a 1009 close frame is queued. */
Test(ws, inflate_limit)
{
    use_compression(1000);
    static char zeros[100000];
    uint8_t d[4096];
    size_t dn = deflate_msg(d, sizeof d, zeros, sizeof zeros);
    cr_assert(dn < 1000);
    static uint8_t w[8192];
    size_t n = frame_bin(w, 0xC2, d, dn);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    static char got[200000];
    size_t have = 0;
    ssize_t k;
    while ((k = tr.vt->read(&tr, got + have, sizeof got - have)) > 0)
        have += (size_t)k;
    cr_assert_eq(have, 1000);
    cr_assert_eq(k, -1);
    cr_assert_eq(errno, EMSGSIZE);
    tr.vt->close(&tr);
    nd_tcp_init(&tr, tr.fd);
    uint8_t r[64];
    cr_assert(read(peer, r, sizeof r) >= 4);
    cr_assert_eq(r[0], 0x88);
    cr_assert_eq((r[2] << 8) | r[3], 1009);
}

/* Compressed bytes gathered for one message are limited to 8 x max_payload. */
Test(ws, compressed_gather_limit)
{
    use_compression(100);
    static uint8_t junk[1000];
    static uint8_t w[1100];
    size_t n = frame_bin(w, 0xC2, junk, sizeof junk);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char buf[64];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), -1);
    cr_assert_eq(errno, EMSGSIZE);
}

/* Writes above 64 bytes become one compressed frame (RSV1) that inflates to them; smaller ones
 * stay plain. */
Test(ws, deflate_writes)
{
    use_compression(0);
    cr_assert_eq(nd_transport_write(&tr, "PONG\r\n", 6), 6);
    static char big[2000];
    memset(big, 'q', sizeof big);
    struct iovec iov[2] = {{big, 1000}, {big + 1000, 1000}};
    cr_assert_eq(tr.vt->writev(&tr, iov, 2), 2000);
    uint8_t r[4096];
    ssize_t k = read(peer, r, sizeof r);
    cr_assert(k > 8 + 2);
    cr_assert(memcmp(r, "\x82\x06PONG\r\n", 8) == 0);
    cr_assert_eq(r[8], 0xC2);
    size_t len = r[9] & 0x7F;
    cr_assert(len < 126 && (size_t)k == 10 + len, "frame of %zu, read %zd", len, k);
    uint8_t in[200];
    memcpy(in, r + 10, len);
    memcpy(in + len, "\x00\x00\xff\xff", 4);
    z_stream z = {0};
    cr_assert(inflateInit2(&z, -15) == Z_OK);
    static char out[4096];
    z.next_in = in;
    z.avail_in = (uInt)(len + 4);
    z.next_out = (Bytef *)out;
    z.avail_out = sizeof out;
    inflate(&z, Z_SYNC_FLUSH);
    cr_assert_eq(sizeof out - z.avail_out, sizeof big);
    inflateEnd(&z);
    cr_assert(memcmp(out, big, sizeof big) == 0);
}

/* Unmasked frames are taken only from a peer that said Nats-No-Masking. */
Test(ws, no_mask_accepts_unmasked)
{
    nd_ws_configure(&tr, &(nd_ws_params_t){.no_mask = true});
    cr_assert(write(peer, "\x82\x02hi", 4) == 4);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), 2);
    cr_assert(memcmp(buf, "hi", 2) == 0);
}

/* A data frame followed by a close frame in one read: the data first, then the end of the
 * stream, which nd_ws_read_again announces so that the caller reads again. */
Test(ws, close_after_data_read_again)
{
    uint8_t w[64];
    size_t n = frame(w, 0x82, "abc", 3);
    n += frame(w + n, 0x88, "\x03\xe8", 2);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), 3);
    cr_assert(nd_ws_read_again(&tr));
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), 0);
}

/* The client side (a leaf that dialed ws://): every frame is masked with a fresh key, and the
 * server's unmasked frames are read. */
Test(ws, client_side_masks)
{
    nd_ws_configure(&tr, &(nd_ws_params_t){.no_mask = true, .mask_writes = true});
    cr_assert_eq(nd_transport_write(&tr, "PONG\r\n", 6), 6);
    cr_assert_eq(nd_transport_write(&tr, "PONG\r\n", 6), 6);
    uint8_t r[64];
    cr_assert_eq(read(peer, r, sizeof r), 2 * 12);
    for (int f = 0; f < 2; f++) {
        const uint8_t *h = r + 12 * f;
        cr_assert_eq(h[0], 0x82);
        cr_assert_eq(h[1], 0x80 | 6);
        char p[7] = "";
        for (int i = 0; i < 6; i++)
            p[i] = (char)(h[6 + i] ^ h[2 + (i & 3)]);
        cr_assert_str_eq(p, "PONG\r\n");
    }
    cr_assert(memcmp(r + 2, r + 14, 4) != 0, "a new key per frame");
    cr_assert(write(peer, "\x82\x02hi", 4) == 4);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), 2);
}

/* A compressed message whose only frame is empty is no deflate stream (an empty message
 * compresses to at least one byte): a protocol error, as nats-server's flate reader fails on it,
 * and nothing is read from before the gathered bytes. */
Test(ws, empty_compressed_message)
{
    use_compression(0);
    uint8_t w[64];
    size_t n = frame_bin(w, 0xC2, NULL, 0);
    n += frame(w + n, 0x82, "ok", 2);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char buf[16];
    cr_assert_eq(tr.vt->read(&tr, buf, sizeof buf), -1);
    cr_assert_eq(errno, EPROTO);
}

/* An empty message compressed as RFC 7692 7.2.3.6 shows (one byte, 0x00), then a plain frame. */
Test(ws, empty_message_compressed)
{
    use_compression(0);
    uint8_t w[64];
    size_t n = frame_bin(w, 0xC2, (const uint8_t *)"\x00", 1);
    n += frame(w + n, 0x82, "ok", 2);
    cr_assert(write(peer, w, n) == (ssize_t)n);
    char buf[16];
    cr_assert_eq(drain(buf, sizeof buf), 2);
    cr_assert(memcmp(buf, "ok", 2) == 0);
}

/* One compressed frame takes at most 1 MiB of the caller's bytes; the rest goes in the next. */
Test(ws, compressed_frame_cap)
{
    use_compression(0);
    size_t len = 1536 * 1024;
    char *big = malloc(len);
    memset(big, 'q', len);
    cr_assert_eq(nd_transport_write(&tr, big, len), 1024 * 1024);
    cr_assert_eq(nd_transport_write(&tr, big + 1024 * 1024, len - 1024 * 1024),
                 (ssize_t)(len - 1024 * 1024));
    uint8_t r[65536];
    ssize_t k = read(peer, r, sizeof r);
    cr_assert(k > 4 && r[0] == 0xC2, "frame 0x%02x", r[0]);
    free(big);
}

/* ---- the client side of the upgrade ---- */

static const char *answer_extra;

/* Plays the server: reads the request up to its empty line, answers a 101 with the right
 * accept key and answer_extra's lines. */
static void *
fake_server(void *arg)
{
    int fd = *(int *)arg;
    char req[2048];
    size_t n = 0;
    while (n < 4 || memcmp(req + n - 4, "\r\n\r\n", 4) != 0) {
        ssize_t k = read(fd, req + n, 1);
        if (k <= 0)
            return NULL;
        n++;
    }
    req[n] = '\0';
    const char *k = strstr(req, "Sec-WebSocket-Key: ");
    char accept[32];
    nd_ws_accept_key(k + 19, strcspn(k + 19, "\r"), accept);
    char resp[1024];
    int m = snprintf(resp, sizeof resp,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n\x82\x02hi",
                     accept, answer_extra);
    cr_assert(write(fd, resp, (size_t)m) == m);
    return NULL;
}

static int
dial_fake(const char *extra, nd_ws_dial_t *d, char *err, size_t ecap)
{
    answer_extra = extra;
    pthread_t th;
    cr_assert(pthread_create(&th, NULL, fake_server, &peer) == 0);
    int rc = nd_ws_client_handshake(tr.fd, "127.0.0.1", 80, "/leafnode", d, 5000, err, ecap);
    pthread_join(th, NULL);
    return rc;
}

/* Compression and no masking asked and granted; the frame behind the 101 stays unread. */
Test(ws, client_handshake_granted)
{
    nd_ws_dial_t d = {.compress = true, .no_masking = true};
    char err[128] = "";
    cr_assert_eq(dial_fake("Sec-WebSocket-Extensions: permessage-deflate; "
                           "server_no_context_takeover; client_no_context_takeover\r\n"
                           "Nats-No-Masking: true\r\n",
                           &d, err, sizeof err),
                 0, "%s", err);
    cr_assert(d.got_compress && d.got_no_masking);
    char b[8];
    cr_assert_eq(read(tr.fd, b, sizeof b), 4); /* the server's first frame */
}

/* Not granted: plain frames, masked writes. */
Test(ws, client_handshake_declined)
{
    nd_ws_dial_t d = {.compress = true, .no_masking = true};
    char err[128] = "";
    cr_assert_eq(dial_fake("", &d, err, sizeof err), 0, "%s", err);
    cr_assert(!d.got_compress && !d.got_no_masking);
}

/* Compression with context takeover is refused, as nats-server's leaf refuses it. */
Test(ws, client_handshake_context_takeover)
{
    nd_ws_dial_t d = {.compress = true};
    char err[128] = "";
    cr_assert_eq(dial_fake("Sec-WebSocket-Extensions: permessage-deflate\r\n", &d, err, sizeof err),
                 -1);
    cr_assert_str_eq(err, "compression negotiation error");
}
