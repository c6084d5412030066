/* WebSocket: upgrade checks, frame codec and transport; see ws.h.
 * References: RFC 6455 (sections 4.2, 5, 7.4), nats-server 2.9.10 server/websocket.go (wsUpgrade,
 * wsRead, wsHandleControlFrame, wsEnqueueCloseMessage, checkOrigin).
 */
#include "net/ws.h"

#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "actors/alloc.h"
#include "util/base64.h"
#include "util/httpparse.h"
#include "util/log.h"

enum {
    OP_CONT = 0,
    OP_TEXT = 1,
    OP_BINARY = 2,
    OP_CLOSE = 8,
    OP_PING = 9,
    OP_PONG = 10,
};

#define CTL_MAX 125

/* RFC 6455 7.4.1 status codes, as nats-server uses them. */
enum {
    CLOSE_NORMAL = 1000,
    CLOSE_GOING_AWAY = 1001,
    CLOSE_PROTOCOL = 1002,
    CLOSE_NO_STATUS = 1005,
    CLOSE_ABNORMAL = 1006,
    CLOSE_BAD_DATA = 1007,
    CLOSE_POLICY = 1008,
    CLOSE_TOO_BIG = 1009,
    CLOSE_INTERNAL = 1011,
    CLOSE_TLS = 1015,
};

typedef struct ws_conn {
    nd_transport_t inner;
    /* read side */
    uint8_t hdr[14];       /* the frame header being gathered */
    uint8_t hlen;          /* bytes of it so far */
    bool in_frame;         /* a frame's payload is being read */
    bool in_msg;           /* a data message waits for its final frame */
    bool eof;              /* a close frame came (or a protocol error): no more data */
    bool failed;           /* ... because of a protocol error */
    bool too_big;          /* ... because a compressed message was over the limits */
    uint8_t op;            /* the current frame's opcode */
    uint8_t mkey[4], mpos; /* its masking key and the key's position */
    uint64_t rem;          /* its payload bytes still to read */
    uint8_t ctl[CTL_MAX];  /* a control frame's payload */
    uint8_t ctl_len;
    /* write side */
    uint64_t wrem;    /* payload bytes of the data frame being written */
    uint8_t whdr[14]; /* its header, and how much of it went out */
    uint8_t whlen, whoff;
    uint8_t *out;      /* raw bytes to write at the next frame boundary: the prefix, */
    size_t olen, ooff; /* pongs, the close frame (owned) */
    bool close_queued;
    /* settings (nd_ws_configure) */
    bool compress;    /* permessage-deflate was negotiated */
    bool no_mask;     /* the peer said it does not mask (Nats-No-Masking), or is a server */
    bool mask_writes; /* we are the client side (a leaf that dialed ws://): frames are masked */
    uint64_t rnd;     /* xorshift64 state for masking keys (seeded from getrandom) */
    uint64_t max_msg; /* inflated bytes one compressed message may carry (max_payload) */
    /* permessage-deflate, read side: a compressed message is gathered whole (cin), then
     * inflated straight into the callers' buffers; raw bytes that followed it wait in stash. */
    bool fc;            /* the message being read is compressed */
    uint8_t *cin;       /* its compressed bytes, unmasked (owned) */
    size_t clen, ccap;  /* ... */
    z_stream *inf;      /* inflating a complete message (owned); NULL between messages */
    uint64_t inf_total; /* bytes it produced so far */
    uint8_t *stash;     /* raw bytes read past a compressed message (owned) */
    size_t slen, soff;  /* ... */
    /* permessage-deflate, write side: one compressed frame being written */
    uint8_t *cf; /* header + compressed payload (owned) */
    size_t cflen, cfoff;
    size_t cplain; /* the caller's bytes it stands for */
} ws_conn_t;

/* A message of at most this many bytes goes out uncompressed (nats-server's threshold). */
#define COMPRESS_MIN 64
/* The most of the caller's bytes one compressed or masked frame takes. */
#define COPY_MAX (1024u * 1024u)

/* A deflate stream's sync-flush marker, which RFC 7692 7.2.1 strips from the end of each
 * compressed message, followed by an empty final stored block so that inflate reports the end
 * of the stream. */
static const uint8_t deflate_tail[] = {0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff};

/* ---- codec ---- */

size_t
nd_ws_frame_header(uint8_t *h, uint8_t opcode, uint64_t len)
{
    h[0] = (uint8_t)(0x80 | opcode);
    if (len <= 125) {
        h[1] = (uint8_t)len;
        return 2;
    }
    if (len < 65536) {
        h[1] = 126;
        h[2] = (uint8_t)(len >> 8);
        h[3] = (uint8_t)len;
        return 4;
    }
    h[1] = 127;
    for (int i = 0; i < 8; i++)
        h[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

void
nd_ws_accept_key(const char *key, size_t n, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    uint8_t d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    EVP_MD_CTX *mc = EVP_MD_CTX_new();
    if (mc == NULL || EVP_DigestInit_ex(mc, EVP_sha1(), NULL) != 1 ||
        EVP_DigestUpdate(mc, key, n) != 1 || EVP_DigestUpdate(mc, guid, sizeof guid - 1) != 1 ||
        EVP_DigestFinal_ex(mc, d, &dl) != 1)
        nd_fatal("ws: SHA-1 failed");
    EVP_MD_CTX_free(mc);
    nd_b64_encode(ND_B64_STD, d, dl, out);
}

/* RFC 3629 UTF-8 (no overlongs, no surrogates), for close reasons. */
static bool
utf8_ok(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            k = 1, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            k = 2, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            k = 3, cp = c & 0x07;
        } else {
            return false;
        }
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (p[i + j] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* ---- control output ---- */

static void
out_add(ws_conn_t *w, const void *p, size_t n)
{
    if (w->ooff == w->olen) {
        w->ooff = w->olen = 0;
    }
    w->out = nd_xrealloc(w->out, w->olen + n);
    memcpy(w->out + w->olen, p, n);
    w->olen += n;
}

/* A fresh masking key (RFC 6455 5.3: unpredictable; xorshift64 seeded from the kernel). */
static void
mask_key(ws_conn_t *w, uint8_t key[4])
{
    uint64_t x = w->rnd;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->rnd = x;
    memcpy(key, &x, 4);
}

/* A frame header for our side: with the mask bit and a new key (appended to h, whose length
 * grows by 4) when we are the client side. Returns: its length; the key in key. */
static size_t
frame_header_ours(ws_conn_t *w, uint8_t *h, uint8_t op, uint64_t len, uint8_t key[4])
{
    size_t hl = nd_ws_frame_header(h, op, len);
    if (!w->mask_writes)
        return hl;
    h[1] |= 0x80;
    mask_key(w, key);
    memcpy(h + hl, key, 4);
    return hl + 4;
}

static void
queue_control(ws_conn_t *w, uint8_t op, const uint8_t *p, size_t n)
{
    uint8_t h[14], key[4];
    size_t hl = frame_header_ours(w, h, op, n, key);
    out_add(w, h, hl);
    if (n > 0) {
        uint8_t m[CTL_MAX];
        for (size_t i = 0; i < n; i++)
            m[i] = w->mask_writes ? p[i] ^ key[i & 3] : p[i];
        out_add(w, m, n);
    }
}

/* A close frame with status and body (cut to fit a control frame, with "...", as nats-server). */
static void
queue_close(ws_conn_t *w, int status, const char *body, size_t n)
{
    if (w->close_queued)
        return;
    w->close_queued = true;
    uint8_t p[CTL_MAX];
    p[0] = (uint8_t)(status >> 8);
    p[1] = (uint8_t)status;
    if (n > CTL_MAX - 2) {
        memcpy(p + 2, body, CTL_MAX - 5);
        memcpy(p + 2 + CTL_MAX - 5, "...", 3);
        n = CTL_MAX - 2;
    } else if (n > 0) {
        memcpy(p + 2, body, n);
    }
    queue_control(w, OP_CLOSE, p, 2 + n);
}

/* Writes queued control output if no data frame is half written. Returns: false when some is
 * left (errno set by the inner transport) or the frame boundary is not reached. */
static bool
out_flush(ws_conn_t *w)
{
    if (w->ooff == w->olen)
        return true;
    if (w->wrem > 0 || w->whoff < w->whlen || w->cf != NULL) {
        errno = EAGAIN;
        return false;
    }
    while (w->ooff < w->olen) {
        ssize_t n = nd_transport_write(&w->inner, w->out + w->ooff, w->olen - w->ooff);
        if (n <= 0) {
            if (n == 0)
                errno = EAGAIN;
            return false;
        }
        w->ooff += (size_t)n;
    }
    nd_free(w->out);
    w->out = NULL;
    w->olen = w->ooff = 0;
    return true;
}

/* ---- read ---- */

static void
protocol_error(ws_conn_t *w, const char *why)
{
    queue_close(w, CLOSE_PROTOCOL, why, strlen(why));
    w->eof = w->failed = true;
}

/* Header length once its first two bytes are known. */
static size_t
header_len(const uint8_t *h)
{
    size_t n = 2;
    if ((h[1] & 0x7F) == 126)
        n += 2;
    else if ((h[1] & 0x7F) == 127)
        n += 8;
    if (h[1] & 0x80)
        n += 4;
    return n;
}

/* Validates a complete header and starts its frame. Returns: false on a protocol error. */
static bool
start_frame(ws_conn_t *w)
{
    const uint8_t *h = w->hdr;
    bool fin = (h[0] & 0x80) != 0, rsv1 = (h[0] & 0x40) != 0;
    uint8_t op = h[0] & 0x0F;
    if (h[0] & 0x30) {
        protocol_error(w, "RSV2 and RSV3 must be clear");
        return false;
    }
    if (rsv1 && !w->compress) {
        protocol_error(w, "compressed frame received without negotiated permessage-deflate");
        return false;
    }
    if (!(h[1] & 0x80) && !w->no_mask) {
        protocol_error(w, "mask bit missing");
        return false;
    }
    uint64_t len = h[1] & 0x7F;
    size_t p = 2;
    if (len == 126) {
        len = ((uint64_t)h[2] << 8) | h[3];
        p = 4;
    } else if (len == 127) {
        len = 0;
        for (int i = 0; i < 8; i++)
            len = (len << 8) | h[2 + i];
        p = 10;
    }
    switch (op) {
    case OP_PING:
    case OP_PONG:
    case OP_CLOSE:
        if (len > CTL_MAX) {
            protocol_error(w, "control frame length bigger than maximum allowed of 125 bytes");
            return false;
        }
        if (!fin) {
            protocol_error(w, "control frame does not have final bit set");
            return false;
        }
        if (rsv1) {
            protocol_error(w, "control frame must not be compressed");
            return false;
        }
        break;
    case OP_TEXT:
    case OP_BINARY:
        if (w->in_msg) {
            protocol_error(w, "new message started before final frame for previous message was "
                              "received");
            return false;
        }
        w->in_msg = !fin;
        w->fc = rsv1; /* only the first frame of a message says whether it is compressed */
        break;
    case OP_CONT:
        if (!w->in_msg || rsv1) {
            protocol_error(w, "invalid continuation frame");
            return false;
        }
        w->in_msg = !fin;
        break;
    default: {
        char why[32];
        int n = snprintf(why, sizeof why, "unknown opcode %u", op);
        queue_close(w, CLOSE_PROTOCOL, why, (size_t)n);
        w->eof = w->failed = true;
        return false;
    }
    }
    if (len & (1ull << 63)) {
        protocol_error(w, "invalid 64-bit payload length");
        return false;
    }
    if (len > ND_WS_MAX_FRAME) {
        static const char big[] = "frame too big";
        queue_close(w, CLOSE_TOO_BIG, big, sizeof big - 1);
        w->eof = w->failed = true;
        return false;
    }
    if (h[1] & 0x80)
        memcpy(w->mkey, h + p, 4);
    else
        memset(w->mkey, 0, 4); /* an unmasked frame (Nats-No-Masking): unmasking changes nothing */
    w->mpos = 0;
    w->op = op;
    w->rem = len;
    w->in_frame = true;
    w->ctl_len = 0;
    return true;
}

static void
unmask(ws_conn_t *w, uint8_t *dst, const uint8_t *src, size_t n)
{
    uint8_t p = w->mpos;
    for (size_t i = 0; i < n; i++, p = (p + 1) & 3)
        dst[i] = src[i] ^ w->mkey[p];
    w->mpos = p;
}

/* A complete control frame (payload in ctl). */
static void
on_control(ws_conn_t *w)
{
    if (w->op == OP_PING) {
        queue_control(w, OP_PONG, w->ctl, w->ctl_len);
    } else if (w->op == OP_CLOSE) {
        int status = CLOSE_NO_STATUS;
        const char *body = "";
        size_t bl = 0;
        if (w->ctl_len >= 2) {
            status = (w->ctl[0] << 8) | w->ctl[1];
            body = (const char *)w->ctl + 2;
            bl = w->ctl_len - 2u;
            if (!utf8_ok(w->ctl + 2, bl)) {
                static const char bad[] = "invalid utf8 body in close frame";
                status = CLOSE_BAD_DATA;
                body = bad;
                bl = sizeof bad - 1;
            }
        }
        queue_close(w, status, body, bl);
        w->eof = true;
    }
}

/* The limit on a compressed message's gathered bytes: eight times max_payload, at most 64 MiB,
 * as nats-server's wsMaxMessageSize (it lets one message batch several operations). */
static uint64_t
compressed_limit(const ws_conn_t *w)
{
    uint64_t l = w->max_msg * 8;
    return l > ND_WS_MAX_FRAME ? ND_WS_MAX_FRAME : l;
}

/* A compressed message (or an inflated one) is bigger than allowed: close with 1009. */
static void
too_big(ws_conn_t *w)
{
    const char *text = nd_close_reason_text(ND_CLOSE_MAX_PAYLOAD);
    queue_close(w, CLOSE_TOO_BIG, text, strlen(text));
    w->eof = w->failed = w->too_big = true;
}

/* Makes room for k more compressed bytes and the tail that inflate_begin adds. */
static void
cin_reserve(ws_conn_t *w, size_t k)
{
    if (w->clen + k + sizeof deflate_tail <= w->ccap)
        return;
    size_t cap = w->ccap == 0 ? 256 : w->ccap;
    while (cap < w->clen + k + sizeof deflate_tail)
        cap *= 2;
    w->cin = nd_xrealloc(w->cin, cap);
    w->ccap = cap;
}

/* Appends k compressed bytes (masked) to the message being gathered. Returns: false when the
 * message is over the limit. */
static bool
gather(ws_conn_t *w, const uint8_t *src, size_t k)
{
    if ((uint64_t)w->clen + k + sizeof deflate_tail > compressed_limit(w)) {
        too_big(w);
        return false;
    }
    cin_reserve(w, k);
    unmask(w, w->cin + w->clen, src, k);
    w->clen += k;
    return true;
}

/* The compressed message is complete: start inflating it. */
static void
inflate_begin(ws_conn_t *w)
{
    cin_reserve(w, 0); /* a message of empty frames has gathered nothing */
    memcpy(w->cin + w->clen, deflate_tail, sizeof deflate_tail);
    w->clen += sizeof deflate_tail;
    w->inf = nd_xcalloc(1, sizeof(*w->inf));
    if (inflateInit2(w->inf, -MAX_WBITS) != Z_OK)
        nd_fatal("ws: inflateInit2 failed");
    w->inf->next_in = w->cin;
    w->inf->avail_in = (uInt)w->clen;
    w->inf_total = 0;
    w->fc = false;
}

/* Frees the inflater and the compressed message: nothing of it stays between messages. */
static void
inflate_done(ws_conn_t *w)
{
    if (w->inf != NULL) {
        inflateEnd(w->inf);
        nd_free(w->inf);
        w->inf = NULL;
    }
    nd_free(w->cin);
    w->cin = NULL;
    w->clen = w->ccap = 0;
}

/* Inflates the current message into buf[0..n). Returns: the bytes produced; the inflater is
 * freed when the message is done or bad. */
static size_t
inflate_some(ws_conn_t *w, uint8_t *buf, size_t n)
{
    z_stream *z = w->inf;
    if (n > UINT32_MAX)
        n = UINT32_MAX;
    z->next_out = buf;
    z->avail_out = (uInt)n;
    int rc = inflate(z, Z_SYNC_FLUSH);
    size_t got = n - z->avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        /* Not a deflate stream: nats-server fails the read with flate's error. */
        static const char bad[] = "invalid compressed data";
        inflate_done(w);
        protocol_error(w, bad);
        return got;
    }
    w->inf_total += got;
    if (w->inf_total > w->max_msg) {
        /* A deflate bomb, or a batch bigger than max_payload: the parser sees what fits, as
         * in nats-server (wsDecompressAndParse), then the connection closes. */
        got -= (size_t)(w->inf_total - w->max_msg);
        inflate_done(w);
        too_big(w);
        return got;
    }
    if (rc == Z_STREAM_END || (z->avail_in == 0 && z->avail_out > 0))
        inflate_done(w);
    return got;
}

/* Decodes buf[0..n) in place: the data bytes end at buf[0..*out), *used of n were consumed. It
 * stops after the final frame of a compressed message, whose inflated bytes come before what
 * follows it. */
static size_t
decode(ws_conn_t *w, uint8_t *buf, size_t n, size_t *used)
{
    size_t i = 0, o = 0;
    while (i < n && !w->eof && w->inf == NULL) {
        if (!w->in_frame) {
            size_t need = w->hlen < 2 ? 2 : header_len(w->hdr);
            while (w->hlen < need && i < n) {
                w->hdr[w->hlen++] = buf[i++];
                if (w->hlen == 2)
                    need = header_len(w->hdr);
            }
            if (w->hlen < need)
                break;
            w->hlen = 0;
            if (!start_frame(w))
                break;
            if (w->rem == 0) {
                w->in_frame = false;
                if (w->op >= OP_CLOSE)
                    on_control(w);
                else if (w->fc && !w->in_msg)
                    inflate_begin(w); /* an empty final frame ends a compressed message */
            }
            continue;
        }
        size_t k = n - i;
        if (k > w->rem)
            k = (size_t)w->rem;
        if (w->op >= OP_CLOSE) {
            unmask(w, w->ctl + w->ctl_len, buf + i, k);
            w->ctl_len = (uint8_t)(w->ctl_len + k);
        } else if (w->fc) {
            if (!gather(w, buf + i, k))
                break;
        } else {
            unmask(w, buf + o, buf + i, k); /* o <= i: moving back is safe byte by byte */
            o += k;
        }
        i += k;
        w->rem -= k;
        if (w->rem == 0) {
            w->in_frame = false;
            if (w->op >= OP_CLOSE)
                on_control(w);
            else if (w->fc && !w->in_msg)
                inflate_begin(w);
        }
    }
    *used = i;
    return o;
}

static ssize_t
ws_read(nd_transport_t *t, void *buf, size_t len)
{
    ws_conn_t *w = t->impl;
    uint8_t *b = buf;
    size_t got = 0;
    ssize_t r = -1;
    int err = EAGAIN;
    while (got < len) {
        if (w->inf != NULL) {
            got += inflate_some(w, b + got, len - got);
            continue; /* the buffer is full, or the message is done */
        }
        if (w->eof)
            break;
        /* Raw bytes: those read past a compressed message first, then the socket's. */
        size_t n;
        bool stashed = w->soff < w->slen;
        if (stashed) {
            n = w->slen - w->soff;
            if (n > len - got)
                n = len - got;
            memcpy(b + got, w->stash + w->soff, n);
            w->soff += n;
        } else {
            r = w->inner.vt->read(&w->inner, b + got, len - got);
            if (r <= 0) {
                err = errno;
                break;
            }
            n = (size_t)r;
        }
        size_t used = 0;
        size_t o = decode(w, b + got, n, &used);
        if (used < n && !w->eof) {
            /* A compressed message ended inside: keep the rest for after its bytes. */
            size_t rest = n - used;
            if (stashed) {
                w->soff -= rest;
            } else {
                w->stash = nd_xmalloc(rest);
                memcpy(w->stash, b + got + used, rest);
                w->slen = rest;
                w->soff = 0;
            }
        }
        if (w->soff == w->slen && w->stash != NULL) {
            nd_free(w->stash);
            w->stash = NULL;
            w->slen = w->soff = 0;
        }
        got += o;
    }
    if (w->ooff < w->olen)
        out_flush(w); /* pongs and the close echo go out now, when no frame is half written */
    if (got > 0)
        return (ssize_t)got;
    if (w->eof) {
        if (w->failed) {
            errno = w->too_big ? EMSGSIZE : EPROTO;
            return -1;
        }
        return 0;
    }
    if (r == 0)
        return 0;
    errno = err;
    return -1;
}

/* ---- write ---- */

/* One deflate stream per thread, reset for each message: with no context takeover a message
 * needs nothing from the one before, and a connection then keeps no compressor while idle
 * (zlib's default stream is about 260 KiB). The transport's writev has no worker context, so
 * this is a thread-local rather than a per-worker slot; a thread key frees it when its thread
 * ends. */
static _Thread_local z_stream *tl_deflate;
static pthread_key_t deflate_key;
static pthread_once_t deflate_once = PTHREAD_ONCE_INIT;

static void
deflater_free(void *p)
{
    z_stream *z = p;
    deflateEnd(z);
    nd_free(z);
}

static void
deflate_key_make(void)
{
    if (pthread_key_create(&deflate_key, deflater_free) != 0)
        nd_fatal("ws: pthread_key_create failed");
}

static z_stream *
deflater(void)
{
    if (tl_deflate == NULL) {
        pthread_once(&deflate_once, deflate_key_make);
        tl_deflate = nd_xcalloc(1, sizeof(*tl_deflate));
        /* Level 1 as nats-server (flate.BestSpeed); raw deflate, 32 KiB window. */
        if (deflateInit2(tl_deflate, 1, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            nd_fatal("ws: deflateInit2 failed");
        pthread_setspecific(deflate_key, tl_deflate);
    } else {
        deflateReset(tl_deflate);
    }
    return tl_deflate;
}

/* Compresses the caller's total bytes into one frame (w->cf), RFC 7692: sync flush, the
 * trailing 00 00 ff ff removed, RSV1 set. */
static void
compress_frame(ws_conn_t *w, const struct iovec *iov, int iovcnt, size_t total)
{
    z_stream *z = deflater();
    size_t cap = 14 + deflateBound(z, (uLong)total) + 16;
    uint8_t *out = nd_xmalloc(cap);
    size_t hdr = 14; /* the header is written in front of the payload once its size is known */
    z->next_out = out + hdr;
    z->avail_out = (uInt)(cap - hdr);
    size_t left = total;
    for (int i = 0; i < iovcnt && left > 0; i++) {
        size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
        left -= k;
        z->next_in = iov[i].iov_base;
        z->avail_in = (uInt)k;
        int rc = deflate(z, left == 0 ? Z_SYNC_FLUSH : Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            nd_fatal("ws: deflate failed (%d)", rc);
        if (z->avail_in != 0 || z->avail_out == 0)
            nd_fatal("ws: deflate output larger than its bound");
    }
    size_t plen = cap - hdr - z->avail_out;
    if (plen >= 4 && memcmp(out + hdr + plen - 4, "\x00\x00\xff\xff", 4) == 0)
        plen -= 4;
    uint8_t h[14], key[4];
    size_t hl = frame_header_ours(w, h, OP_BINARY, plen, key);
    h[0] |= 0x40; /* RSV1: compressed */
    memcpy(out + hdr - hl, h, hl);
    if (w->mask_writes)
        for (size_t i = 0; i < plen; i++)
            out[hdr + i] ^= key[i & 3];
    w->cf = out;
    w->cfoff = hdr - hl;
    w->cflen = hdr + plen;
    w->cplain = total;
}

/* The client side's frame (a leaf that dialed ws://): the caller's bytes copied and masked. */
static void
masked_frame(ws_conn_t *w, const struct iovec *iov, int iovcnt, size_t total)
{
    uint8_t h[14], key[4];
    size_t hl = frame_header_ours(w, h, OP_BINARY, total, key);
    uint8_t *out = nd_xmalloc(hl + total);
    memcpy(out, h, hl);
    size_t o = 0;
    for (int i = 0; i < iovcnt && o < total; i++) {
        const uint8_t *p = iov[i].iov_base;
        for (size_t k = 0; k < iov[i].iov_len && o < total; k++, o++)
            out[hl + o] = p[k] ^ key[o & 3];
    }
    w->cf = out;
    w->cfoff = 0;
    w->cflen = hl + total;
    w->cplain = total;
}

/* Writes the compressed frame. Returns: the caller's bytes it stands for once all of it went
 * out, else -1 (errno set; the caller retries with the same bytes, as after a partial write). */
static ssize_t
cf_flush(ws_conn_t *w)
{
    while (w->cfoff < w->cflen) {
        ssize_t n = nd_transport_write(&w->inner, w->cf + w->cfoff, w->cflen - w->cfoff);
        if (n <= 0) {
            if (n == 0)
                errno = EAGAIN;
            return -1;
        }
        w->cfoff += (size_t)n;
    }
    nd_free(w->cf);
    w->cf = NULL;
    w->cflen = w->cfoff = 0;
    return (ssize_t)w->cplain;
}

static ssize_t
ws_writev(nd_transport_t *t, const struct iovec *iov, int iovcnt)
{
    ws_conn_t *w = t->impl;
    if (w->cf != NULL)
        return cf_flush(w);
    if (!out_flush(w) && (w->wrem == 0 && w->whoff == w->whlen))
        return -1; /* raw output first (the 101's rest, control frames); errno from it */
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (total == 0)
        return 0;
    /* A frame that is built in a buffer of its own (compressed, masked) takes at most
     * COPY_MAX of the caller's bytes: the rest goes in the next frames, so a large backlog
     * neither holds the worker in one deflate call nor doubles its memory at once. */
    size_t take = total < COPY_MAX ? total : COPY_MAX;
    if (w->compress && w->wrem == 0 && w->whoff == w->whlen && total > COMPRESS_MIN) {
        compress_frame(w, iov, iovcnt, take);
        return cf_flush(w);
    }
    if (w->mask_writes) {
        masked_frame(w, iov, iovcnt, take);
        return cf_flush(w);
    }
    if (w->wrem == 0) {
        w->whlen = (uint8_t)nd_ws_frame_header(w->whdr, OP_BINARY, total);
        w->whoff = 0;
        w->wrem = total;
    }
    struct iovec v[17];
    int nv = 0;
    size_t hl = (size_t)(w->whlen - w->whoff);
    if (hl > 0)
        v[nv++] = (struct iovec){.iov_base = w->whdr + w->whoff, .iov_len = hl};
    uint64_t left = w->wrem;
    for (int i = 0; i < iovcnt && nv < 17 && left > 0; i++) {
        size_t k = iov[i].iov_len;
        if (k > left)
            k = (size_t)left;
        if (k == 0)
            continue;
        v[nv++] = (struct iovec){.iov_base = iov[i].iov_base, .iov_len = k};
        left -= k;
    }
    ssize_t n = w->inner.vt->writev(&w->inner, v, nv);
    if (n < 0)
        return -1;
    size_t hdone = (size_t)n < hl ? (size_t)n : hl;
    w->whoff = (uint8_t)(w->whoff + hdone);
    size_t data = (size_t)n - hdone;
    w->wrem -= data;
    if (w->wrem == 0)
        w->whoff = w->whlen = 0;
    if (data == 0) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)data;
}

static void
ws_shutdown(nd_transport_t *t)
{
    ws_conn_t *w = t->impl;
    w->inner.vt->shutdown(&w->inner);
}

static void
ws_close(nd_transport_t *t)
{
    ws_conn_t *w = t->impl;
    if (w == NULL)
        return;
    if (w->cf == NULL)
        out_flush(w); /* best effort: the close frame, when no data frame is half written */
    w->inner.vt->close(&w->inner);
    inflate_done(w);
    nd_free(w->stash);
    nd_free(w->cf);
    nd_free(w->out);
    nd_free(w);
    t->impl = NULL;
}

static const nd_transport_vt_t ws_vt = {
    .name = "websocket",
    .read = ws_read,
    .writev = ws_writev,
    .shutdown = ws_shutdown,
    .close = ws_close,
};

void
nd_ws_wrap(nd_transport_t *t, const void *prefix, size_t n)
{
    ws_conn_t *w = nd_xcalloc(1, sizeof(*w));
    w->inner = *t;
    w->max_msg = 1024 * 1024;
    if (n > 0)
        out_add(w, prefix, n);
    t->vt = &ws_vt;
    t->impl = w;
}

void
nd_ws_configure(nd_transport_t *t, const nd_ws_params_t *p)
{
    ws_conn_t *w = t->impl;
    w->compress = p->compress;
    w->no_mask = p->no_mask;
    w->mask_writes = p->mask_writes;
    if (w->mask_writes && getrandom(&w->rnd, sizeof w->rnd, 0) != (ssize_t)sizeof w->rnd)
        w->rnd = (uint64_t)(uintptr_t)w ^ 0x9E3779B97F4A7C15ull;
    w->rnd |= 1; /* xorshift never leaves 0 */
    w->max_msg = p->max_payload > 0 ? (uint64_t)p->max_payload : 1024 * 1024;
}

bool
nd_ws_is(const nd_transport_t *t)
{
    return t->vt == &ws_vt;
}

bool
nd_ws_read_again(const nd_transport_t *t)
{
    const ws_conn_t *w = nd_ws_is(t) ? t->impl : NULL;
    return w != NULL && (w->eof || w->inf != NULL || w->soff < w->slen);
}

bool
nd_ws_pending(const nd_transport_t *t)
{
    const ws_conn_t *w = nd_ws_is(t) ? t->impl : NULL;
    return w != NULL && w->ooff < w->olen;
}

void
nd_ws_closing(nd_transport_t *t, nd_close_reason_t reason)
{
    if (!nd_ws_is(t))
        return;
    int status;
    switch (reason) {
    case ND_CLOSE_CLIENT:
        status = CLOSE_NORMAL;
        break;
    case ND_CLOSE_AUTH_TIMEOUT:
    case ND_CLOSE_AUTH_FAILURE:
    case ND_CLOSE_SLOW_PENDING:
    case ND_CLOSE_SLOW_DEADLINE:
    case ND_CLOSE_MAX_ACCOUNT_CONNECTIONS:
    case ND_CLOSE_MAX_CONNECTIONS:
    case ND_CLOSE_MAX_CONTROL_LINE:
    case ND_CLOSE_MAX_SUBSCRIPTIONS:
    case ND_CLOSE_AUTH_EXPIRED:
    case ND_CLOSE_REVOKED:
        status = CLOSE_POLICY;
        break;
    case ND_CLOSE_TLS_HANDSHAKE:
        status = CLOSE_TLS;
        break;
    case ND_CLOSE_PARSE_ERROR:
    case ND_CLOSE_PROTOCOL_VIOLATION:
    case ND_CLOSE_BAD_PROTOCOL:
        status = CLOSE_PROTOCOL;
        break;
    case ND_CLOSE_MAX_PAYLOAD:
        status = CLOSE_TOO_BIG;
        break;
    case ND_CLOSE_SHUTDOWN:
        status = CLOSE_GOING_AWAY;
        break;
    case ND_CLOSE_WRITE_ERROR:
    case ND_CLOSE_READ_ERROR:
    case ND_CLOSE_STALE:
        status = CLOSE_ABNORMAL;
        break;
    default:
        status = CLOSE_INTERNAL;
        break;
    }
    const char *text = nd_close_reason_text(reason);
    queue_close(t->impl, status, text, strlen(text));
}

/* ---- upgrade ---- */

/* Whether a header named name has value among its comma-separated tokens (wsHeaderContains). */
static bool
header_has(const char *buf, const nd_http_req_t *req, const char *name, const char *value)
{
    const char *v;
    size_t vn;
    for (size_t i = 0; nd_http_header(buf, req, name, i, &v, &vn); i++) {
        while (vn > 0) {
            const char *comma = memchr(v, ',', vn);
            size_t tl = comma != NULL ? (size_t)(comma - v) : vn;
            const char *tok = v;
            size_t tn = tl;
            nd_http_trim(&tok, &tn);
            if (nd_http_ieq(tok, tn, value))
                return true;
            if (comma == NULL)
                break;
            vn -= tl + 1;
            v = comma + 1;
        }
    }
    return false;
}

/* Whether the ',' or ';' separated list v[0..n) holds token (case-insensitive, trimmed). */
static bool
list_has(const char *v, size_t n, const char *token)
{
    while (n > 0) {
        size_t tl = 0;
        while (tl < n && v[tl] != ',' && v[tl] != ';')
            tl++;
        const char *t = v;
        size_t tn = tl;
        nd_http_trim(&t, &tn);
        if (nd_http_ieq(t, tn, token))
            return true;
        if (tl == n)
            break;
        v += tl + 1;
        n -= tl + 1;
    }
    return false;
}

/* Whether Sec-WebSocket-Extensions names ext, in any of its extensions' parameters (as
 * nats-server's wsPMCExtensionSupport, which only looks for the name). */
static bool
extension_offered(const char *buf, const nd_http_req_t *req, const char *ext)
{
    const char *v;
    size_t vn;
    for (size_t i = 0; nd_http_header(buf, req, "Sec-WebSocket-Extensions", i, &v, &vn); i++)
        if (list_has(v, vn, ext))
            return true;
    return false;
}

bool
nd_ws_cookie(const char *buf, const nd_http_req_t *req, const char *name, const char **val,
             size_t *vn)
{
    size_t nl = strlen(name);
    bool found = false;
    const char *v;
    size_t n;
    for (size_t i = 0; nd_http_header(buf, req, "Cookie", i, &v, &n); i++) {
        while (n > 0) {
            const char *semi = memchr(v, ';', n);
            size_t pl = semi != NULL ? (size_t)(semi - v) : n;
            const char *pair = v;
            size_t pn = pl;
            nd_http_trim(&pair, &pn);
            const char *eq = memchr(pair, '=', pn);
            if (eq != NULL) {
                const char *k = pair, *cv = eq + 1;
                size_t kn = (size_t)(eq - pair), cn = pn - kn - 1;
                nd_http_trim(&k, &kn);
                nd_http_trim(&cv, &cn);
                if (cn >= 2 && cv[0] == '"' && cv[cn - 1] == '"')
                    cv++, cn -= 2;
                if (kn == nl && memcmp(k, name, nl) == 0) {
                    *val = cv;
                    *vn = cn;
                    found = true;
                }
            }
            if (semi == NULL)
                break;
            n -= pl + 1;
            v = semi + 1;
        }
    }
    return found;
}

/* Splits "host[:port]" (IPv6 in brackets) into a lower-case host and a port defaulted from
 * secure, as nats-server's wsGetHostAndPort. */
static bool
host_port(const char *s, size_t n, bool secure, char **host, char **port)
{
    const char *h = s, *p = NULL;
    size_t hl = n, pl = 0;
    if (n > 0 && s[0] == '[') {
        const char *rb = memchr(s, ']', n);
        if (rb == NULL)
            return false;
        h = s + 1;
        hl = (size_t)(rb - s - 1);
        if ((size_t)(rb - s) + 1 < n) {
            if (rb[1] != ':')
                return false;
            p = rb + 2;
            pl = n - (size_t)(p - s);
        }
    } else {
        const char *c = memchr(s, ':', n);
        if (c != NULL) {
            if (memchr(c + 1, ':', n - (size_t)(c + 1 - s)) != NULL)
                return false; /* too many colons */
            hl = (size_t)(c - s);
            p = c + 1;
            pl = n - hl - 1;
        }
    }
    *host = nd_xmalloc(hl + 1);
    for (size_t i = 0; i < hl; i++)
        (*host)[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + 32 : h[i]);
    (*host)[hl] = '\0';
    if (p != NULL) {
        *port = nd_xmalloc(pl + 1);
        memcpy(*port, p, pl);
        (*port)[pl] = '\0';
    } else {
        *port = nd_xstrdup(secure ? "443" : "80");
    }
    return true;
}

bool
nd_ws_origin_parse(const char *s, size_t n, struct nd_ws_origin *o)
{
    memset(o, 0, sizeof *o);
    const char *sep = n >= 3 ? memmem(s, n, "://", 3) : NULL;
    if (sep == NULL || sep == s)
        return false;
    size_t sl = (size_t)(sep - s);
    const char *h = sep + 3;
    size_t hl = n - sl - 3;
    const char *slash = memchr(h, '/', hl);
    if (slash != NULL)
        hl = (size_t)(slash - h);
    o->scheme = nd_xmalloc(sl + 1);
    for (size_t i = 0; i < sl; i++)
        o->scheme[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    o->scheme[sl] = '\0';
    if (!host_port(h, hl, strcmp(o->scheme, "https") == 0, &o->host, &o->port)) {
        nd_ws_origin_fini(o);
        return false;
    }
    return true;
}

void
nd_ws_origin_fini(struct nd_ws_origin *o)
{
    nd_free(o->scheme);
    nd_free(o->host);
    nd_free(o->port);
    memset(o, 0, sizeof *o);
}

/* nats-server's checkOrigin. Returns: NULL when allowed, else the reason. */
static const char *
check_origin(const nd_ws_srv_t *ws, const char *buf, const nd_http_req_t *req, bool secure)
{
    if (!ws->same_origin && ws->norigins == 0)
        return NULL;
    const char *v;
    size_t vn;
    if (!nd_http_header(buf, req, "Origin", 0, &v, &vn) || vn == 0) {
        if (!nd_http_header(buf, req, "Sec-WebSocket-Origin", 0, &v, &vn) || vn == 0)
            return NULL; /* no origin: not a browser, accepted */
    }
    struct nd_ws_origin o;
    if (!nd_ws_origin_parse(v, vn, &o))
        return "invalid origin";
    const char *why = NULL;
    if (ws->same_origin) {
        const char *hv;
        size_t hn;
        char *rh = NULL, *rp = NULL;
        if (!nd_http_header(buf, req, "Host", 0, &hv, &hn) || !host_port(hv, hn, secure, &rh, &rp))
            why = "not same origin";
        else if (strcmp(rh, o.host) != 0 || strcmp(rp, o.port) != 0)
            why = "not same origin";
        nd_free(rh);
        nd_free(rp);
    }
    if (why == NULL && ws->norigins > 0) {
        why = "not in the allowed list";
        for (size_t i = 0; i < ws->norigins; i++) {
            const struct nd_ws_origin *a = &ws->origins[i];
            if (strcmp(a->host, o.host) == 0 && strcmp(a->scheme, o.scheme) == 0 &&
                strcmp(a->port, o.port) == 0) {
                why = NULL;
                break;
            }
        }
    }
    nd_ws_origin_fini(&o);
    return why;
}

void
nd_ws_check_upgrade(const nd_ws_srv_t *ws, const char *buf, const nd_http_req_t *req, bool secure,
                    nd_ws_upgrade_t *out)
{
    memset(out, 0, sizeof *out);
    const char *v;
    size_t vn;
    if (!nd_http_ieq(req->method, req->method_len, "GET") || memcmp(req->method, "GET", 3) != 0) {
        out->status = 405;
        out->reason = "request method must be GET";
    } else if (!nd_http_header(buf, req, "Host", 0, &v, &vn) || vn == 0) {
        out->status = 400;
        out->reason = "'Host' missing in request";
    } else if (!header_has(buf, req, "Upgrade", "websocket")) {
        out->status = 400;
        out->reason = "invalid value for header 'Upgrade'";
    } else if (!header_has(buf, req, "Connection", "Upgrade")) {
        out->status = 400;
        out->reason = "invalid value for header 'Connection'";
    } else if (!nd_http_header(buf, req, "Sec-WebSocket-Key", 0, &v, &vn) || vn == 0) {
        out->status = 400;
        out->reason = "key missing";
    } else {
        nd_ws_accept_key(v, vn, out->accept);
        if (!header_has(buf, req, "Sec-WebSocket-Version", "13")) {
            out->status = 400;
            out->reason = "invalid version";
        } else if ((out->reason = check_origin(ws, buf, req, secure)) != NULL) {
            out->status = 403;
        } else {
            out->compress = ws->compress && extension_offered(buf, req, "permessage-deflate");
            /* nats-server reads the first value only, and it must be exactly "true". */
            out->no_masking = nd_http_header(buf, req, "Nats-No-Masking", 0, &v, &vn) && vn == 4 &&
                              memcmp(v, "true", 4) == 0;
        }
    }
}

/* ---- client side (a leaf that dials ws://) ---- */

/* The value of header name in an HTTP response head (lines after the status line), trimmed. */
static bool
resp_header(const char *head, const char *name, const char **v, size_t *vn)
{
    size_t nl = strlen(name);
    for (const char *l = strstr(head, "\r\n"); l != NULL; l = strstr(l, "\r\n")) {
        l += 2;
        const char *e = strstr(l, "\r\n");
        if (e == NULL || e == l)
            return false;
        const char *colon = memchr(l, ':', (size_t)(e - l));
        if (colon != NULL && (size_t)(colon - l) == nl && nd_http_ieq(l, nl, name)) {
            *v = colon + 1;
            *vn = (size_t)(e - colon - 1);
            nd_http_trim(v, vn);
            return true;
        }
    }
    return false;
}

/* Waits for fd to be ready for events within the time left until deadline (ms on the
 * monotonic clock). Returns: false on timeout or error. */
static bool
wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t left = deadline_ms - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (left <= 0)
        return false;
    struct pollfd pf = {.fd = fd, .events = events};
    return poll(&pf, 1, (int)left) == 1;
}

bool
nd_ws_url(const char *url)
{
    return strncasecmp(url, "ws://", 5) == 0 || strncasecmp(url, "wss://", 6) == 0;
}

int
nd_ws_client_handshake(int fd, const char *host, int port, const char *path, nd_ws_dial_t *d,
                       int timeout_ms, char *err, size_t ecap)
{
    d->got_compress = d->got_no_masking = false;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + timeout_ms;
    uint8_t raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        snprintf(err, ecap, "websocket key: %s", strerror(errno));
        return -1;
    }
    char key[32], want[32];
    nd_b64_encode(ND_B64_STD, raw, sizeof raw, key);
    nd_ws_accept_key(key, strlen(key), want);
    char req[1024];
    int n = snprintf(req, sizeof req,
                     strchr(host, ':') != NULL ? "GET %s HTTP/1.1\r\nHost: [%s]:%d\r\n"
                                               : "GET %s HTTP/1.1\r\nHost: %s:%d\r\n",
                     path, host, port);
    n += snprintf(req + n, sizeof req - (size_t)n,
                  "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                  "Sec-WebSocket-Version: 13\r\n%s%s\r\n",
                  key,
                  d->compress ? "Sec-WebSocket-Extensions: permessage-deflate; "
                                "server_no_context_takeover; client_no_context_takeover\r\n"
                              : "",
                  d->no_masking ? "Nats-No-Masking: true\r\n" : "");
    for (size_t off = 0; off < (size_t)n;) {
        ssize_t k = send(fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, deadline)) {
                snprintf(err, ecap, "websocket handshake: write timeout");
                return -1;
            }
        } else {
            snprintf(err, ecap, "websocket handshake: write: %s", strerror(errno));
            return -1;
        }
    }
    /* Byte by byte up to the empty line: the server's first frame may follow at once and must
     * stay in the socket for the connection's reader. */
    char head[4096];
    size_t hl = 0;
    while (hl < 4 || memcmp(head + hl - 4, "\r\n\r\n", 4) != 0) {
        if (hl + 1 >= sizeof head) {
            snprintf(err, ecap, "invalid websocket connection: response head too long");
            return -1;
        }
        ssize_t k = recv(fd, head + hl, 1, 0);
        if (k == 1) {
            hl++;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLIN, deadline)) {
                snprintf(err, ecap, "websocket handshake: read timeout");
                return -1;
            }
        } else {
            snprintf(err, ecap, "websocket handshake: %s", k == 0 ? "EOF" : strerror(errno));
            return -1;
        }
    }
    head[hl] = '\0';
    const char *v;
    size_t vn;
    /* nats-server's checks of the answer (leafnode.go): 101, Upgrade, Connection, the key. */
    bool ok = strncmp(head, "HTTP/1.1 101 ", 13) == 0 && resp_header(head, "Upgrade", &v, &vn) &&
              nd_http_ieq(v, vn, "websocket") && resp_header(head, "Connection", &v, &vn) &&
              nd_http_ieq(v, vn, "upgrade") && resp_header(head, "Sec-WebSocket-Accept", &v, &vn) &&
              vn == strlen(want) && memcmp(v, want, vn) == 0;
    if (!ok) {
        snprintf(err, ecap, "invalid websocket connection");
        return -1;
    }
    if (d->compress && resp_header(head, "Sec-WebSocket-Extensions", &v, &vn) &&
        list_has(v, vn, "permessage-deflate")) {
        /* Granted: only with no context takeover both ways, which is all we do. */
        if (!list_has(v, vn, "server_no_context_takeover") ||
            !list_has(v, vn, "client_no_context_takeover")) {
            snprintf(err, ecap, "compression negotiation error");
            return -1;
        }
        d->got_compress = true;
    }
    d->got_no_masking = d->no_masking && resp_header(head, "Nats-No-Masking", &v, &vn) && vn == 4 &&
                        memcmp(v, "true", 4) == 0;
    return 0;
}

void
nd_ws_srv_free(nd_ws_srv_t *ws)
{
    if (ws == NULL)
        return;
    for (size_t i = 0; i < ws->norigins; i++)
        nd_ws_origin_fini(&ws->origins[i]);
    nd_free(ws->origins);
    nd_free(ws->raw_headers);
    for (size_t i = 0; i < 4; i++)
        nd_free(ws->cookie[i]);
    nd_free(ws);
}
