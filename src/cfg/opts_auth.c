/* authorization {}, users and permissions -> nd_opts_t.user/pass/token, users[] and nd_perms_t,
 * with nats-server's shapes, checks and texts.
 *
 * Shapes (inventory §5.1, §5.2): authorization { user, password | token | users: [...], timeout,
 * default_permissions }; a user is {user, password} or {nkey}, with permissions and
 * allowed_connection_types; permissions are { publish, subscribe, allow_responses } where each
 * direction is a subject, an array of subjects, or {allow, deny}. The default permissions of a
 * block apply to its users that have none of their own.
 *
 * Quirk kept from nats-server 2.9.10: a direction written as a plain subject or array is checked
 * without its token, so those errors carry no file:line:col (`subject "a..b" is not a valid
 * subject`); the {allow, deny} form reports the allow/deny key.
 * References: nats-server 2.9.10 server/opts.go (parseAuthorization, parseUsers,
 * parseUserPermissions, parsePermSubjects, parseAllowResponses, parseSubjectPermission,
 * checkPermSubjectArray, processConfigFileLine "authorization"), server/client.go
 * convertAllowedConnectionTypes, github.com/nats-io/nkeys (strkey.go).
 */
#include <stdio.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "actors/alloc.h"
#include "util/nkey.h"
#include "cfg/opts_int.h"

/* ---- nkeys -------------------------------------------------------------------------------- */

bool
nd_cfg_valid_nkey(const char *s, char prefix_letter)
{
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    if (strlen(s) != ND_NKEY_PUBLIC_LEN || s[0] != prefix_letter)
        return false;
    uint8_t raw[35];
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (size_t i = 0; i < ND_NKEY_PUBLIC_LEN; i++) {
        const char *p = strchr(alpha, s[i]);
        if (p == NULL || s[i] == '\0')
            return false;
        acc = (acc << 5) | (uint32_t)(p - alpha);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            raw[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (n != sizeof raw)
        return false;
    uint16_t crc = (uint16_t)(raw[33] | (raw[34] << 8));
    return nd_crc16_xmodem(raw, 33) == crc;
}

/* ---- permissions -------------------------------------------------------------------------- */

static const nd_cfg_at_t nopos = {0};

/* checkPermSubjectArray: a subject, or "subject queue" for queue permissions. */
static int
check_perm_subjects(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *s = l->v[i];
        if (nd_cfg_valid_subject(s))
            continue;
        /* strings.Fields: split on runs of white space. */
        char f[2][256];
        int nf = 0;
        const char *p = s;
        while (*p) {
            while (*p && isspace((unsigned char)*p))
                p++;
            if (!*p)
                break;
            const char *st = p;
            while (*p && !isspace((unsigned char)*p))
                p++;
            if (nf < 2)
                snprintf(f[nf], sizeof f[nf], "%.*s", (int)(p - st), st);
            nf++;
        }
        if (nf != 2)
            return nd_cfg_fail(a, at, "subject \"%s\" is not a valid subject", s);
        if (!nd_cfg_valid_subject(f[0]))
            return nd_cfg_fail(a, at, "subject \"%s\" is not a valid subject", f[0]);
    }
    return 0;
}

int
nd_cfg_perm_subjects(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_cfg_node_t *v, nd_strlist_t *out)
{
    nd_strlist_t l;
    const nd_cfg_node_t *bad;
    if (nd_cfg_strs(v, &l, &bad) < 0) {
        if (bad == v)
            return nd_cfg_fail(a, at,
                               "Expected subject permissions to be a subject, or array of "
                               "subjects, got %s",
                               nd_cfg_go_type(v));
        return nd_cfg_fail(a, nd_cfg_at_node(bad),
                           "Subject in permissions array cannot be cast to string");
    }
    if (check_perm_subjects(a, at, &l) < 0) {
        nd_strlist_free(&l);
        return -1;
    }
    nd_strlist_free(out);
    *out = l;
    return 0;
}

/* parseVariablePermissions: {allow, deny} or the old style (a subject or an array). */
static int
variable_perms(nd_cfg_apply_t *a, const nd_cfg_node_t *v, bool *set, nd_subj_perm_t *p)
{
    nd_strlist_free(&p->allow);
    nd_strlist_free(&p->deny);
    p->allow_set = p->deny_set = false;
    if (v->type != ND_CFG_MAP) {
        if (nd_cfg_perm_subjects(a, nopos, v, &p->allow) < 0)
            return -1;
        p->allow_set = true;
        *set = true;
        return 0;
    }
    /* An empty map leaves the direction unset, as nats-server's nil result does. */
    *set = v->u.map.n > 0;
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        if (nd_cfg_key_is(e->key, "allow")) {
            if (nd_cfg_perm_subjects(a, at, e->val, &p->allow) < 0)
                return -1;
            p->allow_set = true;
        } else if (nd_cfg_key_is(e->key, "deny")) {
            if (nd_cfg_perm_subjects(a, at, e->val, &p->deny) < 0)
                return -1;
            p->deny_set = true;
        } else if (!e->used_as_var) {
            return nd_cfg_fail(a, at,
                               "Unknown field name \"%s\" parsing subject permissions, only "
                               "'allow' or 'deny' are permitted",
                               e->key);
        }
    }
    return 0;
}

static int
allow_responses(nd_cfg_apply_t *a, const nd_cfg_entry_t *re, nd_perms_t *p)
{
    const nd_cfg_node_t *v = re->val;
    p->resp_max_msgs = ND_ALLOW_RESPONSES_MAX_MSGS;
    p->resp_expires_ms = ND_ALLOW_RESPONSES_EXPIRES_MS;
    if (v->type == ND_CFG_BOOL) {
        p->resp_set = v->u.b;
    } else if (v->type != ND_CFG_MAP) {
        return nd_cfg_fail(a, nd_cfg_at_entry(re),
                           "error parsing response permissions, expected a boolean or a map");
    } else {
        p->resp_set = true;
        for (size_t i = 0; i < v->u.map.n; i++) {
            const nd_cfg_entry_t *e = &v->u.map.e[i];
            nd_cfg_at_t at = nd_cfg_at_entry(e);
            if (nd_cfg_key_is(e->key, "max max_msgs max_messages max_responses")) {
                int64_t m;
                if (nd_cfg_i64(a, at, e->val, &m) < 0)
                    return -1;
                /* Negative means unlimited; 0 keeps the default. */
                if (m != 0)
                    p->resp_max_msgs = m;
            } else if (nd_cfg_key_is(e->key, "expires expiration ttl")) {
                if (e->val->type != ND_CFG_STRING)
                    return nd_cfg_fail(a, at, "error parsing expires, not a duration string");
                int64_t ms;
                if (nd_cfg_duration_str(a, at, "error parsing expires", e->val, &ms) < 0)
                    return -1;
                if (ms != 0)
                    p->resp_expires_ms = ms;
            } else if (!e->used_as_var) {
                return nd_cfg_fail(a, at, "Unknown field \"%s\" parsing permissions", e->key);
            }
        }
    }
    if (p->resp_set) {
        /* Allowing responses turns the blanket publish allow off (nats-server does the same). */
        p->pub_set = true;
        p->pub.allow_set = true;
    }
    return 0;
}

int
nd_cfg_perms(nd_cfg_apply_t *a, const nd_cfg_entry_t *pe, bool nopos_top, nd_perms_t *out)
{
    const nd_cfg_node_t *v = pe->val;
    if (v->type != ND_CFG_MAP) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nopos_top ? nopos : nd_cfg_at_entry(pe),
                           "Expected permissions to be a map/struct, got %s", val);
    }
    nd_perms_t p = {0};
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        int rc = 0;
        if (nd_cfg_key_is(e->key, "pub publish import")) {
            bool set = false;
            rc = variable_perms(a, e->val, &set, &p.pub);
            p.pub_set = set;
        } else if (nd_cfg_key_is(e->key, "sub subscribe export")) {
            rc = variable_perms(a, e->val, &p.sub_set, &p.sub);
        } else if (nd_cfg_key_is(e->key, "publish_allow_responses allow_responses")) {
            rc = allow_responses(a, e, &p);
        } else if (!e->used_as_var) {
            rc = nd_cfg_fail(a, nd_cfg_at_entry(e), "Unknown field \"%s\" parsing permissions",
                             e->key);
        }
        if (rc < 0) {
            nd_perms_clear(&p);
            return -1;
        }
    }
    nd_perms_clear(out);
    *out = p;
    return 0;
}

/* ---- users -------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    uint32_t bit;
} conn_types[] = {
    {"STANDARD", ND_CONN_TYPE_STANDARD},
    {"WEBSOCKET", ND_CONN_TYPE_WEBSOCKET},
    {"LEAFNODE", ND_CONN_TYPE_LEAFNODE},
    {"LEAFNODE_WS", ND_CONN_TYPE_LEAFNODE_WS},
    {"MQTT", ND_CONN_TYPE_MQTT},
    {"MQTT_WS", ND_CONN_TYPE_MQTT_WS},
    {"IN_PROCESS", ND_CONN_TYPE_IN_PROCESS},
};

static int
connection_types(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, uint32_t *out)
{
    nd_strlist_t l = {0};
    if (nd_cfg_strarray(a, nd_cfg_at_entry(e), "allowed connection types", e->val, &l) < 0)
        return -1;
    char unknown[512] = "";
    size_t ul = 0;
    uint32_t bits = 0;
    for (size_t i = 0; i < l.n; i++) {
        char up[128];
        snprintf(up, sizeof up, "%s", l.v[i]);
        for (char *c = up; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        uint32_t bit = 0;
        for (size_t t = 0; t < sizeof conn_types / sizeof conn_types[0]; t++)
            if (strcmp(up, conn_types[t].name) == 0)
                bit = conn_types[t].bit;
        if (bit == 0 && ul + strlen(up) + 4 < sizeof unknown)
            ul +=
                (size_t)snprintf(unknown + ul, sizeof unknown - ul, "%s\"%s\"", ul ? " " : "", up);
        bits |= bit;
    }
    nd_strlist_free(&l);
    if (ul)
        return nd_cfg_fail(a, nd_cfg_at_entry(e), "invalid connection types [%s]", unknown);
    *out = bits;
    return 0;
}

int
nd_cfg_users(nd_cfg_apply_t *a, const nd_cfg_entry_t *ue, bool nopos_top, nd_user_t **out,
             size_t *nout)
{
    const nd_cfg_node_t *v = ue->val;
    if (v->type != ND_CFG_ARRAY) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, nopos_top ? nopos : nd_cfg_at_entry(ue),
                           "Expected users field to be an array, got %s", val);
    }
    nd_user_t *users = v->u.arr.n ? nd_xcalloc(v->u.arr.n, sizeof(*users)) : NULL;
    size_t n = 0;
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const nd_cfg_node_t *um = v->u.arr.v[i];
        nd_cfg_at_t at = nd_cfg_at_node(um);
        if (um->type != ND_CFG_MAP) {
            char val[256];
            nd_cfg_go_value(um, val, sizeof val);
            nd_cfg_fail(a, at, "Expected user entry to be a map/struct, got %s", val);
            goto fail;
        }
        nd_user_t *u = &users[n++];
        for (size_t k = 0; k < um->u.map.n; k++) {
            const nd_cfg_entry_t *e = &um->u.map.e[k];
            /* nats-server reports a bad entry at the last key it visited. */
            at = nd_cfg_at_entry(e);
            int rc = 0;
            if (nd_cfg_key_is(e->key, "nkey"))
                rc = nd_cfg_str(a, at, e->val, &u->nkey);
            else if (nd_cfg_key_is(e->key, "user username"))
                rc = nd_cfg_str(a, at, e->val, &u->name);
            else if (nd_cfg_key_is(e->key, "pass password"))
                rc = nd_cfg_str(a, at, e->val, &u->pass);
            else if (nd_cfg_key_is(e->key, "permission permissions authorization")) {
                rc = nd_cfg_perms(a, e, false, &u->perms);
                u->has_perms = rc == 0;
            } else if (nd_cfg_key_is(e->key, "allowed_connection_types connection_types clients"))
                rc = connection_types(a, e, &u->conn_types);
            else
                rc = nd_cfg_unknown(a, e);
            if (rc < 0)
                goto fail;
        }
        bool has_nkey = u->nkey && u->nkey[0], has_name = u->name && u->name[0];
        if (!has_nkey && !has_name) {
            nd_cfg_fail(a, at, "User entry requires a user");
            goto fail;
        }
        if (has_nkey) {
            if (!nd_cfg_valid_nkey(u->nkey, 'U')) {
                nd_cfg_fail(a, at, "Not a valid public nkey for a user");
                goto fail;
            }
            if (has_name || (u->pass && u->pass[0])) {
                nd_cfg_fail(a, at, "Nkey users do not take usernames or passwords");
                goto fail;
            }
        }
    }
    nd_users_free(*out, *nout);
    *out = users;
    *nout = n;
    return 0;
fail:
    nd_users_free(users, n);
    return -1;
}

/* Gives users without permissions of their own a copy of the defaults. */
void
nd_cfg_apply_default_perms(nd_user_t *users, size_t n, const nd_perms_t *p)
{
    for (size_t i = 0; i < n; i++) {
        if (users[i].has_perms)
            continue;
        nd_perms_clear(&users[i].perms);
        users[i].perms = nd_perms_dup(p);
        users[i].has_perms = true;
    }
}

/* ---- authorization blocks ----------------------------------------------------------------- */

/* parseAuthCallout (2.10): issuer and auth_users required, account defaults to $G. */
static int
auth_callout(nd_cfg_apply_t *a, const nd_cfg_entry_t *ce, nd_auth_callout_opts_t **out)
{
    const nd_cfg_node_t *v = ce->val;
    nd_cfg_at_t at = nd_cfg_at_entry(ce);
    if (v->type != ND_CFG_MAP) {
        char val[256];
        nd_cfg_go_value(v, val, sizeof val);
        return nd_cfg_fail(a, at, "Expected authorization callout to be a map/struct, got %s", val);
    }
    nd_auth_callout_opts_t *c = nd_xcalloc(1, sizeof(*c));
    int rc = 0;
    for (size_t i = 0; i < v->u.map.n && rc == 0; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        at = nd_cfg_at_entry(e);
        const nd_cfg_node_t *m = e->val;
        if (nd_cfg_key_is(e->key, "issuer")) {
            if ((rc = nd_cfg_str(a, at, m, &c->issuer)) == 0 && !nd_cfg_valid_nkey(c->issuer, 'A'))
                rc = nd_cfg_fail(a, at,
                                 "Expected callout user to be a valid public account nkey, got "
                                 "\"%s\"",
                                 c->issuer);
        } else if (nd_cfg_key_is(e->key, "account acc")) {
            rc = nd_cfg_str(a, at, m, &c->account);
        } else if (nd_cfg_key_is(e->key, "auth_users users")) {
            if (m->type != ND_CFG_ARRAY) {
                rc =
                    nd_cfg_fail(a, at, "Expected auth_users field to be an array, got *conf.token");
            } else {
                for (size_t k = 0; k < m->u.arr.n && rc == 0; k++) {
                    const nd_cfg_node_t *u = m->u.arr.v[k];
                    if (u->type != ND_CFG_STRING)
                        rc = nd_cfg_type_err(a, nd_cfg_at_node(u), u, ND_CFG_STRING);
                    else
                        nd_strlist_add(&c->auth_users, u->u.str.s);
                }
            }
        } else if (nd_cfg_key_is(e->key, "xkey key")) {
            if ((rc = nd_cfg_str(a, at, m, &c->xkey)) == 0 && !nd_cfg_valid_nkey(c->xkey, 'X'))
                rc = nd_cfg_fail(
                    a, at, "Expected callout xkey to be a valid public xkey, got \"%s\"", c->xkey);
        } else if (!e->used_as_var) {
            rc = nd_cfg_fail(a, at, "Unknown field \"%s\" parsing authorization callout", e->key);
        }
    }
    if (rc == 0 && c->account == NULL)
        c->account = nd_xstrdup("$G");
    if (rc == 0 && (c->issuer == NULL || c->issuer[0] == '\0'))
        rc = nd_cfg_fail(a, at, "Authorization callouts require an issuer to be specified");
    if (rc == 0 && c->auth_users.n == 0)
        rc = nd_cfg_fail(a, at, "Authorization callouts require authorized users to be specified");
    if (rc < 0) {
        nd_auth_callout_opts_free(c);
        return -1;
    }
    nd_auth_callout_opts_free(*out);
    *out = c;
    return 0;
}

void
nd_cfg_auth_clear(nd_cfg_auth_t *au)
{
    nd_auth_callout_opts_free(au->callout);
    nd_free(au->user);
    nd_free(au->pass);
    nd_free(au->token);
    nd_users_free(au->users, au->nusers);
    nd_perms_clear(&au->default_perms);
    memset(au, 0, sizeof(*au));
}

int
nd_cfg_authorization(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae, nd_cfg_auth_t *au)
{
    const nd_cfg_node_t *v = ae->val;
    memset(au, 0, sizeof(*au));
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, nd_cfg_at_entry(ae), v, ND_CFG_MAP);
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        int rc = 0;
        if (nd_cfg_key_is(e->key, "user username"))
            rc = nd_cfg_str(a, at, e->val, &au->user);
        else if (nd_cfg_key_is(e->key, "pass password"))
            rc = nd_cfg_str(a, at, e->val, &au->pass);
        else if (nd_cfg_key_is(e->key, "token"))
            rc = nd_cfg_str(a, at, e->val, &au->token);
        else if (nd_cfg_key_is(e->key, "timeout"))
            nd_cfg_seconds(e->val, 1, &au->timeout_s);
        else if (nd_cfg_key_is(e->key, "users")) {
            rc = nd_cfg_users(a, e, false, &au->users, &au->nusers);
            au->users_set = rc == 0;
        } else if (nd_cfg_key_is(e->key, "default_permission default_permissions permissions")) {
            rc = nd_cfg_perms(a, e, false, &au->default_perms);
            au->has_default_perms = rc == 0;
        } else if (nd_cfg_key_is(e->key, "auth_callout auth_hook")) {
            rc = auth_callout(a, e, &au->callout);
        } else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0) {
            nd_cfg_auth_clear(au);
            return -1;
        }
    }
    if (au->has_default_perms)
        nd_cfg_apply_default_perms(au->users, au->nusers, &au->default_perms);
    return 0;
}

int
nd_cfg_single_user_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *e, const char *block,
                        nd_cfg_auth_t *au, char **user, char **pass, double *timeout_s)
{
    nd_cfg_at_t at = nd_cfg_at_entry(e);
    if (nd_cfg_authorization(a, e, au) < 0)
        return -1;
    if (au->users_set)
        return nd_cfg_fail(a, at, "%s authorization does not allow multiple users", block);
    if (au->token && au->token[0])
        return nd_cfg_fail(a, at, "%s authorization does not support tokens", block);
    nd_set_str(user, au->user);
    nd_set_str(pass, au->pass);
    *timeout_s = au->timeout_s;
    return 0;
}

int
nd_cfg_simple_auth(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae, char **user, char **pass,
                   char **token, double *timeout_s)
{
    const nd_cfg_node_t *v = ae->val;
    if (v->type != ND_CFG_MAP)
        return nd_cfg_type_err(a, nd_cfg_at_entry(ae), v, ND_CFG_MAP);
    for (size_t i = 0; i < v->u.map.n; i++) {
        const nd_cfg_entry_t *e = &v->u.map.e[i];
        nd_cfg_at_t at = nd_cfg_at_entry(e);
        int rc = 0;
        if (nd_cfg_key_is(e->key, "user username"))
            rc = nd_cfg_str(a, at, e->val, user);
        else if (nd_cfg_key_is(e->key, "pass password"))
            rc = nd_cfg_str(a, at, e->val, pass);
        else if (nd_cfg_key_is(e->key, "token"))
            rc = nd_cfg_str(a, at, e->val, token);
        else if (nd_cfg_key_is(e->key, "timeout"))
            nd_cfg_seconds(e->val, 1, timeout_s);
        else
            rc = nd_cfg_unknown(a, e);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static const char *
user_id(const nd_user_t *u)
{
    return u->nkey ? u->nkey : u->name ? u->name : "";
}

void
nd_cfg_add_user(nd_cfg_apply_t *a, nd_user_t *u)
{
    nd_opts_t *o = a->o;
    o->users = nd_xrealloc(o->users, (o->nusers + 1) * sizeof(*o->users));
    o->users[o->nusers++] = *u;
    memset(u, 0, sizeof(*u));
    /* The strings stay where they are when the array moves: the set may borrow them. */
    nd_cfg_strset_add(&a->user_ids, user_id(&o->users[o->nusers - 1]), o->nusers - 1, NULL);
}

int
nd_cfg_check_new_users(nd_cfg_apply_t *a, nd_cfg_at_t at, const nd_user_t *users, size_t n)
{
    nd_cfg_strset_t batch = {0};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const nd_user_t *u = &users[i];
        const char *id = user_id(u);
        if (nd_cfg_strset_get(&a->user_ids, id, NULL) || !nd_cfg_strset_add(&batch, id, i, NULL))
            rc = nd_cfg_fail(a, at, "Duplicate %s \"%s\" detected", u->nkey ? "nkey" : "user", id);
    }
    nd_cfg_strset_free(&batch);
    return rc;
}

int
nd_cfg_apply_authorization(nd_cfg_apply_t *a, const nd_cfg_entry_t *ae)
{
    nd_opts_t *o = a->o;
    nd_cfg_at_t at = nd_cfg_at_entry(ae);
    nd_cfg_auth_t au;
    if (nd_cfg_authorization(a, ae, &au) < 0)
        return -1;
    nd_set_str(&o->user, au.user);
    nd_set_str(&o->pass, au.pass);
    nd_set_str(&o->token, au.token);
    o->auth_timeout_s = au.timeout_s;
    nd_auth_callout_opts_free(o->auth_callout);
    o->auth_callout = au.callout;
    au.callout = NULL;
    int rc = 0;
    bool has_user = au.user && au.user[0], has_pass = au.pass && au.pass[0];
    bool has_token = au.token && au.token[0];
    if ((has_user || has_pass) && has_token) {
        rc = nd_cfg_fail(a, at, "Cannot have a user/pass and token");
    } else if (au.users_set || o->nusers > 0) {
        if (has_user)
            rc = nd_cfg_fail(a, at, "Can not have a single user/pass and a users array");
        else if (has_token)
            rc = nd_cfg_fail(a, at, "Can not have a token and a users array");
        else
            rc = nd_cfg_check_new_users(a, at, au.users, au.nusers);
    }
    if (rc == 0)
        for (size_t i = 0; i < au.nusers; i++)
            nd_cfg_add_user(a, &au.users[i]);
    nd_cfg_auth_clear(&au);
    return rc;
}
