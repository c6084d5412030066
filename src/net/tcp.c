/* Plain TCP transport; see transport.h. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "net/transport.h"

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

int
nd_tcp_listen(const char *host, int port, int backlog, const char *what, int *bound_port)
{
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port < 0 ? 0 : port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        nd_log_error("Error listening on %s: %s:%s, \"%s\"", what, host, portstr,
                     gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        nd_log_error("Error listening on %s: %s:%s, \"%s\"", what, host, portstr,
                     strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}
