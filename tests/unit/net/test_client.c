/* Unit tests of the client protocol (src/net/client.c): CONNECT, the verbose +OK, and the exact
 * -ERR texts of the commands a client sends, on a server running in this process
 * (test_inproc.h). The texts are nats-server 2.9.10's (tests/integ/test_proto.c checks them
 * against the reference binary too); here they pin the module's own behaviour. */
#include <criterion/criterion.h>

#include "test_inproc.h"

TestSuite(client, .fini = nd_integ_cleanup, .timeout = 120);

/* Verbose (the default): CONNECT and every SUB, UNSUB and PUB get +OK; PING gets only PONG. */
Test(client, verbose_ok_for_each_command)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = nd_integ_conn_open_port(p.port);
    ND_SEND(c, "CONNECT {\"verbose\":true}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\nUNSUB 1\r\n"
               "PUB foo 2\r\nho\r\nPING\r\n");
    ND_EXPECT(c, "+OK\r\n+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\n+OK\r\n+OK\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* verbose:false: nothing but what was asked for. */
Test(client, quiet_connect)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = nd_integ_conn_open_port(p.port);
    ND_SEND(c, "CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPUB foo 1\r\nx\r\nPING\r\n");
    ND_EXPECT(c, "MSG foo 1 1\r\nx\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* A SUB with an invalid subject gets -ERR (in place of the +OK when verbose), keeps the
 * connection, and does not take the sid. */
Test(client, bad_sub_subject)
{
    static const char *const subs[] = {"SUB foo..bar 1\r\n", "SUB foo.>.bar 1\r\n",
                                       "SUB .foo 1\r\n", "SUB foo. 1\r\n"};
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = inproc_client(&p, "{\"verbose\":false}");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        nd_integ_context("%s", subs[i]);
        ND_SENDS(c, subs[i]);
        ND_SEND(c, "PING\r\n");
        ND_EXPECT(c, "-ERR 'Invalid Subject'\r\nPONG\r\n");
    }
    nd_integ_context(NULL);
    ND_SEND(c, "SUB ok 1\r\nPUB ok 1\r\nx\r\nPING\r\n");
    ND_EXPECT(c, "MSG ok 1 1\r\nx\r\nPONG\r\n");
    nd_integ_conn_close(c);

    c = nd_integ_conn_open_port(p.port);
    ND_SEND(c, "CONNECT {}\r\nSUB foo..bar 1\r\nPING\r\n");
    ND_EXPECT(c, "+OK\r\n-ERR 'Invalid Subject'\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* Pedantic (the default): a wildcard in a PUB subject gets -ERR and the message is still
 * delivered; verbose adds the +OK after the -ERR. */
Test(client, invalid_publish_subject)
{
    inproc_t p = inproc_start(NULL);
    nd_integ_conn_t *c = inproc_client(&p, "{\"verbose\":false}");
    ND_SEND(c, "SUB foo.* 1\r\nPUB foo.* 1\r\na\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Invalid Publish Subject'\r\nMSG foo.* 1 1\r\na\r\nPONG\r\n");
    nd_integ_conn_close(c);
    c = nd_integ_conn_open_port(p.port);
    ND_SEND(c, "CONNECT {}\r\nPUB foo.* 1\r\na\r\nPING\r\n");
    ND_EXPECT(c, "+OK\r\n-ERR 'Invalid Publish Subject'\r\n+OK\r\nPONG\r\n");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}

/* An operation the client protocol does not have closes the connection after the -ERR. */
Test(client, unknown_operation_closes)
{
    static const char *const ops[] = {"FOO\r\n", "UNSUB\r\n", "MSG foo 1 1\r\na\r\n",
                                      "PUB foo 1\r\nab\r\n"};
    inproc_t p = inproc_start(NULL);
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        nd_integ_context("%s", ops[i]);
        nd_integ_conn_t *c = inproc_client(&p, "{\"verbose\":false}");
        ND_SENDS(c, ops[i]);
        ND_EXPECT(c, "-ERR 'Unknown Protocol Operation'\r\n");
        nd_integ_expect_close(c);
        nd_integ_conn_close(c);
    }
    nd_integ_context(NULL);
    inproc_stop(&p);
}

/* With users configured, a CONNECT without the right credentials is refused and closed; the
 * right ones get in. */
Test(client, connect_authorization)
{
    inproc_t p = inproc_start("authorization { user: u, password: pw }\n");
    nd_integ_conn_t *c = nd_integ_conn_open_port(p.port);
    cr_assert_not_null(strstr(nd_integ_conn_info(c), "\"auth_required\":true"), "%s",
                       nd_integ_conn_info(c));
    ND_SEND(c, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"bad\"}\r\nPING\r\n");
    ND_EXPECT(c, "-ERR 'Authorization Violation'\r\n");
    nd_integ_expect_close(c);
    nd_integ_conn_close(c);
    c = inproc_client(&p, "{\"verbose\":false,\"user\":\"u\",\"pass\":\"pw\"}");
    nd_integ_conn_close(c);
    inproc_stop(&p);
}
