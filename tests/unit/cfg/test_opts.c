/* Unit tests of config files -> options (src/cfg/opts_conf.c) and of -c/-t in the flag parser
 * (src/cfg/opts.c). Error texts were checked against `nats-server -t -c FILE` (2.9.10); each test
 * writes its config into a fresh mkdtemp directory.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "natsd/natsd.h"
#include "cfg/opts.h"
#include "server/sigctl.h"

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
        {"\"2m\"", 120000}, {"30s", 30000},        {"\"1h30m\"", 5400000},
        {"\"500ms\"", 500}, {"\"1.5h\"", 5400000}, {"\"2000us\"", 2},
    };
    /* "0" (Go's one unitless duration) parses too: zero_means_the_default. */
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

/* What a 0 in the file means, option by option (nd_opts_zero_rules), as nats-server 2.9.10
 * decides it: its /varz with all of these written as 0 shows max_payload 1048576,
 * max_control_line 4096, max_connections 65536, max_pending 67108864, ping_interval 2m,
 * ping_max 2, write_deadline 10s, auth_timeout 2 and no max_subscriptions (unlimited). */
Test(opts, zero_means_the_default)
{
    nd_opts_t o;
    expect_ok(&o, "max_payload: 0\n");
    cr_assert_eq(o.max_payload, ND_DEFAULT_MAX_PAYLOAD);
    cr_assert_eq(o.max_payload, 1048576);
    nd_opts_free(&o);
    expect_ok(&o, "max_control_line: 0\n");
    cr_assert_eq(o.max_control_line, 4096);
    nd_opts_free(&o);
    expect_ok(&o, "max_connections: 0\n");
    cr_assert_eq(o.max_connections, 65536);
    nd_opts_free(&o);
    expect_ok(&o, "max_conn: 0\n"); /* the alias too */
    cr_assert_eq(o.max_connections, 65536);
    nd_opts_free(&o);
    /* max_pending 0 is the default 64MB, so a 2MB max_payload is not above it. */
    expect_ok(&o, "max_pending: 0\nmax_payload: 2MB\n");
    cr_assert_eq(o.max_pending, 64LL * 1024 * 1024);
    cr_assert_eq(o.max_payload, 2 * 1024 * 1024);
    nd_opts_free(&o);
    expect_ok(&o, "ping_interval: \"0s\"\nping_max: 0\nwrite_deadline: \"0s\"\n");
    cr_assert_eq(o.ping_interval_ms, 2 * 60 * 1000);
    cr_assert_eq(o.ping_max, 2);
    cr_assert_eq(o.write_deadline_ms, 10 * 1000);
    nd_opts_free(&o);
    expect_ok(&o, "ping_interval: \"0\"\nwrite_deadline: \"0\"\n");
    cr_assert_eq(o.ping_interval_ms, 2 * 60 * 1000);
    cr_assert_eq(o.write_deadline_ms, 10 * 1000);
    nd_opts_free(&o);
    expect_ok(&o, "lame_duck_grace_period: \"0s\"\n");
    cr_assert_eq(o.lame_duck_grace_period_ms, 10 * 1000);
    nd_opts_free(&o);
    expect_ok(&o, "max_closed_clients: 0\nconnect_error_reports: 0\nreconnect_error_reports: 0\n");
    cr_assert_eq(o.max_closed_clients, 10000);
    cr_assert_eq(o.connect_error_reports, 3600);
    cr_assert_eq(o.reconnect_error_reports, 1);
    nd_opts_free(&o);
}

Test(opts, zero_kept_where_it_means_no_limit_or_zero)
{
    nd_opts_t o;
    /* max_subscriptions: 0 is unlimited (nats-server has no baseline for it). */
    expect_ok(&o, "max_subscriptions: 0\nmax_traced_msg_len: 0\n");
    cr_assert_eq(o.max_subscriptions, 0);
    cr_assert_eq(o.max_traced_msg_len, 0);
    nd_opts_free(&o);
    /* An explicit max_memory_store: 0 stays 0; not written, it is -1 (automatic). */
    expect_ok(&o, "jetstream { max_memory_store: 0, max_file_store: 0 }\n");
    cr_assert_not_null(o.js);
    cr_assert_eq(o.js->max_memory, 0);
    cr_assert_eq(o.js->max_store, 0);
    nd_opts_free(&o);
    expect_ok(&o, "jetstream { store_dir: \"/tmp\" }\n");
    cr_assert_eq(o.js->max_memory, -1);
    cr_assert_eq(o.js->max_store, -1);
    nd_opts_free(&o);
    /* The authorization timeout's default depends on TLS: 0 stays, resolved where used. */
    expect_ok(&o, "authorization { timeout: 0 }\n");
    cr_assert(o.auth_timeout_s == 0);
    nd_opts_free(&o);
}

Test(opts, zero_rules_table)
{
    /* One row per key; every "0 = the default" row names a default that is not 0 itself. */
    for (size_t i = 0; i < nd_opts_zero_nrules; i++) {
        const nd_opt_zero_t *r = &nd_opts_zero_rules[i];
        if (r->rule == ND_ZERO_DEFAULT)
            cr_assert_neq(r->def, 0, "%s", r->key);
        for (size_t j = i + 1; j < nd_opts_zero_nrules; j++)
            cr_assert_str_neq(r->key, nd_opts_zero_rules[j].key);
    }
    /* nd_opts_baseline over options holding 0 everywhere: each rule applied, blocks absent. */
    nd_opts_t o;
    memset(&o, 0, sizeof o);
    nd_opts_baseline(&o);
    cr_assert_eq(o.max_payload, 1048576);
    cr_assert_eq(o.max_control_line, 4096);
    cr_assert_eq(o.max_connections, 65536);
    cr_assert_eq(o.max_pending, 64LL * 1024 * 1024);
    cr_assert_eq(o.ping_interval_ms, 120000);
    cr_assert_eq(o.ping_max, 2);
    cr_assert_eq(o.write_deadline_ms, 10000);
    cr_assert_eq(o.lame_duck_duration_ms, 120000);
    cr_assert_eq(o.max_subscriptions, 0);
    cr_assert(o.auth_timeout_s == 0);
    /* Idempotent, and a value that is not 0 is left alone. */
    o.max_payload = 7;
    nd_opts_baseline(&o);
    cr_assert_eq(o.max_payload, 7);
    cr_assert_eq(o.max_connections, 65536);
}

/* The flags come after the file: the rule holds for the combined options as well. */
Test(opts, zero_with_flags)
{
    write_conf("max_payload: 0\nmax_connections: 0\n");
    char *argv[] = {"natsd", "-p", "5000", "-c", path, NULL};
    nd_opts_t o;
    nd_opts_defaults(&o);
    cr_assert_eq(nd_opts_parse_args(&o, 5, argv), 0);
    cr_assert_eq(o.max_payload, 1048576);
    cr_assert_eq(o.max_connections, 65536);
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
                  "authorization { user: a, password: b }\nhttp_port: 8222\n"
                  "prof_port: 6060\n");
    cr_assert_eq(o.port, 4000);
    cr_assert_not_null(o.config_warnings);
    /* Blocks are parsed now (tests/unit/cfg/test_opts_blocks.c); unbuilt features warn. */
    cr_assert_not_null(
        strstr(o.config_warnings, ":8:1: Profiling is configured but not supported yet by natsd"));
    /* Clustering is built (src/net/route.c): no warning. */
    cr_assert_null(strstr(o.config_warnings, "Clustering"));
    /* Authorization and JetStream are built (src/auth, src/js): no warning. */
    cr_assert_null(strstr(o.config_warnings, "JetStream is configured"));
    cr_assert_null(strstr(o.config_warnings, "Authorization is configured"));
    cr_assert_eq(o.cluster->port, 6222);
    cr_assert_eq(o.http_port, 8222);
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

/* ---- command-line flags (src/cfg/opts.c); texts checked against nats-server 2.9.10/2.10 ---- */

/* Runs nd_opts_parse_args over defaults with stdout and stderr captured into files of dir.
 * Returns the result code; *out and *errs are malloc'd (free them). */
static int
parse_captured(nd_opts_t *o, int argc, char **argv, char **out, char **errs)
{
    char op[160], ep[160];
    snprintf(op, sizeof op, "%s/stdout", dir);
    snprintf(ep, sizeof ep, "%s/stderr", dir);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    FILE *fo = fopen(op, "w+"), *fe = fopen(ep, "w+");
    dup2(fileno(fo), 1);
    dup2(fileno(fe), 2);
    nd_opts_defaults(o);
    int rc = nd_opts_parse_args(o, argc, argv);
    if (rc == ND_OPTS_SIGNAL)
        rc = nd_sigctl_cli(o->signal); /* as src/main.c does */
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    char **dst[2] = {out, errs};
    FILE *src[2] = {fo, fe};
    for (int i = 0; i < 2; i++) {
        fseek(src[i], 0, SEEK_END);
        long n = ftell(src[i]);
        fseek(src[i], 0, SEEK_SET);
        *dst[i] = malloc((size_t)n + 1);
        size_t r = fread(*dst[i], 1, (size_t)n, src[i]);
        (*dst[i])[r] = '\0';
        fclose(src[i]);
    }
    unlink(op);
    unlink(ep);
    return rc;
}

#define ARGV(...) ((char *[]){"natsd", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"natsd", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, out, errs, ...)                                                                   \
    parse_captured((o), ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (out), (errs))

Test(opts, flags_every_alias)
{
    static const char *const host_aliases[] = {"-a", "--addr", "-net", "--net"};
    for (size_t i = 0; i < 4; i++) {
        nd_opts_t o;
        char *out, *errs;
        cr_assert_eq(PARSE(&o, &out, &errs, (char *)host_aliases[i], "127.0.0.9"), 0);
        cr_assert_str_eq(o.host, "127.0.0.9");
        free(out), free(errs), nd_opts_free(&o);
    }
    nd_opts_t o;
    char *out, *errs;
    int rc = PARSE(&o, &out, &errs, "-p", "4999", "--name", "n1", "-P", "/tmp/p.pid", "-m", "8222",
                   "-l", "/tmp/l.log", "--log_size_limit", "1000", "-r", "udp://1.2.3.4:514", "-s",
                   "--logtime_utc", "-T=false", "--ports_file_dir", "/tmp/pd", "-js", "-sd",
                   "/tmp/js", "--user", "u", "--pass", "pw", "--auth", "tok", "--routes",
                   "nats://a:1", "--cluster", "nats://0.0.0.0:6222", "--cluster_name", "c1",
                   "--max_traced_msg_len", "77", "-w", "3", "--");
    cr_assert_eq(rc, 0, "%s", errs);
    cr_assert_eq(o.port, 4999);
    cr_assert_str_eq(o.server_name, "n1");
    cr_assert_str_eq(o.pid_file, "/tmp/p.pid");
    cr_assert_eq(o.http_port, 8222);
    cr_assert_str_eq(o.log_file, "/tmp/l.log");
    cr_assert_eq(o.log_size_limit, 1000);
    cr_assert_str_eq(o.remote_syslog, "udp://1.2.3.4:514");
    cr_assert(o.syslog && o.logtime_utc && !o.logtime);
    cr_assert_str_eq(o.ports_file_dir, "/tmp/pd");
    cr_assert(o.jetstream);
    cr_assert_str_eq(o.store_dir, "/tmp/js");
    cr_assert_str_eq(o.user, "u");
    cr_assert_str_eq(o.pass, "pw");
    cr_assert_str_eq(o.token, "tok");
    cr_assert_str_eq(o.routes, "nats://a:1");
    cr_assert_str_eq(o.cluster_url, "nats://0.0.0.0:6222");
    cr_assert_str_eq(o.cluster_name, "c1");
    cr_assert_eq(o.max_traced_msg_len, 77);
    cr_assert_eq(o.workers, 3);
    cr_assert_null(o.config_warnings);
    free(out), free(errs), nd_opts_free(&o);

    cr_assert_eq(PARSE(&o, &out, &errs, "--server_name=n2", "--port=-1", "--workers=2",
                       "--pid=x.pid", "--log=y.log", "--signal", "", "-n", "n3"),
                 0);
    cr_assert_str_eq(o.server_name, "n3");
    cr_assert_eq(o.port, -1);
    cr_assert_eq(o.workers, 2);
    cr_assert_str_eq(o.pid_file, "x.pid");
    cr_assert_str_eq(o.log_file, "y.log");
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "--worker_threads", "5", "-cluster_listen", "nats://h:1"),
                 0);
    cr_assert_eq(o.workers, 5);
    cr_assert_str_eq(o.cluster_url, "nats://h:1");
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, debug_trace_combinations)
{
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "-DV"), 0);
    cr_assert(o.debug && o.trace && !o.trace_verbose);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "-DVV"), 0);
    cr_assert(o.debug && o.trace && o.trace_verbose);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "-VV"), 0);
    cr_assert(!o.debug && o.trace && o.trace_verbose);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "--debug", "--trace"), 0);
    cr_assert(o.debug && o.trace);
    free(out), free(errs), nd_opts_free(&o);
    /* nats-server applies -DV after -D whatever the order (FlagSet.Visit is sorted). */
    cr_assert_eq(PARSE(&o, &out, &errs, "-DV", "-D=false"), 0);
    cr_assert(o.debug && o.trace);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "-D", "-DV=false"), 0);
    cr_assert(!o.debug && !o.trace);
    free(out), free(errs), nd_opts_free(&o);
    static const char *const truthy[] = {"1", "t", "T", "TRUE", "true", "True"};
    for (size_t i = 0; i < 6; i++) {
        char arg[32];
        snprintf(arg, sizeof arg, "-D=%s", truthy[i]);
        cr_assert_eq(PARSE(&o, &out, &errs, arg), 0);
        cr_assert(o.debug, "%s", arg);
        free(out), free(errs), nd_opts_free(&o);
    }
}

Test(opts, bad_flags_print_go_errors_and_usage)
{
    static const struct {
        const char *args[3];
        const char *err;
    } cases[] = {
        {{"--bogus"}, "flag provided but not defined: -bogus\n"},
        {{"-bogus=1"}, "flag provided but not defined: -bogus\n"},
        {{"-p", "abc"}, "invalid value \"abc\" for flag -p: parse error\n"},
        {{"-p"}, "flag needs an argument: -p\n"},
        {{"-p", "99999999999"}, "invalid value \"99999999999\" for flag -p: value out of range\n"},
        {{"-D=x"}, "invalid boolean value \"x\" for -D: parse error\n"},
        {{"---x"}, "bad flag syntax: ---x\n"},
        {{"-=x"}, "bad flag syntax: -=x\n"},
        {{"-w", "5000"}, "invalid value \"5000\" for flag -w: value out of range\n"},
        {{"--log_size_limit", "1MB"},
         "invalid value \"1MB\" for flag -log_size_limit: parse error\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[5] = {"natsd"};
        int argc = 1;
        for (int k = 0; k < 3 && cases[i].args[k]; k++)
            argv[argc++] = (char *)cases[i].args[k];
        nd_opts_t o;
        char *out, *errs;
        /* nats-server's usage function exits 0 after a flag error. */
        cr_assert_eq(parse_captured(&o, argc, argv, &out, &errs), 2, "%s", cases[i].args[0]);
        cr_assert_str_eq(errs, cases[i].err);
        cr_assert(strncmp(out, "\nUsage: natsd [options]\n", 24) == 0, "%s", out);
        free(out), free(errs), nd_opts_free(&o);
    }
}

Test(opts, args_after_dashdash_are_commands)
{
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "-p", "1", "--", "-D"), 1);
    cr_assert_str_eq(errs, "nats-server: unrecognized command: \"-D\"\n");
    cr_assert(!o.debug);
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, int_flags_take_go_syntax)
{
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "-p", "0x10"), 0);
    cr_assert_eq(o.port, 16);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "-p", "010"), 0);
    cr_assert_eq(o.port, 8);
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "--log_size_limit", "-5"), 0);
    cr_assert_eq(o.log_size_limit, -5);
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, help_version_and_commands)
{
    nd_opts_t o;
    char *out, *errs;
    static const char *const help[] = {"-h", "--help", "-help", "help", "HELP"};
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(parse_captured(&o, 2, ARGV((char *)help[i]), &out, &errs), 2);
        cr_assert(strncmp(out, "\nUsage: natsd [options]\n", 24) == 0, "%s", out);
        static const char *const sections[] = {
            "\nServer Options:\n",
            "\nLogging Options:\n",
            "\nJetStream Options:\n",
            "\nAuthorization Options:\n",
            "\nTLS Options:\n",
            "\nCluster Options:\n",
            "\nProfiling Options:\n",
            "\nCommon Options:\n",
            "    -sl,--signal <signal>[=<pid>]    Send signal to natsd process (ldm, stop, quit, "
            "term, reopen, reload)\n",
            "    -w, --workers <n>",
            "        --logtime_utc",
            "nats-server: v" NATSD_COMPAT_VERSION,
        };
        for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++)
            cr_assert_not_null(strstr(out, sections[k]), "%s missing", sections[k]);
        cr_assert_str_eq(errs, "");
        free(out), free(errs), nd_opts_free(&o);
    }
    static const char *const version[] = {"-v", "--version", "version"};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(parse_captured(&o, 2, ARGV((char *)version[i]), &out, &errs), 2);
        cr_assert_str_eq(out,
                         "nats-server: v" NATSD_COMPAT_VERSION "\nnatsd: v" NATSD_VERSION "\n");
        free(out), free(errs), nd_opts_free(&o);
    }
    cr_assert_eq(PARSE(&o, &out, &errs, "--help_tls"), 2);
    cr_assert_not_null(strstr(out, "TLS configuration is specified in the tls section"));
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "-p", "1", "extra"), 1);
    cr_assert_str_eq(errs, "nats-server: unrecognized command: \"extra\"\n");
    free(out), free(errs), nd_opts_free(&o);
    /* A bool flag does not take the next argument: "false" is a command. */
    cr_assert_eq(PARSE(&o, &out, &errs, "-D", "false"), 1);
    cr_assert_str_eq(errs, "nats-server: unrecognized command: \"false\"\n");
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, unbuilt_flags_warn)
{
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "--tls", "--tlscert", "c.pem", "--tlskey", "k.pem",
                       "--tlsverify", "--tlscacert", "ca.pem", "-ms", "8443", "--profile", "6060",
                       "--client_advertise", "h:1", "--cluster_advertise", "h:2", "--no_advertise",
                       "--connect_retries", "3"),
                 0);
    cr_assert(o.tls && o.tls_verify && o.cluster_no_advertise);
    cr_assert_str_eq(o.tls_cert, "c.pem");
    cr_assert_str_eq(o.tls_key, "k.pem");
    cr_assert_str_eq(o.tls_ca_cert, "ca.pem");
    cr_assert_eq(o.https_port, 8443);
    cr_assert_eq(o.prof_port, 6060);
    cr_assert_str_eq(o.client_advertise, "h:1");
    cr_assert_str_eq(o.cluster_advertise, "h:2");
    cr_assert_eq(o.cluster_connect_retries, 3);
    cr_assert_not_null(o.config_warnings);
    /* The config file's wording, once per feature. */
    cr_assert_str_eq(o.config_warnings,
                     "Profiling is configured but not supported yet by natsd: ignored\n"
                     "Client advertise is configured but not supported yet by natsd: ignored");
    /* Copies carry the new strings. */
    nd_opts_t c;
    nd_opts_copy(&c, &o);
    cr_assert_str_eq(c.tls_cert, "c.pem");
    cr_assert_str_eq(c.cluster_advertise, "h:2");
    nd_opts_free(&c);
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, logging_flags_override_file)
{
    write_conf("logtime: false\nlog_file: \"/tmp/a.log\"\nlogfile_size_limit: 1KB\n"
               "log_max_num: 4\nsyslog: true\nremote_syslog: \"udp://127.0.0.1:5514\"\n"
               "logtime_utc: true\nports_file_dir: \"/tmp\"\ntrace_verbose: true\n"
               "max_traced_msg_len: 10\nworker_threads: 3\npid_file: \"/tmp/f.pid\"\n");
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "-c", path), 0, "%s", errs);
    cr_assert(!o.logtime && o.syslog && o.logtime_utc && o.trace_verbose && o.trace);
    cr_assert_str_eq(o.log_file, "/tmp/a.log");
    cr_assert_eq(o.log_size_limit, 1024);
    cr_assert_eq(o.log_max_num, 4);
    cr_assert_str_eq(o.remote_syslog, "udp://127.0.0.1:5514");
    cr_assert_str_eq(o.ports_file_dir, "/tmp");
    cr_assert_eq(o.max_traced_msg_len, 10);
    cr_assert_eq(o.workers, 3);
    cr_assert_null(o.config_warnings);
    free(out), free(errs), nd_opts_free(&o);

    cr_assert_eq(PARSE(&o, &out, &errs, "-T", "-l", "/tmp/b.log", "--log_size_limit", "99",
                       "-s=false", "-r", "udp://127.0.0.1:6514", "--ports_file_dir", "/var/tmp",
                       "-w", "1", "-P", "/tmp/g.pid", "-c", path, "-V=false"),
                 0, "%s", errs);
    cr_assert(o.logtime && !o.syslog && !o.trace);
    cr_assert_str_eq(o.log_file, "/tmp/b.log");
    cr_assert_eq(o.log_size_limit, 99);
    cr_assert_eq(o.log_max_num, 4); /* no flag for it: the file's value stays */
    cr_assert_str_eq(o.remote_syslog, "udp://127.0.0.1:6514");
    cr_assert_str_eq(o.ports_file_dir, "/var/tmp");
    cr_assert_eq(o.workers, 1);
    cr_assert_str_eq(o.pid_file, "/tmp/g.pid");
    free(out), free(errs), nd_opts_free(&o);

    write_conf("worker_threads: 5000\n");
    cr_assert_eq(PARSE(&o, &out, &errs, "-c", path), 1);
    cr_assert_not_null(strstr(errs, "worker_threads"), "%s", errs);
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, flag_warnings_survive_config)
{
    write_conf("port: 4333\n");
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "--profile", "6060", "-c", path), 0, "%s", errs);
    cr_assert_str_eq(o.config_warnings,
                     "Profiling is configured but not supported yet by natsd: ignored");
    free(out), free(errs), nd_opts_free(&o);
    /* Configured in the file too: one warning (the file's, with its position). */
    write_conf("prof_port: 6061\n");
    cr_assert_eq(PARSE(&o, &out, &errs, "--profile", "6060", "-c", path), 0, "%s", errs);
    cr_assert_null(strchr(o.config_warnings, '\n'), "%s", o.config_warnings);
    cr_assert_not_null(strstr(o.config_warnings, "Profiling is configured"), "%s",
                       o.config_warnings);
    free(out), free(errs), nd_opts_free(&o);
}

Test(opts, signal_errors)
{
    nd_opts_t o;
    char *out, *errs;
    cr_assert_eq(PARSE(&o, &out, &errs, "-sl", "quit=abc"), 1);
    cr_assert_str_eq(errs, "nats-server: invalid pid: abc\n");
    free(out), free(errs), nd_opts_free(&o);
    cr_assert_eq(PARSE(&o, &out, &errs, "--signal=quit=1=2=3"), 1);
    cr_assert_str_eq(errs, "nats-server: invalid signal parameters: [2 3]\n");
    free(out), free(errs), nd_opts_free(&o);
    char arg[64];
    snprintf(arg, sizeof arg, "bogus=%d", (int)getpid());
    cr_assert_eq(PARSE(&o, &out, &errs, "-sl", arg), 1);
    cr_assert_str_eq(errs, "nats-server: unknown signal \"bogus\"\n");
    free(out), free(errs), nd_opts_free(&o);
    /* A pid that cannot exist (above pid_max's ceiling). */
    cr_assert_eq(PARSE(&o, &out, &errs, "-sl", "reopen=2147483600"), 1);
    cr_assert_str_eq(errs, "nats-server: \nsignal \"reopen\" 2147483600: no such process\n");
    free(out), free(errs), nd_opts_free(&o);
}
