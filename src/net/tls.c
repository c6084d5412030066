/* The TLS transport; see tls.h.
 *
 * Non-blocking use of OpenSSL under an edge-triggered poller. The invariants that keep a
 * connection from stalling:
 *   - read() loops on SSL_read until the caller's buffer is full or OpenSSL reports WANT_READ.
 *     OpenSSL returns at most one record per call and may hold decrypted bytes of a record that
 *     the socket already delivered, so stopping after one record could leave data that no new
 *     edge will announce. The connection re-posts its own read when the buffer fills (conn.c),
 *     which also covers bytes left in SSL_pending.
 *   - WANT_READ and WANT_WRITE from any call become EAGAIN; the edge that ends them (readable or
 *     writable) reaches the owner as an I/O message. A read that needs a write first is flagged
 *     (nd_tls_read_wants_write) so the owner reads on the writable edge too; a write that needs a
 *     read is retried by the owner's turn_end flush after the readable edge.
 *   - Writes use SSL_MODE_ENABLE_PARTIAL_WRITE and SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER: the
 *     connection retries the same unwritten bytes after EAGAIN, but they may have moved from the
 *     worker's scratch to a private buffer in between.
 *   - The thread's OpenSSL error queue is cleared before every SSL I/O call: a connection
 *     moves between workers, and an error another piece of code left on this worker's queue
 *     would make SSL_get_error report a fatal error instead of WANT_READ.
 *   - No session tickets and no renegotiation: both would make OpenSSL write on its own.
 *   - The socket BIO is our own (sock_bio): OpenSSL's writes with write(2), which raises SIGPIPE
 *     on a reset peer in a process that embeds natsd without ignoring it; ours uses send(2) with
 *     MSG_NOSIGNAL, as tcp.c does.
 * The handshake is driven by nd_tls_handshake from the owner's I/O messages; the owner bounds it
 * with a timer (tls `timeout`, nats-server's default 2 s) and closes the connection with "TLS
 * Handshake Failure" when it expires, as nats-server does.
 */
#include "net/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "actors/alloc.h"
#include "cfg/opts_parse.h"

typedef struct tls_conn {
    SSL *ssl;
    bool fatal;   /* a fatal error was seen: no close_notify may be sent */
    char *prefix; /* plaintext still to send before the handshake (owned) */
    size_t plen, poff;
    bool done;             /* handshake complete */
    bool read_wants_write; /* the last SSL_read stopped on WANT_WRITE */
} tls_conn_t;

/* ---- options ---- */

int
nd_tls_client_opts(const nd_opts_t *o, nd_tls_opts_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->tls || o->tls_verify) {
        /* overrideTLS: the flags replace the block's files and verification. */
        if (o->tls_cert == NULL || o->tls_cert[0] == '\0') {
            snprintf(err, errlen, "TLS Server certificate must be present and valid");
            return -1;
        }
        if (o->tls_key == NULL || o->tls_key[0] == '\0') {
            snprintf(err, errlen, "TLS Server private key must be present and valid");
            return -1;
        }
        nd_tls_opts_t *t =
            o->tls_cfg != NULL ? nd_tls_opts_dup(o->tls_cfg) : nd_xcalloc(1, sizeof(*t));
        nd_set_str(&t->cert_file, o->tls_cert);
        nd_set_str(&t->key_file, o->tls_key);
        if (o->tls_ca_cert != NULL && o->tls_ca_cert[0] != '\0')
            nd_set_str(&t->ca_file, o->tls_ca_cert);
        t->verify = t->verify || o->tls_verify;
        *out = t;
        return 0;
    }
    if (o->tls_cfg != NULL && (o->tls_cfg->cert_file != NULL || o->tls_cfg->ncerts > 0))
        *out = nd_tls_opts_dup(o->tls_cfg);
    return 0;
}

/* ---- context ---- */

/* Go's cipher names (nats-server's cipherMap) to OpenSSL's, for TLS 1.2 and below. Go ignores
 * cipher_suites for TLS 1.3, whose suites are always on; so do we. */
static const struct {
    const char *go, *ossl;
} cipher_map[] = {
    {"TLS_RSA_WITH_RC4_128_SHA", "RC4-SHA"},
    {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", "ECDHE-ECDSA-RC4-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "ECDHE-RSA-RC4-SHA"},
    {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};

/* nats-server's defaultCipherSuites. */
static const char default_ciphers[] =
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:"
    "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256";

static const struct {
    const char *go, *ossl;
} curve_map[] = {
    {"X25519", "X25519"},
    {"CurveP256", "P-256"},
    {"CurveP384", "P-384"},
    {"CurveP521", "P-521"},
};

/* Appends OpenSSL's first queued error to err ("what: reason"). */
static nd_tls_ctx_t *
ctx_fail(SSL_CTX *sc, const char *what, char *err, size_t errlen)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof buf);
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
    SSL_CTX_free(sc);
    return NULL;
}

nd_tls_ctx_t *
nd_tls_ctx_new(const nd_tls_opts_t *t, char *err, size_t errlen)
{
    SSL_CTX *sc = SSL_CTX_new(TLS_server_method());
    if (sc == NULL)
        return ctx_fail(NULL, "cannot create the TLS context", err, errlen);
    SSL_CTX_set_min_proto_version(sc, t->min_version == 0x0304 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(sc, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                                SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_num_tickets(sc, 0);
    SSL_CTX_set_mode(sc, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                             SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(sc, SSL_SESS_CACHE_OFF);

    const char *cert = t->cert_file, *key = t->key_file;
    if (cert == NULL && t->ncerts > 0) {
        /* certs: [...] offers several pairs for SNI; OpenSSL serves the first. */
        cert = t->certs[0].cert_file;
        key = t->certs[0].key_file;
    }
    if (cert == NULL || key == NULL)
        return ctx_fail(sc, "missing 'cert_file' in TLS configuration", err, errlen);
    if (SSL_CTX_use_certificate_chain_file(sc, cert) != 1)
        return ctx_fail(sc, "cannot load the TLS certificate", err, errlen);
    if (SSL_CTX_use_PrivateKey_file(sc, key, SSL_FILETYPE_PEM) != 1)
        return ctx_fail(sc, "cannot load the TLS key", err, errlen);
    if (SSL_CTX_check_private_key(sc) != 1)
        return ctx_fail(sc, "tls: private key does not match public key", err, errlen);
    if (t->ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(sc, t->ca_file, NULL) != 1)
            return ctx_fail(sc, "failed to parse root ca certificate", err, errlen);
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_file);
        if (names != NULL)
            SSL_CTX_set_client_CA_list(sc, names);
    }
    /* Go's tls.RequireAndVerifyClientCert with verify, tls.NoClientCert without. */
    SSL_CTX_set_verify(
        sc, t->verify ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_NONE, NULL);

    char list[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < t->cipher_suites.n; i++)
        for (size_t k = 0; k < sizeof cipher_map / sizeof cipher_map[0]; k++)
            if (strcmp(t->cipher_suites.v[i], cipher_map[k].go) == 0 &&
                used + strlen(cipher_map[k].ossl) + 2 < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ":" : "",
                                         cipher_map[k].ossl);
    /* A list of TLS 1.3 names only leaves TLS 1.2 with OpenSSL's choice (set_cipher_list would
     * refuse an empty list). Unknown OpenSSL names (RC4 in OpenSSL 3) are skipped by it. */
    if (SSL_CTX_set_cipher_list(sc, used ? list : default_ciphers) != 1)
        ERR_clear_error();

    if (t->curve_preferences.n > 0) {
        char groups[128] = "";
        size_t gl = 0;
        for (size_t i = 0; i < t->curve_preferences.n; i++)
            for (size_t k = 0; k < sizeof curve_map / sizeof curve_map[0]; k++)
                if (strcmp(t->curve_preferences.v[i], curve_map[k].go) == 0)
                    gl += (size_t)snprintf(groups + gl, sizeof groups - gl, "%s%s", gl ? ":" : "",
                                           curve_map[k].ossl);
        if (gl > 0 && SSL_CTX_set1_groups_list(sc, groups) != 1)
            return ctx_fail(sc, "cannot set the curve preferences", err, errlen);
    }

    nd_tls_ctx_t *c = nd_xcalloc(1, sizeof(*c));
    atomic_init(&c->refs, 1);
    c->ssl_ctx = sc;
    c->timeout_ms =
        t->timeout_s > 0 ? (int64_t)(t->timeout_s * 1000.0 + 0.5) : ND_TLS_DEFAULT_TIMEOUT_MS;
    c->handshake_first = t->handshake_first;
    c->fallback_ms = t->handshake_first ? t->fallback_delay_ms : 0;
    c->verify = t->verify;
    c->verify_and_map = t->verify_and_map;
    return c;
}

nd_tls_ctx_t *
nd_tls_ctx_new_client(const nd_tls_opts_t *t, char *err, size_t errlen)
{
    SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
    if (sc == NULL)
        return ctx_fail(NULL, "cannot create the TLS context", err, errlen);
    SSL_CTX_set_min_proto_version(sc, t->min_version == 0x0304 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(sc, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(sc, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                             SSL_MODE_RELEASE_BUFFERS);
    const char *cert = t->cert_file, *key = t->key_file;
    if (cert == NULL && t->ncerts > 0) {
        cert = t->certs[0].cert_file;
        key = t->certs[0].key_file;
    }
    if (cert != NULL && key != NULL) {
        if (SSL_CTX_use_certificate_chain_file(sc, cert) != 1)
            return ctx_fail(sc, "cannot load the TLS certificate", err, errlen);
        if (SSL_CTX_use_PrivateKey_file(sc, key, SSL_FILETYPE_PEM) != 1)
            return ctx_fail(sc, "cannot load the TLS key", err, errlen);
    }
    if (t->ca_file != NULL && SSL_CTX_load_verify_locations(sc, t->ca_file, NULL) != 1)
        return ctx_fail(sc, "failed to parse root ca certificate", err, errlen);
    if (t->ca_file == NULL)
        SSL_CTX_set_default_verify_paths(sc);
    SSL_CTX_set_verify(sc, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    nd_tls_ctx_t *c = nd_xcalloc(1, sizeof(*c));
    atomic_init(&c->refs, 1);
    c->ssl_ctx = sc;
    c->timeout_ms =
        t->timeout_s > 0 ? (int64_t)(t->timeout_s * 1000.0 + 0.5) : ND_TLS_DEFAULT_TIMEOUT_MS;
    c->verify = !t->insecure;
    c->client = true;
    return c;
}

nd_tls_ctx_t *
nd_tls_ctx_ref(nd_tls_ctx_t *c)
{
    if (c != NULL)
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
    return c;
}

void
nd_tls_ctx_unref(nd_tls_ctx_t *c)
{
    /* acq_rel: the last holder sees every other holder's reads done before it frees. */
    if (c == NULL || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    SSL_CTX_free(c->ssl_ctx);
    nd_free(c);
}

/* ---- transport ---- */

/* Maps an SSL_* result: WANT_* to EAGAIN (recording a read's wish to write), end of stream to 0,
 * the rest to EIO. */
static ssize_t
ssl_result(tls_conn_t *tc, int rc, bool reading)
{
    int e = SSL_get_error(tc->ssl, rc);
    switch (e) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        if (reading)
            tc->read_wants_write = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        tc->fatal = true;
        if (errno == 0) /* the peer closed without close_notify */
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            errno = EAGAIN;
            return -1;
        }
        return -1;
    default:
        ERR_clear_error();
        tc->fatal = true;
        errno = EIO;
        return -1;
    }
}

static ssize_t
tls_read(nd_transport_t *t, void *buf, size_t len)
{
    tls_conn_t *tc = t->impl;
    size_t got = 0;
    tc->read_wants_write = false;
    while (got < len) {
        size_t n = 0;
        errno = 0;
        /* SSL_get_error reads this thread's error queue, where other code run by this worker
         * may have left errors: it must be empty before each I/O call. */
        ERR_clear_error();
        int rc = SSL_read_ex(tc->ssl, (char *)buf + got, len - got, &n);
        if (rc == 1) {
            got += n;
            continue;
        }
        ssize_t r = ssl_result(tc, rc, true);
        if (got > 0)
            /* Report what was read; an end of stream or error shows again on the next call (the
             * peer's FIN also arrives as a hang-up edge, which keeps the owner reading). */
            return (ssize_t)got;
        return r;
    }
    return (ssize_t)got;
}

static ssize_t
tls_writev(nd_transport_t *t, const struct iovec *iov, int iovcnt)
{
    tls_conn_t *tc = t->impl;
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        size_t off = 0;
        while (off < iov[i].iov_len) {
            size_t n = 0;
            errno = 0;
            ERR_clear_error();
            int rc = SSL_write_ex(tc->ssl, (const char *)iov[i].iov_base + off,
                                  iov[i].iov_len - off, &n);
            if (rc == 1) {
                off += n;
                total += n;
                continue;
            }
            ssize_t r = ssl_result(tc, rc, false);
            if (total > 0)
                return (ssize_t)total;
            if (r == 0) { /* the peer is gone: a write error, as EPIPE would be on TCP */
                errno = EPIPE;
                return -1;
            }
            return r;
        }
    }
    return (ssize_t)total;
}

static void
tls_shutdown(nd_transport_t *t)
{
    tls_conn_t *tc = t->impl;
    if (tc->done && !tc->fatal) {
        SSL_shutdown(tc->ssl); /* best effort close_notify; never waits for the peer's */
        ERR_clear_error();
    }
    shutdown(t->fd, SHUT_RDWR);
}

static void
tls_close(nd_transport_t *t)
{
    tls_conn_t *tc = t->impl;
    if (tc == NULL)
        return;
    if (tc->done && !tc->fatal) {
        SSL_shutdown(tc->ssl); /* best effort close_notify, never waiting for the peer's */
        ERR_clear_error();
    }
    SSL_free(tc->ssl);
    nd_free(tc->prefix);
    nd_free(tc);
    t->impl = NULL;
}

static const nd_transport_vt_t tls_vt = {
    .name = "tls",
    .read = tls_read,
    .writev = tls_writev,
    .shutdown = tls_shutdown,
    .close = tls_close,
};

/* ---- the socket BIO: recv/send with MSG_NOSIGNAL ---- */

static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static int
sock_write(BIO *b, const char *buf, int len)
{
    ssize_t n;
    do
        n = send((int)(intptr_t)BIO_get_data(b), buf, (size_t)len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)n;
}

static int
sock_read(BIO *b, char *buf, int len)
{
    ssize_t n;
    do
        n = recv((int)(intptr_t)BIO_get_data(b), buf, (size_t)len, 0);
    while (n < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    return (int)n;
}

static long
sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b, (void)num, (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static void
sock_method_init(void)
{
    sock_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "natsd socket");
    if (sock_method == NULL || BIO_meth_set_write(sock_method, sock_write) != 1 ||
        BIO_meth_set_read(sock_method, sock_read) != 1 ||
        BIO_meth_set_ctrl(sock_method, sock_ctrl) != 1)
        nd_fatal("tls: cannot create the socket BIO method");
}

void
nd_tls_wrap(nd_transport_t *t, const nd_tls_ctx_t *ctx, const void *prefix, size_t n)
{
    tls_conn_t *tc = nd_xcalloc(1, sizeof(*tc));
    pthread_once(&sock_once, sock_method_init);
    tc->ssl = SSL_new(ctx->ssl_ctx);
    BIO *bio = BIO_new(sock_method);
    if (tc->ssl == NULL || bio == NULL)
        nd_fatal("tls: cannot create an SSL object");
    BIO_set_data(bio, (void *)(intptr_t)t->fd);
    BIO_set_init(bio, 1);
    SSL_set_bio(tc->ssl, bio, bio); /* the SSL owns the BIO (one reference for both sides) */
    SSL_set_accept_state(tc->ssl);
    if (n > 0) {
        tc->prefix = nd_xmalloc(n);
        memcpy(tc->prefix, prefix, n);
        tc->plen = n;
    }
    t->vt = &tls_vt;
    t->impl = tc;
}

void
nd_tls_wrap_client(nd_transport_t *t, const nd_tls_ctx_t *ctx, const char *host)
{
    nd_tls_wrap(t, ctx, NULL, 0);
    SSL *ssl = ((tls_conn_t *)t->impl)->ssl;
    SSL_set_connect_state(ssl);
    if (host != NULL && host[0] != '\0') {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        /* Go checks the URL's host against the certificate: an IP address against its IP SANs. */
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1) {
            ERR_clear_error();
            X509_VERIFY_PARAM_set1_host(vp, host, 0);
            SSL_set_tlsext_host_name(ssl, host);
        }
    }
}

bool
nd_tls_is(const nd_transport_t *t)
{
    return t->vt == &tls_vt;
}

bool
nd_tls_read_wants_write(const nd_transport_t *t)
{
    return nd_tls_is(t) && ((tls_conn_t *)t->impl)->read_wants_write;
}

nd_tls_hs_t
nd_tls_handshake(nd_transport_t *t, char *why, size_t len)
{
    tls_conn_t *tc = t->impl;
    while (tc->poff < tc->plen) {
        ssize_t n = send(t->fd, tc->prefix + tc->poff, tc->plen - tc->poff, MSG_NOSIGNAL);
        if (n > 0) {
            tc->poff += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return ND_TLS_AGAIN;
        snprintf(why, len, "write: %s", strerror(errno));
        return ND_TLS_FAILED;
    }
    if (tc->done)
        return ND_TLS_DONE;
    errno = 0;
    ERR_clear_error();
    int rc = SSL_do_handshake(tc->ssl);
    if (rc == 1) {
        tc->done = true;
        nd_free(tc->prefix);
        tc->prefix = NULL;
        return ND_TLS_DONE;
    }
    int e = SSL_get_error(tc->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return ND_TLS_AGAIN;
    unsigned long oe = ERR_peek_error();
    if (oe != 0)
        ERR_error_string_n(oe, why, len);
    else if (e == SSL_ERROR_SYSCALL && errno != 0)
        snprintf(why, len, "read: %s", strerror(errno));
    else
        snprintf(why, len, "EOF");
    ERR_clear_error();
    long vr = SSL_get_verify_result(tc->ssl);
    if (vr != X509_V_OK) {
        size_t l = strlen(why);
        snprintf(why + l, len - l, " (certificate: %s)", X509_verify_cert_error_string(vr));
    }
    /* Discard what the client sent after the bad record (a plain CONNECT and PING, say), so the
     * close that follows is a FIN, as from nats-server, and not a reset that could destroy
     * bytes in flight. Bounded: a flood is simply reset. */
    char sink[4096];
    for (int i = 0; i < 16 && recv(t->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ;
    return ND_TLS_FAILED;
}

const char *
nd_tls_version(const nd_transport_t *t)
{
    if (!nd_tls_is(t) || !((tls_conn_t *)t->impl)->done)
        return "";
    switch (SSL_version(((tls_conn_t *)t->impl)->ssl)) {
    case TLS1_3_VERSION:
        return "1.3";
    case TLS1_2_VERSION:
        return "1.2";
    default:
        return "";
    }
}

const char *
nd_tls_cipher(const nd_transport_t *t)
{
    if (!nd_tls_is(t) || !((tls_conn_t *)t->impl)->done)
        return "";
    const char *n = SSL_get_cipher_name(((tls_conn_t *)t->impl)->ssl);
    return n ? n : "";
}

/* ---- verify_and_map names ---- */

/* The short names nats-server's DN printer knows (internal/ldap dn.go); others print as the
 * dotted OID with the DER value in hex, as Go's pkix does. */
static const struct {
    int nid;
    const char *name;
} dn_names[] = {
    {NID_countryName, "C"},
    {NID_organizationName, "O"},
    {NID_organizationalUnitName, "OU"},
    {NID_commonName, "CN"},
    {NID_serialNumber, "SERIALNUMBER"},
    {NID_localityName, "L"},
    {NID_stateOrProvinceName, "ST"},
    {NID_streetAddress, "STREET"},
    {NID_postalCode, "POSTALCODE"},
    {NID_domainComponent, "DC"},
};

typedef struct {
    char *p;
    size_t len, cap;
} sbuf_t;

static void
sb_add(sbuf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = nd_grow_cap(b->cap, b->len + n + 1, 128);
        b->p = nd_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void
dn_entry(sbuf_t *b, const X509_NAME_ENTRY *ne)
{
    ASN1_OBJECT *obj = X509_NAME_ENTRY_get_object(ne);
    ASN1_STRING *val = X509_NAME_ENTRY_get_data(ne);
    int nid = OBJ_obj2nid(obj);
    const char *name = NULL;
    for (size_t i = 0; i < sizeof dn_names / sizeof dn_names[0]; i++)
        if (dn_names[i].nid == nid)
            name = dn_names[i].name;
    if (name == NULL) {
        char oid[128];
        OBJ_obj2txt(oid, sizeof oid, obj, 1);
        sb_add(b, oid, strlen(oid));
        sb_add(b, "=#", 2);
        ASN1_TYPE *at = ASN1_TYPE_new();
        unsigned char *der = NULL;
        int dl = -1;
        if (at != NULL && ASN1_TYPE_set1(at, ASN1_STRING_type(val), val) == 1)
            dl = i2d_ASN1_TYPE(at, &der);
        for (int i = 0; i < dl; i++) {
            char hx[3];
            snprintf(hx, sizeof hx, "%02x", der[i]);
            sb_add(b, hx, 2);
        }
        OPENSSL_free(der);
        ASN1_TYPE_free(at);
        return;
    }
    sb_add(b, name, strlen(name));
    sb_add(b, "=", 1);
    unsigned char *u = NULL;
    int ul = ASN1_STRING_to_UTF8(&u, val);
    for (int i = 0; i < ul; i++) {
        char ch = (char)u[i];
        bool esc = strchr(",+\"\\<>;", ch) != NULL && ch != '\0';
        if (ch == ' ')
            esc = i == 0 || i == ul - 1;
        if (ch == '#')
            esc = i == 0;
        if (esc)
            sb_add(b, "\\", 1);
        sb_add(b, &ch, 1);
    }
    OPENSSL_free(u);
}

/* The subject as nats-server prints a DN: RDNs from last to first, joined by ','; the values of
 * a multi-valued RDN in their encoded order, joined by '+'. */
static char *
dn_string(const X509_NAME *nm)
{
    sbuf_t b = {0};
    sb_add(&b, "", 0);
    int n = X509_NAME_entry_count(nm);
    int i = n - 1;
    bool first = true;
    while (i >= 0) {
        int set = X509_NAME_ENTRY_set(X509_NAME_get_entry(nm, i));
        int lo = i;
        while (lo > 0 && X509_NAME_ENTRY_set(X509_NAME_get_entry(nm, lo - 1)) == set)
            lo--;
        if (!first)
            sb_add(&b, ",", 1);
        first = false;
        for (int k = lo; k <= i; k++) {
            if (k > lo)
                sb_add(&b, "+", 1);
            dn_entry(&b, X509_NAME_get_entry(nm, k));
        }
        i = lo - 1;
    }
    return b.p;
}

void
nd_tls_peer_names(const nd_transport_t *t, nd_strlist_t *out)
{
    if (!nd_tls_is(t))
        return;
    X509 *x = SSL_get0_peer_certificate(((tls_conn_t *)t->impl)->ssl);
    if (x == NULL)
        return;
    GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    static const int order[] = {GEN_EMAIL, GEN_DNS, GEN_URI};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        for (int i = 0; sans != NULL && i < sk_GENERAL_NAME_num(sans); i++) {
            const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
            if (g->type != order[o])
                continue;
            const ASN1_IA5STRING *s = g->d.ia5;
            char *v = nd_xmalloc((size_t)s->length + 1);
            memcpy(v, s->data, (size_t)s->length);
            v[s->length] = '\0';
            if (strlen(v) == (size_t)s->length) /* an embedded NUL never names a user */
                nd_strlist_add(out, v);
            nd_free(v);
        }
    }
    GENERAL_NAMES_free(sans);
    char *dn = dn_string(X509_get_subject_name(x));
    nd_strlist_add(out, dn);
    nd_free(dn);
}
