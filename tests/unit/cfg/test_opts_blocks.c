/* Unit tests of the config-file blocks and top-level options (src/cfg/opts_conf.c and the
 * opts_<block>.c parsers): every block's valid forms mapped into nd_opts_t, every wrong type and
 * bad value with its exact error text, and a corpus of realistic config files.
 *
 * The error table's expected texts are nats-server 2.9.10's (`nats-server -t -c FILE`, first
 * error line): rows marked `ref` are re-checked against /usr/sbin/nats-server when it is
 * installed (error_table_matches_reference), so the expectations stay the reference's; the few
 * rows not marked are where nats-server's answer depends on Go's random map order or where natsd
 * follows a later nats-server. "@F@" stands for the config file's path, "@CERTS@" for
 * tests/data/conf/certs. The corpus files read their certificate and operator paths from
 * ND_TEST_CERT, ND_TEST_KEY, ND_TEST_CA and ND_TEST_OPERATOR, which the tests set.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg/opts.h"

#define REFERENCE "/usr/sbin/nats-server"

static char dir[64];
static char path[128];
static char datadir[1024]; /* tests/data/conf */
static char certs[1100];

/* tests/data/conf from this file's path (CMake compiles it by absolute path). */
static void
find_data(void)
{
    snprintf(datadir, sizeof datadir, "%s", __FILE__);
    char *p = strstr(datadir, "tests/unit/");
    if (p == NULL) {
        snprintf(datadir, sizeof datadir, "tests/data/conf");
    } else {
        snprintf(p, sizeof datadir - (size_t)(p - datadir), "tests/data/conf");
    }
    snprintf(certs, sizeof certs, "%s/certs", datadir);
    char v[1200];
    snprintf(v, sizeof v, "%s/server-cert.pem", certs);
    setenv("ND_TEST_CERT", v, 1);
    snprintf(v, sizeof v, "%s/server-key.pem", certs);
    setenv("ND_TEST_KEY", v, 1);
    snprintf(v, sizeof v, "%s/ca.pem", certs);
    setenv("ND_TEST_CA", v, 1);
    snprintf(v, sizeof v, "%s/op.jwt", datadir);
    setenv("ND_TEST_OPERATOR", v, 1);
}

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_blocks_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.conf", dir);
    find_data();
}

static void
teardown(void)
{
    unlink(path);
    rmdir(dir);
}

TestSuite(opts_blocks, .init = setup, .fini = teardown);

/* Replaces every "from" in s by "to" into out. */
static void
subst(const char *s, const char *from, const char *to, char *out, size_t len)
{
    size_t fl = strlen(from), n = 0;
    while (*s && n + 1 < len) {
        if (strncmp(s, from, fl) == 0) {
            n += (size_t)snprintf(out + n, len - n, "%s", to);
            s += fl;
        } else {
            out[n++] = *s++;
        }
        if (n >= len)
            n = len - 1;
    }
    out[n] = '\0';
}

static void
write_conf(const char *text)
{
    char t[8192];
    subst(text, "@CERTS@", certs, t, sizeof t);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(t, f);
    fclose(f);
}

/* Applies text over the defaults. Returns: the result code; err filled; o must be freed. */
static int
apply(nd_opts_t *o, const char *text, char *err, size_t errlen)
{
    write_conf(text);
    nd_opts_defaults(o);
    return nd_opts_apply_config(o, path, err, errlen);
}

/* Parses text that must be valid (warnings allowed). */
static void
load(nd_opts_t *o, const char *text)
{
    char err[2048] = "";
    int rc = apply(o, text, err, sizeof err);
    cr_assert(rc == 0, "config:\n%s\nrc %d: %s", text, rc, err);
}

/* ---- the error table ------------------------------------------------------------------------ */

static const struct {
    const char *conf;
    const char *want; /* "@F@" = the file's path */
    bool ref;         /* nats-server 2.9.10 gives the same first error */
} errors[] = {
    {"client_advertise: 5\n", "@F@:1:0: interface conversion: interface {} is int64, not string",
     true},
    {"server_tags: 5\n", "@F@:1:0: error parsing tags: unsupported type int64", true},
    {"server_tags: [5, \"a\"]\n",
     "@F@:1:0: error parsing tags: unsupported type *conf.token where string is expected", true},
    {"ports_file_dir: true\n", "@F@:1:0: interface conversion: interface {} is bool, not string",
     true},
    {"http: \"abc\"\n", "@F@:1:0: could not parse address string \"abc\"", true},
    {"http: true\n", "@F@:1:0: expected port or host:port, got bool", true},
    {"https: \"localhost:x\"\n", "@F@:1:0: could not parse port \"x\"", true},
    {"http_port: \"8222\"\n", "@F@:1:0: interface conversion: interface {} is string, not int64",
     true},
    {"monitor_port: 1.5\n", "@F@:1:0: interface conversion: interface {} is float64, not int64",
     true},
    {"https_port: \"x\"\n", "@F@:1:0: interface conversion: interface {} is string, not int64",
     true},
    {"http_base_path: 5\n", "@F@:1:0: interface conversion: interface {} is int64, not string",
     true},
    {"max_payload: 3000000000\n", "@F@:1:0: max_payload value is too big", true},
    {"max_control_line: 3000000000\n", "@F@:1:0: max_control_line value is too big", true},
    {"max_sub_tokens: 300\n", "@F@:1:0: max_sub_tokens value is too big", true},
    {"max_subscription_tokens: 0\n", "@F@:1:0: max_subscription_tokens value can not be negative",
     true},
    {"max_sub_tokens: -5\n", "@F@:1:0: max_sub_tokens value can not be negative", true},
    {"max_sub_tokens: \"x\"\n", "@F@:1:0: interface conversion: interface {} is string, not int64",
     true},
    {"lame_duck_duration: \"10s\"\n",
     "@F@:1:0: invalid lame_duck_duration of 10s, minimum is 30 seconds", true},
    {"lame_duck_duration: \"29s\"\n",
     "@F@:1:0: invalid lame_duck_duration of 29s, minimum is 30 seconds", true},
    {"lame_duck_duration: \"500ms\"\n",
     "@F@:1:0: invalid lame_duck_duration of 500ms, minimum is 30 seconds", true},
    {"lame_duck_duration: 60\n", "@F@:1:0: interface conversion: interface {} is int64, not string",
     true},
    {"lame_duck_duration: \"abc\"\n",
     "@F@:1:0: error parsing lame_duck_duration: time: invalid duration \"abc\"", true},
    {"lame_duck_duration: \"5y\"\n",
     "@F@:1:0: error parsing lame_duck_duration: time: unknown unit \"y\" in duration \"5y\"",
     true},
    {"lame_duck_grace_period: \"-5s\"\n",
     "@F@:1:0: invalid lame_duck_grace_period, needs to be positive", true},
    /* Go parses a fraction exactly per unit (a float sum lost 1.001s's last millisecond). */
    {"lame_duck_duration: \"1.001s\"\n",
     "@F@:1:0: invalid lame_duck_duration of 1.001s, minimum is 30 seconds", true},
    {"lame_duck_duration: \"2562047h47m16.854775808s\"\n",
     "@F@:1:0: error parsing lame_duck_duration: time: invalid duration "
     "\"2562047h47m16.854775808s\"",
     true},
    {"websocket {\n  no_tls: true\n  allowed_origins: 5\n}\n",
     "@F@:3:3: error parsing allowed origins: unsupported type int64", true},
    {"websocket {\n  no_tls: true\n  allowed_origins: [7, \"http://a\"]\n}\n",
     "@F@:3:21: error parsing allowed origins: unsupported type in array int64", true},
    {"lame_duck_grace_period: \"x\"\n",
     "@F@:1:0: error parsing lame_duck_grace_period: time: invalid duration \"x\"", true},
    {"lame_duck_grace_period: 5\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"max_traced_msg_len: \"x\"\n",
     "@F@:1:0: interface conversion: interface {} is string, not int64", true},
    {"disable_sublist_cache: 1\n", "@F@:1:0: interface conversion: interface {} is int64, not bool",
     true},
    {"no_sublist_cache: \"yes\"\n",
     "@F@:1:0: interface conversion: interface {} is string, not bool", true},
    {"trace_verbose: 1\n", "@F@:1:0: interface conversion: interface {} is int64, not bool", true},
    {"log_size_limit: \"1MB\"\n",
     "@F@:1:0: interface conversion: interface {} is string, not int64", true},
    {"logfile_size_limit: true\n", "@F@:1:0: interface conversion: interface {} is bool, not int64",
     true},
    {"syslog: \"x\"\n", "@F@:1:0: interface conversion: interface {} is string, not bool", true},
    {"remote_syslog: 5\n", "@F@:1:0: interface conversion: interface {} is int64, not string",
     true},
    {"connect_error_reports: \"x\"\n",
     "@F@:1:0: interface conversion: interface {} is string, not int64", true},
    {"reconnect_error_reports: true\n",
     "@F@:1:0: interface conversion: interface {} is bool, not int64", true},
    {"no_auth_user: 5\n", "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"system_account: 5\n", "@F@:1:0: system account name must be a string", true},
    {"system: true\n", "@F@:1:0: system account name must be a string", true},
    {"no_system_account: \"x\"\n",
     "@F@:1:0: interface conversion: interface {} is string, not bool", true},
    {"prof_port: \"x\"\n", "@F@:1:0: interface conversion: interface {} is string, not int64",
     true},
    {"allow_non_tls: 1\n", "@F@:1:0: interface conversion: interface {} is int64, not bool", true},
    {"ocsp: 5\n", "@F@:1:0: error parsing ocsp config: unsupported type int64", true},
    {"ocsp: {mode: \"bogus\"}\n",
     "@F@:1:7: error parsing ocsp config: unsupported ocsp mode string", true},
    {"ocsp: {foo: 1}\n", "@F@:1:7: error parsing ocsp config: unsupported field string", true},
    {"ocsp: {mode: 5}\n", "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"default_js_domain: 5\n", "@F@:1:0: error default_js_domain config: unsupported type int64",
     true},
    {"default_js_domain: {A: 5}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"store_dir: 5\n", "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"store_dir: \"/tmp/a\"\nstoredir: \"/tmp/b\"\n",
     "@F@:2:1: Duplicate 'store_dir' configuration", false},
    {"store_dir: \"/tmp/a\"\njetstream {\n  store_dir: \"/tmp/b\"\n}\n",
     "@F@:3:3: Duplicate 'store_dir' configuration", false},
    {"listen: true\n", "@F@:1:0: expected port or host:port, got bool", true},
    {"listen: \"a:b:c\"\n", "@F@:1:0: could not parse address string \"a:b:c\"", true},
    {"tls: 5\n",
     "@F@:1:0: interface conversion: interface {} is int64, not map[string]interface {}", true},
    {"tls {\n  cert_file: 5\n}\n",
     "@F@:2:3: error parsing tls config, expected 'cert_file' to be filename", true},
    {"tls {\n  key_file: true\n}\n",
     "@F@:2:3: error parsing tls config, expected 'key_file' to be filename", true},
    {"tls {\n  ca_file: 1.5\n}\n",
     "@F@:2:3: error parsing tls config, expected 'ca_file' to be filename", true},
    {"tls {\n  insecure: \"yes\"\n}\n",
     "@F@:2:3: error parsing tls config, expected 'insecure' to be a boolean", true},
    {"tls {\n  verify: 1\n}\n",
     "@F@:2:3: error parsing tls config, expected 'verify' to be a boolean", true},
    {"tls {\n  verify_and_map: \"x\"\n}\n",
     "@F@:2:3: error parsing tls config, expected 'verify_and_map' to be a boolean", true},
    {"tls {\n  verify_cert_and_check_known_urls: 1\n}\n",
     "@F@:2:3: error parsing tls config, expected 'verify_cert_and_check_known_urls' to be a "
     "boolean",
     true},
    {"tls {\n  verify_cert_and_check_known_urls: true\n}\n",
     "@F@:2:3: verify_cert_and_check_known_urls not supported in this context", true},
    {"tls {\n  cipher_suites: []\n}\n",
     "@F@:2:3: error parsing tls config, 'cipher_suites' cannot be empty", true},
    {"tls {\n  cipher_suites: [\n    \"TLS_BOGUS\"\n  ]\n}\n",
     "@F@:3:6: unrecognized cipher TLS_BOGUS", true},
    {"tls {\n  cipher_suites: \"TLS_AES_128_GCM_SHA256\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not []interface {}", true},
    {"tls {\n  curve_preferences: []\n}\n",
     "@F@:2:3: error parsing tls config, 'curve_preferences' cannot be empty", true},
    {"tls {\n  curve_preferences: [\n    \"P999\"\n  ]\n}\n",
     "@F@:3:6: unrecognized curve preference P999", true},
    {"tls {\n  timeout: \"5x\"\n}\n",
     "@F@:2:3: error parsing tls config, 'timeout' time: unknown unit \"x\" in duration \"5x\"",
     true},
    {"tls {\n  timeout: true\n}\n", "@F@:2:3: error parsing tls config, 'timeout' wrong type",
     true},
    {"tls {\n  connection_rate_limit: \"x\"\n}\n",
     "@F@:2:3: error parsing tls config, 'connection_rate_limit' wrong type", true},
    {"tls {\n  pinned_certs: \"x\"\n}\n",
     "@F@:2:3: error parsing tls config, expected 'pinned_certs' to be a list of hex-encoded "
     "sha256 of DER encoded SubjectPublicKeyInfo",
     true},
    {"tls {\n  pinned_certs: [\n    \"abc\"\n  ]\n}\n",
     "@F@:3:6: error parsing tls config, 'pinned_certs' key abc does not look like hex-encoded "
     "sha256 of DER encoded SubjectPublicKeyInfo",
     true},
    {"tls {\n  foo: 1\n}\n", "@F@:2:3: error parsing tls config, unknown field [\"foo\"]", true},
    {"tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n}\n",
     "@F@:1:0: missing 'key_file' in TLS configuration", true},
    {"tls {\n  key_file: \"@CERTS@/server-key.pem\"\n}\n",
     "@F@:1:0: missing 'cert_file' in TLS configuration", true},
    {"tls {\n  cert_file: \"/nonexistent/c.pem\"\n  key_file: \"/nonexistent/k.pem\"\n}\n",
     "@F@:1:0: error parsing X509 certificate/key pair: open /nonexistent/c.pem: no such file or "
     "directory",
     true},
    {"tls {\n  cert_file: \"@CERTS@/bad.pem\"\n  key_file: \"@CERTS@/server-key.pem\"\n}\n",
     "@F@:1:0: error parsing X509 certificate/key pair: tls: failed to find any PEM data in "
     "certificate input",
     true},
    {"tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n  key_file: \"@CERTS@/bad.pem\"\n}\n",
     "@F@:1:0: error parsing X509 certificate/key pair: tls: failed to find any PEM data in key "
     "input",
     true},
    {"tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n  key_file: "
     "\"@CERTS@/ca-key-missing.pem\"\n}\n",
     "@F@:1:0: error parsing X509 certificate/key pair: open @CERTS@/ca-key-missing.pem: no such "
     "file or directory",
     true},
    {"tls {\n  ca_file: \"/nonexistent/ca.pem\"\n}\n",
     "@F@:1:0: open /nonexistent/ca.pem: no such file or directory", true},
    {"tls {\n  ca_file: \"@CERTS@/bad.pem\"\n}\n", "@F@:1:0: failed to parse root ca certificate",
     true},
    {"authorization: 5\n",
     "@F@:1:0: interface conversion: interface {} is int64, not map[string]interface {}", true},
    {"authorization {\n  user: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"authorization {\n  password: true\n}\n",
     "@F@:2:3: interface conversion: interface {} is bool, not string", true},
    {"authorization {\n  token: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"authorization {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"authorization {\n  user: a\n  password: b\n  token: c\n}\n",
     "@F@:1:0: Cannot have a user/pass and token", true},
    {"authorization {\n  user: a\n  users: []\n}\n",
     "@F@:1:0: Can not have a single user/pass and a users array", true},
    {"authorization {\n  token: t\n  users: []\n}\n",
     "@F@:1:0: Can not have a token and a users array", true},
    {"authorization {\n  users: 5\n}\n", "@F@:2:3: Expected users field to be an array, got 5",
     true},
    {"authorization {\n  users: [\n    5\n  ]\n}\n",
     "@F@:3:5: Expected user entry to be a map/struct, got 5", true},
    {"authorization {\n  users: [\n    {password: x}\n  ]\n}\n",
     "@F@:3:6: User entry requires a user", true},
    {"authorization {\n  users: [\n    {nkey: \"UABC\"}\n  ]\n}\n",
     "@F@:3:6: Not a valid public nkey for a user", true},
    {"authorization {\n  users: [\n    {user: a, password: b}\n    {user: a, password: c}\n  "
     "]\n}\n",
     "@F@:1:0: Duplicate user \"a\" detected", true},
    {"authorization {\n  users: [\n    {user: a, foo: 1}\n  ]\n}\n",
     "@F@:3:15: unknown field \"foo\"", true},
    {"authorization {\n  users: [\n    {user: a, allowed_connection_types: [\"bogus\"]}\n  ]\n}\n",
     "@F@:3:15: invalid connection types [\"BOGUS\"]", true},
    {"authorization {\n  users: [\n    {user: a, allowed_connection_types: 5}\n  ]\n}\n",
     "@F@:3:15: error parsing allowed connection types: unsupported type int64", true},
    {"authorization {\n  permissions: 5\n}\n",
     "@F@:2:3: Expected permissions to be a map/struct, got 5", true},
    {"authorization {\n  permissions: {\n    publish: 5\n  }\n}\n",
     "Expected subject permissions to be a subject, or array of subjects, got int64", true},
    {"authorization {\n  permissions: {\n    publish: \"a..b\"\n  }\n}\n",
     "subject \"a..b\" is not a valid subject", true},
    {"authorization {\n  permissions: {\n    subscribe: \"foo bar baz\"\n  }\n}\n",
     "subject \"foo bar baz\" is not a valid subject", true},
    {"authorization {\n  permissions: {\n    subscribe: \"a..b q\"\n  }\n}\n",
     "subject \"a..b\" is not a valid subject", true},
    {"authorization {\n  permissions: {\n    publish: {allow: \"a..b\"}\n  }\n}\n",
     "@F@:3:15: subject \"a..b\" is not a valid subject", true},
    {"authorization {\n  permissions: {\n    publish: {deny: [\n      \"a\"\n      5\n    ]}\n  "
     "}\n}\n",
     "@F@:5:7: Subject in permissions array cannot be cast to string", true},
    {"authorization {\n  permissions: {\n    publish: {allo: \"a\"}\n  }\n}\n",
     "@F@:3:15: Unknown field name \"allo\" parsing subject permissions, only 'allow' or 'deny' "
     "are permitted",
     true},
    {"authorization {\n  permissions: {\n    pubx: {allow: \"a\"}\n  }\n}\n",
     "@F@:3:5: Unknown field \"pubx\" parsing permissions", true},
    {"authorization {\n  permissions: {\n    allow_responses: 5\n  }\n}\n",
     "@F@:3:5: error parsing response permissions, expected a boolean or a map", true},
    {"authorization {\n  permissions: {\n    allow_responses: {expires: 5}\n  }\n}\n",
     "@F@:3:23: error parsing expires, not a duration string", true},
    {"authorization {\n  permissions: {\n    allow_responses: {expires: \"5x\"}\n  }\n}\n",
     "@F@:3:23: error parsing expires: time: unknown unit \"x\" in duration \"5x\"", true},
    {"authorization {\n  permissions: {\n    allow_responses: {max: \"a\"}\n  }\n}\n",
     "@F@:3:23: interface conversion: interface {} is string, not int64", true},
    {"authorization {\n  permissions: {\n    allow_responses: {foo: 1}\n  }\n}\n",
     "@F@:3:23: Unknown field \"foo\" parsing permissions", true},
    {"authorization {\n  users: [\n    {user: a, permissions: 5}\n  ]\n}\n",
     "@F@:3:15: Expected permissions to be a map/struct, got 5", true},
    {"authorization {\n  users: [\n    {user: a, permissions: {sub: {deny: 5}}}\n  ]\n}\n",
     "@F@:3:35: Expected subject permissions to be a subject, or array of subjects, got int64",
     true},
    {"accounts: 5\n", "", true},
    {"accounts: [\n  A\n  A\n]\n", "@F@:3:3: Duplicate Account Entry: A", true},
    {"accounts: [\n  \"$G\"\n]\n", "@F@:2:4: \"$G\" is a Reserved Account", true},
    {"accounts: [\n  5\n]\n", "@F@:2:3: interface conversion: interface {} is int64, not string",
     true},
    {"accounts {\n  A: 5\n}\n", "@F@:2:3: Expected map entries for accounts", true},
    {"accounts {\n  $G: {}\n}\n", "@F@:2:3: \"$G\" is a Reserved Account", true},
    {"accounts {\n  A: {\n    foo: 1\n  }\n}\n", "@F@:3:5: unknown field \"foo\"", true},
    {"accounts {\n  A: {\n    nkey: \"AXYZ\"\n  }\n}\n",
     "@F@:3:5: Not a valid public nkey for an account: \"AXYZ\"", true},
    {"accounts {\n  A: {\n    users: 5\n  }\n}\n", "Expected users field to be an array, got 5",
     true},
    {"accounts {\n  A: {\n    users: [\n      {user: a}\n    ]\n  }\n  B: {\n    users: [\n      "
     "{user: a}\n    ]\n  }\n}\n",
     "@F@:8:5: Duplicate user \"a\" detected", false},
    {"authorization {\n  user: x\n  password: y\n}\naccounts {\n  A: {\n    users: [\n      {user: "
     "a}\n    ]\n  }\n}\n",
     "@F@:7:5: Can not have a single user/pass and accounts", false},
    {"accounts {\n  A: {\n    exports: 5\n  }\n}\n",
     "@F@:3:5: Exports should be an array, got int64", true},
    {"accounts {\n  A: {\n    exports: [\n      5\n    ]\n  }\n}\n",
     "@F@:4:7: Export Items should be a map with type entry, got int64", true},
    {"accounts {\n  A: {\n    exports: [\n      {stream: 5}\n    ]\n  }\n}\n",
     "@F@:4:8: Expected stream name to be string, got int64", true},
    {"accounts {\n  A: {\n    exports: [\n      {service: 5}\n    ]\n  }\n}\n",
     "@F@:4:8: Expected service name to be string, got int64", true},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", response_type: 5}\n    ]\n  "
     "}\n}\n",
     "@F@:4:22: Expected response type to be string, got int64", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", response: \"bogus\"}\n    ]\n  "
     "}\n}\n",
     "@F@:4:22: Unknown response type: \"bogus\"", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", threshold: 5}\n    ]\n  }\n}\n",
     "@F@:4:22: Expected response threshold to be a parseable time duration, got int64", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", threshold: \"x\"}\n    ]\n  "
     "}\n}\n",
     "@F@:4:22: Expected response threshold to be a parseable time duration, got \"x\"", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", latency: 5}\n    ]\n  }\n}\n",
     "@F@:4:22: Expected latency entry to be a map/struct or string, got int64", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", latency: {sampling: 200, subject: "
     "\"lat\"}}\n    ]\n  }\n}\n",
     "@F@:4:32: bad sampling percentage, should be 1-100", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", latency: {sampling: \"x%\", "
     "subject: \"lat\"}}\n    ]\n  }\n}\n",
     "@F@:4:32: Failed to parse latency sample: strconv.Atoi: parsing \"x\": invalid syntax",
     false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", latency: {sampling: 50}}\n    ]\n "
     " }\n}\n",
     "@F@:4:22: Latency subject required, but missing", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", foo: 1}\n    ]\n  }\n}\n",
     "@F@:4:22: unknown field \"foo\"", false},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", accounts: [B]}\n    ]\n  }\n}\n",
     "@F@:1:0: \"B\" account not defined for service export", true},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a\", accounts: [B]}\n    ]\n  }\n}\n",
     "@F@:1:0: \"B\" account not defined for stream export", true},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a\", accounts: 5}\n    ]\n  }\n}\n",
     "@F@:4:22: interface conversion: interface {} is int64, not []interface {}", false},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a.b\", account_token_position: 2}\n    "
     "]\n  }\n}\n",
     "@F@:1:0: Error adding stream export \"a.b\": sublist: invalid subject", true},
    {"accounts {\n  A: {\n    imports: 5\n  }\n}\n",
     "@F@:3:5: Imports should be an array, got int64", true},
    {"accounts {\n  A: {\n    imports: [\n      5\n    ]\n  }\n}\n",
     "@F@:4:7: Import Items should be a map with type entry, got int64", true},
    {"accounts {\n  A: {\n    imports: [\n      {stream: 5}\n    ]\n  }\n}\n",
     "@F@:4:8: Stream entry should be an account map, got int64", true},
    {"accounts {\n  A: {\n    imports: [\n      {service: \"x\"}\n    ]\n  }\n}\n",
     "@F@:4:8: Service entry should be an account map, got string", true},
    {"accounts {\n  A: {\n    imports: [\n      {stream: {account: B}}\n    ]\n  }\n}\n",
     "@F@:4:8: Expect an account name and a subject", true},
    {"accounts {\n  A: {\n    imports: [\n      {stream: {account: B, subject: x, foo: 1}}\n    "
     "]\n  }\n}\n",
     "@F@:4:41: unknown field \"foo\"", false},
    {"accounts {\n  A: {\n    imports: [\n      {service: {account: B, subject: x}, foo: 1}\n    "
     "]\n  }\n}\n",
     "@F@:4:43: unknown field \"foo\"", false},
    {"accounts {\n  A: {\n    imports: [\n      {stream: {account: C, subject: \"a.>\"}}\n    ]\n  "
     "}\n}\n",
     "@F@:1:0: \"C\" account not defined for stream import", true},
    {"accounts {\n  A: {\n    imports: [\n      {service: {account: C, subject: \"a\"}}\n    ]\n  "
     "}\n}\n",
     "@F@:1:0: \"C\" account not defined for service import", true},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a.b\"}\n    ]\n  }\n  B: {\n    "
     "imports: [\n      {service: {account: A, subject: \"a.c\"}}\n    ]\n  }\n}\n",
     "@F@:1:0: Error adding service import \"a.c\": service import not authorized", true},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a.>\"}\n    ]\n  }\n  B: {\n    "
     "imports: [\n      {stream: {account: A, subject: \"b.>\"}}\n    ]\n  }\n}\n",
     "@F@:1:0: Error adding stream import \"b.>\": stream import not authorized", true},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a.>\", accounts: [C]}\n    ]\n  }\n  B: "
     "{\n    imports: [\n      {stream: {account: A, subject: \"a.>\"}}\n    ]\n  }\n  C: {}\n}\n",
     "@F@:1:0: Error adding stream import \"a.>\": stream import not authorized", false},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a.>\"}\n    ]\n  }\n  B: {\n    "
     "imports: [\n      {stream: {account: A, subject: \"a.>\"}, prefix: \"p.*\"}\n    ]\n  }\n}\n",
     "@F@:1:0: Error adding stream import \"a.>\": stream import prefix can not contain wildcard "
     "tokens",
     true},
    {"accounts {\n  A: {\n    exports: [\n      {service: \"a.b\"}\n    ]\n    imports: [\n      "
     "{service: {account: B, subject: \"b.b\"}, to: \"x\"}\n    ]\n  }\n  B: {\n    exports: [\n   "
     "   {service: \"b.b\"}\n    ]\n    imports: [\n      {service: {account: A, subject: "
     "\"a.b\"}, to: \"b.b\"}\n    ]\n  }\n}\n",
     "@F@:1:0: Error adding service import \"a.b\": import forms a cycle", false},
    /* Two-way stream imports: with prefixes the imported subjects do not collide (nats-server
     * compares the prefixed subject), without them they do. */
    {"accounts {\n  A: {\n    exports: [ {stream: \">\"} ]\n    imports: [ {stream: {account: B, "
     "subject: \">\"}, prefix: fromb} ]\n  }\n  B: {\n    exports: [ {stream: \">\"} ]\n    "
     "imports: [ {stream: {account: A, subject: \">\"}, prefix: froma} ]\n  }\n}\n",
     "", true},
    {"accounts {\n  A: {\n    exports: [ {stream: \">\"} ]\n    imports: [ {stream: {account: B, "
     "subject: \">\"}} ]\n  }\n  B: {\n    exports: [ {stream: \">\"} ]\n    imports: [ {stream: "
     "{account: A, subject: \">\"}} ]\n  }\n}\n",
     "@F@:1:0: Error adding stream import \">\": import forms a cycle", true},
    {"accounts {\n  A: {\n    imports: [\n      {service: {account: B, subject: \"x\"}}\n      "
     "{service: {account: C, subject: \"x\"}}\n    ]\n  }\n}\n",
     "@F@:5:44: Duplicate service import subject \"x\", previously used in import for account "
     "\"B\", subject \"x\"",
     true},
    {"accounts {\n  A: {\n    limits: 5\n  }\n}\n",
     "@F@:3:5: Expected account limits to be a map/struct, got 5", true},
    {"accounts {\n  A: {\n    limits: {max_conn: \"x\"}\n  }\n}\n",
     "@F@:3:14: interface conversion: interface {} is string, not int64", true},
    {"accounts {\n  A: {\n    limits: {foo: 1}\n  }\n}\n",
     "@F@:3:14: Unknown field \"foo\" parsing account limits", true},
    {"accounts {\n  A: {\n    jetstream: 5\n  }\n}\n",
     "Expected map, bool or string to define JetStream, got int64", true},
    {"accounts {\n  A: {\n    jetstream: \"maybe\"\n  }\n}\n",
     "Expected 'enabled' or 'disabled' for string value, got 'maybe'", true},
    {"accounts {\n  A: {\n    jetstream: {max_mem: \"x\"}\n  }\n}\n",
     "@F@:3:17: Expected a parseable size for \"max_mem\", got x", true},
    {"accounts {\n  A: {\n    jetstream: {max_bytes_required: 5}\n  }\n}\n",
     "@F@:3:17: Expected a parseable bool for \"max_bytes_required\", got 5", true},
    {"accounts {\n  A: {\n    jetstream: {foo: 1}\n  }\n}\n", "@F@:3:17: unknown field \"foo\"",
     true},
    {"accounts {\n  A: {\n    default_permissions: 5\n  }\n}\n",
     "@F@:3:5: Expected permissions to be a map/struct, got 5", true},
    {"mappings: 5\n",
     "@F@:1:0: interface conversion: interface {} is int64, not map[string]interface {}", true},
    {"mappings {\n  \"a..b\": \"c\"\n}\n", "@F@:1:0: Subject \"a..b\" is not a valid subject",
     true},
    {"mappings {\n  a: 5\n}\n", "@F@:2:3: Expected an entry for the mapping destination", true},
    {"mappings {\n  a: \"b..c\"\n}\n",
     "@F@:2:3: Error adding mapping for \"a\" to \"b..c\" : invalid mapping destination: invalid "
     "subject in ",
     true},
    {"mappings {\n  \"a.*\": \"b\"\n}\n",
     "@F@:2:4: Error adding mapping for \"a.*\" to \"b\" : invalid mapping destination: not using "
     "all of the token wildcard(s) in b",
     true},
    {"mappings {\n  \"a.*\": \"b.*\"\n}\n",
     "@F@:2:4: Error adding mapping for \"a.*\" to \"b.*\" : invalid subject", true},
    {"mappings {\n  a: \"b.{{bogus(1)}}\"\n}\n",
     "@F@:2:3: Error adding mapping for \"a\" to \"b.{{bogus(1)}}\" : invalid mapping destination: "
     "unknown function in {{bogus(1)}}",
     true},
    {"mappings {\n  a: [\n    5\n  ]\n}\n",
     "@F@:3:5: Expected an entry for the mapping destination", true},
    {"mappings {\n  a: [\n    {destination: b}\n  ]\n}\n",
     "@F@:3:21: Missing weight for mapping destination \"b\"", true},
    {"mappings {\n  a: [\n    {destination: b, weight: \"x%\"}\n  ]\n}\n",
     "@F@:3:22: Invalid weight \"x\" for mapping destination", true},
    {"mappings {\n  a: [\n    {destination: b, weight: 150}\n  ]\n}\n",
     "@F@:3:22: Invalid weight 150 for mapping destination", true},
    {"mappings {\n  a: [\n    {destination: b, weight: \"150%\"}\n  ]\n}\n",
     "@F@:3:22: Invalid weight 150 for mapping destination", true},
    {"mappings {\n  a: [\n    {destination: b, weight: true}\n  ]\n}\n",
     "@F@:3:22: Unknown entry type for weight of true", true},
    {"mappings {\n  a: [\n    {destination: b, weight: 50, foo: 1}\n  ]\n}\n",
     "@F@:3:34: Unknown field \"foo\" for mapping destination", true},
    {"mappings {\n  a: [\n    {destination: b, weight: 60}\n    {destination: c, weight: 60}\n  "
     "]\n}\n",
     "@F@:4:33: interface conversion: interface {} is []interface {}, not string", true},
    {"mappings {\n  a: [\n    {destination: b, weight: 50}\n    {destination: b, weight: 50}\n  "
     "]\n}\n",
     "@F@:4:33: interface conversion: interface {} is []interface {}, not string", true},
    {"cluster: 5\n", "@F@:1:0: Expected map to define cluster, got int64", true},
    {"cluster {\n  name: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"cluster {\n  port: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not int64", true},
    {"cluster {\n  listen: \"x\"\n}\n", "@F@:2:3: could not parse address string \"x\"", true},
    {"cluster {\n  host: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"cluster {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"cluster {\n  routes: \"nats://a:1\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not []interface {}", true},
    {"cluster {\n  routes: [\n    5\n  ]\n}\n",
     "@F@:3:5: interface conversion: interface {} is int64, not string", true},
    {"cluster {\n  routes: [\n    \"nats://a:x\"\n  ]\n}\n",
     "@F@:3:6: error parsing route url [\"nats://a:x\"]", true},
    {"cluster {\n  routes: [\n    \"nats://a:1\"\n    \"nats://a:1\"\n  ]\n}\n",
     "@F@:4:6: invalid use of field \"nats://a:1\": Duplicate route entry detected", true},
    {"cluster {\n  authorization {\n    users: []\n  }\n}\n",
     "@F@:2:3: Cluster authorization does not allow multiple users", true},
    {"cluster {\n  authorization {\n    token: x\n  }\n}\n",
     "@F@:2:3: Cluster authorization does not support tokens", true},
    {"cluster {\n  authorization {\n    user: a\n    permissions: {publish: \"x\"}\n  }\n}\n",
     "@F@:2:3: invalid use of field \"authorization\": setting \"permissions\" within cluster "
     "authorization block is deprecated",
     true},
    {"cluster {\n  permissions: {\n    allow_responses: true\n  }\n}\n",
     "@F@:2:3: Cluster permissions do not support dynamic responses", true},
    {"cluster {\n  permissions: 5\n}\n", "Expected permissions to be a map/struct, got 5", true},
    {"cluster {\n  no_advertise: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"cluster {\n  connect_retries: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not int64", true},
    {"cluster {\n  advertise: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"cluster {\n  tls {\n    foo: 1\n  }\n}\n",
     "@F@:3:5: error parsing tls config, unknown field [\"foo\"]", true},
    {"cluster {\n  tls {\n    verify_cert_and_check_known_urls: true\n  }\n}\n", "", true},
    {"gateway: 5\n", "@F@:1:0: Expected gateway to be a map, got int64", true},
    {"gateway {\n  name: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"gateway {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"gateway {\n  authorization {\n    users: []\n  }\n}\n",
     "@F@:2:3: Gateway authorization does not allow multiple users", true},
    {"gateway {\n  authorization {\n    token: x\n  }\n}\n",
     "@F@:2:3: Gateway authorization does not support tokens", true},
    {"gateway {\n  gateways: 5\n}\n", "Expected gateways field to be an array, got int64", true},
    {"gateway {\n  gateways: [\n    5\n  ]\n}\n",
     "@F@:3:5: Expected gateway entry to be a map/struct, got 5", true},
    {"gateway {\n  gateways: [\n    {name: A, foo: 1}\n  ]\n}\n", "@F@:3:15: unknown field \"foo\"",
     true},
    {"gateway {\n  gateways: [\n    {name: A, url: \"nats://a:x\"}\n  ]\n}\n",
     "@F@:3:15: error parsing gateway url [\"nats://a:x\"]", true},
    {"gateway {\n  gateways: [\n    {name: A, urls: \"nats://a:1\"}\n  ]\n}\n",
     "@F@:3:15: interface conversion: interface {} is string, not []interface {}", true},
    {"gateway {\n  reject_unknown: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"gateway {\n  connect_retries: true\n}\n",
     "@F@:2:3: interface conversion: interface {} is bool, not int64", true},
    {"leafnodes: 5\n", "@F@:1:0: Expected map to define a leafnode, got int64", true},
    {"leafnodes {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"leafnodes {\n  port: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not int64", true},
    {"leaf {\n  listen: 1.5\n}\n", "@F@:2:3: expected port or host:port, got float64", true},
    {"leafnodes {\n  remotes: 5\n}\n", "@F@:2:3: Expected remotes field to be an array, got int64",
     true},
    {"leafnodes {\n  remotes: [\n    5\n  ]\n}\n",
     "@F@:3:5: Expected remote leafnode entry to be a map/struct, got 5", true},
    {"leafnodes {\n  remotes: [\n    {url: 5}\n  ]\n}\n",
     "@F@:3:6: Expected remote leafnode url to be an array or string, got 5", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:x\"}\n  ]\n}\n",
     "@F@:3:6: error parsing leafnode url [\"nats://a:x\"]", true},
    {"leafnodes {\n  remotes: [\n    {urls: [\n      \"nats://a:1\"\n      \"nats://a:1\"\n    "
     "]}\n  ]\n}\n",
     "@F@:5:8: invalid use of field \"nats://a:1\": Duplicate leafnode entry detected", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", foo: 1}\n  ]\n}\n",
     "@F@:3:25: unknown field \"foo\"", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", hub: 5}\n  ]\n}\n",
     "@F@:3:25: interface conversion: interface {} is int64, not bool", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", deny_imports: 5}\n  ]\n}\n",
     "@F@:3:25: Expected subject permissions to be a subject, or array of subjects, got int64",
     true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", deny_exports: \"a..b\"}\n  ]\n}\n",
     "@F@:3:25: subject \"a..b\" is not a valid subject", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", credentials: 5}\n  ]\n}\n",
     "@F@:3:25: interface conversion: interface {} is int64, not string", true},
    {"leafnodes {\n  remotes: [\n    {url: \"nats://a:1\", tls: {foo: 1}}\n  ]\n}\n",
     "@F@:3:31: error parsing tls config, unknown field [\"foo\"]", true},
    {"leafnodes {\n  authorization {\n    foo: 1\n  }\n}\n", "@F@:3:5: unknown field \"foo\"",
     true},
    {"leafnodes {\n  authorization {\n    users: 5\n  }\n}\n",
     "@F@:3:5: Expected users field to be an array, got 5", true},
    {"leafnodes {\n  authorization {\n    users: [\n      5\n    ]\n  }\n}\n",
     "@F@:4:7: Expected user entry to be a map/struct, got 5", true},
    {"leafnodes {\n  authorization {\n    users: [\n      {user: a, foo: 1}\n    ]\n  }\n}\n",
     "@F@:4:17: unknown field \"foo\"", true},
    {"leafnodes {\n  authorization {\n    user: x\n    users: [\n      {user: a}\n    ]\n  }\n}\n",
     "@F@:2:3: can not have a single user/pass and a users array", true},
    {"leafnodes {\n  authorization {\n    users: [\n      {user: a}\n      {user: a}\n    ]\n  "
     "}\n}\n",
     "@F@:2:3: duplicate user \"a\" detected in leafnode authorization", true},
    {"leafnodes {\n  min_version: \"2.7.0\"\n}\n",
     "@F@:2:3: the minimum version should be at least 2.8.0", true},
    {"leafnodes {\n  min_version: \"abc\"\n}\n",
     "@F@:2:3: invalid leafnode's minimum version: invalid semver", true},
    {"leafnodes {\n  min_version: \"2.8\"\n}\n",
     "@F@:2:3: invalid leafnode's minimum version: strconv.Atoi: parsing \"\": invalid syntax",
     true},
    {"leafnodes {\n  reconnect: true\n}\n",
     "@F@:2:3: interface conversion: interface {} is bool, not int64", true},
    {"leafnodes {\n  no_advertise: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"jetstream: 5\n", "@F@:1:0: Expected map, bool or string to define JetStream, got int64",
     true},
    {"jetstream: \"maybe\"\n",
     "@F@:1:0: Expected 'enabled' or 'disabled' for string value, got 'maybe'", true},
    {"jetstream {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"jetstream {\n  store_dir: 5\n}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"jetstream {\n  max_mem: true\n}\n", "@F@:2:3: max_mem_store must be int64 or string", true},
    {"jetstream {\n  max_mem: \"10X\"\n}\n",
     "@F@:2:3: max_mem_store sizes defined as strings must end in K, M, G, T", true},
    {"jetstream {\n  max_mem: \"xG\"\n}\n",
     "@F@:2:3: max_mem_store strconv.ParseInt: parsing \"x\": invalid syntax", true},
    {"jetstream {\n  max_file: true\n}\n", "@F@:2:3: max_file_store must be int64 or string", true},
    {"jetstream {\n  max_file: \"1Q\"\n}\n",
     "@F@:2:3: max_file_store sizes defined as strings must end in K, M, G, T", true},
    {"jetstream {\n  domain: 5\n}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"jetstream {\n  enabled: \"x\"\n}\n",
     "@F@:1:0: interface conversion: interface {} is string, not bool", true},
    {"jetstream {\n  cipher: \"rot13\"\n}\n", "@F@:2:3: Unknown cipher type: \"rot13\"", true},
    {"jetstream {\n  cipher: 5\n}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"jetstream {\n  key: 5\n}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"jetstream {\n  limits: 5\n}\n",
     "@F@:2:3: Expected a map to define JetStreamLimits, got int64", true},
    {"jetstream {\n  limits {\n    foo: 1\n  }\n}\n", "@F@:3:5: unknown field \"foo\"", true},
    {"jetstream {\n  limits {\n    max_ack_pending: \"x\"\n  }\n}\n",
     "@F@:1:0: interface conversion: interface {} is string, not int64", true},
    {"jetstream {\n  limits {\n    duplicate_window: \"x\"\n  }\n}\n",
     "time: invalid duration \"x\"", true},
    {"jetstream {\n  max_outstanding_catchup: \"1X\"\n}\n",
     "@F@:2:3: max_outstanding_catchup sizes defined as strings must end in K, M, G, T", true},
    {"jetstream {\n  unique_tag: 5\n}\n",
     "@F@:1:0: interface conversion: interface {} is int64, not string", true},
    {"mqtt: 5\n", "@F@:1:0: Expected mqtt to be a map, got int64", true},
    {"mqtt {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"mqtt {\n  port: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not int64", true},
    {"mqtt {\n  max_ack_pending: 70000\n}\n",
     "@F@:2:3: invalid value 70000, should in [0..65535] range", true},
    {"mqtt {\n  max_inflight: -1\n}\n", "@F@:2:3: invalid value -1, should in [0..65535] range",
     true},
    {"mqtt {\n  ack_wait: \"x\"\n}\n",
     "@F@:2:3: error parsing ack_wait: time: invalid duration \"x\"", true},
    {"mqtt {\n  ack_wait: 30\n}\n",
     "@F@:2:3: invalid use of field \"ack_wait\": ack_wait should be converted to a duration",
     true},
    {"mqtt {\n  js_domain: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"mqtt {\n  stream_replicas: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not int64", true},
    {"mqtt {\n  consumer_memory_storage: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"mqtt {\n  consumer_inactive_threshold: \"5x\"\n}\n",
     "@F@:2:3: error parsing consumer_inactive_threshold: time: unknown unit \"x\" in duration "
     "\"5x\"",
     true},
    {"mqtt {\n  authorization {\n    foo: 1\n  }\n}\n", "@F@:3:5: unknown field \"foo\"", true},
    {"mqtt {\n  no_auth_user: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"mqtt {\n  tls {\n    foo: 1\n  }\n}\n",
     "@F@:3:5: error parsing tls config, unknown field [\"foo\"]", true},
    {"websocket: 5\n", "@F@:1:0: Expected websocket to be a map, got int64", true},
    {"websocket {\n  foo: 1\n}\n", "@F@:2:3: unknown field \"foo\"", true},
    {"ws {\n  port: \"x\"\n}\n", "@F@:2:3: interface conversion: interface {} is string, not int64",
     true},
    {"websocket {\n  no_tls: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"websocket {\n  same_origin: \"x\"\n}\n",
     "@F@:2:3: interface conversion: interface {} is string, not bool", true},
    {"websocket {\n  allowed_origins: 5\n}\n",
     "@F@:2:3: error parsing allowed origins: unsupported type int64", true},
    {"websocket {\n  allowed_origins: [\n    5\n  ]\n}\n",
     "@F@:3:5: error parsing allowed origins: unsupported type in array int64", true},
    {"websocket {\n  handshake_timeout: \"x\"\n}\n", "@F@:2:3: time: invalid duration \"x\"", true},
    {"websocket {\n  handshake_timeout: true\n}\n",
     "@F@:2:3: error parsing handshake timeout: unsupported type bool", true},
    {"websocket {\n  compression: 1\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not bool", true},
    {"websocket {\n  authorization {\n    foo: 1\n  }\n}\n", "@F@:3:5: unknown field \"foo\"",
     true},
    {"websocket {\n  jwt_cookie: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"websocket {\n  advertise: 5\n}\n",
     "@F@:2:3: interface conversion: interface {} is int64, not string", true},
    {"operator: 5\n", "@F@:1:0: error parsing operators: unsupported type int64", true},
    {"operator: \"/nonexistent/op.jwt\"\n",
     "@F@:1:0: error parsing operator JWT: open /nonexistent/op.jwt: no such file or directory",
     true},
    {"operator: [\n  \"/nonexistent/op.jwt\"\n]\n",
     "@F@:1:0: error parsing operators: unsupported type []interface {}", true},
    {"trusted: 5\n", "@F@:1:0: error parsing trusted: unsupported type int64", true},
    {"trusted: \"OBOGUS\"\n",
     "@F@:1:0: trust key \"OBOGUS\" required to be a valid public operator nkey", true},
    {"trusted: [\n  5\n]\n", "@F@:2:3: error parsing trusted: unsupported type in array int64",
     true},
    {"resolver: 5\n", "@F@:1:0: error parsing operator resolver, wrong type int64", true},
    {"resolver: \"BOGUS\"\n",
     "@F@:1:0: error parsing account resolver, should be MEM or  URL(\"url\") or a map containing "
     "dir and type state=[FULL|CACHE])",
     true},
    {"resolver: {type: full}\n", "@F@:1:0: dir has no value and needs to point to a directory",
     true},
    {"resolver: {dir: 5}\n", "@F@:1:11: interface conversion: interface {} is int64, not string",
     true},
    {"resolver: {dir: \"/tmp\", type: cache, interval: \"1m\"}\n",
     "@F@:1:0: CACHE does not accept sync", true},
    {"resolver: {dir: \"/tmp\", type: cache, allow_delete: true}\n",
     "@F@:1:0: CACHE does not accept allow_delete", true},
    {"resolver: {dir: \"/tmp\", type: full, ttl: \"1m\"}\n", "@F@:1:0: FULL does not accept ttl",
     true},
    {"resolver: {dir: \"/tmp\", type: full, ttl: \"x\"}\n", "@F@:1:0: time: invalid duration \"x\"",
     true},
    {"resolver: {dir: \"/etc/hostname\", type: full}\n",
     "@F@:1:0: dir needs to point to an accessible directory", true},
    {"resolver_preload: 5\n", "@F@:1:0: preload should be a map of account_public_key:account_jwt",
     true},
    {"resolver_preload: {A: 5}\n", "@F@:1:19: preload map value should be a string JWT", true},
    {"resolver_preload: {A: \"notajwt\"}\n", "@F@:1:19: invalid account JWT", true},
    {"resolver_pinned_accounts: 5\n",
     "@F@:1:0: error parsing resolver_pinned_accounts: unsupported type int64", true},
    {"resolver_pinned_accounts: [\n  5\n]\n",
     "@F@:2:3: error parsing resolver_pinned_accounts: unsupported type in array int64", true},
    {"resolver_tls {\n  foo: 1\n}\n", "@F@:2:3: error parsing tls config, unknown field [\"foo\"]",
     true},
    {"operator: \"@CERTS@/bad.pem\"\n", "@F@:1:0: error parsing operator JWT: expected 3 chunks",
     true},
    {"operator: \"eyJbogus\"\n", "@F@:1:0: error parsing operator JWT: expected 3 chunks", true},
    {"resolver: URL(\"http://a:x/\")\n",
     "@F@:1:0: error parsing account resolver url [\"http://a:x/\"]", true},
    {"resolver: \"mem\"\nresolver_tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n  key_file: "
     "\"@CERTS@/server-key.pem\"\n}\n",
     "", true},
    {"tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n  key_file: \"@CERTS@/server-key.pem\"\n"
     "  ca_file: \"@CERTS@/ca.pem\"\n  verify_and_map: true\n}\n",
     "", true},
    {"authorization {\n  users: [\n    {user: a, password: b, allowed_connection_types: "
     "[\"STANDARD\", \"leafnode\", \"MQTT\"]}\n  ]\n}\n",
     "", true},
    {"mqtt {\n  max_ack_pending: 65535\n}\n", "", true},
    /* A user with both an nkey and a password (nats-server reports the key it saw last). */
    {"authorization {\n  users: [\n    {nkey: UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC, "
     "password: x}\n  ]\n}\n",
     "@F@:3:70: Nkey users do not take usernames or passwords", false},
    {"authorization {\n  users: [\n    {user: a, nkey: "
     "UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC}\n  ]\n}\n",
     "@F@:3:15: Nkey users do not take usernames or passwords", false},
    {"authorization {\n  users: [\n    {nkey: UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC}\n"
     "    {nkey: UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC}\n  ]\n}\n",
     "@F@:1:0: Duplicate nkey \"UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC\" detected",
     true},
    /* A wrong type for a duration: nats-server prints its warning before the error. */
    {"mqtt {\n  ack_wait: true\n}\n",
     "@F@:2:3: invalid use of field \"ack_wait\": ack_wait should be converted to a duration", true},
    {"leafnodes {\n  min_version: \"v2.9.0\"\n}\n", "", true},
    {"accounts {\n  A: {\n    exports: [\n      {stream: \"a.>\"}\n    ]\n  }\n  B: {\n    "
     "imports: [\n"
     "      {stream: {account: A, subject: \"a.b.>\"}, to: \"x.>\"}\n    ]\n  }\n}\n",
     "", true},
};

#define NERRORS (sizeof errors / sizeof errors[0])

Test(opts_blocks, error_table)
{
    for (size_t i = 0; i < NERRORS; i++) {
        nd_opts_t o;
        char err[2048] = "", want[4096], w2[4096];
        int rc = apply(&o, errors[i].conf, err, sizeof err);
        /* A few nats-server texts end in a newline; the table keeps their first line. */
        err[strcspn(err, "\n")] = '\0';
        subst(errors[i].want, "@F@", path, w2, sizeof w2);
        subst(w2, "@CERTS@", certs, want, sizeof want);
        /* rc 1: a warning that nats-server's -t treats as fatal (first one in err); an empty
         * want: a valid config (nats-server accepts it too). */
        if (want[0] == '\0')
            cr_expect_eq(rc, 0, "row %zu:\n%s\nrc %d", i, errors[i].conf, rc);
        else
            cr_expect(rc == -1 || rc == 1, "row %zu:\n%s\nrc %d", i, errors[i].conf, rc);
        cr_expect_str_eq(err, want, "row %zu:\n%s", i, errors[i].conf);
        nd_opts_free(&o);
    }
}

/* Runs the reference's -t on path. Returns: its exit status; out: its first output line,
 * without the "nats-server: " prefix. */
static int
reference(const char *file, char *out, size_t len)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s -t -c '%s' 2>&1", REFERENCE, file);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char line[4096] = "";
    if (fgets(line, sizeof line, p) == NULL)
        line[0] = '\0';
    char rest[4096];
    while (fgets(rest, sizeof rest, p) != NULL) {
    }
    int st = pclose(p);
    line[strcspn(line, "\n")] = '\0';
    const char *l = line;
    if (strncmp(l, "nats-server: ", 13) == 0)
        l += 13;
    snprintf(out, len, "%s", l);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(opts_blocks, error_table_matches_reference)
{
    if (access(REFERENCE, X_OK) != 0)
        cr_skip_test("%s is not installed", REFERENCE);
    for (size_t i = 0; i < NERRORS; i++) {
        if (!errors[i].ref)
            continue;
        char got[4096], want[4096], w2[4096];
        write_conf(errors[i].conf);
        int st = reference(path, got, sizeof got);
        subst(errors[i].want, "@F@", path, w2, sizeof w2);
        subst(w2, "@CERTS@", certs, want, sizeof want);
        if (want[0] == '\0') {
            cr_expect_eq(st, 0, "row %zu:\n%s\n%s", i, errors[i].conf, got);
            continue;
        }
        cr_expect_eq(st, 1, "row %zu:\n%s", i, errors[i].conf);
        cr_expect_str_eq(got, want, "row %zu:\n%s", i, errors[i].conf);
    }
}

/* ---- top-level options ---------------------------------------------------------------------- */

Test(opts_blocks, defaults)
{
    nd_opts_t o;
    nd_opts_defaults(&o);
    cr_assert_eq(o.lame_duck_duration_ms, 120000);
    cr_assert_eq(o.lame_duck_grace_period_ms, 10000);
    cr_assert_eq(o.max_closed_clients, 10000);
    cr_assert_eq(o.connect_error_reports, 3600);
    cr_assert_eq(o.reconnect_error_reports, 1);
    cr_assert_eq(o.max_sub_tokens, 0);
    cr_assert_null(o.tls_cfg);
    cr_assert_null(o.cluster);
    cr_assert_null(o.js);
    cr_assert_eq(o.nusers, 0);
    nd_opts_free(&o);
}

Test(opts_blocks, top_level_scalars)
{
    nd_opts_t o;
    load(&o, "client_advertise: \"c.example.com:4222\"\nserver_tags: [\"a:1\", b]\n"
             "ports_file_dir: /tmp/ports\nhttp: \"127.0.0.1:8222\"\nhttps_port: 8443\n"
             "http_base_path: /mon\nmax_sub_tokens: 32\nlame_duck_duration: \"45s\"\n"
             "lame_duck_grace_period: \"3s\"\nmax_closed_clients: 7\nmax_traced_msg_len: 99\n"
             "no_sublist_cache: true\ntrace_verbose: true\nlogtime_utc: true\n"
             "logfile_size_limit: 1MB\nlogfile_max_num: 4\nsyslog: true\n"
             "remote_syslog: \"udp://127.0.0.1:514\"\nconnect_error_reports: 5\n"
             "reconnect_error_reports: 6\nno_auth_user: bob\nsystem: SYSACC\n"
             "no_system_account: true\nallow_non_tls: true\nprof_block_rate: 3\n"
             "default_js_domain: {A: d1, B: d2}\n");
    cr_assert_str_eq(o.client_advertise, "c.example.com:4222");
    cr_assert_eq(o.server_tags.n, 2);
    cr_assert_str_eq(o.server_tags.v[1], "b");
    cr_assert_str_eq(o.ports_file_dir, "/tmp/ports");
    cr_assert_str_eq(o.http_host, "127.0.0.1");
    cr_assert_eq(o.http_port, 8222);
    cr_assert_eq(o.https_port, 8443);
    cr_assert_str_eq(o.http_base_path, "/mon");
    cr_assert_eq(o.max_sub_tokens, 32);
    cr_assert_eq(o.lame_duck_duration_ms, 45000);
    cr_assert_eq(o.lame_duck_grace_period_ms, 3000);
    cr_assert_eq(o.max_closed_clients, 7);
    cr_assert_eq(o.max_traced_msg_len, 99);
    cr_assert(o.disable_sublist_cache && o.trace_verbose && o.trace && o.logtime_utc);
    cr_assert_eq(o.log_size_limit, 1024 * 1024);
    cr_assert_eq(o.log_max_num, 4);
    cr_assert(o.syslog);
    cr_assert_str_eq(o.remote_syslog, "udp://127.0.0.1:514");
    cr_assert_eq(o.connect_error_reports, 5);
    cr_assert_eq(o.reconnect_error_reports, 6);
    cr_assert_str_eq(o.no_auth_user, "bob");
    cr_assert_str_eq(o.system_account, "SYSACC");
    cr_assert(o.no_system_account && o.allow_non_tls);
    cr_assert_eq(o.prof_block_rate, 3);
    cr_assert_eq(o.js_default_domains.n, 4);
    cr_assert_str_eq(o.js_default_domains.v[0], "A");
    cr_assert_str_eq(o.js_default_domains.v[3], "d2");
    /* Values that take effect are not warned about. */
    cr_assert_null(o.config_warnings, "%s", o.config_warnings);
    nd_opts_free(&o);
}

Test(opts_blocks, listen_forms_and_aliases)
{
    static const struct {
        const char *conf;
        const char *host;
        int port, http_port, https_port;
    } rows[] = {
        {"http: 8222\n", "", 4222, 8222, 0},
        {"https: \"0.0.0.0:8443\"\n", "0.0.0.0", 4222, 0, 8443},
        {"monitor_port: 9000\n", NULL, 4222, 9000, 0},
        {"http_port: -1\n", NULL, 4222, -1, 0},
        {"listen: 5000\n", NULL, 5000, 0, 0},
        {"listen: \"[::1]:5001\"\n", NULL, 5001, 0, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nd_opts_t o;
        load(&o, rows[i].conf);
        cr_expect_eq(o.port, rows[i].port, "%s", rows[i].conf);
        cr_expect_eq(o.http_port, rows[i].http_port, "%s", rows[i].conf);
        cr_expect_eq(o.https_port, rows[i].https_port, "%s", rows[i].conf);
        if (rows[i].host)
            cr_expect_str_eq(o.http_host, rows[i].host, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
}

Test(opts_blocks, lame_duck_durations)
{
    static const struct {
        const char *conf;
        int64_t dur, grace;
    } rows[] = {
        {"lame_duck_duration: \"30s\"\n", 30000, 10000},
        {"lame_duck_duration: \"2h\"\n", 7200000, 10000},
        /* 0 is the default (nats-server's setBaselineOptions; nd_opts_zero_rules). */
        {"lame_duck_duration: \"1m30s\"\nlame_duck_grace_period: \"0s\"\n", 90000, 10000},
        {"lame_duck_grace_period: \"250ms\"\n", 120000, 250},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nd_opts_t o;
        load(&o, rows[i].conf);
        cr_expect_eq(o.lame_duck_duration_ms, rows[i].dur, "%s", rows[i].conf);
        cr_expect_eq(o.lame_duck_grace_period_ms, rows[i].grace, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
}

Test(opts_blocks, ocsp_forms)
{
    nd_opts_t o;
    load(&o, "ocsp: false\n");
    cr_assert(o.ocsp_set);
    cr_assert_eq(o.ocsp_mode, ND_OCSP_NEVER);
    nd_opts_free(&o);
    load(&o, "ocsp: {mode: MUST, url: \"http://ocsp.example.com\"}\n");
    cr_assert_eq(o.ocsp_mode, ND_OCSP_MUST);
    cr_assert_eq(o.ocsp_urls.n, 1);
    cr_assert_str_eq(o.ocsp_urls.v[0], "http://ocsp.example.com");
    cr_assert_not_null(strstr(o.config_warnings, "OCSP stapling is configured but not supported"));
    nd_opts_free(&o);
}

/* ---- tls ------------------------------------------------------------------------------------ */

Test(opts_blocks, tls_forms)
{
    nd_opts_t o;
    load(&o,
         "tls {\n  cert_file: \"@CERTS@/server-cert.pem\"\n  key_file: \"@CERTS@/server-key.pem\"\n"
         "  ca_file: \"@CERTS@/ca.pem\"\n  verify: true\n  timeout: 2.5\n"
         "  cipher_suites: [\"TLS_AES_128_GCM_SHA256\"]\n  curve_preferences: [\"X25519\"]\n"
         "  pinned_certs: [\""
         "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"
         "\"]\n"
         "  connection_rate_limit: 50\n  insecure: true\n}\n");
    nd_tls_opts_t *t = o.tls_cfg;
    cr_assert_not_null(t);
    cr_assert_not_null(strstr(t->cert_file, "server-cert.pem"));
    cr_assert_not_null(strstr(t->key_file, "server-key.pem"));
    cr_assert_not_null(strstr(t->ca_file, "ca.pem"));
    cr_assert(t->verify && t->insecure && !t->verify_and_map);
    cr_assert_float_eq(t->timeout_s, 2.5, 1e-9);
    cr_assert_eq(t->cipher_suites.n, 1);
    cr_assert_str_eq(t->curve_preferences.v[0], "X25519");
    cr_assert_str_eq(t->pinned_certs.v[0],
                     "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
    cr_assert_eq(t->rate_limit, 50);
    /* TLS is built: no "not supported" warning. */
    cr_assert(o.config_warnings == NULL || strstr(o.config_warnings, "TLS is") == NULL);
    nd_opts_free(&o);

    /* verify_and_map implies verify; a duration string is a timeout too; 2.10 keys. */
    load(&o, "tls {\n  verify_and_map: true\n  timeout: \"500ms\"\n  min_version: \"1.3\"\n"
             "  handshake_first: \"300ms\"\n}\n");
    cr_assert(o.tls_cfg->verify && o.tls_cfg->verify_and_map);
    cr_assert_float_eq(o.tls_cfg->timeout_s, 0.5, 1e-9);
    cr_assert_eq(o.tls_cfg->min_version, 0x0304);
    cr_assert(o.tls_cfg->handshake_first);
    cr_assert_eq(o.tls_cfg->fallback_delay_ms, 300);
    nd_opts_free(&o);

    load(&o,
         "tls {\n  handshake_first: auto\n  certs: [\n    {cert_file: \"@CERTS@/server-cert.pem\", "
         "key_file: \"@CERTS@/server-key.pem\"}\n  ]\n}\n");
    cr_assert(o.tls_cfg->handshake_first);
    cr_assert_eq(o.tls_cfg->fallback_delay_ms, 50);
    cr_assert_eq(o.tls_cfg->ncerts, 1);
    nd_opts_free(&o);
}

Test(opts_blocks, tls_2_10_errors)
{
    static const struct {
        const char *conf, *want;
    } rows[] = {
        {"tls {\n  min_version: \"1.1\"\n}\n",
         "2:3: error parsing tls config: unsupported TLS version: TLS 1.1"},
        {"tls {\n  min_version: \"2.0\"\n}\n",
         "2:3: error parsing tls config: unknown version: 2.0"},
        {"tls {\n  min_version: 12\n}\n",
         "2:3: error parsing tls config: 'min_version' wrong type: 12"},
        {"tls {\n  handshake_first: \"maybe\"\n}\n",
         "2:3: field \"handshake_first\"'s value \"maybe\" is invalid"},
        {"tls {\n  first: 5\n}\n",
         "2:3: field \"first\" should be a boolean or a string, got int64"},
        {"tls {\n  certs: 5\n}\n",
         "2:3: error parsing certificates config: unsupported type int64"},
        {"tls {\n  certs: [\n    {cert_file: a}\n  ]\n}\n",
         "3:6: error parsing certificates config: both 'cert_file' and 'cert_key' options are "
         "required"},
        {"tls {\n  certs: [\n    {cert_file: a, foo: b}\n  ]\n}\n",
         "3:20: error parsing tls certs config, unknown field \"foo\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nd_opts_t o;
        char err[1024] = "", want[1200];
        cr_expect_eq(apply(&o, rows[i].conf, err, sizeof err), -1, "%s", rows[i].conf);
        snprintf(want, sizeof want, "%s:%s", path, rows[i].want);
        cr_expect_str_eq(err, want, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
}

/* ---- authorization -------------------------------------------------------------------------- */

Test(opts_blocks, authorization_single_user_and_token)
{
    nd_opts_t o;
    load(&o, "authorization {\n  user: alice\n  password: \"pw\"\n  timeout: 3\n}\n");
    cr_assert_str_eq(o.user, "alice");
    cr_assert_str_eq(o.pass, "pw");
    cr_assert_float_eq(o.auth_timeout_s, 3.0, 1e-9);
    cr_assert_eq(o.nusers, 0);
    nd_opts_free(&o);
    load(&o, "authorization {\n  token: \"s3cr3t\"\n  timeout: 0.5\n}\n");
    cr_assert_str_eq(o.token, "s3cr3t");
    cr_assert_null(o.user);
    cr_assert_float_eq(o.auth_timeout_s, 0.5, 1e-9);
    nd_opts_free(&o);
    /* A non-numeric timeout keeps nats-server's 1 second. */
    load(&o, "authorization {\n  username: u\n  pass: p\n  timeout: \"x\"\n}\n");
    cr_assert_str_eq(o.user, "u");
    cr_assert_float_eq(o.auth_timeout_s, 1.0, 1e-9);
    nd_opts_free(&o);
}

Test(opts_blocks, authorization_users_and_permissions)
{
    nd_opts_t o;
    load(&o, "authorization {\n"
             "  default_permissions: {publish: \"def.>\"}\n"
             "  users: [\n"
             "    {user: a, password: b}\n"
             "    {user: c, password: d, permissions: {\n"
             "      publish: {allow: [\"x.>\", \"y\"], deny: \"x.secret\"}\n"
             "      subscribe: [\"q.* workers\", \"r.>\"]\n"
             "      allow_responses: true\n"
             "    }, allowed_connection_types: [\"standard\", \"WebSocket\"]}\n"
             "    {nkey: UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC}\n"
             "  ]\n"
             "}\n");
    cr_assert_eq(o.nusers, 3);
    nd_user_t *a = &o.users[0], *c = &o.users[1], *n = &o.users[2];
    cr_assert_str_eq(a->name, "a");
    cr_assert_str_eq(a->pass, "b");
    /* Users without permissions get the defaults. */
    cr_assert(a->has_perms && a->perms.pub_set && a->perms.pub.allow_set);
    cr_assert_str_eq(a->perms.pub.allow.v[0], "def.>");
    cr_assert(!a->perms.sub_set);
    cr_assert(c->has_perms);
    cr_assert_eq(c->perms.pub.allow.n, 2);
    cr_assert_str_eq(c->perms.pub.deny.v[0], "x.secret");
    cr_assert(c->perms.sub_set && c->perms.sub.allow_set && !c->perms.sub.deny_set);
    cr_assert_str_eq(c->perms.sub.allow.v[0], "q.* workers");
    cr_assert(c->perms.resp_set);
    cr_assert_eq(c->perms.resp_max_msgs, 1);
    cr_assert_eq(c->perms.resp_expires_ms, 120000);
    cr_assert_eq(c->conn_types, ND_CONN_TYPE_STANDARD | ND_CONN_TYPE_WEBSOCKET);
    cr_assert_str_eq(n->nkey, "UBMVB5IIILFBB2XDHN4XSJOFWPUXJJBNWL3Y5TAS73AHDBMPOV2TQIMC");
    cr_assert_null(n->name);
    cr_assert_null(n->account);
    nd_opts_free(&o);
}

Test(opts_blocks, auth_callout)
{
    nd_opts_t o;
    load(&o, "authorization {\n  auth_callout {\n"
             "    issuer: AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY\n"
             "    auth_users: [auth]\n"
             "    xkey: XAWXCFSCW4TLARABMJ6KT65MGL24QUYPWGIDZRG3AISYOF4SDJEIDFSC\n  }\n"
             "  users: [{user: auth, password: pw}]\n}\n");
    cr_assert_not_null(o.auth_callout);
    cr_assert_str_eq(o.auth_callout->account, "$G");
    cr_assert_str_eq(o.auth_callout->auth_users.v[0], "auth");
    cr_assert_not_null(o.auth_callout->xkey);
    nd_opts_t c;
    nd_opts_copy(&c, &o);
    nd_opts_free(&o);
    cr_assert_str_eq(c.auth_callout->issuer,
                     "AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY");
    nd_opts_free(&c);

    /* nats-server 2.10's texts. */
    static const struct {
        const char *conf, *want;
    } rows[] = {
        {"authorization {\n  auth_callout: 5\n}\n",
         "2:3: Expected authorization callout to be a map/struct, got 5"},
        {"authorization {\n  auth_callout {\n    issuer: ABAD\n  }\n}\n",
         "3:5: Expected callout user to be a valid public account nkey, got \"ABAD\""},
        {"authorization {\n  auth_callout {\n    account: A\n  }\n}\n",
         "3:5: Authorization callouts require an issuer to be specified"},
        {"authorization {\n  auth_callout {\n    issuer: "
         "AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY\n  }\n}\n",
         "3:5: Authorization callouts require authorized users to be specified"},
        {"authorization {\n  auth_callout {\n    foo: 1\n  }\n}\n",
         "3:5: Unknown field \"foo\" parsing authorization callout"},
        {"authorization {\n  auth_callout {\n    xkey: XBAD\n  }\n}\n",
         "3:5: Expected callout xkey to be a valid public xkey, got \"XBAD\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char err[1024] = "", want[1200];
        cr_expect_eq(apply(&o, rows[i].conf, err, sizeof err), -1, "%s", rows[i].conf);
        snprintf(want, sizeof want, "%s:%s", path, rows[i].want);
        cr_expect_str_eq(err, want, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
}

Test(opts_blocks, permission_shapes)
{
    static const struct {
        const char *perms;
        bool pub_set, pub_allow_set;
        size_t pub_allow, pub_deny;
        bool sub_set;
        size_t sub_allow, sub_deny;
        bool resp;
        int64_t resp_max, resp_exp;
    } rows[] = {
        {"publish: \"a\"", true, true, 1, 0, false, 0, 0, false, 0, 0},
        {"pub: [\"a\", \"b.*\"]", true, true, 2, 0, false, 0, 0, false, 0, 0},
        {"import: {deny: \"a\"}", true, false, 0, 1, false, 0, 0, false, 0, 0},
        {"publish: {}", false, false, 0, 0, false, 0, 0, false, 0, 0},
        {"subscribe: \"a\"", false, false, 0, 0, true, 1, 0, false, 0, 0},
        {"sub: {allow: [\"a\", \"b\"], deny: [\"c\"]}", false, false, 0, 0, true, 2, 1, false, 0,
         0},
        {"export: \"foo q1\"", false, false, 0, 0, true, 1, 0, false, 0, 0},
        /* allow_responses makes publish an empty allow list (nothing but replies). */
        {"allow_responses: true", true, true, 0, 0, false, 0, 0, true, 1, 120000},
        {"allow_responses: false", false, false, 0, 0, false, 0, 0, false, 0, 0},
        {"publish_allow_responses: {max: 3, expires: \"10s\"}", true, true, 0, 0, false, 0, 0, true,
         3, 10000},
        {"allow_responses: {max: -1, ttl: \"-1s\"}", true, true, 0, 0, false, 0, 0, true, -1,
         -1000},
        {"allow_responses: {max: 0, expires: \"0s\"}", true, true, 0, 0, false, 0, 0, true, 1,
         120000},
        {"publish: {deny: \"x\"}, allow_responses: true", true, true, 0, 1, false, 0, 0, true, 1,
         120000},
        {"publish: [\"p\"], allow_responses: {max_msgs: 2}", true, true, 1, 0, false, 0, 0, true, 2,
         120000},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "authorization {\n  permissions: {%s}\n}\n", rows[i].perms);
        nd_opts_t o;
        load(&o, text);
        /* Top-level default permissions apply to users only; read them through a user. */
        nd_opts_free(&o);
        snprintf(text, sizeof text,
                 "authorization {\n  users: [\n    {user: u, permissions: {%s}}\n  ]\n}\n",
                 rows[i].perms);
        load(&o, text);
        const nd_perms_t *p = &o.users[0].perms;
        cr_expect_eq(p->pub_set, rows[i].pub_set, "%s", rows[i].perms);
        cr_expect_eq(p->pub.allow_set, rows[i].pub_allow_set, "%s", rows[i].perms);
        cr_expect_eq(p->pub.allow.n, rows[i].pub_allow, "%s", rows[i].perms);
        cr_expect_eq(p->pub.deny.n, rows[i].pub_deny, "%s", rows[i].perms);
        cr_expect_eq(p->sub_set, rows[i].sub_set, "%s", rows[i].perms);
        cr_expect_eq(p->sub.allow.n, rows[i].sub_allow, "%s", rows[i].perms);
        cr_expect_eq(p->sub.deny.n, rows[i].sub_deny, "%s", rows[i].perms);
        cr_expect_eq(p->resp_set, rows[i].resp, "%s", rows[i].perms);
        if (rows[i].resp) {
            cr_expect_eq(p->resp_max_msgs, rows[i].resp_max, "%s", rows[i].perms);
            cr_expect_eq(p->resp_expires_ms, rows[i].resp_exp, "%s", rows[i].perms);
        }
        nd_opts_free(&o);
    }
}

/* ---- accounts and mappings ------------------------------------------------------------------ */

static const nd_account_opts_t *
account(const nd_opts_t *o, const char *name)
{
    for (size_t i = 0; i < o->naccounts; i++)
        if (strcmp(o->accounts[i].name, name) == 0)
            return &o->accounts[i];
    cr_assert_fail("no account %s", name);
    return NULL;
}

Test(opts_blocks, accounts_array_form)
{
    nd_opts_t o;
    load(&o, "accounts: [A, B, \"C\"]\n");
    cr_assert_eq(o.naccounts, 3);
    cr_assert_str_eq(o.accounts[2].name, "C");
    cr_assert_eq(o.accounts[0].max_connections, -1);
    cr_assert_eq(o.accounts[0].js.max_memory, -1);
    cr_assert(!o.accounts[0].js.enabled);
    nd_opts_free(&o);
}

Test(opts_blocks, account_jetstream_forms)
{
    static const struct {
        const char *js;
        bool enabled;
        int64_t mem, store, streams;
        bool bytes_required;
    } rows[] = {
        {"true", true, -1, -1, -1, false},
        {"false", false, -1, -1, -1, false},
        {"enabled", true, -1, -1, -1, false},
        {"\"Disable\"", false, -1, -1, -1, false},
        {"{max_mem: 1MB, max_file: 2GB, max_streams: 3}", true, 1 << 20, 2LL << 30, 3, false},
        {"{memory: 5, disk: 6, streams: 7, max_bytes: true}", true, 5, 6, 7, true},
        {"{}", true, -1, -1, -1, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "accounts {\n  A: {\n    jetstream: %s\n  }\n}\n", rows[i].js);
        nd_opts_t o;
        load(&o, text);
        const nd_acct_js_t *j = &account(&o, "A")->js;
        cr_expect_eq(j->enabled, rows[i].enabled, "%s", rows[i].js);
        cr_expect_eq(j->max_memory, rows[i].mem, "%s", rows[i].js);
        cr_expect_eq(j->max_store, rows[i].store, "%s", rows[i].js);
        cr_expect_eq(j->max_streams, rows[i].streams, "%s", rows[i].js);
        cr_expect_eq(j->max_bytes_required, rows[i].bytes_required, "%s", rows[i].js);
        nd_opts_free(&o);
    }
}

Test(opts_blocks, exports_and_imports)
{
    nd_opts_t o;
    load(&o, "accounts {\n"
             "  A: {\n"
             "    exports: [\n"
             "      {stream: \"s.>\"}\n"
             "      {stream: \"acc.*.events\", account_token_position: 2}\n"
             "      {service: \"svc.*\", accounts: [B], response_type: stream, threshold: \"5s\"}\n"
             "      {service: \"chunks\", response: chunked, latency: \"lat.chunks\"}\n"
             "      {service: \"hdr\", latency: {sampling: headers, subject: \"lat.hdr\"}}\n"
             "    ]\n"
             "  }\n"
             "  B: {\n"
             "    imports: [\n"
             "      {stream: {account: A, subject: \"s.>\"}, prefix: \"from_a\"}\n"
             "      {stream: {account: A, subject: \"acc.B.events\"}, to: \"my.events\"}\n"
             "      {service: {account: A, subject: \"svc.x\"}, to: \"local.x\", share: true}\n"
             "      {service: {account: A, subject: \"chunks\"}}\n"
             "    ]\n"
             "  }\n"
             "}\n");
    const nd_account_opts_t *a = account(&o, "A"), *b = account(&o, "B");
    cr_assert_eq(a->nexports, 5);
    cr_assert(!a->exports[0].service);
    cr_assert_eq(a->exports[0].accounts.n, 0);
    cr_assert_eq(a->exports[1].account_token_position, 2);
    cr_assert(a->exports[2].service);
    cr_assert_str_eq(a->exports[2].accounts.v[0], "B");
    cr_assert_eq(a->exports[2].resp_type, ND_RESP_STREAM);
    cr_assert_eq(a->exports[2].resp_threshold_ms, 5000);
    cr_assert_eq(a->exports[3].resp_type, ND_RESP_CHUNKED);
    cr_assert_str_eq(a->exports[3].latency_subject, "lat.chunks");
    cr_assert_eq(a->exports[3].latency_sampling, 100);
    cr_assert_eq(a->exports[4].latency_sampling, 0);
    cr_assert_eq(b->nimports, 4);
    cr_assert(!b->imports[0].service);
    cr_assert_str_eq(b->imports[0].account, "A");
    cr_assert_str_eq(b->imports[0].prefix, "from_a");
    cr_assert_str_eq(b->imports[1].to, "my.events");
    cr_assert(b->imports[2].service && b->imports[2].share);
    cr_assert_str_eq(b->imports[2].to, "local.x");
    /* A service import without `to` keeps the exported subject. */
    cr_assert_str_eq(b->imports[3].to, "chunks");
    nd_opts_free(&o);
}

Test(opts_blocks, import_resolution_errors)
{
    static const struct {
        const char *conf, *want;
    } rows[] = {
        /* An account-token export admits only the account named at that token. */
        {"accounts {\n  A: {\n    exports: [{stream: \"acc.*.events\", account_token_position: "
         "2}]\n"
         "  }\n  B: {\n    imports: [{stream: {account: A, subject: \"acc.C.events\"}}]\n  }\n}\n",
         "1:0: Error adding stream import \"acc.C.events\": stream import not authorized"},
        {"accounts {\n  A: {\n    exports: [{stream: \"s\"}]\n  }\n  B: {\n    imports: [\n"
         "      {stream: {account: A, subject: \"s\"}}\n      {stream: {account: A, subject: "
         "\"s\"}}\n"
         "    ]\n  }\n}\n",
         "1:0: Error adding stream import \"s\": stream import already exists"},
        {"accounts {\n  A: {\n    exports: [{service: \"s\", latency: \"bad..subject\"}]\n  }\n}\n",
         "1:0: Error adding service latency sampling for \"s\" on subject \"bad..subject\": "
         "invalid "
         "publish subject"},
        {"no_system_account: true\naccounts {\n  A: {\n    exports: [{service: \"s\", latency: "
         "\"lat\"}]\n  }\n}\n",
         "2:1: Error adding service latency sampling for \"s\": system account not setup"},
        {"accounts {\n  A: {\n    exports: [{stream: \"s\"}]\n  }\n  B: {\n    imports: [\n"
         "      {stream: {account: A, subject: \"s\"}, prefix: \"p\", to: \"t\"}\n    ]\n  }\n}\n",
         "7:57: Stream import can not have a 'prefix' and a 'to' property"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nd_opts_t o;
        char err[1024] = "", want[1200];
        cr_expect_eq(apply(&o, rows[i].conf, err, sizeof err), -1, "%s", rows[i].conf);
        snprintf(want, sizeof want, "%s:%s", path, rows[i].want);
        cr_expect_str_eq(err, want, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
}

Test(opts_blocks, account_users_limits_and_defaults)
{
    nd_opts_t o;
    load(&o,
         "authorization {\n  users: [{user: top, password: t}]\n}\n"
         "accounts {\n  A: {\n    nkey: AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY\n"
         "    users: [{user: u1, password: p1}, {user: u2, password: p2, permissions: "
         "{publish: \"own\"}}]\n"
         "    default_permissions: {subscribe: \"def\"}\n"
         "    limits: {max_conn: 10, max_subs: 20, max_pay: 30, max_leafs: 40}\n  }\n}\n");
    cr_assert_eq(o.nusers, 3);
    cr_assert_null(o.users[0].account);
    cr_assert_str_eq(o.users[1].account, "A");
    cr_assert_str_eq(o.users[1].perms.sub.allow.v[0], "def");
    cr_assert(!o.users[2].perms.sub_set);
    cr_assert_str_eq(o.users[2].perms.pub.allow.v[0], "own");
    const nd_account_opts_t *a = account(&o, "A");
    cr_assert_str_eq(a->nkey, "AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY");
    cr_assert_eq(a->max_connections, 10);
    cr_assert_eq(a->max_subscriptions, 20);
    cr_assert_eq(a->max_payload, 30);
    cr_assert_eq(a->max_leafnodes, 40);
    nd_opts_free(&o);
}

Test(opts_blocks, mapping_forms)
{
    nd_opts_t o;
    load(&o, "mappings {\n"
             "  plain: \"dest\"\n"
             "  \"orders.*\": \"orders.{{wildcard(1)}}.v2\"\n"
             "  \"legacy.*\": \"new.$1\"\n"
             "  one: {destination: single, weight: 40}\n"
             "  canary: [\n"
             "    {destination: v1, weight: \"80%\"}\n"
             "    {destination: v2, weight: 20, cluster: east}\n"
             "  ]\n"
             "  \"part.*\": \"part.{{partition(3,1)}}.{{wildcard(1)}}\"\n"
             "}\n");
    cr_assert_eq(o.naccounts, 1);
    const nd_account_opts_t *g = account(&o, "$G");
    cr_assert_eq(g->nmappings, 6);
    cr_assert(!g->mappings[0].weighted);
    cr_assert_eq(g->mappings[0].dests[0].weight, 100);
    cr_assert_str_eq(g->mappings[1].dests[0].subject, "orders.{{wildcard(1)}}.v2");
    cr_assert(g->mappings[3].weighted);
    cr_assert_eq(g->mappings[3].dests[0].weight, 40);
    cr_assert_eq(g->mappings[4].ndests, 2);
    cr_assert_eq(g->mappings[4].dests[0].weight, 80);
    cr_assert_str_eq(g->mappings[4].dests[1].cluster, "east");
    cr_assert_not_null(
        strstr(o.config_warnings, "Subject mapping is configured but not supported"));
    nd_opts_free(&o);
}

/* ---- cluster, gateway, leafnodes ------------------------------------------------------------ */

Test(opts_blocks, cluster_forms)
{
    nd_opts_t o;
    load(&o, "cluster {\n  name: c1\n  host: 10.0.0.1\n  port: 6333\n"
             "  routes: [\"nats://a:1\", \" nats://b:2 \"]\n  pool_size: -1\n"
             "  accounts: [A, B]\n  compression: s2_fast\n  ping_interval: \"15s\"\n  ping_max: 4\n"
             "  permissions: {import: \"i.>\", export: {deny: \"e\"}}\n}\n");
    nd_cluster_opts_t *c = o.cluster;
    cr_assert_str_eq(c->name, "c1");
    cr_assert_str_eq(c->host, "10.0.0.1");
    cr_assert_eq(c->port, 6333);
    cr_assert_eq(c->routes.n, 2);
    cr_assert_str_eq(c->routes.v[1], "nats://b:2");
    cr_assert_eq(c->pool_size, -1);
    cr_assert_eq(c->pinned_accounts.n, 2);
    cr_assert_str_eq(c->compression, "s2_fast");
    cr_assert_eq(c->ping_interval_ms, 15000);
    cr_assert_eq(c->ping_max, 4);
    cr_assert(c->has_perms && c->perms.pub_set && c->perms.sub.deny_set);
    nd_opts_free(&o);

    /* Permissions inside the authorization block: deprecated (a -t warning), still applied. */
    char err[1024] = "";
    cr_assert_eq(apply(&o,
                       "cluster {\n  authorization {\n    user: r\n    password: p\n"
                       "    permissions: {publish: \"x\"}\n  }\n}\n",
                       err, sizeof err),
                 1);
    cr_assert_not_null(strstr(err, "setting \"permissions\" within cluster authorization block"));
    cr_assert_str_eq(o.cluster->user, "r");
    cr_assert(o.cluster->has_perms);
    cr_assert_str_eq(o.cluster->perms.pub.allow.v[0], "x");
    nd_opts_free(&o);

    /* listen with a port only clears the host, as nats-server does. */
    load(&o, "cluster {\n  host: h\n  listen: 7000\n}\n");
    cr_assert_str_eq(o.cluster->host, "");
    cr_assert_eq(o.cluster->port, 7000);
    nd_opts_free(&o);
}

Test(opts_blocks, leafnode_forms)
{
    nd_opts_t o;
    setenv("HOME", "/home/nd", 1);
    load(&o,
         "leafnodes {\n  port: 7422\n  reconnect_interval: \"2s\"\n  compression: off\n"
         "  authorization {\n    user: l\n    password: p\n    account: ACC\n    timeout: 4\n  }\n"
         "  remotes: [\n    {url: \"nats://h:7422\", creds: \"~/x.creds\", local: ACC,\n"
         "     js_cluster_migrate: false, first_info_timeout: \"3s\", compression: s2_auto},\n"
         "    {url: \"nats://h2:7422\", nkey: \"SUAKEY\"}\n  "
         "]\n}\n");
    nd_leaf_opts_t *l = o.leaf;
    cr_assert_eq(l->port, 7422);
    cr_assert_eq(l->reconnect_ms, 2000);
    cr_assert_str_eq(l->compression, "off");
    cr_assert_str_eq(l->user, "l");
    cr_assert_str_eq(l->account, "ACC");
    cr_assert_float_eq(l->auth_timeout_s, 4.0, 1e-9);
    cr_assert_eq(l->nremotes, 2);
    cr_assert_str_eq(l->remotes[0].urls.v[0], "nats://h:7422");
    cr_assert_str_eq(l->remotes[1].nkey, "SUAKEY"); /* 2.10's remote nkey seed */
    cr_assert_str_eq(l->remotes[0].credentials, "/home/nd/x.creds");
    cr_assert_str_eq(l->remotes[0].account, "ACC");
    /* nats-server turns migration on whatever the value. */
    cr_assert(l->remotes[0].js_cluster_migrate);
    cr_assert_eq(l->remotes[0].first_info_timeout_ms, 3000);
    nd_opts_free(&o);
}

/* ---- jetstream, mqtt, websocket ------------------------------------------------------------- */

Test(opts_blocks, jetstream_forms)
{
    static const struct {
        const char *conf;
        bool enabled;
        int64_t mem, store;
    } rows[] = {
        {"jetstream: true\n", true, -2, -2},
        {"jetstream: enabled\n", true, -2, -2},
        {"jetstream: \"DISABLE\"\n", false, -2, -2},
        {"jetstream {\n  max_mem: 1G\n}\n", true, 1000000000, -1},
        {"jetstream {\n  max_mem: \"1G\"\n  max_file: \"2T\"\n}\n", true, 1LL << 30, 2LL << 40},
        {"jetstream {\n  max_memory_store: \"\"\n}\n", true, 0, -1},
        {"jetstream {\n  enabled: false\n  max_file_store: 5\n}\n", false, -1, 5},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        nd_opts_t o;
        load(&o, rows[i].conf);
        cr_expect_eq(o.jetstream, rows[i].enabled, "%s", rows[i].conf);
        if (rows[i].mem != -2) {
            cr_assert_not_null(o.js);
            cr_expect_eq(o.js->max_memory, rows[i].mem, "%s", rows[i].conf);
            cr_expect_eq(o.js->max_store, rows[i].store, "%s", rows[i].conf);
        }
        /* JetStream is built: no "not supported" warning, enabled or not. */
        cr_expect_null(o.config_warnings, "%s", rows[i].conf);
        nd_opts_free(&o);
    }
    nd_opts_t o;
    load(&o, "jetstream {\n  sync_interval: always\n  request_queue_limit: 500\n"
             "  prev_key: old\n  cipher: chachapoly\n  strict: true\n"
             "  max_buffered_size: \"64M\"\n  max_buffered_msgs: 1000\n}\n");
    cr_assert(o.js->strict);
    cr_assert_eq(o.js->max_buffered_size, 64LL << 20);
    cr_assert_eq(o.js->max_buffered_msgs, 1000);
    cr_assert(o.js->sync_always);
    cr_assert_eq(o.js->request_queue_limit, 500);
    cr_assert_str_eq(o.js->prev_key, "old");
    cr_assert_eq(o.js->cipher, ND_JS_CIPHER_CHACHA);
    nd_opts_free(&o);
    load(&o, "store_dir: /data\njetstream: true\n");
    cr_assert_str_eq(o.store_dir, "/data");
    nd_opts_free(&o);
    char err[1024];
    cr_assert_eq(apply(&o, "jetstream {\n  sync: 30\n}\n", err, sizeof err), 1);
    cr_assert_eq(o.js->sync_interval_ms, 30000);
    nd_opts_free(&o);
}

Test(opts_blocks, mqtt_and_websocket_forms)
{
    nd_opts_t o;
    load(&o, "mqtt {\n  port: 1883\n  max_pending: 65535\n  ackwait: \"45s\"\n"
             "  consumer_auto_cleanup: \"1h\"\n  reject_qos2_publish: true\n"
             "  downgrade_qos2_subscribe: true\n  authentication { token: t }\n}\n");
    cr_assert_eq(o.mqtt->port, 1883);
    cr_assert_eq(o.mqtt->max_ack_pending, 65535);
    cr_assert_eq(o.mqtt->ack_wait_ms, 45000);
    cr_assert_eq(o.mqtt->consumer_inactive_threshold_ms, 3600000);
    cr_assert(o.mqtt->reject_qos2_publish && o.mqtt->downgrade_qos2_subscribe);
    cr_assert_str_eq(o.mqtt->token, "t");
    /* MQTT is built: no "not supported yet" warning. */
    cr_assert(o.config_warnings == NULL || strstr(o.config_warnings, "MQTT") == NULL);
    nd_opts_free(&o);
    load(&o, "ws {\n  listen: \"127.0.0.1:8080\"\n  origin: \"https://a\"\n  handshake_timeout: 7\n"
             "  compress: true\n  user_cookie: u\n  headers: {X-A: \"1\"}\n}\n");
    cr_assert_str_eq(o.ws->host, "127.0.0.1");
    cr_assert_eq(o.ws->port, 8080);
    cr_assert_str_eq(o.ws->allowed_origins.v[0], "https://a");
    cr_assert_eq(o.ws->handshake_timeout_ms, 7000);
    cr_assert(o.ws->compression);
    cr_assert_str_eq(o.ws->user_cookie, "u");
    cr_assert_eq(o.ws->headers.n, 2);
    nd_opts_free(&o);
}

/* ---- operator mode -------------------------------------------------------------------------- */

Test(opts_blocks, resolver_forms)
{
    nd_opts_t o;
    load(&o, "resolver: MEMORY\n");
    cr_assert_eq(o.resolver->type, ND_RESOLVER_MEM);
    nd_opts_free(&o);
    load(&o, "resolver: URL(\"http://127.0.0.1:9090/jwt/v1/accounts/\")\n");
    cr_assert_eq(o.resolver->type, ND_RESOLVER_URL);
    cr_assert_str_eq(o.resolver->url, "http://127.0.0.1:9090/jwt/v1/accounts/");
    nd_opts_free(&o);
    load(&o, "resolver: {type: full, dir: \"/nonexistent/jwt\", allow_delete: true, "
             "interval: \"2m\", timeout: \"1.9s\", limit: 1000}\n");
    cr_assert_eq(o.resolver->type, ND_RESOLVER_FULL);
    cr_assert_str_eq(o.resolver->dir, "/nonexistent/jwt");
    cr_assert(o.resolver->allow_delete);
    cr_assert_eq(o.resolver->interval_ms, 120000);
    cr_assert_eq(o.resolver->timeout_ms, 1900);
    cr_assert_eq(o.resolver->limit, 1000);
    nd_opts_free(&o);
    load(&o, "resolver: {type: cache, dir: \"/tmp\", ttl: \"1h\"}\n"
             "resolver_pinned_accounts: AAHTLQBFEJUE3ABBGFFBGALI6QWX7HUKRF4BL2ZISZXML3MN3I4MYSTY\n"
             "trusted: [OAXXRWVBP3T5JJ4VQAUCKSETBALECXGS6M7D2WYP4XN4PQZ4SLTHAY4K]\n");
    cr_assert_eq(o.resolver->type, ND_RESOLVER_CACHE);
    cr_assert_eq(o.resolver->ttl_ms, 3600000);
    cr_assert_eq(o.resolver_pinned_accounts.n, 1);
    cr_assert_eq(o.trusted_keys.n, 1);
    cr_assert_not_null(strstr(o.config_warnings, "Operator mode is configured but not supported"));
    nd_opts_free(&o);
}

/* ---- the corpus ----------------------------------------------------------------------------- */

static void
load_file(nd_opts_t *o, const char *name)
{
    char p[1400], err[2048] = "";
    snprintf(p, sizeof p, "%s/%s", datadir, name);
    nd_opts_defaults(o);
    int rc = nd_opts_apply_config(o, p, err, sizeof err);
    cr_assert_eq(rc, 0, "%s: rc %d: %s", name, rc, err);
}

Test(opts_blocks, corpus_cluster)
{
    nd_opts_t o;
    load_file(&o, "cluster.conf");
    nd_cluster_opts_t *c = o.cluster;
    cr_assert_str_eq(o.server_name, "n1");
    cr_assert_str_eq(c->name, "east");
    cr_assert_str_eq(c->host, "0.0.0.0");
    cr_assert_eq(c->port, 6222);
    cr_assert_str_eq(c->advertise, "n1.example.com:6222");
    cr_assert(c->no_advertise);
    cr_assert_eq(c->connect_retries, 10);
    cr_assert_str_eq(c->user, "route_user");
    cr_assert_str_eq(c->pass, "s3cr3t");
    cr_assert_float_eq(c->auth_timeout_s, 2.5, 1e-9);
    cr_assert(c->has_perms);
    cr_assert_eq(c->perms.pub.allow.n, 2);
    cr_assert_str_eq(c->perms.sub.deny.v[0], "_SYS.>");
    cr_assert_eq(c->routes.n, 2);
    cr_assert_str_eq(c->routes.v[0], "nats-route://route_user:s3cr3t@n2.example.com:6222");
    cr_assert_not_null(c->tls);
    cr_assert(c->tls->verify);
    cr_assert_float_eq(c->tls->timeout_s, 3.0, 1e-9);
    cr_assert_not_null(strstr(c->tls->ca_file, "ca.pem"));
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_tls)
{
    nd_opts_t o;
    load_file(&o, "tls.conf");
    cr_assert_eq(o.port, 4443);
    nd_tls_opts_t *t = o.tls_cfg;
    cr_assert(t->verify && t->verify_and_map);
    cr_assert_eq(t->cipher_suites.n, 2);
    cr_assert_str_eq(t->cipher_suites.v[1], "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384");
    cr_assert_eq(t->curve_preferences.n, 2);
    cr_assert_float_eq(t->timeout_s, 1.5, 1e-9);
    cr_assert_eq(t->pinned_certs.n, 1);
    cr_assert_eq(t->rate_limit, 100);
    cr_assert(!o.allow_non_tls);
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_accounts)
{
    nd_opts_t o;
    load_file(&o, "accounts.conf");
    cr_assert_eq(o.naccounts, 4); /* ORDERS, BILLING, SYS, $G */
    const nd_account_opts_t *ord = account(&o, "ORDERS"), *bil = account(&o, "BILLING");
    cr_assert_eq(ord->nexports, 3);
    cr_assert_eq(ord->exports[1].resp_threshold_ms, 3000);
    cr_assert_str_eq(ord->exports[1].accounts.v[0], "BILLING");
    cr_assert_eq(ord->exports[2].latency_sampling, 50);
    cr_assert_eq(ord->nmappings, 2);
    cr_assert_eq(ord->mappings[1].ndests, 2);
    cr_assert_eq(ord->mappings[1].dests[1].weight, 10);
    cr_assert_eq(ord->max_connections, 100);
    cr_assert_eq(ord->max_payload, 65536);
    cr_assert_eq(bil->nimports, 2);
    cr_assert_str_eq(bil->imports[0].prefix, "from_orders");
    cr_assert_str_eq(bil->imports[1].to, "lookup");
    cr_assert(bil->js.enabled);
    cr_assert_eq(bil->js.max_memory, 1000000000);
    cr_assert_eq(bil->js.max_streams, 10);
    cr_assert_eq(account(&o, "$G")->nmappings, 1);
    cr_assert_eq(o.nusers, 4);
    cr_assert_str_eq(o.users[0].account, "ORDERS");
    cr_assert_str_eq(o.users[0].pass,
                     "$2a$11$W2zko751KUvVy59mUTWmpOdWZpVAyFsb8ROzRNVAsoXf7Hyf5SIra");
    cr_assert(o.users[1].perms.pub.deny_set);
    cr_assert_not_null(o.users[2].nkey);
    cr_assert_str_eq(o.users[2].account, "BILLING");
    cr_assert(o.users[2].perms.resp_set);
    cr_assert_eq(o.users[2].perms.resp_max_msgs, 5);
    cr_assert_eq(o.users[2].perms.resp_expires_ms, 60000);
    /* Its own permissions win over BILLING's defaults. */
    cr_assert_str_eq(o.users[2].perms.pub.allow.v[0], "billing.>");
    cr_assert_str_eq(o.users[3].name, "admin");
    cr_assert_str_eq(o.system_account, "SYS");
    cr_assert_str_eq(o.no_auth_user, "orders_ro");
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_jetstream)
{
    nd_opts_t o;
    load_file(&o, "jetstream.conf");
    cr_assert(o.jetstream);
    cr_assert_str_eq(o.store_dir, "/var/lib/nats/js1");
    cr_assert_eq(o.js->max_memory, 2000000000);
    cr_assert_eq(o.js->max_store, 512LL << 20);
    cr_assert_str_eq(o.js->domain, "hub");
    cr_assert_eq(o.js->cipher, ND_JS_CIPHER_AES);
    cr_assert_str_eq(o.js->unique_tag, "az");
    cr_assert_eq(o.js->max_outstanding_catchup, 64LL << 20);
    cr_assert_eq(o.js->max_ack_pending, 20000);
    cr_assert_eq(o.js->max_ha_assets, 100);
    cr_assert_eq(o.js->max_request_batch, 512);
    cr_assert_eq(o.js->duplicate_window_ms, 300000);
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_leafnodes)
{
    nd_opts_t o;
    setenv("HOME", "/home/nd", 1);
    load_file(&o, "leafnodes.conf");
    nd_leaf_opts_t *l = o.leaf;
    cr_assert_str_eq(l->host, "0.0.0.0");
    cr_assert_eq(l->port, 7422);
    cr_assert_eq(l->reconnect_ms, 5000);
    cr_assert_str_eq(l->min_version, "2.8.0");
    cr_assert_eq(l->nusers, 2);
    cr_assert_str_eq(l->users[1].account, "TENANT_B");
    cr_assert_float_eq(l->auth_timeout_s, 3.0, 1e-9);
    cr_assert_eq(l->nremotes, 2);
    cr_assert_eq(l->remotes[0].urls.n, 2);
    cr_assert_str_eq(l->remotes[0].credentials, "/home/nd/.nats/tenant_a.creds");
    cr_assert_eq(l->remotes[0].deny_imports.n, 2);
    cr_assert_str_eq(l->remotes[0].deny_exports.v[0], "private.>");
    cr_assert(l->remotes[0].no_randomize && !l->remotes[0].hub);
    cr_assert(l->remotes[1].ws_compression && l->remotes[1].ws_no_masking);
    cr_assert(l->remotes[1].tls && l->remotes[1].tls->insecure);
    cr_assert_eq(o.naccounts, 2);
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_mqtt_websocket_gateway)
{
    nd_opts_t o;
    load_file(&o, "mqtt.conf");
    cr_assert(o.jetstream);
    cr_assert_str_eq(o.mqtt->host, "127.0.0.1");
    cr_assert_eq(o.mqtt->port, 1883);
    cr_assert_str_eq(o.mqtt->user, "mq");
    cr_assert_eq(o.mqtt->ack_wait_ms, 60000);
    cr_assert_eq(o.mqtt->max_ack_pending, 100);
    cr_assert_str_eq(o.mqtt->js_domain, "hub");
    cr_assert(o.mqtt->consumer_memory_storage);
    cr_assert_eq(o.mqtt->consumer_inactive_threshold_ms, 600000);
    nd_opts_free(&o);

    load_file(&o, "websocket.conf");
    cr_assert_eq(o.ws->port, 8080);
    cr_assert(o.ws->no_tls && !o.ws->same_origin && o.ws->compression);
    cr_assert_eq(o.ws->allowed_origins.n, 2);
    cr_assert_eq(o.ws->handshake_timeout_ms, 5000);
    cr_assert_str_eq(o.ws->jwt_cookie, "nats_jwt");
    cr_assert_str_eq(o.ws->token, "ws-token");
    cr_assert_float_eq(o.ws->auth_timeout_s, 2.0, 1e-9);
    nd_opts_free(&o);

    load_file(&o, "gateway.conf");
    cr_assert_str_eq(o.gateway->name, "east");
    cr_assert_eq(o.gateway->port, 7222);
    cr_assert(o.gateway->reject_unknown);
    cr_assert_eq(o.gateway->connect_retries, 5);
    cr_assert_str_eq(o.gateway->user, "gw");
    cr_assert_eq(o.gateway->ngateways, 2);
    cr_assert_eq(o.gateway->gateways[0].urls.n, 2);
    cr_assert_str_eq(o.gateway->gateways[1].urls.v[0], "nats://gw.south.example.com:7222");
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_operator)
{
    nd_opts_t o;
    load_file(&o, "operator.conf");
    cr_assert_eq(o.operators.n, 1);
    cr_assert_eq(o.resolver->type, ND_RESOLVER_MEM);
    cr_assert_eq(o.resolver_preload.n, 4);
    cr_assert_str_eq(o.system_account, "AAORMDK2AR63UGHSSXZ6M2GCWXNBR7AVQUOV3V2DGVEW74FZIXYBRJKM");
    nd_opts_free(&o);
}

Test(opts_blocks, corpus_monitoring)
{
    nd_opts_t o;
    load_file(&o, "monitoring.conf");
    cr_assert_str_eq(o.http_host, "127.0.0.1");
    cr_assert_eq(o.http_port, 8222);
    cr_assert_str_eq(o.http_base_path, "/nats");
    cr_assert_eq(o.max_payload, 2 << 20);
    cr_assert_eq(o.max_control_line, 8192);
    cr_assert_eq(o.max_sub_tokens, 64);
    cr_assert_eq(o.lame_duck_duration_ms, 60000);
    cr_assert_eq(o.lame_duck_grace_period_ms, 5000);
    cr_assert_eq(o.max_closed_clients, 500);
    cr_assert(o.logtime_utc);
    cr_assert_eq(o.log_size_limit, 100 << 20);
    cr_assert_eq(o.log_max_num, 5);
    cr_assert_str_eq(o.user, "admin");
    cr_assert_float_eq(o.auth_timeout_s, 1.5, 1e-9);
    cr_assert_eq(o.server_tags.n, 2);
    nd_opts_free(&o);
}

/* Corpus files and nats-server 2.9.10's verdict on them (NULL = valid); files using keys that
 * only later nats-server versions know are checked by natsd alone. */
static const struct {
    const char *file;
    const char *error; /* after "<path>:" */
    bool later;        /* uses keys 2.9.10 does not know, or its verdict is not stable */
} corpus[] = {
    {"cluster.conf", NULL, false},
    {"tls.conf", NULL, false},
    {"accounts.conf", NULL, false},
    {"jetstream.conf", NULL, false},
    {"leafnodes.conf", NULL, false},
    {"mqtt.conf", NULL, false},
    {"websocket.conf", NULL, false},
    {"operator.conf", NULL, false},
    {"gateway.conf", NULL, false},
    {"monitoring.conf", NULL, true},
    /* nats-server resolves imports in Go's random map order, so it finds this cycle only on
     * most runs: natsd alone checks it. */
    {"bad_import_cycle.conf", "2:1: Error adding service import \"a.b\": import forms a cycle",
     true},
    {"bad_tls_key.conf", "2:1: missing 'key_file' in TLS configuration", false},
    {"bad_unauthorized_import.conf",
     "2:1: Error adding stream import \"a.>\": stream import not authorized", false},
};

Test(opts_blocks, corpus_verdicts)
{
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        char p[1400], err[2048] = "", want[2048];
        snprintf(p, sizeof p, "%s/%s", datadir, corpus[i].file);
        nd_opts_t o;
        nd_opts_defaults(&o);
        int rc = nd_opts_apply_config(&o, p, err, sizeof err);
        if (corpus[i].error == NULL) {
            cr_expect_eq(rc, 0, "%s: %s", corpus[i].file, err);
        } else {
            snprintf(want, sizeof want, "%s:%s", p, corpus[i].error);
            cr_expect_eq(rc, -1, "%s", corpus[i].file);
            cr_expect_str_eq(err, want, "%s", corpus[i].file);
        }
        nd_opts_free(&o);
    }
}

Test(opts_blocks, corpus_matches_reference)
{
    if (access(REFERENCE, X_OK) != 0)
        cr_skip_test("%s is not installed", REFERENCE);
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        if (corpus[i].later)
            continue;
        char p[1400], got[4096], want[4096];
        snprintf(p, sizeof p, "%s/%s", datadir, corpus[i].file);
        int st = reference(p, got, sizeof got);
        if (corpus[i].error == NULL) {
            cr_expect_eq(st, 0, "%s: %s", corpus[i].file, got);
        } else {
            snprintf(want, sizeof want, "%s:%s", p, corpus[i].error);
            cr_expect_eq(st, 1, "%s", corpus[i].file);
            cr_expect_str_eq(got, want, "%s", corpus[i].file);
        }
    }
}

/* Every `key: value` line of the valid corpus files, with its value replaced by values of every
 * type: each variant must parse or fail cleanly, with a text, and leave freeable options (ASan
 * and UBSan builds check the rest). Offline, the same 936 variants were compared with
 * nats-server 2.9.10: all agree except the two 2.10 forms natsd accepts (a duration string for
 * leafnodes' reconnect) and array lines this generator breaks (parser-level differences). */
Test(opts_blocks, wrong_types_never_crash)
{
    static const char *const vals[] = {"5",   "\"x\"", "true",   "{}",     "[]",
                                       "1.5", "-1",    "\"5s\"", "{a: 1}", "[1, \"b\"]"};
    size_t variants = 0;
    for (size_t f = 0; f < sizeof corpus / sizeof corpus[0]; f++) {
        if (corpus[f].error != NULL)
            continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", datadir, corpus[f].file);
        FILE *in = fopen(p, "r");
        cr_assert_not_null(in);
        static char text[16384];
        size_t n = fread(text, 1, sizeof text - 1, in);
        fclose(in);
        text[n] = '\0';
        for (char *line = text; line && *line;) {
            char *eol = strchr(line, '\n');
            size_t len = eol ? (size_t)(eol - line) : strlen(line);
            char *sep = memchr(line, ':', len);
            const char *k = line;
            while (k < line + len && (*k == ' ' || *k == '\t'))
                k++;
            bool keyish = sep && k < sep && (*k == '_' || (*k >= 'a' && *k <= 'z'));
            char last = len ? line[len - 1] : 0;
            if (keyish && last != '{' && last != '[' && last != ',') {
                for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                    static char mut[17000];
                    int m = snprintf(mut, sizeof mut, "%.*s: %s%s", (int)(sep - text), text,
                                     vals[v], eol ? eol : "");
                    cr_assert(m > 0 && (size_t)m < sizeof mut);
                    nd_opts_t o;
                    char err[4096] = "";
                    int rc = apply(&o, mut, err, sizeof err);
                    cr_expect(rc >= -1 && rc <= 1);
                    cr_expect(rc == 0 || err[0] != '\0', "%s line %.*s -> %s", corpus[f].file,
                              (int)len, line, vals[v]);
                    nd_opts_t c;
                    nd_opts_copy(&c, &o);
                    nd_opts_free(&o);
                    nd_opts_free(&c);
                    variants++;
                }
            }
            line = eol ? eol + 1 : NULL;
        }
    }
    cr_assert_gt(variants, 500);
}

/* ---- ownership ------------------------------------------------------------------------------ */

Test(opts_blocks, deep_copy_owns_everything)
{
    static const char *const files[] = {
        "cluster.conf",   "accounts.conf", "leafnodes.conf", "jetstream.conf", "mqtt.conf",
        "websocket.conf", "operator.conf", "gateway.conf",   "tls.conf",       "monitoring.conf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        nd_opts_t o, c;
        load_file(&o, files[i]);
        nd_opts_copy(&c, &o);
        /* Free the original first: the copy must not share any pointer with it (ASan checks). */
        char *warn = o.config_warnings ? strdup(o.config_warnings) : NULL;
        size_t nusers = o.nusers, naccounts = o.naccounts;
        nd_opts_free(&o);
        cr_expect_eq(c.nusers, nusers);
        cr_expect_eq(c.naccounts, naccounts);
        for (size_t u = 0; u < c.nusers; u++)
            cr_expect(c.users[u].name || c.users[u].nkey);
        for (size_t a = 0; a < c.naccounts; a++)
            cr_expect_not_null(c.accounts[a].name);
        if (c.cluster && c.cluster->routes.n > 0)
            cr_expect_not_null(c.cluster->routes.v[0]);
        if (c.leaf && c.leaf->nremotes > 1)
            cr_expect_not_null(c.leaf->remotes[1].tls->ca_file);
        if (warn)
            cr_expect_str_eq(c.config_warnings, warn);
        free(warn);
        nd_opts_t c2;
        nd_opts_copy(&c2, &c);
        nd_opts_free(&c);
        nd_opts_free(&c2);
    }
}

Test(opts_blocks, repeated_blocks_and_failed_parse_do_not_leak)
{
    nd_opts_t o;
    /* A later block replaces the earlier one's values; a failed parse leaves o freeable. */
    load(&o, "cluster {\n  name: a\n  routes: [\"nats://x:1\"]\n}\ncluster {\n  name: b\n}\n"
             "tls {\n  verify: true\n}\ntls {\n  insecure: true\n}\n"
             "leafnodes {\n  remotes: [{url: \"nats://a:1\"}]\n}\nleafnodes {\n  remotes: [{url: "
             "\"nats://b:1\"}]\n}\n");
    cr_assert_str_eq(o.cluster->name, "b");
    cr_assert(o.tls_cfg->insecure && !o.tls_cfg->verify);
    cr_assert_eq(o.leaf->nremotes, 1);
    cr_assert_str_eq(o.leaf->remotes[0].urls.v[0], "nats://b:1");
    nd_opts_free(&o);
    char err[1024];
    for (size_t i = 0; i < NERRORS; i += 7) {
        int rc = apply(&o, errors[i].conf, err, sizeof err);
        cr_assert(errors[i].want[0] == '\0' || rc != 0, "row %zu", i);
        nd_opts_free(&o);
    }
}
