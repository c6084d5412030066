/* Integration test: `natsd -c FILE` applies the file (server_name, max_payload show in INFO and
 * the payload limit is enforced), and command-line flags given with it still apply.
 * The config is valid nats-server syntax, so the test also passes against the reference.
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(integ_config, .fini = nd_integ_cleanup, .timeout = 180);

Test(integ_config, file_applies)
{
    nd_integ_conf_t cf = {0};
    /* The harness adds `-p -1` before `-c`: the flag overrides the file's port 1. */
    nd_integ_server_t *srv =
        nd_integ_conf_start(&cf, "# natsd integration test\nserver_name: \"cfg-test\"\n"
                                 "max_payload: 100\nport: 1\nping_interval: \"2m\"\n");
    nd_integ_conn_t *c = nd_integ_conn_open(srv);
    const char *info = nd_integ_conn_info(c);
    cr_assert(strncmp(info, "INFO ", 5) == 0, "%s", info);
    json_error_t jerr;
    json_t *j = json_loads(info + 5, JSON_DISABLE_EOF_CHECK, &jerr);
    cr_assert_not_null(j, "bad INFO json: %s", jerr.text);
    cr_assert_str_eq(json_string_value(json_object_get(j, "server_name")), "cfg-test");
    cr_assert_eq(json_integer_value(json_object_get(j, "max_payload")), 100);
    cr_assert_neq(json_integer_value(json_object_get(j, "port")), 1);
    json_decref(j);

    ND_SEND(c, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
    ND_PING(c);
    char pub[256];
    int n = snprintf(pub, sizeof pub, "PUB foo 101\r\n%0101d\r\n", 0);
    nd_integ_send(c, pub, (size_t)n);
    ND_EXPECT(c, "-ERR 'Maximum Payload Violation'\r\n");
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &cf);
}

/* A 0 written for a limit means its default, as in nats-server 2.9.10 (checked there: INFO's
 * max_payload is 1048576, the PUB goes through, the connections are admitted); natsd took them
 * literally and refused every PUB, every command and every connection. */
Test(integ_config, zero_limits_mean_the_defaults)
{
    static const char *const confs[] = {
        "max_payload: 0\n",
        "max_control_line: 0\n",
        "max_connections: 0\n",
        "max_payload: 0\nmax_control_line: 0\nmax_connections: 0\nmax_pending: 0\n"
        "ping_max: 0\nping_interval: \"0s\"\nwrite_deadline: \"0s\"\n",
    };
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
        nd_integ_context("config \"%s\"", confs[i]);
        nd_integ_conf_t cf = {0};
        nd_integ_server_t *srv = nd_integ_conf_start(&cf, confs[i]);
        nd_integ_conn_t *c = nd_integ_conn_open(srv);
        const char *info = nd_integ_conn_info(c);
        json_t *j = json_loads(info + 5, JSON_DISABLE_EOF_CHECK, NULL);
        cr_assert_not_null(j, "bad INFO: %s", info);
        cr_assert_eq(json_integer_value(json_object_get(j, "max_payload")), 1048576);
        json_decref(j);
        /* A second connection is admitted too (max_connections 0 is not "none"). */
        nd_integ_conn_t *c2 = nd_integ_conn_open(srv);
        ND_SEND(c2, "CONNECT {\"verbose\":false}\r\nSUB foo 1\r\nPING\r\n");
        ND_EXPECT(c2, "PONG\r\n");
        ND_SEND(c, "CONNECT {\"verbose\":true}\r\nPUB foo 5\r\nhello\r\nPING\r\n");
        ND_EXPECT(c, "+OK\r\n+OK\r\nPONG\r\n");
        ND_SEND(c2, "PING\r\n");
        ND_EXPECT(c2, "MSG foo 1 5\r\nhello\r\nPONG\r\n");
        /* A payload well above any small limit still fits the default 1MB. */
        char pub[8192];
        int n = snprintf(pub, sizeof pub, "PUB foo 5000\r\n%05000d\r\nPING\r\n", 0);
        nd_integ_send(c, pub, (size_t)n);
        ND_EXPECT(c, "+OK\r\nPONG\r\n");
        nd_integ_conn_close(c2);
        nd_integ_conn_close(c);
        nd_integ_conf_stop(srv, &cf);
    }
    nd_integ_context(NULL);
}
