/* Unit tests of delivery (src/net/deliver.c) on a server running in this process
 * (test_inproc.h): the exact MSG and HMSG frames, headers left out for a client that did not
 * ask for them, queue groups, echo, auto-unsubscribe and the no-responders status. Counts are
 * exact: a PING/PONG round trip on the publisher means the server has handed every message on,
 * and one on the receiver means they have all been written to it. */
#include <criterion/criterion.h>

#include "test_inproc.h"

TestSuite(deliver, .fini = nd_integ_cleanup, .timeout = 120);

static const char QUIET[] = "{\"verbose\":false}";
static const char HDRS[] = "{\"verbose\":false,\"headers\":true,\"no_responders\":true}";

Test(deliver, msg_with_and_without_reply)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = inproc_client(&p, QUIET);
    ND_SEND(c, "SUB foo 7\r\nPUB foo 2\r\nhi\r\nPUB foo bar.r 3\r\nabc\r\nPUB foo 0\r\n\r\n"
               "PING\r\n");
    ND_EXPECT(c, "MSG foo 7 2\r\nhi\r\nMSG foo 7 bar.r 3\r\nabc\r\nMSG foo 7 0\r\n\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* HMSG carries the header size and the total size as sent; a subscriber without headers gets the
 * same message as MSG with the payload alone. */
Test(deliver, hmsg_sizes_and_header_stripping)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *h = inproc_client(&p, HDRS);
    nd_integ_conn_t *plain = inproc_client(&p, QUIET);
    ND_SEND(h, "SUB x 1\r\nPING\r\n");
    ND_EXPECT(h, "PONG\r\n");
    ND_SEND(plain, "SUB x 2\r\nPING\r\n");
    ND_EXPECT(plain, "PONG\r\n");
    ND_SEND(h, "HPUB x r.1 18 23\r\nNATS/1.0\r\nA: B\r\n\r\nhello\r\nHPUB x 12 12\r\n"
               "NATS/1.0\r\n\r\n\r\nPING\r\n");
    ND_EXPECT(h, "HMSG x 1 r.1 18 23\r\nNATS/1.0\r\nA: B\r\n\r\nhello\r\n"
                 "HMSG x 1 12 12\r\nNATS/1.0\r\n\r\n\r\nPONG\r\n");
    ND_SEND(plain, "PING\r\n");
    ND_EXPECT(plain, "MSG x 2 r.1 5\r\nhello\r\nMSG x 2 0\r\n\r\nPONG\r\n");
    nd_integ_conn_close(h);
    nd_integ_conn_close(plain);
    inproc_stop(&p);
}

/* Three members of one queue group and a plain subscriber: each of 60 messages reaches exactly
 * one member, and every one reaches the plain subscriber. */
Test(deliver, queue_group_once_per_message)
{
    enum { N = 60, MEMBERS = 3 };
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *m[MEMBERS];
    for (int i = 0; i < MEMBERS; i++) {
        m[i] = inproc_client(&p, QUIET);
        ND_SEND(m[i], "SUB q.s grp 1\r\nPING\r\n");
        ND_EXPECT(m[i], "PONG\r\n");
    }
    nd_integ_conn_t *all = inproc_client(&p, QUIET);
    ND_SEND(all, "SUB q.* 9\r\nPING\r\n");
    ND_EXPECT(all, "PONG\r\n");
    nd_integ_conn_t *pub = inproc_client(&p, QUIET);
    for (int i = 0; i < N; i++)
        ND_SEND(pub, "PUB q.s 1\r\nx\r\n");
    ND_PING(pub);
    int total = 0;
    for (int i = 0; i < MEMBERS; i++)
        total += inproc_count_msgs(m[i], "q.s");
    cr_assert_eq(total, N, "the group got %d of %d messages", total, N);
    cr_assert_eq(inproc_count_msgs(all, "q.s"), N);
    for (int i = 0; i < MEMBERS; i++)
        nd_integ_conn_close(m[i]);
    nd_integ_conn_close(all);
    nd_integ_conn_close(pub);
    inproc_stop(&p);
}

/* echo:false keeps a connection's own messages from it; others still get them. */
Test(deliver, echo_false)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *self = inproc_client(&p, "{\"verbose\":false,\"echo\":false}");
    nd_integ_conn_t *other = inproc_client(&p, QUIET);
    ND_SEND(other, "SUB e 1\r\nPING\r\n");
    ND_EXPECT(other, "PONG\r\n");
    ND_SEND(self, "SUB e 1\r\nPUB e 1\r\na\r\nPING\r\n");
    ND_EXPECT(self, "PONG\r\n");
    ND_SEND(other, "PING\r\n");
    ND_EXPECT(other, "MSG e 1 1\r\na\r\nPONG\r\n");
    /* What others publish still reaches it. */
    ND_SEND(other, "PUB e 1\r\nb\r\nPING\r\n");
    ND_EXPECT(other, "MSG e 1 1\r\nb\r\nPONG\r\n");
    ND_SEND(self, "PING\r\n");
    ND_EXPECT(self, "MSG e 1 1\r\nb\r\nPONG\r\n");
    nd_integ_conn_close(self);
    nd_integ_conn_close(other);
    inproc_stop(&p);
}

/* UNSUB sid 3: exactly three deliveries, then the subscription is gone. */
Test(deliver, auto_unsubscribe_exact_count)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = inproc_client(&p, QUIET);
    ND_SEND(c, "SUB a 1\r\nUNSUB 1 3\r\n");
    for (int i = 0; i < 5; i++)
        ND_SEND(c, "PUB a 1\r\nx\r\n");
    cr_assert_eq(inproc_count_msgs(c, "a"), 3);
    /* The sid is free again. */
    ND_SEND(c, "PUB a 1\r\ny\r\nSUB a 1\r\nPUB a 1\r\nz\r\nPING\r\n");
    ND_EXPECT(c, "MSG a 1 1\r\nz\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* A request nobody subscribes to gets the 503 status on the requester's own reply
 * subscription; without a reply subject, or without headers, nothing. */
Test(deliver, no_responders_503)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = inproc_client(&p, HDRS);
    ND_SEND(c, "SUB r 7\r\nPUB nobody r 1\r\na\r\nPING\r\n");
    ND_EXPECT(c, "HMSG r 7 16 16\r\nNATS/1.0 503\r\n\r\n\r\nPONG\r\n");
    ND_SEND(c, "PUB nobody 1\r\na\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    nd_integ_conn_close(c);
    nd_integ_conn_t *plain = inproc_client(&p, QUIET);
    ND_SEND(plain, "SUB r 7\r\nPUB nobody r 1\r\na\r\nPING\r\n");
    ND_EXPECT(plain, "PONG\r\n");
    nd_integ_conn_close(plain);
    inproc_stop(&p);
}
