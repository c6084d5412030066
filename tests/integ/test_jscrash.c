/* JetStream consumers across crashes, power loss and restarts (natsd only: nats-server may
 * redeliver acknowledged messages after a crash, which natsd must not do).
 *
 * - sigkill_sync_always, sigkill_default_policy: a publisher (sync PubAcks, each recorded) and a
 *   pull consumer (fetching and double-acking every delivery, each confirmed ack recorded) run on
 *   two connections while the test SIGKILLs natsd at a random moment, four times, restarting on
 *   the same store. Then the consumer is drained. Checked: every acknowledged publish was
 *   delivered at least once (before or after a crash) with its payload; no delivery ever comes
 *   after the server confirmed its ack (a double ack is answered only once the state holding it
 *   was written); stream sequences only grow across deliveries except for redeliveries of
 *   messages not confirmed acknowledged; the stream keeps every acknowledged publish.
 * - power_cut_sync_always: the same under tests/integ/powershim.c (the power goes: unsynced
 *   writes are lost) with `sync_interval: always`.
 * - recover_state_and_config, recover_ephemeral_inactive, deleted_stays_deleted: consumer info
 *   (delivered, ack floor, ack pending, redelivered, pending, config) is the same after a clean
 *   restart and delivery goes on from there; an ephemeral with inactive_threshold is recovered
 *   and then removed after its threshold; a deleted consumer does not come back (after a clean
 *   stop and after SIGKILL right after the delete).
 * - removed_*: purge, message delete and max_age expiry take messages out of pending without
 *   redelivering them, and ack_floor and num_pending follow (consumer info after each).
 *
 * The random crash moments come from a seed printed at the start of each case;
 * ND_JSCRASH_SEED=<n> repeats one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jsproto.h"

TestSuite(integ_jscrash, .fini = nd_integ_cleanup, .timeout = 240);

#define API "_api"

static int64_t
mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static unsigned
seed_of(const char *name)
{
    const char *env = getenv("ND_JSCRASH_SEED");
    unsigned s = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    fprintf(stderr, "jscrash %s: seed %u (ND_JSCRASH_SEED repeats it)\n", name, s);
    return s;
}

/* ---- servers ------------------------------------------------------------------------------------
 */

typedef struct srv_env {
    nd_integ_conf_t conf;
    char store[256];
    char ctl[256]; /* powershim control file */
    const char *args[3];
    bool shim;
} srv_env_t;

static void
env_setup(srv_env_t *e, const char *js_extra, bool shim)
{
    memset(e, 0, sizeof *e);
    e->shim = shim;
    nd_integ_conf_file(&e->conf, "store", e->store, sizeof e->store);
    nd_integ_conf_file(&e->conf, "power.ctl", e->ctl, sizeof e->ctl);
    nd_integ_write_file(e->ctl, "ok\n");
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\"%s%s }\n", e->store,
                       js_extra ? ", " : "", js_extra ? js_extra : "") > 0);
    nd_integ_conf_write(&e->conf, text);
    free(text);
    e->args[0] = "-c";
    e->args[1] = e->conf.path;
    e->args[2] = NULL;
}

/* Starts natsd on the env's config; under the power shim when shim (as test_jspower.c). */
static nd_integ_server_t *
env_start(srv_env_t *e, bool shim)
{
    if (!shim)
        return nd_integ_server_start(0, e->args);
#ifdef ND_POWERSHIM_PATH
    const char *asan = getenv("ASAN_OPTIONS");
    char *old = asan ? strdup(asan) : NULL, *opts = NULL;
    cr_assert(asprintf(&opts, "%s%sverify_asan_link_order=0", old ? old : "",
                       old && old[0] ? ":" : "") > 0);
    setenv("ASAN_OPTIONS", opts, 1);
    setenv("LD_PRELOAD", ND_POWERSHIM_PATH, 1);
    setenv("ND_POWERSHIM_DIR", e->store, 1);
    setenv("ND_POWERSHIM_CTL", e->ctl, 1);
    nd_integ_write_file(e->ctl, "ok\n");
    nd_integ_server_t *srv = nd_integ_server_start(0, e->args);
    unsetenv("LD_PRELOAD");
    unsetenv("ND_POWERSHIM_DIR");
    unsetenv("ND_POWERSHIM_CTL");
    if (old != NULL)
        setenv("ASAN_OPTIONS", old, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(old);
    free(opts);
    return srv;
#else
    cr_assert_fail("built without the power shim");
#endif
}

/* ---- requests -----------------------------------------------------------------------------------
 */

static json_t *
api_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    return js_request_json_at(file, line, c, subj, API, body);
}
#define api(c, subj, body) api_at(__FILE__, __LINE__, (c), (subj), (body))

/* An API request that must succeed (no "error" key). Returns: the reply (owned). */
static json_t *
api_ok_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body)
{
    json_t *j = api_at(file, line, c, subj, body);
    if (jget(j, "error") != NULL) {
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "%s %s: %s", subj, body, d);
    }
    return j;
}
#define api_ok(c, subj, body) api_ok_at(__FILE__, __LINE__, (c), (subj), (body))
#define API_OK(c, subj, body) json_decref(api_ok_at(__FILE__, __LINE__, (c), (subj), (body)))

/* Consumer info; NULL when the consumer does not exist (10014), failing on any other error. */
static json_t *
cinfo_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *n)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.INFO.%s.%s", s, n);
    json_t *j = api_at(file, line, c, subj, "");
    if (jget(j, "error") != NULL) {
        json_t *ec = jget(j, "error.err_code");
        if (json_integer_value(ec) == 10014) {
            json_decref(j);
            return NULL;
        }
        char *d = json_dumps(j, JSON_COMPACT);
        jfail(file, line, "consumer info %s: %s", n, d);
    }
    return j;
}
#define cinfo(c, s, n) cinfo_at(__FILE__, __LINE__, (c), (s), (n))

/* Fails unless the consumer's counters are the given ones (-1: not checked). Polls for up to a
 * second first: a removal reaches the consumer's actor by a call of its own, so an info request
 * right after the stream's answer may come first. */
static void
cstate_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *n,
          long long dcs, long long dss, long long acs, long long ass, long long pending,
          long long ack_pending, long long redelivered)
{
    const char *paths[] = {
        "delivered.consumer_seq", "delivered.stream_seq", "ack_floor.consumer_seq",
        "ack_floor.stream_seq",   "num_pending",          "num_ack_pending",
        "num_redelivered"};
    long long want[] = {dcs, dss, acs, ass, pending, ack_pending, redelivered};
    int64_t deadline = mono_ms() + 1000;
    for (;;) {
        json_t *j = cinfo_at(file, line, c, s, n);
        if (j == NULL)
            jfail(file, line, "consumer %s is gone", n);
        int bad = -1;
        for (int i = 0; i < 7 && bad < 0; i++)
            if (want[i] >= 0 && jint_at(file, line, j, paths[i]) != want[i])
                bad = i;
        if (bad < 0) {
            json_decref(j);
            return;
        }
        if (mono_ms() > deadline) {
            char *d = json_dumps(j, JSON_COMPACT);
            jfail(file, line, "%s is %lld, expected %lld in %s", paths[bad],
                  jint_at(file, line, j, paths[bad]), want[bad], d);
        }
        json_decref(j);
        sleep_ms(20);
    }
}
/* CSTATE(c, s, n, delivered cseq, sseq, ack floor cseq, sseq, num_pending, num_ack_pending,
 * num_redelivered) */
#define CSTATE(c, s, n, dcs, dss, acs, ass, p, ap, rd)                                             \
    cstate_at(__FILE__, __LINE__, (c), (s), (n), (dcs), (dss), (acs), (ass), (p), (ap), (rd))

static long long
stream_int_at(const char *file, int line, nd_integ_conn_t *c, const char *s, const char *path)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.STREAM.INFO.%s", s);
    json_t *j = api_ok_at(file, line, c, subj, "");
    long long v = jint_at(file, line, j, path);
    json_decref(j);
    return v;
}
#define stream_int(c, s, path) stream_int_at(__FILE__, __LINE__, (c), (s), (path))

/* Publishes and expects the PubAck of seq. */
static void
pub_at(const char *file, int line, nd_integ_conn_t *c, const char *subj, const char *body,
       const char *stream, long long seq)
{
    char want[300];
    snprintf(want, sizeof want, "{\"stream\":\"%s\", \"seq\":%lld}", stream, seq);
    js_publish_at(file, line, c, subj, API, NULL, body);
    js_msg_free_ret(js_expect_msg_at(file, line, c, API, NULL, want));
}
#define pub(c, subj, body, stream, seq)                                                            \
    pub_at(__FILE__, __LINE__, (c), (subj), (body), (stream), (seq))

/* ---- deliveries ---------------------------------------------------------------------------------
 */

/* The tokens of an ack subject $JS.ACK.<s>.<n>.<dc>.<sseq>.<dseq>.<ts>.<pending>. */
typedef struct ackinfo {
    long long dc, sseq, dseq, pending;
} ackinfo_t;

static bool
parse_ack(const char *reply, ackinfo_t *a)
{
    if (reply == NULL || strncmp(reply, "$JS.ACK.", 8) != 0)
        return false;
    const char *p = reply + 8;
    for (int i = 0; i < 2; i++) { /* stream, consumer */
        p = strchr(p, '.');
        if (p == NULL)
            return false;
        p++;
    }
    long long v[5];
    for (int i = 0; i < 5; i++) {
        char *end = NULL;
        v[i] = strtoll(p, &end, 10);
        if (end == p || (i < 4 && *end != '.') || (i == 4 && *end != '\0'))
            return false;
        p = end + 1;
    }
    *a = (ackinfo_t){v[0], v[1], v[2], v[4]};
    return true;
}

/* Expects a delivery of stream sequence sseq with delivery count dc (and the payload data when
 * not NULL) on c. Returns: its ack subject (owned). */
static char *
delivery_at(const char *file, int line, nd_integ_conn_t *c, const char *inbox, long long sseq,
            long long dc, const char *data)
{
    js_msg_t m = js_read_msg_at(file, line, c);
    ackinfo_t a;
    if (m.hdr != NULL || !parse_ack(m.reply, &a))
        jfail(file, line, "expected a delivery of %lld for %s, got \"%s\" (headers %s)", sseq,
              inbox, m.line, m.hdr ? nd_integ_escape(m.hdr, m.hdr_len, 200) : "none");
    if (a.sseq != sseq || a.dc != dc || (data != NULL && strcmp(m.data, data) != 0))
        jfail(file, line, "expected stream seq %lld delivery count %lld payload %s, got %s (%s)",
              sseq, dc, data ? data : "(any)", m.reply, m.data);
    char *r = strdup(m.reply);
    js_msg_free(&m);
    return r;
}
#define DELIVERY(c, inbox, sseq, dc, data)                                                         \
    delivery_at(__FILE__, __LINE__, (c), (inbox), (sseq), (dc), (data))

/* A pull request for n messages of s/d on inbox. */
static void
fetch(nd_integ_conn_t *c, const char *s, const char *d, const char *inbox, const char *body)
{
    char subj[256];
    snprintf(subj, sizeof subj, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", s, d);
    js_publish(c, subj, inbox, NULL, body);
}

/* Acks (body) with a reply and waits for the confirmation. */
static void
ack_at(const char *file, int line, nd_integ_conn_t *c, const char *ack, const char *body)
{
    js_publish_at(file, line, c, ack, "_dack", NULL, body);
    js_msg_free_ret(js_expect_msg_at(file, line, c, "_dack", NULL, ""));
}
#define ACK(c, ack, body) ack_at(__FILE__, __LINE__, (c), (ack), (body))

/* A connection with API replies on _api (sid 1), pulls on _p (2) and double-ack replies on
 * _dack (3). */
static nd_integ_conn_t *
conn(nd_integ_server_t *srv)
{
    nd_integ_conn_t *c = js_conn_open(srv, API);
    ND_SEND(c, "SUB _p 2\r\nSUB _dack 3\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    return c;
}

/* ---- files in the store -------------------------------------------------------------------------
 */

static const char *ftw_needle;
static int ftw_found;

static int
ftw_visit(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    size_t pl = strlen(p), nl = strlen(ftw_needle);
    if (pl >= nl && strcmp(p + pl - nl, ftw_needle) == 0)
        ftw_found++;
    return 0;
}

/* How many files under dir have a path ending in suffix. */
static int
files_ending(const char *dir, const char *suffix)
{
    ftw_needle = suffix;
    ftw_found = 0;
    nftw(dir, ftw_visit, 16, FTW_PHYS);
    return ftw_found;
}

/* ---- crash rounds -------------------------------------------------------------------------------
 */

#define ROUNDS    4
#define PUB_FLY   32
#define PULL_BODY "{\"batch\":64,\"expires\":300000000}"

typedef struct dlv {
    long long sseq, k, dc;
} dlv_t;

/* What the test saw, across rounds. Payloads are "m<k>" for the k-th publish (k from 1). */
typedef struct crash_run {
    /* publishes */
    long long next_k;   /* the next payload index */
    long long *pub_seq; /* [k]: the sequence its PubAck gave, 0 none */
    size_t pub_cap;
    long long max_acked_seq, npubacks, npuberr;
    /* deliveries */
    dlv_t *log;
    size_t nlog, logcap;
    long long *confirmed; /* [sseq]: the k whose ack the server confirmed, 0 none */
    int *seen_round;      /* [sseq]: 1 + the round of the last delivery, 0 never delivered */
    size_t seq_cap;
    long long max_seen, nconfirmed, nredelivered;
    int round;
    /* failures found (the first of each kind is kept for the message) */
    long long violations;
    char first_violation[640];
    long long redelivered_confirmed; /* deliveries after a confirmed ack (also in violations) */
    char first_redelivered_confirmed[640];
} crash_run_t;

static void
grow_ll(long long **a, size_t *cap, size_t need)
{
    if (need < *cap)
        return;
    size_t n = *cap ? *cap : 1024;
    while (n <= need)
        n *= 2;
    *a = realloc(*a, n * sizeof **a);
    memset(*a + *cap, 0, (n - *cap) * sizeof **a);
    *cap = n;
}

static void
seq_room(crash_run_t *r, long long seq)
{
    if ((size_t)seq < r->seq_cap)
        return;
    size_t old = r->seq_cap, n = old ? old : 1024;
    while (n <= (size_t)seq)
        n *= 2;
    r->confirmed = realloc(r->confirmed, n * sizeof *r->confirmed);
    r->seen_round = realloc(r->seen_round, n * sizeof *r->seen_round);
    memset(r->confirmed + old, 0, (n - old) * sizeof *r->confirmed);
    memset(r->seen_round + old, 0, (n - old) * sizeof *r->seen_round);
    r->seq_cap = n;
}

static void violation(crash_run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
violation(crash_run_t *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "jscrash: VIOLATION (round %d): %s\n", r->round, buf);
    if (r->violations++ == 0)
        snprintf(r->first_violation, sizeof r->first_violation, "round %d: %s", r->round, buf);
}

/* A frame as read: returns false when it is not a complete MSG/HMSG (cut by the crash). */
static bool
split_frame(const char *f, js_msg_t *m)
{
    memset(m, 0, sizeof *m);
    const char *eol = strstr(f, "\r\n");
    bool hmsg = strncmp(f, "HMSG ", 5) == 0;
    if (eol == NULL || !(hmsg || strncmp(f, "MSG ", 4) == 0))
        return false;
    char *line = strndup(f, (size_t)(eol - f)), *tok[8], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " ", &save); t != NULL && n < 8; t = strtok_r(NULL, " ", &save))
        tok[n++] = t;
    int want = hmsg ? 5 : 4;
    if (n != want && n != want + 1) {
        free(line);
        return false;
    }
    size_t total = strtoul(tok[n - 1], NULL, 10), hl = hmsg ? strtoul(tok[n - 2], NULL, 10) : 0;
    const char *body = eol + 2;
    if (strlen(body) != total + 2 || hl > total) {
        free(line);
        return false;
    }
    m->line = strndup(f, (size_t)(eol - f));
    m->subject = strdup(tok[1]);
    m->reply = n == want + 1 ? strdup(tok[3]) : NULL;
    if (hmsg) {
        m->hdr = strndup(body, hl);
        m->hdr_len = hl;
    }
    m->data = strndup(body + hl, total - hl);
    m->data_len = total - hl;
    free(line);
    return true;
}

typedef struct crash_conns {
    nd_integ_conn_t *p; /* publisher: PubAcks on _pa.<k> (sid 2), API on _api (sid 1) */
    nd_integ_conn_t
        *q; /* consumer: deliveries and statuses on _p, confirmations on _ak.<sseq>.<k> */
    long long in_flight; /* publishes without an answer */
    long long pull_left; /* messages the outstanding pull request may still bring */
} crash_conns_t;

static void
conns_open(crash_conns_t *cc, nd_integ_server_t *srv)
{
    cc->p = js_conn_open(srv, API);
    ND_SEND(cc->p, "SUB _pa.> 2\r\nPING\r\n");
    ND_EXPECT(cc->p, "PONG\r\n");
    cc->q = js_conn_open(srv, NULL);
    ND_SEND(cc->q, "SUB _p 2\r\nSUB _ak.> 3\r\nPING\r\n");
    ND_EXPECT(cc->q, "PONG\r\n");
    cc->in_flight = 0;
    cc->pull_left = 0;
}

static void
conns_close(crash_conns_t *cc)
{
    nd_integ_conn_close(cc->p);
    nd_integ_conn_close(cc->q);
    cc->p = cc->q = NULL;
}

/* One frame from the publisher's connection. */
static void
on_pub_frame(crash_run_t *r, crash_conns_t *cc, const char *f)
{
    js_msg_t m;
    if (!split_frame(f, &m))
        return; /* cut by the crash: not an acknowledgement */
    if (strncmp(m.subject, "_pa.", 4) == 0) {
        long long k = strtoll(m.subject + 4, NULL, 10);
        cc->in_flight--;
        json_t *j = json_loads(m.data, 0, NULL);
        json_t *seq = jget(j, "seq");
        if (j != NULL && jget(j, "error") == NULL && json_is_integer(seq) &&
            json_integer_value(seq) > 0) {
            long long s = json_integer_value(seq);
            grow_ll(&r->pub_seq, &r->pub_cap, (size_t)k);
            r->pub_seq[k] = s;
            r->npubacks++;
            if (s > r->max_acked_seq)
                r->max_acked_seq = s;
        } else {
            r->npuberr++; /* not acknowledged: it may or may not be stored */
        }
        json_decref(j);
    }
    js_msg_free(&m);
}

/* One frame from the consumer's connection; live: the server runs (deliveries are acked). */
static void
on_cons_frame(crash_run_t *r, crash_conns_t *cc, const char *f, bool live)
{
    js_msg_t m;
    if (!split_frame(f, &m))
        return;
    if (strncmp(m.subject, "_ak.", 4) == 0) {
        char *end = NULL;
        long long s = strtoll(m.subject + 4, &end, 10);
        long long k = strtoll(end + 1, NULL, 10);
        seq_room(r, s);
        if (r->confirmed[s] == 0)
            r->nconfirmed++;
        r->confirmed[s] = k;
    } else if (strcmp(m.subject, "_p") == 0 && m.hdr != NULL) {
        /* A status ends the pull request (408 on expiry); anything else is unexpected. */
        if (strncmp(m.hdr, "NATS/1.0 408", 12) != 0 && strncmp(m.hdr, "NATS/1.0 409", 12) != 0)
            violation(r, "unexpected status on the pull inbox: %s",
                      nd_integ_escape(m.hdr, m.hdr_len, 200));
        cc->pull_left = 0;
    } else {
        /* A delivery comes on the message's own subject, with its ack subject as reply. */
        ackinfo_t a;
        if (!parse_ack(m.reply, &a) || m.data[0] != 'm') {
            violation(r, "malformed delivery \"%s\" %s", m.line, m.data);
        } else {
            long long k = strtoll(m.data + 1, NULL, 10), s = a.sseq;
            seq_room(r, s);
            if (r->confirmed[s] == k) {
                if (r->redelivered_confirmed++ == 0)
                    snprintf(r->first_redelivered_confirmed, sizeof r->first_redelivered_confirmed,
                             "round %d: stream seq %lld (m%lld) delivered again after its ack was "
                             "confirmed (%s)",
                             r->round, s, k, m.reply);
                else if (r->redelivered_confirmed > 10)
                    goto logged; /* counted; the first ten are enough on stderr */
                fprintf(stderr,
                        "jscrash: round %d: stream seq %lld (m%lld) delivered again after "
                        "its ack was confirmed (%s)\n",
                        r->round, s, k, m.reply);
            }
        logged:
            if (s <= r->max_seen && a.dc == 1) {
                if (r->seen_round[s] == 0)
                    violation(r, "order: stream seq %lld delivered new after %lld (%s)", s,
                              r->max_seen, m.reply);
                else if (r->seen_round[s] == r->round + 1)
                    violation(r,
                              "stream seq %lld delivered twice with delivery count 1 in one "
                              "server run (%s)",
                              s, m.reply);
            }
            if (s > r->max_seen)
                r->max_seen = s;
            if (r->seen_round[s] != 0)
                r->nredelivered++;
            r->seen_round[s] = r->round + 1;
            if (r->nlog == r->logcap) {
                r->logcap = r->logcap ? r->logcap * 2 : 4096;
                r->log = realloc(r->log, r->logcap * sizeof *r->log);
            }
            r->log[r->nlog++] = (dlv_t){s, k, a.dc};
            if (cc->pull_left > 0)
                cc->pull_left--;
            if (live) {
                char reply[64];
                snprintf(reply, sizeof reply, "_ak.%lld.%lld", s, k);
                js_publish(cc->q, m.reply, reply, NULL, "+ACK");
            }
        }
    }
    js_msg_free(&m);
}

/* Keeps PUB_FLY publishes in flight (when publishing) and one pull request outstanding. */
static void
feed(crash_run_t *r, crash_conns_t *cc, bool publishing)
{
    while (publishing && cc->in_flight < PUB_FLY) {
        long long k = r->next_k++;
        char subj[32], reply[32], body[32];
        snprintf(subj, sizeof subj, "c.%lld", k % 4);
        snprintf(reply, sizeof reply, "_pa.%lld", k);
        snprintf(body, sizeof body, "m%lld", k);
        js_publish(cc->p, subj, reply, NULL, body);
        cc->in_flight++;
    }
    if (cc->pull_left == 0) {
        fetch(cc->q, "C", "D", "_p", PULL_BODY);
        cc->pull_left = 64;
    }
}

/* Reads every frame left on both connections of a dead server (sent before it died). */
static void
drain_dead(crash_run_t *r, crash_conns_t *cc)
{
    for (char *f; (f = nd_integ_read_frame(cc->p)) != NULL; free(f))
        on_pub_frame(r, cc, f);
    for (char *f; (f = nd_integ_read_frame(cc->q)) != NULL; free(f))
        on_cons_frame(r, cc, f, false);
}

/* Runs publisher and consumer until a random moment after both made progress, then crashes the
 * server: SIGKILL, or the power shim's cut. */
static void
run_and_crash(crash_run_t *r, crash_conns_t *cc, srv_env_t *e, nd_integ_server_t *srv, bool power)
{
    long long acks0 = r->npubacks, conf0 = r->nconfirmed;
    int64_t start = mono_ms(), at = start + 100 + rand() % 500;
    bool turn = false;
    for (;;) {
        int64_t now = mono_ms();
        if (now >= at && r->npubacks - acks0 >= 20 && r->nconfirmed - conf0 >= 20)
            break;
        cr_assert(now - start < 20000,
                  "no progress in 20 s: %lld PubAcks, %lld confirmed acks this round (%zu "
                  "deliveries, %lld violations: %s)",
                  r->npubacks - acks0, r->nconfirmed - conf0, r->nlog, r->violations,
                  r->first_violation);
        feed(r, cc, true);
        /* Taking turns: the publisher alone always has something to read. */
        turn = !turn;
        nd_integ_conn_t *both[2] = {turn ? cc->p : cc->q, turn ? cc->q : cc->p};
        int i = nd_integ_conn_wait_any(both, 2, 50);
        if (i < 0)
            continue;
        char *f = nd_integ_read_frame(both[i]);
        cr_assert(f != NULL, "the server closed a connection before the crash");
        if (both[i] == cc->p)
            on_pub_frame(r, cc, f);
        else
            on_cons_frame(r, cc, f, true);
        free(f);
    }
    if (!power) {
        nd_integ_server_kill(srv);
    } else {
        size_t mark = nd_integ_server_log_mark(srv);
        nd_integ_write_file(e->ctl, "cut\n");
        nd_integ_server_wait_log(srv, mark, "powershim: power cut");
        nd_integ_server_wait_exit(srv);
    }
    drain_dead(r, cc);
}

/* After a restart: the stream still holds every acknowledged publish (by count and by the
 * PubAck's sequence; contents are checked through the deliveries). */
static void
check_stream(crash_run_t *r, crash_conns_t *cc)
{
    long long last = stream_int(cc->p, "C", "state.last_seq");
    cr_assert(last >= r->max_acked_seq,
              "round %d: the stream ends at %lld, but %lld was acknowledged", r->round, last,
              r->max_acked_seq);
}

/* After the last restart: fetches and acks until nothing is pending or unacknowledged. */
static void
drain_consumer(crash_run_t *r, crash_conns_t *cc)
{
    int64_t start = mono_ms();
    nd_integ_conn_t *q[1] = {cc->q};
    bool first = true;
    for (;;) {
        cr_assert(mono_ms() - start < 30000, "the consumer did not drain in 30 s");
        if (cc->pull_left == 0) {
            /* The last request ended (filled or expired): done when nothing is left to deliver
             * or to acknowledge. Acks still on their way make num_ack_pending too high, which
             * only costs one more request. */
            if (!first) {
                json_t *j = cinfo(cc->p, "C", "D");
                cr_assert(j != NULL, "consumer D is gone");
                long long np = jint(j, "num_pending"), nap = jint(j, "num_ack_pending");
                json_decref(j);
                if (np == 0 && nap == 0)
                    break;
            }
            first = false;
            feed(r, cc, false);
        }
        if (nd_integ_conn_wait_any(q, 1, 100) == 0) {
            char *f = nd_integ_read_frame(cc->q);
            cr_assert(f != NULL, "the server closed the consumer's connection");
            on_cons_frame(r, cc, f, true);
            free(f);
        }
    }
    /* The confirmations of the last acks. */
    for (int i; (i = nd_integ_conn_wait_any(q, 1, 200)) == 0;) {
        char *f = nd_integ_read_frame(cc->q);
        if (f == NULL)
            break;
        on_cons_frame(r, cc, f, false);
        free(f);
    }
}

static void
check_run(crash_run_t *r, bool known_bug)
{
    /* Every acknowledged publish was delivered with its payload at its sequence. */
    char *ok = calloc((size_t)r->next_k + 1, 1);
    for (size_t i = 0; i < r->nlog; i++) {
        long long k = r->log[i].k;
        if (k > 0 && k < r->next_k && (size_t)k < r->pub_cap && r->pub_seq[k] == r->log[i].sseq)
            ok[k] = 1;
    }
    long long missing = 0, first = 0;
    for (long long k = 1; k < r->next_k && (size_t)k < r->pub_cap; k++)
        if (r->pub_seq[k] != 0 && !ok[k] && missing++ == 0)
            first = k;
    free(ok);
    cr_log_info("%lld publishes, %lld acknowledged (%lld errors), %zu deliveries (%lld "
                "redeliveries), %lld acks confirmed, %lld violations",
                r->next_k - 1, r->npubacks, r->npuberr, r->nlog, r->nredelivered, r->nconfirmed,
                r->violations);
    fprintf(stderr,
            "jscrash: %lld publishes, %lld acknowledged, %zu deliveries (%lld redeliveries), "
            "%lld acks confirmed\n",
            r->next_k - 1, r->npubacks, r->nlog, r->nredelivered, r->nconfirmed);
    cr_expect(missing == 0,
              "%lld acknowledged publishes were never delivered, the first m%lld (seq %lld)",
              missing, first, first ? r->pub_seq[first] : 0);
    cr_assert(r->violations == 0, "%lld violations, the first: %s", r->violations,
              r->first_violation);
    if (r->redelivered_confirmed > 0 && known_bug && getenv("ND_JSCRASH_STRICT") == NULL) {
        /* See power_cut_sync_always: reported, not failed, until the fix lands. */
        fprintf(stderr,
                "jscrash: KNOWN BUG (not failed; ND_JSCRASH_STRICT=1 fails it): %lld deliveries "
                "after a confirmed ack, the first: %s\n",
                r->redelivered_confirmed, r->first_redelivered_confirmed);
    } else {
        cr_assert(r->redelivered_confirmed == 0,
                  "%lld deliveries after their ack was confirmed, the first: %s",
                  r->redelivered_confirmed, r->first_redelivered_confirmed);
    }
    cr_assert(missing == 0);
    cr_assert(r->npubacks > 0 && r->nconfirmed > 0);
}

static void
crash_case(const char *name, const char *js_extra, bool power, bool known_bug)
{
    srand(seed_of(name));
    srv_env_t e;
    env_setup(&e, js_extra, power);
    crash_run_t r = {.next_k = 1};
    crash_conns_t cc;
    nd_integ_server_t *srv = env_start(&e, power);
    conns_open(&cc, srv);
    API_OK(cc.p, "$JS.API.STREAM.CREATE.C", "{\"name\":\"C\",\"subjects\":[\"c.>\"]}");
    API_OK(cc.p, "$JS.API.CONSUMER.CREATE.C.D",
           "{\"stream_name\":\"C\",\"config\":{\"durable_name\":\"D\",\"ack_policy\":"
           "\"explicit\",\"ack_wait\":1000000000}}");
    for (r.round = 0; r.round < ROUNDS; r.round++) {
        run_and_crash(&r, &cc, &e, srv, power);
        conns_close(&cc);
        /* The restart after a power cut is a normal start (the power is back); the next
         * round runs under the shim again. */
        srv = env_start(&e, power && r.round + 1 < ROUNDS);
        conns_open(&cc, srv);
        check_stream(&r, &cc);
    }
    drain_consumer(&r, &cc);
    conns_close(&cc);
    nd_integ_server_stop(srv);
    check_run(&r, known_bug);
    free(r.pub_seq);
    free(r.log);
    free(r.confirmed);
    free(r.seen_round);
    nd_integ_conf_remove(&e.conf);
}

Test(integ_jscrash, sigkill_sync_always, .timeout = 120)
{
    crash_case("sigkill_sync_always", "sync_interval: always", false, false);
}

Test(integ_jscrash, sigkill_default_policy, .timeout = 120)
{
    crash_case("sigkill_default_policy", NULL, false, false);
}

/* KNOWN BUG (reported, not failed unless ND_JSCRASH_STRICT is set): under sync_interval: always
 * a double ack is answered after the consumer's state was written but not fsynced, so a power
 * cut loses confirmed acks (the whole obs/<consumer>.cs file when it was new) and they are
 * redelivered. src/js/stream.c store_cfg() gives the store sync_always = false (the stream syncs
 * once per turn itself), so fs_consumer.c write_state() never fsyncs, and consumer.c persist()
 * does not sync either before on_turn_end() answers the double acks. Everything else (no
 * acknowledged publish lost, order) is asserted as in the SIGKILL cases. */
Test(integ_jscrash, power_cut_sync_always, .timeout = 120)
{
    crash_case("power_cut_sync_always", "sync_interval: always", true, true);
}

/* ---- recovery of state and config ---------------------------------------------------------------
 */

/* A stream S on s.> with messages s.<i> "m<i>", i = 1..n. */
static void
stream_s(nd_integ_conn_t *c, int n)
{
    API_OK(c, "$JS.API.STREAM.CREATE.S", "{\"name\":\"S\",\"subjects\":[\"s.>\"]}");
    for (int i = 1; i <= n; i++) {
        char subj[32], body[32];
        snprintf(subj, sizeof subj, "s.%d", i);
        snprintf(body, sizeof body, "m%d", i);
        pub(c, subj, body, "S", i);
    }
}

static void
create(nd_integ_conn_t *c, const char *s, const char *name, const char *cfg)
{
    char subj[256], *body = NULL;
    if (name != NULL)
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s.%s", s, name);
    else
        snprintf(subj, sizeof subj, "$JS.API.CONSUMER.CREATE.%s", s);
    cr_assert(asprintf(&body, "{\"stream_name\":\"%s\",\"config\":%s}", s, cfg) > 0);
    API_OK(c, subj, body);
    free(body);
}

/* A check that fails today because of a bug reported to the consumer's owners: logged as
 * "KNOWN BUG" and not failed, unless ND_JSCRASH_STRICT is set (then it fails as any other). */
static void known_bug_at(const char *file, int line, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void
known_bug_at(const char *file, int line, bool ok, const char *fmt, ...)
{
    if (ok)
        return;
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    if (getenv("ND_JSCRASH_STRICT") != NULL)
        jfail(file, line, "%s", msg ? msg : fmt);
    fprintf(stderr, "jscrash: KNOWN BUG at %s:%d (ND_JSCRASH_STRICT=1 fails it): %s\n", file, line,
            msg ? msg : fmt);
    free(msg);
}
#define KNOWN_BUG(ok, ...) known_bug_at(__FILE__, __LINE__, (ok), __VA_ARGS__)

/* The parts of consumer info that must survive a restart. Keys whose index is set in known
 * (1 << i) go through KNOWN_BUG. */
static void
same_info_known(json_t *before, json_t *after, const char *what, unsigned known)
{
    const char *keys[] = {"delivered.consumer_seq",
                          "delivered.stream_seq",
                          "ack_floor.consumer_seq",
                          "ack_floor.stream_seq",
                          "num_ack_pending",
                          "num_redelivered",
                          "num_pending",
                          "num_waiting"};
    char *b = json_dumps(before, JSON_COMPACT), *a = json_dumps(after, JSON_COMPACT);
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        bool ok = jint(before, keys[i]) == jint(after, keys[i]);
        if (known & (1u << i))
            KNOWN_BUG(ok, "%s: %s was %lld, after the restart %lld", what, keys[i],
                      jint(before, keys[i]), jint(after, keys[i]));
        else
            cr_assert(ok, "%s: %s was %lld, after the restart %lld\n  before: %s\n  after:  %s",
                      what, keys[i], jint(before, keys[i]), jint(after, keys[i]), b, a);
    }
    cr_assert(json_equal(jget(before, "config"), jget(after, "config")),
              "%s: the config changed\n  before: %s\n  after:  %s", what, b, a);
    cr_assert_str_eq(jstr(before, "created"), jstr(after, "created"), "%s", what);
    cr_assert_str_eq(jstr(before, "name"), jstr(after, "name"), "%s", what);
    free(b);
    free(a);
}
#define same_info(b, a, what) same_info_known((b), (a), (what), 0)
#define K_DELIVERED_SSEQ      (1u << 1)
#define K_ACK_FLOOR_SSEQ      (1u << 3)
#define K_NUM_PENDING         (1u << 6)

Test(integ_jscrash, recover_state_and_config)
{
    srv_env_t e;
    env_setup(&e, NULL, false);
    nd_integ_server_t *srv = env_start(&e, false);
    nd_integ_conn_t *c = conn(srv);
    stream_s(c, 20);
    create(c, "S", "D",
           "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\",\"ack_wait\":30000000000,"
           "\"max_deliver\":5,\"filter_subject\":\"s.>\",\"description\":\"crash test\","
           "\"max_ack_pending\":100,\"max_waiting\":16}");
    create(c, "S", "P",
           "{\"durable_name\":\"P\",\"ack_policy\":\"explicit\",\"deliver_subject\":\"dp\","
           "\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":5,\"ack_wait\":"
           "20000000000}");

    /* N delivers only what comes after its creation: 21..23, none fetched before the restart. */
    create(c, "S", "N",
           "{\"durable_name\":\"N\",\"ack_policy\":\"explicit\",\"deliver_policy\":\"new\"}");
    pub(c, "s.21", "m21", "S", 21);
    pub(c, "s.22", "m22", "S", 22);
    pub(c, "s.23", "m23", "S", 23);

    /* D: 1..8 delivered, 1-3 and 5 acked, 6 NAKed and redelivered (count 2), 4, 6, 7, 8 pending.
     * Every ack with a reply, so the state is written before it is answered. */
    fetch(c, "S", "D", "_p", "{\"batch\":8}");
    char *a[9];
    for (int i = 1; i <= 8; i++) {
        char body[16];
        snprintf(body, sizeof body, "m%d", i);
        a[i] = DELIVERY(c, "_p", i, 1, body);
    }
    ACK(c, a[1], "+ACK");
    ACK(c, a[2], "+ACK");
    ACK(c, a[3], "+ACK");
    ACK(c, a[5], "+ACK");
    ACK(c, a[6], "-NAK");
    fetch(c, "S", "D", "_p", "{\"batch\":1}");
    char *a6b = DELIVERY(c, "_p", 6, 2, "m6");
    /* A no-op double ack (already acknowledged) makes sure the last delivery is written too. */
    ACK(c, a[1], "+ACK");
    CSTATE(c, "S", "D", 9, 8, 3, 3, 15, 4, 1);
    json_t *dbefore = cinfo(c, "S", "D"), *pbefore = cinfo(c, "S", "P"),
           *nbefore = cinfo(c, "S", "N");
    cr_assert(dbefore != NULL && pbefore != NULL && nbefore != NULL);
    cr_assert_eq(jint(nbefore, "num_pending"), 3);

    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);
    srv = env_start(&e, false);
    c = conn(srv);
    json_t *dafter = cinfo(c, "S", "D"), *pafter = cinfo(c, "S", "P"), *nafter = cinfo(c, "S", "N");
    cr_assert(dafter != NULL && pafter != NULL && nafter != NULL, "a consumer did not come back");
    same_info(dbefore, dafter, "D");
    /* KNOWN BUG: a consumer's start position is not written when it is created, and a
     * recovered consumer without a written state starts again from its policy against the
     * stream as it is now: N ("new") skips 21..23 (num_pending 0, never delivered) and P shows
     * delivered.stream_seq 0 instead of 4. */
    same_info_known(nbefore, nafter, "N", K_DELIVERED_SSEQ | K_ACK_FLOOR_SSEQ | K_NUM_PENDING);
    same_info_known(pbefore, pafter, "P", K_DELIVERED_SSEQ | K_ACK_FLOOR_SSEQ);
    cr_assert_str_eq(jstr(pafter, "config.deliver_subject"), "dp");
    cr_assert_eq(jint(pafter, "config.opt_start_seq"), 5);

    /* Delivery goes on from the recovered state: 9 next (consumer seq 10), a NAK of 4 brings it
     * back with count 2, one of 6 with count 3 (the count survived). */
    fetch(c, "S", "D", "_p", "{\"batch\":1}");
    char *a9 = DELIVERY(c, "_p", 9, 1, "m9");
    ackinfo_t ai;
    cr_assert(parse_ack(a9, &ai) && ai.dseq == 10, "%s", a9);
    ACK(c, a[4], "-NAK");
    fetch(c, "S", "D", "_p", "{\"batch\":1}");
    char *a4b = DELIVERY(c, "_p", 4, 2, "m4");
    ACK(c, a6b, "-NAK");
    fetch(c, "S", "D", "_p", "{\"batch\":1}");
    char *a6c = DELIVERY(c, "_p", 6, 3, "m6");
    ACK(c, a4b, "+ACK");
    ACK(c, a6c, "+ACK");
    /* 7 and 8 still pending: the floor is 6 (consumer seq 6: 6's first delivery... the floor
     * follows the oldest live entry, 7 delivered as consumer seq 7). */
    CSTATE(c, "S", "D", 12, 9, 6, 6, 14, 3, 0);
    /* N delivers what came after its creation, before the restart. */
    fetch(c, "S", "N", "_p", "{\"batch\":1,\"expires\":500000000}");
    {
        js_msg_t m = js_read_msg(c);
        ackinfo_t na;
        bool ok = m.hdr == NULL && parse_ack(m.reply, &na) && na.sseq == 21 && na.dc == 1 &&
                  strcmp(m.data, "m21") == 0;
        KNOWN_BUG(ok,
                  "N after the restart: expected the delivery of 21 (published after N's "
                  "creation, before the restart), got \"%s\" %s",
                  m.line, m.hdr ? nd_integ_escape(m.hdr, m.hdr_len, 100) : m.data);
        js_msg_free(&m);
    }
    /* The push consumer delivers from its start sequence. */
    ND_SEND(c, "SUB dp 9\r\nPING\r\n");
    ND_EXPECT(c, "PONG\r\n");
    char *p5 = DELIVERY(c, "dp", 5, 1, "m5");
    for (int i = 1; i <= 8; i++)
        free(a[i]);
    free(a6b), free(a9), free(a4b), free(a6c), free(p5);
    json_decref(dbefore), json_decref(dafter), json_decref(pbefore), json_decref(pafter);
    json_decref(nbefore), json_decref(nafter);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &e.conf);
}

Test(integ_jscrash, recover_ephemeral_inactive)
{
    srv_env_t e;
    env_setup(&e, NULL, false);
    nd_integ_server_t *srv = env_start(&e, false);
    nd_integ_conn_t *c = conn(srv);
    stream_s(c, 3);
    /* A named ephemeral (no durable_name) that goes away after 1.5 s without activity. */
    create(c, "S", "EPH",
           "{\"name\":\"EPH\",\"ack_policy\":\"explicit\",\"inactive_threshold\":1500000000}");
    fetch(c, "S", "EPH", "_p", "{\"batch\":2}");
    char *a1 = DELIVERY(c, "_p", 1, 1, "m1");
    char *a2 = DELIVERY(c, "_p", 2, 1, "m2");
    ACK(c, a1, "+ACK");
    json_t *before = cinfo(c, "S", "EPH");
    cr_assert(before != NULL);
    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);

    srv = env_start(&e, false);
    c = conn(srv);
    int64_t t0 = mono_ms();
    json_t *after = cinfo(c, "S", "EPH");
    cr_assert(after != NULL, "the ephemeral was not recovered");
    same_info(before, after, "EPH");
    json_decref(after);
    /* Nothing touches it: gone after its threshold (counted from the restart at the latest). */
    bool gone = false;
    while (!gone && mono_ms() - t0 < 6000) {
        sleep_ms(100);
        json_t *j = cinfo(c, "S", "EPH");
        gone = j == NULL;
        json_decref(j);
    }
    cr_assert(gone, "the recovered ephemeral was still there 6 s after the restart");
    cr_assert(files_ending(e.store, "/EPH.json") == 0 && files_ending(e.store, "/EPH.cs") == 0,
              "files of the removed ephemeral are left in the store");
    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);

    /* And it stays gone. */
    srv = env_start(&e, false);
    c = conn(srv);
    cr_assert_null(cinfo(c, "S", "EPH"), "the removed ephemeral came back");
    free(a1), free(a2);
    json_decref(before);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &e.conf);
}

/* Deleted, then the server is stopped cleanly (kill false) or SIGKILLed right after the delete's
 * answer (kill true); after the restart the consumer is not there, nor its files, and a new one
 * of the same name starts fresh. */
static void
deleted_case(bool kill)
{
    srv_env_t e;
    env_setup(&e, kill ? "sync_interval: always" : NULL, false);
    nd_integ_server_t *srv = env_start(&e, false);
    nd_integ_conn_t *c = conn(srv);
    stream_s(c, 4);
    create(c, "S", "X", "{\"durable_name\":\"X\",\"ack_policy\":\"explicit\"}");
    create(c, "S", "KEEP", "{\"durable_name\":\"KEEP\",\"ack_policy\":\"explicit\"}");
    fetch(c, "S", "X", "_p", "{\"batch\":2}");
    char *a1 = DELIVERY(c, "_p", 1, 1, "m1");
    char *a2 = DELIVERY(c, "_p", 2, 1, "m2");
    ACK(c, a1, "+ACK");
    cr_assert(files_ending(e.store, "/X.json") == 1, "no config file for X");
    json_t *j = api_ok(c, "$JS.API.CONSUMER.DELETE.S.X", "");
    cr_assert(json_is_true(jget(j, "success")));
    json_decref(j);
    nd_integ_conn_close(c);
    if (kill)
        nd_integ_server_kill(srv);
    else
        nd_integ_server_stop(srv);

    srv = env_start(&e, false);
    c = conn(srv);
    cr_assert_null(cinfo(c, "S", "X"), "the deleted consumer came back");
    j = api_ok(c, "$JS.API.CONSUMER.NAMES.S", "");
    char *d = json_dumps(j, JSON_COMPACT);
    cr_assert(json_array_size(jget(j, "consumers")) == 1 &&
                  strcmp(json_string_value(json_array_get(jget(j, "consumers"), 0)), "KEEP") == 0,
              "names: %s", d);
    free(d);
    json_decref(j);
    cr_assert(files_ending(e.store, "/X.json") == 0 && files_ending(e.store, "/X.cs") == 0,
              "files of the deleted consumer are left in the store");
    json_t *k = cinfo(c, "S", "KEEP");
    cr_assert(k != NULL, "the other consumer is gone");
    json_decref(k);
    /* A new X starts fresh. */
    create(c, "S", "X", "{\"durable_name\":\"X\",\"ack_policy\":\"explicit\"}");
    CSTATE(c, "S", "X", 0, 0, 0, 0, 4, 0, 0);
    fetch(c, "S", "X", "_p", "{\"batch\":1}");
    char *b1 = DELIVERY(c, "_p", 1, 1, "m1");
    free(a1), free(a2), free(b1);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &e.conf);
}

Test(integ_jscrash, deleted_stays_deleted_clean_stop)
{
    deleted_case(false);
}

Test(integ_jscrash, deleted_stays_deleted_sigkill)
{
    deleted_case(true);
}

/* ---- purge, delete and expiry -------------------------------------------------------------------
 */

/* A no_wait pull of up to n: returns the deliveries' stream sequences (with count dc in *dcs)
 * until the 404 or 408 status that ends it; acks nothing. */
static int
pull_all(nd_integ_conn_t *c, const char *s, const char *d, int n, long long *seqs, long long *dcs)
{
    char body[64];
    snprintf(body, sizeof body, "{\"batch\":%d,\"no_wait\":true}", n);
    fetch(c, s, d, "_p", body);
    int got = 0;
    for (;;) {
        js_msg_t m = js_read_msg(c);
        if (m.hdr != NULL) {
            cr_assert(strncmp(m.hdr, "NATS/1.0 404", 12) == 0 ||
                          strncmp(m.hdr, "NATS/1.0 408", 12) == 0,
                      "status %s", nd_integ_escape(m.hdr, m.hdr_len, 100));
            js_msg_free(&m);
            return got;
        }
        ackinfo_t a;
        cr_assert(parse_ack(m.reply, &a), "%s", m.line);
        cr_assert(got < n);
        seqs[got] = a.sseq;
        dcs[got++] = a.dc;
        js_msg_free(&m);
        if (got == n)
            return got;
    }
}

static char *
ack_subject(long long dc, long long sseq, long long dseq)
{
    char *r = NULL;
    cr_assert(asprintf(&r, "$JS.ACK.S.D.%lld.%lld.%lld.1.0", dc, sseq, dseq) > 0);
    return r;
}

Test(integ_jscrash, removed_by_delete_and_purge)
{
    srv_env_t e;
    env_setup(&e, NULL, false);
    nd_integ_server_t *srv = env_start(&e, false);
    nd_integ_conn_t *c = conn(srv);
    stream_s(c, 10);
    create(c, "S", "D",
           "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\",\"ack_wait\":1000000000}");
    fetch(c, "S", "D", "_p", "{\"batch\":6}");
    char *a[7];
    for (int i = 1; i <= 6; i++)
        a[i] = DELIVERY(c, "_p", i, 1, NULL);
    ACK(c, a[1], "+ACK");
    CSTATE(c, "S", "D", 6, 6, 1, 1, 4, 5, 0);

    /* Deleting a pending message: out of ack pending; the floor stays (2 is still pending). */
    API_OK(c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":3}");
    CSTATE(c, "S", "D", 6, 6, 1, 1, 4, 4, 0);
    /* Deleting the oldest pending one moves the floor past both. */
    API_OK(c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":2}");
    CSTATE(c, "S", "D", 6, 6, 3, 3, 4, 3, 0);
    /* Deleting one not yet delivered: one less pending. */
    API_OK(c, "$JS.API.STREAM.MSG.DELETE.S", "{\"seq\":8}");
    CSTATE(c, "S", "D", 6, 6, 3, 3, 3, 3, 0);

    /* After ack_wait: 4, 5, 6 are redelivered, 2 and 3 are not; then 7, 9, 10. */
    sleep_ms(1300);
    long long seqs[16], dcs[16];
    int n = pull_all(c, "S", "D", 16, seqs, dcs);
    char got[256] = "";
    for (int i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %lld/%lld", seqs[i], dcs[i]);
    cr_assert(n == 6 && seqs[0] == 4 && dcs[0] == 2 && seqs[1] == 5 && dcs[1] == 2 &&
                  seqs[2] == 6 && dcs[2] == 2 && seqs[3] == 7 && dcs[3] == 1 && seqs[4] == 9 &&
                  dcs[4] == 1 && seqs[5] == 10 && dcs[5] == 1,
              "deliveries (seq/count):%s, expected 4/2 5/2 6/2 7/1 9/1 10/1", got);
    /* Consumer sequences: 4 -> 7, 5 -> 8, 6 -> 9, 7 -> 10, 9 -> 11, 10 -> 12. */
    CSTATE(c, "S", "D", 12, 10, 3, 3, 0, 6, 3);

    /* A purge up to 6 (exclusive) takes 4 and 5: the floor moves to 6's predecessor. */
    API_OK(c, "$JS.API.STREAM.PURGE.S", "{\"seq\":6}");
    CSTATE(c, "S", "D", 12, 10, 8, 5, 0, 4, 1);
    /* Acking 6 and 7 moves it to before 9 (8 is deleted). */
    char *a6 = ack_subject(2, 6, 9), *a7 = ack_subject(1, 7, 10);
    ACK(c, a6, "+ACK");
    ACK(c, a7, "+ACK");
    CSTATE(c, "S", "D", 12, 10, 10, 8, 0, 2, 0);

    /* Three more, not fetched, then a full purge: nothing pending or unacknowledged is left. */
    pub(c, "s.11", "m11", "S", 11);
    pub(c, "s.12", "m12", "S", 12);
    pub(c, "s.13", "m13", "S", 13);
    CSTATE(c, "S", "D", 12, 10, 10, 8, 3, 2, 0);
    API_OK(c, "$JS.API.STREAM.PURGE.S", "");
    CSTATE(c, "S", "D", -1, -1, -1, -1, 0, 0, 0);
    json_t *j = cinfo(c, "S", "D");
    long long afs = jint(j, "ack_floor.stream_seq"), dss = jint(j, "delivered.stream_seq");
    char *d = json_dumps(j, JSON_COMPACT);
    /* Nothing is pending: the consumer seq floor is the last delivery (12). The stream seq
     * floor must be at least the last delivered one, and nothing at or below the purge's end
     * (13) needs an ack any more: nats-server's consumer purge sets it to 13.
     * KNOWN BUG: natsd leaves it at the last delivery (10), and a restart recomputes it (13). */
    cr_assert(afs >= 10 && dss >= 10 && jint(j, "ack_floor.consumer_seq") == 12, "%s", d);
    KNOWN_BUG(afs == 13,
              "after a full purge up to 13, ack_floor.stream_seq is %lld, expected 13: %s", afs, d);
    free(d);
    json_decref(j);
    /* Nothing purged comes back after ack_wait; the next message is the next one published. */
    sleep_ms(1300);
    n = pull_all(c, "S", "D", 16, seqs, dcs);
    cr_assert(n == 0, "%d deliveries after the purge, the first %lld", n, n ? seqs[0] : 0);
    pub(c, "s.14", "m14", "S", 14);
    n = pull_all(c, "S", "D", 16, seqs, dcs);
    cr_assert(n == 1 && seqs[0] == 14 && dcs[0] == 1, "%d deliveries, the first %lld", n,
              n ? seqs[0] : 0);
    CSTATE(c, "S", "D", 13, 14, 12, -1, 0, 1, 0);
    j = cinfo(c, "S", "D");
    KNOWN_BUG(jint(j, "ack_floor.stream_seq") == 13,
              "14 pending after the purge: ack_floor.stream_seq is %lld, expected 13",
              jint(j, "ack_floor.stream_seq"));
    json_decref(j);

    /* The corrected state is what a restart recovers. */
    json_t *before = cinfo(c, "S", "D");
    nd_integ_conn_close(c);
    nd_integ_server_stop(srv);
    srv = env_start(&e, false);
    c = conn(srv);
    json_t *after = cinfo(c, "S", "D");
    cr_assert(after != NULL);
    same_info_known(before, after, "D after the removals", K_ACK_FLOOR_SSEQ);
    json_decref(before), json_decref(after);
    for (int i = 1; i <= 6; i++)
        free(a[i]);
    free(a6), free(a7);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &e.conf);
}

Test(integ_jscrash, removed_by_max_age)
{
    srv_env_t e;
    env_setup(&e, NULL, false);
    nd_integ_server_t *srv = env_start(&e, false);
    nd_integ_conn_t *c = conn(srv);
    API_OK(c, "$JS.API.STREAM.CREATE.S",
           "{\"name\":\"S\",\"subjects\":[\"s.>\"],\"max_age\":1000000000}");
    for (int i = 1; i <= 5; i++) {
        char subj[16], body[16];
        snprintf(subj, sizeof subj, "s.%d", i);
        snprintf(body, sizeof body, "m%d", i);
        pub(c, subj, body, "S", i);
    }
    create(c, "S", "D",
           "{\"durable_name\":\"D\",\"ack_policy\":\"explicit\",\"ack_wait\":800000000}");
    fetch(c, "S", "D", "_p", "{\"batch\":3}");
    char *a1 = DELIVERY(c, "_p", 1, 1, "m1");
    char *a2 = DELIVERY(c, "_p", 2, 1, "m2");
    char *a3 = DELIVERY(c, "_p", 3, 1, "m3");
    ACK(c, a1, "+ACK");
    CSTATE(c, "S", "D", 3, 3, 1, 1, 2, 2, 0);

    /* Everything expires (and 2 and 3 were due for redelivery meanwhile: they must not come). */
    int64_t t0 = mono_ms();
    while (stream_int(c, "S", "state.messages") != 0) {
        cr_assert(mono_ms() - t0 < 5000, "the messages did not expire");
        sleep_ms(50);
    }
    CSTATE(c, "S", "D", 3, 3, 3, 3, 0, 0, 0);
    long long seqs[8], dcs[8];
    int n = pull_all(c, "S", "D", 8, seqs, dcs);
    cr_assert(n == 0, "%d deliveries after expiry, the first %lld (count %lld)", n, n ? seqs[0] : 0,
              n ? dcs[0] : 0);
    sleep_ms(1000);
    n = pull_all(c, "S", "D", 8, seqs, dcs);
    cr_assert(n == 0, "%d deliveries after expiry, the first %lld (count %lld)", n, n ? seqs[0] : 0,
              n ? dcs[0] : 0);
    /* A new message is the next delivery. */
    pub(c, "s.6", "m6", "S", 6);
    fetch(c, "S", "D", "_p", "{\"batch\":1}");
    char *a6 = DELIVERY(c, "_p", 6, 1, "m6");
    free(a1), free(a2), free(a3), free(a6);
    nd_integ_conn_close(c);
    nd_integ_conf_stop(srv, &e.conf);
}
