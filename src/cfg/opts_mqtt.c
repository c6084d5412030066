/* mqtt {} -> nd_mqtt_opts_t, with nats-server's checks and texts (max_ack_pending within
 * [0..65535], durations that may be integers of seconds with nats-server's warning).
 * Whole-server checks (server_name set, JetStream enabled) are the MQTT issue's.
 * References: nats-server 2.9.10 server/opts.go parseMQTT, parseSimpleAuth; 2.10.29
 * (reject_qos2_publish, downgrade_qos2_subscribe); inventory §8.1 (js_api_timeout).
 */
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

static int
max_ack_pending(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const nd_opt_desc_t *d, void *blk,
                unsigned *seen)
{
    (void)d, (void)seen;
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    int64_t n;
    if (nd_cfg_i64(a, at, e->val, &n) < 0)
        return -1;
    if (n < 0 || n > 0xFFFF)
        return nd_cfg_fail(a, at, "invalid value %lld, should in [0..%d] range", (long long)n,
                           0xFFFF);
    ((nd_mqtt_opts_t *)blk)->max_ack_pending = (int)n;
    return 0;
}

#define M(...) ND_OPT(nd_mqtt_opts_t, __VA_ARGS__)
static const nd_opt_desc_t mqtt_d[] = {
    M(ND_CFG_LISTENER_KEYS, host, ND_OT_STR, .parse = nd_opt_listener,
      .aux = offsetof(nd_mqtt_opts_t, port), .flags = ND_OF_LISTEN),
    M(NULL, port, ND_OT_INT, .flags = ND_OF_LISTEN),
    M("tls", tls, ND_OT_PTR, .sub = &nd_opt_tls_block, .parse = nd_opt_tls, .arg = 1,
      .flags = ND_OF_LIVE),
    M("authorization authentication", user, ND_OT_STR, .parse = nd_opt_simple_auth),
    M(NULL, pass, ND_OT_STR),
    M(NULL, token, ND_OT_STR),
    M(NULL, auth_timeout_s, ND_OT_DBL),
    M("no_auth_user", no_auth_user, ND_OT_STR),
    M("ack_wait ackwait", ack_wait_ms, ND_OT_DUR, .flags = ND_OF_LIVE),
    M("max_ack_pending max_pending max_inflight", max_ack_pending, ND_OT_INT,
      .parse = max_ack_pending, .flags = ND_OF_LIVE),
    M("js_domain", js_domain, ND_OT_STR),
    M("stream_replicas", stream_replicas, ND_OT_INT, .flags = ND_OF_LIVE),
    M("consumer_replicas", consumer_replicas, ND_OT_INT, .flags = ND_OF_LIVE),
    M("consumer_memory_storage", consumer_memory_storage, ND_OT_BOOL, .flags = ND_OF_LIVE),
    M("consumer_inactive_threshold consumer_auto_cleanup", consumer_inactive_threshold_ms,
      ND_OT_DUR, .flags = ND_OF_LIVE),
    M("reject_qos2_publish", reject_qos2_publish, ND_OT_BOOL),
    M("downgrade_qos2_subscribe", downgrade_qos2_subscribe, ND_OT_BOOL),
    M("js_api_timeout api_timeout", js_api_timeout_ms, ND_OT_DUR),
    ND_OPT_END,
};
#undef M

const nd_opt_block_t nd_opt_mqtt_block = {
    "mqtt", "Expected mqtt to be a map, got %s", sizeof(nd_mqtt_opts_t), mqtt_d, ND_RL_REFUSE,
    NULL};

int
nd_cfg_apply_mqtt(nd_cfg_apply_t *a, const nd_cfg_entry_t *me)
{
    return nd_opt_parse_block(a, &nd_opt_mqtt_block, me, (void **)&a->o->mqtt);
}
