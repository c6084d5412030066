/* Consumers seen from their stream and the account's API service: create (and the idempotent
 * and update forms), delete, info, names, list, the consumer table, recovery, and the stream's
 * wake-up calls. The stream's turn is the only writer of its consumer table, so a create checks
 * names, limits and the workqueue rules against a table nobody changes meanwhile.
 * References: nats-server server/jetstream_api.go (jsConsumerCreateRequest,
 * jsConsumerDeleteRequest, jsConsumerNamesRequest, jsConsumerListRequest,
 * jsConsumerInfoRequest), stream.go (addConsumerWithAction).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "js/consumer_int.h"
#include "js/jsreq.h"
#include "subj/subject.h"
#include "util/log.h"

#define NAMES_LIMIT 1024
#define LIST_LIMIT  256

/* ---- the table (the stream's turn writes, under st->mu) ---- */

static size_t
table_pos(nd_stream_t *st, const char *name, bool *found)
{
    size_t lo = 0, hi = st->nconsumers;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int r = strcmp(st->consumers[mid]->name, name);
        if (r == 0) {
            *found = true;
            return mid;
        }
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static void
table_insert(nd_stream_t *st, nd_consumer_t *c)
{
    pthread_mutex_lock(&st->mu);
    bool found;
    size_t i = table_pos(st, c->name, &found);
    if (st->nconsumers == st->consumers_cap) {
        st->consumers_cap = st->consumers_cap ? st->consumers_cap * 2 : 8;
        st->consumers = nd_xrealloc(st->consumers, st->consumers_cap * sizeof *st->consumers);
    }
    memmove(&st->consumers[i + 1], &st->consumers[i],
            (st->nconsumers - i) * sizeof *st->consumers);
    st->consumers[i] = c;
    st->nconsumers++;
    pthread_mutex_unlock(&st->mu);
}

void
js_consumer_table_remove(nd_stream_t *st, nd_consumer_t *c)
{
    pthread_mutex_lock(&st->mu);
    bool found;
    size_t i = table_pos(st, c->name, &found);
    bool mine = found && st->consumers[i] == c;
    if (mine) {
        memmove(&st->consumers[i], &st->consumers[i + 1],
                (st->nconsumers - i - 1) * sizeof *st->consumers);
        st->nconsumers--;
    }
    pthread_mutex_unlock(&st->mu);
    if (mine)
        js_consumer_unref(c); /* the table's */
}

nd_consumer_t *
js_consumer_find(nd_stream_t *st, const char *name)
{
    pthread_mutex_lock(&st->mu);
    bool found;
    size_t i = table_pos(st, name, &found);
    nd_consumer_t *c = found ? st->consumers[i] : NULL;
    if (c != NULL)
        js_consumer_ref(c);
    pthread_mutex_unlock(&st->mu);
    return c;
}

size_t
js_stream_nconsumers(nd_stream_t *st)
{
    pthread_mutex_lock(&st->mu);
    size_t n = st->nconsumers;
    pthread_mutex_unlock(&st->mu);
    return n;
}

bool
js_consumer_forward(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m, uint32_t tag)
{
    pthread_mutex_lock(&c->st->mu);
    bool ok = c->ic != NULL && nd_iclient_forward(ctx, c->ic, m, tag);
    pthread_mutex_unlock(&c->st->mu);
    return ok;
}

bool
js_consumers_interested(nd_stream_t *st, const char *subj, size_t len)
{
    for (size_t i = 0; i < st->nconsumers; i++)
        if (nd_consumer_cfg_matches(&st->consumers[i]->scfg, subj, len))
            return true;
    return false;
}

void
js_consumers_signal(nd_ctx_t *ctx, nd_stream_t *st)
{
    int removed = st->turn_purged    ? JS_REMOVED_PURGE
                  : st->turn_removed ? JS_REMOVED_ANY
                                     : JS_REMOVED_NONE;
    bool stored = st->turn_first_seq != 0;
    st->turn_removed = st->turn_purged = false;
    st->turn_first_seq = 0;
    if (st->nconsumers > 0 && st->store != NULL) {
        /* what limits removed as the turn stored (discard old, per-subject limits, rollups) */
        nd_store_state_t ss;
        nd_store_state(st->store, &ss);
        if (ss.num_deleted != st->sig_deleted && removed < JS_REMOVED_ANY)
            removed = JS_REMOVED_ANY;
        else if (ss.first_seq > st->sig_first && removed < JS_REMOVED_HEAD)
            removed = JS_REMOVED_HEAD;
        st->sig_first = ss.first_seq;
        st->sig_deleted = ss.num_deleted;
    }
    if (removed == JS_REMOVED_NONE && !stored)
        return;
    for (size_t i = 0; i < st->nconsumers; i++)
        js_consumer_signal(ctx, st->consumers[i], removed);
}

/* ---- config files: <stream dir>/consumers/<name>.json ---- */

static char *
meta_path(nd_stream_t *st, const char *name)
{
    return js_path("%s/consumers/%s.json", st->dir, name);
}

int
js_consumer_meta_write(nd_consumer_t *c)
{
    nd_stream_t *st = c->st;
    if (st->dir == NULL)
        return 0;
    char *dir = js_path("%s/consumers", st->dir);
    if (js_mkdirs(dir) != 0) {
        nd_free(dir);
        return -1;
    }
    json_t *o = json_object();
    json_object_set_new(o, "created", json_integer(c->created_ns));
    json_object_set_new(o, "config", json_deep_copy(c->cfg_json));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char *path = meta_path(st, c->name);
    char *tmp = js_path("%s.tmp", path);
    int rc = -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        size_t n = strlen(text), off = 0;
        while (off < n) {
            ssize_t w = write(fd, text + off, n - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        /* fsyncs only with sync_interval: always, as nats-server (writeFileWithOptionalSync):
         * otherwise a power loss may take a consumer created in the last moments, and a meta
         * file left empty is skipped at recovery with a warning. Two fsyncs per create made
         * creates wait for the disk (about 100/s here against nats-server's 800). */
        bool sync = st->jsa->js->sync_always;
        if (off == n && (!sync || fsync(fd) == 0) && close(fd) == 0) {
            fd = -1;
            if (rename(tmp, path) == 0) {
                int dfd = sync ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
                if (dfd >= 0) {
                    (void)fsync(dfd);
                    close(dfd);
                }
                rc = 0;
            }
        }
        if (fd >= 0)
            close(fd);
    }
    if (rc != 0)
        (void)unlink(tmp);
    free(text);
    nd_free(tmp);
    nd_free(path);
    nd_free(dir);
    return rc;
}

void
js_consumer_meta_remove(nd_stream_t *st, const char *name)
{
    if (st->dir == NULL)
        return;
    char *path = meta_path(st, name);
    (void)unlink(path);
    nd_free(path);
}

/* ---- requests on the stream's turn ---- */

/* The API operation of m's subject ("CONSUMER.CREATE.S.C"), after $JS.API. or
 * $JS.<domain>.API. */
static const char *
api_op(const nd_imsg_t *m)
{
    if (m->subject_len > 8 && memcmp(m->subject, "$JS.API.", 8) == 0)
        return m->subject + 8;
    const char *p = strstr(m->subject + 4, ".API.");
    return p != NULL ? p + 5 : m->subject;
}

static void
advise_action(nd_ctx_t *ctx, nd_stream_t *st, const char *name, bool created)
{
    json_t *a = js_consumer_event_new(ctx, "io.nats.jetstream.advisory.v1.consumer_action");
    json_object_set_new(a, "stream", json_string(st->name));
    json_object_set_new(a, "consumer", json_string(name));
    json_object_set_new(a, "action", json_string(created ? "create" : "delete"));
    if (st->jsa->js->domain[0] != '\0')
        json_object_set_new(a, "domain", json_string(st->jsa->js->domain));
    char *subj = js_path("$JS.EVENT.ADVISORY.CONSUMER.%s.%s.%s", created ? "CREATED" : "DELETED",
                         st->name, name);
    js_send(ctx, st->ic, subj, a);
    nd_free(subj);
}

static void
ephemeral_name(nd_ctx_t *ctx, char out[9])
{
    static const char digits[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t r = nd_ctx_rand(ctx);
    for (int i = 0; i < 8; i++) {
        out[i] = digits[r % 62];
        r /= 62;
    }
    out[8] = '\0';
}

static void
create_fail(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, const nd_jserr_t *err)
{
    js_send_error(ctx, st->ic, m->reply, "consumer_create_response", err);
}

/* The consumers of every stream of the account (its max_consumers limit). */
static size_t
account_consumers(nd_jsa_t *jsa)
{
    size_t n = 0;
    pthread_mutex_lock(&jsa->mu);
    for (size_t i = 0; i < jsa->nstreams; i++) {
        pthread_mutex_lock(&jsa->streams[i]->mu);
        n += jsa->streams[i]->nconsumers;
        pthread_mutex_unlock(&jsa->streams[i]->mu);
    }
    pthread_mutex_unlock(&jsa->mu);
    return n;
}

static void
consumer_create(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, const char *op)
{
    /* CONSUMER.CREATE.<s>[.<name>[.<filter>]] or CONSUMER.DURABLE.CREATE.<s>.<name> */
    bool legacy_durable = strncmp(op, "CONSUMER.DURABLE.CREATE.", 24) == 0;
    const char *rest = op + (legacy_durable ? 24 : 16);
    size_t sl = strlen(st->name);
    char *name = NULL, *filter = NULL;
    if (strncmp(rest, st->name, sl) == 0 && rest[sl] == '.') {
        const char *n = rest + sl + 1;
        const char *dot = strchr(n, '.');
        name = dot != NULL ? nd_xstrndup(n, (size_t)(dot - n)) : nd_xstrdup(n);
        if (dot != NULL && !legacy_durable)
            filter = nd_xstrdup(dot + 1);
    }
    nd_consumer_cfg_env_t env = {
        .stream = &st->cfg,
        .strict = st->jsa->js->strict,
        .max_ack_pending = st->jsa->limits.max_ack_pending,
    };
    nd_consumer_req_t req;
    nd_jserr_t err;
    bool ok = nd_consumer_req_parse(m->data, m->data_len, st->name, name, filter, legacy_durable,
                                    &env, &req, &err);
    nd_free(name);
    nd_free(filter);
    if (!ok) {
        create_fail(ctx, st, m, &err);
        return;
    }
    nd_consumer_cfg_t *cfg = &req.cfg;
    if (cfg->name == NULL) {
        char gen[9];
        ephemeral_name(ctx, gen);
        nd_consumer_cfg_set_name(cfg, gen);
    }
    nd_consumer_t *old = js_consumer_find(st, cfg->name);
    if (old != NULL) {
        /* A create never changes the pause of an existing consumer (2.11 copies the one in
         * force into the request): CONSUMER.PAUSE is the way. */
        pthread_mutex_lock(&old->mu);
        const json_t *pu = json_object_get(old->cfg_json, "pause_until");
        char *until = json_is_string(pu) ? nd_xstrdup(json_string_value(pu)) : NULL;
        pthread_mutex_unlock(&old->mu);
        (void)nd_consumer_cfg_set_pause(cfg, until);
        (void)nd_consumer_cfg_set_pause(&old->scfg, until);
        nd_free(until);
        if (nd_consumer_cfg_equal(&old->scfg, cfg)) {
            /* the same consumer again: its info, as a create response */
            if (!js_consumer_forward(ctx, old, m, JS_OP_CONSUMER_INFO)) {
                nd_jserr_set(&err, ND_JSE_CONSUMER_NOT_FOUND, NULL);
                create_fail(ctx, st, m, &err);
            }
        } else if (req.action == ND_CACTION_CREATE) {
            nd_jserr_set(&err, ND_JSE_CONSUMER_ALREADY_EXISTS, NULL);
            create_fail(ctx, st, m, &err);
        } else if (!nd_consumer_cfg_check_update(&old->scfg, cfg, &err)) {
            create_fail(ctx, st, m, &err);
        } else {
            nd_consumer_cfg_free(&old->scfg);
            nd_consumer_cfg_copy(&old->scfg, cfg);
            js_consumer_call_update(ctx, old, cfg, m->reply); /* takes cfg */
            memset(cfg, 0, sizeof *cfg);
        }
        js_consumer_unref(old);
        nd_consumer_req_free(&req);
        return;
    }
    if (req.action == ND_CACTION_UPDATE) {
        nd_jserr_set(&err, ND_JSE_CONSUMER_DOES_NOT_EXIST, NULL);
        create_fail(ctx, st, m, &err);
        nd_consumer_req_free(&req);
        return;
    }
    int64_t acct_max = st->jsa->limits.max_consumers;
    if ((st->cfg.max_consumers > 0 && (int64_t)st->nconsumers >= st->cfg.max_consumers) ||
        (acct_max > 0 && (int64_t)account_consumers(st->jsa) >= acct_max)) {
        nd_jserr_set(&err, ND_JSE_MAXIMUM_CONSUMERS_LIMIT, NULL);
        create_fail(ctx, st, m, &err);
        nd_consumer_req_free(&req);
        return;
    }
    if (st->cfg.retention == ND_RETENTION_WORKQUEUE) {
        const nd_consumer_cfg_t **others = nd_xcalloc(st->nconsumers + 1, sizeof *others);
        for (size_t i = 0; i < st->nconsumers; i++)
            others[i] = &st->consumers[i]->scfg;
        ok = nd_consumer_cfg_check_workqueue(cfg, others, st->nconsumers, &err);
        nd_free(others);
        if (!ok) {
            create_fail(ctx, st, m, &err);
            nd_consumer_req_free(&req);
            return;
        }
    }
    nd_consumer_t *c = js_consumer_new(st, cfg, js_now());
    nd_consumer_req_free(&req);
    if (js_consumer_meta_write(c) != 0) {
        nd_jserr_setf(&err, ND_JSE_CONSUMER_STORE_FAILED_F, "%s", strerror(errno));
        create_fail(ctx, st, m, &err);
        js_consumer_unref(c);
        return;
    }
    c->create_reply = nd_xstrdup(m->reply);
    c->create_audit = js_audit_save_current();
    table_insert(st, c);
    js_consumer_spawn(ctx, c);
    advise_action(ctx, st, c->name, true);
}

/* An interest stream drops what only a deleted consumer still needed: every message no
 * remaining consumer needs (nats-server's checkInterestState). O(messages). */
static void
interest_sweep(nd_stream_t *st)
{
    if (st->cfg.retention != ND_RETENTION_INTEREST || st->store == NULL)
        return;
    nd_store_msg_t m = {0};
    for (uint64_t seq = 1; st->store->ops->load_next(st->store, NULL, 0, seq, &m) == ND_OK;
         seq = m.seq + 1) {
        bool keep = false;
        for (size_t k = 0; k < st->nconsumers && !keep; k++) {
            nd_consumer_t *o = st->consumers[k];
            keep = nd_consumer_cfg_matches(&o->scfg, m.subj, m.subj_len) &&
                   js_consumer_needs_ack(o, m.seq);
        }
        if (!keep && st->store->ops->remove(st->store, m.seq, false) == ND_OK)
            st->dirty = true;
    }
    nd_store_msg_free(&m);
}

static void
consumer_delete(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, const char *op)
{
    const char *rest = op + 16; /* CONSUMER.DELETE. */
    size_t sl = strlen(st->name);
    nd_consumer_t *c = NULL;
    if (strncmp(rest, st->name, sl) == 0 && rest[sl] == '.')
        c = js_consumer_find(st, rest + sl + 1);
    if (c == NULL) {
        nd_jserr_t err;
        nd_jserr_set(&err, ND_JSE_CONSUMER_NOT_FOUND, NULL);
        js_send_error(ctx, st->ic, m->reply, "consumer_delete_response", &err);
        return;
    }
    js_consumer_table_remove(st, c);
    js_consumer_call_delete(ctx, c, m->reply, true);
    advise_action(ctx, st, c->name, false);
    js_consumer_unref(c);
    interest_sweep(st);
}

static void
consumer_names(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, bool list)
{
    const char *what = list ? "consumer_list_response" : "consumer_names_response";
    static const js_rfield_t f[] = {{"offset", JS_RT_INT}};
    js_req_t q;
    nd_jserr_t err;
    if (!js_req_decode(m->data, m->data_len, st->jsa->js->strict,
                       list ? "JSApiConsumersRequest" : "JSApiConsumersRequest", f, 1, &q,
                       &err)) {
        json_t *o = js_resp(what);
        js_resp_error(o, &err);
        js_paged_error_fields(o, what);
        js_send(ctx, st->ic, m->reply, o);
        return;
    }
    int64_t off = q.v[0].set ? q.v[0].i : 0;
    js_req_free(&q);
    if (off < 0)
        off = 0;
    size_t limit = list ? LIST_LIMIT : NAMES_LIMIT;
    json_t *arr = json_array();
    size_t total = st->nconsumers;
    for (size_t i = (size_t)off; i < total && json_array_size(arr) < limit; i++) {
        nd_consumer_t *c = st->consumers[i];
        json_array_append_new(arr, list ? js_consumer_list_info(c) : json_string(c->name));
    }
    json_t *o = js_resp(what);
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    json_object_set_new(o, "offset", json_integer(off));
    json_object_set_new(o, "limit", json_integer((json_int_t)limit));
    json_object_set_new(o, "consumers", arr);
    js_send(ctx, st->ic, m->reply, o);
}

void
js_consumer_stream_api(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    const char *op = api_op(m);
    switch (m->tag) {
    case JS_OP_CONSUMER_CREATE:
        consumer_create(ctx, st, m, op);
        break;
    case JS_OP_CONSUMER_DELETE:
        consumer_delete(ctx, st, m, op);
        break;
    case JS_OP_CONSUMER_NAMES:
        consumer_names(ctx, st, m, false);
        break;
    case JS_OP_CONSUMER_LIST:
        consumer_names(ctx, st, m, true);
        break;
    default:
        break;
    }
}

/* ---- an ephemeral that went inactive asks its stream to delete it ---- */

static void
do_request_delete(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    (void)ic;
    nd_stream_t *st = arg;
    nd_consumer_t *c = data;
    nd_consumer_t *cur = js_consumer_find(st, c->name);
    if (cur == c) {
        js_consumer_table_remove(st, c);
        js_consumer_call_delete(ctx, c, NULL, true);
        advise_action(ctx, st, c->name, false);
    }
    if (cur != NULL)
        js_consumer_unref(cur);
    js_consumer_unref(c);
}

static void
drop_consumer_ref(void *data)
{
    js_consumer_unref(data);
}

void
js_consumer_request_delete(nd_ctx_t *ctx, nd_consumer_t *c)
{
    nd_stream_t *st = c->st;
    js_consumer_ref(c);
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_request_delete, c, drop_consumer_ref);
    else
        js_consumer_unref(c);
    pthread_mutex_unlock(&st->jsa->mu);
}

/* ---- the stream stops ---- */

void
js_consumers_stop(nd_ctx_t *ctx, nd_stream_t *st, bool delete)
{
    pthread_mutex_lock(&st->mu);
    nd_consumer_t **all = st->consumers;
    size_t n = st->nconsumers;
    st->consumers = NULL;
    st->nconsumers = st->consumers_cap = 0;
    pthread_mutex_unlock(&st->mu);
    for (size_t i = 0; i < n; i++) {
        js_consumer_call_delete(ctx, all[i], NULL, delete);
        js_consumer_unref(all[i]); /* the table's */
    }
    nd_free(all);
}

/* ---- recovery ---- */

void
js_consumers_recover(nd_ctx_t *ctx, nd_stream_t *st)
{
    if (st->dir == NULL)
        return;
    char *dir = js_path("%s/consumers", st->dir);
    DIR *d = opendir(dir);
    if (d == NULL) {
        nd_free(dir);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char *path = js_path("%s/%s", dir, e->d_name);
        json_error_t jerr;
        json_t *o = json_load_file(path, 0, &jerr);
        nd_free(path);
        const json_t *cj = o != NULL ? json_object_get(o, "config") : NULL;
        nd_consumer_cfg_env_t env = {.stream = &st->cfg};
        nd_consumer_cfg_t cfg;
        nd_jserr_t err;
        if (cj == NULL || !nd_consumer_cfg_from_json(cj, &env, &cfg, &err)) {
            nd_log_warn("JetStream could not load consumer '%s > %s > %.*s': %s",
                        nd_acct_name(st->jsa->acct), st->name, (int)(n - 5), e->d_name,
                        cj == NULL ? (o == NULL ? jerr.text : "no config") : err.desc);
            json_decref(o);
            continue;
        }
        int64_t created = json_integer_value(json_object_get(o, "created"));
        json_decref(o);
        if (cfg.name == NULL) {
            nd_consumer_cfg_free(&cfg);
            continue;
        }
        nd_consumer_t *c = js_consumer_new(st, &cfg, created);
        c->recovered = true;
        table_insert(st, c);
        js_consumer_spawn(ctx, c);
    }
    closedir(d);
    nd_free(dir);
}

/* ---- retention (the stream's turn) ---- */

typedef struct racks_call {
    nd_consumer_t *c; /* a reference */
    uint64_t *seqs;
    size_t n;
} racks_call_t;

static void
racks_drop(void *data)
{
    racks_call_t *r = data;
    js_consumer_unref(r->c);
    nd_free(r->seqs);
    nd_free(r);
}

/* Workqueue: a message goes once acknowledged. Interest: once no other consumer whose filters
 * match it still needs it (nats-server's checkInterest / ackMsg). */
static void
do_racks(nd_ctx_t *ctx, nd_iclient_t *ic, void *arg, void *data)
{
    (void)ctx;
    (void)ic;
    nd_stream_t *st = arg;
    racks_call_t *r = data;
    if (!st->stopped && st->store != NULL) {
        nd_store_msg_t m = {0};
        for (size_t i = 0; i < r->n; i++) {
            uint64_t seq = r->seqs[i];
            if (st->store->ops->load(st->store, seq, &m) != ND_OK)
                continue;
            bool keep = false;
            if (st->cfg.retention == ND_RETENTION_INTEREST) {
                for (size_t k = 0; k < st->nconsumers && !keep; k++) {
                    nd_consumer_t *o = st->consumers[k];
                    if (o != r->c && nd_consumer_cfg_matches(&o->scfg, m.subj, m.subj_len) &&
                        js_consumer_needs_ack(o, seq))
                        keep = true;
                }
            }
            if (!keep && st->store->ops->remove(st->store, seq, false) == ND_OK)
                st->dirty = true;
        }
        nd_store_msg_free(&m);
    }
    racks_drop(r);
}

void
js_consumer_retention_acks(nd_ctx_t *ctx, nd_consumer_t *c, uint64_t *seqs, size_t n)
{
    racks_call_t *r = nd_xcalloc(1, sizeof *r);
    js_consumer_ref(c);
    r->c = c;
    r->seqs = seqs;
    r->n = n;
    nd_stream_t *st = c->st;
    pthread_mutex_lock(&st->jsa->mu);
    if (st->ic != NULL)
        nd_iclient_call(ctx, st->ic, do_racks, r, racks_drop);
    else
        racks_drop(r);
    pthread_mutex_unlock(&st->jsa->mu);
}
