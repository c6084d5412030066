/* stress_reload: config reload and lame duck mode under concurrent clients, in-process.
 *
 * natsd runs through the embedding API (127.0.0.1, a random port, three workers) while client
 * threads connect in a loop: each reads its INFO (its max_payload must be one of the two values
 * the config files alternate between), publishes a 1500-byte message to its own subscription and
 * checks the outcome, which depends on the limit its parser had when the PUB came: either the
 * message and the PONG, or -ERR 'Maximum Payload Violation' and the close. Meanwhile the main
 * thread reloads the config hundreds of times, alternating max_payload (1000 / 2000, so the INFO
 * template is replaced and retired through the epoch while connections copy it), ping_interval
 * and debug (the log level changes under the workers' feet), with a file that does not parse now
 * and then (that reload must fail and change nothing). Under TSan this checks the publication
 * protocols of reload.c; under ASan the INFO retirement.
 *
 * Then lame duck mode: idle clients, connected with protocol 1, must each get an INFO with
 * "ldm":true and then be closed by the server, and natsd_lame_duck_wait must report the end.
 * No timing assertions: every wait is a hang guard (ND_STRESS_STALL_S, default 120 s).
 *
 * Usage: stress_reload [scale]   (or ND_STRESS_SCALE).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "cfg/opts.h"
#include "natsd/natsd.h"
#include "stress_net.h"
#include "stress_util.h"

#define CLIENTS 4
#define IDLE    6
#define PAYLOAD 1500

static int g_port;
static atomic_bool g_stop;
static atomic_ulong g_conns, g_delivered, g_refused;

static long
info_max_payload(const char *info)
{
    const char *m = strstr(info, "\"max_payload\":");
    STRESS_CHECK(m != NULL, "INFO without max_payload: %.300s", info);
    return strtol(m + 14, NULL, 10);
}

static void *
client(void *arg)
{
    (void)arg;
    static char payload[PAYLOAD];
    memset(payload, 'p', sizeof payload);
    char pub[PAYLOAD + 128];
    int k = snprintf(pub, sizeof pub,
                     "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB x 1\r\nPUB x %d\r\n",
                     PAYLOAD);
    memcpy(pub + k, payload, PAYLOAD);
    memcpy(pub + k + PAYLOAD, "\r\nPING\r\n", 8);
    size_t publen = (size_t)k + PAYLOAD + 8;
    char *buf = malloc(16384);
    while (!atomic_load(&g_stop)) {
        int fd = stress_dial(g_port);
        size_t len = 0;
        STRESS_CHECK(stress_read_until(fd, buf, 16384, &len, "\r\n"), "closed before INFO");
        long mp = info_max_payload(buf);
        STRESS_CHECK(mp == 1000 || mp == 2000, "INFO max_payload %ld", mp);
        STRESS_CHECK(stress_send_all(fd, pub, publen), "server closed");
        len = 0;
        if (stress_read_until(fd, buf, 16384, &len, "PONG\r\n")) {
            STRESS_CHECK(strstr(buf, "MSG x 1 1500\r\n") != NULL,
                         "PONG without the message: %.300s", buf);
            atomic_fetch_add(&g_delivered, 1);
        } else {
            STRESS_CHECK(strstr(buf, "-ERR 'Maximum Payload Violation'\r\n") != NULL,
                         "closed without the payload error: %.300s", buf);
            atomic_fetch_add(&g_refused, 1);
        }
        close(fd);
        atomic_fetch_add(&g_conns, 1);
    }
    free(buf);
    return NULL;
}

static void
write_file(const char *path, const char *text)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    STRESS_CHECK(f != NULL, "fopen %s", tmp);
    fputs(text, f);
    STRESS_CHECK(fclose(f) == 0, "fclose");
    STRESS_CHECK(rename(tmp, path) == 0, "rename");
}

static const char *const common = "log_file: \"/dev/null\"\n"
                                  "lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n";

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    uint64_t reloads = stress_scaled(300, f);
    char dir[] = "/tmp/nd_stress_reload_XXXXXX";
    STRESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[128], text[512];
    snprintf(path, sizeof path, "%s/server.conf", dir);
    snprintf(text, sizeof text, "%smax_payload: 1000\nping_interval: \"20s\"\n", common);
    write_file(path, text);

    natsd_t *s = stress_start_server(path);
    g_port = natsd_port(s);

    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        pthread_create(&th[i], NULL, client, NULL);
    for (uint64_t i = 1; i <= reloads; i++) {
        if (i % 50 == 0) {
            write_file(path, "max_payload: 3000\nthis is { not a config\n");
            STRESS_CHECK(natsd_reload(s, NULL) != 0, "a bad file reloaded");
            continue;
        }
        snprintf(text, sizeof text, "%smax_payload: %d\nping_interval: \"%ds\"\ndebug: %s\n",
                 common, i % 2 ? 2000 : 1000, 20 + (int)(i % 7), i % 3 ? "false" : "true");
        write_file(path, text);
        STRESS_CHECK(natsd_reload(s, NULL) == 0, "reload %llu failed", (unsigned long long)i);
    }
    atomic_store(&g_stop, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);

    /* Lame duck mode with idle clients that take asynchronous INFOs. */
    int idle[IDLE];
    char buf[16384];
    for (int i = 0; i < IDLE; i++) {
        idle[i] = stress_dial(g_port);
        size_t len = 0;
        STRESS_CHECK(stress_read_until(idle[i], buf, sizeof buf, &len, "\r\n"), "closed before INFO");
        const char *hello = "CONNECT {\"verbose\":false,\"protocol\":1}\r\nPING\r\n";
        STRESS_CHECK(stress_send_all(idle[i], hello, strlen(hello)), "server closed");
        len = 0;
        STRESS_CHECK(stress_read_until(idle[i], buf, sizeof buf, &len, "PONG\r\n"), "no PONG");
    }
    STRESS_CHECK(natsd_lame_duck(s), "lame duck mode did not start");
    STRESS_CHECK(!natsd_lame_duck(s), "lame duck mode started twice");
    for (int i = 0; i < IDLE; i++) {
        size_t len = 0;
        STRESS_CHECK(stress_read_until(idle[i], buf, sizeof buf, &len, "\"ldm\":true"),
                     "closed without the ldm INFO: %.300s", buf);
        STRESS_CHECK(!stress_read_until(idle[i], buf, sizeof buf, &len, "\x01"), "not closed");
        close(idle[i]);
    }
    STRESS_CHECK(natsd_lame_duck_wait(s, (int)(stress_stall_limit_s() * 1000)), "lame duck mode did not end");
    natsd_stop(s);
    unlink(path);
    rmdir(dir);
    printf("stress_reload: %llu reloads, %lu connections (%lu delivered, %lu refused by the "
           "payload limit)\n",
           (unsigned long long)reloads, atomic_load(&g_conns), atomic_load(&g_delivered),
           atomic_load(&g_refused));
    return 0;
}
