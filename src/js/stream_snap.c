/* Stream snapshot and restore: $JS.API.STREAM.SNAPSHOT.<stream> and
 * $JS.API.STREAM.RESTORE.<stream>.
 *
 * Snapshot. The account's API service checks the request's shape and forwards it to the stream
 * (JS_OP_SNAPSHOT). On the stream's turn the store writes its snapshot (js/store/store_snapshot.h,
 * natsd's own byte format; nats-server's is a tar/s2 archive, which clients treat as opaque bytes)
 * into an unlinked staging file, the stream answers {config, state} and goes back to its work:
 * the chunks are sent by a sender of their own (an internal client that owns the staging file),
 * so a slow reader never holds the stream up. The sender keeps at most SNAP_WINDOW bytes
 * unacknowledged: each chunk's reply subject is $JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>,
 * and a reader's (empty) reply there gives <size> bytes back to the window. After the last chunk
 * comes an empty message with the header "NATS/1.0 204" (nats-server 2.11; 2.9 sent it without a
 * header), the end of the snapshot; a reader that stops acknowledging for SNAP_STALL_NS gets
 * "NATS/1.0 408 No Flow Response" instead.
 *
 * Restore. The API service checks the request ({config, state}), answers nothing yet and starts
 * a receiver subscribed to $JS.SNAPSHOT.RESTORE.<stream>.<id>; once that subscription is in place
 * the receiver answers with it as deliver_subject. Each chunk (it must have a reply subject) is
 * appended to an unlinked staging file and acknowledged with an empty message; an empty chunk
 * ends the transfer. The receiver then rebuilds the store from the staging file (for file storage
 * in a staging directory beside the account directories, on the same file system) and hands it
 * to the API service, the only writer of the stream table, which makes it a stream
 * (js_stream_create_restored); the stream answers the last chunk's reply with a create response
 * once it is subscribed. A receiver that hears nothing for RESTORE_STALL_NS gives up.
 *
 * Advisories: $JS.EVENT.ADVISORY.STREAM.SNAPSHOT_CREATE / SNAPSHOT_COMPLETE / RESTORE_CREATE /
 * RESTORE_COMPLETE.<stream>, as nats-server's (the client object carries the account only).
 * Reference: nats-server server/jetstream_api.go (jsStreamSnapshotRequest, streamSnapshot,
 * jsStreamRestoreRequest, processStreamRestore) and jetstream_events.go.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "js/store/store_snapshot.h"
#include "subj/subject.h"
#include "util/evid.h"
#include "util/log.h"

#define SNAP_STAGING       "__snapshots__" /* under the JetStream store directory, as nats-server */
#define SNAP_CHUNK_DEFAULT (128 * 1024)
#define SNAP_WINDOW        (8 * 1024 * 1024)
#define SNAP_STALL_NS      (2 * 1000000000LL)
#define RESTORE_STALL_NS   (5 * 1000000000LL)
#define SNAP_WBUF          (64 * 1024)

/* ---- shared helpers ---- */

static int
write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* An unlinked file in the staging directory: nothing is left behind by a crash. Returns: the
 * descriptor, or -1 with errno. */
static int
staging_file(nd_js_t *js, const char *kind)
{
    char *dir = js_path("%s/%s", js->store_dir, SNAP_STAGING);
    char *tmpl = js_path("%s/%s-XXXXXX", dir, kind);
    int fd = -1;
    if (js_mkdirs(dir) == 0) {
        fd = mkstemp(tmpl);
        if (fd >= 0)
            unlink(tmpl);
    }
    nd_free(tmpl);
    nd_free(dir);
    return fd;
}

/* {"type":"io.nats.jetstream.advisory.v1.<type>","id":..,"timestamp":..,"stream":..}. */
static json_t *
adv_new(nd_ctx_t *ctx, const char *type, const char *stream, int64_t ts)
{
    char id[23], t[96];
    nd_event_id(ctx, id);
    snprintf(t, sizeof t, "io.nats.jetstream.advisory.v1.%s", type);
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(t));
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "timestamp", js_time(ts));
    json_object_set_new(o, "stream", json_string(stream));
    return o;
}

/* Adds client and domain and publishes o (stolen) on $JS.EVENT.ADVISORY.STREAM.<verb>.<stream>. */
static void
adv_send(nd_ctx_t *ctx, nd_iclient_t *ic, nd_jsa_t *jsa, const char *verb, const char *stream,
         json_t *o)
{
    json_t *cl = json_object();
    json_object_set_new(cl, "acc", json_string(nd_acct_name(jsa->acct)));
    json_object_set_new(o, "client", cl);
    if (jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(jsa->js->domain));
    char *subj = js_path("$JS.EVENT.ADVISORY.STREAM.%s.%s", verb, stream);
    js_send(ctx, ic, subj, o);
    nd_free(subj);
}

static void
count_error(nd_jsa_t *jsa)
{
    atomic_fetch_add_explicit(&jsa->api_errors, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&jsa->js->api_errors, 1, memory_order_relaxed);
}

/* nats-server's isEmptyRequest: nothing, blanks, or an empty object. */
static bool
empty_request(const nd_imsg_t *m)
{
    size_t n = m->data_len;
    const char *p = m->data;
    while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n'))
        n--;
    return n == 0 || (n == 2 && p[0] == '{' && p[1] == '}');
}

/* ---- snapshot: the API service's part ---- */

void
js_snapshot_request(nd_ctx_t *ctx, nd_iclient_t *api, nd_jsa_t *jsa, const nd_imsg_t *m,
                    const char *name)
{
    const char *what = "stream_snapshot_response";
    nd_jserr_t err;
    if (empty_request(m)) {
        count_error(jsa);
        nd_jserr_set(&err, ND_JSE_BAD_REQUEST, NULL);
        js_send_error(ctx, api, m->reply, what, &err);
        return;
    }
    nd_stream_t *st = jsa_find(jsa, name);
    pthread_mutex_lock(&jsa->mu);
    bool ok = st != NULL && st->ic != NULL && nd_iclient_forward(ctx, st->ic, m, JS_OP_SNAPSHOT);
    pthread_mutex_unlock(&jsa->mu);
    if (!ok) {
        count_error(jsa);
        nd_jserr_set(&err, ND_JSE_STREAM_NOT_FOUND, NULL);
        js_send_error(ctx, api, m->reply, what, &err);
    }
}

/* ---- snapshot: the sender ---- */

typedef struct snap_tx {
    nd_jsa_t *jsa;
    char *stream, *deliver, *ack;
    int fd;
    uint64_t size, off, index, bytes;
    size_t chunk;
    int64_t out; /* bytes sent and not yet acknowledged */
    int64_t start_ns, progress_ns;
    bool started, done;
    char *buf;
    json_t *create_adv; /* SNAPSHOT_CREATE, sent by the sender first so it precedes COMPLETE */
} snap_tx_t;

static void
tx_end(nd_ctx_t *ctx, nd_iclient_t *ic, snap_tx_t *tx, const char *hdr)
{
    if (tx->done)
        return;
    tx->done = true;
    nd_iclient_publish(ctx, ic, tx->deliver, NULL, hdr, hdr != NULL ? strlen(hdr) : 0, "", 0);
    int64_t end = js_now();
    json_t *o = adv_new(ctx, "snapshot_complete", tx->stream, end);
    json_object_set_new(o, "start", js_time(tx->start_ns));
    json_object_set_new(o, "end", js_time(end));
    adv_send(ctx, ic, tx->jsa, "SNAPSHOT_COMPLETE", tx->stream, o);
    nd_log_info("Completed snapshot of %" PRIu64 " B for stream '%s > %s' in %" PRId64 "ms",
                tx->bytes, nd_acct_name(tx->jsa->acct), tx->stream, (end - tx->start_ns) / 1000000);
    nd_iclient_stop(ctx, ic);
}

/* Sends chunks while the window has room; ends the snapshot after the last one. */
static void
tx_pump(nd_ctx_t *ctx, nd_iclient_t *ic, snap_tx_t *tx)
{
    while (!tx->done && tx->off < tx->size && tx->out < SNAP_WINDOW) {
        size_t want = tx->size - tx->off < tx->chunk ? (size_t)(tx->size - tx->off) : tx->chunk;
        ssize_t n = pread(tx->fd, tx->buf, want, (off_t)tx->off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            char h[160];
            snprintf(h, sizeof h, "NATS/1.0 500 %s\r\n\r\n",
                     n < 0 ? strerror(errno) : "unexpected end of snapshot");
            tx_end(ctx, ic, tx, h);
            return;
        }
        tx->index++;
        char reply[400];
        snprintf(reply, sizeof reply, "%s.%zd.%" PRIu64, tx->ack, n, tx->index);
        nd_iclient_publish(ctx, ic, tx->deliver, reply, NULL, 0, tx->buf, (size_t)n);
        tx->off += (uint64_t)n;
        tx->out += n;
    }
    if (tx->done)
        return;
    if (tx->off >= tx->size) {
        tx_end(ctx, ic, tx, tx->index > 0 ? "NATS/1.0 204\r\n\r\n" : NULL);
        return;
    }
    nd_iclient_timer(ctx, ic, (uint64_t)SNAP_STALL_NS);
}

static void
tx_on_ready(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    snap_tx_t *tx = arg;
    if (tx->started)
        return;
    tx->started = true;
    tx->progress_ns = js_now();
    if (tx->create_adv != NULL) {
        adv_send(ctx, ic, tx->jsa, "SNAPSHOT_CREATE", tx->stream, tx->create_adv);
        tx->create_adv = NULL;
    }
    tx_pump(ctx, ic, tx);
}

/* An acknowledgement: $JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<index>. */
static void
tx_on_msg(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    snap_tx_t *tx = arg;
    size_t al = strlen(tx->ack);
    if (tx->done || m->subject_len <= al + 1 || memcmp(m->subject, tx->ack, al) != 0)
        return;
    int64_t size = strtoll(m->subject + al + 1, NULL, 10);
    if (size <= 0)
        return;
    tx->out -= size;
    if (tx->out < 0)
        tx->out = 0;
    tx->progress_ns = js_now();
    if (tx->started)
        tx_pump(ctx, ic, tx);
}

static void
tx_on_timer(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    snap_tx_t *tx = arg;
    if (tx->done)
        return;
    int64_t idle = js_now() - tx->progress_ns;
    if (idle >= SNAP_STALL_NS && tx->out >= SNAP_WINDOW) {
        nd_log_warn("Snapshot of stream '%s > %s' stalled: no flow control response",
                    nd_acct_name(tx->jsa->acct), tx->stream);
        tx_end(ctx, ic, tx, "NATS/1.0 408 No Flow Response\r\n\r\n");
    } else if (tx->out >= SNAP_WINDOW) {
        nd_iclient_timer(ctx, ic, (uint64_t)(SNAP_STALL_NS - idle));
    }
}

static void
tx_on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ctx;
    (void)ic;
    snap_tx_t *tx = arg;
    close(tx->fd);
    json_decref(tx->create_adv);
    nd_free(tx->stream);
    nd_free(tx->deliver);
    nd_free(tx->ack);
    nd_free(tx->buf);
    nd_free(tx);
}

static const nd_iclient_hooks_t tx_hooks = {
    .on_msg = tx_on_msg,
    .on_ready = tx_on_ready,
    .on_timer = tx_on_timer,
    .on_close = tx_on_close,
};

/* ---- snapshot: the stream's part ---- */

typedef struct wbuf {
    int fd;
    size_t n;
    uint64_t total;
    char buf[SNAP_WBUF];
} wbuf_t;

static int
wb_write(void *arg, const void *p, size_t n)
{
    wbuf_t *w = arg;
    w->total += n;
    if (w->n + n > sizeof w->buf) {
        if (write_all(w->fd, w->buf, w->n) != 0)
            return -1;
        w->n = 0;
        if (n > sizeof w->buf)
            return write_all(w->fd, p, n);
    }
    memcpy(w->buf + w->n, p, n);
    w->n += n;
    return 0;
}

void
js_stream_snapshot(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    const char *what = "stream_snapshot_response";
    nd_jsa_t *jsa = st->jsa;
    nd_jserr_t err;
    json_t *req = js_body(m, &err);
    if (req == NULL) {
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    json_t *jd = json_object_get(req, "deliver_subject"), *jc = json_object_get(req, "chunk_size");
    const char *deliver = json_is_string(jd) ? json_string_value(jd) : "";
    if (deliver[0] == '\0' || !nd_subj_valid_pub(deliver, strlen(deliver))) {
        json_decref(req);
        nd_jserr_set(&err, ND_JSE_SNAPSHOT_DELIVER_SUBJECT_INVALID, NULL);
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    /* nats-server takes any chunk size; one larger than a client may receive is cut down. */
    int64_t chunk = json_is_integer(jc) ? json_integer_value(jc) : 0;
    int64_t maxp = nd_server_live_get(jsa->js->srv, max_payload);
    if (chunk <= 0)
        chunk = SNAP_CHUNK_DEFAULT;
    if (maxp > 0 && chunk > maxp)
        chunk = maxp;
    int64_t start = js_now();
    nd_log_info("Starting snapshot for stream '%s > %s'", nd_acct_name(jsa->acct), st->name);
    nd_store_state_t s;
    nd_store_state(st->store, &s);
    int fd = staging_file(jsa->js, "js-snapshot");
    nd_err_t e = ND_OK;
    wbuf_t *w = NULL;
    if (fd >= 0) {
        w = nd_xcalloc(1, sizeof *w);
        w->fd = fd;
        e = st->store->ops->snapshot(st->store, wb_write, w);
        if (e == ND_OK && write_all(fd, w->buf, w->n) != 0)
            e = ND_ERR_STORE_IO;
    }
    if (fd < 0 || e != ND_OK) {
        const char *why = fd < 0 ? strerror(errno) : nd_strerror(e);
        nd_log_warn("Snapshot of stream '%s > %s' failed: %s", nd_acct_name(jsa->acct), st->name,
                    why);
        nd_jserr_setf(&err, ND_JSE_STREAM_SNAPSHOT_F, "%s", why);
        js_send_error(ctx, st->ic, m->reply, what, &err);
        if (fd >= 0)
            close(fd);
        nd_free(w);
        json_decref(req);
        return;
    }
    uint64_t size = w->total;
    nd_free(w);
    json_t *o = js_resp(what);
    json_object_set_new(o, "config", json_deep_copy(st->cfg.json));
    json_object_set_new(o, "state", js_state_json(&s, NULL, NULL));
    js_send(ctx, st->ic, m->reply, o);
    json_t *a = adv_new(ctx, "snapshot_create", st->name, js_now());
    json_object_set_new(a, "state", js_state_json(&s, NULL, NULL));

    snap_tx_t *tx = nd_xcalloc(1, sizeof *tx);
    tx->create_adv = a;
    tx->jsa = jsa;
    tx->stream = nd_xstrdup(st->name);
    tx->deliver = nd_xstrdup(deliver);
    char id[23];
    nd_event_id(ctx, id);
    tx->ack = js_path("$JS.SNAPSHOT.ACK.%s.%s", st->name, id);
    tx->fd = fd;
    tx->size = size;
    tx->bytes = s.bytes;
    tx->chunk = (size_t)chunk;
    tx->buf = nd_xmalloc(tx->chunk);
    tx->start_ns = start;
    json_decref(req);
    char *sub = js_path("%s.>", tx->ack);
    const char *subs[1] = {sub};
    nd_iclient_spawn(ctx, jsa->js->srv, jsa->acct, ND_CONN_SYSTEM, "js-snapshot", subs, 1, 0,
                     &tx_hooks, tx, NULL);
    nd_free(sub);
}

/* ---- restore: the receiver ---- */

typedef struct snap_rx {
    nd_jsa_t *jsa;
    nd_stream_cfg_t cfg;
    char *stream, *subject, *reply; /* reply: the request's, until answered */
    int fd;
    uint64_t total;
    int64_t start_ns, active_ns;
    bool answered, done;
} snap_rx_t;

/* What the receiver hands to the API service. */
typedef struct restore_done {
    nd_jsa_t *jsa;
    nd_stream_cfg_t cfg;
    nd_store_t *store; /* memory storage */
    char *staging;     /* file storage: the directory holding msgs/ */
    char *reply;
    uint64_t total;
    int64_t start_ns;
} restore_done_t;

static void
restore_complete_adv(nd_ctx_t *ctx, nd_iclient_t *ic, nd_jsa_t *jsa, const char *stream,
                     int64_t start, uint64_t total)
{
    int64_t end = js_now();
    json_t *o = adv_new(ctx, "restore_complete", stream, end);
    json_object_set_new(o, "start", js_time(start));
    json_object_set_new(o, "end", js_time(end));
    json_object_set_new(o, "bytes", json_integer((json_int_t)total));
    adv_send(ctx, ic, jsa, "RESTORE_COMPLETE", stream, o);
}

/* The final answer to a restore that failed: a create response with 10062. */
static void
restore_fail(nd_ctx_t *ctx, nd_iclient_t *ic, nd_jsa_t *jsa, const char *stream, const char *reply,
             const char *why, int64_t start, uint64_t total)
{
    nd_log_warn("Restore failed for %" PRIu64 " B for stream '%s > %s': %s", total,
                nd_acct_name(jsa->acct), stream, why);
    restore_complete_adv(ctx, ic, jsa, stream, start, total);
    nd_jserr_t err;
    nd_jserr_setf(&err, ND_JSE_STREAM_RESTORE_F, "%s", why);
    js_send_error(ctx, ic, reply, "stream_create_response", &err);
}

static void
done_free(void *data)
{
    restore_done_t *d = data;
    if (d->store != NULL && d->store->ops->destroy(d->store) != ND_OK)
        nd_log_warn("JetStream could not discard a restored store");
    if (d->staging != NULL)
        js_remove_tree(d->staging);
    nd_stream_cfg_free(&d->cfg);
    nd_free(d->staging);
    nd_free(d->reply);
    nd_free(d);
}

/* On the API service's turn: the restored store becomes a stream. */
static void
restore_install(nd_ctx_t *ctx, nd_iclient_t *api, void *arg, void *data)
{
    (void)arg;
    restore_done_t *d = data;
    nd_jsa_t *jsa = d->jsa;
    char name[256];
    snprintf(name, sizeof name, "%s", d->cfg.name);
    const char *why = NULL;
    if (jsa_find(jsa, name) != NULL)
        why = nd_jse_info(ND_JSE_STREAM_NAME_EXIST_RESTORE_FAILED)->desc;
    else if (jsa->limits.max_streams > 0 && (int64_t)jsa->nstreams >= jsa->limits.max_streams)
        why = nd_jse_info(ND_JSE_MAXIMUM_STREAMS_LIMIT)->desc;
    for (size_t i = 0; why == NULL && i < jsa->nstreams; i++)
        for (size_t a = 0; why == NULL && a < d->cfg.nsubjects; a++)
            for (size_t b = 0; why == NULL && b < jsa->streams[i]->acfg.nsubjects; b++)
                if (nd_subjects_overlap(d->cfg.subjects[a], jsa->streams[i]->acfg.subjects[b]))
                    why = nd_jse_info(ND_JSE_STREAM_SUBJECT_OVERLAP)->desc;
    if (why != NULL) {
        count_error(jsa);
        restore_fail(ctx, api, jsa, name, d->reply, why, d->start_ns, d->total);
        done_free(d);
        return;
    }
    char *msgs = d->staging != NULL ? js_path("%s/msgs", d->staging) : NULL;
    nd_store_t *store = d->store;
    d->store = NULL; /* the call takes it */
    nd_jserr_t err;
    nd_stream_t *st = js_stream_create_restored(ctx, jsa, &d->cfg, store, msgs, d->reply, &err);
    nd_free(msgs);
    if (st == NULL) {
        count_error(jsa);
        restore_fail(ctx, api, jsa, name, d->reply, err.desc, d->start_ns, d->total);
        done_free(d);
        return;
    }
    json_t *o = adv_new(ctx, "stream_action", name, js_now());
    json_object_set_new(o, "action", json_string("create"));
    if (jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(jsa->js->domain));
    char *subj = js_path("$JS.EVENT.ADVISORY.STREAM.CREATED.%s", name);
    js_send(ctx, api, subj, o);
    nd_free(subj);
    restore_complete_adv(ctx, api, jsa, name, d->start_ns, d->total);
    nd_log_info("Completed restore of %" PRIu64 " B for stream '%s > %s' in %" PRId64 "ms",
                d->total, nd_acct_name(jsa->acct), name, (js_now() - d->start_ns) / 1000000);
    done_free(d);
}

static long
rx_read(void *arg, void *p, size_t n)
{
    int fd = *(int *)arg;
    for (;;) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        return (long)r;
    }
}

/* The transfer is complete: rebuild the store and hand it to the API service. */
static void
rx_finish(nd_ctx_t *ctx, nd_iclient_t *ic, snap_rx_t *rx, const char *reply)
{
    rx->done = true;
    nd_js_t *js = rx->jsa->js;
    nd_store_cfg_t sc;
    memset(&sc, 0, sizeof sc);
    nd_stream_cfg_store(&rx->cfg, &sc);
    char *staging = NULL, *msgs = NULL;
    if (rx->cfg.storage == ND_STORAGE_FILE) {
        char id[23];
        nd_event_id(ctx, id);
        staging = js_path("%s/%s/restore-%s", js->store_dir, SNAP_STAGING, id);
        msgs = js_path("%s/msgs", staging);
        sc.dir = msgs;
        sc.sync_interval_ns = js->sync_interval_ns;
    }
    nd_store_t *store = NULL;
    nd_err_t e = ND_ERR_STORE_IO;
    if (lseek(rx->fd, 0, SEEK_SET) == 0 && (staging == NULL || js_mkdirs(staging) == 0))
        e = nd_store_restore(&sc, rx_read, &rx->fd, &store);
    nd_free(msgs);
    if (e != ND_OK) {
        restore_fail(ctx, ic, rx->jsa, rx->stream, reply, nd_strerror(e), rx->start_ns, rx->total);
        if (staging != NULL)
            js_remove_tree(staging);
        nd_free(staging);
        nd_iclient_stop(ctx, ic);
        return;
    }
    if (staging != NULL) {
        /* Closed here and opened again by the stream, from its own directory. */
        store->ops->close(store);
        store = NULL;
    }
    restore_done_t *d = nd_xcalloc(1, sizeof *d);
    d->jsa = rx->jsa;
    d->cfg = rx->cfg;
    memset(&rx->cfg, 0, sizeof rx->cfg);
    d->store = store;
    d->staging = staging;
    d->reply = nd_xstrdup(reply);
    d->total = rx->total;
    d->start_ns = rx->start_ns;
    nd_iclient_call(ctx, rx->jsa->api, restore_install, d, done_free);
    nd_iclient_stop(ctx, ic);
}

static void
rx_on_ready(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    snap_rx_t *rx = arg;
    if (rx->answered)
        return;
    rx->answered = true;
    json_t *o = js_resp("stream_restore_response");
    json_object_set_new(o, "deliver_subject", json_string(rx->subject));
    js_send(ctx, ic, rx->reply, o);
    rx->active_ns = js_now();
    nd_iclient_timer(ctx, ic, (uint64_t)RESTORE_STALL_NS);
}

static void
rx_on_msg(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    snap_rx_t *rx = arg;
    if (rx->done)
        return;
    rx->active_ns = js_now();
    if (m->reply_len == 0) {
        rx->done = true;
        nd_log_warn("Restore for stream '%s > %s' requires reply subject for each chunk",
                    nd_acct_name(rx->jsa->acct), rx->stream);
        restore_complete_adv(ctx, ic, rx->jsa, rx->stream, rx->start_ns, rx->total);
        nd_iclient_stop(ctx, ic);
        return;
    }
    if (m->data_len == 0) {
        rx_finish(ctx, ic, rx, m->reply);
        return;
    }
    rx->total += m->data_len;
    nd_js_t *js = rx->jsa->js;
    int64_t used = atomic_load_explicit(&js->store_used, memory_order_relaxed);
    const char *why = NULL;
    if (js->max_store > 0 && used + (int64_t)rx->total > js->max_store)
        why = nd_jse_info(ND_JSE_INSUFFICIENT_RESOURCES)->desc;
    else if (write_all(rx->fd, m->data, m->data_len) != 0)
        why = strerror(errno);
    if (why != NULL) {
        rx->done = true;
        restore_fail(ctx, ic, rx->jsa, rx->stream, m->reply, why, rx->start_ns, rx->total);
        nd_iclient_stop(ctx, ic);
        return;
    }
    nd_iclient_publish(ctx, ic, m->reply, NULL, NULL, 0, "", 0);
}

static void
rx_on_timer(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    snap_rx_t *rx = arg;
    if (rx->done)
        return;
    int64_t idle = js_now() - rx->active_ns;
    if (idle < RESTORE_STALL_NS) {
        nd_iclient_timer(ctx, ic, (uint64_t)(RESTORE_STALL_NS - idle));
        return;
    }
    rx->done = true;
    nd_log_warn("Restore for stream '%s > %s' is stalled", nd_acct_name(rx->jsa->acct), rx->stream);
    restore_complete_adv(ctx, ic, rx->jsa, rx->stream, rx->start_ns, rx->total);
    nd_iclient_stop(ctx, ic);
}

static void
rx_on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ctx;
    (void)ic;
    snap_rx_t *rx = arg;
    close(rx->fd);
    nd_stream_cfg_free(&rx->cfg);
    nd_free(rx->stream);
    nd_free(rx->subject);
    nd_free(rx->reply);
    nd_free(rx);
}

static const nd_iclient_hooks_t rx_hooks = {
    .on_msg = rx_on_msg,
    .on_ready = rx_on_ready,
    .on_timer = rx_on_timer,
    .on_close = rx_on_close,
};

/* ---- restore: the API service's part ---- */

static void
restore_error(nd_ctx_t *ctx, nd_iclient_t *api, nd_jsa_t *jsa, const char *reply,
              const nd_jserr_t *err)
{
    count_error(jsa);
    json_t *o = js_resp("stream_restore_response");
    js_resp_error(o, err);
    json_object_set_new(o, "deliver_subject", json_string(""));
    js_send(ctx, api, reply, o);
}

void
js_restore_request(nd_ctx_t *ctx, nd_iclient_t *api, nd_jsa_t *jsa, const nd_imsg_t *m,
                   const char *name)
{
    nd_jserr_t err;
    if (empty_request(m)) {
        nd_jserr_set(&err, ND_JSE_BAD_REQUEST, NULL);
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    json_t *req = js_body(m, &err);
    if (req == NULL) {
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    json_t *cj = json_object_get(req, "config");
    cj = json_is_object(cj) ? json_deep_copy(cj) : json_object();
    json_decref(req);
    json_t *jn = json_object_get(cj, "name");
    if (!json_is_string(jn) || json_string_length(jn) == 0)
        json_object_set_new(cj, "name", json_string(name));
    nd_stream_cfg_env_t env;
    js_cfg_env(jsa, &env, false);
    nd_stream_cfg_t cfg;
    bool ok = nd_stream_cfg_from_json(cj, NULL, &env, &cfg, &err);
    json_decref(cj);
    if (!ok) {
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    if (jsa->limits.max_streams > 0 && (int64_t)jsa->nstreams >= jsa->limits.max_streams) {
        nd_stream_cfg_free(&cfg);
        nd_jserr_set(&err, ND_JSE_MAXIMUM_STREAMS_LIMIT, NULL);
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    if (jsa_find(jsa, name) != NULL || jsa_find(jsa, cfg.name) != NULL) {
        nd_stream_cfg_free(&cfg);
        nd_jserr_set(&err, ND_JSE_STREAM_NAME_EXIST_RESTORE_FAILED, NULL);
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    int fd = staging_file(jsa->js, "js-restore");
    if (fd < 0) {
        nd_stream_cfg_free(&cfg);
        nd_jserr_set(&err, ND_JSE_TEMP_STORAGE_FAILED, NULL);
        restore_error(ctx, api, jsa, m->reply, &err);
        return;
    }
    snap_rx_t *rx = nd_xcalloc(1, sizeof *rx);
    rx->jsa = jsa;
    rx->cfg = cfg;
    rx->stream = nd_xstrdup(cfg.name);
    rx->fd = fd;
    rx->reply = nd_xstrdup(m->reply);
    rx->start_ns = js_now();
    char id[23];
    nd_event_id(ctx, id);
    rx->subject = js_path("$JS.SNAPSHOT.RESTORE.%s.%s", rx->stream, id);
    nd_log_info("Starting restore for stream '%s > %s'", nd_acct_name(jsa->acct), rx->stream);
    adv_send(ctx, api, jsa, "RESTORE_CREATE", rx->stream,
             adv_new(ctx, "restore_create", rx->stream, rx->start_ns));
    const char *subs[1] = {rx->subject};
    nd_iclient_spawn(ctx, jsa->js->srv, jsa->acct, ND_CONN_SYSTEM, "js-restore", subs, 1, 0,
                     &rx_hooks, rx, NULL);
}
