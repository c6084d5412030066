/* The WebSocket upgrade of a client connection, before it becomes an ordinary client.
 *
 * A socket accepted on the websocket port is a connection actor of kind CLIENT with c->ws set.
 * Its first turn starts TLS when the port has it (wss: conn_tls.c, nothing before the handshake)
 * and arms the handshake timer (handshake_timeout, on the auth timer, which is free until the
 * client starts). Then it reads the HTTP request into its private read buffer (at most
 * ND_HTTP_MAX_HEAD + ND_HTTP_MAX_BODY bytes) on its own turns and checks it as nats-server's
 * wsUpgrade does (net/ws.c). A bad request gets nats-server's answer (Go's http.Error: the status
 * text as the body, "Sec-Websocket-Version: 13") and the connection closes; a good one gets the
 * 101, the transport becomes the WebSocket one (net/ws.h) and the client starts as any other
 * (nd_conn_start_client: counted, in /connz, INFO in a frame, auth timer, pings). A client is
 * not in /connz and not counted while it upgrades, as in nats-server, whose HTTP server owns
 * the socket until then.
 * Differences kept small on purpose: nats-server's Go HTTP server keeps an HTTP/1.1 connection
 * open after an error answer (keep-alive) and reads another request; natsd answers and closes.
 * The 101 carries nats-server's answers: permessage-deflate with no context takeover when
 * compression is on and the client offers it, Nats-No-Masking when the client asked for it,
 * then the headers {} of the config.
 * The path picks what the connection becomes, as nats-server's wsUpgrade (its escaped path ends
 * with): /leafnode a leaf connection (leaf.c), /mqtt an MQTT connection (the protocol connection
 * that the MQTT service registered, net/pconn.h; its 101 names the subprotocol
 * "Sec-Websocket-Protocol: mqtt" whether asked or not, and without an mqtt block the request
 * gets 404 as in nats-server 2.10+), anything else a NATS client (which alone reads the
 * cookies). An MQTT connection over WebSocket follows the mqtt block's authorization and is
 * listed in /connz as an MQTT client.
 * X-Forwarded-For: its first header line, when it is one IP address, goes in front of our
 * address in the connection's log lines ("10.0.0.1/127.0.0.1:5000 - cid:7 - ..."), as
 * nats-server's log prefix; /connz, the INFO's client_ip and authorization keep the socket's
 * address, as there.
 * References: nats-server server/websocket.go (wsUpgrade, wsReturnHTTPError, createWSClient),
 * mqtt.go (createMQTTClient), client.go (initClient: the log prefix); probes of
 * /usr/sbin/nats-server 2.9.10 (tests/integ/test_ws.c).
 */
#include "net/conn_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/httpparse.h"
#include "util/log.h"
#include "net/tls.h"
#include "net/ws.h"

#define REQ_MAX (ND_HTTP_MAX_HEAD + ND_HTTP_MAX_BODY)

static const char *
status_text(int status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Request Entity Too Large";
    case 414:
        return "Request URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    default:
        return "Internal Server Error";
    }
}

/* Go's answer to a request its HTTP server refuses before any handler sees it. */
static void
answer_go_error(nd_conn_t *c, int status, const char *text)
{
    char r[256];
    int n = snprintf(r, sizeof r,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Connection: close\r\n\r\n%d %s",
                     status, text, status, text);
    nd_conn_write(c, r, (size_t)n);
}

/* nats-server's wsReturnHTTPError: http.Error with the status text. */
static void
answer_error(nd_conn_t *c, const nd_http_req_t *req, int status)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    const char *t = status_text(status);
    bool head = nd_http_ieq(req->method, req->method_len, "HEAD");
    char r[512];
    int n = snprintf(r, sizeof r,
                     "HTTP/1.%d %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Sec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\n"
                     "Date: %s\r\nContent-Length: %zu\r\n\r\n%s%s",
                     req->http11 ? 1 : 0, status, t, date, strlen(t) + 1, head ? "" : t,
                     head ? "" : "\n");
    nd_conn_write(c, r, (size_t)n);
}

static void
hs_error(nd_ctx_t *ctx, nd_conn_t *c, const char *why)
{
    nd_log_error("%s:%d - websocket handshake error: %s", c->ip, c->port, why);
    nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
}

void
nd_conn_ws_begin(nd_ctx_t *ctx, nd_conn_t *c)
{
    c->ws_state = ND_CONN_WS_UPGRADE;
    if (c->ws->handshake_ms > 0)
        nd_timer_start(ctx, &c->auth_timer, (uint64_t)c->ws->handshake_ms * 1000000ull, 0);
    if (c->ws->tls != NULL) {
        c->tls = nd_tls_ctx_ref(c->ws->tls);
        nd_conn_tls_begin_ws(ctx, c);
    }
}

void
nd_conn_ws_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg)
{
    if (!nd_timer_fired(&c->auth_timer, msg) || c->closing)
        return;
    nd_log_debug("%s:%d - websocket handshake timeout", c->ip, c->port);
    nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
}

/* Keeps the credentials that the configured cookies carry (jwt_cookie...). */
static void
take_cookies(nd_conn_t *c, const nd_http_req_t *req)
{
    nd_conn_ws_cookies_t *k = NULL;
    for (size_t i = 0; i < 4; i++) {
        const char *v;
        size_t vn;
        if (c->ws->cookie[i] == NULL || !nd_ws_cookie(c->rbuf, req, c->ws->cookie[i], &v, &vn))
            continue;
        if (k == NULL)
            k = nd_xcalloc(1, sizeof(*k));
        char **dst[4] = {&k->jwt, &k->user, &k->pass, &k->token};
        *dst[i] = nd_xmalloc(vn + 1);
        memcpy(*dst[i], v, vn);
        (*dst[i])[vn] = '\0';
    }
    c->ws_cookies = k;
}

/* Whether the request's path (without the query) ends with suffix, as nats-server's wsUpgrade
 * picks the connection's kind. */
static bool
path_ends(const nd_http_req_t *req, const char *suffix)
{
    size_t n = req->target_len, sl = strlen(suffix);
    const char *q = memchr(req->target, '?', n);
    if (q != NULL)
        n = (size_t)(q - req->target);
    return n >= sl && memcmp(req->target + n - sl, suffix, sl) == 0;
}

/* What an upgraded connection becomes, by the request's path (nats-server's wsUpgrade: the
 * escaped path ends with /leafnode or /mqtt). */
enum { AS_CLIENT, AS_LEAF, AS_MQTT };

/* Keeps the upgrade's X-Forwarded-For for our log lines, as nats-server's wsUpgrade: the first
 * such header line, whole, when it is one IP address (a list "a, b" is not one, and is
 * ignored as there). */
static void
take_forwarded_for(nd_conn_t *c, const nd_http_req_t *req)
{
    const char *v;
    size_t vn;
    if (!nd_http_header(c->rbuf, req, "X-Forwarded-For", 0, &v, &vn) || vn == 0 || vn >= 64)
        return;
    char ip[64];
    memcpy(ip, v, vn);
    ip[vn] = '\0';
    unsigned char bin[sizeof(struct in6_addr)];
    bool v6 = false;
    if (inet_pton(AF_INET, ip, bin) != 1) {
        if (inet_pton(AF_INET6, ip, bin) != 1)
            return;
        v6 = true;
    }
    size_t cap = vn + sizeof c->ip + 4;
    c->ws_xff = nd_xmalloc(cap);
    snprintf(c->ws_xff, cap, v6 ? "[%s]/%s" : "%s/%s", ip, c->ip);
}

/* The request is complete and good: the 101, the WebSocket transport, then the client (or a
 * leaf connection for the path /leafnode, an MQTT connection for /mqtt). */
static void
upgrade(nd_ctx_t *ctx, nd_conn_t *c, const nd_ws_upgrade_t *u, int as)
{
    bool leaf = as == AS_LEAF;
    const char *extra = c->ws->raw_headers != NULL ? c->ws->raw_headers : "";
    size_t cap = 512 + strlen(extra);
    char *r = nd_xmalloc(cap);
    /* MQTT: nats-server names the subprotocol whether or not the client asked for it. */
    int n = snprintf(r, cap,
                     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s%s%s%s\r\n",
                     u->accept,
                     u->compress ? "Sec-WebSocket-Extensions: permessage-deflate; "
                                   "server_no_context_takeover; client_no_context_takeover\r\n"
                                 : "",
                     u->no_masking ? "Nats-No-Masking: true\r\n" : "",
                     as == AS_MQTT ? "Sec-Websocket-Protocol: mqtt\r\n" : "", extra);
    if (leaf &&
        (c->srv->leafs == NULL || c->srv->opts.leaf == NULL || c->srv->opts.leaf->port == 0)) {
        /* nats-server upgrades, then closes the socket without a frame: answering would need a
         * leaf connection. */
        nd_log_error("Not configured to accept leaf node connections");
        nd_conn_write(c, r, (size_t)n);
        nd_free(r);
        nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
        return;
    }
    /* Written now, under the transport it came on; the rest (if the socket took only part)
     * is the WebSocket transport's prefix, so it precedes the first frame. */
    ssize_t w = nd_transport_write(&c->tr, r, (size_t)n);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        nd_free(r);
        nd_conn_close(ctx, c, ND_CLOSE_WRITE_ERROR);
        return;
    }
    size_t off = w > 0 ? (size_t)w : 0;
    nd_ws_wrap(&c->tr, r + off, (size_t)n - off);
    nd_free(r);
    nd_ws_configure(&c->tr,
                    &(nd_ws_params_t){.compress = u->compress,
                                      .no_mask = u->no_masking,
                                      .max_payload = nd_server_live_get(c->srv, max_payload)});
    c->ws_state = ND_CONN_WS_UP;
    nd_timer_cancel(ctx, &c->auth_timer);
    nd_free(c->rbuf);
    c->rbuf = NULL;
    c->rcap = c->rlen = 0;
    if (leaf) {
        nd_conn_ws_become_leaf(ctx, c);
        return;
    }
    /* The tag of what it becomes: an MQTT connection's ("mid_ws"), else a WebSocket client's. */
    const nd_pconn_proto_t *mp = as == AS_MQTT ? c->srv->ws_mqtt_proto : NULL;
    nd_log_debug("%s:%d - %s:%llu - Client connection created", nd_conn_lhost(c), c->port,
                 mp != NULL && mp->tag_ws != NULL ? mp->tag_ws : nd_conn_log_tag(c),
                 (unsigned long long)c->cid);
    if (as == AS_MQTT)
        nd_conn_ws_become_pconn(ctx, c);
    else
        nd_conn_start_client(ctx, c);
}

/* Reads what the socket has into the private buffer. Returns: 1 read something or nothing
 * waits, 0 end of stream, -1 failed. */
static int
fill(nd_conn_t *c)
{
    for (;;) {
        if (c->rlen == c->rcap) {
            if (c->rcap >= REQ_MAX)
                return 1;
            size_t cap = c->rcap == 0 ? 1024 : c->rcap * 2;
            c->rcap = cap > REQ_MAX ? REQ_MAX : cap;
            c->rbuf = nd_xrealloc(c->rbuf, c->rcap);
        }
        size_t space = c->rcap - c->rlen;
        ssize_t n = c->tr.vt->read(&c->tr, c->rbuf + c->rlen, space);
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
        c->rlen += (size_t)n;
        if ((size_t)n < space)
            return 1;
    }
}

bool
nd_conn_ws_io(nd_ctx_t *ctx, nd_conn_t *c, uint32_t *ev)
{
    if (!(*ev & (ND_IO_READ | ND_IO_HUP)))
        return false;
    int f = fill(c);
    if (f < 0) {
        nd_conn_close(ctx, c, ND_CLOSE_READ_ERROR);
        return false;
    }
    nd_http_req_t req;
    int st = c->rlen > 0 ? nd_http_parse(c->rbuf, c->rlen, &req) : 0;
    if (st == 0 && c->rlen >= REQ_MAX)
        st = 431;
    if (st == 0) {
        if (f == 0)
            nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
        return false;
    }
    if (st != 1) {
        answer_go_error(c, st, status_text(st));
        hs_error(ctx, c, "bad HTTP request");
        return false;
    }
    const char *v;
    size_t vn;
    if (req.http11 && !nd_http_header(c->rbuf, &req, "Host", 0, &v, &vn)) {
        /* Go's server refuses an HTTP/1.1 request without Host itself. */
        answer_go_error(c, 400, "Bad Request: missing required Host header");
        hs_error(ctx, c, "'Host' missing in request");
        return false;
    }
    int as = path_ends(&req, "/leafnode") ? AS_LEAF
             : path_ends(&req, "/mqtt")   ? AS_MQTT
                                          : AS_CLIENT;
    if (as == AS_MQTT && c->srv->ws_mqtt_proto == NULL) {
        /* nats-server 2.10+ checks this first (2.9.10 upgrades, then fails the MQTT CONNECT). */
        answer_error(c, &req, 404);
        hs_error(ctx, c, "mqtt websocket endpoint not enabled");
        return false;
    }
    nd_ws_upgrade_t u;
    nd_ws_check_upgrade(c->ws, c->rbuf, &req, c->ws->tls != NULL, &u);
    if (u.status != 0) {
        answer_error(c, &req, u.status);
        if (u.status == 403) {
            char why[128];
            snprintf(why, sizeof why, "origin not allowed: %s", u.reason);
            hs_error(ctx, c, why);
        } else {
            hs_error(ctx, c, u.reason);
        }
        return false;
    }
    if (req.total < c->rlen) {
        /* nats-server hijacks the socket and finds bytes buffered: it closes without a word. */
        hs_error(ctx, c, "client sent data before handshake is complete");
        return false;
    }
    take_forwarded_for(c, &req);
    if (as == AS_CLIENT)
        take_cookies(c, &req); /* only a NATS CONNECT reads them */
    upgrade(ctx, c, &u, as);
    return false; /* nothing more to read now: the client speaks once it has the INFO */
}
