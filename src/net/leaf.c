/* Leaf nodes: the leaf connection's protocol, the leaf table and the dialer (nats-server 2.9's
 * leafnode.go).
 *
 * Handshake. The accepting side (the hub) sends INFO at once (our id, name, client_id, a nonce,
 * leafnode_urls, info_on_connect; tls_required with leafnodes { tls }, after which the TLS
 * handshake starts: 2.9.10 has no TLS-first for leafs) and waits for CONNECT; with leafnodes {
 * authorization } it checks the user (user/password, or users [ {user, password, account} ]);
 * without it, the client authorization (users, nkeys, accounts, token, operator-mode JWTs with
 * the nonce signed) checks the CONNECT; then it binds the connection to that user's account ($G
 * otherwise), refuses a leaf older than min_version (INFO, then -ERR), and answers with a second
 * INFO (connect_info, remote_account, and the user's permissions as import/export). The
 * soliciting side (the leaf) waits for the hub's INFO, refuses one without client_id and
 * leafnode_urls (a wrong port), starts TLS when the INFO or its remote asks for it, sends
 * CONNECT (our id and name, is_hub, the URL's credentials, the hub's nonce signed with the
 * remote's credentials file or nkey seed) and finishes at once, or when the INFO with
 * connect_info comes if the hub said info_on_connect. The transport is the connection's
 * (net/transport.h): TCP, or TLS by conn_tls.c; another (WebSocket) plugs in the same way, the
 * dialer handing spawn() a connected socket.
 *
 * Permissions (below): deny_imports/deny_exports, the hub's import/export, a hub user's
 * permissions turned around, and JetStream's denies become the connection's permission set.
 *
 * Interest. Once registered, a connection watches its bound account (subj/interest.h): every
 * subscription of that account, except its own, is counted per subject and per subject and
 * queue group (nats-server's smap) and a count going 0 -> 1 or 1 -> 0 becomes LS+ / LS- (a queue
 * group: LS+ with its count on every change). On a connection where we are the leaf (a spoke)
 * only local clients' and other hubs-side leafs' interest goes to the hub, as nats-server. Each
 * side also sends LS+ $LDS.<id>: receiving our own back means a loop. The peer's LS+ becomes a
 * subscription of this connection in the bound account (origin ND_SUB_LEAF, or ND_SUB_LEAF_HUB
 * on a spoke connection, whose interest is not sent on to routes); LS- removes it.
 *
 * Messages. An LMSG/HMSG waits until every LS+ before it is in place (as a route's RMSG), then
 * goes to local subscribers, to routes (unless it came from our hub) and to other leaf
 * connections, never back to its own (deliver.c).
 *
 * The dialer is a thread of its own (as the route dialer): each remote is one job that connects
 * to its URLs in turn, every `reconnect` interval (1 s by default) until one answers, and again
 * after the connection closes.
 *
 * Refusals and back-off: a loop (our $LDS. back), or the hub's "Loop detected", "same cluster
 * name" and "minimum version required" errors make the remote wait 30 s, 30 s and 5 s (the
 * table's *_delay_ns) before it dials again, and say so in the log; failed dials are retried
 * after the reconnect interval plus up to as much again (jitter), logged as
 * connect_error_reports / reconnect_error_reports say. The hub's leafnode_urls (its own and its
 * cluster's members', learnt from the routes' INFO) join the remote's URLs.
 *
 * WebSocket: a remote with a ws:// URL is dialed with the client side of the upgrade (path
 * /leafnode, net/ws.c) and its connection's frames are masked; the hub side comes from the
 * websocket port (conn_ws.c hands an upgrade on /leafnode to nd_conn_ws_become_leaf).
 *
 * Not yet: wss:// remotes, compression (2.10).
 */
#include "net/leaf_int.h"
#include "net/peer_proto_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "auth/auth.h"
#include "auth/jwt.h"
#include "auth/passwd.h"
#include "auth/perms.h"
#include "net/connreg.h"
#include "net/dial_int.h"
#include "net/listener.h"
#include "net/peer_int.h"
#include "net/route.h"
#include "net/tls.h"
#include "net/ws.h"
#include "natsd/natsd.h"
#include "subj/interest.h"
#include "subj/subject.h"
#include "util/gojson.h"
#include "util/log.h"
#include "util/nkey.h"

#define LEAF_DEFAULT_AUTH_TIMEOUT_S 2.0
#define LEAF_DEFAULT_RECONNECT_NS   1000000000ll
#define LEAF_DIAL_TIMEOUT_MS        2000
#define LDS_PREFIX                  "$LDS."
#define NS_PER_S                    1000000000ll
/* nats-server's fixed delays before a remote dials again after the hub refused it. */
#define LEAF_LOOP_DELAY_NS    (30 * NS_PER_S) /* leafNodeReconnectDelayAfterLoopDetected */
#define LEAF_CLUSTER_DELAY_NS (30 * NS_PER_S) /* leafNodeReconnectDelayAfterClusterNameSame */
#define LEAF_MINVER_DELAY_NS  (5 * NS_PER_S)  /* leafNodeMinVersionReconnectDelay */

/* Log prefix of a leaf connection, as nats-server's "<ip>:<port> - lid:<n> - ". */
#define LFMT     "%s:%d - lid:%llu - "
#define LARGS(c) nd_conn_lhost(c), (c)->port, (unsigned long long)(c)->cid

/* One remote to solicit (leafnodes { remotes }). */
struct leaf_job {
    size_t idx;    /* in opts.leaf->remotes */
    size_t next;   /* the URL to try next */
    bool active;   /* dialing, or its connection is up */
    bool ever_connected; /* connect_error_reports until then, reconnect_error_reports after */
    int attempts;
    int64_t due_ns;
    int64_t delay_ns;   /* the hub asked us to wait this long before the next dial (a loop...) */
    char url[512];      /* the URL of the current attempt */
    nd_tls_ctx_t *tls;  /* the remote's tls {} (client side), or NULL */
    nd_strlist_t found; /* "host:port" URLs the hub's INFO gave (leafnode_urls), under dmu */
    nd_permset_t *deny; /* deny_exports (publish) and deny_imports (subscribe), or NULL */
    nd_ws_dial_t wsd;   /* ws:// URL: what the upgrade asked for and got */
};

struct nd_leafs {
    nd_server_t *srv;
    const nd_leaf_opts_t *o;
    struct nd_listener *listener;
    int port;
    char lds[64]; /* our loop detection subject */
    int64_t reconnect_ns;
    nd_tls_ctx_t *tls; /* leafnodes { tls }: the accepting side's context, or NULL */
    /* The hub's refusals: how long a remote waits before it dials again. */
    int64_t loop_delay_ns, cluster_delay_ns, minver_delay_ns;
    /* Every permission set a leaf connection had, kept until the table is freed: publishers
     * read a connection's rperms while they may still hold one of its subscriptions (the same
     * rule as the auth slot's). Under mu. */
    nd_permset_t **kept;
    size_t nkept, capkept;
    /* the registered connections (a reference each), under mu */
    pthread_mutex_t mu;
    nd_conn_t **conns;
    size_t n, cap;
    /* the dialer */
    pthread_t th;
    bool started;
    pthread_mutex_t dmu;
    pthread_cond_t dcv;
    bool stop;
    bool stopped; /* nd_leafs_stop ran */
    leaf_job_t *jobs;
    size_t njobs;
};

static int64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---- writing to a connection from another actor ---- */

typedef struct lproto_msg {
    nd_msg_t hdr;
    uint32_t len;
    char data[];
} lproto_msg_t;

/* Queues bytes for leaf connection c to write as they are (the route's RPROTO message). */
static void
send_proto(nd_ctx_t *ctx, nd_conn_t *c, const char *data, size_t len)
{
    lproto_msg_t *m = (lproto_msg_t *)nd_msg_new(ctx, sizeof(*m) + len, ND_CONN_MSG_RPROTO);
    m->len = (uint32_t)len;
    memcpy(m->data, data, len);
    nd_actor_send(ctx, &c->base, &m->hdr);
}

/* ---- the interest a connection sends: its watch of the bound account ---- */

typedef struct smap_ent {
    struct smap_ent *next;
    uint64_t hash;
    int32_t count;
    uint32_t len;
    bool queue;
    char key[]; /* "subject" or "subject queue" */
} smap_ent_t;

/* A connection's watch (owner: the bound account's turn; the connection only creates it and asks
 * for its release). */
typedef struct leaf_watch {
    nd_interest_watcher_t w; /* first */
    nd_conn_t *c;            /* a reference */
    bool spoke;
    bool dumping;
    const nd_permset_t *perms; /* the connection's at registration (the table keeps it) */
    const char *lds;           /* the table's (it outlives every connection) */
    smap_ent_t **b;            /* NULL until the first entry */
    size_t nb, n;
} leaf_watch_t;

static smap_ent_t **
smap_slot(leaf_watch_t *lw, const char *key, size_t len, uint64_t h)
{
    smap_ent_t **pp = &lw->b[h & (lw->nb - 1)];
    while (*pp != NULL && !((*pp)->hash == h && (*pp)->len == len && memcmp((*pp)->key, key, len) == 0))
        pp = &(*pp)->next;
    return pp;
}

static void
smap_grow(leaf_watch_t *lw)
{
    /* Small at first: most leafs of a hub see few subjects (an idle one only its peers' $LDS.),
     * and each one keeps its own table. */
    size_t nb = lw->nb ? lw->nb * 2 : 8;
    smap_ent_t **b = nd_xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < lw->nb; i++)
        for (smap_ent_t *e = lw->b[i], *nx; e != NULL; e = nx) {
            nx = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    nd_free(lw->b);
    lw->b = b;
    lw->nb = nb;
}

/* Appends "LS+ key[ n]\r\n" (n > 0) or "LS- key\r\n" to buf. */
static size_t
format_ls(char *out, const smap_ent_t *e, int32_t n)
{
    char *p = out;
    memcpy(p, n > 0 ? "LS+ " : "LS- ", 4);
    p += 4;
    memcpy(p, e->key, e->len);
    p += e->len;
    if (e->queue && n > 0)
        p += sprintf(p, " %d", n);
    memcpy(p, "\r\n", 2);
    return (size_t)(p + 2 - out);
}

static void
watch_on_sub(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w, const nd_sub_t *sub,
             int delta)
{
    (void)acct;
    leaf_watch_t *lw = (leaf_watch_t *)w;
    if (sub->conn == &lw->c->base)
        return; /* its own interest never goes back */
    /* A spoke tells its hub only of local interest and of the leafs it is the hub of. */
    if (lw->spoke && sub->origin != ND_SUB_LOCAL && sub->origin != ND_SUB_LEAF)
        return;
    /* Interest we may not subscribe to is never asked for (nats-server's canSubscribe). */
    if (lw->perms != NULL &&
        !nd_perms_sub_allowed(lw->perms, sub->subject, sub->subject_len, NULL, 0))
        return;
    size_t slen = sub->subject_len, qlen = sub->queue != NULL ? sub->queue_len : 0;
    size_t len = slen + (qlen > 0 ? qlen + 1 : 0);
    char small[512];
    char *key = len <= sizeof small ? small : nd_xmalloc(len);
    memcpy(key, sub->subject, slen);
    if (qlen > 0) {
        key[slen] = ' ';
        memcpy(key + slen + 1, sub->queue, qlen);
    }
    uint64_t h = XXH3_64bits(key, len);
    if (lw->n >= lw->nb)
        smap_grow(lw);
    smap_ent_t **pp = smap_slot(lw, key, len, h);
    smap_ent_t *e = *pp;
    if (e == NULL) {
        if (delta < 0) {
            if (key != small)
                nd_free(key);
            return;
        }
        e = nd_xcalloc(1, sizeof(*e) + len);
        e->hash = h;
        e->len = (uint32_t)len;
        e->queue = qlen > 0;
        memcpy(e->key, key, len);
        *pp = e;
        lw->n++;
    }
    if (key != small)
        nd_free(key);
    int32_t before = e->count;
    e->count += delta;
    if (!lw->dumping && (e->queue || before == 0 || e->count <= 0)) {
        char line[600];
        char *buf = e->len + 32 <= sizeof line ? line : nd_xmalloc(e->len + 32);
        send_proto(ctx, lw->c, buf, format_ls(buf, e, e->count));
        if (buf != line)
            nd_free(buf);
    }
    if (e->count <= 0) {
        *smap_slot(lw, e->key, e->len, e->hash) = e->next;
        lw->n--;
        nd_free(e);
    }
}

static void
watch_on_dump_end(nd_ctx_t *ctx, nd_acct_t *acct, nd_interest_watcher_t *w)
{
    (void)acct;
    leaf_watch_t *lw = (leaf_watch_t *)w;
    lw->dumping = false;
    size_t cap = 4096, len = 0;
    char *buf = nd_xmalloc(cap);
    for (size_t i = 0; i < lw->nb; i++)
        for (smap_ent_t *e = lw->b[i]; e != NULL; e = e->next) {
            if (len + e->len + 32 > cap) {
                cap = nd_grow_cap(cap, len + e->len + 32, 4096);
                buf = nd_xrealloc(buf, cap);
            }
            len += format_ls(buf + len, e, e->count);
        }
    /* Our loop detection subject: seeing it come back means the messages would loop. */
    size_t ll = strlen(lw->lds);
    if (len + ll + 8 > cap)
        buf = nd_xrealloc(buf, len + ll + 8);
    len += (size_t)sprintf(buf + len, "LS+ %s\r\n", lw->lds);
    send_proto(ctx, lw->c, buf, len);
    nd_free(buf);
}

static void
watch_on_release(nd_ctx_t *ctx, nd_interest_watcher_t *w)
{
    leaf_watch_t *lw = (leaf_watch_t *)w;
    for (size_t i = 0; i < lw->nb; i++)
        for (smap_ent_t *e = lw->b[i], *nx; e != NULL; e = nx) {
            nx = e->next;
            nd_free(e);
        }
    nd_free(lw->b);
    nd_actor_unref(ctx, &lw->c->base);
    nd_free(lw);
}

/* ---- permissions ----
 *
 * A leaf connection's permissions say what it may send to the peer (publish) and which interest
 * it may ask the peer for (subscribe), as nats-server's c.perms on a leaf connection:
 *   - we send LS+ only for subjects we may subscribe to (updateLeafNodes' canSubscribe);
 *   - the peer's LS+ for a literal subject we may not publish to is a violation: the hub sends
 *     -ERR and closes, a spoke ignores it (the hub told it its permissions);
 *   - a message goes to the peer only when we may publish its subject ("Not permitted to
 *     deliver", deliver.c).
 * A solicited connection starts with the remote's deny_exports (publish deny) and deny_imports
 * (subscribe deny), and adds the import (subscribe) and export (publish) permissions the hub's
 * INFO carries. An accepted one has its user's permissions turned around: what the leaf may
 * publish is what we accept interest for, what it may subscribe to is what we may send it. */

static void
perms_add_list(nd_permset_t *p, nd_perms_kind_t kind, const nd_strlist_t *list)
{
    for (size_t i = 0; list != NULL && i < list->n; i++) {
        nd_perms_add_t r = nd_perms_add(p, kind, list->v[i], strlen(list->v[i]));
        (void)r; /* nats-server skips an invalid entry too */
    }
}

/* Adds {"allow":[...],"deny":[...]} (an INFO's import or export) to p. Returns: whether it
 * added anything. */
static bool
perms_add_json(nd_permset_t *p, nd_perms_kind_t allow, nd_perms_kind_t deny, json_t *o)
{
    bool any = false;
    json_t *a = json_object_get(o, "allow"), *d = json_object_get(o, "deny"), *v;
    size_t i;
    json_array_foreach(a, i, v) if (json_is_string(v))
    {
        nd_perms_add_t r = nd_perms_add(p, allow, json_string_value(v), json_string_length(v));
        (void)r;
        any = true;
    }
    if (json_is_array(a) && allow == ND_PERMS_PUB_ALLOW) {
        nd_perms_set_pub_allow_present(p);
        any = true;
    }
    json_array_foreach(d, i, v) if (json_is_string(v))
    {
        nd_perms_add_t r = nd_perms_add(p, deny, json_string_value(v), json_string_length(v));
        (void)r;
        any = true;
    }
    return any;
}

/* One side of a permission set as an INFO's import/export. Returns: NULL when it says nothing. */
static json_t *
perm_side_json(const nd_perm_list_t *allow, bool allow_set, const nd_perm_list_t *deny)
{
    if (!allow_set && allow->n == 0 && deny->n == 0)
        return NULL;
    json_t *o = json_object();
    const nd_perm_list_t *l[2] = {allow, deny};
    for (int k = 0; k < 2; k++) {
        if (k == 0 ? !allow_set && allow->n == 0 : deny->n == 0)
            continue;
        json_t *arr = json_array();
        for (uint32_t i = 0; i < l[k]->n; i++) {
            const nd_perm_entry_t *e = &l[k]->v[i];
            char buf[1024];
            snprintf(buf, sizeof buf, "%.*s%s%.*s", (int)e->slen, e->subject, e->queue ? " " : "",
                     e->queue ? (int)e->qlen : 0, e->queue ? e->queue : "");
            json_array_append_new(arr, json_string(buf));
        }
        json_object_set_new(o, k == 0 ? "allow" : "deny", arr);
    }
    return o;
}

/* Adds the entries of from's list to p as kind. */
static void
perms_copy_list(nd_permset_t *p, nd_perms_kind_t kind, const nd_perm_list_t *from)
{
    for (uint32_t i = 0; i < from->n; i++) {
        const nd_perm_entry_t *e = &from->v[i];
        char buf[1024];
        int n =
            snprintf(buf, sizeof buf, "%.*s%s%.*s", (int)e->slen, e->subject, e->queue ? " " : "",
                     e->queue ? (int)e->qlen : 0, e->queue ? e->queue : "");
        if (n < 0 || (size_t)n >= sizeof buf)
            continue; /* no subject is that long (max_control_line) */
        nd_perms_add_t r = nd_perms_add(p, kind, buf, (size_t)n);
        (void)r;
    }
}

/* An accepted leaf's user permissions, turned around (the comment above). Returns: a new
 * sealed set, or NULL when u restricts nothing. */
static nd_permset_t *
perms_reversed(const nd_permset_t *u)
{
    if (u == NULL)
        return NULL;
    nd_permset_t *p = nd_perms_new();
    perms_copy_list(p, ND_PERMS_PUB_ALLOW, &u->sub_allow);
    if (u->sub_allow_set)
        nd_perms_set_pub_allow_present(p);
    perms_copy_list(p, ND_PERMS_PUB_DENY, &u->sub_deny);
    perms_copy_list(p, ND_PERMS_SUB_ALLOW, &u->pub_allow);
    perms_copy_list(p, ND_PERMS_SUB_DENY, &u->pub_deny);
    nd_perms_seal(p);
    return p;
}

static bool
list_equal(const nd_perm_list_t *a, const nd_perm_list_t *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++) {
        const nd_perm_entry_t *x = &a->v[i], *y = &b->v[i];
        if (x->slen != y->slen || memcmp(x->subject, y->subject, x->slen) != 0 ||
            (x->queue == NULL) != (y->queue == NULL) ||
            (x->queue != NULL && (x->qlen != y->qlen || memcmp(x->queue, y->queue, x->qlen) != 0)))
            return false;
    }
    return true;
}

static bool
perms_equal(const nd_permset_t *a, const nd_permset_t *b)
{
    return a->pub_allow_set == b->pub_allow_set && a->sub_allow_set == b->sub_allow_set &&
           a->has_resp == b->has_resp && list_equal(&a->pub_allow, &b->pub_allow) &&
           list_equal(&a->pub_deny, &b->pub_deny) && list_equal(&a->sub_allow, &b->sub_allow) &&
           list_equal(&a->sub_deny, &b->sub_deny);
}

/* Keeps p (takes the caller's reference) for the life of the table; an equal set kept before
 * is used instead, so that reconnecting leafs do not add one each. Returns: the set to use. */
static nd_permset_t *
perms_keep(nd_leafs_t *l, nd_permset_t *p)
{
    if (p == NULL)
        return NULL;
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->nkept; i++)
        if (perms_equal(l->kept[i], p)) {
            nd_permset_t *same = l->kept[i];
            pthread_mutex_unlock(&l->mu);
            nd_perms_unref(p);
            return same;
        }
    if (l->nkept == l->capkept) {
        l->capkept = l->capkept ? l->capkept * 2 : 8;
        l->kept = nd_xrealloc(l->kept, l->capkept * sizeof(*l->kept));
    }
    l->kept[l->nkept++] = p;
    pthread_mutex_unlock(&l->mu);
    return p;
}

/* Makes p the connection's permissions (borrowed: the table keeps it). */
static void
set_perms(nd_conn_t *c, nd_permset_t *p)
{
    c->leaf->perms = p;
    /* deliver.c reads it when it sends a message to this connection. */
    atomic_store_explicit(&c->rperms, p, memory_order_relaxed);
}

/* JetStream across leaf nodes. natsd's JetStream never spans servers, so it is never extended
 * over a leaf connection: as nats-server does when it does not extend, the JetStream API and the
 * KV and object store subjects ($JS.API.>, $KV.>, $OBJ.>; for the system account also $JSC.>
 * and $NRG.>) neither go over the connection nor are asked for, each side's own JetStream
 * answers its own clients, and the other side's is reached by its domain ($JS.<domain>.API.>,
 * which js.c subscribes to). With a domain of our own, requests addressed to it never leave
 * either. The connection's permissions get these denies at registration. */
static const char *const js_denies[] = {"$JS.API.>", "$KV.>", "$OBJ.>", "$JSC.>", "$NRG.>"};

static void
add_js_denies(nd_conn_t *c)
{
    nd_leafs_t *l = c->srv->leafs;
    const char *sys = nd_opts_system_account(&c->srv->opts);
    bool is_sys = sys != NULL && strcmp(sys, c->acct->name) == 0;
    size_t n = is_sys ? 5 : 3;
    const nd_permset_t *old = c->leaf->perms;
    nd_permset_t *p = nd_perms_new();
    if (old != NULL) {
        perms_copy_list(p, ND_PERMS_PUB_ALLOW, &old->pub_allow);
        if (old->pub_allow_set)
            nd_perms_set_pub_allow_present(p);
        perms_copy_list(p, ND_PERMS_PUB_DENY, &old->pub_deny);
        perms_copy_list(p, ND_PERMS_SUB_ALLOW, &old->sub_allow);
        perms_copy_list(p, ND_PERMS_SUB_DENY, &old->sub_deny);
    }
    char list[128] = "";
    for (size_t i = 0; i < n; i++) {
        nd_perms_add_t r = nd_perms_add(p, ND_PERMS_PUB_DENY, js_denies[i], strlen(js_denies[i]));
        r = nd_perms_add(p, ND_PERMS_SUB_DENY, js_denies[i], strlen(js_denies[i]));
        (void)r;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? " " : "",
                 js_denies[i]);
    }
    const nd_js_opts_t *jo = c->srv->opts.js;
    if (c->srv->opts.jetstream && jo != NULL && jo->domain != NULL && jo->domain[0] != '\0') {
        char own[300];
        int k = snprintf(own, sizeof own, "$JS.%s.API.>", jo->domain);
        if (k > 0 && (size_t)k < sizeof own) {
            nd_perms_add_t r = nd_perms_add(p, ND_PERMS_PUB_DENY, own, (size_t)k);
            (void)r;
        }
        nd_log_debug(LFMT "Adding deny \"%s\" for outgoing messages to account \"%s\"", LARGS(c),
                     own, c->acct->name);
    }
    nd_perms_seal(p);
    set_perms(c, perms_keep(l, p));
    if (is_sys)
        nd_log_info(LFMT "JetStream not extended, domains differ", LARGS(c));
    else
        nd_log_info(LFMT "JetStream Not Extended, adding deny [%s] for account \"%s\"", LARGS(c),
                    list, c->acct->name);
}

/* ---- the leaf table ---- */

/* Replaces the owned string *dst with a copy of v (NULL: none). */
static void
set_str(char **dst, const char *v)
{
    nd_free(*dst);
    *dst = v != NULL ? nd_xstrdup(v) : NULL;
}

/* Frees what only the handshake needed (leaf_int.h). */
static void
handshake_done(nd_leaf_t *lf)
{
    set_str(&lf->nonce, NULL);
    set_str(&lf->remote_name, NULL);
}

static void
register_leaf(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_leafs_t *l = c->srv->leafs;
    nd_leaf_t *lf = c->leaf;
    pthread_mutex_lock(&l->mu);
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->conns = nd_xrealloc(l->conns, l->cap * sizeof(*l->conns));
    }
    nd_actor_ref(&c->base);
    l->conns[l->n++] = c;
    pthread_mutex_unlock(&l->mu);
    lf->registered = true;
    c->connected = true;
    add_js_denies(c);
    c->mon.start_ns = nd_mon_wall_ns();
    leaf_watch_t *lw = nd_new(leaf_watch_t);
    lw->w.on_sub = watch_on_sub;
    lw->w.on_dump_end = watch_on_dump_end;
    lw->w.on_release = watch_on_release;
    lw->c = c;
    nd_actor_ref(&c->base);
    lw->spoke = lf->spoke;
    lw->perms = lf->perms;
    lw->dumping = true;
    lw->lds = l->lds;
    lf->watch = lw;
    nd_interest_watch(ctx, c->acct, &lw->w);
    const char *name = lf->remote_name != NULL ? lf->remote_name : "";
    nd_log_info(LFMT "Leafnode connection created%s%s for account: %s", LARGS(c),
                name[0] ? " " : "", name, c->acct->name);
    handshake_done(lf);
}

/* Seconds as Go's JSON writes a float64: 2 for 2.0, 0.5 for 0.5. */
static json_t *
go_seconds(double v)
{
    return v == (double)(int64_t)v ? json_integer((json_int_t)v) : json_real(v);
}

void
nd_leafs_varz(nd_leafs_t *l, json_t *o)
{
    const nd_leaf_opts_t *lo = l->o;
    /* nats-server fills the listener's fields only with a leaf port (omitempty otherwise). */
    if (lo->port != 0) {
        json_object_set_new(o, "host", json_string(lo->host ? lo->host : "0.0.0.0"));
        json_object_set_new(o, "port", json_integer(l->port));
        json_object_set_new(
            o, "auth_timeout",
            go_seconds(lo->auth_timeout_s > 0 ? lo->auth_timeout_s : LEAF_DEFAULT_AUTH_TIMEOUT_S));
        json_object_set_new(o, "tls_timeout",
                            go_seconds(l->tls != NULL ? (double)l->tls->timeout_ms / 1000.0 : 2.0));
    }
    if (l->tls != NULL) {
        json_object_set_new(o, "tls_required", json_true());
        if (l->tls->verify)
            json_object_set_new(o, "tls_verify", json_true());
    }
    if (lo->nremotes > 0) {
        json_t *arr = json_array();
        for (size_t i = 0; i < lo->nremotes; i++) {
            const nd_leaf_remote_t *rm = &lo->remotes[i];
            json_t *e = json_object();
            if (rm->account != NULL && rm->account[0] != '\0')
                json_object_set_new(e, "local_account", json_string(rm->account));
            json_t *urls = json_array();
            for (size_t k = 0; k < rm->urls.n; k++) {
                /* host:port only: a URL's credentials stay out of monitoring */
                char h[256], u[128], p[128], hp[300];
                int port;
                if (nd_leaf_url_parse(rm->urls.v[k], h, sizeof h, &port, u, sizeof u, p,
                                      sizeof p) == 0) {
                    snprintf(hp, sizeof hp, "%s:%d", h, port);
                    json_array_append_new(urls, json_string(hp));
                }
            }
            json_object_set_new(e, "urls", urls);
            if (rm->deny_exports.n > 0 || rm->deny_imports.n > 0) {
                json_t *d = json_object();
                const nd_strlist_t *l2[2] = {&rm->deny_exports, &rm->deny_imports};
                for (int w = 0; w < 2; w++) {
                    if (l2[w]->n == 0)
                        continue; /* omitempty */
                    json_t *arr2 = json_array();
                    for (size_t k = 0; k < l2[w]->n; k++)
                        json_array_append_new(arr2, json_string(l2[w]->v[k]));
                    json_object_set_new(d, w == 0 ? "exports" : "imports", arr2);
                }
                json_object_set_new(e, "deny", d);
            }
            json_array_append_new(arr, e);
        }
        json_object_set_new(o, "remotes", arr);
    }
}

size_t
nd_leafs_count(nd_leafs_t *l)
{
    if (l == NULL)
        return 0;
    pthread_mutex_lock(&l->mu);
    size_t n = l->n;
    pthread_mutex_unlock(&l->mu);
    return n;
}

size_t
nd_leafs_stats(nd_leafs_t *l, nd_leaf_stat_t **out, nd_conn_info_t ***infos)
{
    pthread_mutex_lock(&l->mu);
    size_t n = l->n;
    nd_leaf_stat_t *v = nd_xcalloc(n > 0 ? n : 1, sizeof(*v));
    if (infos != NULL) {
        *infos = nd_xcalloc(n > 0 ? n : 1, sizeof(**infos));
        for (size_t i = 0; i < n; i++) {
            nd_conn_info_t *ci = nd_new(nd_conn_info_t);
            atomic_init(&ci->refs, 1);
            ci->cid = l->conns[i]->cid;
            ci->kind = ND_CONN_LEAF;
            ci->actor = &l->conns[i]->base;
            nd_actor_ref(ci->actor);
            (*infos)[i] = ci;
        }
    }
    for (size_t i = 0; i < n; i++) {
        nd_conn_t *c = l->conns[i];
        const nd_mon_conn_t *m = &c->mon;
        nd_leaf_stat_t *s = &v[i];
        snprintf(s->account, sizeof s->account, "%s", c->acct->name);
        snprintf(s->ip, sizeof s->ip, "%s", c->ip);
        s->port = c->port;
        s->rtt_ns = atomic_load_explicit(&m->rtt_ns, memory_order_relaxed);
        s->in_msgs = atomic_load_explicit(&m->in_msgs, memory_order_relaxed);
        s->in_bytes = atomic_load_explicit(&m->in_bytes, memory_order_relaxed);
        s->out_msgs = atomic_load_explicit(&m->out_msgs, memory_order_relaxed);
        s->out_bytes = atomic_load_explicit(&m->out_bytes, memory_order_relaxed);
        s->subs = atomic_load_explicit(&m->num_subs, memory_order_relaxed);
    }
    pthread_mutex_unlock(&l->mu);
    *out = v;
    return n;
}

/* ---- handshake ---- */

static void
nonce_of(char *out)
{
    uint8_t raw[11];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        memset(raw, 7, sizeof raw);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (size_t i = 0; i < 11; i++)
        out[i] = b64[raw[i] & 63];
    out[11] = '\0';
}

bool
nd_leafs_own_url(const nd_leafs_t *l, bool gossip, char *out, size_t cap)
{
    if (l == NULL || l->listener == NULL || (gossip && l->o->no_advertise))
        return false;
    if (l->o->advertise != NULL && l->o->advertise[0] != '\0') {
        snprintf(out, cap, "%s", l->o->advertise);
        return true;
    }
    const char *host = l->o->host != NULL && l->o->host[0] ? l->o->host : "0.0.0.0";
    snprintf(out, cap, "%s:%d",
             strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 ? "127.0.0.1" : host, l->port);
    return true;
}

/* leafnode_urls: ours (unless no_advertise) and those of our cluster's members. */
static json_t *
leaf_urls_json(nd_server_t *s)
{
    json_t *urls = json_array();
    char own[300];
    if (nd_leafs_own_url(s->leafs, false, own, sizeof own))
        json_array_append_new(urls, json_string(own));
    if (s->routes != NULL)
        nd_routes_leaf_urls(s->routes, urls);
    return urls;
}

void
nd_leafs_urls_changed(nd_ctx_t *ctx, nd_leafs_t *l)
{
    /* One INFO for every leaf we are the hub of, as nats-server's sendAsyncLeafNodeInfo. */
    nd_server_t *s = l->srv;
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "server_name",
                        json_string(s->opts.server_name ? s->opts.server_name : s->server_id));
    json_object_set_new(o, "version", json_string(NATSD_COMPAT_VERSION));
    json_object_set_new(o, "proto", json_integer(1));
    json_object_set_new(o, "headers", json_boolean(!s->opts.no_header_support));
    json_object_set_new(o, "leafnode_urls", leaf_urls_json(s));
    size_t n;
    char *line = nd_peer_info_line(o, &n);
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++)
        if (l->conns[i]->leaf->job == NULL)
            send_proto(ctx, l->conns[i], line, n);
    pthread_mutex_unlock(&l->mu);
    nd_free(line);
}

/* Our leaf INFO (the accepting side). connect_info: the answer to CONNECT. */
static void
write_info(nd_conn_t *c, bool connect_info)
{
    nd_server_t *s = c->srv;
    nd_leafs_t *l = s->leafs;
    json_t *o = json_object();
    json_object_set_new(o, "server_id", json_string(s->server_id));
    json_object_set_new(o, "server_name",
                        json_string(s->opts.server_name ? s->opts.server_name : s->server_id));
    json_object_set_new(o, "version", json_string(NATSD_COMPAT_VERSION));
    json_object_set_new(o, "proto", json_integer(1));
    json_object_set_new(o, "go", json_string("natsd " NATSD_VERSION));
    const char *host = l->o->host != NULL ? l->o->host : "0.0.0.0";
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "port", json_integer(l->port));
    json_object_set_new(o, "headers", json_boolean(!s->opts.no_header_support));
    json_object_set_new(o, "auth_required", json_true());
    if (l->tls != NULL) {
        json_object_set_new(o, "tls_required", json_true());
        if (l->tls->verify)
            json_object_set_new(o, "tls_verify", json_true());
    }
    json_object_set_new(o, "max_payload", json_integer(nd_server_live_get(s, max_payload)));
    char ip[300];
    snprintf(ip, sizeof ip, "%s:%d", strcmp(host, "0.0.0.0") == 0 ? "127.0.0.1" : host, l->port);
    json_object_set_new(o, "ip", json_string(ip));
    json_object_set_new(o, "client_id", json_integer((json_int_t)c->cid));
    if (!connect_info) {
        char nonce[ND_JWT_NONCE_LEN + 1];
        if (!nd_jwt_nonce(nonce))
            nonce_of(nonce);
        set_str(&c->leaf->nonce, nonce);
        json_object_set_new(o, "nonce", json_string(nonce));
    } else if (c->leaf->user_perms != NULL) {
        /* The leaf's own permissions, for it to enforce (sendPermsAndAccountInfo). */
        const nd_permset_t *u = c->leaf->user_perms;
        json_t *imp = perm_side_json(&u->sub_allow, u->sub_allow_set, &u->sub_deny);
        json_t *exp = perm_side_json(&u->pub_allow, u->pub_allow_set, &u->pub_deny);
        if (imp != NULL)
            json_object_set_new(o, "import", imp);
        if (exp != NULL)
            json_object_set_new(o, "export", exp);
    }
    json_object_set_new(o, "leafnode_urls", leaf_urls_json(s));
    if (connect_info) {
        json_object_set_new(o, "remote_account", json_string(c->acct->name));
        json_object_set_new(o, "connect_info", json_true());
    } else {
        json_object_set_new(o, "info_on_connect", json_true());
    }
    nd_peer_write_op(c, "INFO", o);
}

static const nd_leaf_remote_t *
job_remote(const nd_leafs_t *l, const leaf_job_t *job)
{
    return &l->o->remotes[job->idx];
}

/* Signs the hub's nonce with the remote's credentials file (its user JWT goes along) or nkey
 * seed, as sendLeafConnect. Returns: false after logging why (the connection closes). */
static bool
sign_nonce(nd_conn_t *c, const nd_leaf_remote_t *rm, json_t *o)
{
    const char *nonce = c->leaf->nonce != NULL ? c->leaf->nonce : "";
    char *sig = NULL;
    if (rm->credentials != NULL) {
        nd_log_debug(LFMT "Authenticating with credentials file \"%s\"", LARGS(c), rm->credentials);
        FILE *f = fopen(rm->credentials, "r");
        if (f == NULL) {
            nd_log_error(LFMT "open %s: %s", LARGS(c), rm->credentials, strerror(errno));
            return false;
        }
        char buf[16384];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *jwt = NULL, *seed = NULL;
        nd_err_t err = nd_jwt_creds_parse(buf, n, &jwt, &seed);
        nd_nkey_wipe(buf, n);
        if (err != ND_OK || jwt == NULL || seed == NULL) {
            nd_log_error(LFMT "Credentials file malformed", LARGS(c));
            nd_free(jwt);
            if (seed != NULL)
                nd_nkey_wipe(seed, strlen(seed));
            nd_free(seed);
            return false;
        }
        bool ok = nd_jwt_sign_nonce(seed, strlen(seed), nonce, strlen(nonce), &sig);
        nd_nkey_wipe(seed, strlen(seed));
        nd_free(seed);
        if (!ok) {
            nd_log_error(LFMT "Credentials file has malformed seed", LARGS(c));
            nd_free(jwt);
            return false;
        }
        json_object_set_new(o, "jwt", json_string(jwt));
        nd_free(jwt);
    } else if (rm->nkey != NULL) {
        uint8_t raw[32], pub[32], role = 0;
        char pk[ND_NKEY_PUBLIC_LEN + 1];
        bool ok = nd_nkey_decode_seed(rm->nkey, strlen(rm->nkey), &role, raw) &&
                  nd_nkey_seed_public(raw, pub);
        nd_nkey_wipe(raw, sizeof raw);
        if (!ok || !nd_jwt_sign_nonce(rm->nkey, strlen(rm->nkey), nonce, strlen(nonce), &sig)) {
            nd_log_error(LFMT "Remote nkey has malformed seed", LARGS(c));
            return false;
        }
        nd_nkey_encode_public(role, pub, pk);
        json_object_set_new(o, "nkey", json_string(pk));
    } else {
        return true;
    }
    json_object_set_new(o, "sig", json_string(sig));
    nd_free(sig);
    return true;
}

static bool
write_connect(nd_conn_t *c)
{
    nd_leafs_t *l = c->srv->leafs;
    const nd_leaf_remote_t *rm = job_remote(l, c->leaf->job);
    char host[256], user[128] = "", pass[128] = "";
    int port;
    (void)nd_leaf_url_parse(c->leaf->job->url, host, sizeof host, &port, user, sizeof user, pass,
                            sizeof pass);
    json_t *o = json_object();
    json_object_set_new(o, "version", json_string(NATSD_COMPAT_VERSION));
    if (!sign_nonce(c, rm, o)) {
        json_decref(o);
        return false;
    }
    if (user[0] != '\0')
        json_object_set_new(o, "user", json_string(user));
    if (pass[0] != '\0')
        json_object_set_new(o, "pass", json_string(pass));
    else if (user[0] != '\0')
        json_object_set_new(o, "auth_token", json_string(user)); /* a user alone is a token */
    json_object_set_new(o, "tls_required", json_boolean(c->tls != NULL));
    json_object_set_new(o, "server_id", json_string(c->srv->server_id));
    json_object_set_new(o, "name", json_string(c->srv->opts.server_name ? c->srv->opts.server_name
                                                                        : c->srv->server_id));
    if (rm->hub)
        json_object_set_new(o, "is_hub", json_true());
    if (c->srv->routes != NULL) {
        char cl[128];
        nd_routes_name(c->srv->routes, cl, sizeof cl);
        json_object_set_new(o, "cluster", json_string(cl)); /* the hub refuses its own */
    }
    if (!c->srv->opts.no_header_support)
        json_object_set_new(o, "headers", json_true());
    nd_peer_write_op(c, "CONNECT", o);
    return true;
}

void
nd_leaf_conn_start(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_leafs_t *l = c->srv->leafs;
    c->mon.start_ns = nd_mon_wall_ns();
    atomic_store_explicit(&c->mon.last_ns, c->mon.start_ns, memory_order_relaxed);
    if (c->leaf->job != NULL) {
        nd_log_debug(LFMT "Leafnode connection created for account: %s", LARGS(c), c->acct->name);
        set_perms(c, c->leaf->job->deny); /* until the hub's INFO says more */
        /* The hub speaks first; its INFO must come within the auth timeout. */
        nd_timer_start(ctx, &c->auth_timer, (uint64_t)(LEAF_DEFAULT_AUTH_TIMEOUT_S * 1e9), 0);
        return;
    }
    write_info(c, false);
    double t = l->o->auth_timeout_s > 0 ? l->o->auth_timeout_s : LEAF_DEFAULT_AUTH_TIMEOUT_S;
    if (l->tls != NULL && l->o->auth_timeout_s <= 0)
        t = (double)l->tls->timeout_ms / 1000.0 + 1.0; /* TLS handshake, then CONNECT */
    nd_timer_start(ctx, &c->auth_timer, (uint64_t)(t * 1e9), 0);
    if (l->tls != NULL)
        nd_conn_tls_begin_leaf(ctx, c, l->tls, NULL); /* the INFO goes first, in plain text */
}

static void
leaf_fail(nd_ctx_t *ctx, nd_conn_t *c, const char *text, nd_close_reason_t reason)
{
    char line[512];
    int n = snprintf(line, sizeof line, "-ERR '%s'\r\n", text);
    nd_conn_write(c, line, (size_t)n);
    nd_conn_close(ctx, c, reason);
}

/* Switches c to account name (a reference). Returns: false when there is no such account. */
static bool
bind_account(nd_ctx_t *ctx, nd_conn_t *c, const char *name)
{
    nd_acct_t *acct = NULL;
    if (name == NULL || strcmp(name, "$G") == 0) {
        acct = c->srv->gacct;
        nd_actor_ref(&acct->actor);
    } else {
        nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
        acct = a != NULL ? nd_auth_find(a, name, strlen(name)) : NULL;
        if (acct != NULL)
            nd_actor_ref(&acct->actor);
        nd_auth_unref(ctx, a);
    }
    if (acct == NULL)
        return false;
    nd_acct_t *old = c->acct;
    c->acct = acct;
    nd_actor_unref(ctx, &old->actor);
    return true;
}

static bool
pass_ok(const char *stored, const char *given)
{
    if (stored == NULL)
        stored = "";
    if (given == NULL)
        given = "";
    return nd_passwd_check(stored, strlen(stored), given, strlen(given));
}

/* Parses "[v]major.minor.update" (anything after the third number ignored). Returns: false
 * when it is not one. */
static bool
version_parts(const char *v, long out[3])
{
    if (v == NULL)
        return false;
    if (*v == 'v')
        v++;
    for (int i = 0; i < 3; i++) {
        char *e;
        if (*v < '0' || *v > '9')
            return false;
        out[i] = strtol(v, &e, 10);
        v = e;
        if (i < 2) {
            if (*v != '.')
                return false;
            v++;
        }
    }
    return true;
}

/* Returns: whether version is at least min (nats-server's versionAtLeast; an unreadable version
 * is not). */
static bool
version_at_least(const char *version, const char *min)
{
    long v[3], m[3];
    if (!version_parts(version, v) || !version_parts(min, m))
        return false;
    for (int i = 0; i < 3; i++)
        if (v[i] != m[i])
            return v[i] > m[i];
    return true;
}

/* The accepting side: the leaf's CONNECT. */
static bool
on_connect(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_leafs_t *l = c->srv->leafs;
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
        return false;
    }
    const char *lang = json_string_value(json_object_get(o, "lang"));
    const char *user = json_string_value(json_object_get(o, "user"));
    const char *pass = json_string_value(json_object_get(o, "pass"));
    const char *name = json_string_value(json_object_get(o, "name"));
    if (lang != NULL && lang[0] != '\0') {
        json_decref(o);
        leaf_fail(ctx, c, "Attempted To Connect To Leafnode Port", ND_CLOSE_WRONG_PORT);
        return false;
    }
    const char *acct = NULL;
    char acct_buf[ND_ACCT_NAME_MAX + 1];
    bool ok = true;
    if (l->o->nusers > 0) {
        ok = false;
        for (size_t i = 0; i < l->o->nusers && !ok; i++) {
            const nd_user_t *u = &l->o->users[i];
            if (u->name != NULL && user != NULL && strcmp(u->name, user) == 0 &&
                pass_ok(u->pass, pass)) {
                ok = true;
                acct = u->account;
            }
        }
    } else if (l->o->user != NULL) {
        ok = user != NULL && strcmp(user, l->o->user) == 0 && pass_ok(l->o->pass, pass);
        acct = l->o->account;
    } else {
        /* No leafnodes authorization: the client authorization decides and binds the leaf to
         * the user's account, as nats-server's isLeafNodeAuthorized falls back to
         * isClientAuthorized; without any, the leaf lands in $G. */
        nd_auth_t *a = nd_auth_slot_get(c->srv->auth);
        if (a != NULL && a->required) {
            nd_auth_creds_t cr = {
                .user = user,
                .pass = pass,
                .token = json_string_value(json_object_get(o, "auth_token")),
                .nkey = json_string_value(json_object_get(o, "nkey")),
                .sig = json_string_value(json_object_get(o, "sig")),
                .jwt = json_string_value(json_object_get(o, "jwt")),
                .nonce = c->leaf->nonce,
                .ip = c->ip,
            };
            nd_auth_grant_t g;
            memset(&g, 0, sizeof g);
            ok = nd_auth_check(a, &cr, &g);
            if (ok && g.acct != NULL)
                snprintf(acct_buf, sizeof acct_buf, "%s", nd_acct_name(g.acct));
            if (ok && g.acct != NULL)
                acct = acct_buf;
            if (ok && g.perms != NULL) {
                c->leaf->user_perms = nd_perms_ref(g.perms);
                set_perms(c, perms_keep(l, perms_reversed(g.perms)));
            }
            if (g.owns_perms && g.perms != NULL)
                nd_perms_unref(g.perms);
        }
        nd_auth_unref(ctx, a);
    }
    if (ok && !bind_account(ctx, c, acct)) {
        nd_log_error(LFMT "Unable to lookup account %s for leafnode", LARGS(c), acct);
        ok = false;
    }
    if (!ok) {
        if (user != NULL && user[0] != '\0')
            nd_log_error(LFMT "authentication error - User \"%s\"", LARGS(c), user);
        else
            nd_log_error(LFMT "authentication error", LARGS(c));
        json_decref(o);
        leaf_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        return false;
    }
    nd_leaf_t *lf = c->leaf;
    const char *cluster = json_string_value(json_object_get(o, "cluster"));
    if (cluster != NULL && cluster[0] != '\0' && c->srv->routes != NULL) {
        char own[128];
        nd_routes_name(c->srv->routes, own, sizeof own);
        if (strcmp(own, cluster) == 0) {
            /* A leaf of our own cluster would loop (the remote waits 30 s). */
            json_decref(o);
            nd_log_error(LFMT "remote leafnode has same cluster name", LARGS(c));
            leaf_fail(ctx, c, "remote leafnode has same cluster name",
                      ND_CLOSE_CLUSTER_NAMES_IDENTICAL);
            return false;
        }
    }
    const char *version = json_string_value(json_object_get(o, "version"));
    if (l->o->min_version != NULL && !version_at_least(version, l->o->min_version)) {
        /* The INFO first, so that the leaf processes the refusal as nats-server's does. */
        json_decref(o);
        write_info(c, true);
        char text[160];
        snprintf(text, sizeof text, "connection rejected since minimum version required is \"%s\"",
                 l->o->min_version);
        nd_log_error(LFMT "%s", LARGS(c), text);
        leaf_fail(ctx, c, text, ND_CLOSE_MIN_VERSION);
        return false;
    }
    lf->connect_seen = true;
    lf->spoke = json_is_true(json_object_get(o, "is_hub"));
    set_str(&lf->remote_name, name);
    atomic_store_explicit(&c->headers,
                          json_is_true(json_object_get(o, "headers")) &&
                              !c->srv->opts.no_header_support,
                          memory_order_relaxed);
    json_decref(o);
    nd_timer_cancel(ctx, &c->auth_timer);
    write_info(c, true);
    register_leaf(ctx, c);
    nd_conn_start_pings(ctx, c);
    return true;
}

/* The soliciting side: sends CONNECT (the hub's first INFO is in, TLS up if asked for). */
static void
send_connect(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_leaf_t *lf = c->leaf;
    if (!write_connect(c)) {
        nd_conn_close(ctx, c, ND_CLOSE_WRITE_ERROR);
        return;
    }
    nd_log_debug(LFMT "Remote leafnode connect msg sent", LARGS(c));
    nd_conn_start_pings(ctx, c);
    if (!lf->hub_info_on_connect)
        register_leaf(ctx, c);
}

void
nd_leaf_tls_up(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->leaf->tls_connect_due) {
        c->leaf->tls_connect_due = false;
        send_connect(ctx, c);
    }
}

/* The soliciting side: the permissions the hub's INFO gives us (import: what we may subscribe
 * to, export: what we may publish), merged with the remote's denies. */
static void
info_perms(nd_conn_t *c, json_t *o)
{
    nd_leafs_t *l = c->srv->leafs;
    json_t *imp = json_object_get(o, "import"), *exp = json_object_get(o, "export");
    if (imp == NULL && exp == NULL)
        return;
    const nd_leaf_remote_t *rm = job_remote(l, c->leaf->job);
    nd_permset_t *p = nd_perms_new();
    perms_add_json(p, ND_PERMS_PUB_ALLOW, ND_PERMS_PUB_DENY, exp);
    perms_add_json(p, ND_PERMS_SUB_ALLOW, ND_PERMS_SUB_DENY, imp);
    perms_add_list(p, ND_PERMS_PUB_DENY, &rm->deny_exports);
    perms_add_list(p, ND_PERMS_SUB_DENY, &rm->deny_imports);
    nd_perms_seal(p);
    set_perms(c, perms_keep(l, p));
}

/* The soliciting side: the hub's INFO. */
static bool
on_info(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_leaf_t *lf = c->leaf;
    if (lf->job == NULL)
        return true; /* nothing to learn from a leaf's INFO */
    json_t *o = nd_gojson_load_object(cmd->arg.ptr, cmd->arg.len);
    if (o == NULL) {
        nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
        return false;
    }
    nd_leafs_t *l = c->srv->leafs;
    if (!lf->registered)
        info_perms(c, o);
    json_t *urls = json_object_get(o, "leafnode_urls");
    if (json_array_size(urls) > 0) {
        /* The hub's cluster: the newest list replaces what we learned before
         * (updateLeafNodeURLs); the configured URLs stay. */
        pthread_mutex_lock(&l->dmu);
        nd_strlist_free(&lf->job->found);
        for (size_t i = 0; i < json_array_size(urls); i++)
            if (json_is_string(json_array_get(urls, i)))
                nd_strlist_add(&lf->job->found, json_string_value(json_array_get(urls, i)));
        pthread_mutex_unlock(&l->dmu);
    }
    if (!lf->info_received) {
        if (json_integer_value(json_object_get(o, "client_id")) == 0 ||
            json_object_get(o, "leafnode_urls") == NULL) {
            nd_log_error(LFMT "attempted to connect to route port", LARGS(c));
            json_decref(o);
            nd_conn_close(ctx, c, ND_CLOSE_WRONG_PORT);
            return false;
        }
        lf->info_received = true;
        const char *id = json_string_value(json_object_get(o, "server_id"));
        const char *name = json_string_value(json_object_get(o, "server_name"));
        const char *nonce = json_string_value(json_object_get(o, "nonce"));
        set_str(&lf->remote_name, name != NULL ? name : id);
        set_str(&lf->nonce, nonce);
        atomic_store_explicit(&c->headers,
                              json_is_true(json_object_get(o, "headers")) &&
                                  !c->srv->opts.no_header_support,
                              memory_order_relaxed);
        lf->hub_info_on_connect = json_is_true(json_object_get(o, "info_on_connect"));
        nd_timer_cancel(ctx, &c->auth_timer);
        leaf_job_t *job = lf->job;
        bool tls = job->tls != NULL || json_is_true(json_object_get(o, "tls_required"));
        json_decref(o);
        if (!tls) {
            send_connect(ctx, c);
            return !c->closing;
        }
        /* The hub's INFO came in plain text; TLS now, then CONNECT (nats-server 2.9's
         * leafnode TLS: INFO first). A hub that requires TLS from a remote without a tls {}
         * is verified against the system's roots, as nats-server's default config does. */
        if (job->tls == NULL) {
            nd_tls_opts_t none;
            memset(&none, 0, sizeof none);
            char err[256];
            nd_tls_ctx_t *t = nd_tls_ctx_new_client(&none, err, sizeof err);
            if (t == NULL) {
                nd_log_error(LFMT "TLS: %s", LARGS(c), err);
                nd_conn_close(ctx, c, ND_CLOSE_TLS_HANDSHAKE);
                return false;
            }
            pthread_mutex_lock(&l->dmu);
            if (job->tls == NULL)
                job->tls = t;
            else
                nd_tls_ctx_unref(t);
            pthread_mutex_unlock(&l->dmu);
        }
        char host[256], user[128], pass[128];
        int port;
        (void)nd_leaf_url_parse(job->url, host, sizeof host, &port, user, sizeof user, pass,
                                sizeof pass);
        lf->tls_connect_due = true;
        nd_conn_tls_begin_leaf(ctx, c, job->tls, host);
        return !c->closing;
    }
    if (json_is_true(json_object_get(o, "connect_info")) && !lf->registered)
        register_leaf(ctx, c);
    json_decref(o);
    return true;
}

/* ---- the peer's interest ---- */

/* Formats ns as Go prints a time.Duration of whole seconds or milliseconds ("30s", "1.5s",
 * "250ms"). */
static void
go_duration(char *out, size_t cap, int64_t ns)
{
    if (ns % NS_PER_S == 0)
        snprintf(out, cap, "%llds", (long long)(ns / NS_PER_S));
    else if (ns < NS_PER_S)
        snprintf(out, cap, "%lldms", (long long)(ns / 1000000));
    else
        snprintf(out, cap, "%gs", (double)ns / 1e9);
}

/* A soliciting connection waits delay before its remote dials again (setConnectDelay).
 * Returns: the delay that applies (none when we did not solicit). */
static int64_t
delay_next_dial(nd_conn_t *c, int64_t delay)
{
    nd_leafs_t *l = c->srv->leafs;
    if (c->leaf->job == NULL)
        return delay;
    pthread_mutex_lock(&l->dmu);
    c->leaf->job->delay_ns = delay;
    pthread_mutex_unlock(&l->dmu);
    return delay;
}

/* Our loop detection subject came back (send_err: we tell the peer), or the peer told us of a
 * loop: the remote waits before it dials again, as handleLeafNodeLoop. */
static void
loop_detected(nd_ctx_t *ctx, nd_conn_t *c, bool send_err)
{
    char text[600], d[32];
    go_duration(d, sizeof d, delay_next_dial(c, c->srv->leafs->loop_delay_ns));
    snprintf(text, sizeof text,
             "Loop detected for leafnode account=\"%s\". Delaying attempt to reconnect for %s",
             c->acct->name, d);
    nd_log_error(LFMT "%s", LARGS(c), text);
    if (send_err)
        leaf_fail(ctx, c, text, ND_CLOSE_PROTOCOL_VIOLATION);
    else
        nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
}

/* The peer's -ERR: the refusals that delay the next dial (leafProcessErr), then the close. */
static void
on_err(nd_ctx_t *ctx, nd_conn_t *c, const char *text, size_t len)
{
    nd_leafs_t *l = c->srv->leafs;
    char t[512], d[32];
    snprintf(t, sizeof t, "%.*s", (int)(len > 500 ? 500 : len), text);
    nd_log_error(LFMT "Leafnode Error %s", LARGS(c), t);
    if (strstr(t, "Loop detected") != NULL) {
        loop_detected(ctx, c, false);
        return;
    }
    if (strstr(t, "same cluster name") != NULL) {
        go_duration(d, sizeof d, delay_next_dial(c, l->cluster_delay_ns));
        nd_log_error(LFMT "Leafnode connection dropped with same cluster name error. Delaying "
                          "attempt to reconnect for %s",
                     LARGS(c), d);
    } else if (strstr(t, "minimum version required") != NULL) {
        go_duration(d, sizeof d, delay_next_dial(c, l->minver_delay_ns));
        nd_log_error(LFMT "Leafnode connection dropped due to minimum version requirement. "
                          "Delaying attempt to reconnect for %s",
                     LARGS(c), d);
    }
    nd_conn_close(ctx, c, ND_CLOSE_PARSE_ERROR);
}

/* Subjects the permissions never refuse in an LS+: loop detection and gateway replies. */
static bool
perm_exempt(const char *s, size_t n)
{
    return (n >= 5 && memcmp(s, LDS_PREFIX, 5) == 0) || (n >= 4 && memcmp(s, "_GR_.", 4) == 0) ||
           (n >= 4 && memcmp(s, "$GR.", 4) == 0);
}

/* The peer asked for interest we may not send it. A spoke ignores it (its hub told it its
 * permissions); a hub refuses it and closes, as leafSubPermViolation. */
static void
sub_violation(nd_ctx_t *ctx, nd_conn_t *c, const char *s, size_t n)
{
    if (c->leaf->spoke) {
        nd_log_debug(LFMT "Not permitted to subscribe to %.*s on behalf of the hub", LARGS(c),
                     (int)n, s);
        return;
    }
    char text[600];
    snprintf(text, sizeof text, "Permissions Violation for Subscription to \"%.*s\"",
             (int)(n > 500 ? 500 : n), s);
    nd_log_error(LFMT "Subscription Violation on \"%.*s\" - Check other side configuration",
                 LARGS(c), (int)n, s);
    leaf_fail(ctx, c, text, ND_CLOSE_PROTOCOL_VIOLATION);
}

static void
on_lsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_leafs_t *l = c->srv->leafs;
    if (cmd->subject.len == strlen(l->lds) &&
        memcmp(cmd->subject.ptr, l->lds, cmd->subject.len) == 0) {
        loop_detected(ctx, c, true);
        return;
    }
    if (!nd_subj_valid_sub(cmd->subject.ptr, cmd->subject.len) ||
        (cmd->queue.len > 0 && !nd_subj_valid_queue(cmd->queue.ptr, cmd->queue.len))) {
        nd_log_error(LFMT "Could not insert subscription: invalid subject", LARGS(c));
        nd_conn_write(c, "-ERR 'Invalid Subscription'\r\n", 29);
        return;
    }
    if (c->leaf->perms != NULL && !perm_exempt(cmd->subject.ptr, cmd->subject.len) &&
        nd_subj_is_literal(cmd->subject.ptr, cmd->subject.len) &&
        !nd_perms_pub_allowed(c->leaf->perms, cmd->subject.ptr, cmd->subject.len)) {
        sub_violation(ctx, c, cmd->subject.ptr, cmd->subject.len);
        return;
    }
    nd_peer_sid_t sid;
    nd_peer_sid_init(&sid, cmd, false);
    uint16_t w = nd_peer_qweight(cmd);
    nd_sub_t *sub = nd_sidmap_get(&c->subs, sid.p, sid.n);
    if (sub != NULL) {
        if (cmd->queue.len > 0)
            atomic_store_explicit(&sub->qweight, w, memory_order_relaxed);
    } else {
        uint8_t origin = c->leaf->spoke ? ND_SUB_LEAF_HUB : ND_SUB_LEAF;
        nd_peer_sub_add(ctx, c, c->acct, cmd, &sid, origin, w, NULL);
    }
    nd_peer_sid_fini(&sid);
}

static void
on_lunsub(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_peer_sid_t sid;
    nd_peer_sid_init(&sid, cmd, false);
    nd_peer_sub_del(ctx, c, c->acct, sid.p, sid.n);
    nd_peer_sid_fini(&sid);
}

static void
on_lmsg(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    c->in_msgs++;
    c->in_bytes += cmd->payload.len;
    nd_proto_cmd_t pub = *cmd;
    pub.op = cmd->op == ND_PROTO_OP_LHMSG ? ND_PROTO_OP_HPUB : ND_PROTO_OP_PUB;
    nd_deliver_leaf_publish(ctx, c, &pub);
}

bool
nd_leaf_handle(nd_ctx_t *ctx, nd_conn_t *c, const nd_proto_cmd_t *cmd)
{
    nd_leaf_t *lf = c->leaf;
    if ((cmd->op == ND_PROTO_OP_LMSG || cmd->op == ND_PROTO_OP_LHMSG) && c->sub_acks_due > 0) {
        c->paused = true; /* until the account placed every LS+ before it (conn.c resumes) */
        return false;
    }
    if (nd_log_enabled(ND_LOG_TRACE))
        nd_log(ND_LOG_TRACE, LFMT "<<- [%s %.*s%.*s]", LARGS(c), nd_proto_op_name(cmd->op),
               (int)cmd->subject.len, cmd->subject.ptr, (int)cmd->arg.len, cmd->arg.ptr);
    if (lf->job == NULL && !lf->connect_seen && cmd->op != ND_PROTO_OP_CONNECT) {
        /* An accepted leaf must say CONNECT first: it binds the account. */
        nd_log_error(LFMT "authentication error", LARGS(c));
        leaf_fail(ctx, c, "Authorization Violation", ND_CLOSE_AUTH_FAILURE);
        return false;
    }
    switch (cmd->op) {
    case ND_PROTO_OP_LMSG:
    case ND_PROTO_OP_LHMSG:
        on_lmsg(ctx, c, cmd);
        return !c->closing;
    case ND_PROTO_OP_LSUB:
        on_lsub(ctx, c, cmd);
        return !c->closing;
    case ND_PROTO_OP_LUNSUB:
        on_lunsub(ctx, c, cmd);
        return true;
    case ND_PROTO_OP_CONNECT:
        if (lf->job != NULL || lf->connect_seen)
            return true;
        return on_connect(ctx, c, cmd);
    case ND_PROTO_OP_INFO:
        return on_info(ctx, c, cmd);
    case ND_PROTO_OP_ERR:
        on_err(ctx, c, cmd->arg.ptr, cmd->arg.len);
        return false;
    default: /* PING, PONG, +OK, and unknown commands as routes and gateways answer them */
        return nd_peer_handle_ctl(ctx, c, cmd, "lid", "Leafnode Error");
    }
}

/* ---- close ---- */

static void job_closed(nd_leafs_t *l, leaf_job_t *job);

void
nd_leaf_teardown(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_leafs_t *l = c->srv->leafs;
    nd_leaf_t *lf = c->leaf;
    size_t n = 0;
    nd_sub_t **subs = nd_sidmap_take_all(&c->subs, &n);
    for (size_t i = 0; i < n; i++)
        if (subs[i] != NULL)
            nd_sub_cancel(subs[i]);
    if (n > 0)
        nd_acct_send_unsub_all(ctx, c->acct, subs, n);
    else
        nd_free(subs);
    if (lf->watch != NULL) {
        nd_interest_unwatch(ctx, c->acct, &lf->watch->w);
        lf->watch = NULL;
    }
    if (lf->registered) {
        nd_conn_t *gone = NULL;
        pthread_mutex_lock(&l->mu);
        for (size_t i = 0; i < l->n; i++)
            if (l->conns[i] == c) {
                gone = c;
                l->conns[i] = l->conns[--l->n];
                break;
            }
        pthread_mutex_unlock(&l->mu);
        if (gone != NULL)
            nd_actor_unref(ctx, &gone->base);
        lf->registered = false;
        nd_log_info(LFMT "Leafnode connection closed: %s account: %s", LARGS(c),
                    nd_close_reason_text(c->reason), c->acct->name);
    } else {
        nd_log_debug(LFMT "Leafnode connection closed: %s", LARGS(c),
                     nd_close_reason_text(c->reason));
    }
    if (lf->job != NULL) {
        job_closed(l, lf->job);
        lf->job = NULL;
    }
}

void
nd_leaf_fini(nd_ctx_t *ctx, nd_conn_t *c)
{
    (void)ctx;
    if (c->leaf->user_perms != NULL)
        nd_perms_unref(c->leaf->user_perms);
    handshake_done(c->leaf);
    nd_free(c->leaf);
    c->leaf = NULL;
}

/* ---- the dialer ---- */

int
nd_leaf_url_parse(const char *url, char *host, size_t hcap, int *port, char *user, size_t ucap,
                  char *pass, size_t pcap)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *end = p + strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@')
            at = q;
    user[0] = pass[0] = '\0';
    if (at != NULL) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ul = colon ? (size_t)(colon - p) : (size_t)(at - p);
        snprintf(user, ucap, "%.*s", (int)ul, p);
        if (colon != NULL)
            snprintf(pass, pcap, "%.*s", (int)(at - colon - 1), colon + 1);
        p = at + 1;
    }
    const char *colon = memchr(p, ':', (size_t)(end - p));
    const char *he = colon ? colon : end;
    if (he <= p || (size_t)(he - p) >= hcap)
        return -1;
    memcpy(host, p, (size_t)(he - p));
    host[he - p] = '\0';
    *port = 7422;
    if (colon != NULL) {
        char *e;
        long v = strtol(colon + 1, &e, 10);
        if (e != end || v <= 0 || v > 65535)
            return -1;
        *port = (int)v;
    }
    return 0;
}

/* Connects to url with a timeout. Returns: the connected non-blocking socket, or -1 with the
 * error text in err. */
static int
dial(const char *url, nd_ws_dial_t *wsd, char *err, size_t ecap)
{
    char host[256], user[128], pass[128];
    int p;
    if (nd_leaf_url_parse(url, host, sizeof host, &p, user, sizeof user, pass, sizeof pass) != 0) {
        snprintf(err, ecap, "invalid URL %.200s", url);
        return -1;
    }
    int fd = nd_dial_tcp(host, p, LEAF_DIAL_TIMEOUT_MS, err, ecap);
    if (fd < 0)
        return -1;
    if (nd_ws_url(url) && nd_ws_client_handshake(fd, host, p, "/leafnode", wsd,
                                                 LEAF_DIAL_TIMEOUT_MS, err, ecap) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void
spawn(nd_ctx_t *ctx, nd_leafs_t *l, int fd, leaf_job_t *job)
{
    nd_leaf_t *lf = nd_new(nd_leaf_t);
    lf->job = job;
    nd_acct_t *acct = NULL;
    if (job != NULL) {
        const nd_leaf_remote_t *rm = job_remote(l, job);
        lf->spoke = !rm->hub;
        lf->ws = nd_ws_url(job->url);
        lf->wsd = job->wsd;
        if (rm->account != NULL && strcmp(rm->account, "$G") != 0) {
            nd_auth_t *a = nd_auth_slot_get(l->srv->auth);
            acct = a != NULL ? nd_auth_find(a, rm->account, strlen(rm->account)) : NULL;
            if (acct != NULL)
                nd_actor_ref(&acct->actor);
            nd_auth_unref(ctx, a);
        }
    }
    if (acct == NULL) {
        acct = l->srv->gacct;
        nd_actor_ref(&acct->actor);
    }
    nd_conn_spawn_leaf(ctx, l->srv, fd, lf, acct);
}

/* Whether the configured URLs name host:port already. */
static bool
configured_url(const nd_leaf_remote_t *rm, const char *hostport)
{
    for (size_t i = 0; i < rm->urls.n; i++) {
        char h[256], u[128], p[128], hp[300];
        int port;
        if (nd_leaf_url_parse(rm->urls.v[i], h, sizeof h, &port, u, sizeof u, p, sizeof p) != 0)
            continue;
        snprintf(hp, sizeof hp, "%s:%d", h, port);
        if (strcmp(hp, hostport) == 0)
            return true;
    }
    return false;
}

/* The next URL to dial into job->url: the configured ones, then those the hub told us of, in
 * turn. A learned URL takes the credentials of the first configured one (saveUserPassword).
 * Ctx: the dialer, under dmu. */
static void
pick_url(leaf_job_t *job, const nd_leaf_remote_t *rm)
{
    size_t n = rm->urls.n + job->found.n;
    for (size_t tries = 0; tries < n; tries++) {
        size_t i = job->next++ % n;
        if (i < rm->urls.n) {
            snprintf(job->url, sizeof job->url, "%s", rm->urls.v[i]);
            return;
        }
        const char *hp = job->found.v[i - rm->urls.n];
        if (configured_url(rm, hp))
            continue;
        char h[256], u[128] = "", p[128] = "";
        int port;
        (void)nd_leaf_url_parse(rm->urls.v[0], h, sizeof h, &port, u, sizeof u, p, sizeof p);
        snprintf(job->url, sizeof job->url, "nats-leaf://%.100s%s%.100s%s%.250s", u,
                 p[0] ? ":" : "", p, u[0] ? "@" : "", hp);
        return;
    }
    snprintf(job->url, sizeof job->url, "%s", rm->urls.v[0]);
}

static void *
dialer_main(void *arg)
{
    nd_leafs_t *l = arg;
    nd_ctx_t *ctx = nd_ctx_external_new(l->srv->pool);
    pthread_mutex_lock(&l->dmu);
    while (!l->stop) {
        int64_t now = now_ns(), next = now + 3600ll * 1000000000ll;
        leaf_job_t *job = NULL;
        for (size_t i = 0; i < l->njobs; i++) {
            leaf_job_t *j = &l->jobs[i];
            if (j->active)
                continue;
            if (j->due_ns <= now) {
                job = j;
                break;
            }
            if (j->due_ns < next)
                next = j->due_ns;
        }
        if (job == NULL) {
            nd_dial_wait(&l->dcv, &l->dmu, next - now);
            continue;
        }
        const nd_leaf_remote_t *rm = job_remote(l, job);
        if (job->delay_ns > 0) {
            /* The hub refused us (a loop, ...): wait that long once more (setConnectDelay). */
            nd_log_debug("Delaying leafnode remote connect by %lld ms",
                         (long long)(job->delay_ns / 1000000));
            job->due_ns = now + job->delay_ns;
            job->delay_ns = 0;
            continue;
        }
        if (rm->urls.n == 0) {
            job->active = true; /* nothing to dial, ever */
            continue;
        }
        pick_url(job, rm);
        job->active = true;
        pthread_mutex_unlock(&l->dmu);
        char err[320];
        nd_log_debug("Trying to connect to leafnode remote %s", job->url);
        job->wsd = (nd_ws_dial_t){.compress = rm->ws_compression, .no_masking = rm->ws_no_masking};
        int fd = dial(job->url, &job->wsd, err, sizeof err);
        pthread_mutex_lock(&l->dmu);
        if (l->stop) {
            if (fd >= 0)
                close(fd);
            break;
        }
        if (fd >= 0) {
            job->attempts = 0;
            job->ever_connected = true;
            spawn(ctx, l, fd, job); /* active until it closes */
            continue;
        }
        job->active = false;
        job->attempts++;
        /* connect_error_reports before the first connection, reconnect_error_reports after
         * (shouldReportConnectErr). */
        int every = job->ever_connected ? l->srv->opts.reconnect_error_reports
                                        : l->srv->opts.connect_error_reports;
        char hp[300], u1[128], p1[128];
        int port;
        if (nd_leaf_url_parse(job->url, hp, sizeof hp - 8, &port, u1, sizeof u1, p1, sizeof p1) ==
            0)
            snprintf(hp + strlen(hp), 8, ":%d", port);
        else
            snprintf(hp, sizeof hp, "%.290s", job->url);
        if (job->attempts == 1 || (every > 0 && job->attempts % every == 0))
            nd_log_error("Error trying to connect as leafnode to remote server \"%s\" (attempt "
                         "%d): %s",
                         hp, job->attempts, err);
        else
            nd_log_debug("Error trying to connect as leafnode to remote server \"%s\" (attempt "
                         "%d): %s",
                         hp, job->attempts, err);
        /* The next attempt after the reconnect interval plus up to as much again, so that
         * many leafs of a hub that went away do not all come back in the same instant. */
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint64_t)now;
        job->due_ns = now_ns() + l->reconnect_ns + (int64_t)(r % (uint64_t)l->reconnect_ns);
    }
    pthread_mutex_unlock(&l->dmu);
    nd_ctx_external_free(ctx);
    return NULL;
}

static void
job_closed(nd_leafs_t *l, leaf_job_t *job)
{
    pthread_mutex_lock(&l->dmu);
    job->active = false;
    job->due_ns = now_ns() + l->reconnect_ns; /* then delay_ns, when the hub asked for one */
    pthread_cond_signal(&l->dcv);
    pthread_mutex_unlock(&l->dmu);
}

/* ---- listener, start, stop ---- */

static void
on_accept(nd_ctx_t *ctx, int fd, void *arg)
{
    nd_server_t *s = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    spawn(ctx, s->leafs, fd, NULL);
}

bool
nd_leafs_configured(const nd_opts_t *o)
{
    return o->leaf != NULL && (o->leaf->port != 0 || o->leaf->nremotes > 0);
}

nd_leafs_t *
nd_leafs_new(nd_server_t *s)
{
    nd_leafs_t *l = nd_new(nd_leafs_t);
    l->srv = s;
    l->o = s->opts.leaf;
    pthread_mutex_init(&l->mu, NULL);
    pthread_mutex_init(&l->dmu, NULL);
    nd_dial_cond_init(&l->dcv);
    l->reconnect_ns = l->o->reconnect_ms > 0 ? l->o->reconnect_ms * 1000000ll
                                             : LEAF_DEFAULT_RECONNECT_NS;
    l->loop_delay_ns = LEAF_LOOP_DELAY_NS;
    l->cluster_delay_ns = LEAF_CLUSTER_DELAY_NS;
    l->minver_delay_ns = LEAF_MINVER_DELAY_NS;
    l->njobs = l->o->nremotes;
    l->jobs = nd_xcalloc(l->njobs > 0 ? l->njobs : 1, sizeof(*l->jobs));
    char err[256];
    if (l->o->tls != NULL && l->o->port != 0) {
        l->tls = nd_tls_ctx_new(l->o->tls, err, sizeof err);
        if (l->tls == NULL) {
            nd_log_error("leafnode tls: %s", err);
            nd_leafs_free(l);
            return NULL;
        }
    }
    for (size_t i = 0; i < l->njobs; i++) {
        const nd_leaf_remote_t *rm = &l->o->remotes[i];
        leaf_job_t *job = &l->jobs[i];
        job->idx = i;
        if (rm->tls != NULL) {
            job->tls = nd_tls_ctx_new_client(rm->tls, err, sizeof err);
            if (job->tls == NULL) {
                nd_log_error("leafnode remote tls: %s", err);
                nd_leafs_free(l);
                return NULL;
            }
        }
        if (rm->deny_exports.n > 0 || rm->deny_imports.n > 0) {
            nd_permset_t *p = nd_perms_new();
            perms_add_list(p, ND_PERMS_PUB_DENY, &rm->deny_exports);
            perms_add_list(p, ND_PERMS_SUB_DENY, &rm->deny_imports);
            nd_perms_seal(p);
            job->deny = p;
        }
    }
    char id[12];
    nonce_of(id);
    snprintf(l->lds, sizeof l->lds, LDS_PREFIX "%s", id);
    if (l->o->port != 0) {
        l->listener = nd_listener_bind(&(nd_listener_decl_t){
            .host = l->o->host,
            .port = l->o->port < 0 ? 0 : l->o->port,
            .backlog = 1024,
            .what = "leafnode port",
            .ready = "Listening for leafnode connections on",
            .accept_name = "Leafnode",
            .errlog = ND_LISTENER_ERRLOG_NATS,
            .on_accept = on_accept,
            .arg = s,
        });
        if (l->listener == NULL) {
            nd_leafs_free(l);
            return NULL;
        }
        l->port = nd_listener_port(l->listener);
    }
    return l;
}

void
nd_leafs_start(nd_leafs_t *l)
{
    if (l->listener != NULL) {
        nd_listener_start(l->listener, l->srv->pool, l->srv->poller);
        nd_listener_log_ready(l->listener);
    }
    if (l->njobs > 0) {
        if (pthread_create(&l->th, NULL, dialer_main, l) != 0)
            nd_fatal("leafnode: cannot start the dialer thread");
        l->started = true;
    }
}

void
nd_leafs_stop(nd_leafs_t *l)
{
    if (l == NULL || l->stopped)
        return;
    l->stopped = true;
    if (l->listener != NULL)
        nd_listener_stop(l->listener);
    if (l->started) {
        pthread_mutex_lock(&l->dmu);
        l->stop = true;
        pthread_cond_signal(&l->dcv);
        pthread_mutex_unlock(&l->dmu);
        pthread_join(l->th, NULL);
        l->started = false;
    }
    nd_ctx_t *ctx = nd_ctx_external_new(l->srv->pool);
    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++)
        nd_conn_send_shutdown(ctx, &l->conns[i]->base);
    pthread_mutex_unlock(&l->mu);
    nd_ctx_external_free(ctx);
}

void
nd_leafs_free(nd_leafs_t *l)
{
    if (l == NULL)
        return;
    nd_listener_free(l->listener);
    nd_free(l->conns); /* the pool's shutdown freed the actors */
    for (size_t i = 0; i < l->njobs; i++) {
        nd_tls_ctx_unref(l->jobs[i].tls);
        nd_strlist_free(&l->jobs[i].found);
        if (l->jobs[i].deny != NULL)
            nd_perms_unref(l->jobs[i].deny);
    }
    nd_free(l->jobs);
    for (size_t i = 0; i < l->nkept; i++)
        nd_perms_unref(l->kept[i]);
    nd_free(l->kept);
    nd_tls_ctx_unref(l->tls);
    pthread_cond_destroy(&l->dcv);
    pthread_mutex_destroy(&l->dmu);
    pthread_mutex_destroy(&l->mu);
    nd_free(l);
}
