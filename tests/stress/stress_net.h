/* What the stress programs that drive a server over loopback share (stress_reload,
 * stress_reload_login, stress_iclient): an in-process server started from a config file, and
 * raw-socket helpers. Plain blocking sockets; the only wait
 * is bounded by the hang guard of stress_util.h (stress_stall_limit_s), never by a timing
 * expectation. */
#ifndef ND_STRESS_NET_H
#define ND_STRESS_NET_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "stress_util.h"

/* Starts natsd in this process with the config file at path, on 127.0.0.1, a random port and 3
 * workers; those are also set as its command-line flags, so every reload applies them again. */
static inline natsd_t *
stress_start_server(const char *path)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    char err[1024];
    STRESS_CHECK(nd_opts_apply_config(&o, path, err, sizeof err) >= 0, "config: %s", err);
    nd_free(o.host);
    o.host = nd_xstrdup("127.0.0.1");
    o.port = -1;
    o.workers = 3;
    nd_free(o.config_file);
    o.config_file = nd_xstrdup(path);
    natsd_t *s = natsd_start(&o);
    nd_opts_free(&o);
    STRESS_CHECK(s != NULL, "natsd_start failed");
    char *const args[] = {"natsd", "-a", "127.0.0.1", "-p", "-1", "-w", "3"};
    natsd_set_args(s, 7, args);
    return s;
}

/* A connected socket to 127.0.0.1:port. */
static inline int
stress_dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    STRESS_CHECK(fd >= 0, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    STRESS_CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
    return fd;
}

/* Sends all of p. Returns: false when the server closed the connection first (EPIPE or
 * ECONNRESET); any other error fails the program. */
static inline bool
stress_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
            return false;
        STRESS_CHECK(w > 0, "send: %s", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads into buf (NUL-terminated, *len bytes so far) until it holds `until`. Returns: true then,
 * false when the server closes first; no progress within the hang guard fails the program. */
static inline bool
stress_read_until(int fd, char *buf, size_t cap, size_t *len, const char *until)
{
    for (;;) {
        buf[*len] = '\0';
        if (strstr(buf, until) != NULL)
            return true;
        STRESS_CHECK(*len + 1 < cap, "reply too long: %.200s", buf);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(stress_stall_limit_s() * 1000));
        STRESS_CHECK(r > 0, "no reply within the hang guard; have: %.200s", buf);
        ssize_t n = recv(fd, buf + *len, cap - 1 - *len, 0);
        if (n <= 0)
            return false;
        *len += (size_t)n;
    }
}

#endif
