/* Unit tests of the connection actor (src/net/conn.c) on a server running in this process
 * (test_inproc.h): the INFO it greets with, PING/PONG, the payload limit and the slow consumer
 * close. */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "test_inproc.h"

TestSuite(conn, .fini = nd_integ_cleanup, .timeout = 180);

static const char QUIET[] = "{\"verbose\":false}";

/* The INFO line comes first, names the limits in force, and ends with " \r\n" (as nats-server). */
Test(conn, info_first)
{
    inproc_t p = inproc_start("max_payload: 100\n");
    nd_integ_conn_t *c = nd_integ_conn_open_port(p.port);
    const char *info = nd_integ_conn_info(c);
    size_t n = strlen(info);
    cr_assert(n > 8 && strncmp(info, "INFO {", 6) == 0 && strcmp(info + n - 4, "} \r\n") == 0, "%s",
              info);
    cr_assert_not_null(strstr(info, "\"max_payload\":100"), "%s", info);
    cr_assert_not_null(strstr(info, "\"headers\":true"), "%s", info);
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* PING before and after CONNECT gets PONG; a PONG from the client is taken silently. */
Test(conn, ping_pong)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = nd_integ_conn_open_port(p.port);
    ND_SEND(c, "PING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nPONG\r\nPING\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\nPONG\r\n");
    /* Split across writes, byte by byte. */
    ND_SEND(c, "PI");
    ND_SEND(c, "N");
    ND_SEND(c, "G\r");
    ND_SEND(c, "\n");
    ND_EXPECT(c, "PONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* A PUB over max_payload gets the -ERR and the close; one at the limit goes through. */
Test(conn, max_payload_closes)
{
    inproc_t p = inproc_start("max_payload: 100\n");
    nd_integ_conn_t *c = inproc_client(&p, QUIET);
    char pub[256];
    int n = snprintf(pub, sizeof pub, "SUB foo 1\r\nPUB foo 100\r\n%0100d\r\nPING\r\n", 0);
    nd_integ_send(c, pub, (size_t)n);
    char want[256];
    n = snprintf(want, sizeof want, "MSG foo 1 100\r\n%0100d\r\nPONG\r\n", 0);
    nd_integ_expect(c, want, (size_t)n);
    n = snprintf(pub, sizeof pub, "PUB foo 101\r\n%0101d\r\n", 0);
    nd_integ_send(c, pub, (size_t)n);
    ND_EXPECT(c, "-ERR 'Maximum Payload Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* A subscriber that never reads is closed as a slow consumer once its pending bytes pass
 * max_pending, while the publisher keeps its connection. The volume (32 MB) is several times
 * what loopback socket buffers can hold, so the close does not depend on timing. */
Test(conn, slow_consumer_closed)
{
    enum { PAYLOAD = 65536, COUNT = 512 };
    inproc_t p = inproc_start("max_payload: 65536\nmax_pending: 131072\n");
    nd_integ_conn_t *sub = inproc_client(&p, QUIET);
    ND_SEND(sub, "SUB big 1\r\nPING\r\n");
    ND_EXPECT(sub, "PONG\r\n");
    nd_integ_conn_t *pub = inproc_client(&p, QUIET);
    char *msg = malloc(PAYLOAD + 64);
    int hl = snprintf(msg, 64, "PUB big %d\r\n", PAYLOAD);
    memset(msg + hl, 'z', PAYLOAD);
    memcpy(msg + hl + PAYLOAD, "\r\n", 2);
    for (int i = 0; i < COUNT; i++)
        nd_integ_send(pub, msg, (size_t)hl + PAYLOAD + 2);
    free(msg);
    ND_PING(pub);
    size_t got = nd_integ_drain_until_close(sub);
    cr_assert_lt(got, (size_t)COUNT * PAYLOAD, "the slow consumer got everything (%zu bytes)", got);
    ND_PING(pub); /* the publisher is unaffected */
    nd_integ_conn_close(sub);
    nd_integ_conn_close(pub);
    inproc_stop(&p);
}
