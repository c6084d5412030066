/* Unit tests of the pid file and the ports file (src/server/pidfile.c): contents and names as
 * nats-server writes them, removal, the listing of every interface address for a listener bound
 * to the unspecified address, and the error texts.
 */
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/pidfile.h"

static char dir[64];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_pidfile_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    rmdir(dir);
}

TestSuite(pidfile, .init = setup, .fini = teardown);

static char *
slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return NULL;
    char *buf = calloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

Test(pidfile, write_and_remove)
{
    char path[128], err[256], want[24];
    snprintf(path, sizeof path, "%s/natsd.pid", dir);
    cr_assert_eq(nd_pidfile_write(path, err, sizeof err), 0, "%s", err);
    char *text = slurp(path);
    snprintf(want, sizeof want, "%d", (int)getpid());
    cr_assert_str_eq(text, want); /* no newline, as nats-server */
    free(text);
    nd_pidfile_remove(path);
    struct stat st;
    cr_assert_neq(stat(path, &st), 0);
}

Test(pidfile, remove_leaves_a_newer_servers_file)
{
    char path[128];
    snprintf(path, sizeof path, "%s/natsd.pid", dir);
    FILE *f = fopen(path, "w");
    fputs("1", f);
    fclose(f);
    nd_pidfile_remove(path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    unlink(path);
}

Test(pidfile, write_error)
{
    char err[256];
    cr_assert_eq(nd_pidfile_write("/nonexistent-dir/x.pid", err, sizeof err), -1);
    cr_assert_str_eq(
        err, "Could not write pidfile: open /nonexistent-dir/x.pid: no such file or directory");
}

Test(pidfile, ports_file)
{
    nd_ports_t ports = {.nats = {"nats", "127.0.0.1", 4222},
                        .monitoring = {"http", "::1", 8222},
                        .websocket = {"ws", "127.0.0.2", 0}};
    char err[1024], path[256], want[1024];
    cr_assert_eq(nd_portsfile_write(dir, "/usr/sbin/nats-server", &ports, err, sizeof err), 0, "%s",
                 err);
    nd_portsfile_path(dir, "/usr/sbin/nats-server", path, sizeof path);
    snprintf(want, sizeof want, "%s/nats-server_%d.ports", dir, (int)getpid());
    cr_assert_str_eq(path, want);
    char *text = slurp(path);
    cr_assert_str_eq(
        text, "{\"nats\":[\"nats://127.0.0.1:4222\"],\"monitoring\":[\"http://[::1]:8222\"]}");
    free(text);
    cr_assert_eq(nd_portsfile_remove(dir, "/usr/sbin/nats-server", err, sizeof err), 0);
    struct stat st;
    cr_assert_neq(stat(path, &st), 0);
    cr_assert_eq(nd_portsfile_remove(dir, "/usr/sbin/nats-server", err, sizeof err), -1);
    snprintf(want, sizeof want,
             "Error cleaning up ports file %s: remove %s: no such file or directory", path, path);
    cr_assert_str_eq(err, want);
}

Test(pidfile, unspecified_host_lists_every_address)
{
    json_t *arr = json_array();
    nd_ports_url_t u = {"nats", "0.0.0.0", 4222};
    nd_ports_urls(&u, arr);
    bool loopback = false;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        cr_assert(strncmp(s, "nats://", 7) == 0, "%s", s);
        cr_assert(strlen(s) > 12 && strcmp(s + strlen(s) - 5, ":4222") == 0, "%s", s);
        loopback = loopback || strcmp(s, "nats://127.0.0.1:4222") == 0;
    }
    cr_assert(loopback, "127.0.0.1 missing");
    json_decref(arr);
    arr = json_array();
    nd_ports_url_t none = {"nats", "127.0.0.1", 0};
    nd_ports_urls(&none, arr);
    cr_assert_eq(json_array_size(arr), 0);
    json_decref(arr);
}
