/* JetStream's start: which accounts have it, the store directory, the API services, and the
 * streams recovered from disk. See js.h. Reference: nats-server server/jetstream.go
 * (enableJetStream, enableJetStreamAccounts, configJetStream). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "auth/auth.h"
#include "js/js_int.h"
#include "net/connreg.h"
#include "util/evid.h"
#include "util/log.h"

int64_t
js_now(void)
{
    return nd_mon_wall_ns();
}

/* mkdir -p. Returns: 0, or -1 with errno. */
static int
mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0750) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

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

/* Whether the account named name has JetStream, and its limits. */
static bool
account_enabled(const nd_opts_t *o, const char *name, nd_acct_js_t *limits)
{
    memset(limits, 0, sizeof *limits);
    limits->max_memory = limits->max_store = limits->max_streams = limits->max_consumers = -1;
    limits->memory_max_stream_bytes = limits->store_max_stream_bytes = -1;
    limits->max_ack_pending = -1;
    size_t declared = 0;
    for (size_t i = 0; i < o->naccounts; i++) {
        const nd_account_opts_t *a = &o->accounts[i];
        if (strcmp(a->name, "$G") == 0 ||
            (o->system_account != NULL && strcmp(a->name, o->system_account) == 0) ||
            strcmp(a->name, "$SYS") == 0)
            continue;
        declared++;
        if (strcmp(a->name, name) == 0 && a->js.enabled) {
            *limits = a->js;
            limits->enabled = true;
            return true;
        }
    }
    /* nats-server: with no accounts of its own, the global account has JetStream. */
    if (declared == 0 && strcmp(name, "$G") == 0) {
        limits->enabled = true;
        return true;
    }
    return false;
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
    char path[4096];
    if (base != NULL)
        snprintf(path, sizeof path, "%s/jetstream", base);
    else
        snprintf(path, sizeof path, "%s/nats/jetstream",
                 getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    js->store_dir = nd_xstrdup(path);
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

    if (mkdirs(js->store_dir) != 0 || access(js->store_dir, W_OK) != 0) {
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

    nd_auth_t *a = srv->auth != NULL ? nd_auth_slot_get(srv->auth) : NULL;
    nd_ctx_t *ctx = nd_ctx_external_new(srv->pool);
    js->accts = nd_xcalloc(a != NULL && a->naccts > 0 ? a->naccts : 1, sizeof(nd_jsa_t *));
    for (size_t i = 0; a != NULL && i < a->naccts; i++) {
        nd_acct_t *acct = a->accts[i].acct;
        if (acct == NULL)
            continue;
        const char *name = nd_acct_name(acct);
        bool sys = o->system_account != NULL && strcmp(name, o->system_account) == 0;
        nd_acct_js_t limits;
        if (sys || !account_enabled(o, name, &limits)) {
            static const char *const subj[] = {"$JS.API.>"};
            nd_iclient_start(srv, acct, ND_CONN_SYSTEM, "js-api-off", subj, 1, js->queue_limit,
                             disabled_api, NULL);
            continue;
        }
        nd_jsa_t *jsa = nd_xcalloc(1, sizeof *jsa);
        jsa->js = js;
        jsa->acct = acct; /* the authorization keeps it for the server's life */
        jsa->limits = limits;
        snprintf(path, sizeof path, "%s/%s", js->store_dir, name);
        jsa->dir = nd_xstrdup(path);
        pthread_mutex_init(&jsa->mu, NULL);
        js->accts[js->naccts++] = jsa;
        js_streams_recover(ctx, jsa);
        char dsub[300];
        const char *subj[2] = {"$JS.API.>", dsub};
        size_t n = 1;
        if (js->domain[0] != '\0') {
            snprintf(dsub, sizeof dsub, "$JS.%s.API.>", js->domain);
            n = 2;
        }
        jsa->api = nd_iclient_start(srv, acct, ND_CONN_SYSTEM, "js-api", subj, n,
                                    js->queue_limit, js_api_handle, jsa);
    }
    if (a != NULL)
        nd_auth_unref(ctx, a);
    nd_ctx_external_free(ctx);
    nd_log_info("JetStream started with %zu account%s", js->naccts, js->naccts == 1 ? "" : "s");
    return js;
}

void
nd_js_free(nd_js_t *js)
{
    if (js == NULL)
        return;
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
    pthread_mutex_destroy(&js->rmu);
    pthread_cond_destroy(&js->rcv);
    nd_free(js->store_dir);
    nd_free(js->domain);
    nd_free(js);
}
