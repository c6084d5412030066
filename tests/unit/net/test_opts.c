/* Unit tests of config files -> options (src/net/opts_conf.c) and of -c/-t in the flag parser
 * (src/net/opts.c). Error texts were checked against `nats-server -t -c FILE` (2.9.10); each test
 * writes its config into a fresh mkdtemp directory.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "natsd/opts.h"

static char dir[64];
static char path[128];

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_opts_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.conf", dir);
}

static void
teardown(void)
{
    unlink(path);
    rmdir(dir);
}

TestSuite(opts, .init = setup, .fini = teardown);

static void
write_conf(const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Applies text over defaults; returns the result code, err filled. o must be freed. */
static int
apply(nd_opts_t *o, const char *text, char *err, size_t errlen)
{
    write_conf(text);
    nd_opts_defaults(o);
    return nd_opts_apply_config(o, path, err, errlen);
}

static void
expect_ok(nd_opts_t *o, const char *text)
{
    char err[1024] = "";
    int rc = apply(o, text, err, sizeof err);
    cr_assert_eq(rc, 0, "config %s: rc %d: %s", text, rc, err);
}

static void
expect_err(const char *text, const char *want_after_path)
{
    nd_opts_t o;
    char err[1024] = "", want[1200];
    int rc = apply(&o, text, err, sizeof err);
    snprintf(want, sizeof want, "%s:%s", path, want_after_path);
    cr_assert_eq(rc, -1, "config %s: rc %d", text, rc);
    cr_assert_str_eq(err, want, "config %s", text);
    nd_opts_free(&o);
}

Test(opts, every_mapped_key)
{
    nd_opts_t o;
    expect_ok(&o, "host: 127.0.0.2\nport: 4333\nserver_name: alpha\nmax_payload: 2048\n"
                  "max_control_line: 512\nmax_connections: 10\nmax_subscriptions: 7\n"
                  "max_pending: 1MB\nping_interval: \"1h30m\"\nping_max: 5\n"
                  "write_deadline: \"2.5s\"\nno_header_support: true\ndebug: true\n"
                  "trace: yes\nlogtime: false\nlogfile: \"/tmp/x.log\"\npidfile: /tmp/x.pid\n"
                  "no_fast_producer_stall: on\n");
    cr_assert_str_eq(o.host, "127.0.0.2");
    cr_assert_eq(o.port, 4333);
    cr_assert_str_eq(o.server_name, "alpha");
    cr_assert_eq(o.max_payload, 2048);
    cr_assert_eq(o.max_control_line, 512);
    cr_assert_eq(o.max_connections, 10);
    cr_assert_eq(o.max_subscriptions, 7);
    cr_assert_eq(o.max_pending, 1024 * 1024);
    cr_assert_eq(o.ping_interval_ms, 90LL * 60 * 1000);
    cr_assert_eq(o.ping_max, 5);
    cr_assert_eq(o.write_deadline_ms, 2500);
    cr_assert(o.no_header_support && o.debug && o.trace && !o.logtime);
    cr_assert(o.no_fast_producer_stall);
    cr_assert_str_eq(o.log_file, "/tmp/x.log");
    cr_assert_str_eq(o.pid_file, "/tmp/x.pid");
    cr_assert_null(o.config_warnings);
    nd_opts_free(&o);
}

Test(opts, aliases)
{
    nd_opts_t o;
    expect_ok(&o, "net: 10.0.0.1\nmax_conn: 3\nmax_subs: 4\nlog_file: a.log\npid_file: a.pid\n"
                  "MAX_PAYLOAD = 64kb\n");
    cr_assert_str_eq(o.host, "10.0.0.1");
    cr_assert_eq(o.max_connections, 3);
    cr_assert_eq(o.max_subscriptions, 4);
    cr_assert_str_eq(o.log_file, "a.log");
    cr_assert_str_eq(o.pid_file, "a.pid");
    cr_assert_eq(o.max_payload, 64 * 1024);
    nd_opts_free(&o);
}

Test(opts, listen_and_sizes)
{
    nd_opts_t o;
    expect_ok(&o, "listen: \"127.0.0.1:4555\"\nmax_pending: 64mb\nmax_payload: 1MB\n");
    cr_assert_str_eq(o.host, "127.0.0.1");
    cr_assert_eq(o.port, 4555);
    cr_assert_eq(o.max_pending, 64LL * 1024 * 1024);
    cr_assert_eq(o.max_payload, 1024 * 1024);
    nd_opts_free(&o);
    expect_ok(&o, "listen: \"[::1]:-1\"\n");
    cr_assert_str_eq(o.host, "::1");
    cr_assert_eq(o.port, -1);
    nd_opts_free(&o);
    /* Written order decides: a later port overrides listen's. */
    expect_ok(&o, "listen: 0.0.0.0:1000\nport: 2000\n");
    cr_assert_eq(o.port, 2000);
    nd_opts_free(&o);
}

Test(opts, durations)
{
    static const struct {
        const char *v;
        int64_t ms;
    } cases[] = {
        {"\"2m\"", 120000}, {"30s", 30000},   {"\"1h30m\"", 5400000}, {"\"500ms\"", 500},
        {"\"0\"", 0},       {"\"1.5h\"", 5400000}, {"\"2000us\"", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "ping_interval: %s\nwrite_deadline: %s\n", cases[i].v,
                 cases[i].v);
        nd_opts_t o;
        expect_ok(&o, text);
        cr_assert_eq(o.ping_interval_ms, cases[i].ms, "%s", cases[i].v);
        cr_assert_eq(o.write_deadline_ms, cases[i].ms, "%s", cases[i].v);
        nd_opts_free(&o);
    }
}

Test(opts, integer_duration_is_seconds_with_warning)
{
    nd_opts_t o;
    char err[1024] = "";
    cr_assert_eq(apply(&o, "ping_interval: 30\n", err, sizeof err), 1);
    cr_assert_eq(o.ping_interval_ms, 30000);
    char want[512];
    snprintf(want, sizeof want,
             "%s:1:0: invalid use of field \"ping_interval\": ping_interval should be converted "
             "to a duration",
             path);
    cr_assert_str_eq(err, want);
    cr_assert_str_eq(o.config_warnings, want);
    nd_opts_free(&o);
}

Test(opts, errors)
{
    expect_err("port: 4333\nfoo: 1\n", "2:1: unknown field \"foo\"");
    expect_err("a=1\n", "1:0: unknown field \"a\"");
    expect_err("port: 1\n  bar: 2\n", "2:3: unknown field \"bar\"");
    expect_err("port: \"abc\"\n", "1:0: interface conversion: interface {} is string, not int64");
    expect_err("port: 1\ndebug: \"yes\"\n",
               "2:1: interface conversion: interface {} is string, not bool");
    expect_err("host: 5\n", "1:0: interface conversion: interface {} is int64, not string");
    expect_err("ping_interval: \"abc\"\n",
               "1:0: error parsing ping_interval: time: invalid duration \"abc\"");
    expect_err("write_deadline: \"5x\"\n",
               "1:0: error parsing write_deadline: time: unknown unit \"x\" in duration \"5x\"");
    expect_err("listen: \"abc\"\n", "1:0: could not parse address string \"abc\"");
    expect_err("listen: \"127.0.0.1:x\"\n", "1:0: could not parse port \"x\"");
    expect_err("port: 99999999999\n",
               "1:0: invalid value 99999999999 for port: out of range [-1, 65535]");
}

Test(opts, payload_above_pending)
{
    nd_opts_t o;
    char err[256];
    cr_assert_eq(apply(&o, "max_payload: 100MB\nmax_pending: 1MB\n", err, sizeof err), -1);
    cr_assert_str_eq(err, "max_payload (104857600) cannot be higher than max_pending (1048576)");
    nd_opts_free(&o);
}

Test(opts, variable_key_is_not_unknown)
{
    nd_opts_t o;
    expect_ok(&o, "limit = 1000\nmax_payload: $limit\n");
    cr_assert_eq(o.max_payload, 1000);
    nd_opts_free(&o);
}

Test(opts, unsupported_blocks_warn)
{
    nd_opts_t o;
    expect_ok(&o, "port: 4000\ncluster {\n  port: 6222\n}\njetstream: true\n"
                  "authorization { user: a, password: b }\nhttp_port: 8222\n");
    cr_assert_eq(o.port, 4000);
    cr_assert_not_null(o.config_warnings);
    cr_assert_not_null(strstr(o.config_warnings, ":2:1: \"cluster\" is not supported by natsd yet"));
    cr_assert_not_null(strstr(o.config_warnings, "\"jetstream\" is not supported"));
    cr_assert_not_null(strstr(o.config_warnings, "\"authorization\" is not supported"));
    cr_assert_not_null(strstr(o.config_warnings, "\"http_port\" is not supported"));
    nd_opts_t c;
    nd_opts_copy(&c, &o);
    cr_assert_str_eq(c.config_warnings, o.config_warnings);
    nd_opts_free(&c);
    nd_opts_free(&o);
}

Test(opts, parse_error_is_reported)
{
    nd_opts_t o;
    char err[1024] = "";
    cr_assert_eq(apply(&o, "port: $nope_not_defined_anywhere\n", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "nope_not_defined_anywhere"), "%s", err);
    nd_opts_free(&o);
}

Test(opts, flags_override_file)
{
    write_conf("port: 4333\nserver_name: fromfile\nmax_payload: 100\ndebug: true\n");
    char *argv[] = {"natsd", "-p", "5000", "-c", path, "-D=false", NULL};
    nd_opts_t o;
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 6, argv), 0);
    cr_assert_eq(o.port, 5000);
    cr_assert_str_eq(o.server_name, "fromfile");
    cr_assert_eq(o.max_payload, 100);
    cr_assert(!o.debug);
    cr_assert_str_eq(o.config_file, path);
    nd_opts_free(&o);
}

Test(opts, check_flag)
{
    write_conf("port: 4333\n");
    char *ok[] = {"natsd", "-t", "-c", path, NULL};
    nd_opts_t o;
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 4, ok), 2);
    nd_opts_free(&o);

    write_conf("bogus: 1\n");
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 4, ok), 1);
    nd_opts_free(&o);

    /* Without -t the integer duration is only a warning; with -t it fails, as in nats-server. */
    write_conf("ping_interval: 5\n");
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 4, ok), 1);
    nd_opts_free(&o);
    char *run[] = {"natsd", "-c", path, NULL};
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 3, run), 0);
    cr_assert_eq(o.ping_interval_ms, 5000);
    nd_opts_free(&o);

    char *nofile[] = {"natsd", "-t", NULL};
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 2, nofile), 1);
    nd_opts_free(&o);
}
