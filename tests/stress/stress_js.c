/* stress_js: JetStream's shared state under concurrent use.
 *
 * natsd runs in-process (127.0.0.1, a random port, three workers) with JetStream on a temporary
 * store. Threads, each with its own connection:
 *   - PUBLISHERS publishers, each publishing with replies to its own stream (P<i>) while a churn
 *     thread keeps creating and deleting stream X and publishing into it: every PubAck of P<i>
 *     must carry the next sequence (a stream is ordered, no ack lost or duplicated);
 *   - a churn thread: create X, publish, STREAM.INFO, delete X, over and over (the API service
 *     writing the stream table while others read it, stream actors coming and going);
 *   - a lister: STREAM.LIST and $JS.API.INFO in a loop (readers of the table and of every
 *     stream's counters under their locks).
 * At the end every P<i> holds exactly what was acknowledged. TSan checks the locking of the
 * stream table (jsa->mu), the counters (st->mu) and the hand-over of requests between the API
 * service and the stream actors; ASan the lifetimes of streams that are deleted while requests
 * for them are in flight.
 *
 * No timing assertions: every wait is a hang guard (ND_STRESS_STALL_S, default 120 s).
 * Usage: stress_js [scale]   (or ND_STRESS_SCALE; 1.0 = 2000 acks per publisher, 100 churns).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "natsd/natsd.h"
#include "stress_net.h"
#include "stress_util.h"

#define PUBLISHERS 3

static int g_port;
static uint64_t g_msgs, g_churns;
static _Atomic bool g_done;

typedef struct conn {
    int fd;
    int id; /* its reply subjects are _R<id>.<tag> */
    char buf[1 << 16];
    size_t len;
} conn_t;

static void
conn_open(conn_t *c, int id)
{
    c->id = id;
    c->fd = stress_dial(g_port);
    c->len = 0;
    STRESS_CHECK(stress_read_until(c->fd, c->buf, sizeof c->buf, &c->len, "\r\n"), "no INFO");
    c->len = 0;
    char hello[256];
    int n = snprintf(hello, sizeof hello,
                     "CONNECT {\"verbose\":false,\"headers\":true,\"no_responders\":true}\r\n"
                     "SUB _R%d.> 1\r\nPING\r\n",
                     id);
    STRESS_CHECK(stress_send_all(c->fd, hello, (size_t)n), "send");
    STRESS_CHECK(stress_read_until(c->fd, c->buf, sizeof c->buf, &c->len, "PONG\r\n"), "no PONG");
    c->len = 0;
}

/* Reads more bytes into c->buf. */
static void
read_more(conn_t *c)
{
    STRESS_CHECK(c->len + 1 < sizeof c->buf, "reply too long");
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    STRESS_CHECK(poll(&p, 1, (int)(stress_stall_limit_s() * 1000)) > 0, "no reply in time");
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len, 0);
    STRESS_CHECK(n > 0, "server closed the connection");
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
}

/* Sends a request and waits for its reply on _R.<tag> (other replies, such as a late publish's,
 * are skipped); returns the payload, NUL-terminated inside c->buf. */
static const char *
request(conn_t *c, const char *subj, const char *tag, const char *body)
{
    char line[512];
    int n = snprintf(line, sizeof line, "PUB %s _R%d.%s %zu\r\n%s\r\n", subj, c->id, tag,
                     strlen(body), body);
    STRESS_CHECK(stress_send_all(c->fd, line, (size_t)n), "send");
    char want[64];
    snprintf(want, sizeof want, "MSG _R%d.%s 1 ", c->id, tag);
    c->len = 0;
    c->buf[0] = '\0';
    for (;;) {
        char *m = strstr(c->buf, want);
        char *eol = m != NULL ? strstr(m, "\r\n") : NULL;
        if (eol != NULL) {
            size_t sz = strtoul(m + strlen(want), NULL, 10);
            size_t need = (size_t)(eol + 2 - c->buf) + sz + 2;
            if (c->len >= need) {
                eol[2 + sz] = '\0';
                return eol + 2;
            }
        }
        read_more(c);
    }
}

static void *
publisher(void *arg)
{
    int id = (int)(intptr_t)arg;
    conn_t *c = calloc(1, sizeof *c);
    conn_open(c, id);
    char subj[64], body[256], tag[32], want[64];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.CREATE.P%d", id);
    snprintf(body, sizeof body, "{\"name\":\"P%d\",\"subjects\":[\"p%d.>\"]}", id, id);
    const char *r = request(c, subj, "c", body);
    STRESS_CHECK(strstr(r, "\"did_create\":true") != NULL, "create P%d: %s", id, r);
    for (uint64_t i = 1; i <= g_msgs; i++) {
        snprintf(subj, sizeof subj, "p%d.x", id);
        snprintf(tag, sizeof tag, "a%llu", (unsigned long long)i);
        r = request(c, subj, tag, "payload");
        snprintf(want, sizeof want, "{\"stream\":\"P%d\", \"seq\":%llu}", id,
                 (unsigned long long)i);
        STRESS_CHECK(strcmp(r, want) == 0, "ack %llu of P%d: %s", (unsigned long long)i, id, r);
    }
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.P%d", id);
    r = request(c, subj, "i", "");
    char msgs[64];
    snprintf(msgs, sizeof msgs, "\"messages\":%llu,", (unsigned long long)g_msgs);
    STRESS_CHECK(strstr(r, msgs) != NULL, "P%d info: %.300s", id, r);
    close(c->fd);
    free(c);
    return NULL;
}

static void *
churn(void *arg)
{
    (void)arg;
    conn_t *c = calloc(1, sizeof *c);
    conn_open(c, 100);
    for (uint64_t i = 0; i < g_churns; i++) {
        const char *r = request(c, "$JS.API.STREAM.CREATE.X", "c",
                                i % 2 ? "{\"name\":\"X\",\"subjects\":[\"x.>\"]}"
                                      : "{\"name\":\"X\",\"subjects\":[\"x.>\"],\"storage\":\"memory\"}");
        STRESS_CHECK(strstr(r, "\"did_create\":true") != NULL, "create X: %s", r);
        for (int k = 0; k < 10; k++) {
            r = request(c, "x.y", "p", "data");
            STRESS_CHECK(strstr(r, "\"stream\":\"X\"") != NULL, "ack X: %s", r);
        }
        r = request(c, "$JS.API.STREAM.INFO.X", "i", "");
        STRESS_CHECK(strstr(r, "\"messages\":10,") != NULL, "info X: %.300s", r);
        /* a publish racing the delete: acked, or no responders, never lost silently */
        char line[128];
        int n = snprintf(line, sizeof line, "PUB x.y _R100.late 4\r\nlate\r\n");
        STRESS_CHECK(stress_send_all(c->fd, line, (size_t)n), "send");
        r = request(c, "$JS.API.STREAM.DELETE.X", "d", "");
        STRESS_CHECK(strstr(r, "\"success\":true") != NULL, "delete X: %s", r);
    }
    atomic_store(&g_done, true);
    close(c->fd);
    free(c);
    return NULL;
}

static void *
lister(void *arg)
{
    (void)arg;
    conn_t *c = calloc(1, sizeof *c);
    conn_open(c, 200);
    while (!atomic_load(&g_done)) {
        const char *r = request(c, "$JS.API.STREAM.LIST", "l", "");
        STRESS_CHECK(strstr(r, "stream_list_response") != NULL, "list: %.200s", r);
        r = request(c, "$JS.API.INFO", "n", "");
        STRESS_CHECK(strstr(r, "account_info_response") != NULL, "info: %.200s", r);
    }
    close(c->fd);
    free(c);
    return NULL;
}

int
main(int argc, char **argv)
{
    double f = stress_scale(argc, argv);
    g_msgs = stress_scaled(2000, f);
    g_churns = stress_scaled(100, f);
    char dir[] = "/tmp/stress_js_XXXXXX";
    STRESS_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], conf[512];
    snprintf(path, sizeof path, "%s/natsd.conf", dir);
    snprintf(conf, sizeof conf, "jetstream { store_dir: \"%s/store\" }\n", dir);
    FILE *fp = fopen(path, "w");
    STRESS_CHECK(fp != NULL && fputs(conf, fp) >= 0 && fclose(fp) == 0, "config");
    natsd_t *s = stress_start_server(path);
    g_port = natsd_port(s);

    pthread_t pubs[PUBLISHERS], ch, ls;
    for (int i = 0; i < PUBLISHERS; i++)
        STRESS_CHECK(pthread_create(&pubs[i], NULL, publisher, (void *)(intptr_t)i) == 0, "thread");
    STRESS_CHECK(pthread_create(&ch, NULL, churn, NULL) == 0, "thread");
    STRESS_CHECK(pthread_create(&ls, NULL, lister, NULL) == 0, "thread");
    for (int i = 0; i < PUBLISHERS; i++)
        pthread_join(pubs[i], NULL);
    pthread_join(ch, NULL);
    pthread_join(ls, NULL);
    natsd_stop(s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    STRESS_CHECK(system(cmd) == 0, "cleanup");
    printf("stress_js: %d publishers x %llu acks, %llu stream churns: ok\n", PUBLISHERS,
           (unsigned long long)g_msgs, (unsigned long long)g_churns);
    return 0;
}
