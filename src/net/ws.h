/* WebSocket (RFC 6455) for client connections: the upgrade request's checks, the frame codec and
 * the WebSocket transport that carries the NATS protocol inside binary frames.
 *
 * The transport wraps the connection's transport (TCP, or TLS for wss) after the HTTP upgrade:
 *   - read: decodes the client's frames in the caller's buffer, in place (a payload byte never
 *     moves forward), so the connection's parser sees the NATS byte stream and an operation may
 *     span frames. Client frames must be masked; binary, text and continuation frames carry
 *     data; a ping is answered with a pong, a close with the echo of its status (nats-server's
 *     rules, server/websocket.go wsRead/wsHandleControlFrame), after which read reports the end
 *     of the stream. A protocol error queues a close frame (1002 and nats-server's reason) and
 *     fails the read (EPROTO). Between reads only the header of a partial frame (at most 14
 *     bytes) and a partial control payload (at most 125) are kept, inside the state.
 *   - writev: frames the caller's bytes as unmasked binary frames without copying them: the
 *     frame header goes out in the same writev as the payload, and a frame whose payload the
 *     socket took only in part is finished by the next calls (the connection retries the same
 *     unwritten bytes, as with TLS). Control frames (pong, close) wait for a frame boundary.
 *   - close: writes the pending close frame, best effort, then closes the inner transport.
 *   - permessage-deflate (RFC 7692, negotiated at the upgrade with no context takeover either
 *     way, as nats-server): a compressed message (RSV1 on its first frame) is gathered whole,
 *     unmasked, then inflated straight into the callers' buffers across reads; the inflater and
 *     the gathered bytes are freed at the end of each message, so an idle connection keeps no
 *     zlib state. Gathered bytes are limited to 8 x max_payload (at most 64 MiB) and inflated
 *     bytes to max_payload per message, as nats-server 2.11's wsDecompressAndParse: beyond
 *     either the connection closes, so a deflate bomb costs no more than that (with 1009 and
 *     "Maximum Message Payload Exceeded", where 2.11 reports a read error; 2.9.10 has no
 *     limit). Outgoing writes above 64 bytes become compressed frames of at most 1 MiB of
 *     input each (deflate level 1, one stream per thread, reset for each message); smaller ones
 *     go out as they are, as nats-server does.
 *   - Nats-No-Masking: a peer that said it does not mask may send unmasked frames.
 *   - The client side (a leaf that dialed a ws:// remote, nd_ws_client_handshake): our frames,
 *     control frames included, are masked with a fresh key each (copied, as a compressed frame
 *     is) and the server's unmasked frames are read.
 * The codec is our own rather than wslay's: it decodes in place in the connection's read buffer
 * and frames writes without copying them, which a callback library does not let us do.
 */
#ifndef ND_WS_H
#define ND_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg/opts.h"
#include "net/conn.h"
#include "net/transport.h"

/* Frame payloads above this close the connection (1009), as nats-server's limit on messages. */
#define ND_WS_MAX_FRAME (64u * 1024 * 1024)

/* The WebSocket listener's settings, shared (read-only) by its connections. Built at start. */
typedef struct nd_ws_srv {
    struct nd_listener *listener;
    struct nd_tls_ctx *tls; /* wss: a reference; NULL: plain ws (no_tls) */
    int port;               /* bound */
    int64_t handshake_ms;   /* handshake_timeout; 0: none (TLS has its own timeout) */
    bool same_origin;
    bool compress;      /* compression: true (permessage-deflate when the client offers it) */
    char *raw_headers;  /* headers {}: "Name: value\r\n" lines for the 101 (owned), or NULL */
    bool auth_override; /* websocket authorization or no_auth_user: clients must authenticate */
    int64_t ping_ms;    /* websocket { ping_interval }; 0: the server's */
    char *cookie[4];    /* jwt_cookie, user_cookie, pass_cookie, token_cookie (owned), or NULL */
    size_t norigins;
    struct nd_ws_origin {
        char *scheme, *host, *port; /* lower-case host; port defaulted from the scheme */
    } * origins;
} nd_ws_srv_t;

/* What the upgrade request asks for. */
typedef struct nd_ws_upgrade {
    int status;         /* 0: upgrade; else the HTTP status to answer */
    const char *reason; /* why not (nats-server's log text), static */
    char accept[32];    /* Sec-WebSocket-Accept for the 101 */
    bool no_masking;    /* Nats-No-Masking: true: the peer will send unmasked frames */
    bool compress;      /* permessage-deflate: enabled here and offered by the client */
} nd_ws_upgrade_t;

/* Checks a complete request (req: nd_http_parse's result over buf[0..len)) as nats-server's
 * wsUpgrade does, in its order: method, Host, Upgrade, Connection, key, version, origin.
 * secure: the request came over TLS (for same_origin). Ctx: any thread. */
struct nd_http_req;
void nd_ws_check_upgrade(const nd_ws_srv_t *ws, const char *buf, const struct nd_http_req *req,
                         bool secure, nd_ws_upgrade_t *out);

/* The value of the cookie named name in the request's Cookie headers (the last one wins, as
 * the loop over Go's Request.Cookies in nats-server; surrounding double quotes removed).
 * Returns: false when there is none. Ctx: any thread. */
bool nd_ws_cookie(const char *buf, const struct nd_http_req *req, const char *name,
                  const char **val, size_t *vn);

/* The base64 SHA-1 of key + RFC 6455's GUID into out (29 bytes with the NUL). */
void nd_ws_accept_key(const char *key, size_t n, char out[29]);

/* Parses an allowed origin ("scheme://host[:port]") into o. Returns: false when it is not an
 * absolute URL with a host. */
bool nd_ws_origin_parse(const char *s, size_t n, struct nd_ws_origin *o);
void nd_ws_origin_fini(struct nd_ws_origin *o);

/* Writes a frame header for a payload of len bytes (fin set, no mask) into h (14 bytes).
 * Returns: its length. */
size_t nd_ws_frame_header(uint8_t *h, uint8_t opcode, uint64_t len);

/* Switches t (TCP or TLS, handshake done) to the WebSocket transport. prefix (copied; may be
 * NULL): bytes written as they are before any frame (the rest of the 101 response). Ctx: the
 * owner's turn. */
void nd_ws_wrap(nd_transport_t *t, const void *prefix, size_t n);
/* What the upgrade negotiated for one connection. */
typedef struct nd_ws_params {
    bool compress;       /* permessage-deflate */
    bool no_mask;        /* the peer sent Nats-No-Masking: true, or is the server we dialed */
    bool mask_writes;    /* we are the client side: our frames are masked */
    int64_t max_payload; /* the connection's max_payload; 0: 1 MiB */
} nd_ws_params_t;
/* Applies p to a transport that nd_ws_wrap made. Ctx: the owner's turn. */
void nd_ws_configure(nd_transport_t *t, const nd_ws_params_t *p);
bool nd_ws_is(const nd_transport_t *t);
/* The connection closes for reason: queues nats-server's close frame for it (unless one was
 * queued already), which the transport's close writes. */
void nd_ws_closing(nd_transport_t *t, nd_close_reason_t reason);
/* Whether a read would return something without the socket becoming readable again: inflated
 * bytes or raw bytes kept from the last read, or the end of the stream (a close frame, an
 * error) found after data that read returned first. */
bool nd_ws_read_again(const nd_transport_t *t);
/* Whether control frames wait to be written (a pong that the socket did not take at once). */
bool nd_ws_pending(const nd_transport_t *t);

/* Whether url is a WebSocket one (ws://; wss:// also says so, and its TLS is not built yet). */
bool nd_ws_url(const char *url);

/* What a dialing side asks for (a leaf remote's ws_compression, ws_no_masking) and what the
 * server's 101 granted. */
typedef struct nd_ws_dial {
    bool compress, no_masking;
    bool got_compress, got_no_masking;
} nd_ws_dial_t;

/* The client side of the upgrade, for a leaf that dials a ws:// URL: sends the GET for path to
 * host:port on the connected non-blocking socket fd, with the extension and the no-masking
 * header d asks for, and checks the 101 as nats-server's leaf does (status, Upgrade,
 * Connection, Sec-WebSocket-Accept; compression granted only with no context takeover both
 * ways, else "compression negotiation error"), reading no byte past it; fills d's answers.
 * Blocks up to timeout_ms. Ctx: a thread that may block (the leaf dialer). Returns: 0, or -1
 * with the reason in err. */
int nd_ws_client_handshake(int fd, const char *host, int port, const char *path, nd_ws_dial_t *d,
                           int timeout_ms, char *err, size_t ecap);

/* Frees the listener's settings (not the listener). NULL is fine. */
void nd_ws_srv_free(nd_ws_srv_t *ws);

#endif
