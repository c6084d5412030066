/* Integration tests of JetStream streams through the NATS C client (libnats, nats.c 3.x): stream
 * management (js_AddStream, js_UpdateStream, js_GetStreamInfo, js_PurgeStream, js_DeleteStream,
 * js_Streams, js_StreamNames), the publish path (js_Publish, js_PublishMsg, js_PublishAsync with
 * Nats-Msg-Id de-duplication and the Nats-Expected-* options) and message retrieval (js_GetMsg,
 * js_GetLastMsg, js_DirectGetMsg), as applications use them.
 *
 * The server under test is harness.h's (NATSD_TEST_SERVER, default this build's natsd); every
 * expectation also runs against the reference nats-server 2.9.10 (integ.cjs.reference). Each
 * server gets `jetstream { store_dir: ... }` in a temporary config directory.
 *
 * Synchronisation: every JetStream call of the library is a request/reply that waits for the
 * server's answer (hang guard ND_INTEG_TIMEOUT_MS); asynchronous publishes are awaited with
 * js_PublishAsyncComplete. Nothing depends on timing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <criterion/criterion.h>

#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void
suite_fini(void)
{
    nd_integ_cleanup();
    /* Releases the library's threads and memory, so a sanitizer build sees no leak. */
    nats_CloseAndWait(ND_INTEG_TIMEOUT_MS);
}

TestSuite(integ_cjs, .fini = suite_fini, .timeout = 180);

#define OK(call) ND_NATS_OK(call)

/* Asserts that call fails with status st and JetStream error code code (0: no code). */
#define JS_FAILS(call, st, code)                                                                   \
    do {                                                                                           \
        jerr = 0;                                                                                  \
        natsStatus s_ = (call);                                                                    \
        cr_assert(s_ == (st) && jerr == (jsErrCode)(code),                                         \
                  "%s: got status %d (%s) code %d, want status %d code %d (%s)", #call, (int)s_,   \
                  natsStatus_GetText(s_), (int)jerr, (int)(st), (int)(code),                       \
                  nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");                         \
    } while (0)

/* ---- a server with JetStream and a client -------------------------------------------------- */

typedef struct cjs_env {
    nd_integ_conf_t conf;
    nd_integ_server_t *srv;
    natsConnection *nc;
    jsCtx *js;
} cjs_env_t;

static void
cjs_up(cjs_env_t *e)
{
    memset(e, 0, sizeof *e);
    char store[256];
    nd_integ_conf_file(&e->conf, "store", store, sizeof store);
    char *text = NULL;
    cr_assert(asprintf(&text, "jetstream { store_dir: \"%s\" }\n", store) > 0);
    e->srv = nd_integ_conf_start(&e->conf, text);
    free(text);
    char url[64];
    nd_integ_nats_url(e->srv, url, sizeof url);
    OK(natsConnection_ConnectTo(&e->nc, url));
    jsOptions o;
    OK(jsOptions_Init(&o));
    o.Wait = ND_INTEG_TIMEOUT_MS;
    OK(natsConnection_JetStream(&e->js, e->nc, &o));
}

static void
cjs_down(cjs_env_t *e)
{
    jsCtx_Destroy(e->js);
    natsConnection_Destroy(e->nc);
    nd_integ_conf_stop(e->srv, &e->conf);
}

/* Creates stream name on the given subjects (NULL-terminated) with the default config otherwise
 * (file storage); checks the answer. Returns: the stream info, owned by the caller. */
static jsStreamInfo *
add_stream(cjs_env_t *e, const char *name, const char **subjects, int nsubj)
{
    jsStreamConfig cfg;
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = name;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = nsubj;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    OK(js_AddStream(&si, e->js, &cfg, NULL, &jerr));
    cr_assert(jerr == 0);
    cr_assert_str_eq(si->Config->Name, name);
    cr_assert(si->Config->SubjectsLen == nsubj);
    for (int i = 0; i < nsubj; i++)
        cr_assert_str_eq(si->Config->Subjects[i], subjects[i]);
    return si;
}

/* Publishes data on subj (with opts, may be NULL) and checks the ack: stream, sequence and the
 * duplicate flag. */
static void
pub_expect(cjs_env_t *e, const char *subj, const char *data, jsPubOptions *opts,
           const char *stream, uint64_t seq, bool dup)
{
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    OK(js_Publish(&pa, e->js, subj, data, (int)strlen(data), opts, &jerr));
    cr_assert(pa != NULL && jerr == 0);
    cr_assert_str_eq(pa->Stream, stream);
    cr_assert(pa->Sequence == seq, "publish on %s: sequence %llu, want %llu", subj,
              (unsigned long long)pa->Sequence, (unsigned long long)seq);
    cr_assert(pa->Duplicate == dup, "publish on %s: duplicate %d, want %d", subj, pa->Duplicate,
              dup);
    jsPubAck_Destroy(pa);
}

/* Fetches the stream's info and checks its state. */
static void
expect_state(cjs_env_t *e, const char *stream, uint64_t msgs, uint64_t first, uint64_t last)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    OK(js_GetStreamInfo(&si, e->js, stream, NULL, &jerr));
    cr_assert(si->State.Msgs == msgs && si->State.FirstSeq == first && si->State.LastSeq == last,
              "%s: msgs %llu first %llu last %llu, want %llu %llu %llu", stream,
              (unsigned long long)si->State.Msgs, (unsigned long long)si->State.FirstSeq,
              (unsigned long long)si->State.LastSeq, (unsigned long long)msgs,
              (unsigned long long)first, (unsigned long long)last);
    jsStreamInfo_Destroy(si);
}

/* Checks a retrieved message: subject, data and stream sequence. Destroys it. */
static void
expect_msg(natsMsg *m, const char *subj, const char *data, uint64_t seq)
{
    cr_assert(m != NULL);
    cr_assert_str_eq(natsMsg_GetSubject(m), subj);
    cr_assert(natsMsg_GetDataLength(m) == (int)strlen(data) &&
                  memcmp(natsMsg_GetData(m), data, strlen(data)) == 0,
              "got \"%.*s\", want \"%s\"", natsMsg_GetDataLength(m), natsMsg_GetData(m), data);
    cr_assert(natsMsg_GetSequence(m) == seq, "sequence %llu, want %llu",
              (unsigned long long)natsMsg_GetSequence(m), (unsigned long long)seq);
    cr_assert(natsMsg_GetTime(m) > 0);
    natsMsg_Destroy(m);
}

/* ---- tests --------------------------------------------------------------------------------- */

Test(integ_cjs, stream_add_update_info_delete)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    const char *subj[] = {"orders.*"};
    jsStreamInfo *si = add_stream(&e, "ORDERS", subj, 1);
    cr_assert(si->Config->Storage == js_FileStorage);
    cr_assert(si->Config->Retention == js_LimitsPolicy);
    cr_assert(si->Config->MaxMsgs == -1 && si->Config->MaxBytes == -1);
    cr_assert(si->Config->Replicas == 1);
    cr_assert(si->Config->Duplicates == 120LL * 1000 * 1000 * 1000, "duplicates %lld",
              (long long)si->Config->Duplicates);
    cr_assert(si->State.Msgs == 0 && si->State.LastSeq == 0);
    cr_assert(si->Created > 0);
    jsStreamInfo_Destroy(si);

    /* The same config again is accepted (idempotent); another config under the name is not. */
    jsStreamConfig cfg;
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = "ORDERS";
    cfg.Subjects = subj;
    cfg.SubjectsLen = 1;
    si = NULL;
    OK(js_AddStream(&si, e.js, &cfg, NULL, &jerr));
    cr_assert_str_eq(si->Config->Name, "ORDERS");
    jsStreamInfo_Destroy(si);
    const char *other[] = {"other.>"};
    cfg.Subjects = other;
    JS_FAILS(js_AddStream(NULL, e.js, &cfg, NULL, &jerr), NATS_ERR, JSStreamNameExistErr);

    /* A second stream may not overlap the first's subjects. */
    const char *overlap[] = {"orders.new"};
    cfg.Name = "OVER";
    cfg.Subjects = overlap;
    JS_FAILS(js_AddStream(NULL, e.js, &cfg, NULL, &jerr), NATS_ERR, JSStreamSubjectOverlapErr);

    /* Update: more subjects, limits, description. */
    const char *two[] = {"orders.*", "returns.>"};
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = "ORDERS";
    cfg.Subjects = two;
    cfg.SubjectsLen = 2;
    cfg.MaxMsgs = 100;
    cfg.Description = "all orders";
    si = NULL;
    OK(js_UpdateStream(&si, e.js, &cfg, NULL, &jerr));
    cr_assert(si->Config->SubjectsLen == 2);
    cr_assert_str_eq(si->Config->Subjects[1], "returns.>");
    cr_assert(si->Config->MaxMsgs == 100);
    cr_assert_str_eq(si->Config->Description, "all orders");
    jsStreamInfo_Destroy(si);

    /* The storage type cannot change (an invalid config, 10052). */
    cfg.Storage = js_MemoryStorage;
    JS_FAILS(js_UpdateStream(NULL, e.js, &cfg, NULL, &jerr), NATS_ERR, JSStreamInvalidConfig);

    /* Info reflects the update. */
    si = NULL;
    OK(js_GetStreamInfo(&si, e.js, "ORDERS", NULL, &jerr));
    cr_assert(si->Config->MaxMsgs == 100 && si->Config->SubjectsLen == 2);
    cr_assert(si->Config->Storage == js_FileStorage);
    jsStreamInfo_Destroy(si);

    /* Unknown streams: 10059 everywhere. */
    cfg.Name = "NOPE";
    cfg.Storage = js_FileStorage;
    const char *nope[] = {"nope"};
    cfg.Subjects = nope;
    cfg.SubjectsLen = 1;
    JS_FAILS(js_UpdateStream(NULL, e.js, &cfg, NULL, &jerr), NATS_NOT_FOUND,
             JSStreamNotFoundErr);
    JS_FAILS(js_GetStreamInfo(&si, e.js, "NOPE", NULL, &jerr), NATS_NOT_FOUND,
             JSStreamNotFoundErr);
    JS_FAILS(js_DeleteStream(e.js, "NOPE", NULL, &jerr), NATS_NOT_FOUND, JSStreamNotFoundErr);
    JS_FAILS(js_PurgeStream(e.js, "NOPE", NULL, &jerr), NATS_NOT_FOUND, JSStreamNotFoundErr);

    OK(js_DeleteStream(e.js, "ORDERS", NULL, &jerr));
    JS_FAILS(js_GetStreamInfo(&si, e.js, "ORDERS", NULL, &jerr), NATS_NOT_FOUND,
             JSStreamNotFoundErr);
    /* Its subjects are free again. */
    jsStreamInfo_Destroy(add_stream(&e, "OVER", overlap, 1));
    cjs_down(&e);
}

Test(integ_cjs, publish_and_dedup)
{
    cjs_env_t e;
    cjs_up(&e);
    const char *subj[] = {"ev.>"};
    jsStreamInfo_Destroy(add_stream(&e, "EV", subj, 1));

    pub_expect(&e, "ev.a", "one", NULL, "EV", 1, false);
    pub_expect(&e, "ev.b", "two", NULL, "EV", 2, false);

    jsPubOptions po;
    OK(jsPubOptions_Init(&po));
    po.MsgId = "id-1";
    pub_expect(&e, "ev.a", "three", &po, "EV", 3, false);
    /* Same id: not stored again, the ack names the original sequence. */
    pub_expect(&e, "ev.a", "three again", &po, "EV", 3, true);
    pub_expect(&e, "ev.c", "other subject, same id", &po, "EV", 3, true);
    po.MsgId = "id-2";
    pub_expect(&e, "ev.a", "four", &po, "EV", 4, false);
    expect_state(&e, "EV", 4, 1, 4);

    /* The stored message is the first with that id. */
    natsMsg *m = NULL;
    jsErrCode jerr = 0;
    OK(js_GetMsg(&m, e.js, "EV", 3, NULL, &jerr));
    const char *id = NULL;
    OK(natsMsgHeader_Get(m, "Nats-Msg-Id", &id));
    cr_assert_str_eq(id, "id-1");
    expect_msg(m, "ev.a", "three", 3);

    /* A subject without a stream: nobody answers (the library then reports 10076). */
    JS_FAILS(js_Publish(NULL, e.js, "nostream", "x", 1, NULL, &jerr), NATS_NO_RESPONDERS,
             JSNotEnabledErr);

    /* Headers travel with the message. */
    natsMsg *hm = NULL;
    OK(natsMsg_Create(&hm, "ev.h", NULL, "with headers", 12));
    OK(natsMsgHeader_Set(hm, "X-Color", "blue"));
    jsPubAck *pa = NULL;
    OK(js_PublishMsg(&pa, e.js, hm, NULL, &jerr));
    cr_assert(pa->Sequence == 5 && !pa->Duplicate);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(hm);
    m = NULL;
    OK(js_GetMsg(&m, e.js, "EV", 5, NULL, &jerr));
    const char *color = NULL;
    OK(natsMsgHeader_Get(m, "X-Color", &color));
    cr_assert_str_eq(color, "blue");
    expect_msg(m, "ev.h", "with headers", 5);
    cjs_down(&e);
}

Test(integ_cjs, publish_expectations)
{
    cjs_env_t e;
    cjs_up(&e);
    const char *subj[] = {"kv.*"};
    jsStreamInfo_Destroy(add_stream(&e, "KV", subj, 1));
    jsErrCode jerr = 0;
    jsPubOptions po;

    /* Expected last sequence: 0 means "not set" in nats.c, so start with one message. */
    pub_expect(&e, "kv.a", "a1", NULL, "KV", 1, false);
    OK(jsPubOptions_Init(&po));
    po.ExpectLastSeq = 5;
    JS_FAILS(js_Publish(NULL, e.js, "kv.a", "x", 1, &po, &jerr), NATS_ERR,
             JSStreamWrongLastSequenceErr);
    po.ExpectLastSeq = 1;
    pub_expect(&e, "kv.b", "b1", &po, "KV", 2, false);
    expect_state(&e, "KV", 2, 1, 2);

    /* Expected last sequence per subject. */
    OK(jsPubOptions_Init(&po));
    po.ExpectLastSubjectSeq = 2; /* kv.a's last is 1 */
    JS_FAILS(js_Publish(NULL, e.js, "kv.a", "x", 1, &po, &jerr), NATS_ERR,
             JSStreamWrongLastSequenceErr);
    po.ExpectLastSubjectSeq = 1;
    pub_expect(&e, "kv.a", "a2", &po, "KV", 3, false);
    po.ExpectLastSubjectSeq = 2;
    pub_expect(&e, "kv.b", "b2", &po, "KV", 4, false);

    /* ExpectNoMessage: the subject must have none. */
    OK(jsPubOptions_Init(&po));
    po.ExpectNoMessage = true;
    JS_FAILS(js_Publish(NULL, e.js, "kv.a", "x", 1, &po, &jerr), NATS_ERR,
             JSStreamWrongLastSequenceErr);
    pub_expect(&e, "kv.c", "c1", &po, "KV", 5, false);

    /* Expected stream. */
    OK(jsPubOptions_Init(&po));
    po.ExpectStream = "OTHER";
    JS_FAILS(js_Publish(NULL, e.js, "kv.a", "x", 1, &po, &jerr), NATS_ERR, JSStreamNotMatchErr);
    po.ExpectStream = "KV";
    pub_expect(&e, "kv.a", "a3", &po, "KV", 6, false);

    /* Expected last message id. */
    OK(jsPubOptions_Init(&po));
    po.MsgId = "m7";
    pub_expect(&e, "kv.d", "d1", &po, "KV", 7, false);
    OK(jsPubOptions_Init(&po));
    po.ExpectLastMsgId = "wrong";
    JS_FAILS(js_Publish(NULL, e.js, "kv.d", "x", 1, &po, &jerr), NATS_ERR,
             JSStreamWrongLastMsgIDErr);
    po.ExpectLastMsgId = "m7";
    pub_expect(&e, "kv.d", "d2", &po, "KV", 8, false);

    /* None of the refused publishes was stored. */
    expect_state(&e, "KV", 8, 1, 8);
    natsMsg *m = NULL;
    OK(js_GetLastMsg(&m, e.js, "KV", "kv.a", NULL, &jerr));
    expect_msg(m, "kv.a", "a3", 6);
    cjs_down(&e);
}

Test(integ_cjs, get_msg_and_last_msg)
{
    cjs_env_t e;
    cjs_up(&e);
    const char *subj[] = {"g.>"};
    jsStreamInfo_Destroy(add_stream(&e, "G", subj, 1));
    jsErrCode jerr = 0;
    pub_expect(&e, "g.x", "x1", NULL, "G", 1, false);
    pub_expect(&e, "g.y", "y1", NULL, "G", 2, false);
    pub_expect(&e, "g.x", "x2", NULL, "G", 3, false);
    pub_expect(&e, "g.y.z", "", NULL, "G", 4, false);

    natsMsg *m = NULL;
    OK(js_GetMsg(&m, e.js, "G", 1, NULL, &jerr));
    expect_msg(m, "g.x", "x1", 1);
    OK(js_GetMsg(&m, e.js, "G", 4, NULL, &jerr));
    expect_msg(m, "g.y.z", "", 4);
    OK(js_GetLastMsg(&m, e.js, "G", "g.x", NULL, &jerr));
    expect_msg(m, "g.x", "x2", 3);
    /* A wildcard subject: the last message of any match. */
    OK(js_GetLastMsg(&m, e.js, "G", "g.>", NULL, &jerr));
    expect_msg(m, "g.y.z", "", 4);

    m = NULL;
    JS_FAILS(js_GetMsg(&m, e.js, "G", 99, NULL, &jerr), NATS_NOT_FOUND, JSNoMessageFoundErr);
    JS_FAILS(js_GetLastMsg(&m, e.js, "G", "g.none", NULL, &jerr), NATS_NOT_FOUND,
             JSNoMessageFoundErr);
    /* (nats.c maps only 10037 to NATS_NOT_FOUND for a get.) */
    JS_FAILS(js_GetMsg(&m, e.js, "NOPE", 1, NULL, &jerr), NATS_ERR, JSStreamNotFoundErr);

    /* A deleted message is gone; its neighbours stay. */
    OK(js_DeleteMsg(e.js, "G", 1, NULL, &jerr));
    JS_FAILS(js_GetMsg(&m, e.js, "G", 1, NULL, &jerr), NATS_NOT_FOUND, JSNoMessageFoundErr);
    OK(js_GetMsg(&m, e.js, "G", 2, NULL, &jerr));
    expect_msg(m, "g.y", "y1", 2);
    expect_state(&e, "G", 3, 2, 4);
    cjs_down(&e);
}

Test(integ_cjs, direct_get)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    const char *subj[] = {"d.*"};
    jsStreamConfig cfg;
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = "D";
    cfg.Subjects = subj;
    cfg.SubjectsLen = 1;
    cfg.AllowDirect = true;
    jsStreamInfo *si = NULL;
    OK(js_AddStream(&si, e.js, &cfg, NULL, &jerr));
    cr_assert(si->Config->AllowDirect);
    jsStreamInfo_Destroy(si);

    pub_expect(&e, "d.a", "a1", NULL, "D", 1, false);
    pub_expect(&e, "d.b", "b1", NULL, "D", 2, false);
    pub_expect(&e, "d.a", "a2", NULL, "D", 3, false);

    jsDirectGetMsgOptions dg;
    natsMsg *m = NULL;
    OK(jsDirectGetMsgOptions_Init(&dg));
    dg.Sequence = 2;
    OK(js_DirectGetMsg(&m, e.js, "D", NULL, &dg));
    const char *v = NULL;
    OK(natsMsgHeader_Get(m, "Nats-Stream", &v));
    cr_assert_str_eq(v, "D");
    OK(natsMsgHeader_Get(m, "Nats-Subject", &v));
    cr_assert_str_eq(v, "d.b");
    expect_msg(m, "d.b", "b1", 2);

    OK(jsDirectGetMsgOptions_Init(&dg));
    dg.LastBySubject = "d.a";
    OK(js_DirectGetMsg(&m, e.js, "D", NULL, &dg));
    expect_msg(m, "d.a", "a2", 3);

    /* Next by subject from a sequence (inclusive). */
    OK(jsDirectGetMsgOptions_Init(&dg));
    dg.Sequence = 2;
    dg.NextBySubject = "d.a";
    OK(js_DirectGetMsg(&m, e.js, "D", NULL, &dg));
    expect_msg(m, "d.a", "a2", 3);
    dg.Sequence = 1;
    OK(js_DirectGetMsg(&m, e.js, "D", NULL, &dg));
    expect_msg(m, "d.a", "a1", 1);

    /* Nothing there: a 404 status, which the library reports as not found. */
    m = NULL;
    OK(jsDirectGetMsgOptions_Init(&dg));
    dg.Sequence = 50;
    natsStatus s = js_DirectGetMsg(&m, e.js, "D", NULL, &dg);
    cr_assert(s == NATS_NOT_FOUND, "direct get of seq 50: %s", natsStatus_GetText(s));
    cr_assert(m == NULL);
    OK(jsDirectGetMsgOptions_Init(&dg));
    dg.LastBySubject = "d.none";
    s = js_DirectGetMsg(&m, e.js, "D", NULL, &dg);
    cr_assert(s == NATS_NOT_FOUND, "direct get of last d.none: %s", natsStatus_GetText(s));
    cjs_down(&e);
}

Test(integ_cjs, purge)
{
    cjs_env_t e;
    cjs_up(&e);
    const char *subj[] = {"p.*"};
    jsStreamInfo_Destroy(add_stream(&e, "P", subj, 1));
    jsErrCode jerr = 0;
    const char *subs[] = {"p.a", "p.b", "p.a", "p.b", "p.a", "p.b"};
    for (int i = 0; i < 6; i++)
        pub_expect(&e, subs[i], "x", NULL, "P", (uint64_t)i + 1, false);

    /* Purge one subject: p.a's messages 1, 3, 5 go. */
    jsOptions o;
    OK(jsOptions_Init(&o));
    o.Stream.Purge.Subject = "p.a";
    OK(js_PurgeStream(e.js, "P", &o, &jerr));
    expect_state(&e, "P", 3, 2, 6);
    natsMsg *m = NULL;
    JS_FAILS(js_GetLastMsg(&m, e.js, "P", "p.a", NULL, &jerr), NATS_NOT_FOUND,
             JSNoMessageFoundErr);

    /* Keep the newest one. */
    OK(jsOptions_Init(&o));
    o.Stream.Purge.Keep = 1;
    OK(js_PurgeStream(e.js, "P", &o, &jerr));
    expect_state(&e, "P", 1, 6, 6);

    /* A full purge empties the stream; sequences continue. */
    OK(js_PurgeStream(e.js, "P", NULL, &jerr));
    expect_state(&e, "P", 0, 7, 6);
    pub_expect(&e, "p.a", "after", NULL, "P", 7, false);
    expect_state(&e, "P", 1, 7, 7);

    /* Purge up to (not including) a sequence. */
    pub_expect(&e, "p.b", "y", NULL, "P", 8, false);
    pub_expect(&e, "p.b", "z", NULL, "P", 9, false);
    OK(jsOptions_Init(&o));
    o.Stream.Purge.Sequence = 9;
    OK(js_PurgeStream(e.js, "P", &o, &jerr));
    expect_state(&e, "P", 1, 9, 9);
    OK(js_GetMsg(&m, e.js, "P", 9, NULL, &jerr));
    expect_msg(m, "p.b", "z", 9);
    cjs_down(&e);
}

Test(integ_cjs, list_streams)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    jsStreamNamesList *names = NULL;
    jsStreamInfoList *infos = NULL;
    /* No streams: the library reports not found. */
    JS_FAILS(js_StreamNames(&names, e.js, NULL, &jerr), NATS_NOT_FOUND, 0);
    JS_FAILS(js_Streams(&infos, e.js, NULL, &jerr), NATS_NOT_FOUND, 0);

    const char *sa[] = {"la"}, *sb[] = {"lb"}, *sc[] = {"lc.>"};
    jsStreamInfo_Destroy(add_stream(&e, "B", sb, 1));
    jsStreamInfo_Destroy(add_stream(&e, "A", sa, 1));
    jsStreamInfo_Destroy(add_stream(&e, "C", sc, 1));
    pub_expect(&e, "lc.1", "c", NULL, "C", 1, false);
    pub_expect(&e, "lc.2", "c", NULL, "C", 2, false);

    OK(js_StreamNames(&names, e.js, NULL, &jerr));
    cr_assert(names->Count == 3, "%d names", names->Count);
    bool seen[3] = {false, false, false};
    for (int i = 0; i < names->Count; i++) {
        const char *n = names->List[i];
        cr_assert(strlen(n) == 1 && n[0] >= 'A' && n[0] <= 'C', "name %s", n);
        cr_assert(!seen[n[0] - 'A']);
        seen[n[0] - 'A'] = true;
    }
    jsStreamNamesList_Destroy(names);

    OK(js_Streams(&infos, e.js, NULL, &jerr));
    cr_assert(infos->Count == 3, "%d infos", infos->Count);
    int found_c = 0;
    for (int i = 0; i < infos->Count; i++) {
        jsStreamInfo *si = infos->List[i];
        if (strcmp(si->Config->Name, "C") == 0) {
            found_c++;
            cr_assert(si->State.Msgs == 2 && si->State.LastSeq == 2);
            cr_assert_str_eq(si->Config->Subjects[0], "lc.>");
        } else {
            cr_assert(si->State.Msgs == 0);
        }
    }
    cr_assert(found_c == 1);
    jsStreamInfoList_Destroy(infos);

    /* A deleted stream leaves the listing. */
    OK(js_DeleteStream(e.js, "B", NULL, &jerr));
    OK(js_StreamNames(&names, e.js, NULL, &jerr));
    cr_assert(names->Count == 2);
    for (int i = 0; i < names->Count; i++)
        cr_assert(strcmp(names->List[i], "B") != 0);
    jsStreamNamesList_Destroy(names);
    cjs_down(&e);
}

/* ---- asynchronous publishing --------------------------------------------------------------- */

typedef struct async_acks {
    int ok, dup, err;
    uint64_t max_seq;
    jsErrCode last_err;
} async_acks_t;

static void
on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    async_acks_t *a = closure; /* called from one library thread; read after Complete */
    if (pa != NULL) {
        if (pa->Duplicate)
            a->dup++;
        else
            a->ok++;
        if (pa->Sequence > a->max_seq)
            a->max_seq = pa->Sequence;
    } else if (pae != NULL) {
        a->err++;
        a->last_err = pae->ErrCode;
    }
    natsMsg_Destroy(msg);
}

Test(integ_cjs, publish_async)
{
    enum { N = 200 };
    cjs_env_t e;
    cjs_up(&e);
    const char *subj[] = {"as.*"};
    jsStreamInfo_Destroy(add_stream(&e, "AS", subj, 1));

    /* A second context with an ack handler. */
    async_acks_t acks = {0};
    jsOptions o;
    OK(jsOptions_Init(&o));
    o.Wait = ND_INTEG_TIMEOUT_MS;
    o.PublishAsync.AckHandler = on_ack;
    o.PublishAsync.AckHandlerClosure = &acks;
    o.PublishAsync.MaxPending = 64;
    jsCtx *js = NULL;
    OK(natsConnection_JetStream(&js, e.nc, &o));

    for (int i = 0; i < N; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", i);
        OK(js_PublishAsync(js, "as.n", buf, (int)strlen(buf), NULL));
    }
    /* Duplicates and a refused expectation, asynchronously. */
    jsPubOptions po;
    OK(jsPubOptions_Init(&po));
    po.MsgId = "dup";
    OK(js_PublishAsync(js, "as.d", "d", 1, &po));
    OK(js_PublishAsync(js, "as.d", "d", 1, &po));
    OK(jsPubOptions_Init(&po));
    po.ExpectLastSeq = 1;
    OK(js_PublishAsync(js, "as.d", "bad", 3, &po));

    jsPubOptions wait;
    OK(jsPubOptions_Init(&wait));
    wait.MaxWait = ND_INTEG_TIMEOUT_MS;
    OK(js_PublishAsyncComplete(js, &wait));
    cr_assert(acks.ok == N + 1 && acks.dup == 1 && acks.err == 1,
              "ok %d dup %d err %d", acks.ok, acks.dup, acks.err);
    cr_assert(acks.max_seq == N + 1);
    cr_assert(acks.last_err == JSStreamWrongLastSequenceErr, "error code %d", (int)acks.last_err);
    expect_state(&e, "AS", N + 1, 1, N + 1);

    /* Order is kept: message i is at sequence i+1. */
    jsErrCode jerr = 0;
    natsMsg *m = NULL;
    OK(js_GetMsg(&m, e.js, "AS", 1, NULL, &jerr));
    expect_msg(m, "as.n", "0", 1);
    OK(js_GetMsg(&m, e.js, "AS", N, NULL, &jerr));
    char last[16];
    snprintf(last, sizeof last, "%d", N - 1);
    expect_msg(m, "as.n", last, N);
    OK(js_GetLastMsg(&m, e.js, "AS", "as.d", NULL, &jerr));
    expect_msg(m, "as.d", "d", N + 1);

    jsCtx_Destroy(js);
    cjs_down(&e);
}

Test(integ_cjs, limits)
{
    cjs_env_t e;
    cjs_up(&e);
    jsErrCode jerr = 0;
    const char *subj[] = {"lim.*"};
    jsStreamConfig cfg;
    OK(jsStreamConfig_Init(&cfg));
    cfg.Name = "LIM";
    cfg.Subjects = subj;
    cfg.SubjectsLen = 1;
    cfg.MaxMsgsPerSubject = 2;
    cfg.MaxMsgs = 3;
    cfg.Storage = js_MemoryStorage;
    jsStreamInfo *si = NULL;
    OK(js_AddStream(&si, e.js, &cfg, NULL, &jerr));
    cr_assert(si->Config->MaxMsgsPerSubject == 2 && si->Config->MaxMsgs == 3);
    cr_assert(si->Config->Storage == js_MemoryStorage);
    jsStreamInfo_Destroy(si);

    pub_expect(&e, "lim.a", "a1", NULL, "LIM", 1, false);
    pub_expect(&e, "lim.a", "a2", NULL, "LIM", 2, false);
    pub_expect(&e, "lim.a", "a3", NULL, "LIM", 3, false); /* a1 goes (per subject) */
    expect_state(&e, "LIM", 2, 2, 3);
    pub_expect(&e, "lim.b", "b1", NULL, "LIM", 4, false);
    pub_expect(&e, "lim.c", "c1", NULL, "LIM", 5, false); /* a2 goes (max msgs) */
    expect_state(&e, "LIM", 3, 3, 5);
    natsMsg *m = NULL;
    JS_FAILS(js_GetMsg(&m, e.js, "LIM", 2, NULL, &jerr), NATS_NOT_FOUND, JSNoMessageFoundErr);
    OK(js_GetMsg(&m, e.js, "LIM", 3, NULL, &jerr));
    expect_msg(m, "lim.a", "a3", 3);

    /* Discard new with a full stream: the publish is refused (10077, nothing stored). */
    cfg.Discard = js_DiscardNew;
    si = NULL;
    OK(js_UpdateStream(&si, e.js, &cfg, NULL, &jerr));
    cr_assert(si->Config->Discard == js_DiscardNew);
    jsStreamInfo_Destroy(si);
    JS_FAILS(js_Publish(NULL, e.js, "lim.d", "x", 1, NULL, &jerr), NATS_ERR,
             JSStreamStoreFailedErr);
    expect_state(&e, "LIM", 3, 3, 5);
    cjs_down(&e);
}
