/* Embedding natsd: start a server inside this program on a random loopback port, connect to it
 * with the NATS C client (libnats), publish and receive one message, then stop everything.
 *
 * Build against an installed natsd (see README.md, "Embed"):
 *     cc embed.c -o embed $(pkg-config --cflags --libs natsd libnats)
 * Exit status 0 when the message made the round trip.
 */
#include <stdio.h>
#include <string.h>

#include <nats/nats.h>
#include <natsd/natsd.h>

/* natsd's log lines come here instead of stderr; errors and warnings are shown. */
static void
on_log(void *arg, natsd_log_level_t level, const char *msg)
{
    int *lines = arg;
    (*lines)++;
    if (level <= NATSD_LOG_WARN)
        fprintf(stderr, "natsd: %s\n", msg);
}

/* Connects to url, subscribes, publishes one message and reads it back. Returns: 0 on success. */
static int
round_trip(const char *url)
{
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    natsMsg *msg = NULL;
    const char *text = "hello from an embedded natsd";
    natsStatus st = natsConnection_ConnectTo(&nc, url);
    if (st == NATS_OK)
        st = natsConnection_SubscribeSync(&sub, nc, "demo.>");
    if (st == NATS_OK)
        st = natsConnection_PublishString(nc, "demo.greeting", text);
    if (st == NATS_OK)
        st = natsConnection_Flush(nc);
    if (st == NATS_OK)
        st = natsSubscription_NextMsg(&msg, sub, 5000);
    int rc = 1;
    if (st != NATS_OK) {
        fprintf(stderr, "embed: nats: %s\n", natsStatus_GetText(st));
    } else if (strcmp(natsMsg_GetSubject(msg), "demo.greeting") != 0 ||
               natsMsg_GetDataLength(msg) != (int)strlen(text) ||
               memcmp(natsMsg_GetData(msg), text, strlen(text)) != 0) {
        fprintf(stderr, "embed: unexpected message on %s\n", natsMsg_GetSubject(msg));
    } else {
        printf("embed: received \"%.*s\" on %s\n", natsMsg_GetDataLength(msg), natsMsg_GetData(msg),
               natsMsg_GetSubject(msg));
        rc = 0;
    }
    natsMsg_Destroy(msg);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return rc;
}

int
main(void)
{
    int lines = 0;
    natsd_set_log_callback(on_log, &lines);
    natsd_set_log_level(NATSD_LOG_INFO);

    char err[512];
    natsd_opts_t *opts = natsd_opts_new();
    if (natsd_opts_set(opts, "host", "127.0.0.1", err, sizeof err) != 0 ||
        natsd_opts_set(opts, "port", "-1", err, sizeof err) != 0 || /* any free port */
        natsd_opts_load_string(opts, "server_name: embedded\nmax_payload: 1MB\n", err,
                               sizeof err) != 0) {
        fprintf(stderr, "embed: options: %s\n", err);
        natsd_opts_free(opts);
        return 1;
    }
    natsd_t *s = natsd_start(opts);
    natsd_opts_free(opts); /* natsd_start copied them */
    if (s == NULL || !natsd_ready(s, 5000)) {
        fprintf(stderr, "embed: natsd did not start\n");
        natsd_stop(s);
        return 1;
    }
    printf("embed: natsd %s serving %s\n", natsd_version(), natsd_client_url(s));

    int rc = round_trip(natsd_client_url(s));
    nats_CloseAndWait(5000); /* libnats's own threads and memory */

    natsd_stop(s);
    natsd_set_log_callback(NULL, NULL);
    printf("embed: %s (%d log lines through the callback)\n", rc == 0 ? "ok" : "FAILED", lines);
    return rc == 0 && lines > 0 ? 0 : 1;
}
