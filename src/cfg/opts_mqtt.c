/* mqtt {} -> nd_mqtt_opts_t, with nats-server's checks and texts (max_ack_pending within
 * [0..65535], durations that may be integers of seconds with nats-server's warning).
 * Whole-server checks (server_name set, JetStream enabled) are the MQTT issue's.
 * References: nats-server 2.9.10 server/opts.go parseMQTT, parseSimpleAuth; 2.10.29
 * (reject_qos2_publish, downgrade_qos2_subscribe); inventory §8.1 (js_api_timeout).
 */
#include "actors/alloc.h"
#include "cfg/opts_int.h"

int
nd_cfg_apply_mqtt(nd_cfg_apply_t *a, const nd_cfg_entry_t *me)
{
    const nd_cfg_node_t *v = me->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(me), "Expected mqtt to be a map, got %s",
                           nd_cfg_go_type(v));
    nd_opts_t *o = a->o;
    if (o->mqtt == NULL)
        o->mqtt = nd_xcalloc(1, sizeof(*o->mqtt));
    nd_mqtt_opts_t *m = o->mqtt;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *x = e->val;
        const char *k = e->key;
        int rc = 0;
        if (nd_cfg_key_is(k, ND_CFG_LISTENER_KEYS)) {
            rc = nd_cfg_listener(a, e, &m->host, &m->port);
        } else if (nd_cfg_key_is(k, "tls")) {
            rc = nd_cfg_tls(a, e, true, &m->tls);
        } else if (nd_cfg_key_is(k, "authorization authentication")) {
            rc = nd_cfg_simple_auth(a, e, &m->user, &m->pass, &m->token, &m->auth_timeout_s);
        } else if (nd_cfg_key_is(k, "no_auth_user")) {
            rc = nd_cfg_str(a, at, x, &m->no_auth_user);
        } else if (nd_cfg_key_is(k, "ack_wait ackwait")) {
            rc = nd_cfg_duration(a, at, "ack_wait", x, &m->ack_wait_ms);
        } else if (nd_cfg_key_is(k, "max_ack_pending max_pending max_inflight")) {
            int64_t n;
            if ((rc = nd_cfg_i64(a, at, x, &n)) == 0) {
                if (n < 0 || n > 0xFFFF)
                    rc = nd_cfg_fail(a, at, "invalid value %lld, should in [0..%d] range",
                                     (long long)n, 0xFFFF);
                else
                    m->max_ack_pending = (int)n;
            }
        } else if (nd_cfg_key_is(k, "js_domain")) {
            rc = nd_cfg_str(a, at, x, &m->js_domain);
        } else if (nd_cfg_key_is(k, "stream_replicas")) {
            rc = nd_cfg_int(a, at, x, &m->stream_replicas);
        } else if (nd_cfg_key_is(k, "consumer_replicas")) {
            rc = nd_cfg_int(a, at, x, &m->consumer_replicas);
        } else if (nd_cfg_key_is(k, "consumer_memory_storage")) {
            rc = nd_cfg_bool(a, at, x, &m->consumer_memory_storage);
        } else if (nd_cfg_key_is(k, "consumer_inactive_threshold consumer_auto_cleanup")) {
            rc = nd_cfg_duration(a, at, "consumer_inactive_threshold", x,
                                 &m->consumer_inactive_threshold_ms);
        } else if (nd_cfg_key_is(k, "reject_qos2_publish")) {
            rc = nd_cfg_bool(a, at, x, &m->reject_qos2_publish);
        } else if (nd_cfg_key_is(k, "downgrade_qos2_subscribe")) {
            rc = nd_cfg_bool(a, at, x, &m->downgrade_qos2_subscribe);
        } else if (nd_cfg_key_is(k, "js_api_timeout api_timeout")) {
            rc = nd_cfg_duration(a, at, "js_api_timeout", x, &m->js_api_timeout_ms);
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}
