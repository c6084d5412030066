/* A stream: an internal client that subscribes to the stream's subjects and owns its store
 * (DESIGN.md §4). Publishes arrive in its mailbox from the publish path, in order; API requests
 * about it arrive forwarded by the account's API service (jsapi.c) with a JS_OP_* tag, and
 * configuration changes and deletion as calls. All store access happens on this actor's turn.
 *
 * Group commit: a turn handles up to ND_ACTOR_BATCH messages; their acknowledgements wait in
 * st->acks until the turn ends, when one sync (with sync_interval: always) makes the whole
 * batch durable before any acknowledgement leaves. With the default policy every store call has
 * already reached the operating system (write()) when it returns, so acknowledgements survive
 * a crash of the process.
 *
 * On disk: <account dir>/streams/<name>/meta.nd (msgpack: version, created, config JSON) and
 * msgs/ (the file store). Memory streams keep nothing on disk and do not come back after a
 * restart, as in nats-server.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "auth/auth.h"
#include "js/js_int.h"
#include "net/sysclient.h"
#include "util/evid.h"
#include "util/log.h"

#define META_FILE "meta.nd"
#define META_MAX  (4u << 20)

void
js_stream_ref(nd_stream_t *st)
{
    atomic_fetch_add_explicit(&st->refs, 1, memory_order_relaxed);
}

void
js_stream_unref(nd_stream_t *st)
{
    if (atomic_fetch_sub_explicit(&st->refs, 1, memory_order_acq_rel) != 1)
        return;
    nd_stream_cfg_free(&st->acfg);
    nd_stream_cfg_free(&st->cfg);
    nd_stream_cfg_free(&st->scfg);
    pthread_mutex_destroy(&st->mu);
    nd_store_close(&st->ls.base); /* when its consumers kept it open past the actor */
    nd_store_locked_fini(&st->ls);
    nd_free(st->consumers);
    nd_free(st->name);
    nd_free(st->dir);
    nd_free(st->pub_ack);
    nd_free(st);
}

/* ---- metadata file ---- */

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

static void
pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

/* Writes meta.nd atomically (temporary file, fsync, rename, fsync of the directory). */
static int
meta_write(const char *dir, int64_t created, const json_t *cfg)
{
    char *text = json_dumps(cfg, JSON_COMPACT);
    if (text == NULL)
        return -1;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    pack_str(&pk, "version");
    msgpack_pack_int64(&pk, 1);
    pack_str(&pk, "created");
    msgpack_pack_int64(&pk, created);
    pack_str(&pk, "config");
    pack_str(&pk, text);
    free(text);
    char *tmp = js_path("%s/%s.tmp", dir, META_FILE), *path = js_path("%s/%s", dir, META_FILE);
    int rc = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd >= 0) {
        rc = write_all(fd, sb.data, sb.size) == 0 && fsync(fd) == 0 ? 0 : -1;
        close(fd);
        if (rc == 0)
            rc = rename(tmp, path);
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    msgpack_sbuffer_destroy(&sb);
    nd_free(tmp);
    nd_free(path);
    return rc;
}

/* Reads meta.nd. Returns: the config object (new reference) and *created, or NULL. */
static json_t *
meta_read(const char *dir, int64_t *created, char *why, size_t whylen)
{
    char *path = js_path("%s/%s", dir, META_FILE);
    FILE *f = fopen(path, "rb");
    nd_free(path);
    if (f == NULL) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    char *buf = nd_xmalloc(META_MAX);
    size_t n = fread(buf, 1, META_MAX, f);
    fclose(f);
    json_t *cfg = NULL;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    snprintf(why, whylen, "malformed metadata");
    if (n < META_MAX && msgpack_unpack_next(&up, buf, n, &off) == MSGPACK_UNPACK_SUCCESS &&
        up.data.type == MSGPACK_OBJECT_MAP) {
        const msgpack_object_map *m = &up.data.via.map;
        for (uint32_t i = 0; i < m->size; i++) {
            const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
            if (k->type != MSGPACK_OBJECT_STR)
                continue;
            if (k->via.str.size == 7 && memcmp(k->via.str.ptr, "created", 7) == 0 &&
                (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER ||
                 v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER))
                *created = v->via.i64;
            else if (k->via.str.size == 6 && memcmp(k->via.str.ptr, "config", 6) == 0 &&
                     v->type == MSGPACK_OBJECT_STR && cfg == NULL)
                cfg = json_loadb(v->via.str.ptr, v->via.str.size, 0, NULL);
        }
    }
    msgpack_unpacked_destroy(&up);
    nd_free(buf);
    if (cfg != NULL && !json_is_object(cfg)) {
        json_decref(cfg);
        cfg = NULL;
    }
    return cfg;
}

/* ---- the actor ---- */

static void
stats_publish(nd_stream_t *st)
{
    js_stream_stats_t s;
    js_usage_sync(st);
    nd_store_state(st->store, &s.state);
    s.bytes_used = (int64_t)s.state.bytes;
    pthread_mutex_lock(&st->mu);
    s.state.consumers = st->nconsumers;
    st->stats = s;
    pthread_mutex_unlock(&st->mu);
}

/* What consumers may deliver: everything stored so far (call once it reached the sync
 * policy, or at open). */
static void
publish_visible(nd_stream_t *st)
{
    nd_store_state_t ss;
    nd_store_state(st->store, &ss);
    atomic_store_explicit(&st->visible_seq, ss.last_seq, memory_order_release);
}

static void
arm_tick(nd_ctx_t *ctx, nd_stream_t *st, int64_t deadline)
{
    if (deadline <= 0)
        return;
    if (st->next_tick != 0 && st->next_tick <= deadline)
        return;
    st->next_tick = deadline;
    int64_t now = js_now();
    nd_iclient_timer(ctx, st->ic, deadline > now ? (uint64_t)(deadline - now) : 1);
}

/* Subject delete markers (nats-server 2.11): during tick or update_cfg, the store reports each
 * subject whose last message expiry (max_age or TTL) removed; once the store call returned, the
 * stream publishes a marker to it through its own publish path (rollup sub, TTL
 * subject_delete_marker_ttl), as nats-server does. */
static void
on_subject_expired(void *arg, const char *subj, size_t len)
{
    nd_stream_t *st = arg;
    if (st->nexpired == st->expired_cap) {
        st->expired_cap = st->expired_cap ? st->expired_cap * 2 : 8;
        st->expired = nd_xrealloc(st->expired, st->expired_cap * sizeof(char *));
    }
    st->expired[st->nexpired++] = nd_xstrndup(subj, len);
}

/* The store's config for cfg: its limits, the server's sync interval, and the marker report
 * when the stream makes markers. (sync_interval: always syncs once per turn, group commit,
 * not once per message: the store itself never syncs per call.) */
static void
store_cfg(nd_stream_t *st, const nd_stream_cfg_t *cfg, nd_store_cfg_t *sc)
{
    memset(sc, 0, sizeof *sc);
    nd_stream_cfg_store(cfg, sc);
    sc->sync_interval_ns = st->jsa->js->sync_interval_ns;
    sc->sync_always = false;
    /* ... but a consumer's state write, which a double ack's reply waits for, is synced on its
     * own with sync_interval: always */
    sc->sync_consumers = st->jsa->js->sync_always;
    if (cfg->subject_delete_marker_ttl_ns > 0) {
        sc->on_subject_expired = on_subject_expired;
        sc->expired_arg = st;
    }
}

static void
publish_markers(nd_ctx_t *ctx, nd_stream_t *st)
{
    char **v = st->expired;
    size_t n = st->nexpired;
    st->expired = NULL;
    st->nexpired = st->expired_cap = 0;
    /* Nats-TTL as Go prints a time.Duration of whole seconds ("30s", "1m0s", "1h0m0s"). */
    int64_t s = st->cfg.subject_delete_marker_ttl_ns / 1000000000LL;
    char dur[64];
    if (s >= 3600)
        snprintf(dur, sizeof dur, "%" PRId64 "h%dm%ds", s / 3600, (int)(s / 60 % 60), (int)(s % 60));
    else if (s >= 60)
        snprintf(dur, sizeof dur, "%dm%ds", (int)(s / 60), (int)(s % 60));
    else
        snprintf(dur, sizeof dur, "%ds", (int)s);
    char hdr[160];
    int hl = snprintf(hdr, sizeof hdr,
                      "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: %s\r\nNats-Rollup: sub\r\n\r\n",
                      dur);
    for (size_t i = 0; i < n; i++) {
        if (st->cfg.subject_delete_marker_ttl_ns > 0 && !st->stopped) {
            nd_imsg_t m = {.subject = v[i], .subject_len = strlen(v[i]), .reply = "",
                           .hdr = hdr, .hdr_len = (size_t)hl, .data = ""};
            js_stream_publish(ctx, st, &m);
        }
        nd_free(v[i]);
    }
    nd_free(v);
}

/* The store's tick, then the delete markers it asked for (storing one can report no more, but
 * the rounds are bounded all the same). Returns: the next deadline, 0 none. */
static int64_t
store_tick(nd_ctx_t *ctx, nd_stream_t *st, int64_t now)
{
    nd_store_state_t before, after;
    nd_store_state(st->store, &before);
    int64_t next = st->store->ops->tick(st->store, now);
    nd_store_state(st->store, &after);
    if (after.msgs < before.msgs || after.first_seq != before.first_seq)
        st->turn_removed = true;
    for (int round = 0; st->nexpired > 0 && round < 4; round++) {
        publish_markers(ctx, st);
        next = st->store->ops->tick(st->store, now);
    }
    return next;
}

void
js_stream_arm(nd_ctx_t *ctx, nd_stream_t *st, int64_t deadline)
{
    arm_tick(ctx, st, deadline);
}

static void
send_acks(nd_ctx_t *ctx, nd_stream_t *st)
{
    for (size_t i = 0; i < st->nacks; i++) {
        js_pending_ack_t *a = &st->acks[i];
        nd_iclient_publish(ctx, st->ic, a->reply, NULL, NULL, 0, a->body, strlen(a->body));
        nd_free(a->reply);
        nd_free(a->body);
    }
    st->nacks = 0;
}

static void
on_msg(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    if (st->stopped || st->store == NULL)
        return;
    if (m->tag != JS_OP_PUBLISH) {
        js_audit_req_t audit;
        js_audit_view(&audit, m);
        js_audit_begin(&audit);
        if (m->tag >= JS_OP_CONSUMER_CREATE)
            js_consumer_stream_api(ctx, st, m);
        else
            js_stream_api(ctx, st, m);
        js_audit_end();
        return;
    }
    if (st->srcs != NULL && js_sources_msg(ctx, st, m)) /* mirror/sources (stream_source.c) */
        return;
    if (m->subject_len > 19 && memcmp(m->subject, "$JS.API.DIRECT.GET.", 19) == 0) {
        js_stream_direct_get(ctx, st, m);
        return;
    }
    js_stream_publish(ctx, st, m);
}

/* ---- out of space ----
 * A store write that fails with ENOSPC (or EDQUOT) leaves the file store as it was before the
 * failed call, with the records it could not write still buffered in memory. nats-server
 * disables JetStream until a restart; here the stream drops what did not reach the disk by
 * reopening its store (state, dedup ids: what the files hold), answers 10077 to every publish
 * while out of space, without touching the store, and probes once a second with a small write
 * next to the store; when the probe succeeds, publishes go to the store again. Acknowledged
 * messages are never involved: an ack leaves only after its turn's write (and with
 * sync_interval: always, its fsync) succeeded. A message whose publisher got the error may
 * still be stored (the close of the store retries its buffer once): at least once, never lost. */

#define SPACE_PROBE_NS   1000000000LL
#define SPACE_PROBE_SIZE (64u << 10)

/* nats-server's JSServerOutOfSpaceAdvisory, in the system account (as nats-server's
 * publishAdvisory with no account); nothing when none is configured. */
static void
advise_no_space(nd_ctx_t *ctx, nd_stream_t *st)
{
    nd_server_t *srv = st->jsa->js->srv;
    const char *sysname = srv->opts.system_account;
    nd_auth_t *a = srv->auth != NULL ? nd_auth_slot_get(srv->auth) : NULL;
    nd_acct_t *sys = NULL;
    for (size_t i = 0; a != NULL && sysname != NULL && i < a->naccts && sys == NULL; i++)
        if (a->accts[i].acct != NULL && strcmp(nd_acct_name(a->accts[i].acct), sysname) == 0)
            sys = a->accts[i].acct;
    if (sys != NULL) {
        char id[23];
        nd_event_id(ctx, id);
        json_t *o = json_object();
        json_object_set_new(o, "type",
                            json_string("io.nats.jetstream.advisory.v1.server_out_of_space"));
        json_object_set_new(o, "id", json_string(id));
        json_object_set_new(o, "timestamp", js_time(js_now()));
        json_object_set_new(
            o, "server",
            json_string(srv->opts.server_name != NULL ? srv->opts.server_name : srv->server_id));
        json_object_set_new(o, "server_id", json_string(srv->server_id));
        json_object_set_new(o, "stream", json_string(st->name));
        json_object_set_new(o, "cluster",
                            json_string(srv->opts.cluster != NULL && srv->opts.cluster->name
                                            ? srv->opts.cluster->name
                                            : ""));
        if (st->jsa->js->domain[0] != '\0')
            json_object_set_new(o, "domain", json_string(st->jsa->js->domain));
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        static const char subj[] = "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE";
        nd_sys_publish(ctx, sys, subj, sizeof subj - 1, NULL, 0, NULL, 0, text, strlen(text));
        free(text);
    }
    if (a != NULL)
        nd_auth_unref(ctx, a);
}

/* Whether a write of SPACE_PROBE_SIZE bytes succeeds next to the store now. */
static bool
space_back(nd_stream_t *st)
{
    static const char zero[SPACE_PROBE_SIZE];
    char *p = js_path("%s/space.probe", st->dir);
    bool ok = false;
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd >= 0) {
        ok = write_all(fd, zero, sizeof zero) == 0;
        close(fd);
        unlink(p);
    }
    nd_free(p);
    return ok;
}

static nd_err_t open_store(nd_stream_t *st, nd_store_recovery_t *rep);

/* A store call of this turn failed with errno err (its acks are errors already). Returns: false
 * when the store could not be reopened (the caller stops the stream after sending the acks). */
static bool
write_failed(nd_ctx_t *ctx, nd_stream_t *st, int err)
{
    if (st->cfg.storage != ND_STORAGE_FILE || (err != ENOSPC && err != EDQUOT))
        return true; /* other errors: the store's own rules (an fsync error is final) */
    const char *acct = nd_acct_name(st->jsa->acct);
    if (!st->no_space) {
        nd_log_error("JetStream out of File resources on stream '%s > %s': %s; writes refused "
                     "until space returns",
                     acct, st->name, strerror(err));
        advise_no_space(ctx, st);
        st->no_space = true;
    }
    /* Drop what did not reach the disk: the store comes back as its files are. */
    nd_store_close(st->store);
    st->store = NULL;
    nd_store_recovery_t rep;
    memset(&rep, 0, sizeof rep);
    nd_err_t e = open_store(st, &rep);
    if (e != ND_OK) {
        nd_log_error("JetStream could not reopen the store of stream '%s > %s': %s%s%s; the "
                     "stream stops",
                     acct, st->name, nd_strerror(e), rep.io_errno ? ": " : "",
                     rep.io_errno ? strerror(rep.io_errno) : "");
        return false;
    }
    js_stream_dedup_free(st);
    nd_free(st->last_msg_id);
    st->last_msg_id = NULL;
    js_stream_dedup_rebuild(st);
    stats_publish(st);
    arm_tick(ctx, st, js_now() + SPACE_PROBE_NS);
    return true;
}

static void
on_turn_end(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    if (st->stopped || st->store == NULL)
        return;
    int werr = st->write_errno;
    st->write_errno = 0;
    if (st->dirty) {
        st->dirty = false;
        /* The batch reaches the operating system (default policy: write()) or the disk
         * (sync_interval: always: one fsync for the whole batch) before any of its
         * acknowledgements leaves. */
        st->store->io_errno = 0;
        bool always = st->jsa->js->sync_always && st->cfg.storage == ND_STORAGE_FILE;
        nd_err_t e = always ? st->store->ops->sync(st->store) : st->store->ops->flush(st->store);
        if (e != ND_OK && werr == 0) {
            werr = nd_store_io_errno(st->store) != 0 ? nd_store_io_errno(st->store) : EIO;
            nd_log_error("JetStream failed to %s stream '%s > %s': %s", always ? "sync" : "write",
                         nd_acct_name(st->jsa->acct), st->name, strerror(werr));
        }
        int64_t now = js_now();
        int64_t next = store_tick(ctx, st, now);
        /* The tick writes what expiry removed; it reports a failure only through io_errno. */
        if (werr == 0 && nd_store_io_errno(st->store) != 0) {
            werr = nd_store_io_errno(st->store);
            nd_log_error("JetStream failed to write stream '%s > %s': %s",
                         nd_acct_name(st->jsa->acct), st->name, strerror(werr));
        }
        stats_publish(st);
        int64_t dd = js_stream_dedup_expire(st, now);
        arm_tick(ctx, st, next == 0 || (dd != 0 && dd < next) ? dd : next);
    }
    /* consumers hear of what the turn stored once it reached the sync policy */
    if (werr == 0) {
        publish_visible(st);
        js_consumers_signal(ctx, st);
    }
    /* A batch that did not reach the sync policy is not acknowledged: every PubAck of the
     * turn becomes an error (a message may still be stored: at least once, never lost). Out of
     * space, the store is reopened before the errors leave, so a publisher that sees one
     * finds its message gone. */
    bool alive = true;
    if (werr != 0) {
        js_stream_acks_fail(st, werr);
        alive = write_failed(ctx, st, werr);
    }
    send_acks(ctx, st);
    if (!alive) {
        st->stopped = true;
        nd_iclient_stop(ctx, st->ic);
    }
}

static void
on_timer(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    if (st->stopped || st->store == NULL)
        return;
    st->next_tick = 0;
    int64_t now = js_now();
    if (st->no_space) {
        if (space_back(st)) {
            st->no_space = false;
            nd_log_info("JetStream stream '%s > %s' has space again: writes resumed",
                        nd_acct_name(st->jsa->acct), st->name);
        } else {
            arm_tick(ctx, st, now + SPACE_PROBE_NS);
        }
    }
    int64_t next = store_tick(ctx, st, now);
    int64_t dd = js_stream_dedup_expire(st, now);
    if (dd != 0 && (next == 0 || dd < next))
        next = dd;
    int64_t sn = js_sources_tick(ctx, st, now);
    if (sn != 0 && (next == 0 || sn < next))
        next = sn;
    stats_publish(st);
    arm_tick(ctx, st, next);
}

static void
create_answer(nd_ctx_t *ctx, nd_stream_t *st)
{
    if (st->create_reply_to == NULL)
        return;
    nd_jserr_t err;
    json_t *info = js_stream_info(st, NULL, &err);
    json_t *o = js_resp("stream_create_response");
    json_object_update(o, info);
    json_decref(info);
    if (!st->restored) /* nats-server's restore answers a create response without it */
        json_object_set_new(o, "did_create", json_true());
    js_audit_begin(st->create_audit);
    js_send(ctx, st->ic, st->create_reply_to, o);
    js_audit_end();
    js_audit_free(st->create_audit);
    st->create_audit = NULL;
    nd_free(st->create_reply_to);
    st->create_reply_to = NULL;
}

/* A recovered stream is subscribed (or closed): the start may stop waiting for it. */
static void
recovered(nd_stream_t *st)
{
    if (!st->recovering || !st->opened || !st->subscribed)
        return;
    st->recovering = false;
    nd_js_t *js = st->jsa->js;
    pthread_mutex_lock(&js->rmu);
    js->recovering--;
    pthread_cond_broadcast(&js->rcv);
    pthread_mutex_unlock(&js->rmu);
}

static void
on_ready(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    st->subscribed = true;
    create_answer(ctx, st);
    recovered(st);
    /* A recovered store may hold messages to expire: the first tick schedules them. */
    if (!st->stopped && st->store != NULL)
        arm_tick(ctx, st, store_tick(ctx, st, js_now()));
    js_sources_ready(ctx, st); /* starts the mirror/sources, or sends their requests */
}

/* The stream's bytes leave the account's and the server's usage (close, delete). */
static void
release_usage(nd_stream_t *st)
{
    bool mem = st->cfg.storage == ND_STORAGE_MEMORY;
    atomic_fetch_sub_explicit(mem ? &st->jsa->mem_used : &st->jsa->store_used, st->used,
                              memory_order_relaxed);
    atomic_fetch_sub_explicit(mem ? &st->jsa->js->mem_used : &st->jsa->js->store_used, st->used,
                              memory_order_relaxed);
    st->used = 0;
}

static void
on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    send_acks(ctx, st); /* nothing normally: turns end with them sent */
    js_sources_stop(ctx, st, false);
    nd_free(st->create_reply_to);
    st->create_reply_to = NULL;
    js_audit_free(st->create_audit);
    st->create_audit = NULL;
    release_usage(st);
    /* The consumers write their state into the store as they close: it closes with the last
     * reference on the stream (js_stream_unref) when some are still there. */
    bool consumers = js_stream_nconsumers(st) > 0;
    js_consumers_stop(ctx, st, false);
    if (st->store != NULL && !consumers) /* a deleted stream's store is gone (do_delete) */
        nd_store_close(st->store);
    st->store = NULL;
    for (size_t i = 0; i < st->nexpired; i++)
        nd_free(st->expired[i]);
    nd_free(st->expired);
    st->expired = NULL;
    st->nexpired = st->expired_cap = 0;
    js_stream_dedup_free(st);
    nd_xf_free(st->xf);
    nd_xf_free(st->rp_xf);
    st->xf = st->rp_xf = NULL;
    nd_free(st->acks);
    nd_free(st->last_msg_id);
    st->opened = st->subscribed = true;
    recovered(st); /* never let the start wait for a stream that closed */
    pthread_mutex_lock(&st->jsa->mu);
    st->ic = NULL;
    pthread_mutex_unlock(&st->jsa->mu);
    js_stream_unref(st); /* the actor's */
}

static const nd_iclient_hooks_t stream_hooks = {
    .on_msg = on_msg,
    .on_ready = on_ready,
    .on_turn_end = on_turn_end,
    .on_timer = on_timer,
    .on_close = on_close,
};

/* The subjects the actor listens on: the stream's, and its direct-get ones. */
static void
spawn(nd_ctx_t *ctx, nd_stream_t *st)
{
    const nd_stream_cfg_t *c = &st->cfg;
    size_t n = c->nsubjects;
    const char **subj = nd_xcalloc(n + 2, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        subj[i] = c->subjects[i];
    char d1[300], d2[300];
    if (c->allow_direct) {
        snprintf(d1, sizeof d1, "$JS.API.DIRECT.GET.%s", st->name);
        snprintf(d2, sizeof d2, "$JS.API.DIRECT.GET.%s.>", st->name);
        subj[n++] = d1;
        subj[n++] = d2;
    }
    char name[32];
    snprintf(name, sizeof name, "js-stream");
    js_stream_ref(st); /* the actor's */
    /* st->ic is written before the actor can run (its hooks read it) and under jsa->mu (the
     * API service reads it there). */
    pthread_mutex_lock(&st->jsa->mu);
    nd_iclient_spawn(ctx, st->jsa->js->srv, st->jsa->acct, ND_CONN_SYSTEM, name, subj, n, 0,
                     &stream_hooks, st, &st->ic);
    pthread_mutex_unlock(&st->jsa->mu);
    nd_free(subj);
}

static nd_err_t
open_store(nd_stream_t *st, nd_store_recovery_t *rep)
{
    nd_store_cfg_t sc;
    store_cfg(st, &st->cfg, &sc);
    nd_store_t *inner = NULL;
    nd_err_t e;
    if (st->cfg.storage == ND_STORAGE_MEMORY) {
        e = nd_memstore_open(&sc, &inner);
    } else {
        char *msgs = js_path("%s/msgs", st->dir);
        sc.dir = msgs;
        e = nd_filestore_open(&sc, &inner, rep);
        nd_free(msgs);
    }
    if (e == ND_OK) {
        st->store = nd_store_locked_set(&st->ls, inner);
        publish_visible(st);
    }
    return e;
}

static void
set_pub_ack(nd_stream_t *st)
{
    char buf[700];
    const char *dom = st->jsa->js->domain;
    json_t *n = json_string(st->name), *d = json_string(dom);
    char *qn = json_dumps(n, JSON_ENCODE_ANY), *qd = json_dumps(d, JSON_ENCODE_ANY);
    if (dom[0] != '\0')
        snprintf(buf, sizeof buf, "{\"stream\":%s, \"domain\":%s, \"seq\":", qn, qd);
    else
        snprintf(buf, sizeof buf, "{\"stream\":%s, \"seq\":", qn);
    free(qn);
    free(qd);
    json_decref(n);
    json_decref(d);
    nd_free(st->pub_ack);
    st->pub_ack = nd_xstrdup(buf);
}

static nd_stream_t *
stream_new(nd_jsa_t *jsa, nd_stream_cfg_t *cfg, int64_t created_ns)
{
    nd_stream_t *st = nd_xcalloc(1, sizeof *st);
    atomic_init(&st->refs, 1); /* the table's */
    st->jsa = jsa;
    st->name = nd_xstrdup(cfg->name);
    st->created_ns = created_ns;
    st->opened = true;
    pthread_mutex_init(&st->mu, NULL);
    nd_store_locked_init(&st->ls);
    st->cfg = *cfg; /* takes it */
    memset(cfg, 0, sizeof *cfg);
    nd_stream_cfg_copy(&st->acfg, &st->cfg);
    nd_stream_cfg_copy(&st->scfg, &st->cfg);
    if (st->cfg.storage == ND_STORAGE_FILE)
        st->dir = js_path("%s/streams/%s", jsa->dir, st->name);
    set_pub_ack(st);
    return st;
}

nd_stream_t *
js_stream_create(nd_ctx_t *ctx, nd_jsa_t *jsa, nd_stream_cfg_t *cfg, int64_t created_ns,
                 const char *reply, nd_jserr_t *err)
{
    nd_stream_t *st = stream_new(jsa, cfg, created_ns);
    if (st->dir != NULL && (js_mkdirs(st->dir) != 0 || meta_write(st->dir, created_ns, st->cfg.json) != 0)) {
        nd_jserr_setf(err, ND_JSE_STREAM_CREATE_F, "could not create stream directory: %s",
                      strerror(errno));
        js_stream_unref(st);
        return NULL;
    }
    nd_err_t e = open_store(st, NULL);
    if (e != ND_OK) {
        nd_jserr_setf(err, ND_JSE_STREAM_CREATE_F, "%s", nd_strerror(e));
        if (st->dir != NULL)
            js_remove_tree(st->dir);
        js_stream_unref(st);
        return NULL;
    }
    uint64_t purged;
    if (st->cfg.first_seq > 1 &&
        st->store->ops->compact(st->store, st->cfg.first_seq, &purged) != ND_OK)
        nd_log_warn("JetStream could not set the first sequence of stream '%s'", st->name);
    stats_publish(st);
    if (reply != NULL && reply[0] != '\0') {
        st->create_reply_to = nd_xstrdup(reply);
        st->create_audit = js_audit_save_current();
    }
    jsa_insert(jsa, st);
    spawn(ctx, st);
    nd_log_debug("JetStream created stream '%s > %s'", nd_acct_name(jsa->acct), st->name);
    return st;
}

nd_stream_t *
js_stream_create_restored(nd_ctx_t *ctx, nd_jsa_t *jsa, nd_stream_cfg_t *cfg, nd_store_t *store,
                          const char *msgs_dir, const char *reply, nd_jserr_t *err)
{
    nd_stream_t *st = stream_new(jsa, cfg, js_now());
    if (st->dir != NULL) {
        char *msgs = js_path("%s/msgs", st->dir);
        bool ok = msgs_dir != NULL && js_mkdirs(st->dir) == 0 && rename(msgs_dir, msgs) == 0 &&
                  meta_write(st->dir, st->created_ns, st->cfg.json) == 0;
        nd_free(msgs);
        nd_err_t e = ok ? open_store(st, NULL) : ND_ERR_STORE_IO;
        if (e != ND_OK) {
            nd_jserr_setf(err, ND_JSE_STREAM_RESTORE_F, "%s",
                          ok ? nd_strerror(e) : strerror(errno));
            js_remove_tree(st->dir);
            js_stream_unref(st);
            return NULL;
        }
    } else if (store == NULL) {
        nd_jserr_setf(err, ND_JSE_STREAM_RESTORE_F, "no store");
        js_stream_unref(st);
        return NULL;
    } else {
        st->store = nd_store_locked_set(&st->ls, store);
        publish_visible(st);
    }
    js_stream_dedup_rebuild(st);
    stats_publish(st);
    st->restored = true;
    if (reply != NULL && reply[0] != '\0')
        st->create_reply_to = nd_xstrdup(reply);
    jsa_insert(jsa, st);
    spawn(ctx, st);
    return st;
}

/* ---- update and delete (calls from the API service) ---- */

typedef struct update_call {
    nd_stream_cfg_t cfg;
    char *reply;
    js_audit_req_t *audit;
} update_call_t;

static void
update_drop(void *data)
{
    update_call_t *u = data;
    nd_stream_cfg_free(&u->cfg);
    nd_free(u->reply);
    js_audit_free(u->audit);
    nd_free(u);
}

static void
do_update(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_stream_t *st = arg;
    update_call_t *u = data;
    /* subjects: unsubscribe what went, subscribe what came */
    for (size_t i = 0; i < st->cfg.nsubjects; i++) {
        bool keep = false;
        for (size_t k = 0; k < u->cfg.nsubjects && !keep; k++)
            keep = strcmp(st->cfg.subjects[i], u->cfg.subjects[k]) == 0;
        if (!keep)
            nd_iclient_unsubscribe(ctx, ic, st->cfg.subjects[i]);
    }
    for (size_t k = 0; k < u->cfg.nsubjects; k++)
        nd_iclient_subscribe(ctx, ic, u->cfg.subjects[k]);
    char d1[300], d2[300];
    snprintf(d1, sizeof d1, "$JS.API.DIRECT.GET.%s", st->name);
    snprintf(d2, sizeof d2, "$JS.API.DIRECT.GET.%s.>", st->name);
    if (u->cfg.allow_direct) {
        nd_iclient_subscribe(ctx, ic, d1);
        nd_iclient_subscribe(ctx, ic, d2);
    } else if (st->cfg.allow_direct) {
        nd_iclient_unsubscribe(ctx, ic, d1);
        nd_iclient_unsubscribe(ctx, ic, d2);
    }
    nd_store_cfg_t sc;
    store_cfg(st, &u->cfg, &sc);
    nd_err_t e = st->store->ops->update_cfg(st->store, &sc);
    bool srcs_changed = false;
    static const char *const keys[] = {"mirror", "sources"};
    for (int k = 0; k < 2; k++) {
        json_t *a = json_object_get(st->cfg.json, keys[k]), *b = json_object_get(u->cfg.json, keys[k]);
        if ((a == NULL) != (b == NULL) || (a != NULL && !json_equal(a, b)))
            srcs_changed = true;
    }
    nd_stream_cfg_free(&st->cfg);
    st->cfg = u->cfg;
    nd_xf_free(st->xf);
    nd_xf_free(st->rp_xf);
    st->xf = st->rp_xf = NULL;
    memset(&u->cfg, 0, sizeof u->cfg);
    /* mirror/sources: fed again under the new configuration, from where the store is */
    if (srcs_changed) {
        js_sources_stop(ctx, st, true);
        js_sources_start(ctx, st);
    }
    pthread_mutex_lock(&st->mu);
    nd_stream_cfg_free(&st->scfg);
    nd_stream_cfg_copy(&st->scfg, &st->cfg);
    pthread_mutex_unlock(&st->mu);
    if (st->dir != NULL && meta_write(st->dir, st->created_ns, st->cfg.json) != 0)
        nd_log_error("JetStream could not write the configuration of stream '%s': %s", st->name,
                     strerror(errno));
    arm_tick(ctx, st, store_tick(ctx, st, js_now()));
    stats_publish(st);
    nd_jserr_t err;
    json_t *o = js_resp("stream_update_response");
    if (e != ND_OK) {
        nd_jserr_setf(&err, ND_JSE_STREAM_UPDATE_F, "%s", nd_strerror(e));
        js_resp_error(o, &err);
    } else {
        json_t *info = js_stream_info(st, NULL, &err);
        json_object_update(o, info);
        json_decref(info);
    }
    js_audit_begin(u->audit);
    js_send(ctx, ic, u->reply, o);
    js_audit_end();
    update_drop(u);
}

void
js_stream_update(nd_ctx_t *ctx, nd_stream_t *st, nd_stream_cfg_t *cfg, const char *reply)
{
    update_call_t *u = nd_xcalloc(1, sizeof *u);
    u->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    u->reply = nd_xstrdup(reply != NULL ? reply : "");
    u->audit = js_audit_save_current();
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_update, u, update_drop);
    else
        update_drop(u);
    pthread_mutex_unlock(&st->jsa->mu);
}

typedef struct delete_call {
    char *reply;
    js_audit_req_t *audit;
} delete_call_t;

static void
delete_drop(void *data)
{
    delete_call_t *d = data;
    nd_free(d->reply);
    js_audit_free(d->audit);
    nd_free(d);
}

/* Removes the stream's data, then answers (so that whoever hears the answer no longer finds
 * its files), then stops the actor. */
static void
do_delete(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_stream_t *st = arg;
    delete_call_t *d = data;
    st->stopped = true;
    send_acks(ctx, st);
    release_usage(st);
    js_sources_stop(ctx, st, true);
    js_consumers_stop(ctx, st, true);
    if (st->store != NULL) {
        if (st->store->ops->destroy(st->store) != ND_OK)
            nd_log_warn("JetStream could not remove the store of stream '%s'", st->name);
        st->store = NULL;
    }
    if (st->dir != NULL)
        js_remove_tree(st->dir);
    json_t *o = js_resp("stream_delete_response");
    json_object_set_new(o, "success", json_true());
    js_audit_begin(d->audit);
    js_send(ctx, ic, d->reply, o);
    js_audit_end();
    delete_drop(d);
    nd_log_debug("JetStream deleted stream '%s > %s'", nd_acct_name(st->jsa->acct), st->name);
    nd_iclient_stop(ctx, ic);
}

void
js_stream_delete(nd_ctx_t *ctx, nd_stream_t *st, const char *reply)
{
    delete_call_t *d = nd_xcalloc(1, sizeof *d);
    d->reply = nd_xstrdup(reply != NULL ? reply : "");
    d->audit = js_audit_save_current();
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_delete, d, delete_drop);
    else
        delete_drop(d);
    pthread_mutex_unlock(&st->jsa->mu);
}

/* ---- listings ---- */

json_t *
js_stream_list_info(nd_stream_t *st)
{
    pthread_mutex_lock(&st->mu);
    js_stream_stats_t s = st->stats;
    json_t *cfg = json_deep_copy(st->scfg.json);
    pthread_mutex_unlock(&st->mu);
    json_t *o = json_object();
    json_object_set_new(o, "config", cfg);
    json_object_set_new(o, "created", js_time(st->created_ns));
    json_object_set_new(o, "state", js_state_json(&s.state, NULL, NULL));
    json_object_set_new(o, "ts", js_time(js_now()));
    return o;
}

/* ---- recovery ---- */

/* A recovered stream's first call: opens (and so recovers) its store on its own turn, so that
 * the streams of a server come back in parallel on the workers and a damaged or big one delays
 * no other. */
static void
do_open(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    (void)data;
    nd_stream_t *st = arg;
    nd_jsa_t *jsa = st->jsa;
    int64_t t0 = js_now();
    nd_store_recovery_t rep;
    memset(&rep, 0, sizeof rep);
    nd_err_t e = open_store(st, &rep);
    if (e != ND_OK) {
        nd_log_error("JetStream could not open the store of stream '%s > %s': %s%s%s",
                     nd_acct_name(jsa->acct), st->name, nd_strerror(e),
                     rep.io_errno ? ": " : "", rep.io_errno ? strerror(rep.io_errno) : "");
        st->store = NULL;
        st->stopped = true;
        jsa_remove(jsa, st);
        js_stream_unref(st); /* the table's */
        st->opened = true;
        recovered(st);
        nd_iclient_stop(ctx, ic);
        return;
    }
    if (rep.records_dropped > 0 || rep.torn_tails > 0 || rep.blocks_corrupt > 0)
        nd_log_warn("JetStream stream '%s > %s' had damage: %" PRIu64 " records (%" PRIu64
                    " bytes) dropped, %" PRIu64 " torn tails, %" PRIu64
                    " corrupt blocks; what is intact is served",
                    nd_acct_name(jsa->acct), st->name, rep.records_dropped, rep.bytes_dropped,
                    rep.torn_tails, rep.blocks_corrupt);
    js_stream_dedup_rebuild(st);
    arm_tick(ctx, st, store_tick(ctx, st, js_now()));
    stats_publish(st);
    js_consumers_recover(ctx, st);
    nd_log_info("  Restored %" PRIu64 " messages for stream '%s > %s' in %" PRId64 "ms",
                st->stats.state.msgs, nd_acct_name(jsa->acct), st->name,
                (js_now() - t0) / 1000000);
    st->opened = true;
    recovered(st);
    js_sources_start(ctx, st); /* when on_ready came before the store opened */
}

static void
recover_one(nd_ctx_t *ctx, nd_jsa_t *jsa, const char *name)
{
    char why[256];
    char *dir = js_path("%s/streams/%s", jsa->dir, name);
    int64_t created = 0;
    json_t *cj = meta_read(dir, &created, why, sizeof why);
    nd_free(dir);
    if (cj == NULL) {
        nd_log_warn("JetStream could not read the configuration of stream '%s > %s': %s",
                    nd_acct_name(jsa->acct), name, why);
        return;
    }
    nd_stream_cfg_env_t env;
    js_cfg_env(jsa, &env, false);
    env.strict = false; /* what we wrote ourselves */
    nd_stream_cfg_t cfg;
    nd_jserr_t err;
    bool ok = nd_stream_cfg_from_json(cj, name, &env, &cfg, &err);
    json_decref(cj);
    if (!ok) {
        nd_log_warn("JetStream could not load stream '%s > %s': %s", nd_acct_name(jsa->acct),
                    name, err.desc);
        return;
    }
    if (jsa_find(jsa, cfg.name) != NULL) {
        nd_stream_cfg_free(&cfg);
        return;
    }
    nd_stream_t *st = stream_new(jsa, &cfg, created);
    st->opened = false; /* the actor opens its store on its first turn (do_open) */
    st->recovering = true;
    nd_js_t *js = jsa->js;
    pthread_mutex_lock(&js->rmu);
    js->recovering++;
    pthread_mutex_unlock(&js->rmu);
    jsa_insert(jsa, st);
    spawn(ctx, st);
    pthread_mutex_lock(&jsa->mu);
    nd_iclient_call(ctx, st->ic, do_open, NULL, NULL);
    pthread_mutex_unlock(&jsa->mu);
}

void
js_streams_recover(nd_ctx_t *ctx, nd_jsa_t *jsa)
{
    char *dir = js_path("%s/streams", jsa->dir);
    DIR *d = opendir(dir);
    nd_free(dir);
    if (d == NULL)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = nd_xrealloc(names, cap * sizeof(char *));
        }
        names[n++] = nd_xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 0)
        nd_log_info("Recovering JetStream state for account \"%s\"", nd_acct_name(jsa->acct));
    int64_t t0 = js_now(), last = t0;
    for (size_t i = 0; i < n; i++) {
        recover_one(ctx, jsa, names[i]);
        nd_free(names[i]);
        int64_t now = js_now();
        if (now - last > 5000000000LL) {
            nd_log_info("  Recovered %zu of %zu streams of account \"%s\"", i + 1, n,
                        nd_acct_name(jsa->acct));
            last = now;
        }
    }
    nd_free(names);
    /* Every recovered stream subscribed before the server reports JetStream ready. */
    nd_js_t *js = jsa->js;
    pthread_mutex_lock(&js->rmu);
    while (js->recovering > 0)
        pthread_cond_wait(&js->rcv, &js->rmu);
    pthread_mutex_unlock(&js->rmu);
    if (n > 0)
        nd_log_info("JetStream state for account \"%s\" recovered in %" PRId64 "ms",
                    nd_acct_name(jsa->acct), (js_now() - t0) / 1000000);
}
