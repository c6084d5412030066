/* Dialers (see dial_int.h): the waiting and connecting the route, gateway and leaf dialer
 * threads share. */
#include "net/dial_int.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void
nd_dial_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void
nd_dial_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t wait_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += wait_ns / 1000000000ll;
    ts.tv_nsec += wait_ns % 1000000000ll;
    if (ts.tv_nsec >= 1000000000l) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000l;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

int
nd_dial_connect(const struct sockaddr *sa, socklen_t salen, int timeout_ms, const char *name,
                int port, char *err, size_t ecap)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, ecap, "socket: %s", strerror(errno));
        return -1;
    }
    int rc = connect(fd, sa, salen);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        rc = poll(&pfd, 1, timeout_ms);
        if (rc == 0) {
            errno = ETIMEDOUT;
            rc = -1;
        } else if (rc > 0) {
            int e = 0;
            socklen_t el = sizeof e;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
            errno = e;
            rc = e == 0 ? 0 : -1;
        }
    }
    if (rc < 0) {
        snprintf(err, ecap, "dial tcp %s:%d: connect: %s", name, port, strerror(errno));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

int
nd_dial_tcp(const char *host, int port, int timeout_ms, char *err, size_t ecap)
{
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        snprintf(err, ecap, "lookup %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = nd_dial_connect(res->ai_addr, res->ai_addrlen, timeout_ms, host, port, err, ecap);
    freeaddrinfo(res);
    return fd;
}
