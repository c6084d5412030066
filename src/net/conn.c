/* The connection actor: lifecycle, socket I/O and buffers.
 *
 * Memory: an idle connection holds no I/O buffer. Each worker owns a read scratch and a write
 * scratch (server.h); a connection uses them during its turn and keeps a private copy only of
 * what is left over at the end of the turn: the partial command at the end of a read, or output
 * the socket did not take. So 10,000 idle clients cost their structs, not 10,000 buffers.
 * Reading: on ND_IO_READ the actor copies its leftover to the front of the read scratch, reads
 * once after it, parses every complete command, and saves the new leftover. A command larger than
 * half the scratch (a big payload) is assembled in a private buffer of the size the parser says it
 * needs instead. A read that fills the buffer re-posts ND_IO_READ to itself, so one busy client
 * yields to others between reads (edge-triggered: otherwise no new event would come).
 * Writing: while the connection has no unwritten private output, its turn borrows the worker's
 * write scratch; everything for the client is appended there and written once at the end of the
 * turn (turn_end), so many messages share one syscall. What the socket refuses is copied to a
 * private buffer; ND_IO_WRITE resumes it and a write-deadline timer bounds how long it may stay
 * stuck. `pending` counts bytes queued for this client anywhere (deliveries in the mailbox and
 * unwritten output); publishers add to it and close us as a slow consumer past max_pending.
 */
#include "net/conn_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "subj/account.h"
#include "net/gateway_int.h"
#include "net/leaf_int.h"
#include "net/route_int.h"
#include "net/pconn.h"
#include "net/tls.h"
#include "net/ws.h"

#define SCRATCH_READ  (64 * 1024)
#define SCRATCH_KEEP  (1024 * 1024) /* a write scratch grown past this is shrunk after the turn */
#define FIRST_PING_MS 2000
#define STALL_MS      2

static const char *close_texts[] = {
#define ND_CLOSE_TEXT(name, text) text,
    ND_CLOSE_REASONS(ND_CLOSE_TEXT)
#undef ND_CLOSE_TEXT
};

const char *
nd_close_reason_text(nd_close_reason_t r)
{
    return close_texts[r];
}

static void refresh_live(nd_ctx_t *ctx, nd_conn_t *c);

static uint64_t
ms_to_ns(int64_t ms)
{
    return (uint64_t)ms * 1000000ull;
}

/* ---- write side ---- */

/* Makes the worker's write scratch this turn's output buffer, unless private output is waiting
 * (order must be kept). Ctx: the start of a turn's dispatch. */
static void
borrow_scratch(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->borrowed || c->wlen != 0 || c->closing)
        return;
    nd_iobuf_t *w = &c->srv->wscratch[ctx->worker];
    c->wbuf = w->p;
    c->wcap = w->cap;
    c->borrowed = true;
}

/* Gives the scratch back at the end of the turn, keeping what was not written. */
static void
return_scratch(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (!c->borrowed)
        return;
    nd_iobuf_t *w = &c->srv->wscratch[ctx->worker];
    char *left = NULL;
    size_t n = c->wlen - c->woff;
    if (n > 0) {
        left = nd_xmalloc(n);
        memcpy(left, c->wbuf + c->woff, n);
    }
    if (c->wcap > SCRATCH_KEEP) {
        nd_free(c->wbuf);
        w->p = NULL;
        w->cap = 0;
    } else {
        w->p = c->wbuf; /* it may have grown */
        w->cap = c->wcap;
    }
    c->borrowed = false;
    c->wbuf = left;
    c->wcap = c->wlen = n;
    c->woff = 0;
}

char *
nd_conn_reserve(nd_conn_t *c, size_t n)
{
    if (c->wlen + n > c->wcap) {
        c->wcap = nd_grow_cap(c->wcap, c->wlen + n, 4096);
        c->wbuf = nd_xrealloc(c->wbuf, c->wcap);
    }
    return c->wbuf + c->wlen;
}

void
nd_conn_commit(nd_conn_t *c, size_t n)
{
    c->wlen += n;
    atomic_fetch_add_explicit(&c->pending, (int64_t)n, memory_order_relaxed);
}

void
nd_conn_append(nd_conn_t *c, const void *p, size_t n)
{
    memcpy(nd_conn_reserve(c, n), p, n);
    c->wlen += n;
}

void
nd_conn_write(nd_conn_t *c, const void *p, size_t n)
{
    nd_conn_append(c, p, n);
    atomic_fetch_add_explicit(&c->pending, (int64_t)n, memory_order_relaxed);
}

void
nd_conn_write_err(nd_conn_t *c, nd_err_t err)
{
    const char *text = nd_err_proto_text(err);
    if (text == NULL || c->proto != NULL) /* a protocol connection has no -ERR line */
        return;
    char line[256];
    int n = snprintf(line, sizeof line, "-ERR '%s'\r\n", text);
    nd_conn_write(c, line, (size_t)n);
}

/* Drops unwritten output (a slow consumer gets nothing more). */
static void
drop_output(nd_conn_t *c)
{
    atomic_fetch_sub_explicit(&c->pending, (int64_t)(c->wlen - c->woff), memory_order_relaxed);
    c->woff = c->wlen = 0;
}

/* Writes as much of the output as the socket takes. Returns: false on a fatal error. */
static bool
flush(nd_ctx_t *ctx, nd_conn_t *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = nd_transport_write(&c->tr, c->wbuf + c->woff, c->wlen - c->woff);
        if (n > 0) {
            c->woff += (size_t)n;
            atomic_fetch_sub_explicit(&c->pending, n, memory_order_relaxed);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t wd =
                nd_server_live_get(c->srv, write_deadline_ms);
            if (!c->wdeadline_armed && wd > 0) {
                nd_timer_start(ctx, &c->wdeadline_timer, ms_to_ns(wd), 0);
                c->wdeadline_armed = true;
            }
            return true;
        }
        return false;
    }
    c->woff = c->wlen = 0;
    if (!c->borrowed) {
        nd_free(c->wbuf);
        c->wbuf = NULL;
        c->wcap = 0;
    }
    if (c->wdeadline_armed) {
        nd_timer_cancel(ctx, &c->wdeadline_timer);
        c->wdeadline_armed = false;
    }
    return true;
}

/* ---- lifecycle ---- */

void
nd_conn_remove_sub(nd_ctx_t *ctx, nd_conn_t *c, nd_sub_t *sub)
{
    nd_sidmap_del(&c->subs, sub->sid, sub->sid_len);
    nd_sub_cancel(sub);
    nd_acct_send_unsub(ctx, c->acct, sub);
}

/* ---- monitoring (src/net/connreg.h) ---- */

/* A connection to another server (route, leaf or gateway): no client protocol, its own table. */
static inline bool
is_peer(const nd_conn_t *c)
{
    return c->route != NULL || c->leaf != NULL || c->gw != NULL;
}

/* The name of the connection's kind in nats-server's log lines. */
static inline const char *
log_kind(const nd_conn_t *c)
{
    return c->route ? "Router" : c->leaf ? "Leafnode" : c->gw ? "Gateway" : "Client";
}

/* Publishes this turn's counters for monitors. The subscriptions counted are those the account
 * has placed (acknowledged): a monitor that sees one can expect a publish to find it, as in
 * nats-server, whose connection inserts each subscription before it reads on (a leaf's or a
 * route's LS+/RS+ is otherwise counted before its account has it). */
static void
mon_publish(nd_conn_t *c)
{
    size_t subs = c->subs.count > c->sub_acks_due ? c->subs.count - c->sub_acks_due : 0;
    nd_connreg_publish(&c->mon, c->in_msgs, c->in_bytes, c->out_msgs, c->out_bytes, subs);
}

nd_actor_t *
nd_conn_mon_ident(const nd_mon_conn_t *mc, nd_conn_info_t *ci)
{
    /* Only fields immutable after spawn, and the pending atomic. */
    _Static_assert(sizeof ci->ip == sizeof((nd_conn_t *)0)->ip, "same address buffers");
    const nd_conn_t *c = (const nd_conn_t *)((const char *)mc - offsetof(nd_conn_t, mon));
    ci->cid = c->cid;
    ci->kind = (int)c->kind;
    ci->websocket = c->ws != NULL;
    memcpy(ci->ip, c->ip, sizeof ci->ip);
    ci->port = c->port;
    ci->pending = atomic_load_explicit(&c->pending, memory_order_relaxed);
    return (nd_actor_t *)&c->base;
}

/* Unlinks us from the registry and records the close (reason, counters, subscriptions). */
static void
mon_closed(nd_conn_t *c, nd_sub_t *const *subs, size_t n)
{
    mon_publish(c);
    nd_connreg_remove(c->srv->connreg, &c->mon, nd_close_reason_text(c->reason),
                      c->reason == ND_CLOSE_SLOW_PENDING || c->reason == ND_CLOSE_SLOW_DEADLINE,
                      subs, n);
}

/* Answers a monitor's request for our subscriptions (or, closed, an empty answer). */
static void
mon_subs(nd_ctx_t *ctx, nd_conn_t *c, nd_mon_msg_subs_t *m)
{
    if (c != NULL && !c->closing && c->subs.count > 0) {
        nd_sub_t **all = nd_xmalloc(c->subs.count * sizeof(*all));
        size_t n = 0;
        for (uint32_t i = 0; i < c->subs.cap; i++) {
            nd_sub_t *sub = c->subs.slots[i];
            if ((uintptr_t)sub > 1) /* neither empty (NULL) nor a tombstone (1, sidmap.c) */
                all[n++] = sub;
        }
        nd_conn_info_set_subs(m->info, all, n);
        nd_free(all);
    } else if (c != NULL && !c->closing) {
        nd_conn_info_set_subs(m->info, NULL, 0);
    }
    nd_connreg_answer_subs(ctx, m);
}

void
nd_conn_client_event(nd_ctx_t *ctx, nd_conn_t *c, bool connect)
{
    if (c->acct == NULL)
        return;
    /* relaxed: a counter that publishes no other data. Connect and disconnect are both called
     * for exactly the connections past CONNECT (c->connected), whose account never changes. */
    int64_t conns =
        atomic_fetch_add_explicit(&c->acct->conns, connect ? 1 : -1, memory_order_relaxed) +
        (connect ? 1 : -1);
    nd_client_event_fn fn = c->srv->client_event;
    if (fn == NULL)
        return;
    /* The owner is the only writer of its registry strings, so it may read them unlocked. */
    const nd_mon_meta_t *meta = c->mon.meta;
    nd_client_event_t ev = {
        .connect = connect,
        .srv = c->srv,
        .acct = c->acct,
        .acct_conns = conns,
        .cid = c->cid,
        .start_ns = c->mon.start_ns,
        .rtt_ns = atomic_load_explicit(&c->mon.rtt_ns, memory_order_relaxed),
        .ip = c->ip,
        .user = meta != NULL ? meta->user : NULL,
        .name = c->name,
        .lang = c->lang,
        .version = c->version,
        .in_msgs = c->in_msgs,
        .in_bytes = c->in_bytes,
        .out_msgs = c->out_msgs,
        .out_bytes = c->out_bytes,
        .reason = nd_close_reason_text(c->reason),
    };
    fn(ctx, &ev);
}

/* Releases the socket, the subscriptions and the timers; idempotent. */
static void
teardown(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->torn_down)
        return;
    c->torn_down = true;
    nd_timer_cancel(ctx, &c->ping_timer);
    nd_timer_cancel(ctx, &c->wdeadline_timer);
    nd_timer_cancel(ctx, &c->stall_timer);
    nd_timer_cancel(ctx, &c->tls_timer);
    nd_timer_cancel(ctx, &c->auth_timer);
    nd_timer_cancel(ctx, &c->ptimer);
    if (is_peer(c)) {
        /* its subscriptions, its place in the route, leaf or gateway table */
        if (c->route != NULL)
            nd_route_teardown(ctx, c);
        else if (c->leaf != NULL)
            nd_leaf_teardown(ctx, c);
        else
            nd_gw_teardown(ctx, c);
        c->tr.vt->close(&c->tr);
        if (c->io.fd >= 0)
            nd_poller_remove(c->srv->poller, &c->io);
        return;
    }
    size_t n = 0;
    nd_sub_t **subs = nd_sidmap_take_all(&c->subs, &n);
    if (c->connected)
        nd_conn_client_event(ctx, c, false); /* e.g. the $SYS DISCONNECT advisory */
    if (c->ws == NULL || c->counted) /* a WebSocket client registers once upgraded */
        mon_closed(c, subs, n);
    if (n > 0)
        nd_acct_send_unsub_all(ctx, c->acct, subs, n);
    else
        nd_free(subs);
    c->tr.vt->close(&c->tr);
    if (c->io.fd >= 0)
        nd_poller_remove(c->srv->poller, &c->io); /* closes the fd after our last write */
    if (c->counted)
        atomic_fetch_sub_explicit(&c->srv->nconns, 1, memory_order_relaxed);
}

void
nd_conn_close(nd_ctx_t *ctx, nd_conn_t *c, nd_close_reason_t reason)
{
    if (c->closing)
        return;
    c->closing = true;
    c->reason = reason;
    if (c->proto != NULL && c->proto->closing != NULL) {
        /* Still subscribed and able to publish (an MQTT will message); its deliveries go out
         * with this turn's flush below. */
        c->proto->closing(ctx, c, reason);
        nd_deliver_flush(ctx, c);
    }
    flush(ctx, c); /* best effort: a final -ERR should reach the client */
    nd_ws_closing(&c->tr, reason); /* the close frame follows it (ws.c) */
    drop_output(c);
    return_scratch(ctx, c);
    if (!is_peer(c))
        nd_log_debug("%s:%d - %s:%llu - Client connection closed: %s", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid,
                     nd_close_reason_text(reason));
    teardown(ctx, c);
    nd_actor_close(ctx, &c->base);
}

static void
on_final(nd_ctx_t *ctx, nd_actor_t *self)
{
    nd_conn_t *c = (nd_conn_t *)self;
    if (!c->closing) {
        c->closing = true;
        c->reason = ND_CLOSE_SHUTDOWN;
    }
    return_scratch(ctx, c);
    teardown(ctx, c);
    nd_slcache_fini(&c->cache);
    nd_deliver_flush(ctx, c); /* normally empty: every read batch ends with a flush */
    nd_deliver_outbox_free(c);
    nd_free(c->rbuf);
    nd_free(c->wbuf);
    nd_free(c->name);
    nd_free(c->lang);
    nd_free(c->version);
    nd_free(c->ws_xff);
    nd_strlist_free(&c->tls_names);
    nd_tls_ctx_unref(c->tls);
    c->tls = NULL;
    nd_conn_auth_fini(c);
    if (c->ic != NULL)
        nd_iclient_fini(ctx, c);
    nd_route_fini(ctx, c);
    if (c->leaf != NULL)
        nd_leaf_fini(ctx, c);
    if (c->proto != NULL && c->proto->final != NULL)
        c->proto->final(ctx, c);
    if (c->gw != NULL)
        nd_gw_fini(ctx, c);
    c->rbuf = c->wbuf = NULL;
    if (c->scratch != NULL) {
        nd_sl_result_fini(c->scratch);
        nd_free(c->scratch);
    }
    nd_actor_unref(ctx, &c->acct->actor);
}

/* ---- read side ---- */

/* Parses every complete command in buf[0..len). Returns: the bytes consumed. */
static size_t
process_input(nd_ctx_t *ctx, nd_conn_t *c, const char *buf, size_t len)
{
    size_t off = 0;
    nd_proto_cmd_t cmd;
    if (c->proto != NULL) {
        if (!c->closing && !c->paused)
            off = nd_pconn_input(ctx, c, buf, len);
        nd_deliver_flush(ctx, c);
        return off;
    }
    while (!c->closing && !c->paused && off < len) {
        size_t used = 0;
        nd_proto_status_t st = nd_proto_parse(&c->parser, buf + off, len - off, &used, &cmd);
        if (st == ND_PROTO_MORE) {
            off += used;
            break;
        }
        if (st == ND_PROTO_ERR_MAX_PAYLOAD && cmd.op == ND_PROTO_OP_HPUB &&
            !atomic_load_explicit(&c->headers, memory_order_relaxed)) {
            /* nats-server checks header support first: an HPUB without it closes silently. */
            nd_deliver_flush(ctx, c);
            nd_conn_close(ctx, c, ND_CLOSE_PROTOCOL_VIOLATION);
            return off;
        }
        if (st != ND_PROTO_CMD && c->gw != NULL && nd_gw_parse_error(ctx, c)) {
            nd_deliver_flush(ctx, c);
            return off;
        }
        if (st != ND_PROTO_CMD) {
            nd_err_t err = st == ND_PROTO_ERR_CONTROL_LINE ? ND_ERR_MAX_CONTROL_LINE
                           : st == ND_PROTO_ERR_MAX_PAYLOAD ? ND_ERR_MAX_PAYLOAD
                           : st == ND_PROTO_ERR_UNKNOWN_OP  ? ND_ERR_UNKNOWN_OP
                                                            : ND_ERR_PROTO_ARGS;
            nd_log_error("%s:%d - %s:%llu - %s parser ERROR: %s", nd_conn_lhost(c), c->port,
                         nd_conn_log_tag(c), (unsigned long long)c->cid, log_kind(c),
                         nd_strerror(err));
            nd_conn_write_err(c, err);
            /* A route's bad op is a protocol violation for nats-server (its route parser). */
            nd_conn_close(ctx, c,
                          err == ND_ERR_MAX_CONTROL_LINE ? ND_CLOSE_MAX_CONTROL_LINE
                          : err == ND_ERR_MAX_PAYLOAD    ? ND_CLOSE_MAX_PAYLOAD
                          : err == ND_ERR_UNKNOWN_OP && !is_peer(c) ? ND_CLOSE_PARSE_ERROR
                              : ND_CLOSE_PROTOCOL_VIOLATION);
            nd_deliver_flush(ctx, c);
            return off;
        }
        if (c->route != NULL  ? !nd_route_handle(ctx, c, &cmd)
            : c->leaf != NULL ? !nd_leaf_handle(ctx, c, &cmd)
            : c->gw != NULL   ? !nd_gw_handle(ctx, c, &cmd)
                              : !nd_client_handle(ctx, c, &cmd))
            break; /* paused before cmd (it stays unconsumed) or closed */
        off += used;
    }
    nd_deliver_flush(ctx, c); /* one message per recipient for the whole batch */
    return off;
}

/* Keeps buf[off..len) as the connection's leftover (buf may be the private buffer itself). */
static void
keep_leftover(nd_conn_t *c, const char *buf, size_t off, size_t len)
{
    size_t left = len - off;
    if (left == 0) {
        nd_free(c->rbuf);
        c->rbuf = NULL;
        c->rcap = c->rlen = 0;
        return;
    }
    if (buf == c->rbuf) {
        memmove(c->rbuf, c->rbuf + off, left);
    } else {
        if (left > c->rcap) {
            nd_free(c->rbuf);
            c->rcap = left < 256 ? 256 : left;
            c->rbuf = nd_xmalloc(c->rcap);
        }
        memcpy(c->rbuf, buf + off, left);
    }
    c->rlen = left;
}

/* Reads once. hup: the peer has closed its side, so no further edge will come: keep reading in
 * later turns until the end of the stream is seen, even after a short read (data and FIN often
 * arrive together). */
static void
do_read(nd_ctx_t *ctx, nd_conn_t *c, bool hup)
{
    if (c->paused || c->stalled) {
        c->read_blocked = true;
        c->hup_seen |= hup;
        return;
    }
    hup |= c->hup_seen;
    refresh_live(ctx, c); /* a reload may have changed max_payload or max_control_line */
    size_t need = c->proto != NULL ? c->pneed : nd_proto_pending_need(&c->parser);
    char *buf;
    size_t cap;
    if (need > SCRATCH_READ / 2 || c->rlen > SCRATCH_READ / 2) {
        /* A big command: assemble it in a private buffer of the size it needs. */
        size_t want = need > c->rlen + SCRATCH_READ / 2 ? need : c->rlen + SCRATCH_READ / 2;
        if (want > c->rcap) {
            c->rbuf = nd_xrealloc(c->rbuf, want);
            c->rcap = want;
        }
        buf = c->rbuf;
        cap = c->rcap;
    } else {
        nd_iobuf_t *r = &c->srv->rscratch[ctx->worker];
        if (r->p == NULL) {
            r->p = nd_xmalloc(SCRATCH_READ);
            r->cap = SCRATCH_READ;
        }
        if (c->rlen > 0)
            memcpy(r->p, c->rbuf, c->rlen);
        buf = r->p;
        cap = r->cap;
    }
    size_t len = c->rlen;
    size_t space = cap - len;
    ssize_t n = c->tr.vt->read(&c->tr, buf + len, space);
    if (n == 0) {
        nd_conn_close(ctx, c, ND_CLOSE_CLIENT);
        return;
    }
    if (n < 0) {
        if (errno == EMSGSIZE) /* a compressed WebSocket message over the limits (ws.c) */
            nd_conn_close(ctx, c, ND_CLOSE_MAX_PAYLOAD);
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
            nd_conn_close(ctx, c, ND_CLOSE_READ_ERROR);
        return;
    }
    len += (size_t)n;
    c->got_inbound = true;
    size_t off = process_input(ctx, c, buf, len);
    if (c->closing)
        return;
    keep_leftover(c, buf, off, len);
    if (c->stall_due) {
        /* A recipient is filling up: stop reading from this producer for a moment (nats-server
         * stalls 2-5 ms), so the recipient can drain before it becomes a slow consumer. */
        c->stall_due = false;
        c->stalled = true;
        c->read_blocked = true;
        c->hup_seen |= hup;
        nd_timer_start(ctx, &c->stall_timer, STALL_MS * 1000000ull, 0);
        return;
    }
    if ((size_t)n == space || hup || nd_ws_read_again(&c->tr)) /* more may be waiting */
        nd_io_again(ctx, &c->io, hup ? ND_IO_READ | ND_IO_HUP : ND_IO_READ);
}

/* Called once every subscription is acknowledged: process what the pause left unconsumed. */
static void
resume(nd_ctx_t *ctx, nd_conn_t *c)
{
    c->paused = false;
    if (c->rlen > 0) {
        size_t off = process_input(ctx, c, c->rbuf, c->rlen);
        if (c->closing)
            return;
        keep_leftover(c, c->rbuf, off, c->rlen);
    }
    if (!c->paused && !c->stalled && c->read_blocked) {
        c->read_blocked = false;
        nd_io_again(ctx, &c->io, ND_IO_READ);
    }
}

/* ---- timers ---- */

static void
on_ping_timer(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg)
{
    if (!nd_timer_fired(&c->ping_timer, msg) || c->closing)
        return;
    refresh_live(ctx, c); /* a reload may have changed ping_interval */
    if (c->pings_out + 1 >
        (uint32_t)nd_server_live_get(c->srv, ping_max)) {
        nd_log_debug("%s:%d - %s:%llu - Stale Client Connection - Closing", nd_conn_lhost(c),
                     c->port, nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_STALE);
        nd_conn_close(ctx, c, ND_CLOSE_STALE);
        return;
    }
    /* After the first one, a ping is only needed when the client has been silent. */
    if (c->pinged_once && c->got_inbound) {
        c->got_inbound = false;
        return;
    }
    c->got_inbound = false;
    c->pinged_once = true;
    c->pings_out++;
    nd_conn_write(c, "PING\r\n", 6);
    nd_connreg_ping_sent(&c->mon);
}

static void
on_wdeadline(nd_ctx_t *ctx, nd_conn_t *c, nd_msg_t *msg)
{
    if (!nd_timer_fired(&c->wdeadline_timer, msg) || c->closing)
        return;
    c->wdeadline_armed = false;
    if (c->woff < c->wlen) {
        nd_log_info("%s:%d - %s:%llu - \"Slow Consumer Detected: WriteDeadline of %lldms "
                    "exceeded with %zu bytes pending\"",
                    nd_conn_lhost(c), c->port, nd_conn_log_tag(c),
                    (unsigned long long)c->cid,
                    (long long)nd_server_live_get(c->srv, write_deadline_ms), c->wlen - c->woff);
        drop_output(c); /* nothing more is sent to a slow consumer */
        nd_conn_close(ctx, c, ND_CLOSE_SLOW_DEADLINE);
    }
}

/* ---- start ---- */

/* Writes the INFO line: the server's template (copied inside an epoch section: a reload may
 * replace and retire it at any time) and our own fields. ldm: lame duck mode, as nats-server 2.10
 * marks it. */
static void
write_info(nd_ctx_t *ctx, nd_conn_t *c, bool ldm)
{
    char tail[256];
    nd_epoch_enter(ctx);
    /* acquire: pairs with the release exchange in nd_server_publish_info. */
    const nd_server_info_t *info = atomic_load_explicit(&c->srv->info, memory_order_acquire);
    const char *text = info->text;
    size_t len = info->len;
    if (c->ws != NULL && info->ws_text != NULL)
        text = info->ws_text, len = info->ws_len;
    /* A WebSocket client under the websocket auth override must authenticate even when the
     * others need not (nats-server's createWSClient). */
    bool ws_auth = c->ws != NULL && c->ws->auth_override &&
                   memmem(text, len, "\"auth_required\":true", 20) == NULL;
    int n = snprintf(tail, sizeof tail,
                     "%s,\"client_id\":%llu,\"client_ip\":\"%s\"%s%s%s%s} \r\n",
                     ws_auth ? ",\"auth_required\":true" : "", (unsigned long long)c->cid, c->ip,
                     c->nonce[0] ? ",\"nonce\":\"" : "", c->nonce, c->nonce[0] ? "\"" : "",
                     ldm ? ",\"ldm\":true" : "");
    nd_conn_write(c, text, len);
    nd_epoch_exit(ctx);
    nd_conn_write(c, tail, (size_t)n);
}

/* (Re)arms the ping timer with the interval in force; the first ping comes sooner, as in
 * nats-server, unless the timer is only being re-armed after a reload. */
static void
arm_ping(nd_ctx_t *ctx, nd_conn_t *c, bool first)
{
    int64_t ms = nd_server_live_get(c->srv, ping_interval_ms);
    if (c->ws != NULL && c->ws->ping_ms > 0)
        ms = c->ws->ping_ms; /* websocket { ping_interval } (nats-server 2.11) */
    c->ping_ms = ms > 0 ? ms : 0;
    if (ms <= 0) {
        nd_timer_cancel(ctx, &c->ping_timer);
        return;
    }
    int64_t delay = first && ms > FIRST_PING_MS ? FIRST_PING_MS : ms;
    nd_timer_start(ctx, &c->ping_timer, ms_to_ns(delay), ms_to_ns(ms));
}

/* Takes the reloadable limits again when a reload changed them (one relaxed load per read or
 * ping tick otherwise). */
static void
refresh_live(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_server_live_t *l = &c->srv->live;
    /* acquire: pairs with the release in nd_server_set_live, so the limits read below are at
     * least those of generation gen. */
    uint32_t gen = atomic_load_explicit(&l->gen, memory_order_acquire);
    if (gen == c->live_gen)
        return;
    c->live_gen = gen;
    nd_proto_parser_set_limits(
        &c->parser, (size_t)atomic_load_explicit(&l->max_control_line, memory_order_relaxed),
        nd_conn_auth_max_payload(c, atomic_load_explicit(&l->max_payload, memory_order_relaxed)));
    if (c->started && c->proto == NULL &&
        atomic_load_explicit(&l->ping_interval_ms, memory_order_relaxed) != c->ping_ms &&
        (c->ws == NULL || c->ws->ping_ms <= 0))
        arm_ping(ctx, c, false);
}

static void
on_start(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->closing || c->started)
        return;
    c->started = true;
    refresh_live(ctx, c);
    if (c->route != NULL) {
        /* Routes are not clients: not counted, not in /connz (/routez lists them). */
        c->mon.start_ns = nd_mon_wall_ns();
        atomic_store_explicit(&c->mon.last_ns, c->mon.start_ns, memory_order_relaxed);
        if (c->srv->routes->tls_server != NULL)
            nd_conn_tls_begin_route(ctx, c); /* the route starts once TLS is up */
        else
            nd_route_conn_start(ctx, c);
        return;
    }
    if (c->leaf != NULL) {
        nd_leaf_conn_start(ctx, c); /* not a client either: /leafz lists it */
        return;
    }
    if (c->gw != NULL) {
        c->mon.start_ns = nd_mon_wall_ns();
        atomic_store_explicit(&c->mon.last_ns, c->mon.start_ns, memory_order_relaxed);
        if (nd_gw_tls(c) != NULL)
            nd_conn_tls_begin_gateway(ctx, c); /* nor is a gateway (/gatewayz); TLS first */
        else
            nd_gw_conn_start(ctx, c); /* nor is a gateway: /gatewayz lists it */
        return;
    }
    if (c->ws != NULL) {
        nd_conn_ws_begin(ctx, c); /* a client once upgraded (conn_ws.c) */
        return;
    }
    if (c->proto != NULL) {
        nd_pconn_on_start(ctx, c); /* no INFO, no pings: the protocol's own (pconn.c) */
        return;
    }
    nd_conn_start_client(ctx, c);
}

void
nd_conn_start_client(nd_ctx_t *ctx, nd_conn_t *c)
{
    nd_server_t *s = c->srv;
    int32_t conns = atomic_fetch_add_explicit(&s->nconns, 1, memory_order_relaxed) + 1;
    c->counted = true;
    nd_connreg_add(s->connreg, &c->mon);
    /* After registering: lame duck mode sets s->ldm before it lists the registered connections
     * (under the registry's mutex), so we are either on its list or see the flag here. */
    c->ldm_sent = atomic_load_explicit(&s->ldm, memory_order_relaxed);
    if (c->ws == NULL) {
        /* The TLS context in force now is ours for life, even if a reload replaces it (the
         * template holds a reference on it, so take ours inside the epoch section). acquire:
         * pairs with the release exchange in nd_server_publish_info. A WebSocket client has
         * its listener's TLS (or none), and it is up already. */
        nd_epoch_enter(ctx);
        c->tls = nd_tls_ctx_ref(atomic_load_explicit(&s->info, memory_order_acquire)->tls);
        nd_epoch_exit(ctx);
    }
    nd_conn_auth_begin(ctx, c); /* before INFO: it carries the nonce; its timeout reads c->tls */
    if (c->tls != NULL && c->ws == NULL && nd_conn_tls_begin(ctx, c))
        return; /* INFO and the ping timer wait for TLS (conn_tls.c) */
    if (nd_conn_greet(ctx, c, conns))
        arm_ping(ctx, c, true);
}

bool
nd_conn_greet(nd_ctx_t *ctx, nd_conn_t *c, int32_t conns)
{
    write_info(ctx, c, c->ldm_sent);
    if (conns > nd_server_live_get(c->srv, max_connections)) {
        nd_log_error("%s:%d - %s:%llu - maximum connections exceeded", nd_conn_lhost(c), c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
        nd_conn_write_err(c, ND_ERR_MAX_CONNECTIONS);
        nd_conn_close(ctx, c, ND_CLOSE_MAX_CONNECTIONS);
        return false;
    }
    return true;
}

void
nd_conn_start_pings(nd_ctx_t *ctx, nd_conn_t *c)
{
    arm_ping(ctx, c, true);
}

/* Lame duck mode: clients that can take an asynchronous INFO (protocol 1, past CONNECT) learn
 * that they should move elsewhere, as nats-server 2.10's sendLDMToClients does. */
static void
on_ldm(nd_ctx_t *ctx, nd_conn_t *c)
{
    if (c->closing || !c->started || !c->connected || c->protocol < 1 || c->ldm_sent)
        return;
    c->ldm_sent = true;
    write_info(ctx, c, true);
}

/* ---- dispatch ---- */

static void
dispatch(nd_ctx_t *ctx, nd_actor_t *self, nd_msg_t *msg)
{
    nd_conn_t *c = (nd_conn_t *)self;
    borrow_scratch(ctx, c);
    switch (msg->id) {
    case ND_CONN_MSG_CHUNK:
        if (c->proto != NULL)
            nd_pconn_on_chunk(ctx, c, (nd_conn_msg_chunk_t *)msg);
        else
            nd_deliver_receive_chunk(ctx, c, (nd_conn_msg_chunk_t *)msg);
        return;
    case ND_CONN_MSG_DELIVER:
        nd_deliver_receive(ctx, c, (nd_conn_msg_deliver_t *)msg);
        return;
    case ND_CONN_MSG_IMSG:
        nd_iclient_receive(ctx, c, (nd_conn_msg_imsg_t *)msg);
        return;
    case ND_CONN_MSG_PMSG:
        nd_pconn_on_msg(ctx, c, (nd_conn_msg_pmsg_t *)msg);
        return;
    case ND_CONN_MSG_PCALL:
        nd_pconn_on_call(ctx, c, (nd_conn_msg_pcall_t *)msg);
        return;
    case ND_CONN_MSG_PTIMER:
        if (nd_timer_fired(&c->ptimer, msg) && !c->closing && c->proto != NULL &&
            c->proto->timer != NULL)
            c->proto->timer(ctx, c);
        return;
    case ND_CONN_MSG_ISTART:
        nd_iclient_on_start(ctx, c, (nd_conn_msg_istart_t *)msg);
        return;
    case ND_CONN_MSG_ICALL:
        nd_iclient_on_call(ctx, c, (nd_conn_msg_icall_t *)msg);
        return;
    case ND_CONN_MSG_ITIMER:
        nd_iclient_on_timer(ctx, c, msg);
        return;
    case ND_CONN_MSG_IO: {
        uint32_t ev = nd_io_take(&c->io);
        on_start(ctx, c);
        if (c->closing)
            return;
        if (c->tls_state != ND_CONN_TLS_NONE && c->tls_state != ND_CONN_TLS_UP &&
            !nd_conn_tls_io(ctx, c, &ev))
            return;
        if (c->ws != NULL && c->ws_state != ND_CONN_WS_UP && !nd_conn_ws_io(ctx, c, &ev))
            return;
        /* TLS: a read that OpenSSL stopped to write first resumes on the writable edge. */
        if ((ev & ND_IO_READ) || ((ev & ND_IO_WRITE) && nd_tls_read_wants_write(&c->tr)))
            do_read(ctx, c, (ev & ND_IO_HUP) != 0);
        return; /* ND_IO_WRITE: turn_end flushes */
    }
    case ND_CONN_MSG_START:
        on_start(ctx, c);
        return;
    case ND_CONN_MSG_MON_SUBS:
        mon_subs(ctx, c, (nd_mon_msg_subs_t *)msg);
        return;
    case ND_CONN_MSG_LDM:
        on_ldm(ctx, c);
        return;
    case ND_CONN_MSG_SHUTDOWN:
        nd_conn_close(ctx, c, ND_CLOSE_SHUTDOWN);
        return;
    case ND_CONN_MSG_CLOSE:
        nd_conn_close(ctx, c, ((nd_conn_msg_close_t *)msg)->reason);
        return;
    case ND_CONN_MSG_TLS_TIMER:
        nd_conn_tls_timer(ctx, c, msg);
        return;
    case ND_CONN_MSG_AUTH_TIMER:
        if (is_peer(c)) {
            if (nd_timer_fired(&c->auth_timer, msg) && !c->closing && !c->connected) {
                nd_log_error("%s:%d - %s:%llu - Authentication Timeout", nd_conn_lhost(c), c->port,
                             nd_conn_log_tag(c), (unsigned long long)c->cid);
                nd_conn_write_err(c, ND_ERR_AUTH_TIMEOUT);
                nd_conn_close(ctx, c, ND_CLOSE_AUTH_TIMEOUT);
            }
            return;
        }
        if (c->ws_state == ND_CONN_WS_UPGRADE) {
            nd_conn_ws_timer(ctx, c, msg);
            return;
        }
        if (c->proto != NULL) {
            /* No CONNECT in time: the protocol has no error line of its own to send. */
            if (nd_timer_fired(&c->auth_timer, msg) && !c->closing && !c->connected)
                nd_conn_close(ctx, c, ND_CLOSE_AUTH_TIMEOUT);
            return;
        }
        nd_conn_auth_timer(ctx, c, msg);
        return;
    case ND_CONN_MSG_RPROTO:
        nd_route_on_proto(c, msg);
        return;
    case ND_CONN_MSG_INFO_UPDATE:
        if (!c->closing && c->started && c->connected && c->protocol >= 1 &&
            c->kind == ND_CONN_CLIENT && c->route == NULL)
            write_info(ctx, c, c->ldm_sent);
        return;
    case ND_CONN_MSG_REPLY:
        nd_conn_auth_reply(c, (nd_conn_msg_reply_t *)msg);
        return;
    case ND_CONN_MSG_REAUTH:
        nd_conn_auth_recheck(ctx, c);
        return;
    case ND_CONN_MSG_SUB_ACK:
        c->sub_acks_due--;
        if (c->sub_acks_due == 0 && c->ic != NULL && !c->closing)
            nd_iclient_ready(ctx, c);
        if (c->sub_acks_due == 0 && c->proto != NULL && !c->closing &&
            c->proto->subs_ready != NULL) {
            c->proto->subs_ready(ctx, c);
            nd_deliver_flush(ctx, c);
        }
        if (c->sub_acks_due == 0 && c->paused && !c->closing)
            resume(ctx, c);
        return;
    case ND_CONN_MSG_PING:
        on_ping_timer(ctx, c, msg);
        return;
    case ND_CONN_MSG_WDEADLINE:
        on_wdeadline(ctx, c, msg);
        return;
    case ND_CONN_MSG_UNSTALL:
        if (nd_timer_fired(&c->stall_timer, msg) && !c->closing) {
            c->stalled = false;
            if (!c->paused && c->read_blocked) {
                c->read_blocked = false;
                nd_io_again(ctx, &c->io, ND_IO_READ);
            }
        }
        return;
    case ND_CONN_MSG_SLOW:
        if (!c->closing) {
            nd_log_info("%s:%d - %s:%llu - \"Slow Consumer Detected: MaxPending of %lld "
                        "Exceeded\"",
                        nd_conn_lhost(c), c->port, nd_conn_log_tag(c),
                        (unsigned long long)c->cid, (long long)c->srv->opts.max_pending);
            drop_output(c);
            nd_conn_close(ctx, c, ND_CLOSE_SLOW_PENDING);
        }
        return;
    default:
        nd_fatal("conn: unknown message id %u", msg->id);
    }
}

static void
turn_end(nd_ctx_t *ctx, nd_actor_t *self)
{
    nd_conn_t *c = (nd_conn_t *)self;
    if (!c->closing)
        mon_publish(c); /* before the flush: a client that saw our answer sees these counters */
    if (!c->closing && c->ic != NULL)
        nd_iclient_turn_end(ctx, c);
    if (!c->closing && c->woff != c->wlen && !flush(ctx, c))
        nd_conn_close(ctx, c, ND_CLOSE_WRITE_ERROR);
    return_scratch(ctx, c);
}

static void
discard(nd_ctx_t *ctx, nd_msg_t *msg)
{
    if (msg->id == ND_CONN_MSG_MON_SUBS) {
        /* closed: the monitor still gets an answer */
        mon_subs(ctx, NULL, (nd_mon_msg_subs_t *)msg);
        return;
    }
    if (msg->id == ND_CONN_MSG_IMSG || msg->id == ND_CONN_MSG_ISTART ||
        msg->id == ND_CONN_MSG_ICALL || msg->id == ND_CONN_MSG_ITIMER) {
        nd_iclient_discard(ctx, msg);
        return;
    }
    if (msg->id == ND_CONN_MSG_PCALL) {
        nd_conn_msg_pcall_t *m = (nd_conn_msg_pcall_t *)msg;
        if (m->drop != NULL)
            m->drop(m->data);
        return;
    }
    nd_deliver_discard(ctx, msg);
}

static const nd_actor_type_t conn_type = {
    .name = "conn",
    .size = sizeof(nd_conn_t),
    .dispatch = dispatch,
    .final = on_final,
    .discard = discard,
    .turn_end = turn_end,
};

/* What every connection starts with: identity, account reference, transport over fd (-1: none),
 * subscriptions, cache and timers. Ctx: the spawner, before anything is sent to c. */
static void
conn_init(nd_conn_t *c, nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind, int fd,
          bool headers)
{
    c->srv = srv;
    c->kind = kind;
    c->cid = atomic_fetch_add_explicit(&srv->next_cid, 1, memory_order_relaxed) + 1;
    c->acct = acct;
    nd_actor_ref(&acct->actor);
    atomic_init(&c->pending, 0);
    atomic_init(&c->slow, false);
    atomic_init(&c->headers, headers);
    c->io.fd = fd;
    nd_tcp_init(&c->tr, fd);
    nd_sidmap_init(&c->subs);
    nd_slcache_init(&c->cache);
    nd_timer_init(&c->ping_timer, &c->base, ND_CONN_MSG_PING);
    nd_timer_init(&c->wdeadline_timer, &c->base, ND_CONN_MSG_WDEADLINE);
    nd_timer_init(&c->stall_timer, &c->base, ND_CONN_MSG_UNSTALL);
    nd_timer_init(&c->tls_timer, &c->base, ND_CONN_MSG_TLS_TIMER);
    nd_timer_init(&c->auth_timer, &c->base, ND_CONN_MSG_AUTH_TIMER);
    nd_timer_init(&c->ptimer, &c->base, ND_CONN_MSG_PTIMER);
}

/* A leaf connection: its own ops, no echo (nats-server's leafs never echo). */
static void
leaf_setup(nd_conn_t *c, struct nd_leaf *lf)
{
    c->leaf = lf;
    c->kind = ND_CONN_LEAF;
    c->verbose = c->pedantic = c->echo = false;
    nd_proto_parser_set_ops(&c->parser, ND_PROTO_OPS_LEAF);
    nd_proto_parser_set_limits(&c->parser, (size_t)nd_server_live_get(c->srv, max_control_line),
                               ND_PROTO_NO_LIMIT);
    if (lf->ws) {
        /* We dialed a ws:// remote and the upgrade is done (leaf.c): we are the client side,
         * our frames are masked and the server's are not. */
        nd_ws_wrap(&c->tr, NULL, 0);
        nd_ws_configure(&c->tr, &(nd_ws_params_t){.compress = lf->wsd.got_compress,
                                                   .no_mask = true,
                                                   .mask_writes = !lf->wsd.got_no_masking,
                                                   .max_payload = nd_server_live_get(c->srv,
                                                                                     max_payload)});
    }
}

void
nd_conn_ws_become_leaf(nd_ctx_t *ctx, nd_conn_t *c)
{
    leaf_setup(c, nd_new(nd_leaf_t));
    nd_leaf_conn_start(ctx, c);
}

void
nd_conn_ws_become_pconn(nd_ctx_t *ctx, nd_conn_t *c)
{
    /* No subscription of ours exists yet, so no publisher has looked at kind or proto; the
     * registry lists us only from nd_pconn_on_start on. */
    c->kind = ND_CONN_MQTT;
    c->proto = c->srv->ws_mqtt_proto;
    c->parg = c->srv->ws_mqtt_arg;
    nd_pconn_on_start(ctx, c);
}

/* What a socket connection is besides a plain client: at most one of route, leaf, gw and proto
 * (with parg and ptls), and ws for a WebSocket client; acct binds a leaf. */
typedef struct spawn_args {
    struct nd_route *rt;
    struct nd_ws_srv *ws;
    struct nd_leaf *lf;
    nd_acct_t *acct;
    struct nd_gw *gw;
    const struct nd_pconn_proto *proto;
    void *parg;
    struct nd_tls_ctx *ptls;
} spawn_args_t;

/* A socket connection of kind, as args says. */
static void
spawn_socket(nd_ctx_t *ctx, nd_server_t *srv, int fd, nd_conn_kind_t kind, const spawn_args_t *sa)
{
    struct nd_route *rt = sa->rt;
    struct nd_leaf *lf = sa->lf;
    struct nd_gw *gw = sa->gw;
    nd_conn_t *c = (nd_conn_t *)nd_actor_spawn(ctx, &conn_type);
    conn_init(c, srv, sa->acct != NULL ? sa->acct : srv->gacct, kind, fd, false);
    c->ws = sa->ws;
    c->proto = sa->proto;
    c->parg = sa->parg;
    if (sa->ptls != NULL)
        c->tls = nd_tls_ctx_ref(sa->ptls); /* the protocol listener's TLS (pconn.c) */
    c->verbose = c->pedantic = c->echo = true; /* nats-server's CONNECT defaults */
    c->live_gen = atomic_load_explicit(&srv->live.gen, memory_order_acquire); /* as above */
    nd_proto_parser_init(
        &c->parser, (size_t)nd_server_live_get(srv, max_control_line),
        nd_server_live_get(srv, max_payload));
    if (rt != NULL) {
        /* A route: its own ops, no payload limit (nats-server's mpay -1 for routes). */
        c->route = rt;
        c->verbose = c->pedantic = false;
        nd_proto_parser_set_ops(&c->parser, ND_PROTO_OPS_ROUTE);
        nd_proto_parser_set_limits(&c->parser, (size_t)nd_server_live_get(srv, max_control_line),
                                   ND_PROTO_NO_LIMIT);
    }
    if (lf != NULL)
        leaf_setup(c, lf);
    if (gw != NULL) {
        /* A gateway connection: a route's ops and A+/A-, no echo, no payload limit. */
        c->gw = gw;
        c->verbose = c->pedantic = c->echo = false;
        nd_proto_parser_set_ops(&c->parser, ND_PROTO_OPS_GATEWAY);
        nd_proto_parser_set_limits(&c->parser, (size_t)nd_server_live_get(srv, max_control_line),
                                   ND_PROTO_NO_LIMIT);
    }

    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, c->ip, sizeof c->ip);
            c->port = ntohs(a->sin6_port);
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, c->ip, sizeof c->ip);
            c->port = ntohs(a->sin_port);
        }
    }
    /* A WebSocket client says so once upgraded (conn_ws.c), as nats-server does. */
    if (rt == NULL && lf == NULL && gw == NULL && sa->ws == NULL)
        nd_log_debug("%s:%d - %s:%llu - Client connection created", c->ip, c->port,
                     nd_conn_log_tag(c), (unsigned long long)c->cid);
    int err = nd_poller_add(srv->poller, &c->io, fd, &c->base, ND_CONN_MSG_IO);
    if (err != 0) {
        /* Nothing was sent to the actor yet, so its fields are still ours to set. */
        nd_log_error("cannot register client socket: %s", strerror(err));
        close(fd);
        c->io.fd = -1;
        c->closing = c->torn_down = true;
        nd_actor_close(ctx, &c->base);
    } else {
        /* An I/O message may already be on its way; whichever runs first sends INFO. */
        nd_actor_send(ctx, &c->base, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_START));
    }
    nd_actor_unref(ctx, &c->base); /* the poller registration and the actor's life keep it */
}

void
nd_conn_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd)
{
    spawn_socket(ctx, srv, fd, ND_CONN_CLIENT, &(spawn_args_t){0});
}

void
nd_conn_spawn_ws(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_ws_srv *ws)
{
    spawn_socket(ctx, srv, fd, ND_CONN_CLIENT, &(spawn_args_t){.ws = ws});
}

void
nd_conn_spawn_route(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_route *rt)
{
    spawn_socket(ctx, srv, fd, ND_CONN_ROUTER, &(spawn_args_t){.rt = rt});
}

void
nd_pconn_spawn(nd_ctx_t *ctx, nd_server_t *srv, int fd, const nd_pconn_proto_t *proto, void *arg,
               struct nd_tls_ctx *tls)
{
    spawn_socket(ctx, srv, fd, ND_CONN_MQTT,
                 &(spawn_args_t){.proto = proto, .parg = arg, .ptls = tls});
}

void
nd_conn_spawn_leaf(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_leaf *lf, nd_acct_t *acct)
{
    spawn_socket(ctx, srv, fd, ND_CONN_LEAF, &(spawn_args_t){.lf = lf, .acct = acct});
    nd_actor_unref(ctx, &acct->actor); /* the connection took its own */
}

void
nd_conn_spawn_gateway(nd_ctx_t *ctx, nd_server_t *srv, int fd, struct nd_gw *gw)
{
    spawn_socket(ctx, srv, fd, ND_CONN_GATEWAY, &(spawn_args_t){.gw = gw});
}

/* An internal client's connection carries the nd_iclient_t right after it (ic_size bytes), so
 * the two live and die together: publishers that still hold a subscription of it (and so a
 * reference on the connection) may read its mailbox bound after it closed. */
typedef struct conn_internal {
    nd_conn_t c;
    max_align_t ic[];
} conn_internal_t;

#define ICLIENT_ROOM 512 /* bytes for the nd_iclient_t (iclient.c checks its size) */

static const nd_actor_type_t conn_internal_type = {
    .name = "conn-internal",
    .size = sizeof(conn_internal_t) + ICLIENT_ROOM,
    .dispatch = dispatch,
    .final = on_final,
    .discard = discard,
    .turn_end = turn_end,
};

nd_conn_t *
nd_conn_spawn_internal(nd_ctx_t *ctx, nd_server_t *srv, nd_acct_t *acct, nd_conn_kind_t kind,
                       size_t ic_size)
{
    if (ic_size > ICLIENT_ROOM)
        nd_fatal("conn: internal client state of %zu bytes > %d", ic_size, ICLIENT_ROOM);
    conn_internal_t *ci = (conn_internal_t *)nd_actor_spawn(ctx, &conn_internal_type);
    nd_conn_t *c = &ci->c;
    conn_init(c, srv, acct, kind, -1, true);
    c->ic = (struct nd_iclient *)ci->ic;
    /* No echo: a service never receives its own publishes (nothing would read MSG text written
     * to its output). No verbose, no no-responders status (nobody reads its socket). */
    c->echo = c->verbose = c->pedantic = false;
    c->headers_requested = true;
    c->started = c->authed = true;
    c->protocol = 1;
    snprintf(c->ip, sizeof c->ip, "%s", "127.0.0.1");
    return c; /* the caller's reference; the actor lives until the pool's shutdown closes it */
}

void
nd_connreg_ask_subs(nd_ctx_t *ctx, nd_conn_info_t *ci, nd_actor_t *reply_to, uint32_t reply_id,
                    uint64_t tag)
{
    nd_mon_msg_subs_t *m = ND_MSG_NEW(ctx, nd_mon_msg_subs_t, ND_CONN_MSG_MON_SUBS);
    m->reply_to = reply_to;
    nd_actor_ref(reply_to);
    m->reply_id = reply_id;
    m->tag = tag;
    m->info = ci;
    nd_conn_info_ref(ci);
    nd_actor_send(ctx, ci->actor, &m->hdr);
}

void
nd_conn_send_ldm(nd_ctx_t *ctx, nd_actor_t *conn)
{
    nd_actor_send(ctx, conn, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_LDM));
}

void
nd_conn_send_close(nd_ctx_t *ctx, nd_actor_t *conn, nd_close_reason_t reason)
{
    nd_conn_msg_close_t *m = ND_MSG_NEW(ctx, nd_conn_msg_close_t, ND_CONN_MSG_CLOSE);
    m->reason = reason;
    nd_actor_send(ctx, conn, &m->hdr);
}

void
nd_conn_send_info_update(nd_ctx_t *ctx, nd_actor_t *conn)
{
    nd_actor_send(ctx, conn, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_INFO_UPDATE));
}

void
nd_conn_send_shutdown(nd_ctx_t *ctx, nd_actor_t *conn)
{
    nd_actor_send(ctx, conn, nd_msg_new(ctx, sizeof(nd_msg_t), ND_CONN_MSG_SHUTDOWN));
}
