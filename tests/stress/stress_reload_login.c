/* stress_reload_login: user logins racing config reloads that replace the auth snapshot.
 *
 * natsd runs in-process through the embedding API (127.0.0.1, a random port, three workers) with
 * one user, u/p. Four client threads connect in a loop: each reads its INFO, logs in as u and
 * sends SUB, PUB and PING, and must then get either its own message and the PONG, or
 * -ERR 'Authorization Violation' and the close: a reload that moves u to the other account
 * closes the connections that logged in before it (conn_auth.c). Meanwhile the main thread
 * rewrites the config file between two versions, one with u in account A and one with u in
 * account B, and reloads it about every 10 ms. Every reload installs a new snapshot and drops
 * the previous one with its user names: a login that reads what its snapshot grants (the user
 * name, the account) after dropping its reference on it reads freed memory (issue 11, defect 1),
 * which ASan reports; TSan checks the snapshot's reference counting and the account references
 * the logins take.
 *
 * No timing assertions: every wait is a hang guard (ND_STRESS_STALL_S, default 120 s).
 *
 * Usage: stress_reload_login [scale]   (or ND_STRESS_SCALE; 1.0 = 1000 reloads).
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

static int g_port;
static atomic_bool g_stop;
static _Atomic uint64_t g_conns, g_delivered, g_closed;

static void *
client(void *arg)
{
    (void)arg;
    static const char login[] = "CONNECT {\"verbose\":false,\"pedantic\":false,\"user\":\"u\","
                                "\"pass\":\"p\"}\r\nSUB x 1\r\nPUB x 2\r\nhi\r\nPING\r\n";
    char buf[8192];
    while (!atomic_load(&g_stop)) {
        int fd = stress_dial(g_port);
        size_t len = 0;
        STRESS_CHECK(stress_read_until(fd, buf, sizeof buf, &len, "\r\n"), "closed before INFO");
        STRESS_CHECK(strstr(buf, "\"auth_required\":true") != NULL, "INFO without auth: %.300s",
                     buf);
        len = 0;
        bool sent = stress_send_all(fd, login, sizeof login - 1);
        if (sent && stress_read_until(fd, buf, sizeof buf, &len, "PONG\r\n")) {
            STRESS_CHECK(strstr(buf, "MSG x 1 2\r\nhi\r\n") != NULL,
                         "PONG without the message: %.300s", buf);
            atomic_fetch_add(&g_delivered, 1);
        } else {
            /* A reload that moved u closed us; it says so unless the send already failed. */
            STRESS_CHECK(!sent || strstr(buf, "-ERR 'Authorization Violation'\r\n") != NULL,
                         "closed without the violation: %.300s", buf);
            atomic_fetch_add(&g_closed, 1);
        }
        close(fd);
        atomic_fetch_add(&g_conns, 1);
    }
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

/* The two versions: u in A, or u in B. */
static void
write_version(const char *path, int v)
{
    char text[512];
    snprintf(text, sizeof text,
             "log_file: \"/dev/null\"\n"
             "accounts {\n"
             "  A { users: [%s] }\n"
             "  B { users: [%s] }\n"
             "}\n",
             v == 0 ? "{user: u, password: p}" : "", v == 1 ? "{user: u, password: p}" : "");
    write_file(path, text);
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    uint64_t reloads = stress_scaled(1000, f);
    char dir[] = "/tmp/nd_stress_reload_login_XXXXXX";
    STRESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[128];
    snprintf(path, sizeof path, "%s/server.conf", dir);
    write_version(path, 0);

    natsd_t *s = stress_start_server(path);
    g_port = natsd_port(s);

    pthread_t th[CLIENTS];
    for (int i = 0; i < CLIENTS; i++)
        pthread_create(&th[i], NULL, client, NULL);
    for (uint64_t i = 1; i <= reloads; i++) {
        write_version(path, (int)(i % 2));
        STRESS_CHECK(natsd_reload(s, NULL) == 0, "reload %llu failed", (unsigned long long)i);
        stress_sleep_us(10000);
    }
    atomic_store(&g_stop, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(th[i], NULL);
    /* The server still admits u after the storm. */
    STRESS_CHECK(atomic_load(&g_conns) > 0, "no login at all");
    natsd_stop(s);
    unlink(path);
    rmdir(dir);
    printf("stress_reload_login: %llu reloads, %llu logins (%llu served, %llu closed by a "
           "reload)\n",
           (unsigned long long)reloads, (unsigned long long)atomic_load(&g_conns),
           (unsigned long long)atomic_load(&g_delivered),
           (unsigned long long)atomic_load(&g_closed));
    return 0;
}
