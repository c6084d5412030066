/* The TLS transport: OpenSSL behind the transport vtable (transport.h), server side.
 *
 * OpenSSL stays in tls.c: callers see an nd_tls_ctx_t (one per configured tls {} block, built
 * once at start and immutable after) and a transport whose vtable reads and writes through a
 * non-blocking SSL object on the connection's socket. Nothing here ever blocks: a handshake step,
 * read or write that needs the socket returns at once (EAGAIN or ND_TLS_AGAIN), and the owner
 * retries on its next readiness message from the edge-triggered poller (poller.h), so a slow or
 * malicious peer costs a worker nothing but its timer.
 * References: nats-server 2.9.10/2.10 server/opts.go GenTLSConfig and overrideTLS,
 * server/client.go doTLSServerHandshake, server/ciphersuites.go; OpenSSL 3.0 SSL_read(3),
 * SSL_write(3) (SSL_MODE_ENABLE_PARTIAL_WRITE, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER).
 */
#ifndef ND_TLS_H
#define ND_TLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cfg/opts.h"
#include "net/transport.h"

/* nats-server's TLS_TIMEOUT default (seconds) for the handshake. */
#define ND_TLS_DEFAULT_TIMEOUT_MS 2000

/* A server-side TLS context. Immutable after nd_tls_ctx_new and reference counted: a config
 * reload builds a new one for new connections while the connections that took a reference on
 * the old one keep it (nats-server: a reloaded tls {} applies to new connections only). */
typedef struct nd_tls_ctx {
    _Atomic uint32_t refs; /* nd_tls_ctx_ref / nd_tls_ctx_unref */
    void *ssl_ctx;        /* SSL_CTX (opaque outside tls.c) */
    int64_t timeout_ms;   /* handshake timeout */
    int64_t fallback_ms;  /* handshake_first: auto/duration: wait this long for a ClientHello */
    bool handshake_first; /* TLS before INFO */
    bool verify;          /* a client certificate is required and verified against the CA */
    bool verify_and_map;  /* the client certificate names the user (see nd_tls_peer_names) */
    bool client;          /* the client side (a solicited route): nd_tls_ctx_new_client */
} nd_tls_ctx_t;

/* The client TLS options in force: the --tls* flags override the tls {} block, as nats-server's
 * overrideTLS does (--tlsverify implies --tls; both need --tlscert and --tlskey). Returns: 0 with
 * *out an owned copy, or NULL when TLS is off; -1 with nats-server's error text in err. */
int nd_tls_client_opts(const nd_opts_t *o, nd_tls_opts_t **out, char *err, size_t errlen);

/* Builds the server context from validated options (opts_tls.c checked the files), reading the
 * certificate, key and CA files now: a reload that builds a new context picks up files rotated
 * in place. Returns: the context with one reference for the caller, or NULL with the reason in
 * err. Ctx: a non-worker thread (start or reload: it reads files). */
nd_tls_ctx_t *nd_tls_ctx_new(const nd_tls_opts_t *t, char *err, size_t errlen);
/* Builds the client side of a route's TLS from the same tls {} block: our certificate (the
 * peer may verify it), the CA that verifies the server's, unless `insecure`. */
nd_tls_ctx_t *nd_tls_ctx_new_client(const nd_tls_opts_t *t, char *err, size_t errlen);
/* Returns: c with one more reference (c may be NULL). Ctx: any thread. */
nd_tls_ctx_t *nd_tls_ctx_ref(nd_tls_ctx_t *c);
/* Drops a reference; the last one frees the context. An SSL object made by nd_tls_wrap holds
 * OpenSSL's own reference on the SSL_CTX, so a wrapped transport outlives it safely. NULL is
 * fine. Ctx: any thread. */
void nd_tls_ctx_unref(nd_tls_ctx_t *c);

/* Switches t, a TCP transport, to TLS on the same fd, as the server side of a handshake that has
 * not started. prefix (copied; may be NULL): plaintext sent before any TLS byte (the INFO line
 * that nats-server writes before the client starts TLS). Ctx: the owner's turn. */
void nd_tls_wrap(nd_transport_t *t, const nd_tls_ctx_t *ctx, const void *prefix, size_t n);
/* As nd_tls_wrap for a client context: we start the handshake; host (an IP address or a name)
 * is what the server's certificate must name when the context verifies. */
void nd_tls_wrap_client(nd_transport_t *t, const nd_tls_ctx_t *ctx, const char *host);

/* True when t is a TLS transport. */
bool nd_tls_is(const nd_transport_t *t);

typedef enum { ND_TLS_DONE = 0, ND_TLS_AGAIN, ND_TLS_FAILED } nd_tls_hs_t;

/* Advances the handshake as far as the socket allows. Returns: ND_TLS_DONE once complete,
 * ND_TLS_AGAIN to be called again on the next readiness message, ND_TLS_FAILED with the reason
 * in why. Ctx: the owner's turn. */
nd_tls_hs_t nd_tls_handshake(nd_transport_t *t, char *why, size_t len);

/* True when the last read stopped because OpenSSL must write first (a key update answer): the
 * owner must read again when the socket becomes writable, not only when it becomes readable. */
bool nd_tls_read_wants_write(const nd_transport_t *t);

/* The names a verified client certificate offers for verify_and_map, in nats-server's order of
 * trial (auth.go checkClientTLSCertSubject): e-mail SANs, DNS SANs, URI SANs, then the subject
 * DN in RFC 2253 form as nats-server prints it (most specific RDN first, multi-valued RDNs
 * joined by '+', `,+"\<>;` and a leading '#' or space escaped with '\'). Appends to *out. */
void nd_tls_peer_names(const nd_transport_t *t, nd_strlist_t *out);

/* The negotiated protocol ("1.3") and cipher (OpenSSL's name) for monitoring; "" before the
 * handshake completes. */
const char *nd_tls_version(const nd_transport_t *t);
const char *nd_tls_cipher(const nd_transport_t *t);

#endif
