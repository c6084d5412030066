/* Unit tests of the embedding API's options (include/natsd/natsd.h): natsd_opts_new, _set,
 * _load_string, _load_file and _free, with config-file texts for bad values, and a server
 * started with options built only through these functions (nothing of nd_opts_t is touched).
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "natsd/natsd.h"

/* Connects to 127.0.0.1:port and returns the server's first line (INFO {...}). */
static void
read_info(int port, char *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    size_t n = 0;
    while (n + 1 < len && memchr(buf, '\n', n) == NULL) {
        ssize_t r = read(fd, buf + n, len - 1 - n);
        cr_assert(r > 0);
        n += (size_t)r;
    }
    buf[n] = '\0';
    close(fd);
}

Test(natsd_api, start_with_options_set_by_name)
{
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_not_null(o);
    cr_assert_eq(natsd_opts_set(o, "host", "127.0.0.1", err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "port", "-1", err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "MAX_PAYLOAD", "65536", err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "server_name", "\"api test\"", err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "worker_threads", "2", err, sizeof err), 0, "%s", err);
    cr_assert_eq(
        natsd_opts_load_string(o, "ping_interval: \"1m\"\nlogtime: false\n", err, sizeof err), 0,
        "%s", err);
    natsd_t *s = natsd_start(o);
    natsd_opts_free(o); /* natsd_start copied them */
    cr_assert_not_null(s);
    cr_assert_gt(natsd_port(s), 0);
    cr_assert_eq(natsd_workers(s), 2u);
    char info[4096];
    read_info(natsd_port(s), info, sizeof info);
    cr_assert(strncmp(info, "INFO {", 6) == 0, "%s", info);
    cr_assert_not_null(strstr(info, "\"max_payload\":65536"), "%s", info);
    cr_assert_not_null(strstr(info, "\"server_name\":\"api test\""), "%s", info);
    natsd_stop(s);
}

Test(natsd_api, errors_are_the_config_file_texts)
{
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_eq(natsd_opts_set(o, "max_payload", "\"big\"", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "interface conversion"), "%s", err);
    cr_assert_eq(natsd_opts_set(o, "no_such_option", "1", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "unknown field \"no_such_option\""), "%s", err);
    cr_assert_eq(natsd_opts_set(o, "port", "99999", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "out of range"), "%s", err);
    /* A name cannot smuggle in another line, nor a value a second option. */
    cr_assert_eq(natsd_opts_set(o, "port: 1\nhost", "x", err, sizeof err), -1);
    cr_assert_eq(natsd_opts_set(o, "port", "1\nhost: x", err, sizeof err), -1);
    cr_assert_eq(natsd_opts_load_string(o, "cluster { bogus: 1 }", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "unknown field \"bogus\""), "%s", err);
    cr_assert_eq(natsd_opts_load_file(o, "/nonexistent/natsd.conf", err, sizeof err), -1);
    natsd_opts_free(o);
    natsd_opts_free(NULL);
}

Test(natsd_api, load_file_then_override)
{
    char path[] = "/tmp/nd_api_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char conf[] = "listen: 127.0.0.1:-1\nmax_payload: 1000\nauthorization { user: a, "
                        "password: b }\n";
    cr_assert_eq(write(fd, conf, sizeof conf - 1), (ssize_t)(sizeof conf - 1));
    close(fd);
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_eq(natsd_opts_load_file(o, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "max_payload", "2000", err, sizeof err), 0, "%s", err);
    natsd_t *s = natsd_start(o);
    natsd_opts_free(o);
    cr_assert_not_null(s);
    char info[4096];
    read_info(natsd_port(s), info, sizeof info);
    cr_assert_not_null(strstr(info, "\"max_payload\":2000"), "%s", info);
    cr_assert_not_null(strstr(info, "\"auth_required\":true"), "%s", info);
    natsd_stop(s);
    unlink(path);
}

/* What the log callback saw: lines by level, and whether one mentions a text. */
typedef struct seen_log {
    pthread_mutex_t mu;
    int by_level[NATSD_LOG_TRACE + 1];
    bool ready_line;
} seen_log_t;

static void
on_log(void *arg, natsd_log_level_t level, const char *msg)
{
    seen_log_t *seen = arg;
    pthread_mutex_lock(&seen->mu);
    seen->by_level[level]++;
    if (strstr(msg, "Server is ready") != NULL)
        seen->ready_line = true;
    cr_assert(strchr(msg, '\n') == NULL, "a line without its newline: %s", msg);
    pthread_mutex_unlock(&seen->mu);
}

Test(natsd_api, ready_url_and_log_callback)
{
    static seen_log_t seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    natsd_set_log_callback(on_log, &seen);
    natsd_set_log_level(NATSD_LOG_INFO);
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_eq(natsd_opts_set(o, "port", "-1", err, sizeof err), 0, "%s", err);
    cr_assert_eq(natsd_opts_set(o, "debug", "true", err, sizeof err), 0, "%s", err);
    natsd_t *s = natsd_start(o);
    natsd_opts_free(o);
    cr_assert_not_null(s);
    cr_assert(natsd_ready(s, 1000));
    cr_assert(natsd_ready(s, 0));
    /* Listening on every address: the URL a local client uses is the loopback one. */
    char want[64];
    snprintf(want, sizeof want, "nats://127.0.0.1:%d", natsd_port(s));
    cr_assert_str_eq(natsd_client_url(s), want);
    char info[4096];
    read_info(natsd_port(s), info, sizeof info);
    cr_assert(natsd_lame_duck(s));
    cr_assert_not(natsd_ready(s, 0), "not ready once lame duck mode began");
    natsd_stop(s);
    natsd_set_log_callback(NULL, NULL);
    pthread_mutex_lock(&seen.mu);
    cr_assert(seen.ready_line, "the banner reached the callback");
    cr_assert_gt(seen.by_level[NATSD_LOG_INFO], 0);
    /* debug: true in the options, but the level caps it. */
    cr_assert_eq(seen.by_level[NATSD_LOG_DEBUG], 0);
    cr_assert_eq(seen.by_level[NATSD_LOG_TRACE], 0);
    pthread_mutex_unlock(&seen.mu);
    cr_assert_not(natsd_ready(NULL, 0));
}

Test(natsd_api, client_url_of_a_specific_host)
{
    natsd_set_log_level(NATSD_LOG_WARN); /* quiet: no banner */
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_eq(natsd_opts_load_string(o, "listen: \"[::1]:-1\"", err, sizeof err), 0, "%s", err);
    natsd_t *s = natsd_start(o);
    natsd_opts_free(o);
    if (s == NULL) {
        cr_skip_test("no IPv6 loopback here");
    }
    char want[64];
    snprintf(want, sizeof want, "nats://[::1]:%d", natsd_port(s));
    cr_assert_str_eq(natsd_client_url(s), want);
    natsd_stop(s);
}

/* Counts the warnings about malformed bcrypt hashes and checks none shows a secret. */
static void
on_bcrypt_warn(void *arg, natsd_log_level_t level, const char *msg)
{
    int *n = arg;
    if (level == NATSD_LOG_WARN && strstr(msg, "looks like a bcrypt hash but is not a valid one")) {
        (*n)++;
        cr_assert_not_null(strstr(msg, "user \"ops\""), "%s", msg);
        cr_assert_null(strstr(msg, "$2a$"), "the value stays out of the log: %s", msg);
    }
}

Test(natsd_api, warns_about_a_malformed_bcrypt_password)
{
    static int warned;
    natsd_set_log_callback(on_bcrypt_warn, &warned);
    char err[1024];
    natsd_opts_t *o = natsd_opts_new();
    cr_assert_eq(natsd_opts_load_string(
                     o,
                     "listen: 127.0.0.1:-1\n"
                     "authorization { users: [\n"
                     "  { user: ops, password: \"$2a$11$...\" }\n"
                     "  { user: app, password: "
                     "\"$2a$04$Q.CgCP2Sl9pkcTXEZHazaeMwPaAkSHk7AI51HkyMt5iJQQyUA4qxq\" }\n"
                     "]}\n",
                     err, sizeof err),
                 0, "%s", err);
    natsd_t *s = natsd_start(o);
    natsd_opts_free(o);
    cr_assert_not_null(s);
    natsd_stop(s);
    natsd_set_log_callback(NULL, NULL);
    cr_assert_eq(warned, 1, "one warning, for ops only");
}
