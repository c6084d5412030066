/* libFuzzer driver for the WebSocket transport (src/net/ws.c): the frame decoder that works in
 * place in the caller's buffer, permessage-deflate (gathering, inflating across reads, the
 * limits), control frames, and the writes (plain, masked, compressed) under partial writes.
 *
 * Input: byte 0 picks the settings (bit 0 compression, bit 1 no masking expected, bit 2 we are
 * the client side and mask our writes, bits 3-4 max_payload 64 / 1000 / 65536 / 1 MiB); byte 1
 * seeds the sizes: of the chunks the fake socket returns (sometimes EAGAIN between them), of
 * the caller's read buffers and of what the fake socket takes per write. The rest is what the
 * peer sent. Checks: a read never returns more than asked; an error (EPROTO, EMSGSIZE) or the
 * end of the stream stays; once the socket has nothing left and nd_ws_read_again says so, a
 * read returns no data; the bytes read are echoed back through writev, which must account for
 * every byte exactly once under partial writes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fake {
    const uint8_t *in;
    size_t len, off;
    uint32_t rnd;
    size_t written;
} fake_t;

static fake_t g_fake;

static uint32_t
next(void)
{
    uint32_t x = g_fake.rnd;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    g_fake.rnd = x;
    return x;
}

static ssize_t
fake_read(nd_transport_t *t, void *buf, size_t len)
{
    (void)t;
    if (g_fake.off == g_fake.len)
        return 0;
    uint32_t r = next();
    if ((r & 7) == 0) {
        errno = EAGAIN;
        return -1;
    }
    size_t n = 1 + (r >> 3) % 700;
    if (n > len)
        n = len;
    if (n > g_fake.len - g_fake.off)
        n = g_fake.len - g_fake.off;
    memcpy(buf, g_fake.in + g_fake.off, n);
    g_fake.off += n;
    return (ssize_t)n;
}

static ssize_t
fake_writev(nd_transport_t *t, const struct iovec *iov, int iovcnt)
{
    (void)t;
    uint32_t r = next();
    if ((r & 3) == 0) {
        errno = EAGAIN;
        return -1;
    }
    size_t want = 1 + (r >> 2) % 3000, n = 0;
    for (int i = 0; i < iovcnt && n < want; i++) {
        size_t k = iov[i].iov_len < want - n ? iov[i].iov_len : want - n;
        volatile uint8_t sink = k ? ((const uint8_t *)iov[i].iov_base)[k - 1] : 0;
        (void)sink;
        n += k;
    }
    g_fake.written += n;
    return (ssize_t)n;
}

static void
fake_shutdown(nd_transport_t *t)
{
    (void)t;
}

static void
fake_close(nd_transport_t *t)
{
    (void)t;
}

static const nd_transport_vt_t fake_vt = {
    .name = "fake",
    .read = fake_read,
    .writev = fake_writev,
    .shutdown = fake_shutdown,
    .close = fake_close,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const int64_t mp[4] = {64, 1000, 65536, 1024 * 1024};
    uint8_t f = data[0];
    g_fake = (fake_t){.in = data + 2, .len = size - 2, .rnd = 0x9E3779B9u ^ data[1]};
    nd_transport_t tr = {.vt = &fake_vt, .fd = -1};
    nd_ws_wrap(&tr, NULL, 0);
    nd_ws_configure(&tr, &(nd_ws_params_t){.compress = f & 1,
                                           .no_mask = (f & 2) != 0,
                                           .mask_writes = (f & 4) != 0,
                                           .max_payload = mp[(f >> 3) & 3]});
    size_t cap = 8192;
    uint8_t *buf = malloc(cap);
    uint8_t *echo = NULL;
    size_t elen = 0;
    int stuck = 0, final_err = 0;
    bool ended = false;
    for (int iter = 0; iter < 100000; iter++) {
        size_t len = 1 + next() % cap;
        errno = 0;
        ssize_t n = tr.vt->read(&tr, buf, len);
        if (n > (ssize_t)len)
            abort();
        if (ended) {
            /* After the end or an error, the same again and no data. */
            if (n > 0 || (final_err == 0 && n != 0) || (final_err != 0 && errno != final_err))
                abort();
            break;
        }
        if (n > 0) {
            stuck = 0;
            if (elen < 65536) {
                size_t k = (size_t)n < 65536 - elen ? (size_t)n : 65536 - elen;
                echo = realloc(echo, elen + k);
                memcpy(echo + elen, buf, k);
                elen += k;
            }
            continue;
        }
        if (n == 0 || errno == EPROTO || errno == EMSGSIZE) {
            ended = true;
            final_err = n == 0 ? 0 : errno;
            continue;
        }
        if (errno != EAGAIN)
            abort();
        if (g_fake.off == g_fake.len && !nd_ws_read_again(&tr) && ++stuck > 4)
            break;
    }
    /* Echo what was read: writev must account for every byte once, across partial writes. */
    size_t sent = 0;
    for (int iter = 0; sent < elen && iter < 100000; iter++) {
        size_t a = (elen - sent) / 2;
        struct iovec iov[2] = {{echo + sent, a}, {echo + sent + a, elen - sent - a}};
        ssize_t n = tr.vt->writev(&tr, iov, 2);
        if (n > (ssize_t)(elen - sent))
            abort();
        if (n > 0)
            sent += (size_t)n;
        else if (errno != EAGAIN)
            abort();
    }
    nd_ws_closing(&tr, ND_CLOSE_CLIENT);
    tr.vt->close(&tr);
    free(buf);
    free(echo);
    return 0;
}
