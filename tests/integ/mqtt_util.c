/* Raw MQTT for the integration tests (see mqtt_util.h). */
#include "mqtt_util.h"

#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

void
put(mbuf_t *m, const void *p, size_t n)
{
    cr_assert(m->n + n <= sizeof m->b, "test packet too large");
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

void
put_u8(mbuf_t *m, uint8_t v)
{
    put(m, &v, 1);
}

void
put_u16(mbuf_t *m, uint16_t v)
{
    put_u8(m, (uint8_t)(v >> 8));
    put_u8(m, (uint8_t)v);
}

void
put_strn(mbuf_t *m, const char *s, size_t n)
{
    put_u16(m, (uint16_t)n);
    put(m, s, n);
}

void
put_str(mbuf_t *m, const char *s)
{
    put_strn(m, s, strlen(s));
}

void
put_rl(mbuf_t *m, size_t v)
{
    do {
        uint8_t b = (uint8_t)(v % 128);
        v /= 128;
        if (v > 0)
            b |= 0x80;
        put_u8(m, b);
    } while (v > 0);
}

void
pkt(mbuf_t *out, uint8_t h, const mbuf_t *body)
{
    out->n = 0;
    put_u8(out, h);
    put_rl(out, body->n);
    put(out, body->b, body->n);
}

int
tcp_dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect: %s", strerror(errno));
    return fd;
}

void
send_raw(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
        cr_assert(k > 0, "send: %s", strerror(errno));
        b += k;
        n -= (size_t)k;
    }
}

bool
recv_n_within(int fd, void *p, size_t n, int timeout_ms)
{
    char *b = p;
    while (n > 0) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        cr_assert(poll(&pf, 1, timeout_ms) == 1, "timed out reading from the server");
        ssize_t k = recv(fd, b, n, 0);
        if (k <= 0)
            return false;
        b += k;
        n -= (size_t)k;
    }
    return true;
}

bool
recv_n(int fd, void *p, size_t n)
{
    return recv_n_within(fd, p, n, ND_INTEG_TIMEOUT_MS);
}
