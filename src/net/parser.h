/* The client-protocol parser: turns the bytes a connection read into NATS commands.
 *
 * Zero allocation and no copies: every slice in a parsed command points into the caller's read
 * buffer. One call parses at most one command; the caller drives it like this:
 *
 *     for (;;) {
 *         st = nd_proto_parse(&p, rbuf + off, rlen - off, &used, &cmd);
 *         if (st == ND_PROTO_MORE) break;        // keep rbuf[off..rlen), read more after it
 *         if (st != ND_PROTO_CMD) { send -ERR nd_proto_status_errtext(st), if any; close; }
 *         handle(&cmd);
 *         off += used;
 *     }
 *     move rbuf[off..rlen) to the start of the buffer (slices of handled commands die here).
 *
 * The kept bytes must be passed again, unchanged and first, on the next call: the parser remembers
 * how far it has scanned them, so a control line or a payload that trickles in one byte per read
 * costs O(total bytes), not O(n^2). MORE consumes nothing (*used is 0): the kept bytes always
 * start at the unfinished command's op name. After ND_PROTO_CMD the parser is at a line start
 * again, so a caller that cannot handle a command yet (a paused connection) may leave it
 * unconsumed and gets the same command from the next call on those bytes.
 *
 * Grammar and error behaviour follow nats-server 2.9.10 (probed over raw TCP; see parser.c for
 * the details and the few deliberate differences).
 */
#ifndef NATSD_NET_PARSER_H
#define NATSD_NET_PARSER_H

#include <stddef.h>
#include <stdint.h>

/* What one nd_proto_parse() call produced. */
typedef enum nd_proto_status {
    ND_PROTO_CMD = 0, /* a command is in *cmd */
    ND_PROTO_MORE,    /* the buffer ends inside a command: read more, then call again */
    /* Errors: the connection must be closed. The parser stays in the error (every later call
     * returns the same status) until nd_proto_parser_reset(). */
    ND_PROTO_ERR_UNKNOWN_OP,   /* bad op name, or no CRLF right after a payload */
    ND_PROTO_ERR_CONTROL_LINE, /* argument longer than max_control_line */
    ND_PROTO_ERR_MAX_PAYLOAD,  /* PUB/HPUB size above max_payload (seen on the control line) */
    ND_PROTO_ERR_ARGS,         /* wrong argument count or bad size: closed with no -ERR */
} nd_proto_status_t;

/* Protocol operations. Gateway and leaf ops (LS+, A+ ...) get their own values and rows in
 * parser.c's op table when those connection kinds arrive. */
typedef enum nd_proto_op {
    ND_PROTO_OP_NONE = 0,
    ND_PROTO_OP_CONNECT,
    ND_PROTO_OP_PUB,
    ND_PROTO_OP_HPUB,
    ND_PROTO_OP_SUB,
    ND_PROTO_OP_UNSUB,
    ND_PROTO_OP_PING,
    ND_PROTO_OP_PONG,
    ND_PROTO_OP_INFO,
    ND_PROTO_OP_OK,  /* +OK */
    ND_PROTO_OP_ERR, /* -ERR */
    ND_PROTO_OP_RSUB,   /* RS+ <account> <subject> [<queue> <weight>] */
    ND_PROTO_OP_RUNSUB, /* RS- <account> <subject> [<queue>] */
    ND_PROTO_OP_RMSG,   /* RMSG <account> <subject> [+ <reply> <queues> | | <queues> | <reply>] <size> */
    ND_PROTO_OP_RHMSG,  /* HMSG on a route: as RMSG with <hdr> before <size> */
    ND_PROTO_OP_LSUB,   /* LS+ <subject> [<queue> <weight>] */
    ND_PROTO_OP_LUNSUB, /* LS- <subject> [<queue>] */
    ND_PROTO_OP_LMSG,   /* LMSG <subject> [+ <reply> <queues> | | <queues> | <reply>] <size> */
    ND_PROTO_OP_LHMSG,  /* HMSG on a leaf connection: as LMSG with <hdr> before <size> */
    ND_PROTO_OP_ASUB,   /* A+ <account> (gateways: interest in the account again) */
    ND_PROTO_OP_AUNSUB, /* A- <account> (gateways: no interest in the account at all) */
    ND_PROTO_OP_COUNT_
} nd_proto_op_t;

#define ND_PROTO_OPBIT(op) (1u << (op))

/* The ops a CLIENT connection may send. Anything else is ND_PROTO_ERR_UNKNOWN_OP. */
#define ND_PROTO_OPS_CLIENT                                                                        \
    (ND_PROTO_OPBIT(ND_PROTO_OP_CONNECT) | ND_PROTO_OPBIT(ND_PROTO_OP_PUB) |                       \
     ND_PROTO_OPBIT(ND_PROTO_OP_HPUB) | ND_PROTO_OPBIT(ND_PROTO_OP_SUB) |                          \
     ND_PROTO_OPBIT(ND_PROTO_OP_UNSUB) | ND_PROTO_OPBIT(ND_PROTO_OP_PING) |                        \
     ND_PROTO_OPBIT(ND_PROTO_OP_PONG) | ND_PROTO_OPBIT(ND_PROTO_OP_INFO) |                         \
     ND_PROTO_OPBIT(ND_PROTO_OP_OK) | ND_PROTO_OPBIT(ND_PROTO_OP_ERR))

/* The ops a ROUTER connection may send. */
#define ND_PROTO_OPS_ROUTE                                                                         \
    (ND_PROTO_OPBIT(ND_PROTO_OP_CONNECT) | ND_PROTO_OPBIT(ND_PROTO_OP_INFO) |                      \
     ND_PROTO_OPBIT(ND_PROTO_OP_PING) | ND_PROTO_OPBIT(ND_PROTO_OP_PONG) |                         \
     ND_PROTO_OPBIT(ND_PROTO_OP_OK) | ND_PROTO_OPBIT(ND_PROTO_OP_ERR) |                            \
     ND_PROTO_OPBIT(ND_PROTO_OP_RSUB) | ND_PROTO_OPBIT(ND_PROTO_OP_RUNSUB) |                       \
     ND_PROTO_OPBIT(ND_PROTO_OP_RMSG) | ND_PROTO_OPBIT(ND_PROTO_OP_RHMSG))

/* The ops a LEAF connection may send. */
#define ND_PROTO_OPS_LEAF                                                                          \
    (ND_PROTO_OPBIT(ND_PROTO_OP_CONNECT) | ND_PROTO_OPBIT(ND_PROTO_OP_INFO) |                      \
     ND_PROTO_OPBIT(ND_PROTO_OP_PING) | ND_PROTO_OPBIT(ND_PROTO_OP_PONG) |                         \
     ND_PROTO_OPBIT(ND_PROTO_OP_OK) | ND_PROTO_OPBIT(ND_PROTO_OP_ERR) |                            \
     ND_PROTO_OPBIT(ND_PROTO_OP_LSUB) | ND_PROTO_OPBIT(ND_PROTO_OP_LUNSUB) |                       \
     ND_PROTO_OPBIT(ND_PROTO_OP_LMSG) | ND_PROTO_OPBIT(ND_PROTO_OP_LHMSG))

/* The ops a GATEWAY connection may send: a route's, and A+/A-. */
#define ND_PROTO_OPS_GATEWAY                                                                       \
    (ND_PROTO_OPS_ROUTE | ND_PROTO_OPBIT(ND_PROTO_OP_ASUB) | ND_PROTO_OPBIT(ND_PROTO_OP_AUNSUB))

/* No payload limit (nats-server's jwt.NoLimit); sizes are still at most 9 digits. */
#define ND_PROTO_NO_LIMIT (-1)

/* Protocol defaults (nats-server MAX_CONTROL_LINE_SIZE and MAX_PAYLOAD_SIZE). */
#define ND_PROTO_DEFAULT_MAX_CONTROL_LINE 4096
#define ND_PROTO_DEFAULT_MAX_PAYLOAD      (1024 * 1024)

/* A borrowed byte range inside the caller's buffer; not NUL-terminated. */
typedef struct nd_proto_slice {
    const char *ptr;
    size_t len;
} nd_proto_slice_t;

/* One parsed command. Only the fields listed for its op are set; the others hold stale values.
 * Borrows: every slice points into the buffer passed to nd_proto_parse() and is valid until the
 * caller moves or overwrites those bytes. */
typedef struct nd_proto_cmd {
    nd_proto_op_t op;         /* on an error: the op being parsed, or NONE if not known yet */
    nd_proto_slice_t subject; /* PUB HPUB SUB RS+ RS- RMSG HMSG LS+ LS- LMSG */
    nd_proto_slice_t reply;   /* PUB HPUB RMSG HMSG: empty (len 0) when absent */
    nd_proto_slice_t queue;   /* SUB RS+ RS- LS+ LS-: empty when absent */
    nd_proto_slice_t account; /* RS+ RS- RMSG HMSG (empty for the leaf ops) */
    nd_proto_slice_t queues;  /* RMSG HMSG LMSG: the queue names, separated by blanks; may be
                               * empty */
    nd_proto_slice_t sid;     /* SUB UNSUB */
    nd_proto_slice_t arg;     /* CONNECT/INFO: the JSON; -ERR: the text, quotes included.
                               * Blanks and CR/LF at both ends are trimmed; may be empty. */
    nd_proto_slice_t payload; /* PUB RMSG: the payload; HPUB HMSG: headers + payload. No CRLF. */
    int64_t hdr_len;          /* HPUB HMSG: header bytes at the start of payload; PUB RMSG: 0 */
    int64_t max_msgs;         /* UNSUB: auto-unsubscribe count, -1 when absent or not a size;
                               * RS+/LS+ with a queue: the weight (-1 when not a size) */
} nd_proto_cmd_t;

/* All parser state of one connection. Treat the fields as private. */
typedef struct nd_proto_parser {
    /* limits, settable at any time between calls */
    size_t max_control_line;
    int64_t max_payload; /* ND_PROTO_NO_LIMIT or >= 0 */
    uint32_t ops;        /* ND_PROTO_OPBIT set of the accepted ops */
    /* progress through the current command; offsets count from its first byte (the first kept
     * byte), except ctl and reply_off, which count from the argument's start */
    uint8_t phase;
    uint8_t op;
    uint8_t err; /* the sticky error status in the error phase */
    size_t arg;  /* where the argument (before it: the blanks, or the ignored text) begins */
    size_t scan; /* where the next search goes on: the bytes before it were searched already */
    size_t need; /* PAYLOAD: bytes the whole command needs; 0 in every other phase */
    size_t ctl;  /* PAYLOAD: the control line's length, i.e. the payload's offset */
    size_t subj_off, subj_len, reply_off, reply_len;
    size_t acct_len, queues_off, queues_len; /* RMSG/HMSG (0 for PUB/HPUB) */
    int64_t hdr_len;
} nd_proto_parser_t;

/* Sets up a parser for a CLIENT connection. max_payload may be ND_PROTO_NO_LIMIT. Ctx: owner. */
void nd_proto_parser_init(nd_proto_parser_t *p, size_t max_control_line, int64_t max_payload);

/* Forgets any partial command and any error; the limits and the op set are kept. */
void nd_proto_parser_reset(nd_proto_parser_t *p);

/* Changes the limits (for example after CONNECT or a config reload). They apply from the next
 * call; a control line already accepted is not checked again. */
static inline void
nd_proto_parser_set_limits(nd_proto_parser_t *p, size_t max_control_line, int64_t max_payload)
{
    p->max_control_line = max_control_line;
    p->max_payload = max_payload;
}

/* Changes the set of accepted ops (ND_PROTO_OPBIT mask), e.g. for a route connection later. */
static inline void
nd_proto_parser_set_ops(nd_proto_parser_t *p, uint32_t ops)
{
    p->ops = ops;
}

/* Parses at most one command from buf[0..len). Ctx: the connection's owner.
 * Borrows: buf (slices in *cmd point into it). Sets *used to the bytes consumed: the whole command
 * on ND_PROTO_CMD, 0 otherwise.
 * Returns: ND_PROTO_CMD, ND_PROTO_MORE or an ND_PROTO_ERR_* status (cmd->op says which op). */
nd_proto_status_t nd_proto_parse(nd_proto_parser_t *p, const char *buf, size_t len, size_t *used,
                                 nd_proto_cmd_t *cmd);

/* After ND_PROTO_MORE: how many bytes the pending command needs in all, counted from its first
 * byte (the first kept byte), when the parser knows it (a PUB/HPUB waiting for its payload); a
 * call with fewer bytes returns MORE again at once. 0 when unknown: call again when any byte
 * arrives. */
static inline size_t
nd_proto_pending_need(const nd_proto_parser_t *p)
{
    return p->need;
}

/* The text to send as -ERR '<text>' before closing on st, or NULL when nothing is sent
 * (ND_PROTO_ERR_ARGS, and the non-error statuses). Texts are exactly nats-server 2.9.10's. */
const char *nd_proto_status_errtext(nd_proto_status_t st);

/* A short name for logs and tests ("CMD", "MORE", "ERR_ARGS", ...). */
const char *nd_proto_status_name(nd_proto_status_t st);

/* The op's protocol name ("PUB", "+OK", ...), or "NONE". */
const char *nd_proto_op_name(nd_proto_op_t op);

#endif
