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
    char dir[] = "/tmp/nd_integ_config_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/server.conf", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("# natsd integration test\nserver_name: \"cfg-test\"\nmax_payload: 100\n"
          "port: 1\nping_interval: \"2m\"\n",
          f);
    fclose(f);

    /* The harness adds `-p -1` before these: the flag overrides the file's port 1. */
    const char *extra[] = {"-c", path, NULL};
    nd_integ_server_t *srv = nd_integ_server_start(0, extra);
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
    nd_integ_server_stop(srv);
    unlink(path);
    rmdir(dir);
}
