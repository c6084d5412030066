/* The transport vtable: how a connection moves bytes, so TCP, TLS (OpenSSL, one file) and
 * WebSocket framing plug in under the connection actor without it knowing which it has.
 * A transport belongs to one connection and is used only on that connection's turn.
 * read/write follow recv(2)/send(2): bytes moved, 0 for end of stream (read), or -1 with errno
 * (EAGAIN/EWOULDBLOCK when the socket is not ready). */
#ifndef ND_TRANSPORT_H
#define ND_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct nd_transport nd_transport_t;

typedef struct nd_transport_vt {
    const char *name;
    ssize_t (*read)(nd_transport_t *t, void *buf, size_t len);
    ssize_t (*writev)(nd_transport_t *t, const struct iovec *iov, int iovcnt);
    /* Stops both directions (the fd stays open; the poller closes it). */
    void (*shutdown)(nd_transport_t *t);
    /* Releases the transport's own state (not the fd). */
    void (*close)(nd_transport_t *t);
} nd_transport_vt_t;

struct nd_transport {
    const nd_transport_vt_t *vt;
    int fd;
    void *impl; /* the transport's own state (TLS: net/tls.c), NULL for TCP */
};

/* Plain TCP over fd; lives inside the connection (no allocation). */
void nd_tcp_init(nd_transport_t *t, int fd);

/* A non-blocking listening socket on host:port (port 0 or negative = any free port), trying each
 * address getaddrinfo gives. On failure logs nats-server's text, "Error listening on <what>:
 * host:port, "<reason>"", and returns -1. Otherwise returns the socket and the bound port. */
int nd_tcp_listen(const char *host, int port, int backlog, const char *what, int *bound_port);

static inline ssize_t
nd_transport_write(nd_transport_t *t, const void *buf, size_t len)
{
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return t->vt->writev(t, &iov, 1);
}

#endif
