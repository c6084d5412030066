/* Pacing a consumer's deliveries, and sampling its acks:
 *
 *   replay_policy original  messages go out with the spacing they were stored with: a message
 *                           stored d after the previous one delivered goes d after that delivery
 *                           (gaps of 1 ms or less are not waited for). The replay covers what
 *                           the stream held when it began; once caught up, new messages go at
 *                           once (nats-server's o.replay / lseq in loopAndGatherMsgs).
 *   rate_limit_bps          a token bucket in bytes (rate bps/8 per second, burst the stream's
 *                           max_msg_size or else 1 MiB, nats-server's default max_payload; full
 *                           at the start), charged with each delivery's size as max_bytes counts
 *                           it (golang.org/x/time/rate's ReserveN, as nats-server uses it).
 *
 * Neither waits on the consumer's turn: js_pace_ready() says "not yet" and sets c->pace_at;
 * deliver() stops with the message still unconsumed and arm() brings the timer back then.
 *
 *   sample_freq             an explicit ack of a pending message publishes the ack metric
 *                           $JS.EVENT.METRIC.CONSUMER.ACK.<stream>.<consumer>
 *                           (io.nats.jetstream.metric.v1.consumer_ack) for that share of acks:
 *                           rand(100) <= freq, as nats-server's shouldSample draws it.
 *
 * References: nats-server server/consumer.go (loopAndGatherMsgs, setRateLimit, shouldSample,
 * sampleAck), jetstream_events.go (JSConsumerAckMetric).
 */
#include "actors/alloc.h"
#include "js/consumer_int.h"

#define NS_PER_S      1000000000LL
#define REPLAY_MIN    1000000LL   /* 1 ms: shorter gaps go at once */
#define DEFAULT_BURST (1 << 20)   /* nats-server's default max_payload */

void
js_pace_start(nd_consumer_t *c, uint64_t last_seq)
{
    c->replay = true;
    c->replay_lseq = last_seq;
    c->replay_lts = 0;
}

static double
burst_of(const nd_consumer_t *c)
{
    int32_t mms = c->st->cfg.max_msg_size;
    return mms > 0 ? (double)mms : (double)DEFAULT_BURST;
}

/* Bytes per second; 0 when there is no limit. */
static double
rate_of(const nd_consumer_t *c)
{
    return (double)(c->cfg.rate_limit_bps / 8);
}

static void
refill(nd_consumer_t *c, int64_t now)
{
    double burst = burst_of(c);
    if (c->rl_last == 0) {
        c->rl_tokens = burst;
    } else if (now > c->rl_last) {
        c->rl_tokens += (double)(now - c->rl_last) * rate_of(c) / (double)NS_PER_S;
        if (c->rl_tokens > burst)
            c->rl_tokens = burst;
    }
    c->rl_last = now;
}

bool
js_pace_ready(nd_consumer_t *c, int64_t ts, size_t sz, int64_t now)
{
    if (c->replay && c->replay_lts > 0) {
        int64_t delay = ts - c->replay_lts;
        if (delay > REPLAY_MIN && now < c->replay_wall + delay) {
            c->pace_at = c->replay_wall + delay;
            return false;
        }
    }
    if (c->cfg.rate_limit_bps >= 8) {
        refill(c, now);
        double need = (double)sz;
        if (need > burst_of(c))
            need = burst_of(c); /* (ReserveN refuses it for good; we let it go when full) */
        if (c->rl_tokens < need) {
            double wait = (need - c->rl_tokens) * (double)NS_PER_S / rate_of(c);
            c->pace_at = now + (int64_t)wait + 1;
            return false;
        }
    }
    c->pace_at = 0;
    return true;
}

void
js_pace_sent(nd_consumer_t *c, int64_t ts, size_t sz, int64_t now)
{
    c->replay_lts = ts;
    c->replay_wall = now;
    if (c->cfg.rate_limit_bps >= 8)
        c->rl_tokens -= (double)sz;
}

void
js_pace_idle(nd_consumer_t *c)
{
    if (c->replay && c->sseq > c->replay_lseq)
        c->replay = false;
}

void
js_pace_sample_ack(nd_ctx_t *ctx, nd_consumer_t *c, uint64_t sseq, uint64_t dseq, uint64_t dc,
                   int64_t dts)
{
    int f = c->cfg.sample_freq;
    if (f <= 0)
        return;
    if (f < 100 && (int)(nd_ctx_rand(ctx) % 100) > f)
        return;
    int64_t now = js_now();
    json_t *ev = js_consumer_event_new(ctx, "io.nats.jetstream.metric.v1.consumer_ack");
    json_object_set_new(ev, "stream", json_string(c->st->name));
    json_object_set_new(ev, "consumer", json_string(c->name));
    json_object_set_new(ev, "consumer_seq", json_integer((json_int_t)dseq));
    json_object_set_new(ev, "stream_seq", json_integer((json_int_t)sseq));
    json_object_set_new(ev, "ack_time", json_integer(now - dts));
    json_object_set_new(ev, "deliveries", json_integer((json_int_t)dc));
    js_consumer_event_domain(c, ev);
    char *subj = js_path("$JS.EVENT.METRIC.CONSUMER.ACK.%s.%s", c->st->name, c->name);
    js_consumer_event_send(ctx, c, subj, ev);
    nd_free(subj);
}
