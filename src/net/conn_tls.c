/* TLS for client connections: when INFO goes out, when the handshake starts, and its timers.
 *
 * The flows of nats-server 2.10 (server.go createClient, client.go doTLSServerHandshake):
 *   - TLS required (the default with a tls {} block): INFO goes out in plain text with
 *     "tls_required":true, then the client starts TLS. The INFO bytes become the TLS transport's
 *     plaintext prefix (tls.c), so they are on the wire before any TLS byte whatever the socket
 *     accepted in this turn. The ping timer starts once TLS is up.
 *   - allow_non_tls: INFO says "tls_available":true and the connection greets as a plain one;
 *     its first byte decides: 0x16 (a TLS handshake record) starts TLS, anything else stays plain.
 *   - handshake_first: TLS before INFO; INFO goes out encrypted once the handshake is done.
 *     With `auto` or a duration, wait that long for the client's first byte: a ClientHello
 *     (0x16) means TLS first; silence or anything else falls back to INFO first.
 * Every handshake is bounded by the tls `timeout` (default 2 s) on the connection's tls_timer;
 * when it expires the connection closes with "TLS Handshake Failure" and nothing is written
 * (nats-server's "-ERR 'Secure Connection - TLS Required'" cannot reach a client in the middle
 * of a handshake either: a probe of nats-server 2.9.10 reads end-of-stream). A failed handshake
 * (garbage, a plain-text CONNECT, a refused certificate) closes the same way at once.
 * Handshake steps run on the connection's own turns from its I/O messages and never block.
 */
#include "net/conn_int.h"
#include "net/gateway_int.h"
#include "net/leaf_int.h"
#include "net/route_int.h"

#include <errno.h>
#include <sys/socket.h>

#include "util/log.h"
#include "net/tls.h"

#define TLS_RECORD_HANDSHAKE 0x16

static uint64_t
ms_ns(int64_t ms)
{
    return (uint64_t)ms * 1000000ull;
}

/* Switches to the TLS transport; what is queued for the client (the INFO) goes first, in plain
 * text, as the transport's prefix. */
static void
wrap(nd_ctx_t *ctx, nd_conn_t *c, bool with_output)
{
    size_t n = with_output ? c->wlen - c->woff : 0;
    nd_tls_wrap(&c->tr, c->tls, c->wbuf + c->woff, n);
    if (n > 0) {
        atomic_fetch_sub_explicit(&c->pending, (int64_t)n, memory_order_relaxed);
        c->woff = c->wlen = 0;
    }
    c->tls_state = ND_CONN_TLS_HANDSHAKE;
    nd_timer_start(ctx, &c->tls_timer, ms_ns(c->tls->timeout_ms), 0);
    nd_log_debug("%s:%d - %s:%llu - Starting TLS client connection handshake", nd_conn_lhost(c),
                 c->port, nd_conn_log_tag(c), (unsigned long long)c->cid);
}

/* Advances the handshake; on completion sends what waited for it. Returns: true when TLS is up. */
static bool
drive(nd_ctx_t *ctx, nd_conn_t *c)
{
    char why[256] = "";
    switch (nd_tls_handshake(&c->tr, why, sizeof why)) {
    case ND_TLS_AGAIN:
        return false;
    case ND_TLS_FAILED:
        if (c->route != NULL)
            nd_log_error("%s:%d - rid:%llu - TLS route handshake error: %s", nd_conn_lhost(c),
                         c->port, (unsigned long long)c->cid, why);
        else if (c->leaf != NULL)
            nd_log_error("%s:%d - lid:%llu - TLS leafnode handshake error: %s", nd_conn_lhost(c),
                         c->port, (unsigned long long)c->cid, why);
        else if (c->gw != NULL)
            nd_log_error("%s:%d - gid:%llu - TLS gateway handshake error: %s", nd_conn_lhost(c),
                         c->port, (unsigned long long)c->cid, why);
        else
            nd_log_error("%s:%d - %s:%llu - TLS handshake error: %s", nd_conn_lhost(c), c->port,
                         nd_conn_log_tag(c), (unsigned long long)c->cid, why);
        nd_conn_close(ctx, c, ND_CLOSE_TLS_HANDSHAKE);
        return false;
    case ND_TLS_DONE:
        break;
    }
    nd_timer_cancel(ctx, &c->tls_timer);
    c->tls_state = ND_CONN_TLS_UP;
    nd_log_debug("%s:%d - %s:%llu - TLS handshake complete (%s, %s)", nd_conn_lhost(c), c->port,
                 nd_conn_log_tag(c), (unsigned long long)c->cid, nd_tls_version(&c->tr),
                 nd_tls_cipher(&c->tr));
    if (c->route != NULL) {
        nd_route_conn_start(ctx, c); /* INFO, CONNECT and pings, now encrypted */
        return true;
    }
    if (c->leaf != NULL) {
        nd_leaf_tls_up(ctx, c); /* the soliciting side's CONNECT, now encrypted */
        return !c->closing;
    }
    if (c->gw != NULL) {
        nd_gw_conn_start(ctx, c); /* the same for a gateway */
        return true;
    }
    if (c->tls->verify_and_map) {
        /* For the auth code: the user names this certificate may map to (tls.h). The auth
         * check that looks them up among the configured users is not wired yet. */
        nd_tls_peer_names(&c->tr, &c->tls_names);
        for (size_t i = 0; i < c->tls_names.n; i++)
            nd_log_debug("%s:%d - %s:%llu - TLS certificate name %zu: %s", nd_conn_lhost(c),
                         c->port, nd_conn_log_tag(c), (unsigned long long)c->cid, i,
                         c->tls_names.v[i]);
    }
    if (c->tls_info_due) {
        c->tls_info_due = false;
        if (!nd_conn_greet(ctx, c, atomic_load_explicit(&c->srv->nconns, memory_order_relaxed)))
            return false;
    }
    if (c->tls_pings_due) {
        c->tls_pings_due = false;
        nd_conn_start_pings(ctx, c);
    }
    return true;
}

/* INFO first, in plain text, then the handshake. Returns: false when the connection closed. */
static bool
info_then_tls(nd_ctx_t *ctx, nd_conn_t *c)
{
    c->tls_info_due = false;
    if (!nd_conn_greet(ctx, c, atomic_load_explicit(&c->srv->nconns, memory_order_relaxed)))
        return false;
    wrap(ctx, c, true);
    return true;
}

bool
nd_conn_tls_begin(nd_ctx_t *ctx, nd_conn_t *c)
{
    const nd_tls_ctx_t *t = c->tls;
    if (t->handshake_first) {
        c->tls_info_due = c->tls_pings_due = true;
        if (t->fallback_ms > 0) {
            c->tls_state = ND_CONN_TLS_FALLBACK;
            nd_timer_start(ctx, &c->tls_timer, ms_ns(t->fallback_ms), 0);
            return true;
        }
        wrap(ctx, c, false);
        drive(ctx, c);
        return true;
    }
    if (c->srv->opts.allow_non_tls) {
        c->tls_state = ND_CONN_TLS_PEEK;
        return false;
    }
    c->tls_pings_due = true;
    if (info_then_tls(ctx, c))
        drive(ctx, c); /* sends the INFO prefix */
    return true;
}

void
nd_conn_tls_begin_route(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_routes_t *r = c->srv->routes;
    bool solicited = c->route->job != NULL;
    c->tls = nd_tls_ctx_ref(solicited ? r->tls_client : r->tls_server);
    if (solicited)
        nd_tls_wrap_client(&c->tr, c->tls, c->route->host);
    else
        nd_tls_wrap(&c->tr, c->tls, NULL, 0);
    c->tls_state = ND_CONN_TLS_HANDSHAKE;
    nd_timer_start(ctx, &c->tls_timer, ms_ns(c->tls->timeout_ms), 0);
    nd_log_debug("%s:%d - rid:%llu - Starting TLS route %s handshake", nd_conn_lhost(c), c->port,
                 (unsigned long long)c->cid, solicited ? "client" : "server");
    drive(ctx, c);
}

void
nd_conn_tls_begin_leaf(nd_ctx_t *ctx, nd_conn_t *c, nd_tls_ctx_t *tls, const char *host)
{
    c->tls = nd_tls_ctx_ref(tls);
    c->tls_info_due = c->tls_pings_due = false; /* the leaf code sends both */
    if (host != NULL) {
        nd_tls_wrap_client(&c->tr, c->tls, host);
        c->tls_state = ND_CONN_TLS_HANDSHAKE;
        nd_timer_start(ctx, &c->tls_timer, ms_ns(c->tls->timeout_ms), 0);
    } else {
        wrap(ctx, c, true); /* our INFO goes first, in plain text */
    }
    nd_log_debug("%s:%d - lid:%llu - Starting TLS leafnode %s handshake", nd_conn_lhost(c), c->port,
                 (unsigned long long)c->cid, host != NULL ? "client" : "server");
    drive(ctx, c);
}

void
nd_conn_tls_begin_gateway(nd_ctx_t *ctx, nd_conn_t *c)
{
    bool solicited = c->gw->remote != NULL;
    c->tls = nd_tls_ctx_ref(nd_gw_tls(c));
    if (solicited)
        nd_tls_wrap_client(&c->tr, c->tls, c->gw->host);
    else
        nd_tls_wrap(&c->tr, c->tls, NULL, 0);
    c->tls_state = ND_CONN_TLS_HANDSHAKE;
    nd_timer_start(ctx, &c->tls_timer, ms_ns(c->tls->timeout_ms), 0);
    nd_log_debug("%s:%d - gid:%llu - Starting TLS gateway %s handshake", nd_conn_lhost(c), c->port,
                 (unsigned long long)c->cid, solicited ? "client" : "server");
    drive(ctx, c);
}

void
nd_conn_tls_begin_ws(nd_ctx_t *ctx, nd_conn_t *c)
{
    c->tls_info_due = c->tls_pings_due = false; /* both come after the HTTP upgrade */
    wrap(ctx, c, false);
    drive(ctx, c);
}

/* Looks at the client's first byte without consuming it. Returns: 1 with *b, 0 for nothing yet,
 * -1 when the stream ended or failed (the read that follows reports it). */
static int
peek(nd_conn_t *c, unsigned char *b)
{
    ssize_t n;
    do
        n = recv(c->io.fd, b, 1, MSG_PEEK);
    while (n < 0 && errno == EINTR);
    if (n == 1)
        return 1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return -1;
}

bool
nd_conn_tls_io(nd_ctx_t *ctx, nd_conn_t *c, uint32_t *ev)
{
    unsigned char b = 0;
    int p;
    switch (c->tls_state) {
    case ND_CONN_TLS_PEEK:
        if (!(*ev & (ND_IO_READ | ND_IO_HUP)))
            return true;
        p = peek(c, &b);
        if (p == 0)
            return false;
        if (p < 0 || b != TLS_RECORD_HANDSHAKE) {
            c->tls_state = ND_CONN_TLS_NONE; /* a plain client (allow_non_tls) */
            return true;
        }
        wrap(ctx, c, false);
        break;
    case ND_CONN_TLS_FALLBACK:
        if (!(*ev & (ND_IO_READ | ND_IO_HUP)))
            return false;
        p = peek(c, &b);
        if (p == 0)
            return false;
        if (p < 0) {
            nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
            return false;
        }
        nd_timer_cancel(ctx, &c->tls_timer);
        if (b == TLS_RECORD_HANDSHAKE) {
            wrap(ctx, c, false);
        } else if (!info_then_tls(ctx, c)) {
            return false; /* not a ClientHello: INFO first; the handshake will refuse it */
        }
        break;
    case ND_CONN_TLS_HANDSHAKE:
        break;
    default:
        return true;
    }
    if (!drive(ctx, c))
        return false;
    *ev |= ND_IO_READ; /* the client's first commands may already wait behind its Finished */
    return true;
}

void
nd_conn_tls_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg)
{
    if (!nd_timer_fired(&c->tls_timer, msg) || c->closing)
        return;
    if (c->tls_state == ND_CONN_TLS_FALLBACK) {
        /* No ClientHello in time: greet as nats-server does without handshake_first. */
        if (info_then_tls(ctx, c))
            drive(ctx, c);
        return;
    }
    if (c->tls_state == ND_CONN_TLS_HANDSHAKE) {
        nd_log_error("%s:%d - %s:%llu - TLS handshake timeout", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_close(ctx, c, ND_CLOSE_TLS_HANDSHAKE);
    }
}
