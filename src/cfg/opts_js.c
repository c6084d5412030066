/* jetstream (bool | "enabled" | "disabled" | {...}) and store_dir -> nd_opts_t.jetstream,
 * store_dir and nd_js_opts_t, with nats-server's checks and texts.
 *
 * Storage sizes are integers (with the config format's suffixes) or strings ending in K, M, G or
 * T (binary multiples), as nats-server's getStorageSize reads them. store_dir may be written at
 * the top level or inside the block, not both.
 * References: nats-server 2.9.10 server/opts.go parseJetStream, parseJetStreamLimits,
 * getStorageSize; 2.10.29 (sync_interval, prev_key, request_queue_limit, strict).
 */
#include <stdio.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "cfg/opts_int.h"
#include "cfg/opts_table.h"

/* getStorageSize. Returns: 0, or -1 with the Go error text in why. */
static int
storage_size(const nd_cfg_node_t *v, int64_t *out, char *why, size_t len)
{
    if (v->type == ND_CFG_INT) {
        *out = v->u.i;
        return 0;
    }
    if (v->type != ND_CFG_STRING) {
        snprintf(why, len, "must be int64 or string");
        return -1;
    }
    const char *s = v->u.str.s;
    size_t n = strlen(s);
    if (n == 0) {
        *out = 0;
        return 0;
    }
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n - 1), s);
    char *end;
    errno = 0;
    long long x = strtoll(num, &end, 10);
    bool sign_ok = num[0] != '\0' && (isdigit((unsigned char)num[0]) ||
                                      ((num[0] == '-' || num[0] == '+') && num[1] != '\0'));
    if (!sign_ok || *end != '\0' || n - 1 >= sizeof num) {
        snprintf(why, len, "strconv.ParseInt: parsing \"%s\": invalid syntax", num);
        return -1;
    }
    if (errno == ERANGE) {
        snprintf(why, len, "strconv.ParseInt: parsing \"%s\": value out of range", num);
        return -1;
    }
    int shift;
    switch (s[n - 1]) {
    case 'K':
        shift = 10;
        break;
    case 'M':
        shift = 20;
        break;
    case 'G':
        shift = 30;
        break;
    case 'T':
        shift = 40;
        break;
    default:
        snprintf(why, len, "sizes defined as strings must end in K, M, G, T");
        return -1;
    }
    /* Go's int64 multiplication wraps; keep the multiplication defined here. */
    *out = (int64_t)((uint64_t)x << shift);
    return 0;
}

/* top: the jetstream key, where nats-server reports the type panics of the whole block (its
 * parseJetStream does not recover them itself). */
static int
js_limits(nd_cfg_apply_t *a, nd_cfg_at_t top, const nd_cfg_entry_t *le, nd_js_opts_t *j)
{
    const nd_cfg_node_t *v = le->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_fail(a, nd_cfg_at_entry(le),
                           "Expected a map to define JetStreamLimits, got %s", nd_cfg_go_type(v));
    /* The block replaces all limits, as nats-server assigns a fresh JSLimitOpts. */
    j->max_ack_pending = j->max_ha_assets = j->max_request_batch = j->duplicate_window_ms = 0;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        int rc = 0;
        if (nd_cfg_key_is(e->key, "max_ack_pending"))
            rc = nd_cfg_i64(a, top, e->val, &j->max_ack_pending);
        else if (nd_cfg_key_is(e->key, "max_ha_assets"))
            rc = nd_cfg_i64(a, top, e->val, &j->max_ha_assets);
        else if (nd_cfg_key_is(e->key, "max_request_batch"))
            rc = nd_cfg_i64(a, top, e->val, &j->max_request_batch);
        else if (nd_cfg_key_is(e->key, "duplicate_window")) {
            /* nats-server appends the bare time error, without a position. */
            if (e->val->type != ND_CFG_STRING)
                rc = nd_cfg_type_err(a, top, e->val, ND_CFG_STRING);
            else
                rc =
                    nd_cfg_duration_str(a, (nd_cfg_at_t){0}, NULL, e->val, &j->duplicate_window_ms);
        } else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int
js_map(nd_cfg_apply_t *a, nd_cfg_at_t top, const nd_cfg_node_t *v)
{
    nd_opts_t *o = a->o;
    if (o->js == NULL) {
        o->js = nd_xcalloc(1, sizeof(*o->js));
        o->js->max_memory = o->js->max_store = -1;
    }
    nd_js_opts_t *j = o->js;
    bool enable = true;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        const char *k = e->key;
        char why[256];
        int rc = 0;
        if (nd_cfg_key_is(k, "store store_dir storedir")) {
            if (o->store_dir && o->store_dir[0])
                return nd_cfg_fail(a, at, "Duplicate 'store_dir' configuration");
            rc = nd_cfg_str(a, top, m, &o->store_dir);
        } else if (nd_cfg_key_is(k, "max_memory_store max_mem_store max_mem")) {
            if (storage_size(m, &j->max_memory, why, sizeof why) < 0)
                return nd_cfg_fail(a, at, "max_mem_store %s", why);
        } else if (nd_cfg_key_is(k, "max_file_store max_file")) {
            if (storage_size(m, &j->max_store, why, sizeof why) < 0)
                return nd_cfg_fail(a, at, "max_file_store %s", why);
        } else if (nd_cfg_key_is(k, "domain")) {
            rc = nd_cfg_str(a, top, m, &j->domain);
        } else if (nd_cfg_key_is(k, "enable enabled")) {
            rc = nd_cfg_bool(a, top, m, &enable);
        } else if (nd_cfg_key_is(k, "key ek encryption_key")) {
            rc = nd_cfg_str(a, top, m, &j->key);
        } else if (nd_cfg_key_is(k, "prev_key prev_ek prev_encryption_key")) {
            rc = nd_cfg_str(a, top, m, &j->prev_key);
        } else if (nd_cfg_key_is(k, "cipher")) {
            if (m->type != ND_CFG_STRING)
                return nd_cfg_type_err(a, top, m, ND_CFG_STRING);
            if (strcasecmp(m->u.str.s, "chacha") == 0 || strcasecmp(m->u.str.s, "chachapoly") == 0)
                j->cipher = ND_JS_CIPHER_CHACHA;
            else if (strcasecmp(m->u.str.s, "aes") == 0)
                j->cipher = ND_JS_CIPHER_AES;
            else
                return nd_cfg_fail(a, at, "Unknown cipher type: \"%s\"", m->u.str.s);
        } else if (nd_cfg_key_is(k, "extension_hint")) {
            rc = nd_cfg_str(a, top, m, &j->extension_hint);
        } else if (nd_cfg_key_is(k, "limits")) {
            rc = js_limits(a, top, e, j);
        } else if (nd_cfg_key_is(k, "unique_tag")) {
            if (m->type != ND_CFG_STRING)
                return nd_cfg_type_err(a, top, m, ND_CFG_STRING);
            const char *s = m->u.str.s;
            while (isspace((unsigned char)*s))
                s++;
            size_t n = strlen(s);
            while (n > 0 && isspace((unsigned char)s[n - 1]))
                n--;
            char *t = nd_xstrndup(s, n);
            for (char *c = t; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            nd_free(j->unique_tag);
            j->unique_tag = t;
        } else if (nd_cfg_key_is(k, "max_outstanding_catchup")) {
            if (storage_size(m, &j->max_outstanding_catchup, why, sizeof why) < 0)
                return nd_cfg_fail(a, at, "max_outstanding_catchup %s", why);
        } else if (nd_cfg_key_is(k, "sync sync_interval")) {
            if (m->type == ND_CFG_STRING && strcasecmp(m->u.str.s, "always") == 0) {
                j->sync_always = true;
                j->sync_interval_ms = 2 * 60 * 1000;
            } else {
                j->sync_always = false;
                rc = nd_cfg_duration(a, at, k, m, &j->sync_interval_ms);
            }
        } else if (nd_cfg_key_is(k, "strict")) {
            rc = nd_cfg_bool(a, top, m, &j->strict);
        } else if (nd_cfg_key_is(k, "max_buffered_size")) {
            if (storage_size(m, &j->max_buffered_size, why, sizeof why) < 0)
                return nd_cfg_fail(a, at, "max_buffered_size %s", why);
        } else if (nd_cfg_key_is(k, "max_buffered_msgs")) {
            rc = nd_cfg_i64(a, top, m, &j->max_buffered_msgs);
        } else if (nd_cfg_key_is(k, "request_queue_limit")) {
            if (m->type != ND_CFG_INT) {
                char val[256];
                nd_cfg_go_value(m, val, sizeof val);
                return nd_cfg_fail(a, at, "Expected a parseable size for \"%s\", got %s", k, val);
            }
            j->request_queue_limit = m->u.i;
        } else {
            rc = nd_cfg_unknown(a, e);
        }
        if (rc < 0)
            return -1;
    }
    o->jetstream = enable;
    return 0;
}

/* The members of jetstream {}: js_map reads them itself (nats-server reports most type errors
 * of the block at the jetstream key, not at the member's). */
#define J(...) ND_OPT(nd_js_opts_t, NULL, __VA_ARGS__)
static const nd_opt_desc_t js_d[] = {
    J(max_memory, ND_OT_I64, .name = "max_memory_store", .flags = ND_OF_ZERO,
      .zero = ND_ZERO_LITERAL,
      .note = "not written: -1 (automatic), set by the jetstream {} parser"),
    J(max_store, ND_OT_I64, .name = "max_file_store", .flags = ND_OF_ZERO, .zero = ND_ZERO_LITERAL,
      .note = "not written: -1 (automatic), set by the jetstream {} parser"),
    J(domain, ND_OT_STR),
    J(key, ND_OT_STR),
    J(prev_key, ND_OT_STR),
    J(cipher, ND_OT_INT),
    J(extension_hint, ND_OT_STR),
    J(unique_tag, ND_OT_STR),
    J(sync_interval_ms, ND_OT_I64),
    J(sync_always, ND_OT_BOOL),
    J(max_outstanding_catchup, ND_OT_I64),
    J(request_queue_limit, ND_OT_I64),
    J(max_ack_pending, ND_OT_I64),
    J(max_ha_assets, ND_OT_I64),
    J(max_request_batch, ND_OT_I64),
    J(duplicate_window_ms, ND_OT_I64),
    J(strict, ND_OT_BOOL),
    J(max_buffered_size, ND_OT_I64),
    J(max_buffered_msgs, ND_OT_I64),
    ND_OPT_END,
};
#undef J

/* JetStream is not built: a change is accepted and kept, not applied (src/server/reload.c). */
const nd_opt_block_t nd_opt_js_block = {"jetstream", NULL,          sizeof(nd_js_opts_t),
                                        js_d,        ND_RL_UNBUILT, NULL};

int
nd_cfg_apply_jetstream(nd_cfg_apply_t *a, const nd_cfg_entry_t *je)
{
    const nd_cfg_node_t *v = je->val;
    nd_cfg_at_t at = nd_cfg_at_entry(je);
    switch (v->type) {
    case ND_CFG_BOOL:
        a->o->jetstream = v->u.b;
        return 0;
    case ND_CFG_STRING:
        if (strcasecmp(v->u.str.s, "enabled") == 0 || strcasecmp(v->u.str.s, "enable") == 0)
            a->o->jetstream = true;
        else if (strcasecmp(v->u.str.s, "disabled") == 0 || strcasecmp(v->u.str.s, "disable") == 0)
            a->o->jetstream = false;
        else
            return nd_cfg_fail(a, at, "Expected 'enabled' or 'disabled' for string value, got '%s'",
                               v->u.str.s);
        return 0;
    case ND_CFG_MAP:
        return js_map(a, at, v);
    default:
        return nd_cfg_fail(a, at, "Expected map, bool or string to define JetStream, got %s",
                           nd_cfg_go_type(v));
    }
}

int
nd_cfg_apply_store_dir(nd_cfg_apply_t *a, const nd_cfg_entry_t *e)
{
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (a->o->store_dir && a->o->store_dir[0])
        return nd_cfg_fail(a, at, "Duplicate 'store_dir' configuration");
    return nd_cfg_str(a, at, e->val, &a->o->store_dir);
}
