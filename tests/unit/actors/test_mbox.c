/* Unit tests for natsd/mbox.h: the intrusive MPSC mailbox with an idle bit.
 *
 * Single-threaded tests pin down the contract step by step (FIFO, push reporting exactly the
 * idle -> scheduled transition, pop on empty, mark_idle only when empty, the stub re-push that
 * hands out the last message, a producer caught between its exchange and its link). The threaded
 * test checks the property the scheduler relies on: with many producers, exactly one push per
 * idle period reports "schedule", and every producer's messages arrive in order.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "actors/mbox.h"
#include "test_wait.h"

typedef struct tmsg {
    nd_msg_t hdr;
    int producer;
    int seq;
} tmsg_t;

static tmsg_t *
make_msgs(int n)
{
    tmsg_t *m = calloc((size_t)n, sizeof(*m));
    for (int i = 0; i < n; i++) {
        m[i].hdr.id = (uint32_t)(100 + i);
        m[i].seq = i;
    }
    return m;
}

static uintptr_t
head_of(nd_mbox_t *mb)
{
    return atomic_load_explicit(&mb->head, memory_order_relaxed);
}

Test(mbox, init_is_idle_and_empty)
{
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    cr_assert_eq(head_of(&mb), (uintptr_t)&mb.stub | 1, "head is the stub, tagged idle");
    cr_assert_eq(mb.tail, &mb.stub);
    cr_assert_eq(mb.stub.flags & ND_MSG_F_EMBEDDED, ND_MSG_F_EMBEDDED);
}

Test(mbox, fifo_order)
{
    enum { N = 1000 };
    tmsg_t *m = make_msgs(N);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    for (int i = 0; i < N; i++)
        nd_mbox_push(&mb, &m[i].hdr);
    for (int i = 0; i < N; i++) {
        nd_msg_t *got = nd_mbox_pop_sc(&mb);
        cr_assert_eq(got, &m[i].hdr, "pop %d returned the wrong message", i);
        cr_assert_eq(((tmsg_t *)got)->seq, i);
    }
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert_null(nd_mbox_pop_sc(&mb), "pop stays NULL on an empty mailbox");
    free(m);
}

Test(mbox, push_reports_idle_to_scheduled_exactly_once)
{
    tmsg_t *m = make_msgs(6);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    cr_assert(nd_mbox_push(&mb, &m[0].hdr), "the first push finds the mailbox idle");
    cr_assert_not(nd_mbox_push(&mb, &m[1].hdr), "the actor is already scheduled");
    cr_assert_not(nd_mbox_push(&mb, &m[2].hdr));

    /* Draining alone does not make the mailbox idle: only mark_idle does. */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(nd_mbox_pop_sc(&mb), &m[i].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert_not(nd_mbox_push(&mb, &m[3].hdr), "scheduled until the consumer marks it idle");
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[3].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));

    cr_assert(nd_mbox_mark_idle_sc(&mb));
    cr_assert_eq(head_of(&mb), (uintptr_t)&mb.stub | 1);
    cr_assert(nd_mbox_push(&mb, &m[4].hdr), "the first push after idle schedules again");
    cr_assert_not(nd_mbox_push(&mb, &m[5].hdr));
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[4].hdr);
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[5].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert(nd_mbox_mark_idle_sc(&mb));
    free(m);
}

Test(mbox, mark_idle_only_when_empty)
{
    tmsg_t *m = make_msgs(3);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    nd_mbox_push(&mb, &m[0].hdr);
    nd_mbox_push(&mb, &m[1].hdr);
    cr_assert_not(nd_mbox_mark_idle_sc(&mb), "two messages queued");
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[0].hdr);
    cr_assert_not(nd_mbox_mark_idle_sc(&mb), "one message queued");
    /* A failed mark_idle leaves the mailbox scheduled: pushes still report false. */
    cr_assert_not(nd_mbox_push(&mb, &m[2].hdr));
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[1].hdr);
    cr_assert_not(nd_mbox_mark_idle_sc(&mb), "m2 is still queued behind the stub");
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[2].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert(nd_mbox_mark_idle_sc(&mb));
    free(m);
}

Test(mbox, mark_idle_fails_after_push_behind_repushed_stub)
{
    tmsg_t *m = make_msgs(2);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    nd_mbox_push(&mb, &m[0].hdr);
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[0].hdr); /* re-pushes the stub */
    cr_assert_not(nd_mbox_push(&mb, &m[1].hdr));  /* lands behind the stub */
    cr_assert_not(nd_mbox_mark_idle_sc(&mb));
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[1].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert(nd_mbox_mark_idle_sc(&mb));
    free(m);
}

Test(mbox, single_element_repushes_stub)
{
    enum { ROUNDS = 100 };
    tmsg_t *m = make_msgs(ROUNDS);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    cr_assert(nd_mbox_push(&mb, &m[0].hdr));
    for (int i = 0; i < ROUNDS; i++) {
        if (i > 0)
            cr_assert_not(nd_mbox_push(&mb, &m[i].hdr));
        cr_assert_eq(head_of(&mb), (uintptr_t)&m[i].hdr, "the only message is the head");
        /* Handing out the only message needs the stub behind it (Vyukov): afterwards the stub is
         * head and tail again and the message points at it. */
        cr_assert_eq(nd_mbox_pop_sc(&mb), &m[i].hdr, "round %d", i);
        cr_assert_eq(head_of(&mb), (uintptr_t)&mb.stub, "stub re-pushed, untagged");
        cr_assert_eq(mb.tail, &mb.stub);
        cr_assert_eq(atomic_load(&m[i].hdr.next), &mb.stub);
        cr_assert_null(atomic_load(&mb.stub.next));
        cr_assert_null(nd_mbox_pop_sc(&mb));
    }
    cr_assert(nd_mbox_mark_idle_sc(&mb));
    free(m);
}

Test(mbox, pop_null_while_producer_between_exchange_and_link)
{
    tmsg_t *m = make_msgs(2);
    nd_mbox_t mb;
    nd_mbox_init(&mb);
    cr_assert(nd_mbox_push(&mb, &m[0].hdr));

    /* Do the first half of a push of m1 by hand: swap head, but do not link m0 -> m1 yet. */
    atomic_store(&m[1].hdr.next, NULL);
    uintptr_t prev = atomic_exchange(&mb.head, (uintptr_t)&m[1].hdr);
    cr_assert_eq(prev, (uintptr_t)&m[0].hdr);

    /* m0 cannot be handed out yet (its next is about to be written), and the consumer must not
     * go idle: the producer did not see the idle bit and will not schedule the actor. */
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert_not(nd_mbox_mark_idle_sc(&mb));
    cr_assert_null(nd_mbox_pop_sc(&mb));

    /* The producer completes its link. */
    atomic_store(&m[0].hdr.next, &m[1].hdr);
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[0].hdr);
    cr_assert_eq(nd_mbox_pop_sc(&mb), &m[1].hdr);
    cr_assert_null(nd_mbox_pop_sc(&mb));
    cr_assert(nd_mbox_mark_idle_sc(&mb));
    free(m);
}

/* ---- many producers, one consumer that goes idle whenever it runs dry ---- */

#define PRODUCERS 4
#define PER_PROD  20000

typedef struct mp {
    nd_mbox_t mb;
    sem_t wake;                  /* posted by the push that found the mailbox idle */
    _Atomic int running;         /* 1 while the consumer holds the consumer role */
    _Atomic int double_schedule; /* pushes that saw idle while the consumer was running */
    _Atomic long sched_pushes;   /* pushes that returned true */
    tmsg_t *msgs[PRODUCERS];
} mp_t;

typedef struct prod_arg {
    mp_t *mp;
    int id;
} prod_arg_t;

static void *
producer_main(void *arg)
{
    prod_arg_t *pa = arg;
    mp_t *mp = pa->mp;
    for (int i = 0; i < PER_PROD; i++) {
        tmsg_t *m = &mp->msgs[pa->id][i];
        if (nd_mbox_push(&mp->mb, &m->hdr)) {
            atomic_fetch_add(&mp->sched_pushes, 1);
            if (atomic_exchange(&mp->running, 1) != 0)
                atomic_fetch_add(&mp->double_schedule, 1);
            sem_post(&mp->wake);
        }
    }
    return NULL;
}

Test(mbox, mpsc_one_schedule_per_idle_period, .timeout = 120)
{
    mp_t *mp = calloc(1, sizeof(*mp));
    nd_mbox_init(&mp->mb);
    sem_init(&mp->wake, 0, 0);
    for (int p = 0; p < PRODUCERS; p++) {
        mp->msgs[p] = make_msgs(PER_PROD);
        for (int i = 0; i < PER_PROD; i++)
            mp->msgs[p][i].producer = p;
    }
    pthread_t th[PRODUCERS];
    prod_arg_t args[PRODUCERS];
    for (int p = 0; p < PRODUCERS; p++) {
        args[p] = (prod_arg_t){mp, p};
        cr_assert_eq(pthread_create(&th[p], NULL, producer_main, &args[p]), 0);
    }

    int next[PRODUCERS] = {0};
    time_t give_up = time(NULL) + 60;
    long got = 0, idles = 0, order_errors = 0;
    /* The consumer starts without the role: it waits for a push to hand it over. */
    while (got < (long)PRODUCERS * PER_PROD) {
        cr_assert(sem_wait_10s(&mp->wake), "lost wake-up after %ld messages", got);
        for (;;) {
            nd_msg_t *msg = nd_mbox_pop_sc(&mp->mb);
            if (msg != NULL) {
                tmsg_t *m = (tmsg_t *)msg;
                if (m->seq != next[m->producer])
                    order_errors++;
                next[m->producer] = m->seq + 1;
                got++;
                continue;
            }
            /* Give up the role before marking idle: once idle, a producer may take it. */
            atomic_store(&mp->running, 0);
            if (nd_mbox_mark_idle_sc(&mp->mb)) {
                idles++;
                break;
            }
            atomic_store(&mp->running, 1);
            /* A producer is between its two steps; it finishes soon (hang guard only). */
            cr_assert(time(NULL) < give_up, "mailbox never became poppable or idle");
            sched_yield();
        }
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);

    cr_assert_eq(order_errors, 0);
    cr_assert_eq(got, (long)PRODUCERS * PER_PROD);
    for (int p = 0; p < PRODUCERS; p++)
        cr_assert_eq(next[p], PER_PROD);
    cr_assert_eq(atomic_load(&mp->double_schedule), 0);
    /* Each scheduling push opened one period and each period ended in one successful idle. */
    cr_assert_eq(atomic_load(&mp->sched_pushes), idles);
    int left = -1;
    sem_getvalue(&mp->wake, &left);
    cr_assert_eq(left, 0, "no scheduling push is left unconsumed");
    cr_assert_null(nd_mbox_pop_sc(&mp->mb));

    sem_destroy(&mp->wake);
    for (int p = 0; p < PRODUCERS; p++)
        free(mp->msgs[p]);
    free(mp);
}
