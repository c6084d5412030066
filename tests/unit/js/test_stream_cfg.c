/* Stream configuration (src/js/stream_cfg.c): nats-server 2.11's defaults, checks, error codes
 * and texts, canonical JSON, idempotent equality and update rules. The expected texts are
 * nats-server's (server/stream.go checkStreamCfg, configUpdateCheck, jetstream_api.go); the
 * default JSON was checked against nats-server 2.9.10 for the fields it has. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "js/apijson.h"
#include "js/stream_cfg.h"

static nd_stream_cfg_env_t
env_create(void)
{
    return (nd_stream_cfg_env_t){.create = true, .max_stream_bytes = -1};
}

static bool
parse_env(const char *body, const char *name, const nd_stream_cfg_env_t *env, nd_stream_cfg_t *c,
          nd_jserr_t *e)
{
    memset(e, 0, sizeof *e);
    return nd_stream_cfg_parse(body, strlen(body), name, env, c, e);
}

static bool
parse(const char *body, nd_stream_cfg_t *c, nd_jserr_t *e)
{
    nd_stream_cfg_env_t env = env_create();
    return parse_env(body, "S", &env, c, e);
}

static char *
dump(const nd_stream_cfg_t *c)
{
    return json_dumps(c->json, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

#define EXPECT_ERR_ENV(body, name, env, ecode, edesc)                                              \
    do {                                                                                           \
        nd_stream_cfg_t c_;                                                                        \
        nd_jserr_t e_;                                                                             \
        bool ok_ = parse_env(body, name, env, &c_, &e_);                                           \
        if (ok_)                                                                                   \
            nd_stream_cfg_free(&c_);                                                               \
        cr_assert(!ok_, "accepted: %s", body);                                                     \
        cr_expect_eq(e_.err_code, ecode, "%s: err_code %d (%s)", body, e_.err_code, e_.desc);      \
        cr_expect_str_eq(e_.desc, edesc, "%s: got [%s]", body, e_.desc);                           \
    } while (0)

#define EXPECT_ERR(body, ecode, edesc)                                                             \
    do {                                                                                           \
        nd_stream_cfg_env_t env_ = env_create();                                                   \
        EXPECT_ERR_ENV(body, "S", &env_, ecode, edesc);                                            \
    } while (0)

#define EXPECT_JSON(body, expected)                                                                \
    do {                                                                                           \
        nd_stream_cfg_t c_;                                                                        \
        nd_jserr_t e_;                                                                             \
        cr_assert(parse(body, &c_, &e_), "%s: %d %s", body, e_.err_code, e_.desc);                 \
        char *s_ = dump(&c_);                                                                      \
        cr_expect_str_eq(s_, expected, "%s", body);                                                \
        free(s_);                                                                                  \
        nd_stream_cfg_free(&c_);                                                                   \
    } while (0)

#define DEFAULTS_TAIL                                                                              \
    "\"compression\":\"none\",\"allow_direct\":false,\"mirror_direct\":false,"                     \
    "\"sealed\":false,\"deny_delete\":false,\"deny_purge\":false,\"allow_rollup_hdrs\":false,"     \
    "\"consumer_limits\":{},\"allow_msg_ttl\":false,\"metadata\":{\"_nats.req.level\":\"0\"}}"

/* ---- Defaults and the canonical JSON ---- */

Test(stream_cfg, defaults_json)
{
    EXPECT_JSON(
        "{\"name\":\"S\"}",
        "{\"name\":\"S\",\"subjects\":[\"S\"],\"retention\":\"limits\",\"max_consumers\":-1,"
        "\"max_msgs\":-1,\"max_bytes\":-1,\"max_age\":0,\"max_msgs_per_subject\":-1,"
        "\"max_msg_size\":-1,\"discard\":\"old\",\"storage\":\"file\",\"num_replicas\":1,"
        "\"duplicate_window\":120000000000," DEFAULTS_TAIL);
}

Test(stream_cfg, defaults_fields)
{
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\"}", &c, &e));
    cr_expect_str_eq(c.name, "S");
    cr_assert_eq(c.nsubjects, 1);
    cr_expect_str_eq(c.subjects[0], "S");
    cr_expect_eq(c.retention, ND_RETENTION_LIMITS);
    cr_expect_eq(c.storage, ND_STORAGE_FILE);
    cr_expect_eq(c.max_consumers, -1);
    cr_expect_eq(c.max_msgs, -1);
    cr_expect_eq(c.max_bytes, -1);
    cr_expect_eq(c.max_msgs_per_subject, -1);
    cr_expect_eq(c.max_msg_size, -1);
    cr_expect_eq(c.max_age_ns, 0);
    cr_expect_eq(c.num_replicas, 1);
    cr_expect_eq(c.duplicate_window_ns, 120000000000LL);
    cr_expect_eq(c.discard, ND_DISCARD_OLD);
    cr_expect_eq(c.compression, ND_STORE_NONE);
    cr_expect(!c.has_mirror);
    cr_expect_null(c.xform_src);
    cr_expect_null(c.republish_dest);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, full_json_order)
{
    EXPECT_JSON(
        "{\"metadata\":{\"b\":\"2\",\"a\":\"1\"},\"allow_msg_ttl\":true,\"name\":\"S\","
        "\"description\":\"d\",\"subjects\":[\"a.>\",\"b\"],\"retention\":\"interest\","
        "\"max_consumers\":10,\"max_msgs\":100,\"max_bytes\":1000,\"max_age\":3600000000000,"
        "\"max_msgs_per_subject\":5,\"max_msg_size\":1024,\"discard\":\"new\","
        "\"storage\":\"memory\",\"num_replicas\":1,\"no_ack\":true,\"duplicate_window\":"
        "60000000000,\"placement\":{\"cluster\":\"c1\",\"tags\":[\"t\"]},\"compression\":\"s2\","
        "\"first_seq\":42,\"subject_transform\":{\"src\":\"a.>\",\"dest\":\"x.>\"},"
        "\"republish\":{\"src\":\"a.>\",\"dest\":\"r.>\",\"headers_only\":true},"
        "\"allow_direct\":true,\"discard_new_per_subject\":true,\"deny_delete\":true,"
        "\"consumer_limits\":{\"inactive_threshold\":5000000000,\"max_ack_pending\":10},"
        "\"subject_delete_marker_ttl\":2000000000}",
        "{\"name\":\"S\",\"description\":\"d\",\"subjects\":[\"a.>\",\"b\"],\"retention\":"
        "\"interest\",\"max_consumers\":10,\"max_msgs\":100,\"max_bytes\":1000,\"max_age\":"
        "3600000000000,\"max_msgs_per_subject\":5,\"max_msg_size\":1024,\"discard\":\"new\","
        "\"storage\":\"memory\",\"num_replicas\":1,\"no_ack\":true,\"duplicate_window\":"
        "60000000000,\"placement\":{\"cluster\":\"c1\",\"tags\":[\"t\"]},\"compression\":\"s2\","
        "\"first_seq\":42,\"subject_transform\":{\"src\":\"a.>\",\"dest\":\"x.>\"},"
        "\"republish\":{\"src\":\"a.>\",\"dest\":\"r.>\",\"headers_only\":true},"
        "\"allow_direct\":true,\"mirror_direct\":false,\"discard_new_per_subject\":true,"
        "\"sealed\":false,\"deny_delete\":true,\"deny_purge\":false,\"allow_rollup_hdrs\":true,"
        "\"consumer_limits\":{\"inactive_threshold\":5000000000,\"max_ack_pending\":10},"
        "\"allow_msg_ttl\":true,\"subject_delete_marker_ttl\":2000000000,"
        "\"metadata\":{\"_nats.req.level\":\"1\",\"a\":\"1\",\"b\":\"2\"}}");
}

Test(stream_cfg, dup_window_capped_by_max_age)
{
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"max_age\":1000000000}", &c, &e));
    cr_expect_eq(c.duplicate_window_ns, 1000000000LL);
    nd_stream_cfg_free(&c);
    cr_assert(parse("{\"name\":\"S\",\"max_age\":86400000000000}", &c, &e));
    cr_expect_eq(c.duplicate_window_ns, 120000000000LL);
    nd_stream_cfg_free(&c);
    /* The server's limit lowers the default. */
    nd_stream_cfg_env_t env = env_create();
    env.max_dup_window_ns = 30000000000LL;
    cr_assert(parse_env("{\"name\":\"S\"}", "S", &env, &c, &e));
    cr_expect_eq(c.duplicate_window_ns, 30000000000LL);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, mirror_and_sources_have_no_default_subjects)
{
    EXPECT_JSON("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"}}",
                "{\"name\":\"S\",\"retention\":\"limits\",\"max_consumers\":-1,\"max_msgs\":-1,"
                "\"max_bytes\":-1,\"max_age\":0,\"max_msgs_per_subject\":-1,\"max_msg_size\":-1,"
                "\"discard\":\"old\",\"storage\":\"file\",\"num_replicas\":1,"
                "\"mirror\":{\"name\":\"O\"}," DEFAULTS_TAIL);
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"filter_subject\":\"x.*\"},"
                    "{\"name\":\"B\",\"external\":{\"api\":\"$JS.hub.API\",\"deliver\":\"d\"}}]}",
                    &c, &e),
              "%s", e.desc);
    cr_expect_eq(c.nsubjects, 0);
    cr_expect_eq(c.nsources, 2);
    cr_expect_eq(c.duplicate_window_ns, 120000000000LL);
    char *s = json_dumps(json_object_get(c.json, "sources"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_expect_str_eq(s, "[{\"name\":\"A\",\"filter_subject\":\"x.*\"},{\"name\":\"B\","
                        "\"external\":{\"api\":\"$JS.hub.API\",\"deliver\":\"d\"}}]");
    free(s);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, unknown_fields_and_case)
{
    /* Unknown fields (2.12's among them) are dropped; Go matches keys case-insensitively. */
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(
        parse("{\"NAME\":\"S\",\"Max_Msgs\":5,\"bogus\":1,\"allow_msg_counter\":true}", &c, &e));
    cr_expect_eq(c.max_msgs, 5);
    cr_expect_null(json_object_get(c.json, "allow_msg_counter"));
    nd_stream_cfg_free(&c);
    nd_stream_cfg_env_t env = env_create();
    env.strict = true;
    EXPECT_ERR_ENV("{\"name\":\"S\",\"bogus\":1}", "S", &env, 10025,
                   "invalid JSON: json: unknown field \"bogus\"");
    /* null leaves a field alone. */
    cr_assert(parse("{\"name\":\"S\",\"max_msgs\":null,\"subjects\":null}", &c, &e));
    cr_expect_eq(c.max_msgs, -1);
    nd_stream_cfg_free(&c);
}

/* ---- JSON errors ---- */

Test(stream_cfg, json_errors)
{
    EXPECT_ERR("{\"name\":\"S\",", 10025, "invalid JSON: unexpected end of JSON input");
    EXPECT_ERR("{\"name\":\"S\"}x", 10025,
               "invalid JSON: invalid character 'x' after top-level value");
    EXPECT_ERR("{name:1}", 10025,
               "invalid JSON: invalid character 'n' looking for beginning of object key string");
    EXPECT_ERR("{\"name\" 1}", 10025, "invalid JSON: invalid character '1' after object key");
    EXPECT_ERR("{\"name\":\"S\" \"x\":1}", 10025,
               "invalid JSON: invalid character '\"' after object key:value pair");
    EXPECT_ERR("{\"name\":tru}", 10025,
               "invalid JSON: invalid character '}' in literal true (expecting 'e')");
    EXPECT_ERR("{\"max_msgs\":-}", 10025, "invalid JSON: invalid character '}' in numeric literal");
    EXPECT_ERR("[1]", 10025,
               "invalid JSON: json: cannot unmarshal array into Go value of type "
               "server.StreamConfigRequest");
    EXPECT_ERR("{\"name\":\"S\",\"max_msgs\":\"x\"}", 10025,
               "invalid JSON: json: cannot unmarshal string into Go struct field "
               "StreamConfigRequest.max_msgs of type int64");
    EXPECT_ERR("{\"name\":\"S\",\"max_msgs\":1.5}", 10025,
               "invalid JSON: json: cannot unmarshal number 1.5 into Go struct field "
               "StreamConfigRequest.max_msgs of type int64");
    EXPECT_ERR("{\"name\":\"S\",\"max_msg_size\":3000000000}", 10025,
               "invalid JSON: json: cannot unmarshal number 3000000000 into Go struct field "
               "StreamConfigRequest.max_msg_size of type int32");
    EXPECT_ERR("{\"name\":\"S\",\"max_age\":\"1s\"}", 10025,
               "invalid JSON: json: cannot unmarshal string into Go struct field "
               "StreamConfigRequest.max_age of type time.Duration");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":\"a\"}", 10025,
               "invalid JSON: json: cannot unmarshal string into Go struct field "
               "StreamConfigRequest.subjects of type []string");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":5}}", 10025,
               "invalid JSON: json: cannot unmarshal number into Go struct field "
               "StreamSource.mirror.name of type string");
    EXPECT_ERR("{\"name\":\"S\",\"no_ack\":1}", 10025,
               "invalid JSON: json: cannot unmarshal number into Go struct field "
               "StreamConfigRequest.no_ack of type bool");
    EXPECT_ERR("{\"name\":\"S\",\"retention\":\"foo\"}", 10025,
               "invalid JSON: can not unmarshal \"\\\"foo\\\"\"");
    EXPECT_ERR("{\"name\":\"S\",\"storage\":null}", 10025,
               "invalid JSON: can not unmarshal \"null\"");
    EXPECT_ERR("{\"name\":\"S\",\"compression\":\"lz4\"}", 10025,
               "invalid JSON: unknown compression algorithm");
    /* An unmarshaller's error wins over an earlier type error. */
    EXPECT_ERR("{\"max_msgs\":\"x\",\"discard\":\"bad\"}", 10025,
               "invalid JSON: can not unmarshal \"\\\"bad\\\"\"");
    nd_stream_cfg_env_t env = env_create();
    env.strict = true;
    EXPECT_ERR_ENV("{\"name\":\"S\",", "S", &env, 10025, "invalid JSON: unexpected EOF");
    EXPECT_ERR_ENV(
        "{\"name\":x}", "S", &env, 10025,
        "invalid JSON: invalid character 'x' looking for beginning of value at offset 9");
}

Test(stream_cfg, enums)
{
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"retention\":\"workqueue\",\"discard\":\"NEW\","
                    "\"storage\":\"memory\"}",
                    &c, &e));
    cr_expect_eq(c.retention, ND_RETENTION_WORKQUEUE);
    cr_expect_eq(c.discard, ND_DISCARD_NEW);
    cr_expect_eq(c.storage, ND_STORAGE_MEMORY);
    cr_expect_str_eq(json_string_value(json_object_get(c.json, "discard")), "new");
    nd_stream_cfg_free(&c);
    EXPECT_ERR("{\"name\":\"S\",\"storage\":\"any\"}", 10052,
               "storage type \"any\" is not supported for streams");
}

/* ---- The create handler's checks ---- */

Test(stream_cfg, name_mismatch_and_create_checks)
{
    EXPECT_ERR("", 10056, "stream name in subject does not match request");
    EXPECT_ERR("{}", 10056, "stream name in subject does not match request");
    EXPECT_ERR("{\"name\":\"T\"}", 10056, "stream name in subject does not match request");
    nd_stream_cfg_env_t env = env_create();
    EXPECT_ERR_ENV("{\"name\":\"a/b\"}", "a/b", &env, 10128,
                   "Stream name can not contain path separators");
    EXPECT_ERR("{\"name\":\"S\",\"sealed\":true}", 10052,
               "stream configuration for create can not be sealed");
    EXPECT_ERR("{\"name\":\"S\",\"mirror_direct\":true}", 10052,
               "stream has no mirror but does have mirror direct");
    EXPECT_ERR("{\"name\":\"S\",\"num_replicas\":3}", 10074,
               "replicas > 1 not supported in non-clustered mode");
    env.clustered = true;
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse_env("{\"name\":\"S\",\"num_replicas\":3}", "S", &env, &c, &e));
    cr_expect_eq(c.num_replicas, 3);
    nd_stream_cfg_free(&c);
    /* An update compares the name after the config checks. */
    nd_stream_cfg_env_t upd = {.max_stream_bytes = -1};
    EXPECT_ERR_ENV("{}", "S", &upd, 10052,
                   "stream name is required and can not contain '.', '*', '>'");
    EXPECT_ERR_ENV("{\"name\":\"T\"}", "S", &upd, 10056,
                   "stream name in subject does not match request");
}

/* ---- checkStreamCfg ---- */

Test(stream_cfg, name_description_metadata)
{
    nd_stream_cfg_env_t env = env_create();
    EXPECT_ERR_ENV("{\"name\":\"a.b\"}", "a.b", &env, 10052,
                   "stream name is required and can not contain '.', '*', '>'");
    EXPECT_ERR_ENV("{\"name\":\"a b\"}", "a b", &env, 10052,
                   "stream name is required and can not contain '.', '*', '>'");
    EXPECT_ERR_ENV("{\"name\":\"a*\"}", "a*", &env, 10052,
                   "stream name is required and can not contain '.', '*', '>'");
    char name[300], body[400];
    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    EXPECT_ERR_ENV(body, name, &env, 10052, "stream name is too long, maximum allowed is 255");
    name[255] = '\0';
    snprintf(body, sizeof body, "{\"name\":\"%s\"}", name);
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse_env(body, name, &env, &c, &e));
    nd_stream_cfg_free(&c);

    char *big = malloc(6000);
    char *d = malloc(5000);
    memset(d, 'd', 4097);
    d[4097] = '\0';
    snprintf(big, 6000, "{\"name\":\"S\",\"description\":\"%s\"}", d);
    EXPECT_ERR(big, 10052, "stream description is too long, maximum allowed is 4096");
    free(big);
    free(d);

    big = malloc(140 * 1024);
    d = malloc(130 * 1024);
    memset(d, 'm', 128 * 1024);
    d[128 * 1024] = '\0';
    snprintf(big, 140 * 1024, "{\"name\":\"S\",\"metadata\":{\"k\":\"%s\"}}", d);
    EXPECT_ERR(big, 10052, "stream metadata exceeds maximum size of 131072 bytes");
    free(big);
    free(d);
}

Test(stream_cfg, replicas_and_durations)
{
    EXPECT_ERR("{\"name\":\"S\",\"num_replicas\":6}", 10052, "maximum replicas is 5");
    EXPECT_ERR("{\"name\":\"S\",\"num_replicas\":-1}", 10133, "replicas count cannot be negative");
    EXPECT_ERR("{\"name\":\"S\",\"max_age\":50000000}", 10052, "max age needs to be >= 100ms");
    EXPECT_ERR("{\"name\":\"S\",\"duplicate_window\":-5}", 10052,
               "duplicates window can not be negative");
    EXPECT_ERR("{\"name\":\"S\",\"max_age\":1000000000,\"duplicate_window\":2000000000}", 10052,
               "duplicates window can not be larger then max age");
    EXPECT_ERR("{\"name\":\"S\",\"duplicate_window\":50000000}", 10052,
               "duplicates window needs to be >= 100ms");
    nd_stream_cfg_env_t env = env_create();
    env.max_dup_window_ns = 90000000000LL;
    EXPECT_ERR_ENV("{\"name\":\"S\",\"duplicate_window\":100000000000}", "S", &env, 10052,
                   "duplicates window can not be larger then server limit of 1m30s");
}

Test(stream_cfg, pedantic)
{
    EXPECT_ERR("{\"name\":\"S\",\"pedantic\":true,\"max_age\":1000000000}", 10157,
               "pedantic mode: pedantic mode: duplicate window cannot be bigger than max age");
    nd_stream_cfg_env_t env = env_create();
    env.max_dup_window_ns = 60000000000LL;
    EXPECT_ERR_ENV("{\"name\":\"S\",\"pedantic\":true}", "S", &env, 10157,
                   "pedantic mode: pedantic mode: duplicate window limits are higher than current "
                   "limits");
    EXPECT_ERR("{\"name\":\"S\",\"pedantic\":true,\"subjects\":[\"a\"],\"republish\":{\"dest\":"
               "\"b.>\"}}",
               10157, "pedantic mode: pedantic mode: republish source can not be empty");
    EXPECT_ERR("{\"name\":\"S\",\"pedantic\":true,\"subject_delete_marker_ttl\":1000000000}", 10052,
               "subject delete marker cannot be set if message TTLs are disabled");
    EXPECT_ERR("{\"name\":\"S\",\"pedantic\":true,\"allow_msg_ttl\":true,"
               "\"subject_delete_marker_ttl\":1000000000}",
               10052, "subject delete marker cannot be set if roll-ups are disabled");
    /* pedantic is the request's, not part of the config */
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"pedantic\":true}", &c, &e), "%s", e.desc);
    cr_expect_null(json_object_get(c.json, "pedantic"));
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, purge_rollup_discard_new_per)
{
    EXPECT_ERR("{\"name\":\"S\",\"deny_purge\":true,\"allow_rollup_hdrs\":true}", 10052,
               "roll-ups require the purge permission");
    EXPECT_ERR("{\"name\":\"S\",\"discard_new_per_subject\":true}", 10052,
               "discard new per subject requires discard new policy to be set");
    EXPECT_ERR("{\"name\":\"S\",\"discard_new_per_subject\":true,\"discard\":\"new\"}", 10052,
               "discard new per subject requires max msgs per subject > 0");
}

Test(stream_cfg, subject_delete_markers)
{
    EXPECT_ERR("{\"name\":\"S\",\"subject_delete_marker_ttl\":500000000}", 10052,
               "subject delete marker TTL must be at least 1 second");
    EXPECT_ERR("{\"name\":\"S\",\"subject_delete_marker_ttl\":-1}", 10052,
               "subject delete marker TTL must not be negative");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"},\"subject_delete_marker_ttl\":"
               "1000000000}",
               10052, "subject delete markers forbidden on mirrors");
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"deny_purge\":true,\"subject_delete_marker_ttl\":1000000000}",
                    &c, &e),
              "%s", e.desc);
    cr_expect(c.allow_msg_ttl);
    cr_expect(c.allow_rollup);
    cr_expect(!c.deny_purge);
    cr_expect_eq(c.subject_delete_marker_ttl_ns, 1000000000LL);
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(c.json, "metadata"), "_nats.req.level")),
        "1");
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, mirror_rules)
{
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"},\"first_seq\":5}", 10143,
               "stream mirrors can not have first sequence configured");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"},\"subjects\":[\"a\"]}", 10034,
               "stream mirrors can not contain subjects");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"},\"sources\":[{\"name\":\"A\"}]}", 10031,
               "stream mirrors can not also contain other sources");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"filter_subject\":\"a\","
               "\"subject_transforms\":[{\"src\":\"b\",\"dest\":\"c\"}]}}",
               10150,
               "mirror with multiple subject transforms cannot also have a single subject filter");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"subject_transforms\":[{\"src\":"
               "\"a..b\"}]}}",
               10151, "mirror transform source: invalid subject a..b");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"subject_transforms\":[{\"src\":"
               "\"a.*\"},{\"src\":\"a.b\"}]}}",
               10152, "mirror subject filters can not overlap");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O.x\"}}", 10142,
               "mirrored stream name is invalid");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"filter_subject\":\"a..b\"}}", 10049,
               "subject filter 'a..b' for the mirror invalid subject");
    /* External mirrors: the name is not checked, the prefixes are. */
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"external\":{\"api\":\"$JS.API\","
               "\"deliver\":\"\"}}}",
               10021, "stream external api prefix $JS.API must not overlap with $JS.API");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"external\":{\"api\":\"x.*\"}}}", 10052,
               "stream external api prefix \"x.*\" must be a valid subject without wildcards");
    EXPECT_ERR("{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"external\":{\"deliver\":\"d.>\"}}}",
               10024, "stream external delivery prefix d.> must not contain wildcards");
}

Test(stream_cfg, source_rules)
{
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[null]}", 10141, "sourced stream name is invalid");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"\"}]}", 10141,
               "sourced stream name is invalid");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"A\"},{\"name\":\"A\"}]}", 10140,
               "duplicate source configuration detected");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"filter_subject\":\"a\","
               "\"subject_transforms\":[{\"src\":\"b\"}]}]}",
               10144,
               "source with multiple subject transforms cannot also have a single subject filter");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"subject_transforms\":[{\"src\":"
               "\"a.>.b\"}]}]}",
               10145, "source transform source: invalid subject a.>.b");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"subject_transforms\":[{\"src\":"
               "\"a.>\"},{\"src\":\"a.b\"}]}]}",
               10147, "source filters can not overlap");
    EXPECT_ERR("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"filter_subject\":\"a..\"}]}", 10049,
               "subject filter 'a..' for the source: invalid subject");
    nd_stream_cfg_t c;
    nd_jserr_t e;
    /* The same name with different filters is not a duplicate. */
    cr_assert(parse("{\"name\":\"S\",\"sources\":[{\"name\":\"A\",\"filter_subject\":\"a\"},"
                    "{\"name\":\"A\",\"filter_subject\":\"b\"}]}",
                    &c, &e),
              "%s", e.desc);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, subjects)
{
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a..b\"]}", 10052, "invalid subject");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a\",\"a\"]}", 10052, "duplicate subjects detected");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\">\"]}", 10052,
               "capturing all subjects requires no-ack to be true");
    nd_stream_cfg_env_t env = env_create();
    env.clustered = true;
    EXPECT_ERR_ENV("{\"name\":\"S\",\"subjects\":[\">\"],\"no_ack\":true,\"num_replicas\":3}", "S",
                   &env, 10052, "capturing all subjects requires replicas of 1");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"$JS.API.>\"]}", 10052,
               "subjects that overlap with jetstream api require no-ack to be true");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"*.API.x\"]}", 10052,
               "subjects that overlap with jetstream api require no-ack to be true");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"$SYS.>\"]}", 10052,
               "subjects that overlap with system api require no-ack to be true");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a.*\",\"a.b\"]}", 10052,
               "subject \"a.*\" overlaps with \"a.b\"");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a.b\",\"a.>\"]}", 10052,
               "subject \"a.b\" overlaps with \"a.>\"");
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\"$JS.EVENT.x.>\",\"$SYS.ACCOUNT.>\"]}", &c, &e),
              "%s", e.desc);
    nd_stream_cfg_free(&c);
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\">\"],\"no_ack\":true}", &c, &e), "%s", e.desc);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, account_limits)
{
    nd_stream_cfg_env_t env = env_create();
    env.max_bytes_required = true;
    EXPECT_ERR_ENV("{\"name\":\"S\"}", "S", &env, 10113,
                   "account requires a stream config to have max bytes set");
    env.max_bytes_required = false;
    env.max_stream_bytes = 1000;
    EXPECT_ERR_ENV("{\"name\":\"S\",\"max_bytes\":2000}", "S", &env, 10122,
                   "stream max bytes exceeds account limit max stream bytes");
}

Test(stream_cfg, transforms_and_republish)
{
    EXPECT_ERR("{\"name\":\"S\",\"subject_transform\":{\"src\":\"a..\",\"dest\":\"b\"}}", 10155,
               "stream transform source: invalid subject a..");
    EXPECT_ERR(
        "{\"name\":\"S\",\"subject_transform\":{\"src\":\"a.*\",\"dest\":\"b.$2\"}}", 10156,
        "stream transform: invalid mapping destination: wildcard index out of range in $2: [2]");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a.>\"],\"republish\":{\"src\":\">\",\"dest\":"
               "\"a.b\"}}",
               10052, "stream configuration for republish destination forms a cycle");
    EXPECT_ERR("{\"name\":\"S\",\"subjects\":[\"a.>\"],\"republish\":{\"src\":\"a.*\",\"dest\":"
               "\"r.$3\"}}",
               10052,
               "stream configuration for republish with transform from 'a.*' to 'r.$3' not valid");
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(
        parse("{\"name\":\"S\",\"subjects\":[\"a.>\"],\"republish\":{\"dest\":\"r.>\"}}", &c, &e),
        "%s", e.desc);
    cr_expect_str_eq(c.republish_src, ">");
    cr_expect_str_eq(c.republish_dest, "r.>");
    nd_stream_cfg_free(&c);
    /* Implicit republish from the transform. */
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\"a.>\"],\"subject_transform\":{\"src\":"
                    "\"a.>\",\"dest\":\"x.>\"},\"republish\":{\"src\":\">\",\"dest\":\">\"}}",
                    &c, &e),
              "%s", e.desc);
    cr_expect_str_eq(c.republish_src, "x.>");
    cr_expect_str_eq(c.republish_dest, "x.>");
    cr_expect_str_eq(c.xform_src, "a.>");
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, placement)
{
    EXPECT_ERR("{\"name\":\"S\",\"placement\":{\"preferred\":\"n1\"}}", 10052,
               "preferred server not permitted in placement");
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"placement\":{}}", &c, &e));
    cr_expect_null(json_object_get(c.json, "placement"));
    nd_stream_cfg_free(&c);
}

/* ---- Equality, round trips, copies ---- */

Test(stream_cfg, idempotent_equality)
{
    nd_stream_cfg_t a, b, c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\"a\"]}", &a, &e));
    cr_assert(parse("{\"subjects\":[\"a\"],\"name\":\"S\",\"max_msgs\":0,\"num_replicas\":1,"
                    "\"metadata\":{\"_nats.ver\":\"2.11.0\"}}",
                    &b, &e));
    cr_expect(nd_stream_cfg_equal(&a, &b));
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\"a\"],\"max_msgs\":5}", &c, &e));
    cr_expect(!nd_stream_cfg_equal(&a, &c));
    nd_stream_cfg_free(&c);
    cr_assert(parse("{\"name\":\"S\",\"subjects\":[\"a\"],\"metadata\":{\"k\":\"v\"}}", &c, &e));
    cr_expect(!nd_stream_cfg_equal(&a, &c));
    nd_stream_cfg_free(&a);
    nd_stream_cfg_free(&b);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, round_trip_stable)
{
    static const char *bodies[] = {
        "{\"name\":\"S\"}",
        "{\"name\":\"S\",\"subjects\":[\"a.*\",\"b.>\"],\"retention\":\"workqueue\","
        "\"max_age\":5000000000,\"storage\":\"memory\",\"compression\":\"s2\"}",
        "{\"name\":\"S\",\"mirror\":{\"name\":\"O\",\"opt_start_seq\":10,"
        "\"opt_start_time\":\"2024-01-02T03:04:05Z\",\"subject_transforms\":[{\"src\":\"a.*\","
        "\"dest\":\"b.$1\"}]}}",
        "{\"name\":\"S\",\"sources\":[{\"name\":\"A\"},{\"name\":\"B\",\"filter_subject\":\"x\"}],"
        "\"subjects\":[\"own\"],\"metadata\":{\"x\":\"y\"}}",
        "{\"name\":\"S\",\"subject_delete_marker_ttl\":5000000000,\"allow_direct\":true}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        nd_stream_cfg_t a, b, c;
        nd_jserr_t e;
        cr_assert(parse(bodies[i], &a, &e), "%s: %s", bodies[i], e.desc);
        char *s1 = dump(&a);
        cr_assert(parse(s1, &b, &e), "%s: %s", s1, e.desc);
        char *s2 = dump(&b);
        cr_expect_str_eq(s1, s2);
        cr_expect(nd_stream_cfg_equal(&a, &b));
        /* As a recovered config (from_json) too. */
        nd_stream_cfg_env_t env = {.max_stream_bytes = -1};
        cr_assert(nd_stream_cfg_from_json(a.json, "S", &env, &c, &e), "%s", e.desc);
        char *s3 = dump(&c);
        cr_expect_str_eq(s1, s3);
        nd_stream_cfg_t d;
        nd_stream_cfg_copy(&d, &c);
        char *s4 = dump(&d);
        cr_expect_str_eq(s1, s4);
        cr_expect_str_eq(d.name, c.name);
        cr_expect_eq(d.nsubjects, c.nsubjects);
        cr_expect_eq(d.max_age_ns, c.max_age_ns);
        cr_expect_eq(d.storage, c.storage);
        cr_expect_eq(d.has_mirror, c.has_mirror);
        free(s1);
        free(s2);
        free(s3);
        free(s4);
        nd_stream_cfg_free(&a);
        nd_stream_cfg_free(&b);
        nd_stream_cfg_free(&c);
        nd_stream_cfg_free(&d);
    }
}

/* ---- Updates ---- */

static void
upd_case(const char *old_body, const char *new_body, int ecode, const char *edesc)
{
    nd_stream_cfg_t o, n;
    nd_jserr_t e;
    cr_assert(parse(old_body, &o, &e), "%s: %s", old_body, e.desc);
    nd_stream_cfg_env_t env = {.max_stream_bytes = -1};
    cr_assert(parse_env(new_body, "S", &env, &n, &e), "%s: %s", new_body, e.desc);
    bool ok = nd_stream_cfg_check_update(&o, &n, &e);
    if (ecode == 0)
        cr_expect(ok, "%s -> %s: %s", old_body, new_body, e.desc);
    else {
        cr_expect(!ok, "%s -> %s accepted", old_body, new_body);
        cr_expect_eq(e.err_code, ecode);
        cr_expect_str_eq(e.desc, edesc);
    }
    nd_stream_cfg_free(&o);
    nd_stream_cfg_free(&n);
}

Test(stream_cfg, update_rules)
{
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"max_msgs\":10,\"subjects\":[\"x\"]}", 0, NULL);
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"max_consumers\":5}", 10052,
             "stream configuration update can not change MaxConsumers");
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"storage\":\"memory\"}", 10052,
             "stream configuration update can not change storage type");
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"retention\":\"interest\"}", 0, NULL);
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"retention\":\"workqueue\"}", 10052,
             "stream configuration update can not change retention policy to/from workqueue");
    upd_case("{\"name\":\"S\",\"retention\":\"workqueue\"}", "{\"name\":\"S\"}", 10052,
             "stream configuration update can not change retention policy to/from workqueue");
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"template_owner\":\"T\"}", 10052,
             "stream configuration update can not be owned by a template");
    upd_case("{\"name\":\"S\",\"deny_delete\":true}", "{\"name\":\"S\"}", 10052,
             "stream configuration update can not cancel deny message deletes");
    upd_case("{\"name\":\"S\",\"deny_purge\":true}", "{\"name\":\"S\"}", 10052,
             "stream configuration update can not cancel deny purge");
    upd_case("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"}}",
             "{\"name\":\"S\",\"mirror\":{\"name\":\"P\"}}", 10055,
             "stream mirror configuration can not be updated");
    upd_case("{\"name\":\"S\"}", "{\"name\":\"S\",\"mirror\":{\"name\":\"P\"}}", 10055,
             "stream mirror configuration can not be updated");
    upd_case("{\"name\":\"S\",\"mirror\":{\"name\":\"O\"}}",
             "{\"name\":\"S\",\"mirror\":{\"name\":\"O\"}}", 0, NULL);
    upd_case("{\"name\":\"S\",\"allow_msg_ttl\":true}", "{\"name\":\"S\"}", 10052,
             "message TTL status can not be disabled");

    /* Sealing: allowed, and what it implies. */
    nd_stream_cfg_t o, n;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"max_age\":10000000000,\"allow_rollup_hdrs\":true}", &o, &e));
    nd_stream_cfg_env_t env = {.max_stream_bytes = -1};
    cr_assert(parse_env("{\"name\":\"S\",\"max_age\":10000000000,\"allow_rollup_hdrs\":true,"
                        "\"sealed\":true}",
                        "S", &env, &n, &e),
              "%s", e.desc);
    cr_assert(nd_stream_cfg_check_update(&o, &n, &e), "%s", e.desc);
    nd_stream_cfg_apply_sealed(&n);
    cr_expect_eq(n.max_age_ns, 0);
    cr_expect_eq(n.discard, ND_DISCARD_NEW);
    cr_expect(n.deny_delete && n.deny_purge && !n.allow_rollup);
    cr_expect_str_eq(json_string_value(json_object_get(n.json, "discard")), "new");
    /* ...and unsealing is not. */
    nd_stream_cfg_t u;
    cr_assert(parse_env("{\"name\":\"S\"}", "S", &env, &u, &e));
    cr_expect(!nd_stream_cfg_check_update(&n, &u, &e));
    cr_expect_str_eq(e.desc, "stream configuration update can not unseal a sealed stream");
    nd_stream_cfg_free(&o);
    nd_stream_cfg_free(&n);
    nd_stream_cfg_free(&u);
}

/* ---- Store limits and overlap ---- */

Test(stream_cfg, store_cfg)
{
    nd_stream_cfg_t c;
    nd_jserr_t e;
    cr_assert(parse("{\"name\":\"S\",\"max_msgs\":10,\"max_bytes\":2000,\"max_age\":1000000000,"
                    "\"max_msgs_per_subject\":3,\"max_msg_size\":100,\"discard\":\"new\","
                    "\"discard_new_per_subject\":true,\"compression\":\"s2\"}",
                    &c, &e),
              "%s", e.desc);
    nd_store_cfg_t s;
    nd_stream_cfg_store(&c, &s);
    cr_expect_eq(s.max_msgs, 10);
    cr_expect_eq(s.max_bytes, 2000);
    cr_expect_eq(s.max_age_ns, 1000000000LL);
    cr_expect_eq(s.max_msgs_per_subject, 3);
    cr_expect_eq(s.max_msg_size, 100);
    cr_expect_eq(s.discard, ND_DISCARD_NEW);
    cr_expect(s.discard_new_per_subject);
    cr_expect_eq(s.compression, ND_STORE_S2);
    cr_expect_null(s.dir);
    nd_stream_cfg_free(&c);
}

Test(stream_cfg, overlap)
{
    cr_expect(nd_subjects_overlap("a", "a"));
    cr_expect(!nd_subjects_overlap("a", "b"));
    cr_expect(nd_subjects_overlap("a.*", "a.b"));
    cr_expect(nd_subjects_overlap("a.>", "a.b.c"));
    cr_expect(!nd_subjects_overlap("a.>", "a"));
    cr_expect(nd_subjects_overlap(">", "a"));
    cr_expect(nd_subjects_overlap("*.b", "a.*"));
    cr_expect(!nd_subjects_overlap("*.b", "a.c"));
    cr_expect(!nd_subjects_overlap("a.*", "a.b.c"));
    cr_expect(nd_subjects_overlap("*.>", "a.b"));
    cr_expect(!nd_subjects_overlap("*.*", "a"));
    cr_expect(nd_subjects_overlap("a.*.c", "a.>"));
    cr_expect(nd_subjects_overlap("$JS.API.>", "$JS.>"));
    cr_expect(nd_subjects_overlap("*.API.x", "$JS.>"));
    cr_expect(!nd_subjects_overlap("ab", "a"));
}

Test(apijson, strings_and_numbers)
{
    nd_apijson_t j;
    char err[200];
    const char *t = "{\"s\":\"a\\u00e9\\ud83d\\ude00\\ud800x\xff\",\"big\":18446744073709551615,"
                    "\"f\":1.50}";
    cr_assert(nd_apijson_parse(t, strlen(t), false, &j, err, sizeof err), "%s", err);
    cr_expect_str_eq(json_string_value(json_object_get(j.root, "s")),
                     "a\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx\xef\xbf\xbd");
    char nb[64];
    cr_expect_str_eq(nd_apijson_num_text(&j, json_object_get(j.root, "big"), nb, sizeof nb),
                     "18446744073709551615");
    cr_expect_str_eq(nd_apijson_num_text(&j, json_object_get(j.root, "f"), nb, sizeof nb), "1.50");
    nd_apijson_free(&j);
    cr_expect(!nd_apijson_parse("{\"a\":\"\\q\"}", 9, false, &j, err, sizeof err));
    cr_expect_str_eq(err, "invalid character 'q' in string escape code");
}
