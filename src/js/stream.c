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
#include "js/js_int.h"
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

/* rm -r dir (the stream's own directory only). */
static void
remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *p = js_path("%s/%s", dir, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(p);
            else
                unlink(p);
            nd_free(p);
        }
        closedir(d);
    }
    rmdir(dir);
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
    st->stats = s;
    pthread_mutex_unlock(&st->mu);
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
    if (st->stopped)
        return;
    if (m->tag != JS_OP_PUBLISH) {
        js_stream_api(ctx, st, m);
        return;
    }
    if (m->subject_len > 19 && memcmp(m->subject, "$JS.API.DIRECT.GET.", 19) == 0) {
        js_stream_direct_get(ctx, st, m);
        return;
    }
    js_stream_publish(ctx, st, m);
}

static void
on_turn_end(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    if (st->stopped || st->store == NULL)
        return;
    if (st->dirty) {
        st->dirty = false;
        if (st->jsa->js->sync_always && st->cfg.storage == ND_STORAGE_FILE &&
            st->store->ops->sync(st->store) != ND_OK)
            nd_log_error("JetStream failed to sync stream '%s > %s': %s",
                         nd_acct_name(st->jsa->acct), st->name,
                         strerror(nd_store_io_errno(st->store)));
        /* A failed sync refuses every later write; the batch's acks still report what reached
         * the operating system, as with the default policy. */
        stats_publish(st);
        int64_t now = js_now();
        int64_t next = st->store->ops->tick(st->store, now);
        int64_t dd = js_stream_dedup_expire(st, now);
        arm_tick(ctx, st, next == 0 || (dd != 0 && dd < next) ? dd : next);
    }
    send_acks(ctx, st);
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
    int64_t next = st->store->ops->tick(st->store, now);
    int64_t dd = js_stream_dedup_expire(st, now);
    if (dd != 0 && (next == 0 || dd < next))
        next = dd;
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
    json_object_set_new(o, "did_create", json_true());
    js_send(ctx, st->ic, st->create_reply_to, o);
    nd_free(st->create_reply_to);
    st->create_reply_to = NULL;
}

/* A recovered stream is subscribed (or closed): the start may stop waiting for it. */
static void
recovered(nd_stream_t *st)
{
    if (!st->recovering)
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
    create_answer(ctx, st);
    recovered(st);
}

static void
on_close(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg)
{
    (void)ic;
    nd_stream_t *st = arg;
    send_acks(ctx, st); /* nothing normally: turns end with them sent */
    nd_free(st->create_reply_to);
    st->create_reply_to = NULL;
    if (st->store != NULL) {
        /* its bytes leave the account's and the server's usage */
        bool mem = st->cfg.storage == ND_STORAGE_MEMORY;
        atomic_fetch_sub_explicit(mem ? &st->jsa->mem_used : &st->jsa->store_used, st->used,
                                  memory_order_relaxed);
        atomic_fetch_sub_explicit(mem ? &st->jsa->js->mem_used : &st->jsa->js->store_used,
                                  st->used, memory_order_relaxed);
        st->used = 0;
        if (st->destroyed) {
            if (st->store->ops->destroy(st->store) != ND_OK)
                nd_log_warn("JetStream could not remove the store of stream '%s'", st->name);
            if (st->dir != NULL)
                remove_tree(st->dir);
        } else {
            nd_store_close(st->store);
        }
        st->store = NULL;
    }
    js_stream_dedup_free(st);
    nd_xf_free(st->xf);
    nd_xf_free(st->rp_xf);
    st->xf = st->rp_xf = NULL;
    nd_free(st->acks);
    nd_free(st->last_msg_id);
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
    nd_iclient_t *ic = nd_iclient_spawn(ctx, st->jsa->js->srv, st->jsa->acct, ND_CONN_SYSTEM,
                                        name, subj, n, 0, &stream_hooks, st);
    pthread_mutex_lock(&st->jsa->mu);
    st->ic = ic;
    pthread_mutex_unlock(&st->jsa->mu);
    nd_free(subj);
}

static nd_err_t
open_store(nd_stream_t *st, nd_store_recovery_t *rep)
{
    nd_store_cfg_t sc;
    memset(&sc, 0, sizeof sc);
    nd_stream_cfg_store(&st->cfg, &sc);
    if (st->cfg.storage == ND_STORAGE_MEMORY)
        return nd_memstore_open(&sc, &st->store);
    char *msgs = js_path("%s/msgs", st->dir);
    sc.dir = msgs;
    nd_js_t *js = st->jsa->js;
    sc.sync_interval_ns = js->sync_interval_ns;
    /* sync_interval: always syncs once per turn (group commit), not once per message. */
    sc.sync_always = false;
    nd_err_t e = nd_filestore_open(&sc, &st->store, rep);
    nd_free(msgs);
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
    pthread_mutex_init(&st->mu, NULL);
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
            remove_tree(st->dir);
        js_stream_unref(st);
        return NULL;
    }
    uint64_t purged;
    if (st->cfg.first_seq > 1 &&
        st->store->ops->compact(st->store, st->cfg.first_seq, &purged) != ND_OK)
        nd_log_warn("JetStream could not set the first sequence of stream '%s'", st->name);
    stats_publish(st);
    if (reply != NULL && reply[0] != '\0')
        st->create_reply_to = nd_xstrdup(reply);
    jsa_insert(jsa, st);
    spawn(ctx, st);
    nd_log_debug("JetStream created stream '%s > %s'", nd_acct_name(jsa->acct), st->name);
    return st;
}

/* ---- update and delete (calls from the API service) ---- */

typedef struct update_call {
    nd_stream_cfg_t cfg;
    char *reply;
} update_call_t;

static void
update_drop(void *data)
{
    update_call_t *u = data;
    nd_stream_cfg_free(&u->cfg);
    nd_free(u->reply);
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
    memset(&sc, 0, sizeof sc);
    nd_stream_cfg_store(&u->cfg, &sc);
    nd_err_t e = st->store->ops->update_cfg(st->store, &sc);
    nd_stream_cfg_free(&st->cfg);
    st->cfg = u->cfg;
    nd_xf_free(st->xf);
    nd_xf_free(st->rp_xf);
    st->xf = st->rp_xf = NULL;
    memset(&u->cfg, 0, sizeof u->cfg);
    pthread_mutex_lock(&st->mu);
    nd_stream_cfg_free(&st->scfg);
    nd_stream_cfg_copy(&st->scfg, &st->cfg);
    pthread_mutex_unlock(&st->mu);
    if (st->dir != NULL && meta_write(st->dir, st->created_ns, st->cfg.json) != 0)
        nd_log_error("JetStream could not write the configuration of stream '%s': %s", st->name,
                     strerror(errno));
    stats_publish(st);
    arm_tick(ctx, st, st->store->ops->tick(st->store, js_now()));
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
    js_send(ctx, ic, u->reply, o);
    nd_free(u->reply);
    nd_free(u);
}

void
js_stream_update(nd_ctx_t *ctx, nd_stream_t *st, nd_stream_cfg_t *cfg, const char *reply)
{
    update_call_t *u = nd_xcalloc(1, sizeof *u);
    u->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    u->reply = nd_xstrdup(reply != NULL ? reply : "");
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_update, u, update_drop);
    else
        update_drop(u);
    pthread_mutex_unlock(&st->jsa->mu);
}

static void
do_delete(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    nd_stream_t *st = arg;
    char *reply = data;
    st->destroyed = true;
    st->stopped = true;
    json_t *o = js_resp("stream_delete_response");
    json_object_set_new(o, "success", json_true());
    js_send(ctx, ic, reply, o);
    nd_free(reply);
    nd_log_debug("JetStream deleted stream '%s > %s'", nd_acct_name(st->jsa->acct), st->name);
    nd_iclient_stop(ctx, ic); /* on_close destroys the store */
}

void
js_stream_delete(nd_ctx_t *ctx, nd_stream_t *st, const char *reply)
{
    char *r = nd_xstrdup(reply != NULL ? reply : "");
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_delete, r, nd_free);
    else
        nd_free(r);
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
    int64_t t0 = js_now();
    nd_stream_t *st = stream_new(jsa, &cfg, created);
    nd_store_recovery_t rep;
    memset(&rep, 0, sizeof rep);
    nd_err_t e = open_store(st, &rep);
    if (e != ND_OK) {
        nd_log_error("JetStream could not open the store of stream '%s > %s': %s%s%s",
                     nd_acct_name(jsa->acct), name, nd_strerror(e), rep.io_errno ? ": " : "",
                     rep.io_errno ? strerror(rep.io_errno) : "");
        js_stream_unref(st);
        return;
    }
    if (rep.records_dropped > 0 || rep.torn_tails > 0 || rep.blocks_corrupt > 0)
        nd_log_warn("JetStream stream '%s > %s' had damage: %" PRIu64 " records (%" PRIu64
                    " bytes) dropped, %" PRIu64 " torn tails, %" PRIu64 " corrupt blocks",
                    nd_acct_name(jsa->acct), name, rep.records_dropped, rep.bytes_dropped,
                    rep.torn_tails, rep.blocks_corrupt);
    js_stream_dedup_rebuild(st);
    stats_publish(st);
    nd_log_info("  Restored %" PRIu64 " messages for stream '%s > %s' in %" PRId64 "ms",
                st->stats.state.msgs, nd_acct_name(jsa->acct), name, (js_now() - t0) / 1000000);
    jsa_insert(jsa, st);
    st->recovering = true;
    nd_js_t *js = jsa->js;
    pthread_mutex_lock(&js->rmu);
    js->recovering++;
    pthread_mutex_unlock(&js->rmu);
    spawn(ctx, st);
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
