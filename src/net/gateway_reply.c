/* Gateway replies: the "_GR_.<cluster hash>.<server hash>.<reply>" subjects a reply takes across
 * a gateway (nats-server's gateway reply routing), and the reply map.
 *
 * Hashes are 6 base-62 digits of the SHA-256 of the gateway (cluster) name and of the server id,
 * as nats-server's getHashSize. A message going out on a gateway gets our prefix on its reply
 * (deliver.c's write_rmsg asks nd_gw_reply_prefix); a publish on a gateway reply subject goes
 * straight to the outbound connection of the cluster its hash names (nd_gw_direct_target),
 * whatever that cluster's interest. When one comes back, the server of our cluster that received
 * it sends it over the route to the server the second hash names, which delivers it under the
 * original reply (nd_gw_handle_reply; nd_gw_route_reply on the route side).
 *
 * The reply map: a client is shown a gateway reply without its prefix (deliver.c's gw_shown
 * records it here); for 2 s, a publish in that account on the plain reply is sent as the prefixed
 * one (nd_gw_mapped_reply), so the answer goes straight back even before the requester's
 * interest has crossed. It is one chained hash table per server, with a FIFO of the entries for
 * expiry (every entry has the same lifetime, so the oldest is always first), and a count per
 * bucket read without the lock, so that publishes on other subjects never take it.
 */
#include "net/gateway_int.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "net/route_int.h"

#define GW_RMAP_TTL_NS 2000000000ll /* nats-server's recent subscription expiry */

void
nd_gw_hash(const char *name, char out[ND_GW_HASH_LEN + 1])
{
    static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)name, strlen(name), h);
    for (size_t i = 0; i < ND_GW_HASH_LEN; i++)
        out[i] = digits[h[i] % 62];
    out[ND_GW_HASH_LEN] = '\0';
}

bool
nd_gw_is_reply(const char *subj, size_t len)
{
    return len > ND_GW_REPLY_PFX_MAX &&
           memcmp(subj, ND_GW_REPLY_PREFIX, ND_GW_REPLY_PREFIX_LEN) == 0 &&
           subj[ND_GW_REPLY_PREFIX_LEN + ND_GW_HASH_LEN] == '.' &&
           subj[ND_GW_REPLY_PREFIX_LEN + 2 * ND_GW_HASH_LEN + 1] == '.';
}

const char *
nd_gw_reply_prefix(const nd_server_t *s, const char *reply, size_t rlen, size_t *len)
{
    const nd_gateways_t *g = s->gateways;
    /* Already a gateway reply (an answer routed on from elsewhere), or the legacy "$GR.". */
    if (g == NULL || nd_gw_is_reply(reply, rlen) || (rlen > 4 && memcmp(reply, "$GR.", 4) == 0)) {
        *len = 0;
        return "";
    }
    *len = g->reply_pfx_len;
    return g->reply_pfx;
}

nd_conn_t *
nd_gw_direct_target(nd_ctx_t *ctx, nd_server_t *s, const char *subj, size_t len)
{
    (void)ctx;
    nd_gateways_t *g = s->gateways;
    if (g == NULL || !nd_gw_is_reply(subj, len))
        return NULL;
    const char *h = subj + ND_GW_REPLY_PREFIX_LEN;
    nd_conn_t *t = NULL;
    pthread_mutex_lock(&g->mu);
    for (size_t i = 0; i < g->nremotes && t == NULL; i++) {
        nd_gw_remote_t *r = g->remotes[i];
        if (r->out != NULL && memcmp(r->hash, h, ND_GW_HASH_LEN) == 0) {
            t = r->out;
            nd_actor_ref(&t->base);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return t;
}

/* ---- the reply map ---- */

static uint64_t
rmap_key_hash(const nd_acct_t *acct, const char *r, size_t rlen)
{
    return XXH3_64bits_withSeed(r, rlen, XXH3_64bits(acct->name, acct->name_len));
}

/* Drops expired entries. Ctx: under rm_mu. */
static void
rmap_expire(nd_gateways_t *g, int64_t now)
{
    while (g->rm_head != NULL && g->rm_head->exp_ns <= now) {
        nd_gw_rmap_t *e = g->rm_head;
        g->rm_head = e->fnext;
        if (g->rm_head == NULL)
            g->rm_tail = NULL;
        for (nd_gw_rmap_t **pp = &g->rm_buckets[e->hash % ND_GW_RMAP_BUCKETS]; *pp != NULL;
             pp = &(*pp)->bnext)
            if (*pp == e) {
                *pp = e->bnext;
                break;
            }
        atomic_fetch_sub_explicit(&g->rm_used[e->hash % ND_GW_RMAP_BUCKETS], 1,
                                  memory_order_relaxed);
        nd_free(e);
        atomic_fetch_sub_explicit(&g->rm_count, 1, memory_order_relaxed);
    }
}

void
nd_gw_track_reply(nd_server_t *s, const nd_acct_t *acct, const char *routed, size_t len)
{
    nd_gateways_t *g = s->gateways;
    const char *r = routed + ND_GW_REPLY_PFX_MAX;
    size_t rlen = len - ND_GW_REPLY_PFX_MAX;
    size_t klen = acct->name_len + 1 + rlen;
    nd_gw_rmap_t *e = nd_xmalloc(sizeof *e + klen + len);
    e->hash = rmap_key_hash(acct, r, rlen);
    e->klen = (uint32_t)klen;
    e->rlen = (uint32_t)len;
    memcpy(e->data, acct->name, acct->name_len);
    e->data[acct->name_len] = ' ';
    memcpy(e->data + acct->name_len + 1, r, rlen);
    memcpy(e->data + klen, routed, len);
    e->fnext = NULL;
    int64_t now = nd_gw_now_ns();
    e->exp_ns = now + GW_RMAP_TTL_NS;
    pthread_mutex_lock(&g->rm_mu);
    rmap_expire(g, now);
    /* The newest first in its bucket: a lookup finds the latest mapping of a reply. */
    nd_gw_rmap_t **b = &g->rm_buckets[e->hash % ND_GW_RMAP_BUCKETS];
    e->bnext = *b;
    *b = e;
    if (g->rm_tail != NULL)
        g->rm_tail->fnext = e;
    else
        g->rm_head = e;
    g->rm_tail = e;
    atomic_fetch_add_explicit(&g->rm_used[e->hash % ND_GW_RMAP_BUCKETS], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g->rm_count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&g->rm_mu);
}

char *
nd_gw_mapped_reply(nd_server_t *s, const nd_acct_t *acct, const char *subj, size_t len,
                   size_t *out_len)
{
    nd_gateways_t *g = s->gateways;
    if (atomic_load_explicit(&g->rm_count, memory_order_relaxed) == 0)
        return NULL;
    uint64_t h = rmap_key_hash(acct, subj, len);
    if (atomic_load_explicit(&g->rm_used[h % ND_GW_RMAP_BUCKETS], memory_order_relaxed) == 0)
        return NULL; /* most publishes: no lock */
    size_t klen = acct->name_len + 1 + len;
    char *out = NULL;
    pthread_mutex_lock(&g->rm_mu);
    rmap_expire(g, nd_gw_now_ns());
    for (nd_gw_rmap_t *e = g->rm_buckets[h % ND_GW_RMAP_BUCKETS]; e != NULL; e = e->bnext) {
        if (e->hash == h && e->klen == klen && memcmp(e->data, acct->name, acct->name_len) == 0 &&
            memcmp(e->data + acct->name_len + 1, subj, len) == 0) {
            out = nd_xmalloc(e->rlen + 1);
            memcpy(out, e->data + e->klen, e->rlen);
            out[e->rlen] = '\0';
            *out_len = e->rlen;
            break;
        }
    }
    pthread_mutex_unlock(&g->rm_mu);
    return out;
}

/* A gateway reply that reached this cluster, on gateway or route connection c: delivered under
 * its original subject here, or sent over the route to the server it names. */
void
nd_gw_handle_reply(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd)
{
    nd_gateways_t *g = c->srv->gateways;
    const char *s = cmd->subject.ptr;
    if (memcmp(s, g->reply_pfx, ND_GW_REPLY_PREFIX_LEN + ND_GW_HASH_LEN) != 0)
        return; /* meant for another cluster: dropped, as nats-server does */
    const char *srv_hash = s + ND_GW_REPLY_PREFIX_LEN + ND_GW_HASH_LEN + 1;
    if (c->gw != NULL &&
        memcmp(srv_hash, g->reply_pfx + ND_GW_REPLY_PREFIX_LEN + ND_GW_HASH_LEN + 1,
               ND_GW_HASH_LEN) != 0 &&
        c->srv->routes != NULL) {
        nd_conn_t *rt = nd_routes_by_gw_hash(c->srv->routes, srv_hash, ND_GW_HASH_LEN);
        if (rt != NULL) {
            /* The requester's server: it answers to the reply under its own subject. */
            nd_conn_msg_chunk_t *ch = nd_deliver_route_chunk(ctx, cmd, acct, rt, NULL);
            nd_route_send_proto(ctx, rt, ch->buf, ch->len);
            nd_free(ch->buf);
            nd_msg_free(ctx, &ch->hdr);
            nd_actor_unref(ctx, &rt->base);
            return;
        }
    }
    nd_proto_cmd_t local = *cmd;
    local.subject.ptr = s + ND_GW_REPLY_PFX_MAX;
    local.subject.len = cmd->subject.len - ND_GW_REPLY_PFX_MAX;
    nd_deliver_gateway_publish(ctx, c, acct, &local);
}

bool
nd_gw_route_reply(nd_ctx_t *ctx, nd_conn_t *c, nd_acct_t *acct, const nd_proto_cmd_t *cmd)
{
    if (!nd_gw_is_reply(cmd->subject.ptr, cmd->subject.len))
        return false;
    nd_gw_handle_reply(ctx, c, acct, cmd);
    return true;
}

void
nd_gw_rmap_clear(nd_gateways_t *g)
{
    rmap_expire(g, INT64_MAX);
}
