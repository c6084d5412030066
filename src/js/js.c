/* JetStream's start: which accounts have it, the store directory, the API services, and the
 * streams recovered from disk. See js.h. Reference: nats-server server/jetstream.go
 * (enableJetStream, enableJetStreamAccounts, configJetStream). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "auth/auth.h"
#include "auth/jwt.h"
#include "js/js_int.h"
#include "net/connreg.h"
#include "util/evid.h"
#include "util/log.h"

int64_t
js_now(void)
{
    return nd_mon_wall_ns();
}

char *
js_path(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = nd_xmalloc((size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    return p;
}

void
js_remove_tree(const char *dir)
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
                js_remove_tree(p);
            else
                unlink(p);
            nd_free(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

int
js_mkdirs(const char *path)
{
    /* Most calls find the parents there (a consumer's directory in its stream's): one mkdir. */
    if (mkdir(path, 0750) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -1;
    char *buf = nd_xstrdup(path);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) != 0 && errno != EEXIST) {
            nd_free(buf);
            return -1;
        }
        *p = '/';
    }
    int rc = mkdir(buf, 0750) != 0 && errno != EEXIST ? -1 : 0;
    nd_free(buf);
    return rc;
}

/* nats-server's maxBytesLimits through the config check (stream_cfg.h). */
static void
max_bytes_limits(void *arg, int replicas, bool memory, bool *required, int64_t *max)
{
    nd_jsa_t *jsa = arg;
    pthread_mutex_lock(&jsa->mu);
    const js_tier_t *t = js_limits_select(&jsa->tl, replicas);
    *required = t != NULL && t->lim.max_bytes_required;
    *max = t == NULL ? 0 : memory ? t->lim.memory_max_stream_bytes : t->lim.store_max_stream_bytes;
    pthread_mutex_unlock(&jsa->mu);
}

bool js_api_create_limits(void *arg, const char *name, int64_t replicas, bool memory,
                          int64_t max_bytes, int64_t max_consumers, nd_jserr_t *err);

void
js_cfg_env(const nd_jsa_t *jsa, nd_stream_cfg_env_t *env, bool pedantic)
{
    memset(env, 0, sizeof *env);
    env->strict = jsa->js->strict;
    env->pedantic = pedantic;
    env->clustered = false;
    env->max_dup_window_ns = jsa->js->max_dup_window_ns;
    env->max_bytes_required = jsa->limits.max_bytes_required;
    env->max_stream_bytes = -1;
    env->max_bytes_limits = max_bytes_limits;
    env->create_limits = js_api_create_limits;
    env->limits_arg = (void *)jsa;
}

nd_jsa_t **
js_accts(nd_js_t *js, size_t *n)
{
    pthread_mutex_lock(&js->amu);
    nd_jsa_t **v = nd_xcalloc(js->naccts > 0 ? js->naccts : 1, sizeof *v);
    memcpy(v, js->accts, js->naccts * sizeof *v);
    *n = js->naccts;
    pthread_mutex_unlock(&js->amu);
    return v;
}

/* The account's API service when the account has no JetStream: every request with a reply
 * gets 10039, as nats-server answers for such accounts. */
static void
disabled_api(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg)
{
    (void)arg;
    if (m->reply_len == 0)
        return;
    if (strncmp(m->subject, "$JS.API.DIRECT.GET.", 19) == 0)
        return; /* nats-server: no answer at all */
    nd_jserr_t err;
    nd_jserr_set(&err, ND_JSE_NOT_ENABLED_FOR_ACCOUNT, NULL);
    js_send_error(ctx, ic, m->reply, js_api_type(m->subject + 8), &err);
}

void js_api_handle(nd_ctx_t *ctx, nd_iclient_t *ic, const nd_imsg_t *m, void *arg);
void js_mon_install(nd_js_t *js);   /* jsmon.c: the monitoring hook */
void js_mon_uninstall(nd_js_t *js);

/* Whether an account of the snapshot has JetStream, and its limits: a static account's
 * jetstream {}, or in operator mode the account JWT's. */
static bool
account_enabled(const nd_auth_t *a, const nd_auth_acct_t *ae, js_limits_t *limits)
{
    memset(limits, 0, sizeof *limits);
    if (a->op_mode)
        return js_limits_from_jwt(ae->jwt, limits);
    nd_acct_js_t *l = &limits->t[0].lim;
    if (ae->declared && ae->js.enabled) {
        *l = ae->js;
        limits->n = 1;
        return true;
    }
    if (strcmp(ae->name, "$G") != 0)
        return false;
    /* nats-server: with no accounts of its own, the global account has JetStream. */
    for (size_t i = 0; i < a->naccts; i++)
        if (a->accts[i].declared && strcmp(a->accts[i].name, "$G") != 0 &&
            strcmp(a->accts[i].name, "$SYS") != 0)
            return false;
    l->max_memory = l->max_store = l->max_streams = l->max_consumers = -1;
    l->memory_max_stream_bytes = l->store_max_stream_bytes = -1;
    l->max_ack_pending = -1;
    l->enabled = true;
    limits->n = 1;
    return true;
}

/* nats-server's sufficientResources: the account's byte limits (every tier) must fit in the
 * server's beside the streams' reservations and the other accounts' limits. Under amu. */
static bool
sufficient(nd_js_t *js, const js_limits_t *l, const nd_jsa_t *skip, nd_jserr_t *err)
{
    int64_t mem = 0, store = 0, amem = 0, astore = 0;
    for (size_t i = 0; i < l->n; i++) {
        mem += l->t[i].lim.max_memory > 0 ? l->t[i].lim.max_memory : 0;
        store += l->t[i].lim.max_store > 0 ? l->t[i].lim.max_store : 0;
    }
    for (size_t k = 0; k < js->naccts; k++) {
        const nd_jsa_t *o = js->accts[k];
        for (size_t i = 0; o != skip && i < o->tl.n; i++) {
            amem += o->tl.t[i].lim.max_memory > 0 ? o->tl.t[i].lim.max_memory : 0;
            astore += o->tl.t[i].lim.max_store > 0 ? o->tl.t[i].lim.max_store : 0;
        }
    }
    int64_t rmem = atomic_load_explicit(&js->mem_reserved, memory_order_relaxed);
    int64_t rstore = atomic_load_explicit(&js->store_reserved, memory_order_relaxed);
    if (rmem + mem > js->max_memory || amem + mem > js->max_memory)
        return nd_jserr_set(err, ND_JSE_MEMORY_RESOURCES_EXCEEDED, (const char *)NULL);
    if (rstore + store > js->max_store || astore + store > js->max_store)
        return nd_jserr_set(err, ND_JSE_STORAGE_RESOURCES_EXCEEDED, (const char *)NULL);
    return true;
}

static bool
is_known(nd_js_t *js, const char *name)
{
    for (size_t i = 0; i < js->nknown; i++)
        if (strcmp(js->known[i], name) == 0)
            return true;
    return false;
}

static nd_jsa_t *
find_jsa(nd_js_t *js, const char *name)
{
    for (size_t i = 0; i < js->naccts; i++)
        if (strcmp(nd_acct_name(js->accts[i]->acct), name) == 0)
            return js->accts[i];
    return NULL;
}

/* Appends jsa to the table. Under amu (readers copy it under amu: js_accts). */
static void
accts_append(nd_js_t *js, nd_jsa_t *jsa)
{
    if (js->naccts == js->cap) {
        js->cap = js->cap ? js->cap * 2 : 16;
        js->accts = nd_xrealloc(js->accts, js->cap * sizeof *js->accts);
    }
    js->accts[js->naccts++] = jsa;
}

/* The system account names of a snapshot: the configured one, and in operator mode the
 * operators' system_account. */
static bool
is_system(const nd_opts_t *o, const nd_auth_t *a, const char *name)
{
    if (o->system_account != NULL && strcmp(name, o->system_account) == 0)
        return true;
    for (size_t i = 0; a->op_mode && i < a->nops; i++) {
        const char *sys = a->ops[i]->u.op.system_account;
        if (sys != NULL && strcmp(sys, name) == 0)
            return true;
    }
    return false;
}

/* Sets up JetStream for one account of the snapshot the first time it is seen: its streams and
 * API service, or the service that answers 10039. Under amu. */
static void
account_setup(nd_js_t *js, nd_ctx_t *ctx, const nd_opts_t *o, const nd_auth_t *a,
              const nd_auth_acct_t *ae)
{
    nd_server_t *srv = js->srv;
    nd_acct_t *acct = ae->acct;
    const char *name = nd_acct_name(acct);
    js->known = nd_xrealloc(js->known, (js->nknown + 1) * sizeof(char *));
    js->known[js->nknown++] = nd_xstrdup(name);
    js_limits_t limits;
    bool on = !is_system(o, a, name) && account_enabled(a, ae, &limits);
    nd_jserr_t err;
    if (on && !sufficient(js, &limits, NULL, &err)) {
        nd_log_error("Error configuring jetstream for account [%s]: %s (%d)", name, err.desc,
                     err.err_code);
        on = false;
    }
    if (!on) {
        static const char *const subj[] = {"$JS.API.>"};
        nd_iclient_start(srv, acct, ND_CONN_SYSTEM, "js-api-off", subj, 1, js->queue_limit,
                         disabled_api, NULL);
        return;
    }
    nd_jsa_t *jsa = nd_xcalloc(1, sizeof *jsa);
    jsa->js = js;
    nd_actor_ref(&acct->actor);
    jsa->acct = acct; /* our reference, dropped by nd_js_stop */
    jsa->dir = js_path("%s/%s", js->store_dir, name);
    pthread_mutex_init(&jsa->mu, NULL);
    js_limits_set(jsa, &limits);
    accts_append(js, jsa);
    js_streams_recover(ctx, jsa);
    char dsub[300];
    const char *subj[2] = {"$JS.API.>", dsub};
    size_t n = 1;
    if (js->domain[0] != '\0') {
        snprintf(dsub, sizeof dsub, "$JS.%s.API.>", js->domain);
        n = 2;
    }
    jsa->api = nd_iclient_start(srv, acct, ND_CONN_SYSTEM, "js-api", subj, n, js->queue_limit,
                                js_api_handle, jsa);
}

/* A snapshot of the authorization was installed (start, reload): accounts seen for the first
 * time get JetStream set up; those with JetStream get the limits now in force. Accounts that lose
 * JetStream keep it until a restart (nats-server disables it). */
static void
accounts_update(nd_ctx_t *ctx, const nd_auth_t *a, void *arg)
{
    nd_js_t *js = arg;
    if (a == NULL)
        return;
    const nd_opts_t *o = &js->srv->opts; /* system_account: not reloadable */
    pthread_mutex_lock(&js->amu);
    for (size_t i = 0; i < a->naccts; i++) {
        const nd_auth_acct_t *ae = &a->accts[i];
        if (ae->acct == NULL)
            continue;
        const char *name = nd_acct_name(ae->acct);
        if (!is_known(js, name)) {
            account_setup(js, ctx, o, a, ae);
            continue;
        }
        nd_jsa_t *jsa = find_jsa(js, name);
        js_limits_t limits;
        if (jsa == NULL)
            continue; /* TODO: enabling JetStream for a known account on reload */
        if (is_system(o, a, name) || !account_enabled(a, ae, &limits)) {
            nd_log_warn("JetStream stays enabled for account %s until a restart", name);
            continue;
        }
        nd_jserr_t err;
        if (!sufficient(js, &limits, jsa, &err)) {
            nd_log_error("Error configuring jetstream for account [%s]: %s (%d)", name, err.desc,
                         err.err_code);
            continue;
        }
        js_limits_set(jsa, &limits);
    }
    pthread_mutex_unlock(&js->amu);
}

static void
resolve_limits(nd_js_t *js, const nd_opts_t *o)
{
    js->max_memory = o->js != NULL ? o->js->max_memory : -1;
    js->max_store = o->js != NULL ? o->js->max_store : -1;
    if (js->max_memory <= 0) {
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        js->max_memory = pages > 0 && psize > 0 ? (int64_t)pages * psize / 4 * 3 : 1LL << 30;
    }
    if (js->max_store <= 0) {
        struct statvfs sv;
        js->max_store = statvfs(js->store_dir, &sv) == 0
                            ? (int64_t)((double)sv.f_bavail * (double)sv.f_frsize * 0.75)
                            : 1LL << 40;
    }
}

nd_js_t *
nd_js_start(nd_server_t *srv)
{
    const nd_opts_t *o = &srv->opts;
    if (!o->jetstream)
        return NULL;
    nd_js_t *js = nd_xcalloc(1, sizeof *js);
    js->srv = srv;
    const nd_js_opts_t *jo = o->js;
    const char *base = o->store_dir != NULL && o->store_dir[0] != '\0' ? o->store_dir : NULL;
    if (base != NULL)
        js->store_dir = js_path("%s/jetstream", base);
    else
        js->store_dir = js_path("%s/nats/jetstream",
                                getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    js->domain = nd_xstrdup(jo != NULL && jo->domain != NULL ? jo->domain : "");
    js->sync_always = jo != NULL && jo->sync_always;
    js->sync_interval_ns =
        jo != NULL && jo->sync_interval_ms > 0 ? jo->sync_interval_ms * 1000000LL : 0;
    js->strict = jo != NULL && jo->strict;
    js->max_dup_window_ns =
        jo != NULL && jo->duplicate_window_ms > 0 ? jo->duplicate_window_ms * 1000000LL : 0;
    js->queue_limit = jo != NULL && jo->request_queue_limit > 0
                          ? (uint32_t)jo->request_queue_limit
                          : ND_ICLIENT_QUEUE_LIMIT;
    js->started_ns = js_now();
    pthread_mutex_init(&js->rmu, NULL);
    pthread_cond_init(&js->rcv, NULL);

    if (js_mkdirs(js->store_dir) != 0 || access(js->store_dir, W_OK) != 0) {
        nd_log_error("Could not create or write the JetStream storage directory %s: %s",
                     js->store_dir, strerror(errno));
        nd_js_free(js);
        return NULL;
    }
    resolve_limits(js, o);
    nd_log_info("Starting JetStream");
    nd_log_info("    Max Memory:      %" PRId64 " bytes", js->max_memory);
    nd_log_info("    Max Storage:     %" PRId64 " bytes", js->max_store);
    nd_log_info("    Store Directory: \"%s\"", js->store_dir);
    if (js->domain[0] != '\0')
        nd_log_info("    Domain:          %s", js->domain);
    if (js->sync_always)
        nd_log_info("    Sync Interval:   always");

    pthread_mutex_init(&js->amu, NULL);
    nd_auth_t *a = srv->auth != NULL ? nd_auth_slot_get(srv->auth) : NULL;
    nd_ctx_t *ctx = nd_ctx_external_new(srv->pool);
    accounts_update(ctx, a, js);
    if (a != NULL)
        nd_auth_unref(ctx, a);
    nd_ctx_external_free(ctx);
    /* Accounts that a later snapshot brings (reload, operator-mode JWTs) get theirs then. */
    if (srv->auth != NULL)
        nd_auth_slot_on_install(srv->auth, accounts_update, js);
    nd_log_info("JetStream started with %zu account%s", js->naccts, js->naccts == 1 ? "" : "s");
    js_mon_install(js);
    return js;
}

void
nd_js_stop(nd_js_t *js)
{
    if (js == NULL)
        return;
    js_mon_uninstall(js);
    if (js->srv->auth != NULL)
        nd_auth_slot_on_install(js->srv->auth, NULL, NULL);
    /* Our account references go now: the pool's shutdown waits for every actor to be freed.
     * The services and streams still running hold references of their own until it closes
     * them, and nothing here touches an account after this. */
    nd_ctx_t *ctx = nd_ctx_external_new(js->srv->pool);
    pthread_mutex_lock(&js->amu);
    for (size_t i = 0; i < js->naccts; i++) {
        nd_jsa_t *jsa = js->accts[i];
        if (!jsa->acct_released) {
            jsa->acct_released = true;
            nd_actor_unref(ctx, &jsa->acct->actor);
        }
    }
    pthread_mutex_unlock(&js->amu);
    nd_ctx_external_free(ctx);
}

void
nd_js_free(nd_js_t *js)
{
    if (js == NULL)
        return;
    nd_js_stop(js);
    for (size_t i = 0; i < js->naccts; i++) {
        nd_jsa_t *jsa = js->accts[i];
        for (size_t k = 0; k < jsa->nstreams; k++)
            js_stream_unref(jsa->streams[k]);
        nd_free(jsa->streams);
        pthread_mutex_destroy(&jsa->mu);
        nd_free(jsa->dir);
        nd_free(jsa);
    }
    nd_free(js->accts);
    for (size_t i = 0; i < js->nknown; i++)
        nd_free(js->known[i]);
    nd_free(js->known);
    pthread_mutex_destroy(&js->amu);
    pthread_mutex_destroy(&js->rmu);
    pthread_cond_destroy(&js->rcv);
    nd_free(js->store_dir);
    nd_free(js->domain);
    nd_free(js);
}
