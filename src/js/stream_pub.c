/* The publish path into a stream (nats-server's processJetStreamMsg, 2.11): the checks in
 * nats-server's order, the store, deduplication by Nats-Msg-Id, rollups, republish, and the
 * acknowledgement, queued until the turn ends (stream.c: group commit).
 *
 * Deduplication: every Nats-Msg-Id stored within duplicate_window, in a FIFO by time (the
 * window is the same for all, so the oldest is always first) and a ck_hs set by id for the
 * lookups. The stream's timer drops expired ids. After a restart the ids of the messages still
 * inside the window are read back from the store (js_stream_dedup_rebuild).
 */
#include <ck_hs.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "js/jsxform.h"
#include "util/natshdr.h"
#include "js/store/store_ttl.h"
#include "util/log.h"
#include "util/timefmt.h"

/* ---- deduplication ---- */

static unsigned long
hs_hash(const void *obj, unsigned long seed)
{
    const js_dedup_t *d = obj;
    unsigned long h = seed ^ 1469598103934665603UL;
    for (const unsigned char *p = (const unsigned char *)d->id; *p != '\0'; p++)
        h = (h ^ *p) * 1099511628211UL;
    return h;
}

static bool
hs_cmp(const void *a, const void *b)
{
    return strcmp(((const js_dedup_t *)a)->id, ((const js_dedup_t *)b)->id) == 0;
}

static ck_hs_t *
dd_set(nd_stream_t *st)
{
    if (st->dd_index == NULL) {
        ck_hs_t *hs = nd_xmalloc(sizeof *hs);
        if (!ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, hs_hash, hs_cmp, &nd_ck_malloc, 64,
                        0x9e3779b9))
            nd_fatal("js: cannot allocate the dedup index");
        st->dd_index = hs;
    }
    return st->dd_index;
}

static js_dedup_t *
dd_find(nd_stream_t *st, const char *id, size_t len)
{
    if (st->dd_index == NULL || st->dd_len == 0)
        return NULL;
    char buf[256];
    char *k = len < sizeof buf ? buf : nd_xmalloc(len + 1);
    memcpy(k, id, len);
    k[len] = '\0';
    js_dedup_t key = {.id = k};
    ck_hs_t *hs = st->dd_index;
    js_dedup_t *d = ck_hs_get(hs, CK_HS_HASH(hs, hs_hash, &key), &key);
    if (k != buf)
        nd_free(k);
    return d;
}

/* The ring holds pointers to entries allocated with their id. */
static void
dd_add(nd_stream_t *st, const char *id, size_t len, uint64_t seq, int64_t ts)
{
    if (st->cfg.duplicate_window_ns <= 0)
        return;
    js_dedup_t *d = nd_xmalloc(sizeof *d + len + 1);
    d->id = (char *)(d + 1);
    memcpy(d->id, id, len);
    d->id[len] = '\0';
    d->seq = seq;
    d->ts = ts;
    ck_hs_t *hs = dd_set(st);
    unsigned long h = CK_HS_HASH(hs, hs_hash, d);
    js_dedup_t *old = NULL;
    if (ck_hs_get(hs, h, d) != NULL) {
        /* the same id again (a rebuild): keep the first */
        nd_free(d);
        return;
    }
    (void)old;
    ck_hs_put(hs, h, d);
    js_dedup_t **ring = (js_dedup_t **)st->dd;
    if (st->dd_len == st->dd_cap) {
        size_t nc = st->dd_cap ? st->dd_cap * 2 : 64;
        js_dedup_t **n = nd_xmalloc(nc * sizeof(*n));
        for (size_t i = 0; i < st->dd_len; i++)
            n[i] = ring[(st->dd_head + i) % st->dd_cap];
        nd_free(ring);
        ring = n;
        st->dd = (js_dedup_t *)n;
        st->dd_cap = nc;
        st->dd_head = 0;
    }
    ring[(st->dd_head + st->dd_len) % st->dd_cap] = d;
    st->dd_len++;
}

int64_t
js_stream_dedup_expire(nd_stream_t *st, int64_t now)
{
    js_dedup_t **ring = (js_dedup_t **)st->dd;
    int64_t win = st->cfg.duplicate_window_ns;
    while (st->dd_len > 0) {
        js_dedup_t *d = ring[st->dd_head];
        if (win > 0 && d->ts + win > now)
            return d->ts + win;
        ck_hs_t *hs = st->dd_index;
        ck_hs_remove(hs, CK_HS_HASH(hs, hs_hash, d), d);
        nd_free(d);
        st->dd_head = (st->dd_head + 1) % st->dd_cap;
        st->dd_len--;
    }
    return 0;
}

void
js_stream_dedup_free(nd_stream_t *st)
{
    js_dedup_t **ring = (js_dedup_t **)st->dd;
    for (size_t i = 0; i < st->dd_len; i++)
        nd_free(ring[(st->dd_head + i) % st->dd_cap]);
    nd_free(ring);
    st->dd = NULL;
    st->dd_len = st->dd_cap = st->dd_head = 0;
    if (st->dd_index != NULL) {
        ck_hs_destroy(st->dd_index);
        nd_free(st->dd_index);
        st->dd_index = NULL;
    }
}

void
js_stream_dedup_rebuild(nd_stream_t *st)
{
    if (st->cfg.duplicate_window_ns <= 0 || st->store == NULL)
        return;
    nd_store_state_t s;
    nd_store_state(st->store, &s);
    if (s.msgs == 0)
        return;
    int64_t since = js_now() - st->cfg.duplicate_window_ns;
    /* Walk back to the first message inside the window, then forward adding ids in order. */
    uint64_t start = s.last_seq + 1;
    nd_store_msg_t m = {0};
    for (uint64_t seq = s.last_seq; seq >= s.first_seq && seq > 0; seq--) {
        if (nd_store_load(st->store, seq, &m) != ND_OK)
            continue;
        if (m.ts < since)
            break;
        start = seq;
    }
    for (uint64_t seq = start; seq <= s.last_seq; seq++) {
        if (nd_store_load(st->store, seq, &m) != ND_OK)
            continue;
        size_t n;
        const char *id = nd_hdr_get(m.hdr, m.hdr_len, "Nats-Msg-Id", &n);
        if (id != NULL && n > 0) {
            dd_add(st, id, n, seq, m.ts);
            nd_free(st->last_msg_id);
            st->last_msg_id = nd_xstrndup(id, n);
        }
    }
    nd_store_msg_free(&m);
}

/* ---- acknowledgements ---- */

static void
queue_ack(nd_stream_t *st, const char *reply, size_t reply_len, char *body, bool ok)
{
    if (st->nacks == st->acks_cap) {
        st->acks_cap = st->acks_cap ? st->acks_cap * 2 : 64;
        st->acks = nd_xrealloc(st->acks, st->acks_cap * sizeof(*st->acks));
    }
    st->acks[st->nacks].reply = nd_xstrndup(reply, reply_len);
    st->acks[st->nacks].body = body;
    st->acks[st->nacks].ok = ok;
    st->nacks++;
}

static void
ack_seq(nd_stream_t *st, const nd_imsg_t *m, uint64_t seq, bool dup)
{
    if (m->reply_len == 0 || st->cfg.no_ack)
        return;
    char buf[600];
    snprintf(buf, sizeof buf, "%s%" PRIu64 "%s}", st->pub_ack, seq, dup ? ",\"duplicate\": true" : "");
    /* a duplicate's message was made durable by an earlier batch */
    queue_ack(st, m->reply, m->reply_len, nd_xstrdup(buf), !dup);
}

/* The error PubAck's bytes (malloc'd). */
static char *
error_body(nd_stream_t *st, const nd_jserr_t *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "error", nd_jserr_json(err));
    json_object_set_new(o, "stream", json_string(st->name));
    if (st->jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(st->jsa->js->domain));
    json_object_set_new(o, "seq", json_integer(0));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char *body = nd_xstrdup(text);
    free(text);
    return body;
}

static void
ack_error(nd_stream_t *st, const nd_imsg_t *m, const nd_jserr_t *err)
{
    if (m->reply_len == 0 || st->cfg.no_ack)
        return;
    queue_ack(st, m->reply, m->reply_len, error_body(st, err), false);
}

/* 10077 for a failed store call: the store's text, then for an I/O error the errno's in Go's
 * spelling (nats-server's text ends with it, e.g. "no space left on device"). */
static void
store_failed(nd_jserr_t *err, nd_err_t e, int eno)
{
    if (e != ND_ERR_STORE_IO || eno == 0) {
        nd_jserr_setf(err, ND_JSE_STREAM_STORE_FAILED_F, "%s", nd_strerror(e));
        return;
    }
    char t[128];
    snprintf(t, sizeof t, "%s", strerror(eno));
    t[0] = (char)tolower((unsigned char)t[0]);
    nd_jserr_setf(err, ND_JSE_STREAM_STORE_FAILED_F, "%s: %s", nd_strerror(e), t);
}

void
js_stream_acks_fail(nd_stream_t *st, int eno)
{
    nd_jserr_t err;
    store_failed(&err, ND_ERR_STORE_IO, eno);
    for (size_t i = 0; i < st->nacks; i++) {
        js_pending_ack_t *a = &st->acks[i];
        if (!a->ok)
            continue;
        nd_free(a->body);
        a->body = error_body(st, &err);
        a->ok = false;
    }
}

static void
ack_code(nd_stream_t *st, const nd_imsg_t *m, nd_jse_t e)
{
    nd_jserr_t err;
    nd_jserr_set(&err, e, NULL);
    ack_error(st, m, &err);
}

/* ---- the publish ---- */

static bool
parse_u64(const char *p, size_t n, uint64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *out = v;
    return true;
}

/* hdr with every Nats-TTL line dropped and "Nats-TTL: ttl" appended (nats-server's
 * removeHeaderIfPresent + genHeader). Returns: a malloc'd block, its length in *out_len. */
static char *
hdr_with_ttl(const char *hdr, size_t hl, int64_t ttl, size_t *out_len)
{
    char *out = nd_xmalloc(hl + 64);
    size_t o = 0;
    const char *p = hdr, *end = hdr + hl;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next = eol != NULL ? eol + 1 : end;
        bool blank = next - p <= 2 && (p[0] == '\r' || p[0] == '\n');
        if (!blank && !(next - p > 9 && memcmp(p, "Nats-TTL:", 9) == 0)) {
            memcpy(out + o, p, (size_t)(next - p));
            o += (size_t)(next - p);
        }
        p = next;
    }
    o += (size_t)sprintf(out + o, "Nats-TTL: %" PRId64 "\r\n\r\n", ttl);
    *out_len = o;
    return out;
}

static void
republish(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, uint64_t seq, int64_t ts,
          uint64_t last_subj_seq)
{
    const nd_stream_cfg_t *c = &st->cfg;
    if (c->republish_src == NULL || c->republish_dest == NULL)
        return;
    char dest[1024];
    if (!js_xform(&st->rp_xf, c->republish_src, c->republish_dest, m->subject, m->subject_len,
                  dest, sizeof dest))
        return;
    char t[48];
    nd_time_rfc3339(ts, t);
    size_t hl = m->hdr != NULL ? m->hdr_len : 0;
    char *hdr = nd_xmalloc(hl + m->subject_len + strlen(st->name) + 256);
    size_t off = 0;
    if (hl > 2) {
        memcpy(hdr, m->hdr, hl - 2); /* without the closing CRLF */
        off = hl - 2;
    } else {
        off = (size_t)sprintf(hdr, "NATS/1.0\r\n");
    }
    off += (size_t)sprintf(hdr + off,
                           "Nats-Stream: %s\r\nNats-Subject: %.*s\r\nNats-Sequence: %" PRIu64
                           "\r\nNats-Time-Stamp: %s\r\nNats-Last-Sequence: %" PRIu64 "\r\n",
                           st->name, (int)m->subject_len, m->subject, seq, t, last_subj_seq);
    if (c->republish_headers_only)
        off += (size_t)sprintf(hdr + off, "Nats-Msg-Size: %zu\r\n", m->data_len);
    off += (size_t)sprintf(hdr + off, "\r\n");
    nd_iclient_publish(ctx, st->ic, dest, NULL, hdr, off,
                       c->republish_headers_only ? "" : m->data,
                       c->republish_headers_only ? 0 : m->data_len);
    nd_free(hdr);
}

void
js_stream_publish(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    const nd_stream_cfg_t *c = &st->cfg;
    nd_store_t *store = st->store;
    nd_jserr_t err;
    const char *hdr = m->hdr;
    size_t hl = m->hdr != NULL ? m->hdr_len : 0;
    if (c->sealed) {
        ack_code(st, m, ND_JSE_STREAM_SEALED);
        return;
    }
    if (st->no_space) {
        /* Out of space: refused without touching the store until stream.c's probe sees room. */
        store_failed(&err, ND_ERR_STORE_IO, ENOSPC);
        ack_error(st, m, &err);
        return;
    }
    const char *subject = m->subject;
    size_t subject_len = m->subject_len;
    char xsubj[1024];
    if (c->xform_src != NULL &&
        js_xform(&st->xf, c->xform_src, c->xform_dest, m->subject, m->subject_len, xsubj,
                 sizeof xsubj)) {
        subject = xsubj;
        subject_len = strlen(xsubj);
    }
    const char *msg_id = NULL;
    size_t msg_id_len = 0;
    bool rollup_sub = false, rollup_all = false;
    int64_t ttl = 0;
    bool ttl_bad = false;
    if (hl > 0) {
        size_t n;
        const char *v = nd_hdr_get(hdr, hl, "Nats-Expected-Stream", &n);
        if (v != NULL && n > 0 && (n != strlen(st->name) || memcmp(v, st->name, n) != 0)) {
            ack_code(st, m, ND_JSE_STREAM_NOT_MATCH);
            return;
        }
        v = nd_hdr_get(hdr, hl, "Nats-TTL", &n);
        if (v != NULL) {
            ttl_bad = !nd_store_parse_ttl(v, n, &ttl);
            if (!ttl_bad && ttl != 0 && !c->allow_msg_ttl) {
                ack_code(st, m, ND_JSE_MESSAGE_TTL_DISABLED);
                return;
            }
        }
        msg_id = nd_hdr_get(hdr, hl, "Nats-Msg-Id", &msg_id_len);
        if (msg_id != NULL && msg_id_len > 0) {
            js_dedup_t *d = dd_find(st, msg_id, msg_id_len);
            if (d != NULL) {
                ack_seq(st, m, d->seq, true);
                return;
            }
        } else {
            msg_id = NULL;
        }
        uint64_t want;
        v = nd_hdr_get(hdr, hl, "Nats-Expected-Last-Subject-Sequence", &n);
        if (v != NULL) {
            if (!parse_u64(v, n, &want))
                want = UINT64_MAX; /* nats-server: unparsable is -1, which nothing matches */
            size_t sl;
            const char *ss = nd_hdr_get(hdr, hl, "Nats-Expected-Last-Subject-Sequence-Subject", &sl);
            char sbuf[1024];
            const char *chk = subject;
            size_t chk_len = subject_len;
            if (ss != NULL && sl > 0 && sl < sizeof sbuf) {
                memcpy(sbuf, ss, sl);
                sbuf[sl] = '\0';
                chk = sbuf;
                chk_len = sl;
            }
            nd_store_msg_t lm = {0};
            uint64_t fseq = 0;
            if (store->ops->load_last(store, chk, chk_len, &lm) == ND_OK)
                fseq = lm.seq;
            nd_store_msg_free(&lm);
            if (fseq != want) {
                char b[32];
                snprintf(b, sizeof b, "%" PRIu64, fseq);
                nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", b, NULL);
                ack_error(st, m, &err);
                return;
            }
        }
        v = nd_hdr_get(hdr, hl, "Nats-Expected-Last-Sequence", &n);
        if (v != NULL) {
            nd_store_state_t s;
            nd_store_state(store, &s);
            if (!parse_u64(v, n, &want) || want != s.last_seq) {
                char b[32];
                snprintf(b, sizeof b, "%" PRIu64, s.last_seq);
                nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_SEQUENCE_F, "seq", b, NULL);
                ack_error(st, m, &err);
                return;
            }
        }
        v = nd_hdr_get(hdr, hl, "Nats-Expected-Last-Msg-Id", &n);
        if (v != NULL && n > 0) {
            const char *last = st->last_msg_id != NULL ? st->last_msg_id : "";
            if (strlen(last) != n || memcmp(last, v, n) != 0) {
                nd_jserr_set(&err, ND_JSE_STREAM_WRONG_LAST_MSG_ID_F, "id", last, NULL);
                ack_error(st, m, &err);
                return;
            }
        }
        v = nd_hdr_get(hdr, hl, "Nats-Rollup", &n);
        if (v != NULL && n > 0) {
            if (!c->allow_rollup || c->deny_purge) {
                nd_jserr_setf(&err, ND_JSE_STREAM_ROLLUP_FAILED_F, "rollup not permitted");
                ack_error(st, m, &err);
                return;
            }
            if (n == 3 && memcmp(v, "sub", 3) == 0) {
                rollup_sub = true;
            } else if (n == 3 && memcmp(v, "all", 3) == 0) {
                rollup_all = true;
            } else {
                nd_jserr_setf(&err, ND_JSE_STREAM_ROLLUP_FAILED_F, "rollup value invalid: \"%.*s\"",
                              (int)n, v);
                ack_error(st, m, &err);
                return;
            }
        }
    }
    if (c->max_msg_size >= 0 && hl + m->data_len > (size_t)c->max_msg_size) {
        ack_code(st, m, ND_JSE_STREAM_MESSAGE_EXCEEDS_MAXIMUM);
        return;
    }
    if (hl > 65535) {
        ack_code(st, m, ND_JSE_STREAM_HEADER_EXCEEDS_MAXIMUM);
        return;
    }
    nd_jse_t over = js_limits_server_exceeded(st);
    if (over != ND_JSE_NONE) {
        ack_code(st, m, over);
        return;
    }
    if (c->retention == ND_RETENTION_INTEREST && !js_consumers_interested(st, subject, subject_len)) {
        /* No consumer's filters match: nobody is interested, so the message is not kept and
         * its sequence is skipped, as nats-server does. */
        uint64_t seq;
        if (store->ops->skip(store, &seq) == ND_OK) {
            st->dirty = true;
            if (msg_id != NULL)
                dd_add(st, msg_id, msg_id_len, seq, js_now());
            ack_seq(st, m, seq, false);
        }
        return;
    }
    over = js_limits_account_exceeded(st, nd_store_msg_size(subject_len, hl, m->data_len));
    if (over != ND_JSE_NONE) {
        ack_code(st, m, over);
        return;
    }
    if (ttl_bad) {
        ack_code(st, m, ND_JSE_MESSAGE_TTL_INVALID);
        return;
    }
    uint64_t last_subj_seq = 0;
    if (c->republish_src != NULL) {
        nd_store_msg_t lm = {0};
        if (store->ops->load_last(store, subject, subject_len, &lm) == ND_OK)
            last_subj_seq = lm.seq;
        nd_store_msg_free(&lm);
    }
    /* With delete markers, a TTL below the markers' is raised to it (and the header with it),
     * as nats-server does: a message must outlive a marker already on its subject, or its
     * expiry (not the subject's last then) and the marker's would leave no marker at all. With
     * one message per subject there is never an older marker. */
    char *thdr = NULL;
    if (ttl > 0 && c->subject_delete_marker_ttl_ns > 0 && c->max_msgs_per_subject != 1 &&
        ttl < c->subject_delete_marker_ttl_ns / 1000000000LL) {
        ttl = c->subject_delete_marker_ttl_ns / 1000000000LL;
        thdr = hdr_with_ttl(hdr, hl, ttl, &hl);
        hdr = thdr;
    }
    uint64_t seq;
    int64_t ts;
    nd_err_t e = nd_store_put_ttl(store, subject, subject_len, hdr, hl, m->data, m->data_len, ttl,
                                  &seq, &ts);
    nd_free(thdr);
    if (e != ND_OK) {
        int eno = e == ND_ERR_STORE_IO ? nd_store_io_errno(store) : 0;
        if (e == ND_ERR_STORE_IO) {
            nd_log_error("JetStream failed to store a msg on stream '%s > %s': %s: %s",
                         nd_acct_name(st->jsa->acct), st->name, nd_strerror(e), strerror(eno));
            st->write_errno = eno != 0 ? eno : EIO; /* the turn's end deals with it */
        }
        store_failed(&err, e, eno);
        ack_error(st, m, &err);
        return;
    }
    st->dirty = true; /* usage: synced at the turn's end; the limit checks add what is not */
    if (st->turn_first_seq == 0)
        st->turn_first_seq = seq;
    if (msg_id != NULL) {
        dd_add(st, msg_id, msg_id_len, seq, ts);
        nd_free(st->last_msg_id);
        st->last_msg_id = nd_xstrndup(msg_id, msg_id_len);
    } else if (st->last_msg_id != NULL) {
        nd_free(st->last_msg_id);
        st->last_msg_id = NULL;
    }
    if (rollup_sub || rollup_all) {
        uint64_t purged;
        const char *f = rollup_sub ? subject : NULL;
        if (store->ops->purge(store, f, rollup_sub ? subject_len : 0, 0, 1, &purged) != ND_OK)
            nd_log_warn("JetStream rollup on stream '%s' failed", st->name);
    }
    republish(ctx, st, m, seq, ts, last_subj_seq);
    ack_seq(st, m, seq, false);
}
