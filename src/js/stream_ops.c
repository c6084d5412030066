/* API requests a stream answers on its own turn: info, purge, message get and delete (forwarded
 * by the account's API service), and direct get (its own subscriptions, allow_direct).
 * Reference: nats-server server/jetstream_api.go (jsStreamInfoRequest, jsStreamPurgeRequest,
 * jsMsgGetRequest, jsMsgDeleteRequest) and stream.go (processDirectGetRequest,
 * getDirectRequest). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"
#include "js/js_int.h"
#include "js/jsxform.h"
#include "js/jsreq.h"
#include "util/base64.h"
#include "util/timefmt.h"

#define JS_SUBJECTS_LIMIT 100000




/* ---- info ---- */

typedef struct subj_collect {
    json_t *map;
    size_t total, offset, limit, skipped;
} subj_collect_t;

static bool
subj_cb(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *s)
{
    subj_collect_t *c = arg;
    c->total++;
    if (c->skipped < c->offset) {
        c->skipped++;
        return true;
    }
    if ((size_t)json_object_size(c->map) < c->limit) {
        char *k = nd_xstrndup(subj, len);
        json_object_set_new(c->map, k, json_integer((json_int_t)s->msgs));
        nd_free(k);
    }
    return true;
}

json_t *
js_state_json(const nd_store_state_t *s, json_t *subjects, json_t *deleted)
{
    json_t *state = json_object();
    json_object_set_new(state, "messages", json_integer((json_int_t)s->msgs));
    json_object_set_new(state, "bytes", json_integer((json_int_t)s->bytes));
    /* nats-server shows 0 for a stream that never held a message */
    uint64_t first = s->last_seq == 0 && s->msgs == 0 ? 0 : s->first_seq;
    json_object_set_new(state, "first_seq", json_integer((json_int_t)first));
    json_object_set_new(state, "first_ts", js_time(s->first_ts));
    json_object_set_new(state, "last_seq", json_integer((json_int_t)s->last_seq));
    json_object_set_new(state, "last_ts", js_time(s->last_ts));
    if (s->num_subjects > 0)
        json_object_set_new(state, "num_subjects", json_integer((json_int_t)s->num_subjects));
    if (subjects != NULL && json_object_size(subjects) > 0)
        json_object_set(state, "subjects", subjects);
    if (s->num_deleted > 0) {
        if (deleted != NULL)
            json_object_set(state, "deleted", deleted);
        json_object_set_new(state, "num_deleted", json_integer((json_int_t)s->num_deleted));
    }
    json_object_set_new(state, "consumer_count", json_integer((json_int_t)s->consumers));
    return state;
}

json_t *
js_stream_info(nd_stream_t *st, const js_info_opts_t *req, nd_jserr_t *err)
{
    (void)err;
    nd_store_state_t s;
    nd_store_state(st->store, &s);
    s.consumers = js_stream_nconsumers(st);
    const char *filter = req != NULL ? req->filter : NULL;
    bool details = req != NULL && req->deleted_details;
    int64_t offset = req != NULL && req->offset > 0 ? req->offset : 0;
    subj_collect_t sc = {.map = NULL, .offset = (size_t)offset, .limit = JS_SUBJECTS_LIMIT};
    if (filter != NULL && filter[0] != '\0' && s.msgs > 0) {
        sc.map = json_object();
        st->store->ops->subjects_state(st->store, filter, strlen(filter), subj_cb, &sc);
    }
    json_t *deleted = NULL;
    if (details && s.num_deleted > 0) {
        uint64_t *seqs = NULL;
        size_t n = 0;
        if (st->store->ops->deleted(st->store, &seqs, &n) == ND_OK) {
            deleted = json_array();
            for (size_t i = 0; i < n; i++)
                json_array_append_new(deleted, json_integer((json_int_t)seqs[i]));
        }
        free(seqs);
    }
    json_t *o = json_object();
    json_object_set_new(o, "config", json_deep_copy(st->cfg.json));
    json_object_set_new(o, "created", js_time(st->created_ns));
    json_object_set_new(o, "state", js_state_json(&s, sc.map, deleted));
    json_decref(deleted);
    if (st->jsa->js->domain[0] != '\0')
        json_object_set_new(o, "domain", json_string(st->jsa->js->domain));
    js_sources_info(st, o); /* "mirror" / "sources" (stream_source.c) */
    json_object_set_new(o, "ts", js_time(js_now()));
    if (sc.map != NULL) {
        /* the paging of the subject details, for the response's ApiPaged */
        json_object_set_new(o, "_total", json_integer((json_int_t)sc.total));
        json_decref(sc.map);
    }
    return o;
}

static void
info_request(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, bool create)
{
    static const js_rfield_t f[] = {
        {"deleted_details", JS_RT_BOOL}, {"subjects_filter", JS_RT_STR}, {"offset", JS_RT_INT}};
    const char *what = create ? "stream_create_response" : "stream_info_response";
    nd_jserr_t err;
    js_req_t q = {0};
    js_info_opts_t opts = {0};
    if (!create) {
        if (!js_req_decode(m->data, m->data_len, st->jsa->js->strict, "JSApiStreamInfoRequest",
                           f, 3, &q, &err)) {
            js_send_error(ctx, st->ic, m->reply, what, &err);
            return;
        }
        opts = (js_info_opts_t){
            .deleted_details = q.v[0].b, .filter = q.v[1].s, .offset = q.v[2].i};
    }
    json_t *info = js_stream_info(st, create ? NULL : &opts, &err);
    json_t *o = js_resp(what);
    if (!create) {
        json_t *total = json_object_get(info, "_total");
        json_object_set_new(o, "total", json_integer(total != NULL ? json_integer_value(total) : 0));
        json_object_set_new(o, "offset", json_integer(opts.offset));
        json_object_set_new(o, "limit", json_integer(total != NULL ? JS_SUBJECTS_LIMIT : 0));
    }
    json_object_del(info, "_total");
    json_object_update(o, info);
    json_decref(info);
    js_req_free(&q);
    if (create) /* nats-server 2.9+ says did_create for a repeated, identical create too */
        json_object_set_new(o, "did_create", json_true());
    js_send(ctx, st->ic, m->reply, o);
}

/* ---- purge ---- */

static void
purge_request(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    static const js_rfield_t f[] = {
        {"filter", JS_RT_STR}, {"seq", JS_RT_U64}, {"keep", JS_RT_U64}};
    const char *what = "stream_purge_response";
    nd_jserr_t err;
    js_req_t q;
    bool ok = js_req_decode(m->data, m->data_len, st->jsa->js->strict, "JSApiStreamPurgeRequest",
                            f, 3, &q, &err);
    const char *filter = ok && q.v[0].s != NULL && q.v[0].s[0] != '\0' ? q.v[0].s : NULL;
    uint64_t seq = ok ? q.v[1].u : 0, keep = ok ? q.v[2].u : 0;
    if (!ok) {
        /* err: 10025 */
    } else if (seq > 0 && keep > 0) {
        nd_jserr_set(&err, ND_JSE_BAD_REQUEST, NULL);
    } else if (st->cfg.sealed) {
        nd_jserr_set(&err, ND_JSE_STREAM_SEALED, NULL);
    } else if (st->cfg.deny_purge) {
        nd_jserr_setf(&err, ND_JSE_STREAM_PURGE_FAILED_F, "stream purge not permitted");
    } else {
        err.e = ND_JSE_NONE;
    }
    if (err.e != ND_JSE_NONE) {
        if (ok)
            js_req_free(&q);
        json_t *o = js_resp(what);
        js_resp_error(o, &err);
        json_object_set_new(o, "purged", json_integer(0));
        js_send(ctx, st->ic, m->reply, o);
        return;
    }
    uint64_t purged = 0;
    nd_err_t e = st->store->ops->purge(st->store, filter, filter != NULL ? strlen(filter) : 0, seq,
                                       keep, &purged);
    js_req_free(&q);
    st->dirty = true;
    st->turn_removed = true;
    st->turn_purged = true;
    json_t *o = js_resp(what);
    if (e != ND_OK) {
        nd_jserr_setf(&err, ND_JSE_STREAM_GENERAL_ERROR_F, "%s", nd_strerror(e));
        js_resp_error(o, &err);
    } else {
        json_object_set_new(o, "success", json_true());
    }
    json_object_set_new(o, "purged", json_integer((json_int_t)purged));
    js_send(ctx, st->ic, m->reply, o);
}

/* ---- message get and delete ---- */

static json_t *
b64(const void *p, size_t n)
{
    char *buf = nd_xmalloc(nd_b64_encoded_len(ND_B64_STD, n) + 1);
    size_t k = nd_b64_encode(ND_B64_STD, p, n, buf);
    buf[k] = '\0';
    json_t *s = json_string(buf);
    nd_free(buf);
    return s;
}

/* JSApiMsgGetRequest: message get and direct get. */
enum { MG_SEQ, MG_LAST, MG_NEXT, MG_BATCH, MG_MAX_BYTES, MG_START, MG_MULTI, MG_UPTO_SEQ, MG_UPTO_TIME };
static const js_rfield_t msg_get_f[] = {
    [MG_SEQ] = {"seq", JS_RT_U64},          [MG_LAST] = {"last_by_subj", JS_RT_STR},
    [MG_NEXT] = {"next_by_subj", JS_RT_STR}, [MG_BATCH] = {"batch", JS_RT_INT},
    [MG_MAX_BYTES] = {"max_bytes", JS_RT_INT}, [MG_START] = {"start_time", JS_RT_TIME},
    [MG_MULTI] = {"multi_last", JS_RT_STRS}, [MG_UPTO_SEQ] = {"up_to_seq", JS_RT_U64},
    [MG_UPTO_TIME] = {"up_to_time", JS_RT_TIME},
};

/* Decodes the body of a request that needs one. Returns: false after answering 10003 (empty,
 * "{}" included, as nats-server's isEmptyRequest) or 10025 (not that JSON). */
static bool
required_req(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m, const char *what,
             const char *goname, const js_rfield_t *f, size_t n, js_req_t *q)
{
    nd_jserr_t err;
    if (js_req_empty(m->data, m->data_len))
        nd_jserr_set(&err, ND_JSE_BAD_REQUEST, NULL);
    else if (js_req_decode(m->data, m->data_len, st->jsa->js->strict, goname, f, n, q, &err))
        return true;
    js_send_error(ctx, st->ic, m->reply, what, &err);
    return false;
}

/* A non-empty string field, else NULL. */
static const char *
nonempty(const js_rval_t *v)
{
    return v->s != NULL && v->s[0] != '\0' ? v->s : NULL;
}

static void
msg_get_request(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    const char *what = "stream_msg_get_response";
    nd_jserr_t err;
    js_req_t q;
    if (!required_req(ctx, st, m, what, "JSApiMsgGetRequest", msg_get_f, 9, &q))
        return;
    uint64_t seq = q.v[MG_SEQ].u;
    const char *last = nonempty(&q.v[MG_LAST]), *next = nonempty(&q.v[MG_NEXT]);
    const char *stime = q.v[MG_START].s;
    int64_t t = 0;
    bool bad_time = stime != NULL && nd_time_parse_rfc3339(stime, &t) != 0;
    if (bad_time) {
        js_req_free(&q);
        nd_jserr_setf(&err, ND_JSE_INVALID_JSON, "parsing time \"%s\" as RFC 3339: invalid", stime);
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    bool bad = q.v[MG_BATCH].i > 0 || q.v[MG_MAX_BYTES].i > 0 ||
               (seq > 0 && last != NULL) ||
               (seq == 0 && last == NULL && next == NULL && stime == NULL) ||
               (seq > 0 && stime != NULL) || (stime != NULL && last != NULL) ||
               (last != NULL && next != NULL);
    if (bad) {
        js_req_free(&q);
        nd_jserr_set(&err, ND_JSE_BAD_REQUEST, NULL);
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    if (stime != NULL)
        seq = js_seq_from_time(st->store, t);
    nd_store_msg_t sm = {0};
    nd_err_t e;
    if (next != NULL)
        e = st->store->ops->load_next(st->store, next, strlen(next), seq, &sm);
    else if (seq > 0)
        e = nd_store_load(st->store, seq, &sm);
    else
        e = st->store->ops->load_last(st->store, last, strlen(last), &sm);
    js_req_free(&q);
    json_t *o = js_resp(what);
    if (e != ND_OK) {
        nd_jserr_set(&err, ND_JSE_NO_MESSAGE_FOUND, NULL);
        js_resp_error(o, &err);
    } else {
        json_t *msg = json_object();
        json_object_set_new(msg, "subject", json_stringn(sm.subj, sm.subj_len));
        json_object_set_new(msg, "seq", json_integer((json_int_t)sm.seq));
        if (sm.hdr_len > 0)
            json_object_set_new(msg, "hdrs", b64(sm.hdr, sm.hdr_len));
        if (sm.data_len > 0)
            json_object_set_new(msg, "data", b64(sm.data, sm.data_len));
        json_object_set_new(msg, "time", js_time(sm.ts));
        json_object_set_new(o, "message", msg);
    }
    nd_store_msg_free(&sm);
    js_send(ctx, st->ic, m->reply, o);
}

static void
msg_delete_request(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    static const js_rfield_t f[] = {{"seq", JS_RT_U64}, {"no_erase", JS_RT_BOOL}};
    const char *what = "stream_msg_delete_response";
    nd_jserr_t err;
    js_req_t q;
    if (!required_req(ctx, st, m, what, "JSApiMsgDeleteRequest", f, 2, &q))
        return;
    uint64_t seq = q.v[0].u;
    bool no_erase = q.v[1].b;
    js_req_free(&q);
    if (st->cfg.sealed) {
        nd_jserr_set(&err, ND_JSE_STREAM_SEALED, NULL);
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    if (st->cfg.deny_delete) {
        nd_jserr_setf(&err, ND_JSE_STREAM_MSG_DELETE_FAILED_F, "message delete not permitted");
        js_send_error(ctx, st->ic, m->reply, what, &err);
        return;
    }
    nd_store_state_t ss;
    nd_store_state(st->store, &ss);
    nd_err_t e = st->store->ops->remove(st->store, seq, !no_erase);
    st->dirty = true;
    st->turn_removed = true;
    json_t *o = js_resp(what);
    if (e != ND_OK && (seq > ss.last_seq || seq < ss.first_seq)) {
        /* nats-server's store errors: past the end is EOF, before the start not found */
        nd_jserr_setf(&err, ND_JSE_STREAM_MSG_DELETE_FAILED_F, "%s",
                      seq > ss.last_seq ? "stream store EOF" : "no message found");
        js_resp_error(o, &err);
    } else if (e == ND_ERR_STORE_NOT_FOUND) {
        char b[32];
        snprintf(b, sizeof b, "%" PRIu64, seq);
        nd_jserr_set(&err, ND_JSE_SEQUENCE_NOT_FOUND_F, "seq", b, NULL);
        js_resp_error(o, &err);
    } else if (e != ND_OK) {
        nd_jserr_setf(&err, ND_JSE_STREAM_MSG_DELETE_FAILED_F, "%s", nd_strerror(e));
        js_resp_error(o, &err);
    } else {
        json_object_set_new(o, "success", json_true());
    }
    js_send(ctx, st->ic, m->reply, o);
}

void
js_stream_api(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    switch (m->tag) {
    case JS_OP_INFO:
        info_request(ctx, st, m, false);
        break;
    case JS_OP_CREATE_INFO:
        info_request(ctx, st, m, true);
        break;
    case JS_OP_PURGE:
        purge_request(ctx, st, m);
        break;
    case JS_OP_MSG_GET:
        msg_get_request(ctx, st, m);
        break;
    case JS_OP_MSG_DELETE:
        msg_delete_request(ctx, st, m);
        break;
    case JS_OP_SNAPSHOT:
        js_stream_snapshot(ctx, st, m);
        break;
    default:
        break;
    }
}

/* ---- direct get ---- */

static void
status(nd_ctx_t *ctx, nd_stream_t *st, const char *reply, const char *line)
{
    nd_iclient_publish(ctx, st->ic, reply, NULL, line, strlen(line), "", 0);
}

/* Sends one stored message with the direct-get headers (batch: with pending and last). */
static size_t
send_direct(nd_ctx_t *ctx, nd_stream_t *st, const char *reply, const nd_store_msg_t *sm,
            bool batch, uint64_t np, uint64_t lseq)
{
    char t[48];
    nd_time_rfc3339(sm->ts, t);
    size_t cap = sm->hdr_len + sm->subj_len + strlen(st->name) + 256;
    char *h = nd_xmalloc(cap);
    size_t off;
    if (sm->hdr_len > 2) {
        memcpy(h, sm->hdr, sm->hdr_len - 2);
        off = sm->hdr_len - 2;
    } else {
        off = (size_t)snprintf(h, cap, "NATS/1.0\r\n");
    }
    off += (size_t)snprintf(h + off, cap - off,
                            "Nats-Stream: %s\r\nNats-Subject: %.*s\r\nNats-Sequence: %" PRIu64
                            "\r\nNats-Time-Stamp: %s\r\n",
                            st->name, (int)sm->subj_len, sm->subj, sm->seq, t);
    if (batch)
        off += (size_t)snprintf(h + off, cap - off,
                                "Nats-Num-Pending: %" PRIu64 "\r\nNats-Last-Sequence: %" PRIu64 "\r\n",
                                np, lseq);
    off += (size_t)snprintf(h + off, cap - off, "\r\n");
    nd_iclient_publish(ctx, st->ic, reply, NULL, h, off, (const char *)sm->data, sm->data_len);
    nd_free(h);
    return sm->subj_len + sm->hdr_len + sm->data_len;
}

/* The first sequence stored at or after wall time t (nats-server's GetSeqFromTime): last + 1
 * when none. Timestamps only grow along the stream, so a binary search over sequences finds
 * it; deleted sequences are stepped over with load_next. */
uint64_t
js_seq_from_time(nd_store_t *store, int64_t t)
{
    nd_store_state_t ss;
    nd_store_state(store, &ss);
    if (ss.msgs == 0 || t <= ss.first_ts)
        return ss.msgs == 0 ? ss.last_seq + 1 : ss.first_seq;
    if (t > ss.last_ts)
        return ss.last_seq + 1;
    /* P(x): the first message stored at or after x has ts >= t; monotonic, P(last) holds.
     * The answer is that message for the smallest x where P holds. */
    uint64_t lo = ss.first_seq, hi = ss.last_seq;
    nd_store_msg_t sm = {0};
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (store->ops->load_next(store, ">", 1, mid, &sm) == ND_OK && sm.ts >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    uint64_t seq = store->ops->load_next(store, ">", 1, lo, &sm) == ND_OK ? sm.seq : ss.last_seq + 1;
    nd_store_msg_free(&sm);
    return seq;
}

/* multi_last: the last message of every subject matching the filters, at or below up_to. */
typedef struct multi_collect {
    nd_store_t *store;
    uint64_t from, up_to;
    uint64_t *seqs;
    size_t n, cap;
} multi_collect_t;

static bool
multi_cb(void *arg, const char *subj, size_t len, const nd_store_subj_state_t *ss)
{
    multi_collect_t *c = arg;
    uint64_t seq = 0;
    if (ss->last_seq <= c->up_to) {
        seq = ss->last_seq;
    } else {
        /* the subject's last message at or below up_to: walk its messages */
        nd_store_msg_t sm = {0};
        uint64_t at = ss->first_seq;
        while (at <= c->up_to &&
               c->store->ops->load_next(c->store, subj, len, at, &sm) == ND_OK &&
               sm.seq <= c->up_to) {
            seq = sm.seq;
            at = sm.seq + 1;
        }
        nd_store_msg_free(&sm);
    }
    if (seq == 0 || seq < c->from)
        return true;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->seqs = nd_xrealloc(c->seqs, c->cap * sizeof(*c->seqs));
    }
    c->seqs[c->n++] = seq;
    return true;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void
direct_multi(nd_ctx_t *ctx, nd_stream_t *st, const char *reply, const js_req_t *q, uint64_t from,
             uint64_t batch, uint64_t max_bytes)
{
    enum { MAX_RESULTS = 1024 };
    nd_store_t *store = st->store;
    nd_store_state_t ss;
    nd_store_state(store, &ss);
    uint64_t up_to = q->v[MG_UPTO_SEQ].u;
    const char *upt = q->v[MG_UPTO_TIME].s;
    if (upt != NULL) {
        int64_t t;
        if (nd_time_parse_rfc3339(upt, &t) != 0) {
            status(ctx, st, reply, "NATS/1.0 408 Bad Request\r\n\r\n");
            return;
        }
        uint64_t seq = js_seq_from_time(store, t);
        if (seq <= ss.first_seq) {
            status(ctx, st, reply, "NATS/1.0 404 No Results\r\n\r\n");
            return;
        }
        up_to = seq - 1;
    }
    if (up_to == 0)
        up_to = ss.last_seq;
    multi_collect_t c = {.store = store, .from = from, .up_to = up_to};
    const json_t *filters = q->v[MG_MULTI].arr;
    size_t i;
    json_t *f;
    json_array_foreach(filters, i, f)
    {
        const char *fs = json_string_value(f);
        if (fs != NULL && fs[0] != '\0')
            store->ops->subjects_state(store, fs, strlen(fs), multi_cb, &c);
    }
    if (c.n > 1) {
        qsort(c.seqs, c.n, sizeof *c.seqs, cmp_u64);
        size_t k = 1;
        for (size_t j = 1; j < c.n; j++)
            if (c.seqs[j] != c.seqs[k - 1])
                c.seqs[k++] = c.seqs[j];
        c.n = k;
    }
    if (c.n > MAX_RESULTS) {
        nd_free(c.seqs);
        status(ctx, st, reply, "NATS/1.0 413 Too Many Results\r\n\r\n");
        return;
    }
    if (c.n == 0) {
        nd_free(c.seqs);
        status(ctx, st, reply, "NATS/1.0 404 No Results\r\n\r\n");
        return;
    }
    uint64_t lseq = 0, np = 0, sent = 0, bytes = 0;
    nd_store_msg_t sm = {0};
    for (size_t j = 0; j < c.n; j++) {
        if (nd_store_load(store, c.seqs[j], &sm) != ND_OK)
            continue;
        np = c.n - j - 1;
        bytes += send_direct(ctx, st, reply, &sm, true, np, lseq);
        lseq = sm.seq;
        sent++;
        if (bytes >= max_bytes || (batch > 0 && sent >= batch))
            break;
    }
    nd_store_msg_free(&sm);
    nd_free(c.seqs);
    char eob[160];
    snprintf(eob, sizeof eob,
             "NATS/1.0 204 EOB\r\nNats-Num-Pending: %" PRIu64 "\r\nNats-Last-Sequence: %" PRIu64
             "\r\nNats-UpTo-Sequence: %" PRIu64 "\r\n\r\n",
             np, lseq, up_to);
    status(ctx, st, reply, eob);
}

void
js_stream_direct_get(nd_ctx_t *ctx, nd_stream_t *st, const nd_imsg_t *m)
{
    if (m->reply_len == 0)
        return;
    const char *reply = m->reply;
    char pfx[300];
    int pl = snprintf(pfx, sizeof pfx, "$JS.API.DIRECT.GET.%s", st->name);
    uint64_t seq = 0, batch = 0, max_bytes = 0;
    const char *last = NULL, *next = NULL;
    char key[1024];
    js_req_t q;
    bool have_q = false;
    if (m->subject_len > (size_t)pl + 1 && m->subject[pl] == '.') {
        /* DIRECT.GET.<stream>.<subject>: the last message on that subject, no body */
        if (m->data_len > 0 || m->subject_len - (size_t)pl - 1 >= sizeof key) {
            status(ctx, st, reply, "NATS/1.0 408 Bad Request\r\n\r\n");
            return;
        }
        memcpy(key, m->subject + pl + 1, m->subject_len - (size_t)pl - 1);
        key[m->subject_len - (size_t)pl - 1] = '\0';
        last = key;
    } else {
        if (m->data_len == 0) {
            status(ctx, st, reply, "NATS/1.0 408 Empty Request\r\n\r\n");
            return;
        }
        /* nats-server decodes it with json.Unmarshal: unknown fields are ignored even in
         * strict mode, a malformed body is 408 Malformed Request */
        nd_jserr_t err;
        if (!js_req_decode(m->data, m->data_len, false, "JSApiMsgGetRequest", msg_get_f, 9, &q,
                           &err)) {
            status(ctx, st, reply, "NATS/1.0 408 Malformed Request\r\n\r\n");
            return;
        }
        have_q = true;
        seq = q.v[MG_SEQ].u;
        batch = q.v[MG_BATCH].i > 0 ? (uint64_t)q.v[MG_BATCH].i : 0;
        max_bytes = q.v[MG_MAX_BYTES].i > 0 ? (uint64_t)q.v[MG_MAX_BYTES].i : 0;
        last = nonempty(&q.v[MG_LAST]);
        next = nonempty(&q.v[MG_NEXT]);
        bool multi = q.v[MG_MULTI].arr != NULL && json_array_size(q.v[MG_MULTI].arr) > 0;
        const char *stime = q.v[MG_START].s;
        const char *bad = NULL;
        if (stime != NULL) {
            int64_t t;
            if (seq > 0 || last != NULL || nd_time_parse_rfc3339(stime, &t) != 0) {
                bad = "NATS/1.0 408 Bad Request\r\n\r\n";
            } else {
                seq = js_seq_from_time(st->store, t);
                if (next == NULL)
                    next = ">"; /* from that time on, every subject */
            }
        }
        if (bad == NULL && seq == 0 && last == NULL && next == NULL && !multi)
            bad = "NATS/1.0 408 Empty Request\r\n\r\n";
        else if (bad == NULL &&
                 ((seq > 0 && last != NULL) || (last != NULL && next != NULL) ||
                  (last != NULL && batch > 0) || (multi && (last != NULL || next != NULL)) ||
                  (q.v[MG_UPTO_SEQ].set && q.v[MG_UPTO_TIME].set)))
            bad = "NATS/1.0 408 Bad Request\r\n\r\n";
        if (bad != NULL) {
            js_req_free(&q);
            status(ctx, st, reply, bad);
            return;
        }
        if (multi) {
            uint64_t mb = max_bytes > 0 ? max_bytes : (uint64_t)st->jsa->js->srv->opts.max_pending;
            direct_multi(ctx, st, reply, &q, seq, batch, mb);
            js_req_free(&q);
            return;
        }
    }
    nd_store_t *store = st->store;
    bool is_batch = batch > 0;
    if (batch == 0)
        batch = 1;
    if (max_bytes == 0)
        max_bytes = (uint64_t)st->jsa->js->srv->opts.max_pending;
    uint64_t np = 0, lseq = 0, sent = 0;
    const char *filter = next != NULL ? next : ">";
    if (is_batch)
        np = store->ops->num_pending(store, filter, strlen(filter), seq, false);
    nd_store_msg_t sm = {0};
    for (uint64_t i = 0; i < batch; i++) {
        nd_err_t e;
        if (seq > 0 && next == NULL) {
            e = i == 0 ? nd_store_load(store, seq, &sm) : store->ops->load_next(store, ">", 1, seq, &sm);
            if (e == ND_OK)
                seq = sm.seq + 1;
        } else if (next != NULL) {
            e = store->ops->load_next(store, next, strlen(next), seq, &sm);
            if (e == ND_OK)
                seq = sm.seq + 1;
        } else {
            e = store->ops->load_last(store, last, strlen(last), &sm);
        }
        if (e != ND_OK) {
            if (is_batch && i > 0)
                break;
            status(ctx, st, reply, "NATS/1.0 404 Message Not Found\r\n\r\n");
            nd_store_msg_free(&sm);
            if (have_q)
                js_req_free(&q);
            return;
        }
        sent += send_direct(ctx, st, reply, &sm, is_batch, np, lseq);
        if (is_batch && np > 0)
            np--;
        lseq = sm.seq;
        if (sent >= max_bytes)
            break;
    }
    nd_store_msg_free(&sm);
    if (have_q)
        js_req_free(&q);
    if (is_batch) {
        char eob[128];
        snprintf(eob, sizeof eob,
                 "NATS/1.0 204 EOB\r\nNats-Num-Pending: %" PRIu64 "\r\nNats-Last-Sequence: %" PRIu64
                 "\r\n\r\n",
                 np, lseq);
        status(ctx, st, reply, eob);
    }
}
