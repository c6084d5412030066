/* Plain TCP transport; see transport.h. */
#include <errno.h>
#include <sys/socket.h>

#include "transport.h"

static ssize_t
tcp_read(nd_transport_t *t, void *buf, size_t len)
{
    ssize_t n;
    do
        n = recv(t->fd, buf, len, 0);
    while (n < 0 && errno == EINTR);
    return n;
}

static ssize_t
tcp_writev(nd_transport_t *t, const struct iovec *iov, int iovcnt)
{
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt};
    ssize_t n;
    do
        n = sendmsg(t->fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
}

static void
tcp_shutdown(nd_transport_t *t)
{
    shutdown(t->fd, SHUT_RDWR);
}

static void
tcp_close(nd_transport_t *t)
{
    (void)t;
}

static const nd_transport_vt_t tcp_vt = {
    .name = "tcp",
    .read = tcp_read,
    .writev = tcp_writev,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
};

void
nd_tcp_init(nd_transport_t *t, int fd)
{
    t->vt = &tcp_vt;
    t->fd = fd;
    t->impl = NULL;
}
