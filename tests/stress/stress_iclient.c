/* stress_iclient: the server's internal clients (net/iclient.h) under concurrent requests and
 * connection churn.
 *
 * With `system_account: SYS`, REQUESTERS threads of account A each keep one connection and send
 * requests on `$SYS.REQ.USER.INFO` (through A's automatic service import to the system
 * account's request service) and `$SYS.REQ.ACCOUNT.PING.STATZ`, one at a time, each answered
 * before the next; a SYS thread asks `$SYS.REQ.SERVER.PING` the same way; CHURNERS threads
 * connect and disconnect as A, so CONNECT/DISCONNECT advisories are published into the system
 * account at the same time. Every request must get exactly its answer (the user info names
 * the requester), none may get the no-responders status, and the server must stop cleanly with
 * the internal client's state (its memory is its connection's) freed. Run under TSan for the
 * ordering of the IMSG hand-off, the queue bound and the ready wait.
 */
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

#define REQUESTERS 3
#define CHURNERS   2

static int g_port;
static atomic_bool g_stop;
static _Atomic uint64_t g_answers, g_churns;
static uint64_t g_requests; /* per requester */

static _Atomic int g_next_inbox;
static _Thread_local char t_inbox[32]; /* this thread's reply subject */

/* Logs in as user (password = user) with a subscription on an inbox of this thread's own (the
 * requesters of one account must not see each other's answers). */
static int
login(const char *user)
{
    snprintf(t_inbox, sizeof t_inbox, "_INBOX.r%d", atomic_fetch_add(&g_next_inbox, 1));
    int fd = stress_dial(g_port);
    char buf[4096];
    size_t len = 0;
    STRESS_CHECK(stress_read_until(fd, buf, sizeof buf, &len, "\r\n"), "server closed");
    char cmd[256];
    int n = snprintf(cmd, sizeof cmd,
                     "CONNECT {\"verbose\":false,\"user\":\"%s\",\"pass\":\"%s\",\"headers\":true,"
                     "\"no_responders\":true}\r\nSUB %s 1\r\nPING\r\n",
                     user, user, t_inbox);
    STRESS_CHECK(stress_send_all(fd, cmd, (size_t)n), "server closed");
    len = 0;
    STRESS_CHECK(stress_read_until(fd, buf, sizeof buf, &len, "PONG\r\n"), "server closed");
    return fd;
}

/* One request on subj; its answer must contain want. */
static void
ask(int fd, const char *subj, const char *want)
{
    char cmd[256];
    int n = snprintf(cmd, sizeof cmd, "PUB %s %s 0\r\n\r\n", subj, t_inbox);
    STRESS_CHECK(stress_send_all(fd, cmd, (size_t)n), "server closed");
    static _Thread_local char buf[64 * 1024];
    size_t len = 0;
    STRESS_CHECK(stress_read_until(fd, buf, sizeof buf, &len, "}}\r\n"), "server closed");
    char head[48];
    snprintf(head, sizeof head, "MSG %s 1 ", t_inbox);
    STRESS_CHECK(strstr(buf, head) != NULL, "%s: not an answer: %.300s", subj, buf);
    STRESS_CHECK(strstr(buf, want) != NULL, "%s: answer without %s: %.300s", subj, want, buf);
    STRESS_CHECK(strstr(buf, "NATS/1.0 503") == NULL, "%s: no responders", subj);
    atomic_fetch_add(&g_answers, 1);
}

static void *
requester(void *arg)
{
    (void)arg;
    int fd = login("a");
    for (uint64_t i = 0; i < g_requests; i++) {
        if (i % 2 == 0)
            ask(fd, "$SYS.REQ.USER.INFO", "\"user\":\"a\",\"account\":\"A\"");
        else
            ask(fd, "$SYS.REQ.ACCOUNT.PING.STATZ", "\"acc\":\"A\"");
    }
    close(fd);
    return NULL;
}

static void *
sys_requester(void *arg)
{
    (void)arg;
    int fd = login("sys");
    for (uint64_t i = 0; i < g_requests; i++)
        ask(fd, "$SYS.REQ.SERVER.PING", "\"statsz\"");
    close(fd);
    return NULL;
}

static void *
churner(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        close(login("a"));
        atomic_fetch_add(&g_churns, 1);
    }
    return NULL;
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    g_requests = stress_scaled(2000, f);
    char dir[] = "/tmp/nd_stress_iclient_XXXXXX";
    STRESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[128];
    snprintf(path, sizeof path, "%s/server.conf", dir);
    FILE *cf = fopen(path, "w");
    STRESS_CHECK(cf != NULL, "fopen");
    fputs("log_file: \"/dev/null\"\n"
          "system_account: SYS\n"
          "accounts {\n"
          "  A { users: [{user: a, password: a}] }\n"
          "  SYS { users: [{user: sys, password: sys}] }\n"
          "}\n",
          cf);
    STRESS_CHECK(fclose(cf) == 0, "fclose");

    natsd_t *s = stress_start_server(path);
    g_port = natsd_port(s);

    pthread_t req[REQUESTERS + 1], churn[CHURNERS];
    for (int i = 0; i < CHURNERS; i++)
        pthread_create(&churn[i], NULL, churner, NULL);
    for (int i = 0; i < REQUESTERS; i++)
        pthread_create(&req[i], NULL, requester, NULL);
    pthread_create(&req[REQUESTERS], NULL, sys_requester, NULL);
    for (int i = 0; i <= REQUESTERS; i++)
        pthread_join(req[i], NULL);
    atomic_store(&g_stop, true);
    for (int i = 0; i < CHURNERS; i++)
        pthread_join(churn[i], NULL);
    uint64_t want = g_requests * (REQUESTERS + 1);
    STRESS_CHECK(atomic_load(&g_answers) == want, "%llu answers, want %llu",
                 (unsigned long long)atomic_load(&g_answers), (unsigned long long)want);
    natsd_stop(s);
    unlink(path);
    rmdir(dir);
    printf("stress_iclient: %llu requests answered, %llu connections churned\n",
           (unsigned long long)want, (unsigned long long)atomic_load(&g_churns));
    return 0;
}
