/* Consumer configuration (src/js/consumer_cfg.c): nats-server 2.11's create-request checks,
 * defaults, checkConsumerCfg errors with their codes and texts, the canonical JSON, idempotent
 * equality, update rules, workqueue rules and filter matching. The expected texts are
 * nats-server's (server/consumer.go, stream.go, jetstream_api.go, errors.json); the default JSON
 * was checked against nats-server 2.9.10 for the fields it has (2.11 adds the
 * "_nats.req.level" metadata). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "js/consumer_cfg.h"
#include "js/stream_cfg.h"

/* ---- Streams to create consumers on ---- */

static nd_stream_cfg_t
stream(const char *body)
{
    nd_stream_cfg_env_t env = {.create = true, .max_stream_bytes = -1};
    nd_stream_cfg_t s;
    nd_jserr_t e;
    cr_assert(nd_stream_cfg_parse(body, strlen(body), NULL, &env, &s, &e), "stream: %s", e.desc);
    return s;
}

static nd_stream_cfg_t S; /* limits, subjects foo.> and bar */

static void
setup(void)
{
    S = stream("{\"name\":\"S\",\"subjects\":[\"foo.>\",\"bar\"]}");
}

static void
teardown(void)
{
    nd_stream_cfg_free(&S);
}

static nd_consumer_cfg_env_t
env_of(const nd_stream_cfg_t *s)
{
    return (nd_consumer_cfg_env_t){.stream = s};
}

/* Parses body as sent to $JS.API.CONSUMER.CREATE.S[.name[.filter]] (or DURABLE.CREATE). */
static bool
parse_full(const char *body, const char *name, const char *filter, bool legacy_durable,
           const nd_consumer_cfg_env_t *env, nd_consumer_req_t *r, nd_jserr_t *e)
{
    memset(e, 0, sizeof *e);
    return nd_consumer_req_parse(body, strlen(body), "S", name, filter, legacy_durable, env, r, e);
}

static char *
dump(const nd_consumer_cfg_t *c)
{
    return json_dumps(c->json, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

#define EXPECT_ERR_FULL(body, name, filter, legacy, env, ecode, edesc)                             \
    do {                                                                                           \
        nd_consumer_req_t r_;                                                                      \
        nd_jserr_t e_;                                                                             \
        bool ok_ = parse_full(body, name, filter, legacy, env, &r_, &e_);                          \
        if (ok_)                                                                                   \
            nd_consumer_req_free(&r_);                                                             \
        cr_assert(!ok_, "accepted: %s", body);                                                     \
        cr_expect_eq(e_.err_code, ecode, "%s: err_code %d (%s)", body, e_.err_code, e_.desc);      \
        cr_expect_str_eq(e_.desc, edesc, "%s: got [%s]", body, e_.desc);                           \
    } while (0)

/* A config (the request's "config" object) created as CONSUMER.CREATE.S.C on stream S. */
#define EXPECT_CERR(cfg, ecode, edesc)                                                             \
    do {                                                                                           \
        nd_consumer_cfg_env_t env_ = env_of(&S);                                                   \
        EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":" cfg "}", "C", NULL, false, &env_,     \
                        ecode, edesc);                                                             \
    } while (0)

#define EXPECT_JSON_FULL(body, name, filter, legacy, env, expected)                                \
    do {                                                                                           \
        nd_consumer_req_t r_;                                                                      \
        nd_jserr_t e_;                                                                             \
        cr_assert(parse_full(body, name, filter, legacy, env, &r_, &e_), "%s: %d %s", body,        \
                  e_.err_code, e_.desc);                                                           \
        char *s_ = dump(&r_.cfg);                                                                  \
        cr_expect_str_eq(s_, expected, "%s", body);                                                \
        free(s_);                                                                                  \
        nd_consumer_req_free(&r_);                                                                 \
    } while (0)

#define EXPECT_CJSON(cfg, expected)                                                                \
    do {                                                                                           \
        nd_consumer_cfg_env_t env_ = env_of(&S);                                                   \
        EXPECT_JSON_FULL("{\"stream_name\":\"S\",\"config\":" cfg "}", "C", NULL, false, &env_,    \
                         expected);                                                                \
    } while (0)

#define MD0 "\"metadata\":{\"_nats.req.level\":\"0\"}"

/* A consumer parsed from a config on S (must succeed). */
static nd_consumer_cfg_t
cons(const char *cfg, const char *name)
{
    char body[2048];
    snprintf(body, sizeof body, "{\"stream_name\":\"S\",\"config\":%s}", cfg);
    nd_consumer_cfg_env_t env = env_of(&S);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full(body, name, NULL, false, &env, &r, &e), "%s: %s", body, e.desc);
    return r.cfg;
}

TestSuite(consumer_cfg, .init = setup, .fini = teardown);

/* ---- Defaults and the canonical JSON ---- */

Test(consumer_cfg, defaults_legacy_ephemeral)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_JSON_FULL("{\"stream_name\":\"S\",\"config\":{}}", NULL, NULL, false, &env,
                     "{\"deliver_policy\":\"all\",\"ack_policy\":\"none\",\"max_deliver\":-1,"
                     "\"replay_policy\":\"instant\",\"max_waiting\":512,"
                     "\"inactive_threshold\":5000000000,\"num_replicas\":0," MD0 "}");
}

Test(consumer_cfg, defaults_push_explicit)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_JSON_FULL("{\"stream_name\":\"S\",\"config\":{\"deliver_subject\":\"dd\","
                     "\"ack_policy\":\"explicit\"}}",
                     NULL, NULL, false, &env,
                     "{\"deliver_policy\":\"all\",\"ack_policy\":\"explicit\","
                     "\"ack_wait\":30000000000,\"max_deliver\":-1,\"replay_policy\":\"instant\","
                     "\"max_ack_pending\":1000,\"deliver_subject\":\"dd\","
                     "\"inactive_threshold\":5000000000,\"num_replicas\":0," MD0 "}");
}

Test(consumer_cfg, defaults_legacy_durable)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_JSON_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D1\","
                     "\"ack_policy\":\"explicit\",\"filter_subject\":\"foo.a\"}}",
                     "D1", NULL, true, &env,
                     "{\"durable_name\":\"D1\",\"deliver_policy\":\"all\",\"ack_policy\":"
                     "\"explicit\",\"ack_wait\":30000000000,\"max_deliver\":-1,"
                     "\"filter_subject\":\"foo.a\",\"replay_policy\":\"instant\","
                     "\"max_waiting\":512,\"max_ack_pending\":1000,\"num_replicas\":0," MD0 "}");
}

Test(consumer_cfg, defaults_fields)
{
    nd_consumer_cfg_t c = cons("{\"durable_name\":\"C\",\"ack_policy\":\"all\"}", "C");
    cr_expect_str_eq(c.name, "C");
    cr_expect(c.durable);
    cr_expect_eq(c.ack_policy, ND_ACK_ALL);
    cr_expect_eq(c.ack_wait_ns, 30000000000LL);
    cr_expect_eq(c.max_deliver, -1);
    cr_expect_eq(c.max_waiting, 512);
    cr_expect_eq(c.max_ack_pending, 1000);
    cr_expect_eq(c.inactive_threshold_ns, 0);
    cr_expect_eq(c.nfilters, 0);
    cr_expect_null(c.deliver_subject);
    cr_expect_null(c.deliver_group);
    cr_expect_eq(c.priority_policy, ND_PRIO_NONE);
    cr_expect_eq(c.priority_timeout_ns, 0);
    nd_consumer_cfg_free(&c);
}

Test(consumer_cfg, new_style_named_gets_name_and_threshold)
{
    EXPECT_CJSON("{\"ack_policy\":\"none\"}",
                 "{\"name\":\"C\",\"deliver_policy\":\"all\",\"ack_policy\":\"none\","
                 "\"max_deliver\":-1,\"replay_policy\":\"instant\",\"max_waiting\":512,"
                 "\"inactive_threshold\":5000000000,\"num_replicas\":0," MD0 "}");
}

Test(consumer_cfg, backoff_sets_ack_wait)
{
    nd_consumer_cfg_t c =
        cons("{\"ack_policy\":\"explicit\",\"backoff\":[1000000000,2000000000]}", "C");
    cr_expect_eq(c.ack_wait_ns, 1000000000LL);
    cr_assert_eq(c.nbackoff, 2);
    cr_expect_eq(c.backoff_ns[1], 2000000000LL);
    cr_expect_eq(c.max_deliver, -1);
    nd_consumer_cfg_free(&c);
}

Test(consumer_cfg, limits_lower_max_ack_pending_and_batch)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    env.max_ack_pending = 100;
    env.max_request_batch = 50;
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"config\":{\"ack_policy\":\"explicit\"}}", "C",
                         NULL, false, &env, &r, &e));
    cr_expect_eq(r.cfg.max_ack_pending, 100);
    cr_expect_eq(r.cfg.max_batch, 50);
    nd_consumer_req_free(&r);
}

Test(consumer_cfg, stream_consumer_limits_are_defaults)
{
    nd_stream_cfg_t s = stream("{\"name\":\"S\",\"subjects\":[\"x\"],\"consumer_limits\":"
                               "{\"inactive_threshold\":10000000000,\"max_ack_pending\":20}}");
    nd_consumer_cfg_env_t env = env_of(&s);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"C\","
                         "\"ack_policy\":\"explicit\"}}",
                         "C", NULL, false, &env, &r, &e));
    cr_expect_eq(r.cfg.max_ack_pending, 20);
    cr_expect_eq(r.cfg.inactive_threshold_ns, 10000000000LL);
    nd_consumer_req_free(&r);
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"ack_policy\":\"explicit\","
                    "\"max_ack_pending\":21}}",
                    "C", NULL, false, &env, 10121,
                    "consumer max ack pending exceeds system limit of 20");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"inactive_threshold\":60000000000}}", "C",
                    NULL, false, &env, 10153,
                    "consumer inactive threshold exceeds system limit of 10s");
    /* Pedantic: the stream's limits are not applied silently. */
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"pedantic\":true,\"config\":{}}", "C", NULL, false,
                    &env, 10157,
                    "pedantic mode: max_ack_pending must be set if it's configured in stream "
                    "limits");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"pedantic\":true,\"config\":{\"max_ack_pending\":5}}",
                    "C", NULL, false, &env, 10157,
                    "pedantic mode: inactive_threshold must be set if it's configured in stream "
                    "limits");
    nd_stream_cfg_free(&s);
}

Test(consumer_cfg, pedantic_backoff)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    /* ack_wait took its 30 s default before the backoff is looked at. */
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"pedantic\":true,\"config\":{\"ack_policy\":"
                    "\"explicit\",\"backoff\":[1000000000]}}",
                    "C", NULL, false, &env, 10157,
                    "pedantic mode: first backoff value has to equal batch AckWait");
    env.pedantic = true;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"ack_policy\":"
                    "\"explicit\",\"backoff\":[1000000000]}}",
                    "C", NULL, false, &env, 10157,
                    "pedantic mode: first backoff value has to equal batch AckWait");
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_expect(parse_full("{\"stream_name\":\"S\",\"config\":{\"ack_policy\":\"explicit\","
                         "\"ack_wait\":1000000000,\"backoff\":[1000000000]}}",
                         "C", NULL, false, &env, &r, &e),
              "%s", e.desc);
    nd_consumer_req_free(&r);
}

Test(consumer_cfg, pinned_ttl_default_and_metadata_level)
{
    EXPECT_CJSON("{\"priority_groups\":[\"g\"],\"priority_policy\":\"pinned_client\","
                 "\"ack_policy\":\"explicit\"}",
                 "{\"name\":\"C\",\"deliver_policy\":\"all\",\"ack_policy\":\"explicit\","
                 "\"ack_wait\":30000000000,\"max_deliver\":-1,\"replay_policy\":\"instant\","
                 "\"max_waiting\":512,\"max_ack_pending\":1000,\"inactive_threshold\":5000000000,"
                 "\"num_replicas\":0,\"metadata\":{\"_nats.req.level\":\"1\"},"
                 "\"priority_groups\":[\"g\"],\"priority_policy\":\"pinned_client\","
                 "\"priority_timeout\":120000000000}");
}

Test(consumer_cfg, full_json_order)
{
    EXPECT_CJSON(
        "{\"metadata\":{\"b\":\"2\",\"a\":\"1\",\"_nats.ver\":\"x\"},\"pause_until\":"
        "\"2030-01-02T03:04:05.500+02:00\",\"mem_storage\":true,\"num_replicas\":1,"
        "\"inactive_threshold\":7000000000,\"idle_heartbeat\":1000000000,\"deliver_group\":\"q\","
        "\"deliver_subject\":\"dd\",\"headers_only\":true,\"flow_control\":true,"
        "\"max_ack_pending\":7,\"sample_freq\":\"50%\",\"rate_limit_bps\":1000,"
        "\"replay_policy\":\"original\",\"filter_subjects\":[\"foo.a\",\"bar\"],"
        "\"backoff\":[2000000000],\"max_deliver\":3,\"ack_wait\":2000000000,"
        "\"ack_policy\":\"all\",\"opt_start_time\":\"2020-01-01T00:00:00.000Z\","
        "\"deliver_policy\":\"by_start_time\",\"description\":\"d\"}",
        "{\"name\":\"C\",\"description\":\"d\",\"deliver_policy\":\"by_start_time\","
        "\"opt_start_time\":\"2020-01-01T00:00:00Z\",\"ack_policy\":\"all\","
        "\"ack_wait\":2000000000,\"max_deliver\":3,\"backoff\":[2000000000],"
        "\"filter_subjects\":[\"foo.a\",\"bar\"],\"replay_policy\":\"original\","
        "\"rate_limit_bps\":1000,\"sample_freq\":\"50%\",\"max_ack_pending\":7,"
        "\"flow_control\":true,\"headers_only\":true,\"deliver_subject\":\"dd\","
        "\"deliver_group\":\"q\",\"idle_heartbeat\":1000000000,\"inactive_threshold\":7000000000,"
        "\"num_replicas\":1,\"mem_storage\":true,\"metadata\":{\"_nats.req.level\":\"1\","
        "\"a\":\"1\",\"b\":\"2\"},\"pause_until\":\"2030-01-02T03:04:05.5+02:00\"}");
}

Test(consumer_cfg, times)
{
    /* Go's zero time: written back as it is, and no API level 1. */
    EXPECT_CJSON("{\"pause_until\":\"0001-01-01T00:00:00Z\"}",
                 "{\"name\":\"C\",\"deliver_policy\":\"all\",\"ack_policy\":\"none\","
                 "\"max_deliver\":-1,\"replay_policy\":\"instant\",\"max_waiting\":512,"
                 "\"inactive_threshold\":5000000000,\"num_replicas\":0," MD0
                 ",\"pause_until\":\"0001-01-01T00:00:00Z\"}");
    nd_consumer_cfg_t c = cons("{\"pause_until\":\"2024-02-29T23:59:59.000000001-00:30\"}", "C");
    cr_expect_eq(c.pause_until_ns, (1709251199LL + 1800) * 1000000000LL + 1);
    char *s = dump(&c);
    cr_expect(strstr(s, "\"pause_until\":\"2024-02-29T23:59:59.000000001-00:30\"") != NULL, "%s",
              s);
    free(s);
    nd_consumer_cfg_free(&c);
    const char *bad[] = {"2023-02-29T00:00:00Z", "2020-01-01T24:00:00Z",     "2020-01-01t00:00:00Z",
                         "2020-01-01T00:00:00z", "2020-01-01T00:00:00+0100", "2020-1-01T00:00:00Z",
                         "2020-01-01T00:00:60Z", "2020-01-01T00:00:00.Z"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cfg[200], want[300];
        snprintf(cfg, sizeof cfg, "{\"stream_name\":\"S\",\"config\":{\"pause_until\":\"%s\"}}",
                 bad[i]);
        snprintf(want, sizeof want,
                 "invalid JSON: parsing time \"%s\" as \"2006-01-02T15:04:05Z07:00\": cannot "
                 "parse \"%s\" as \"2006\"",
                 bad[i], bad[i]);
        nd_consumer_cfg_env_t env = env_of(&S);
        EXPECT_ERR_FULL(cfg, "C", NULL, false, &env, 10025, want);
    }
}

Test(consumer_cfg, fields_from_full_config)
{
    nd_consumer_cfg_t c =
        cons("{\"deliver_subject\":\"dd\",\"deliver_group\":\"q\",\"sample_freq\":\"30%\","
             "\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":18446744073709551615,"
             "\"opt_start_time\":null,\"pause_until\":\"2030-01-01T00:00:00Z\","
             "\"rate_limit_bps\":8,\"idle_heartbeat\":200000000,\"headers_only\":true}",
             "C");
    cr_expect_str_eq(c.deliver_subject, "dd");
    cr_expect_str_eq(c.deliver_group, "q");
    cr_expect_eq(c.sample_freq, 30);
    cr_expect_eq(c.deliver_policy, ND_DELIVER_BY_START_SEQ);
    cr_expect_eq(c.opt_start_seq, UINT64_MAX);
    cr_expect_eq(c.pause_until_ns, 1893456000LL * 1000000000LL);
    cr_expect_eq(c.rate_limit_bps, 8);
    cr_expect_eq(c.idle_heartbeat_ns, 200000000);
    cr_expect(c.headers_only);
    cr_expect_eq(c.max_waiting, 0);
    nd_consumer_cfg_free(&c);
}

Test(consumer_cfg, canonical_round_trip)
{
    nd_consumer_cfg_t c = cons("{\"ack_policy\":\"explicit\",\"filter_subject\":\"foo.*\","
                               "\"backoff\":[1000000000],\"description\":\"x\","
                               "\"opt_start_time\":\"2021-05-06T07:08:09.123456789-03:30\","
                               "\"deliver_policy\":\"by_start_time\"}",
                               "C");
    nd_consumer_cfg_env_t env = env_of(&S);
    nd_consumer_cfg_t d;
    nd_jserr_t e;
    cr_assert(nd_consumer_cfg_from_json(c.json, &env, &d, &e), "%s", e.desc);
    char *a = dump(&c), *b = dump(&d);
    cr_expect_str_eq(a, b);
    cr_expect(nd_consumer_cfg_equal(&c, &d));
    cr_expect_eq(c.opt_start_time_ns, d.opt_start_time_ns);
    cr_expect(strstr(a, "\"2021-05-06T07:08:09.123456789-03:30\"") != NULL, "%s", a);
    free(a);
    free(b);
    nd_consumer_cfg_t x;
    nd_consumer_cfg_copy(&x, &d);
    cr_expect(nd_consumer_cfg_equal(&x, &c));
    cr_expect_str_eq(x.name, "C");
    cr_assert_eq(x.nfilters, 1);
    cr_expect_str_eq(x.filters[0], "foo.*");
    nd_consumer_cfg_free(&x);
    nd_consumer_cfg_free(&c);
    nd_consumer_cfg_free(&d);
}

Test(consumer_cfg, set_name_keeps_key_order)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"config\":{\"description\":\"d\"}}", NULL, NULL,
                         false, &env, &r, &e));
    cr_expect_null(r.cfg.name);
    nd_consumer_cfg_set_name(&r.cfg, "abc");
    cr_expect_str_eq(r.cfg.name, "abc");
    char *s = dump(&r.cfg);
    const char *want = "{\"name\":\"abc\",\"description\":\"d\",";
    cr_expect(!strncmp(s, want, strlen(want)), "%s", s);
    free(s);
    nd_consumer_req_free(&r);
}

/* ---- Decoding errors (10025) ---- */

Test(consumer_cfg, json_type_errors)
{
    EXPECT_CERR("{\"ack_wait\":\"x\"}", 10025,
                "invalid JSON: json: cannot unmarshal string into Go struct field "
                "ConsumerConfig.config.ack_wait of type time.Duration");
    EXPECT_CERR("{\"max_deliver\":1.5}", 10025,
                "invalid JSON: json: cannot unmarshal number 1.5 into Go struct field "
                "ConsumerConfig.config.max_deliver of type int");
    EXPECT_CERR("{\"opt_start_seq\":-1}", 10025,
                "invalid JSON: json: cannot unmarshal number -1 into Go struct field "
                "ConsumerConfig.config.opt_start_seq of type uint64");
    EXPECT_CERR("{\"filter_subjects\":\"a\"}", 10025,
                "invalid JSON: json: cannot unmarshal string into Go struct field "
                "ConsumerConfig.config.filter_subjects of type []string");
    EXPECT_CERR("{\"backoff\":[\"1s\"]}", 10025,
                "invalid JSON: json: cannot unmarshal string into Go struct field "
                "ConsumerConfig.config.backoff of type time.Duration");
    EXPECT_CERR("{\"ack_policy\":\"some\"}", 10025,
                "invalid JSON: can not unmarshal \"\\\"some\\\"\"");
    EXPECT_CERR("{\"deliver_policy\":null}", 10025, "invalid JSON: can not unmarshal \"null\"");
    EXPECT_CERR("{\"priority_policy\":\"x\"}", 10025,
                "invalid JSON: unknown priority policy: \"x\"");
    EXPECT_CERR("{\"opt_start_time\":5}", 10025,
                "invalid JSON: Time.UnmarshalJSON: input is not a JSON string");
    EXPECT_CERR("\"x\"", 10025,
                "invalid JSON: json: cannot unmarshal string into Go struct field "
                "CreateConsumerRequest.config of type server.ConsumerConfig");
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"action\":\"delete\"}", "C", NULL, false, &env, 10025,
                    "invalid JSON: unknown consumer action: \"delete\"");
    EXPECT_ERR_FULL("[]", "C", NULL, false, &env, 10025,
                    "invalid JSON: json: cannot unmarshal array into Go value of type "
                    "server.CreateConsumerRequest");
}

Test(consumer_cfg, strict_unknown_field)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"config\":{\"bogus\":1}}", "C", NULL, false, &env,
                         &r, &e));
    nd_consumer_req_free(&r);
    env.strict = true;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"bogus\":1}}", "C", NULL, false, &env,
                    10025, "invalid JSON: json: unknown field \"bogus\"");
}

Test(consumer_cfg, action_and_case_insensitive_keys)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"action\":\"create\",\"config\":"
                         "{\"ACK_POLICY\":\"explicit\"}}",
                         "C", NULL, false, &env, &r, &e));
    cr_expect_eq(r.action, ND_CACTION_CREATE);
    cr_expect_eq(r.cfg.ack_policy, ND_ACK_EXPLICIT);
    nd_consumer_req_free(&r);
    cr_assert(parse_full("{\"stream_name\":\"S\",\"action\":\"update\"}", "C", NULL, false, &env,
                         &r, &e));
    cr_expect_eq(r.action, ND_CACTION_UPDATE);
    nd_consumer_req_free(&r);
}

/* ---- The create handler's checks ---- */

Test(consumer_cfg, create_handler_errors)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_ERR_FULL("{\"stream_name\":\"T\"}", "C", NULL, false, &env, 10056,
                    "stream name in subject does not match request");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\"}", "a\\b", NULL, false, &env, 10127,
                    "Consumer name can not contain path separators");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{}}", NULL, NULL, true, &env, 10016,
                    "consumer expected to be durable but no durable name set in subject");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{}}", "D", NULL, true, &env, 10018,
                    "consumer expected to be durable but a durable name was not set");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\"}}", "D", NULL, true,
                    &env, 10017, "consumer name in subject does not match durable name in request");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\"}}", "D", NULL, false,
                    &env, 10017, "consumer name in subject does not match durable name in request");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"E\"}}", NULL, NULL,
                    false, &env, 10020,
                    "consumer expected to be ephemeral but a durable name was set in request");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"filter_subjects\":[\"foo.x\"]}}", "C",
                    "foo.x", false, &env, 10137,
                    "consumer with multiple subject filters cannot use subject based API");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"filter_subject\":\"foo.y\"}}", "C",
                    "foo.x", false, &env, 10131,
                    "Consumer create request did not match filtered subject from create subject");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"num_replicas\":3}}", "C", NULL, false,
                    &env, 10074, "replicas > 1 not supported in non-clustered mode");
    /* The subject's filter, matched. */
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full("{\"stream_name\":\"S\",\"config\":{\"filter_subject\":\"foo.x\"}}", "C",
                         "foo.x", false, &env, &r, &e));
    nd_consumer_req_free(&r);
}

Test(consumer_cfg, name_errors)
{
    char body[600], name[300];
    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(body, sizeof body, "{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"%s\"}}",
             name);
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_ERR_FULL(body, name, NULL, true, &env, 10102,
                    "consumer name is too long, maximum allowed is 255");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"a*\"}}", "a*", NULL,
                    true, &env, 10103, "durable name can not contain '.', '*', '>'");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"name\":\"a.b\"}}", NULL, NULL, false,
                    &env, 10103, "durable name can not contain '.', '*', '>'");
}

/* ---- checkConsumerCfg ---- */

Test(consumer_cfg, replicas_errors)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    env.clustered = true;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"num_replicas\":3}}", "C", NULL, false,
                    &env, 10126, "consumer config replica count exceeds parent stream");
    EXPECT_CERR("{\"num_replicas\":-1}", 10133, "replicas count cannot be negative");
}

Test(consumer_cfg, interest_replicas_must_match)
{
    nd_stream_cfg_env_t senv = {.create = true, .clustered = true, .max_stream_bytes = -1};
    const char *sb = "{\"name\":\"S\",\"subjects\":[\"x\"],\"retention\":\"interest\","
                     "\"num_replicas\":3}";
    nd_stream_cfg_t s;
    nd_jserr_t e;
    cr_assert(nd_stream_cfg_parse(sb, strlen(sb), NULL, &senv, &s, &e), "%s", e.desc);
    nd_consumer_cfg_env_t env = {.stream = &s, .clustered = true};
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"num_replicas\":1}}", "C", NULL, false,
                    &env, 10134,
                    "consumer config replicas must match interest retention stream's replicas");
    /* Recovered: allowed. */
    json_t *j = json_pack("{s:s, s:s, s:s, s:i}", "durable_name", "C", "deliver_policy", "all",
                          "ack_policy", "explicit", "num_replicas", 1);
    nd_consumer_cfg_t c;
    cr_expect(nd_consumer_cfg_from_json(j, &env, &c, &e), "%s", e.desc);
    nd_consumer_cfg_free(&c);
    json_decref(j);
    nd_stream_cfg_free(&s);
}

Test(consumer_cfg, config_errors)
{
    EXPECT_CERR("{\"backoff\":[1,2,3],\"max_deliver\":2}", 10116,
                "max deliver is required to be > length of backoff values");
    char desc[4200];
    memset(desc, 'd', 4097);
    desc[4097] = '\0';
    {
        char body[4400];
        snprintf(body, sizeof body, "{\"stream_name\":\"S\",\"config\":{\"description\":\"%s\"}}",
                 desc);
        nd_consumer_cfg_env_t env = env_of(&S);
        EXPECT_ERR_FULL(body, "C", NULL, false, &env, 10107,
                        "consumer description is too long, maximum allowed is 4096");
    }
    EXPECT_CERR("{\"deliver_subject\":\"d.*\"}", 10079, "consumer deliver subject has wildcards");
    EXPECT_CERR("{\"deliver_subject\":\"d..x\"}", 10112, "invalid push consumer deliver subject");
    EXPECT_CERR("{\"deliver_subject\":\"foo.bar\"}", 10081,
                "consumer deliver subject forms a cycle");
    EXPECT_CERR("{\"deliver_subject\":\"bar\"}", 10081, "consumer deliver subject forms a cycle");
    EXPECT_CERR("{\"deliver_subject\":\"dd\",\"max_waiting\":10}", 10080,
                "consumer in push mode can not set max waiting");
    EXPECT_CERR("{\"deliver_subject\":\"dd\",\"max_ack_pending\":10}", 10082,
                "consumer requires ack policy for max ack pending");
    EXPECT_CERR("{\"deliver_subject\":\"dd\",\"idle_heartbeat\":50000000}", 10083,
                "consumer idle heartbeat needs to be >= 100ms");
    EXPECT_CERR("{\"rate_limit_bps\":10}", 10086,
                "consumer in pull mode can not have rate limit set");
    EXPECT_CERR("{\"max_waiting\":-1}", 10087, "consumer max waiting needs to be positive");
    EXPECT_CERR("{\"idle_heartbeat\":1000000000}", 10088,
                "consumer idle heartbeat requires a push based consumer");
    EXPECT_CERR("{\"flow_control\":true}", 10089,
                "consumer flow control requires a push based consumer");
    EXPECT_CERR("{\"max_batch\":-1}", 10114, "consumer max request batch needs to be > 0");
    EXPECT_CERR("{\"max_expires\":10}", 10115, "consumer max request expires needs to be >= 1ms");
    EXPECT_CERR("{\"direct\":true}", 10090, "consumer direct requires a push based consumer");
    EXPECT_CERR("{\"filter_subject\":\"foo.a\",\"filter_subjects\":[\"bar\"]}", 10136,
                "consumer cannot have both FilterSubject and FilterSubjects specified");
    EXPECT_CERR("{\"filter_subject\":\"foo..a\"}", 10052, "invalid subject");
    EXPECT_CERR("{\"filter_subjects\":[\"bar\",\"\"]}", 10139,
                "consumer filter in FilterSubjects cannot be empty");
    EXPECT_CERR("{\"filter_subjects\":[\"a.>\",\"a.b\"]}", 10138,
                "consumer subject filters cannot overlap");
    EXPECT_CERR("{\"filter_subjects\":[\"a\",\"a\"]}", 10138,
                "consumer subject filters cannot overlap");
    EXPECT_CERR("{\"filter_subjects\":[\"a\",\"b..c\"]}", 10052, "invalid subject");
    EXPECT_CERR("{\"deliver_subject\":\"dd\",\"flow_control\":true}", 10108,
                "consumer with flow control also needs heartbeats");
    EXPECT_CERR("{\"deliver_subject\":\"dd\",\"priority_policy\":\"overflow\"}", 10178,
                "priority groups can not be used with push consumers");
    EXPECT_CERR("{\"priority_policy\":\"overflow\"}", 10159,
                "Setting PriorityPolicy requires at least one PriorityGroup to be set");
    EXPECT_CERR("{\"priority_policy\":\"overflow\",\"priority_groups\":[\"\"]}", 10161,
                "Group name cannot be an empty string");
    EXPECT_CERR("{\"priority_policy\":\"overflow\",\"priority_groups\":[\"a b\"]}", 10162,
                "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 "
                "characters");
    EXPECT_CERR("{\"priority_policy\":\"overflow\",\"priority_groups\":[\"abcdefghijklmnopq\"]}",
                10162,
                "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 "
                "characters");
}

Test(consumer_cfg, direct_requires_ephemeral)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    /* Through the legacy durable subject (the new one sets name to the subject's). */
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"C\",\"name\":\"X\"}}",
                    "C", NULL, true, &env, 10132,
                    "Consumer Durable and Name have to be equal if both are provided");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"durable_name\":\"D\","
                    "\"deliver_subject\":\"dd\",\"direct\":true}}",
                    "D", NULL, true, &env, 10091, "consumer direct requires an ephemeral consumer");
}

Test(consumer_cfg, metadata_too_long)
{
    size_t n = 128 * 1024 + 10;
    char *v = malloc(n + 1);
    memset(v, 'm', n);
    v[n] = '\0';
    size_t bl = n + 100;
    char *body = malloc(bl);
    snprintf(body, bl, "{\"stream_name\":\"S\",\"config\":{\"metadata\":{\"k\":\"%s\"}}}", v);
    nd_consumer_cfg_env_t env = env_of(&S);
    EXPECT_ERR_FULL(body, "C", NULL, false, &env, 10135,
                    "consumer metadata exceeds maximum size of 128KB");
    free(body);
    free(v);
}

Test(consumer_cfg, server_limits)
{
    nd_consumer_cfg_env_t env = env_of(&S);
    env.max_ack_pending = 100;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"ack_policy\":\"explicit\","
                    "\"max_ack_pending\":101}}",
                    "C", NULL, false, &env, 10121,
                    "consumer max ack pending exceeds system limit of 100");
    env.max_ack_pending = 0;
    env.max_request_batch = 10;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"max_batch\":11}}", "C", NULL, false, &env,
                    10125, "consumer max request batch exceeds server limit of 10");
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"pedantic\":true,\"config\":{}}", "C", NULL, false,
                    &env, 10157,
                    "pedantic mode: max_request_batch must be set if it's JetStream limits are "
                    "set");
    env.max_request_batch = 0;
    env.inactive_threshold_max = 60000000000LL;
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{\"inactive_threshold\":90000000000}}", "C",
                    NULL, false, &env, 10153,
                    "consumer inactive threshold exceeds system limit of 1m0s");
}

Test(consumer_cfg, workqueue_pull_requires_ack)
{
    nd_stream_cfg_t w = stream("{\"name\":\"S\",\"subjects\":[\"w.>\"],\"retention\":"
                               "\"workqueue\"}");
    nd_consumer_cfg_env_t env = env_of(&w);
    EXPECT_ERR_FULL("{\"stream_name\":\"S\",\"config\":{}}", "C", NULL, false, &env, 10084,
                    "consumer in pull mode requires explicit ack policy on workqueue stream");
    nd_stream_cfg_free(&w);
}

Test(consumer_cfg, deliver_policy_errors)
{
    EXPECT_CERR("{\"opt_start_seq\":5}", 10094,
                "consumer delivery policy is deliver all, but optional start sequence is also set");
    EXPECT_CERR("{\"deliver_policy\":\"last\",\"opt_start_time\":\"2020-01-01T00:00:00Z\"}", 10094,
                "consumer delivery policy is deliver last, but optional start time is also set");
    EXPECT_CERR("{\"deliver_policy\":\"last_per_subject\"}", 10094,
                "consumer delivery policy is deliver last per subject, but optional filter "
                "subject is not set");
    EXPECT_CERR("{\"deliver_policy\":\"new\",\"opt_start_seq\":1}", 10094,
                "consumer delivery policy is deliver new, but optional start sequence is also set");
    EXPECT_CERR("{\"deliver_policy\":\"by_start_sequence\"}", 10094,
                "consumer delivery policy is deliver by start sequence, but optional start "
                "sequence is not set");
    EXPECT_CERR("{\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":1,"
                "\"opt_start_time\":\"2020-01-01T00:00:00Z\"}",
                10094,
                "consumer delivery policy is deliver by start sequence, but optional start time "
                "is also set");
    EXPECT_CERR("{\"deliver_policy\":\"by_start_time\"}", 10094,
                "consumer delivery policy is deliver by start time, but optional start time is "
                "not set");
    EXPECT_CERR("{\"deliver_policy\":\"by_start_time\",\"opt_start_seq\":1,"
                "\"opt_start_time\":\"2020-01-01T00:00:00Z\"}",
                10094,
                "consumer delivery policy is deliver by start time, but optional start start "
                "sequence is also set");
}

Test(consumer_cfg, sampling_errors)
{
    EXPECT_CERR("{\"sample_freq\":\"abc\"}", 10095,
                "failed to parse consumer sampling configuration: strconv.Atoi: parsing "
                "\"abc\": invalid syntax");
    EXPECT_CERR("{\"sample_freq\":\"-5%\"}", 10095,
                "failed to parse consumer sampling configuration: <nil>");
    EXPECT_CERR("{\"sample_freq\":\"99999999999999999999\"}", 10095,
                "failed to parse consumer sampling configuration: strconv.Atoi: parsing "
                "\"99999999999999999999\": value out of range");
}

/* ---- Equality, updates, workqueues, filters ---- */

Test(consumer_cfg, equal_ignores_nats_metadata)
{
    nd_consumer_cfg_t a = cons("{\"durable_name\":\"C\",\"metadata\":{\"k\":\"v\"}}", "C");
    nd_consumer_cfg_t b = cons("{\"durable_name\":\"C\",\"metadata\":{\"k\":\"v\"},"
                               "\"pause_until\":\"0001-01-01T00:00:00Z\"}",
                               "C");
    nd_consumer_cfg_t c = cons("{\"durable_name\":\"C\",\"metadata\":{\"k\":\"w\"}}", "C");
    nd_consumer_cfg_t d = cons("{\"durable_name\":\"C\",\"metadata\":{\"k\":\"v\"}}", "C");
    json_object_set_new(json_object_get(d.json, "metadata"), "_nats.req.level", json_string("1"));
    cr_expect(!nd_consumer_cfg_equal(&a, &b)); /* pause_until differs */
    cr_expect(!nd_consumer_cfg_equal(&a, &c));
    cr_expect(nd_consumer_cfg_equal(&a, &d));
    nd_consumer_cfg_free(&a);
    nd_consumer_cfg_free(&b);
    nd_consumer_cfg_free(&c);
    nd_consumer_cfg_free(&d);
}

#define EXPECT_UPDATE(o, n, ecode, edesc)                                                          \
    do {                                                                                           \
        nd_consumer_cfg_t a_ = cons(o, "C"), b_ = cons(n, "C");                                    \
        nd_jserr_t e_ = {0};                                                                       \
        bool ok_ = nd_consumer_cfg_check_update(&a_, &b_, &e_);                                    \
        if ((ecode) == 0)                                                                          \
            cr_expect(ok_, "%s -> %s: %s", o, n, e_.desc);                                         \
        else {                                                                                     \
            cr_expect(!ok_, "%s -> %s accepted", o, n);                                            \
            cr_expect_eq(e_.err_code, ecode, "%s -> %s: %d %s", o, n, e_.err_code, e_.desc);       \
            cr_expect_str_eq(e_.desc, edesc);                                                      \
        }                                                                                          \
        nd_consumer_cfg_free(&a_);                                                                 \
        nd_consumer_cfg_free(&b_);                                                                 \
    } while (0)

Test(consumer_cfg, update_rules)
{
    EXPECT_UPDATE("{}", "{}", 0, "");
    EXPECT_UPDATE("{}", "{\"description\":\"x\",\"max_ack_pending\":5,\"filter_subject\":\"bar\"}",
                  0, "");
    EXPECT_UPDATE("{}", "{\"deliver_policy\":\"new\"}", 10012, "deliver policy can not be updated");
    EXPECT_UPDATE("{\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":1}",
                  "{\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":2}", 10012,
                  "start sequence can not be updated");
    EXPECT_UPDATE("{\"deliver_policy\":\"by_start_time\",\"opt_start_time\":"
                  "\"2020-01-01T00:00:00Z\"}",
                  "{\"deliver_policy\":\"by_start_time\",\"opt_start_time\":"
                  "\"2020-01-01T02:00:00+02:00\"}",
                  0, "");
    EXPECT_UPDATE("{\"deliver_policy\":\"by_start_time\",\"opt_start_time\":"
                  "\"2020-01-01T00:00:00Z\"}",
                  "{\"deliver_policy\":\"by_start_time\",\"opt_start_time\":"
                  "\"2020-01-01T00:00:01Z\"}",
                  10012, "start time can not be updated");
    EXPECT_UPDATE("{}", "{\"ack_policy\":\"explicit\"}", 10012, "ack policy can not be updated");
    EXPECT_UPDATE("{}", "{\"replay_policy\":\"original\"}", 10012,
                  "replay policy can not be updated");
    EXPECT_UPDATE("{\"deliver_subject\":\"dd\",\"idle_heartbeat\":1000000000}",
                  "{\"deliver_subject\":\"dd\",\"idle_heartbeat\":2000000000}", 10012,
                  "heart beats can not be updated");
    EXPECT_UPDATE("{\"deliver_subject\":\"dd\",\"idle_heartbeat\":1000000000}",
                  "{\"deliver_subject\":\"dd\",\"idle_heartbeat\":1000000000,"
                  "\"flow_control\":true}",
                  10012, "flow control can not be updated");
    EXPECT_UPDATE("{}", "{\"deliver_subject\":\"dd\",\"max_waiting\":0}", 10012,
                  "can not update pull consumer to push based");
    EXPECT_UPDATE("{\"deliver_subject\":\"dd\"}", "{}", 10012,
                  "can not update push consumer to pull based");
    EXPECT_UPDATE("{\"deliver_subject\":\"dd\"}", "{\"deliver_subject\":\"ee\"}", 0, "");
    EXPECT_UPDATE("{}", "{\"max_waiting\":10}", 10012, "max waiting can not be updated");
}

static nd_consumer_cfg_t
wq(const nd_stream_cfg_t *w, const char *cfg, const char *name)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"stream_name\":\"S\",\"config\":%s}", cfg);
    nd_consumer_cfg_env_t env = env_of(w);
    nd_consumer_req_t r;
    nd_jserr_t e;
    cr_assert(parse_full(body, name, NULL, false, &env, &r, &e), "%s: %s", body, e.desc);
    return r.cfg;
}

Test(consumer_cfg, workqueue_rules)
{
    nd_stream_cfg_t w = stream("{\"name\":\"S\",\"subjects\":[\"w.>\"],\"retention\":"
                               "\"workqueue\"}");
    nd_consumer_cfg_t all = wq(&w, "{\"ack_policy\":\"all\"}", "A");
    nd_consumer_cfg_t un = wq(&w, "{\"ack_policy\":\"explicit\"}", "U");
    nd_consumer_cfg_t f1 =
        wq(&w, "{\"ack_policy\":\"explicit\",\"filter_subject\":\"w.a.*\"}", "F1");
    nd_consumer_cfg_t f2 = wq(&w, "{\"ack_policy\":\"explicit\",\"filter_subject\":\"w.>\"}", "F2");
    nd_consumer_cfg_t f3 = wq(&w,
                              "{\"ack_policy\":\"explicit\",\"filter_subjects\":[\"w.b\","
                              "\"w.c\"]}",
                              "F3");
    nd_consumer_cfg_t nw = wq(&w,
                              "{\"ack_policy\":\"explicit\",\"filter_subject\":\"w.d\","
                              "\"deliver_policy\":\"new\"}",
                              "N");
    nd_jserr_t e;
    cr_expect(!nd_consumer_cfg_check_workqueue(&all, NULL, 0, &e));
    cr_expect_eq(e.err_code, 10098);
    cr_expect_str_eq(e.desc, "workqueue stream requires explicit ack");
    cr_expect(nd_consumer_cfg_check_workqueue(&un, NULL, 0, &e), "%s", e.desc);
    const nd_consumer_cfg_t *o1[] = {&f1};
    cr_expect(!nd_consumer_cfg_check_workqueue(&un, o1, 1, &e));
    cr_expect_eq(e.err_code, 10099);
    cr_expect_str_eq(e.desc, "multiple non-filtered consumers not allowed on workqueue stream");
    cr_expect(!nd_consumer_cfg_check_workqueue(&f2, o1, 1, &e));
    cr_expect_eq(e.err_code, 10100);
    cr_expect_str_eq(e.desc, "filtered consumer not unique on workqueue stream");
    const nd_consumer_cfg_t *ou[] = {&un};
    cr_expect(!nd_consumer_cfg_check_workqueue(&f1, ou, 1, &e));
    cr_expect_eq(e.err_code, 10100);
    const nd_consumer_cfg_t *o13[] = {&f1, &f3};
    cr_expect(nd_consumer_cfg_check_workqueue(&nw, NULL, 0, &e) == false);
    cr_expect_eq(e.err_code, 10101);
    cr_expect_str_eq(e.desc, "consumer must be deliver all on workqueue stream");
    nd_consumer_cfg_t f4 = wq(&w, "{\"ack_policy\":\"explicit\",\"filter_subject\":\"w.e\"}", "F4");
    cr_expect(nd_consumer_cfg_check_workqueue(&f4, o13, 2, &e), "%s", e.desc);
    nd_consumer_cfg_t f5 = wq(&w, "{\"ack_policy\":\"explicit\",\"filter_subject\":\"w.c\"}", "F5");
    cr_expect(!nd_consumer_cfg_check_workqueue(&f5, o13, 2, &e));
    cr_expect_eq(e.err_code, 10100);
    nd_consumer_cfg_free(&all);
    nd_consumer_cfg_free(&un);
    nd_consumer_cfg_free(&f1);
    nd_consumer_cfg_free(&f2);
    nd_consumer_cfg_free(&f3);
    nd_consumer_cfg_free(&f4);
    nd_consumer_cfg_free(&f5);
    nd_consumer_cfg_free(&nw);
    nd_stream_cfg_free(&w);
}

static bool
m(const nd_consumer_cfg_t *c, const char *s)
{
    return nd_consumer_cfg_matches(c, s, strlen(s));
}

Test(consumer_cfg, filters_match)
{
    nd_consumer_cfg_t none = cons("{}", "A");
    nd_consumer_cfg_t one = cons("{\"filter_subject\":\"foo.*\"}", "B");
    nd_consumer_cfg_t many = cons("{\"filter_subjects\":[\"foo.a.>\",\"bar\"]}", "C");
    cr_expect(m(&none, "anything.at.all"));
    cr_expect(m(&one, "foo.x"));
    cr_expect(!m(&one, "foo.x.y"));
    cr_expect(!m(&one, "bar"));
    cr_expect(m(&many, "foo.a.b"));
    cr_expect(m(&many, "foo.a.b.c"));
    cr_expect(!m(&many, "foo.a"));
    cr_expect(m(&many, "bar"));
    cr_expect(!m(&many, "bar.x"));
    nd_consumer_cfg_free(&none);
    nd_consumer_cfg_free(&one);
    nd_consumer_cfg_free(&many);
}
