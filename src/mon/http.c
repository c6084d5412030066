/* The monitoring port's HTTP/1.1 server, on the actor runtime.
 *
 * Design. An HTTP connection is an actor of its own small type (http_conn_t), not a kind of the
 * NATS connection actor: it shares nothing with the client protocol (no parser, subscriptions,
 * outbound queue or slow-consumer rules), so a separate type keeps both simpler. It reuses the
 * network layer's pieces: the listener and every socket are registered with the server's poller
 * (edge-triggered readiness arrives as this actor's embedded I/O message, net/poller.h), bytes
 * move through the TCP transport vtable (net/transport.h), deadlines are runtime timers. There is
 * no thread of its own: requests are parsed and answered on a worker, in the connection's turn.
 *
 * Requests. Only GET and HEAD are served (others: 405); keep-alive as HTTP/1.1 says (HTTP/1.0
 * only with "Connection: keep-alive"); pipelined requests are answered in order. The request
 * parser and its limits are in httpparse.h (414, 431, 413, 501 and 400 for anything that is not
 * HTTP/1.x, refused as soon as the first bytes cannot begin a request line). A request's line and
 * headers must arrive within the header deadline (slowloris guard; it runs from the accept for
 * the first request), and an idle kept-alive connection is closed after the idle timeout.
 * Error closes linger: the write side is shut down after the response and input is discarded
 * until the peer closes or LINGER_MS passes, so the client reads the response instead of a reset.
 * At most mon->max_conns connections are open at once; more are closed at accept. So memory per
 * connection is bounded by ND_HTTP_MAX_HEAD + ND_HTTP_MAX_BODY of input plus the responses of
 * MAX_OUT bytes of pipelined requests.
 *
 * Endpoints that list subscriptions (/connz?subs=1, /subsz?subs=1) need data that each NATS
 * connection actor owns: the request is parked while every connection concerned is asked by a
 * message (ND_CONN_MSG_MON_SUBS) and answers on its own turn; the replies come back here and the
 * response is built once all are in (or after GATHER_MS, with what came). A connection that closed
 * in between answers from its discard hook, so a request never waits for a dead actor.
 */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "util/httpparse.h"
#include "mon/mon_int.h"
#include "actors/alloc.h"
#include "actors/timer.h"
#include "net/connreg.h"
#include "util/log.h"
#include "auth/passwd.h"
#include "net/tls.h"
#include "net/transport.h"

#define MAX_OUT   (4u << 20) /* stop answering pipelined requests while this much is unsent */
#define LINGER_MS 2000
#define GATHER_MS 10000

enum {
    HTTP_MSG_IO = ND_MSG_USER_BASE,
    HTTP_MSG_TIMER,
    HTTP_MSG_SUBS_REPLY, /* nd_mon_msg_subs_reply_t */
};

typedef struct http_conn {
    nd_actor_t base;
    /* immutable after spawn */
    nd_mon_t *mon;
    /* owner only */
    nd_io_t io;
    nd_transport_t tr;
    nd_timer_t timer;
    char *rbuf;
    size_t rlen, rcap;
    char *wbuf;
    size_t wlen, woff, wcap;
    bool closing;     /* nd_actor_close sent */
    bool torn_down;   /* socket and timer released */
    bool in_request;  /* part of a request has arrived: the header deadline is armed */
    bool close_after; /* close once the output is written */
    bool lingering;   /* output written, write side shut: discarding input until EOF */
    bool eof;         /* the peer closed its side */
    bool read_owed;   /* reading stopped (a parked request, full output): read when resumed */
    bool tls_pending; /* HTTPS: the TLS handshake is not done (bounded by the header deadline) */
    /* a request parked for subscription answers */
    nd_mon_req_t *req;
    bool req_head, req_keep;
    size_t awaiting;
    uint64_t tag;
} http_conn_t;

static const char *
reason_phrase(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
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
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    default:
        return "Unknown";
    }
}

/* ---- output ---- */

static void
out_append(http_conn_t *h, const void *p, size_t n)
{
    if (h->wlen + n > h->wcap) {
        h->wcap = nd_grow_cap(h->wcap, h->wlen + n, 4096);
        h->wbuf = nd_xrealloc(h->wbuf, h->wcap);
    }
    memcpy(h->wbuf + h->wlen, p, n);
    h->wlen += n;
}

/* Queues one response. keep: the connection stays open after it. */
static void
respond(http_conn_t *h, int status, const char *ctype, const char *body, size_t len, bool head,
        bool keep, const char *extra)
{
    char date[64];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    char hdr[1024];
    int n = snprintf(hdr, sizeof hdr,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nAccess-Control-Allow-Origin: *\r\n"
                     "Date: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                     status, reason_phrase(status), ctype, date, len, extra ? extra : "",
                     keep ? "" : "Connection: close\r\n");
    out_append(h, hdr, (size_t)n);
    if (!head && len > 0)
        out_append(h, body, len);
    if (!keep)
        h->close_after = true;
}

/* An error that ends the connection: the response, then a lingering close. */
static void
fail(http_conn_t *h, int status, const char *text)
{
    size_t n = strlen(text);
    respond(h, status, "text/plain; charset=utf-8", text, n, false, false, NULL);
}

/* ---- lifecycle ---- */

static void
teardown(nd_ctx_t *ctx, http_conn_t *h)
{
    if (h->torn_down)
        return;
    h->torn_down = true;
    nd_timer_cancel(ctx, &h->timer);
    h->tr.vt->close(&h->tr);
    nd_poller_remove(h->mon->srv->poller, &h->io); /* closes the fd */
    atomic_fetch_sub_explicit(&h->mon->nconns, 1, memory_order_relaxed);
}

static void
http_close(nd_ctx_t *ctx, http_conn_t *h)
{
    if (h->closing)
        return;
    h->closing = true;
    teardown(ctx, h);
    nd_actor_close(ctx, &h->base);
}

static void
on_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    http_conn_t *h = (http_conn_t *)self;
    h->closing = true;
    teardown(ctx, h);
    if (h->req != NULL) {
        h->req->ctx = ctx;
        nd_mon_req_fini(h->req);
        nd_free(h->req);
        h->req = NULL;
    }
    nd_free(h->rbuf);
    nd_free(h->wbuf);
    h->rbuf = h->wbuf = NULL;
}

/* Writes what the socket takes. Returns: false on a fatal error. */
static bool
flush(nd_ctx_t *ctx, http_conn_t *h)
{
    while (h->woff < h->wlen) {
        ssize_t n = nd_transport_write(&h->tr, h->wbuf + h->woff, h->wlen - h->woff);
        if (n > 0) {
            h->woff += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true; /* ND_IO_WRITE resumes */
        return false;
    }
    h->woff = h->wlen = 0;
    if (h->wcap > 65536) {
        nd_free(h->wbuf);
        h->wbuf = NULL;
        h->wcap = 0;
        /* A response this big was built from much more memory (the JSON tree, its text, the
         * body), all freed by now but kept by malloc in this worker's arena, where the
         * connections the listing describes never reuse it: a monitor polling /leafz or /connz
         * would hold the server's RSS at the size of its biggest answer. Give the free pages
         * back (rare: only after responses over 64 KB). */
#ifdef __GLIBC__
        malloc_trim(0);
#endif
    }
    if (h->eof && h->req == NULL)
        h->close_after = true; /* the peer sent all it will and has its answers */
    if (h->close_after && !h->lingering) {
        /* Shut our side and discard input until the peer closes: a reset would destroy the
         * response before the client reads it. */
        h->lingering = true;
        shutdown(h->io.fd, SHUT_WR); /* the write side only: the transport's shutdown is both */
        h->rlen = 0;
        nd_timer_start(ctx, &h->timer, (uint64_t)LINGER_MS * 1000000ull, 0);
        if (h->eof)
            http_close(ctx, h);
    }
    return true;
}

/* ---- requests ---- */

/* Splits the query into decoded parameters, as Go's url.ParseQuery (bad pairs are skipped). */
static void
parse_query(nd_mon_req_t *req, const char *q, size_t n)
{
    size_t cap = 0;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && q[j] != '&' && q[j] != ';')
            j++;
        if (j > i) {
            const char *eq = memchr(q + i, '=', j - i);
            size_t kl = eq ? (size_t)(eq - q - i) : j - i;
            const char *v = eq ? eq + 1 : q + j;
            size_t vl = eq ? (size_t)(q + j - v) : 0;
            char *k = nd_xmalloc(kl + 1), *val = nd_xmalloc(vl + 1);
            if (nd_http_pct_decode(q + i, kl, k, true) && nd_http_pct_decode(v, vl, val, true)) {
                if (req->nparams == cap) {
                    cap = nd_grow_cap(cap, req->nparams + 1, 8);
                    req->params = nd_xrealloc(req->params, cap * sizeof(*req->params));
                }
                req->params[req->nparams].key = k;
                req->params[req->nparams].val = val;
                req->nparams++;
            } else {
                nd_free(k);
                nd_free(val);
            }
        }
        i = j + 1;
    }
}

/* Access control for the monitoring port (off unless configured): HTTP Basic with the configured
 * user and password, or "Authorization: Bearer <token>". Passwords and tokens may be bcrypt
 * hashes, checked as client passwords are (auth/passwd.h: constant-time compare otherwise).
 * /healthz stays open so that orchestrators' probes need no secret. */
static bool
authorized(const nd_mon_auth_t *m, nd_mon_ep_t ep, const char *authz, size_t len)
{
    if (m == NULL)
        return true;
    if (ep == ND_MON_EP_HEALTHZ)
        return true;
    if (authz == NULL)
        return false;
    if (m->token != NULL && len > 7 && strncasecmp(authz, "Bearer ", 7) == 0) {
        const char *t = authz + 7;
        size_t tl = len - 7;
        nd_http_trim(&t, &tl);
        return nd_passwd_check(m->token, strlen(m->token), t, tl);
    }
    if (m->user != NULL && len > 6 && strncasecmp(authz, "Basic ", 6) == 0) {
        const char *b = authz + 6;
        size_t bl = len - 6;
        nd_http_trim(&b, &bl);
        if (bl == 0 || bl > 1024 || bl % 4 != 0)
            return false;
        unsigned char dec[800];
        int dn = EVP_DecodeBlock(dec, (const unsigned char *)b, (int)bl);
        if (dn < 0)
            return false;
        /* EVP_DecodeBlock counts the padding as zero bytes: drop them. */
        if (b[bl - 1] == '=')
            dn--;
        if (bl >= 2 && b[bl - 2] == '=')
            dn--;
        const unsigned char *colon = memchr(dec, ':', (size_t)dn);
        bool ok = false;
        if (colon != NULL) {
            size_t ul = (size_t)(colon - dec);
            bool user_ok = nd_passwd_equal_ct(dec, ul, m->user, strlen(m->user));
            bool pass_ok = nd_passwd_check(m->pass, strlen(m->pass),
                                           (const char *)colon + 1, (size_t)dn - ul - 1);
            ok = user_ok && pass_ok;
        }
        OPENSSL_cleanse(dec, sizeof dec);
        return ok;
    }
    return false;
}

static void send_gather(nd_ctx_t *ctx, http_conn_t *h);

/* Queues the response of a routed request and frees it. */
static void
finish_request(http_conn_t *h, nd_mon_req_t *req, bool head, bool keep)
{
    if (req->body == NULL)
        nd_mon_reply_text(req, 500, "no response");
    respond(h, req->status, req->ctype, req->body, req->body_len, head, keep, NULL);
    nd_mon_req_fini(req);
    nd_free(req);
}

/* Handles one complete request. Returns: false when it was parked for a gather. */
static bool
handle(nd_ctx_t *ctx, http_conn_t *h, const nd_http_req_t *pr)
{
    bool head = nd_http_ieq(pr->method, pr->method_len, "HEAD");
    bool keep = pr->keep;
    if (!head && !nd_http_ieq(pr->method, pr->method_len, "GET")) {
        static const char text[] = "Method Not Allowed\n";
        respond(h, 405, "text/plain; charset=utf-8", text, sizeof text - 1, false, keep,
                "Allow: GET, HEAD\r\n");
        return true;
    }
    const char *t = pr->target;
    size_t tl = pr->target_len;
    /* Absolute form (a proxy's): skip "scheme://authority". */
    if (tl > 7 && (strncasecmp(t, "http://", 7) == 0 || strncasecmp(t, "https://", 8) == 0)) {
        const char *p = memchr(t + 8, '/', tl - 8);
        if (p == NULL) {
            t = "/";
            tl = 1;
        } else {
            tl -= (size_t)(p - t);
            t = p;
        }
    }
    if (tl == 0 || t[0] != '/') {
        fail(h, 400, "400 Bad Request: invalid request target\n");
        return true;
    }
    const char *q = memchr(t, '?', tl);
    size_t pl = q != NULL ? (size_t)(q - t) : tl;
    char *path = nd_xmalloc(pl + 1);
    if (!nd_http_pct_decode(t, pl, path, false)) {
        nd_free(path);
        fail(h, 400, "400 Bad Request: invalid URL escape\n");
        return true;
    }
    /* Strip the base path. */
    const char *rest = path;
    size_t bl = strlen(h->mon->base_path);
    if (bl > 0) {
        if (strncmp(path, h->mon->base_path, bl) != 0 || (path[bl] != '\0' && path[bl] != '/')) {
            nd_free(path);
            static const char nf[] = "404 page not found\n";
            respond(h, 404, "text/plain; charset=utf-8", nf, sizeof nf - 1, head, keep, NULL);
            return true;
        }
        rest = path[bl] == '\0' ? "/" : path + bl;
    }
    nd_mon_req_t *req = nd_new(nd_mon_req_t);
    req->mon = h->mon;
    req->ctx = ctx;
    req->ep = ND_MON_EP_COUNT;
    for (int e = 0; e < ND_MON_EP_COUNT; e++)
        if (strcmp(rest, nd_mon_ep_paths[e]) == 0)
            req->ep = (nd_mon_ep_t)e;
    nd_free(path);
    if (req->ep == ND_MON_EP_COUNT) {
        nd_free(req);
        static const char nf[] = "404 page not found\n";
        respond(h, 404, "text/plain; charset=utf-8", nf, sizeof nf - 1, head, keep, NULL);
        return true;
    }
    /* The credentials in force now (a reload may replace them; ours stay valid until unref). */
    nd_mon_auth_t *auth = nd_mon_auth_get(ctx, h->mon);
    bool ok = authorized(auth, req->ep, pr->authz, pr->authz_len);
    nd_mon_auth_unref(auth);
    if (!ok) {
        nd_free(req);
        static const char ua[] = "Unauthorized\n";
        respond(h, 401, "text/plain; charset=utf-8", ua, sizeof ua - 1, head, keep,
                "WWW-Authenticate: Basic realm=\"natsd monitoring\"\r\n");
        return true;
    }
    atomic_fetch_add_explicit(&h->mon->req_stats[req->ep], 1, memory_order_relaxed);
    if (q != NULL)
        parse_query(req, q + 1, tl - pl - 1);
    req->now_ns = nd_mon_wall_ns();
    req->openmetrics = nd_http_accepts_openmetrics(pr->accept, pr->accept_len);
    nd_mon_route(req);
    if (!req->need_subs) {
        finish_request(h, req, head, keep);
        return true;
    }
    h->req = req;
    h->req_head = head;
    h->req_keep = keep;
    send_gather(ctx, h);
    return h->req == NULL;
}

/* Completes a parked request with the answers that came. */
static void
complete_gather(nd_ctx_t *ctx, http_conn_t *h)
{
    nd_mon_req_t *req = h->req;
    h->req = NULL;
    h->awaiting = 0;
    h->tag++;
    nd_timer_cancel(ctx, &h->timer);
    req->ctx = ctx;
    req->need_subs = false;
    req->finish(req);
    finish_request(h, req, h->req_head, h->req_keep);
}

static void
send_gather(nd_ctx_t *ctx, http_conn_t *h)
{
    nd_mon_req_t *req = h->req;
    h->tag++;
    h->awaiting = 0;
    for (size_t i = 0; i < req->nconns; i++) {
        nd_conn_info_t *ci = req->conns[i];
        if (ci->actor == NULL || ci->subs_known)
            continue;
        nd_connreg_ask_subs(ctx, ci, &h->base, HTTP_MSG_SUBS_REPLY, h->tag);
        h->awaiting++;
    }
    if (h->awaiting == 0) {
        complete_gather(ctx, h);
        return;
    }
    nd_timer_start(ctx, &h->timer, (uint64_t)GATHER_MS * 1000000ull, 0);
}

/* Answers every complete request in the input. */
static void
process(nd_ctx_t *ctx, http_conn_t *h)
{
    while (!h->closing && !h->close_after && h->req == NULL && h->rlen > 0) {
        if (h->wlen - h->woff > MAX_OUT) {
            h->read_owed = true; /* the client is not reading its answers: wait */
            return;
        }
        nd_http_req_t pr;
        int rc = nd_http_parse(h->rbuf, h->rlen, &pr);
        if (rc == 0) {
            if (!h->in_request) {
                h->in_request = true;
                nd_timer_start(ctx, &h->timer, h->mon->header_timeout_ns, 0);
            }
            return;
        }
        h->in_request = false;
        nd_timer_cancel(ctx, &h->timer);
        if (rc != 1) {
            char text[96];
            snprintf(text, sizeof text, "%d %s\n", rc, reason_phrase(rc));
            fail(h, rc, text);
            return;
        }
        bool done = handle(ctx, h, &pr);
        memmove(h->rbuf, h->rbuf + pr.total, h->rlen - pr.total);
        h->rlen -= pr.total;
        if (!done)
            return;
    }
    if (!h->closing && !h->close_after && h->req == NULL && h->rlen == 0 && !h->in_request)
        nd_timer_start(ctx, &h->timer, h->mon->idle_timeout_ns, 0);
}

static void
do_read(nd_ctx_t *ctx, http_conn_t *h)
{
    if (h->lingering) {
        char sink[4096];
        for (int i = 0; i < 16; i++) {
            ssize_t n = h->tr.vt->read(&h->tr, sink, sizeof sink);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                http_close(ctx, h);
                return;
            }
            if (n < 0)
                return;
        }
        nd_io_again(ctx, &h->io, ND_IO_READ);
        return;
    }
    if (h->req != NULL || h->close_after || h->wlen - h->woff > MAX_OUT) {
        h->read_owed = true;
        return;
    }
    size_t limit = ND_HTTP_MAX_HEAD + ND_HTTP_MAX_BODY;
    if (h->rlen >= limit) {
        fail(h, 431, "431 Request Header Fields Too Large\n");
        return;
    }
    if (h->rcap - h->rlen < 4096 && h->rcap < limit) {
        h->rcap = nd_grow_cap(h->rcap, h->rlen + 4096, 4096);
        if (h->rcap > limit)
            h->rcap = limit;
        h->rbuf = nd_xrealloc(h->rbuf, h->rcap);
    }
    size_t space = h->rcap - h->rlen;
    ssize_t n = h->tr.vt->read(&h->tr, h->rbuf + h->rlen, space);
    if (n == 0) {
        h->eof = true;
        process(ctx, h);
        /* The peer sent all it will: answer what came, then close. */
        if (h->req == NULL && !h->closing) {
            if (h->wlen == h->woff)
                http_close(ctx, h);
            else
                h->close_after = true;
        }
        return;
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            http_close(ctx, h);
        return;
    }
    h->rlen += (size_t)n;
    process(ctx, h);
    if ((size_t)n == space && !h->closing)
        nd_io_again(ctx, &h->io, ND_IO_READ); /* more may be waiting (edge-triggered) */
}

/* Resumes reading after a parked request or a drained output. */
static void
resume(nd_ctx_t *ctx, http_conn_t *h)
{
    process(ctx, h);
    if (h->read_owed && h->req == NULL && !h->close_after && !h->closing) {
        h->read_owed = false;
        nd_io_again(ctx, &h->io, ND_IO_READ);
    }
}

static void
on_timer(nd_ctx_t *ctx, http_conn_t *h, nd_msg_t *msg)
{
    if (!nd_timer_fired(&h->timer, msg) || h->closing)
        return;
    if (h->req != NULL) {
        complete_gather(ctx, h); /* some connection did not answer in time */
        resume(ctx, h);
        return;
    }
    /* Header deadline, idle keep-alive or linger: close without a word, as Go's server does. */
    http_close(ctx, h);
}

static void
dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    http_conn_t *h = (http_conn_t *)self;
    switch (msg->id) {
    case HTTP_MSG_IO: {
        uint32_t ev = nd_io_take(&h->io);
        if (h->closing)
            return;
        if (h->tls_pending) {
            char why[256] = "";
            nd_tls_hs_t hs = nd_tls_handshake(&h->tr, why, sizeof why);
            if (hs == ND_TLS_AGAIN)
                return;
            if (hs == ND_TLS_FAILED) {
                nd_log_debug("monitoring: TLS handshake error: %s", why);
                http_close(ctx, h);
                return;
            }
            h->tls_pending = false;
            ev |= ND_IO_READ; /* the request may already wait behind the handshake */
        }
        if (ev & (ND_IO_READ | ND_IO_HUP))
            do_read(ctx, h);
        return; /* turn_end writes */
    }
    case HTTP_MSG_TIMER:
        on_timer(ctx, h, msg);
        return;
    case HTTP_MSG_SUBS_REPLY: {
        nd_mon_msg_subs_reply_t *r = (nd_mon_msg_subs_reply_t *)msg;
        bool current = h->req != NULL && r->tag == h->tag;
        nd_conn_info_unref(ctx, r->info);
        if (current && --h->awaiting == 0 && !h->closing) {
            complete_gather(ctx, h);
            resume(ctx, h);
        }
        return;
    }
    default:
        nd_fatal("http: unknown message id %u", msg->id);
    }
}

static void
turn_end(nd_ctx_t *ctx, nd_actor_t *self)
{
    http_conn_t *h = (http_conn_t *)self;
    if (h->closing || h->woff == h->wlen)
        return;
    bool had = h->wlen - h->woff > MAX_OUT;
    if (!flush(ctx, h)) {
        http_close(ctx, h);
        return;
    }
    if (had && h->wlen - h->woff <= MAX_OUT && !h->closing)
        resume(ctx, h);
}

static void
discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    if (msg->id == HTTP_MSG_SUBS_REPLY)
        nd_conn_info_unref(ctx, ((nd_mon_msg_subs_reply_t *)msg)->info);
}

static const nd_actor_type_t http_type = {
    .name = "http",
    .size = sizeof(http_conn_t),
    .dispatch = dispatch,
    .final = on_final,
    .discard = discard,
    .turn_end = turn_end,
};

void
nd_mon_http_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_mon_t *m = arg;
    if (atomic_fetch_add_explicit(&m->nconns, 1, memory_order_relaxed) >= m->max_conns) {
        atomic_fetch_sub_explicit(&m->nconns, 1, memory_order_relaxed);
        close(fd); /* bounded memory: a flood of monitoring connections is refused */
        return;
    }
    http_conn_t *h = (http_conn_t *)nd_actor_spawn(ctx, &http_type);
    h->mon = m;
    h->io.fd = fd;
    nd_tcp_init(&h->tr, fd);
    if (m->tls != NULL) {
        /* HTTPS with the server's context; the header deadline also bounds the handshake. */
        nd_tls_wrap(&h->tr, m->tls, NULL, 0);
        h->tls_pending = true;
    }
    nd_timer_init(&h->timer, &h->base, HTTP_MSG_TIMER);
    /* The first request's deadline runs from the accept (armed before any other thread can see
     * the actor): a client that connects and sends nothing is a slowloris too. */
    h->in_request = true;
    nd_timer_start(ctx, &h->timer, m->header_timeout_ns, 0);
    int err = nd_poller_add(m->srv->poller, &h->io, fd, &h->base, HTTP_MSG_IO);
    if (err != 0) {
        nd_log_error("cannot register monitoring socket: %s", strerror(err));
        close(fd);
        atomic_fetch_sub_explicit(&m->nconns, 1, memory_order_relaxed);
        h->torn_down = h->closing = true;
        nd_timer_cancel(ctx, &h->timer);
        nd_actor_close(ctx, &h->base);
    } else {
        /* Bytes may have arrived before the registration, and their edge with them. */
        nd_io_again(ctx, &h->io, ND_IO_READ);
    }
    nd_actor_unref(ctx, &h->base); /* the poller registration keeps it */
}
