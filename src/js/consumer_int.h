/* A consumer's private structure, shared by consumer.c (the actor: delivery, acks, redelivery,
 * pull requests, persistence) and consumer_api.c (create, delete, info, names, list, recovery,
 * on the stream's and the API service's turns).
 *
 *   nd_consumer_t  one consumer: an internal client subscribed to its ack subject
 *                  ($JS.ACK.<stream>.<consumer>.>), its pull request subject
 *                  ($JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>) and, with flow control, its
 *                  flow control replies ($JS.FC.<stream>.<consumer>.>). It reads messages from
 *                  its stream's store under the store's lock (store_locked.h) and is woken by
 *                  its stream when new messages arrive (nd_iclient_call, coalesced by `signalled`).
 *
 * Pending (delivered, not yet acknowledged) messages are a deque sorted by stream sequence
 * (new deliveries only ever append: stream sequences grow), with holes where acks fell: lookup
 * by binary search, the ack floor is the first live entry, and acks in order pop the head.
 * Redelivery deadlines: a first delivery's is its time plus the ack wait, so along the deque
 * they only grow and a cursor (pscan) finds the due ones without any index; a deadline that
 * moves (a redelivery, a NAK delay, a +WPI) goes into a min-heap of {deadline, sseq}
 * (store_ttl.h's heap), whose stale entries are skipped when popped. 24 bytes per pending
 * message, plus 16 for each moved deadline.
 *
 * Lifetime: reference counted (the stream's table holds one, the actor one, a lookup one).
 * c->ic is read and sent to under st->mu; the actor's last turn clears it there.
 */
#ifndef ND_JS_CONSUMER_INT_H
#define ND_JS_CONSUMER_INT_H

#include "js/consumer_cfg.h"
#include "js/consumer_proto.h"
#include "js/js_int.h"
#include "js/store/store_ttl.h"

#define JS_PEND_DC_MAX 32767 /* delivery counts saturate there */
typedef struct js_pend {
    uint64_t sseq;
    int64_t ts;           /* when ack_wait started counting (the delivery, a +WPI; a NAK
                           * delay moves it) */
    uint64_t dseq : 48;   /* the consumer sequence it last went out with */
    uint64_t dc : 15;     /* deliveries so far; 0: acknowledged (a hole) */
    uint64_t moved : 1;   /* its deadline left the delivery order: it is in the deadline heap
                           * or the redelivery queue (first deliveries are not: their deadlines
                           * grow along the deque) */
} js_pend_t;

/* A pull request waiting for messages. */
typedef struct js_wreq {
    char *reply;
    int64_t n;          /* messages still wanted */
    int64_t b;          /* max_bytes left; 0 = no limit */
    int64_t expires;    /* Unix ns, 0 = none */
    int64_t hb_ns, hbt; /* idle heartbeat interval and when the next one is due */
    bool no_wait;
    uint64_t d;         /* delivered so far */
    /* 2.11 priority groups (consumer_prio.c): pg says the request was a JSON one (nats-server
     * then has a PriorityGroup, possibly empty); id is the pin id it presented or was given. */
    bool pg, id_long;
    int64_t min_pending, min_ack_pending;
    char id[64];
} js_wreq_t;

/* What listings and monitoring read (under c->mu), copied at the end of each turn. */
typedef struct js_consumer_stats {
    uint64_t dseq, sseq;       /* last delivered */
    uint64_t adflr, asflr;     /* ack floor */
    int64_t last_delivered, last_acked;
    uint64_t ack_pending, redelivered, waiting;
    uint64_t npending;         /* num_pending as last counted */
    bool push_bound;
    char pin_id[24];           /* the pinned client of the priority group, "" none */
    int64_t pin_ts;
} js_consumer_stats_t;

struct nd_consumer {
    _Atomic int refs;
    nd_stream_t *st;   /* a reference */
    nd_iclient_t *ic;  /* under st->mu; NULL once the actor closed */
    char *name;
    int64_t created_ns;
    bool ephemeral;    /* no durable_name */
    bool recovered;    /* from the stream's directory at start: its state is the stored one */
    nd_retention_t retention; /* the stream's */

    /* The stream's copy of the config (its turn): idempotent creates and updates. */
    nd_consumer_cfg_t scfg;

    /* ---- the actor's own (its turn only) ---- */
    nd_consumer_cfg_t cfg;
    char *ack_prefix;  /* "$JS.ACK.<stream>.<consumer>." */
    char *fc_prefix;   /* "$JS.FC.<stream>.<consumer>." */
    nd_cstore_t *cs;   /* persisted state (NULL for none), of the inner store of generation cs_gen */
    uint64_t cs_gen;
    char *create_reply;
    js_audit_req_t *create_audit;

    uint64_t sseq;     /* the next stream sequence to look at for new messages */
    uint64_t dseq;     /* the last consumer sequence used */
    uint64_t dsseq;    /* the stream sequence of the last delivery */
    uint64_t adflr, asflr;
    int64_t last_delivered, last_acked, last_active;
    uint64_t npc;      /* messages pending (not yet delivered) as last counted ... */
    uint64_t npc_upto; /* ... up to this stream sequence (new ones add to it, unfiltered) */
    bool npc_valid;

    js_pend_t *pend;   /* [phead, ptail) sorted by sseq */
    size_t phead, ptail, pcap, plive;
    size_t pscan;             /* no live first-delivery entry before it (pend index) */
    uint64_t nredelivered;    /* live entries delivered more than once */
    nd_store_ttls_t rdl;      /* redelivery deadlines */
    uint64_t *rdq;            /* due for redelivery, oldest first */
    size_t rdq_head, rdq_len, rdq_cap;
    uint64_t *lss;            /* deliver last_per_subject: sequences to deliver first */
    size_t lss_pos, lss_len;
    uint64_t lss_resume;

    js_wreq_t *wq;            /* pull requests, FIFO ring */
    size_t wq_head, wq_len, wq_cap;

    /* push */
    bool active;              /* interest on the deliver subject, as last checked */
    int64_t next_interest_check;
    int64_t hb_due;           /* next idle heartbeat (push), 0 none */
    char *fc_reply;           /* outstanding flow control request, NULL none */
    uint64_t fc_bytes;        /* bytes delivered so far (push with flow control) */
    uint64_t fc_acked;        /* fc_bytes the last reply confirmed */
    uint64_t fc_sent_at;      /* fc_bytes when the outstanding request went out */
    uint64_t fc_window;       /* nats-server's: 1/16 of FC_LIMIT, doubled by each reply up to it */

    bool dirty;               /* state changed since it was last persisted */
    int64_t persist_due;
    char **dacks;             /* double-ack replies to send once the state is persisted */
    size_t ndacks, dacks_cap;
    bool stopped, deleting;
    int64_t timer_at;         /* the armed timer's deadline, 0 none */
    nd_store_msg_t msg;       /* load buffer */

    /* pinned_client priority policy (consumer_prio.c) */
    char pin_id[24];          /* the current pin id, "" none */
    int64_t pin_ts;           /* when it was given */
    int64_t pin_deadline;     /* the pin's TTL runs out (priority_timeout), 0 none */
    /* pause (consumer_pause.c) */
    int64_t pause_edge;       /* the pause_until whose end is still to be announced, 0 none */
    /* pacing (consumer_pace.c): replay_policy original and rate_limit_bps */
    int64_t pace_at;          /* no delivery before this (wall ns), 0 none */
    bool replay;              /* replaying at the original spacing, until caught up */
    uint64_t replay_lseq;     /* the stream's last sequence when the replay began */
    int64_t replay_lts;       /* the stored timestamp of the last message delivered */
    int64_t replay_wall;      /* when that delivery went out */
    double rl_tokens;         /* rate limit bucket (bytes) */
    int64_t rl_last;          /* when the bucket was last filled, 0 never */

    uint64_t *racks;          /* acknowledged this turn, for the stream's retention */
    size_t nracks, racks_cap;
    _Atomic bool signalled;   /* a wake-up call is queued */

    /* ---- shared: under mu ---- */
    pthread_mutex_t mu;
    js_consumer_stats_t stats;
    json_t *cfg_json;         /* the config in force (consumer info in listings) */
    uint64_t next_pub;        /* sseq: what the stream's retention reads (with pend, whose
                               * changes also happen under mu) */
};

/* consumer.c */
/* What a stream's turn removed, as its consumers learn it. */
enum {
    JS_REMOVED_NONE = 0,
    JS_REMOVED_HEAD,  /* the first sequence moved on (limits, discard old) */
    JS_REMOVED_ANY,   /* messages may have gone anywhere (delete, expiry, rollup, limits) */
    JS_REMOVED_PURGE, /* a purge request (the consumer moves past what went, as nats-server's
                       * consumer purge) */
};
/* The stream stored messages, and removed some (JS_REMOVED_*). Any thread. */
void js_consumer_signal(nd_ctx_t *ctx, nd_consumer_t *c, int removed);
/* Starts the actor of a new or recovered consumer (state: recovered, may be NULL). */
void js_consumer_spawn(nd_ctx_t *ctx, nd_consumer_t *c);
nd_consumer_t *js_consumer_new(nd_stream_t *st, nd_consumer_cfg_t *cfg, int64_t created);
void js_consumer_ref(nd_consumer_t *c);
/* Info JSON from the shared stats (any thread; num_pending counted from the store). */
json_t *js_consumer_list_info(nd_consumer_t *c);
/* Calls on the consumer's turn. */
void js_consumer_call_update(nd_ctx_t *ctx, nd_consumer_t *c, nd_consumer_cfg_t *cfg,
                             const char *reply);
void js_consumer_call_delete(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply, bool files);
/* Writes/removes the consumer's config file (<stream dir>/consumers/<name>.json). */
int js_consumer_meta_write(nd_consumer_t *c);
void js_consumer_meta_remove(nd_stream_t *st, const char *name);

/* Whether c still needs sseq acknowledged (not delivered yet, or pending). Any thread. */
bool js_consumer_needs_ack(nd_consumer_t *c, uint64_t sseq);

/* Events: a new {"type", "id", "timestamp"} object; fields are added in nats-server's order,
 * then js_consumer_event_send publishes it to subj (the object is stolen). */
json_t *js_consumer_event_new(nd_ctx_t *ctx, const char *type);
void js_consumer_event_domain(const nd_consumer_t *c, json_t *ev);
void js_consumer_event_send(nd_ctx_t *ctx, nd_consumer_t *c, const char *subj, json_t *ev);

/* consumer_pause.c: CONSUMER.PAUSE, pause_until and its advisories (2.11). Consumer's turn. */
/* Answers a $JS.API.CONSUMER.PAUSE.<s>.<c> request. */
void js_pause_request(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m);
/* The pause in force changed (an update) from old_ns: advisory, timer edge. */
void js_pause_changed(nd_ctx_t *ctx, nd_consumer_t *c, int64_t old_ns);
/* A create answer went out: the advisory when the consumer is paused (as 2.11's create). */
void js_pause_created(nd_ctx_t *ctx, nd_consumer_t *c);
/* On a timer: a pause that ended is announced. */
void js_pause_timer(nd_ctx_t *ctx, nd_consumer_t *c, int64_t now);

/* consumer_prio.c: priority groups of pull consumers (2.11). Consumer's turn. */
typedef enum { JS_PRIO_TAKE, JS_PRIO_SKIP, JS_PRIO_DROP } js_prio_verdict_t;
/* A new pull request's priority group checks (nats-server processNextMsgRequest): may send 400s
 * and 423. Returns: false when the request is refused; else fills w's group fields. */
bool js_prio_check_request(nd_ctx_t *ctx, nd_consumer_t *c, const char *reply,
                           const char *body, size_t len, const js_pull_req_t *r, js_wreq_t *w);
/* Whether waiting request w may take the next message (nats-server nextWaiting): DROP after
 * answering it 423 Nats-Wrong-Pin-Id. need_pin: no pin was given yet when the search began;
 * pending: the messages pending including this one; a TAKE with need_pin pins w. */
js_prio_verdict_t js_prio_admit(nd_ctx_t *ctx, nd_consumer_t *c, js_wreq_t *w, bool need_pin,
                                uint64_t pending, int64_t now);
/* Whether a pinned_client consumer has no pin (a search for a request pins one). */
bool js_prio_need_pin(const nd_consumer_t *c);
/* The Nats-Pin-Id header line for deliveries ("" when the policy is not pinned_client). */
size_t js_prio_hdr(const nd_consumer_t *c, char *buf, size_t room);
/* Answers a $JS.API.CONSUMER.UNPIN.<s>.<c> request. */
void js_prio_unpin_request(nd_ctx_t *ctx, nd_consumer_t *c, const nd_imsg_t *m);
/* On a timer: the pin's TTL ran out. */
void js_prio_timer(nd_ctx_t *ctx, nd_consumer_t *c, int64_t now);
/* Adds "priority_groups" to consumer info (when the config has groups). */
void js_prio_info(json_t *info, const json_t *cfg, const js_consumer_stats_t *s);

/* consumer_pace.c: replay_policy original, rate_limit_bps, ack sampling. Consumer's turn. */
/* Starts an original-spacing replay (a new or recovered consumer). Ctx: store held. */
void js_pace_start(nd_consumer_t *c, uint64_t last_seq);
/* Whether a message of sz bytes stored at ts may go now; else sets c->pace_at. */
bool js_pace_ready(nd_consumer_t *c, int64_t ts, size_t sz, int64_t now);
/* A message stored at ts went out (now). */
void js_pace_sent(nd_consumer_t *c, int64_t ts, size_t sz, int64_t now);
/* Nothing more to deliver for now: a replay that caught up ends. */
void js_pace_idle(nd_consumer_t *c);
/* An explicit ack of a pending message (delivered at dts): the sampled ack metric. */
void js_pace_sample_ack(nd_ctx_t *ctx, nd_consumer_t *c, uint64_t sseq, uint64_t dseq,
                        uint64_t dc, int64_t dts);

/* consumer_api.c */
/* The consumer's turn acknowledged seqs (n of them; ownership passes): an interest or
 * workqueue stream drops those nobody else needs. */
void js_consumer_retention_acks(nd_ctx_t *ctx, nd_consumer_t *c, uint64_t *seqs, size_t n);
/* Removes c from its stream's table (the stream's turn). */
void js_consumer_table_remove(nd_stream_t *st, nd_consumer_t *c);
/* The actor asks its stream to delete it (an ephemeral gone inactive). */
void js_consumer_request_delete(nd_ctx_t *ctx, nd_consumer_t *c);

#endif
