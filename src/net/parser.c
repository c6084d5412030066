/* The NATS client-protocol parser.
 *
 * Algorithm. A command is an op name, an argument line ending in '\n', and for PUB/HPUB a payload
 * of the announced size followed by CRLF. Instead of nats-server's byte-at-a-time state machine
 * (server/parser.go) the parser works a line at a time: it recognises the op name from a small
 * table (PUB without it), skips the blanks after it, finds the end of the argument with memchr,
 * splits the argument into tokens with a tight loop and then jumps over the payload by its size.
 * For PUB/HPUB, the publish hot path, one pass finds the line end and the tokens together,
 * testing 8 bytes per step for blanks and control bytes (skip_token). All of this reads the
 * caller's buffer in place; nothing is copied or allocated, and no byte goes through a call.
 *
 * Phases. The kept bytes (buf[0] at every call) always begin with the current command's op name:
 * MORE never consumes anything, and after a command the parser is back at a line start, so a
 * caller may also leave a returned command unconsumed and get it again from the next call.
 *   LINE     at a command's first byte. An op name cut short by the end of the buffer is matched
 *            again on the next call; that costs at most 8 bytes.
 *   BLANKS   op known, skipping the blanks after its name; `scan` is where to go on.
 *   ARG      op known; the argument begins at `arg` and has been searched for '\n' up to `scan`,
 *            so the next search starts there.
 *   JUNK     PING, PONG or +OK: everything up to '\n' is ignored (as in 2.9.10); `scan` as in ARG.
 *   PAYLOAD  PUB/HPUB whose control line was parsed; `need` is the length of the whole command,
 *            and the subject, reply and payload offsets are saved. A call with fewer bytes does
 *            O(1) work and looks at no byte.
 *   ERROR    sticky: every call returns the same error.
 * Invariants: each byte is searched for '\n' at most once per command (twice for a PUB/HPUB line
 * that the one-pass scanner saw unfinished), except the at most 8 bytes of an op name cut short;
 * `need` is nonzero only in PAYLOAD. So a control line or a payload arriving one byte per call
 * costs O(n) in all. Every byte the caller keeps is bounded by the limits: the blanks after an op
 * name, an argument and the text after PING each count against max_control_line, so an
 * unfinished command is never longer than about 2 * max_control_line + max_payload.
 *
 * Behaviour of nats-server 2.9.10, probed over raw TCP (and matched here):
 *  - Op names are case-insensitive. PUB, HPUB, SUB, UNSUB and -ERR need a space or tab after the
 *    name ("PUB\r\n", "-ERRx" are Unknown Protocol Operation); CONNECT and INFO do not
 *    ("CONNECT{}" is accepted). PING, PONG and +OK ignore anything up to '\n' ("PINGX\r\n" is a
 *    PING). An empty line, "MSG" and any R/A/L op from a client are Unknown Protocol Operation.
 *  - A line ends at '\n'; a '\r' right before it is dropped, so a bare '\n' ends a line too
 *    ("PUB foo 5\nhello\r\n" is delivered). The payload trailer, however, must be exactly CRLF.
 *  - The first byte after the blanks that follow the op name always belongs to the argument, even
 *    a CR or LF: "PUB \nfoo 5\r\n..." publishes to the subject "\nfoo"; "SUB \r\n" is a bad SUB.
 *  - PUB/HPUB split their argument on runs of space/tab only; SUB/UNSUB split on space, tab, CR
 *    and LF (nats-server's splitArg): "SUB foo\r1\r\n" subscribes sid 1.
 *  - Sizes are 1 to 9 decimal digits (parseSize); anything else (sign, 10 digits, junk) is a bad
 *    size and closes the connection silently. For UNSUB a bad max_msgs just means -1.
 *  - Checks in order: argument count, sizes, HPUB header size <= total, then max_payload
 *    ("HPUB foo 2000000 5" closes silently, "HPUB foo 5 2000000" gets the payload -ERR).
 *  - max_control_line limits the argument: the bytes from the first one after the blanks that
 *    follow the op name up to, not including, the CR before '\n'. Trailing blanks count; the blanks
 *    after the op name and the text after PING/PONG/+OK do not (but see below). 4096 accepts an
 *    argument of 4096 bytes and rejects 4097, on a complete line and on a partial one alike, with
 *    -ERR 'maximum control line exceeded' (lower case, as 2.9.10 sends it).
 *
 * Deliberate differences from 2.9.10, all for garbage input only:
 *  - More than max_control_line blanks after an op name, or text after PING/PONG/+OK longer than
 *    that, is ERR_CONTROL_LINE; 2.9.10 accepts any amount (it does not keep those bytes).
 *  - nats-server drops the last byte of a line ended by a bare '\n' if a '\r' occurred anywhere in
 *    it, and when a line is split across reads it deletes every '\r' in the part after the split.
 *    Here exactly one '\r' before the '\n' is dropped, so a command parses the same however the
 *    bytes were split, which the fuzz driver asserts.
 *  - A payload not followed by CRLF is reported at the first wrong trailer byte, as in 2.9.10;
 *    a caller that waits for nd_proto_pending_need() bytes must call once more at end of input
 *    to see it (the fuzz driver does).
 *
 * References: nats-server server/parser.go (state machine, split-buffer handling) and
 * server/client.go (processPub, processHeaderPub, processSub, processUnsub, splitArg, parseSize);
 * the inventory in shared/spec/nats-server-inventory.md sections 0, 1.4 and 1.5.
 */
#include "net/parser.h"

#include <string.h>

enum {
    PH_LINE = 0,
    PH_BLANKS,
    PH_ARG,
    PH_JUNK,
    PH_PAYLOAD,
    PH_ERROR,
};

/* What follows an op name. */
enum {
    G_SEP,   /* at least one blank, then an argument line (PUB HPUB SUB UNSUB -ERR) */
    G_OPT,   /* optional blanks, then an argument line (CONNECT INFO) */
    G_NOARG, /* anything up to '\n' is ignored (PING PONG +OK) */
};

typedef struct opdef {
    char name[8]; /* upper case; no name is a prefix of another */
    uint8_t len;
    uint8_t op;
    uint8_t grammar;
} opdef_t;

/* The op table. A new connection kind adds its ops here (and to nd_proto_op_t) and accepts them
 * through its own ND_PROTO_OPBIT mask; finish_line() gets a case for each new argument shape.
 * Rows are tried in order, so the frequent ops come first. */
static const opdef_t op_table[] = {
    {"PUB", 3, ND_PROTO_OP_PUB, G_SEP},         {"HPUB", 4, ND_PROTO_OP_HPUB, G_SEP},
    {"PING", 4, ND_PROTO_OP_PING, G_NOARG},     {"PONG", 4, ND_PROTO_OP_PONG, G_NOARG},
    {"SUB", 3, ND_PROTO_OP_SUB, G_SEP},         {"UNSUB", 5, ND_PROTO_OP_UNSUB, G_SEP},
    {"CONNECT", 7, ND_PROTO_OP_CONNECT, G_OPT}, {"INFO", 4, ND_PROTO_OP_INFO, G_OPT},
    {"+OK", 3, ND_PROTO_OP_OK, G_NOARG},        {"-ERR", 4, ND_PROTO_OP_ERR, G_SEP},
    /* routes */
    {"RMSG", 4, ND_PROTO_OP_RMSG, G_SEP},       {"HMSG", 4, ND_PROTO_OP_RHMSG, G_SEP},
    {"RS+", 3, ND_PROTO_OP_RSUB, G_SEP},        {"RS-", 3, ND_PROTO_OP_RUNSUB, G_SEP},
    /* leaf nodes (HMSG is the same name as a route's: each kind's mask picks its row) */
    {"LMSG", 4, ND_PROTO_OP_LMSG, G_SEP},       {"HMSG", 4, ND_PROTO_OP_LHMSG, G_SEP},
    {"LS+", 3, ND_PROTO_OP_LSUB, G_SEP},        {"LS-", 3, ND_PROTO_OP_LUNSUB, G_SEP},
    /* gateways (their RMSG, HMSG, RS+ and RS- are the route rows) */
    {"A+", 2, ND_PROTO_OP_ASUB, G_SEP},         {"A-", 2, ND_PROTO_OP_AUNSUB, G_SEP},
};

#define N_OPS (sizeof op_table / sizeof op_table[0])

/* nats-server's parseSize reads at most 9 digits ("999M"), so sizes never overflow. */
#define MAX_SIZE_DIGITS 9

/* The most tokens any client op's argument has (HPUB subject reply hdr total). */
#define MAX_TOKENS 4
/* The most tokens of a route's RMSG/HMSG (account, subject, indicator, reply, queue names,
 * sizes); a message for more queue groups than that is a protocol error. */
#define MAX_RTOKENS 132

typedef struct tok {
    size_t off, len; /* relative to the argument start */
} tok_t;

static inline int
is_blank(unsigned char c)
{
    return c == ' ' || c == '\t';
}

/* Separator test for splitting arguments; crlf selects splitArg's set (SUB, UNSUB). The first
 * compare settles every printable byte, which is what subjects are made of. */
static inline int
is_sep(unsigned char c, int crlf)
{
    return c <= ' ' && (c == ' ' || c == '\t' || (crlf && (c == '\r' || c == '\n')));
}

static inline unsigned char
upper(unsigned char c)
{
    return (unsigned char)(c - 'a') < 26 ? (unsigned char)(c - ('a' - 'A')) : c;
}

/* Splits s[0..n) into at most max tokens. Returns: the token count, or max + 1 when there are
 * more tokens than that (the extra ones are not recorded). */
static inline size_t
split_args(const char *s, size_t n, tok_t *t, size_t max, int crlf)
{
    size_t k = 0, i = 0;
    for (;;) {
        while (i < n && is_sep((unsigned char)s[i], crlf))
            i++;
        if (i == n)
            return k;
        if (k == max)
            return max + 1;
        size_t start = i;
        while (i < n && !is_sep((unsigned char)s[i], crlf))
            i++;
        t[k].off = start;
        t[k].len = i - start;
        k++;
    }
}

/* Returns: the index of the first byte <= ' ' (a blank or control byte) in u[i..lim), or lim.
 * Subjects are printable, so this is where the token scan spends its time; it tests 8 bytes per
 * step with the SWAR "has byte less than n" trick (Anderson, Bit Twiddling Hacks): a byte below
 * 0x21 sets its high bit in (w - 0x21..) & ~w. Borrows can flag bytes above the first true one
 * but never below it, so the lowest flagged byte is exact. Bytes >= 0x80 are never flagged. */
static inline size_t
skip_token(const unsigned char *u, size_t i, size_t lim)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (lim - i >= 8) {
        uint64_t w;
        memcpy(&w, u + i, 8);
        uint64_t m = (w - 0x2121212121212121ull) & ~w & 0x8080808080808080ull;
        if (m != 0)
            return i + ((size_t)__builtin_ctzll(m) >> 3);
        i += 8;
    }
#endif
    while (i < lim && u[i] > ' ')
        i++;
    return i;
}

/* The PUB/HPUB hot path: one pass over a fresh argument s[0..lim) that finds the line end and
 * splits the tokens (on blanks only) at the same time, instead of memchr followed by
 * split_args(). Same results as that pair: s[0] always belongs to the argument, a CR right
 * before the '\n' is dropped, other control bytes are token bytes.
 * Returns: 1 with the tokens in t[0..*np) (*np is at most max + 1), the argument end in *endp and
 * the '\n' index in *nlp; 0 when no '\n' is in s[1..lim) (the caller takes the general path). */
static inline int
scan_pub_line(const char *s, size_t lim, tok_t *t, size_t max, size_t *np, size_t *endp,
              size_t *nlp)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0, start = 0, end;
    for (;;) {
        /* In a token that began at start; u[i] is part of it. */
        i = skip_token(u, i + 1, lim);
        if (i >= lim)
            return 0;
        if (u[i] == '\n') {
            end = (i >= 2 && u[i - 1] == '\r') ? i - 1 : i;
            if (end > start && k <= max)
                t[k++] = (tok_t){start, end - start};
            break;
        }
        if (!is_blank(u[i]))
            continue; /* a CR or other control byte inside a token */
        if (k <= max)
            t[k++] = (tok_t){start, i - start};
        do
            i++;
        while (i < lim && is_blank(u[i]));
        if (i >= lim)
            return 0;
        if (u[i] == '\n') {
            end = i;
            break;
        }
        start = i;
    }
    *np = k;
    *endp = end;
    *nlp = i;
    return 1;
}

/* nats-server's parseSize: 1 to 9 decimal digits, nothing else. Returns: the value, or -1. */
static inline int64_t
parse_size(const char *s, size_t n)
{
    if (n == 0 || n > MAX_SIZE_DIGITS)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - (unsigned)'0';
        if (d > 9)
            return -1;
        v = v * 10 + d;
    }
    return v;
}

static inline nd_proto_slice_t
slice(const char *s, size_t off, size_t len)
{
    return (nd_proto_slice_t){s + off, len};
}

/* Trims blanks and CR/LF at both ends: JSON allows them and -ERR text does not need them. */
static nd_proto_slice_t
trimmed(const char *s, size_t n)
{
    size_t b = 0;
    while (b < n && (is_blank((unsigned char)s[b]) || s[b] == '\r' || s[b] == '\n'))
        b++;
    while (n > b && (is_blank((unsigned char)s[n - 1]) || s[n - 1] == '\r' || s[n - 1] == '\n'))
        n--;
    return slice(s, b, n - b);
}

static nd_proto_status_t
fail(nd_proto_parser_t *p, nd_proto_status_t st, size_t *used, nd_proto_cmd_t *cmd)
{
    p->phase = PH_ERROR;
    p->err = (uint8_t)st;
    p->need = 0;
    cmd->op = (nd_proto_op_t)p->op;
    *used = 0;
    return st;
}

static inline nd_proto_status_t
done(nd_proto_parser_t *p, size_t end, size_t *used, nd_proto_cmd_t *cmd)
{
    cmd->op = (nd_proto_op_t)p->op;
    p->phase = PH_LINE;
    p->op = ND_PROTO_OP_NONE;
    p->need = 0;
    *used = end;
    return ND_PROTO_CMD;
}

/* Resumes a PUB/HPUB waiting for its payload (phase PAYLOAD); buf[0] is the command's first byte.
 * Returns: the command once p->need bytes are there, MORE before (O(1): nothing is scanned). */
static nd_proto_status_t
payload_resume(nd_proto_parser_t *p, const char *buf, size_t len, size_t *used, nd_proto_cmd_t *cmd)
{
    size_t need = p->need;
    /* A wrong first trailer byte is rejected as soon as it arrives, as nats-server does (a
     * client that sends "PUB foo 1\r\na\n" and waits gets its -ERR at once). A caller that
     * honours nd_proto_pending_need() must make one last call when its input ends. */
    if (len + 1 >= need && buf[need - 2] != '\r')
        return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd);
    if (len < need)
        return ND_PROTO_MORE;
    if (buf[need - 1] != '\n')
        return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd);
    const char *s = buf + p->arg;
    cmd->subject = slice(s, p->subj_off, p->subj_len);
    cmd->reply = slice(s, p->reply_off, p->reply_len);
    cmd->account = slice(s, 0, p->acct_len);
    cmd->queues = slice(s, p->queues_off, p->queues_len);
    cmd->payload = slice(s, p->ctl, need - 2 - p->arg - p->ctl);
    cmd->hdr_len = p->hdr_len;
    return done(p, need, used, cmd);
}

/* Where the parts of a message's control line are, relative to the argument's start. */
typedef struct msg_args {
    size_t subj_off, subj_len, reply_off, reply_len, acct_len, queues_off, queues_len;
    int64_t hdr, size;
} msg_args_t;

/* Goes on from a checked control line to the payload at s[ctl] (PUB HPUB RMSG HMSG). */
static inline nd_proto_status_t
finish_msg(nd_proto_parser_t *p, const char *s, size_t avail, size_t base, const msg_args_t *m,
           size_t ctl, size_t *used, nd_proto_cmd_t *cmd)
{
    size_t need = ctl + (size_t)m->size + 2;
    if (avail >= need) { /* the common case: the whole message is in the buffer */
        if (s[need - 2] != '\r' || s[need - 1] != '\n')
            return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd);
        cmd->subject = slice(s, m->subj_off, m->subj_len);
        cmd->reply = slice(s, m->reply_off, m->reply_len);
        cmd->account = slice(s, 0, m->acct_len);
        cmd->queues = slice(s, m->queues_off, m->queues_len);
        cmd->payload = slice(s, ctl, (size_t)m->size);
        cmd->hdr_len = m->hdr;
        return done(p, base + need, used, cmd);
    }
    if (avail + 1 == need && s[need - 2] != '\r')
        return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd); /* see payload_resume */
    p->subj_off = m->subj_off;
    p->subj_len = m->subj_len;
    p->reply_off = m->reply_off;
    p->reply_len = m->reply_len;
    p->acct_len = m->acct_len;
    p->queues_off = m->queues_off;
    p->queues_len = m->queues_len;
    p->hdr_len = m->hdr;
    p->ctl = ctl;
    p->arg = base;
    p->need = base + need;
    p->phase = PH_PAYLOAD;
    return ND_PROTO_MORE;
}

/* PUB and HPUB: checks the control line, split into t[0..n) (n is at most 4 for HPUB and 3 for
 * PUB, one more meaning too many), and goes on to the payload at s[ctl]. The subject is token 0
 * and starts at s[0], since the first argument byte is never a blank. */
static inline nd_proto_status_t
finish_pub(nd_proto_parser_t *p, const char *s, size_t avail, size_t base, const tok_t *t, size_t n,
           size_t ctl, size_t *used, nd_proto_cmd_t *cmd)
{
    size_t hpub = p->op == ND_PROTO_OP_HPUB;
    size_t reply_off = 0, reply_len = 0;
    int64_t hdr = 0, size;
    if (n == 3 + hpub) {
        reply_off = t[1].off;
        reply_len = t[1].len;
    } else if (n != 2 + hpub) {
        return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
    }
    if (hpub)
        hdr = parse_size(s + t[n - 2].off, t[n - 2].len);
    size = parse_size(s + t[n - 1].off, t[n - 1].len);
    if (hdr < 0 || size < 0 || hdr > size)
        return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
    if (p->max_payload >= 0 && size > p->max_payload)
        return fail(p, ND_PROTO_ERR_MAX_PAYLOAD, used, cmd);
    msg_args_t m = {.subj_len = t[0].len, .reply_off = reply_off, .reply_len = reply_len,
                    .hdr = hdr, .size = size};
    return finish_msg(p, s, avail, base, &m, ctl, used, cmd);
}

/* A route's RMSG or HMSG (nats-server's processRoutedMsgArgs and processRoutedHeaderMsgArgs):
 * "<account> <subject> [<reply>] [<hdr>] <size>", or with queue names
 * "<account> <subject> + <reply> <queue>... [<hdr>] <size>" / "... | <queue>... [<hdr>] <size>". */
static nd_proto_status_t
finish_rmsg(nd_proto_parser_t *p, const char *s, size_t avail, size_t base, size_t end,
            size_t ctl, size_t *used, nd_proto_cmd_t *cmd)
{
    tok_t t[MAX_RTOKENS];
    size_t hm = p->op == ND_PROTO_OP_RHMSG || p->op == ND_PROTO_OP_LHMSG;
    size_t a = p->op == ND_PROTO_OP_RMSG || p->op == ND_PROTO_OP_RHMSG; /* an account token */
    size_t n = split_args(s, end, t, MAX_RTOKENS, 1);
    if (n < a + 2 + hm || n > MAX_RTOKENS)
        return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
    msg_args_t m = {.subj_off = t[a].off, .subj_len = t[a].len, .acct_len = a ? t[0].len : 0};
    size_t sizes = 1 + hm; /* tokens at the end that are sizes */
    if (n == a + 2 + hm + 1) {
        m.reply_off = t[a + 1].off;
        m.reply_len = t[a + 1].len;
    } else if (n > a + 2 + hm + 1) {
        size_t q0;
        size_t ind = a + 1; /* the indicator token */
        if (t[ind].len != 1 || (s[t[ind].off] != '+' && s[t[ind].off] != '|'))
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        if (s[t[ind].off] == '+') {
            m.reply_off = t[ind + 1].off;
            m.reply_len = t[ind + 1].len;
            q0 = ind + 2;
        } else {
            q0 = ind + 1;
        }
        size_t qn = n - sizes;
        if (qn > q0) {
            m.queues_off = t[q0].off;
            m.queues_len = t[qn - 1].off + t[qn - 1].len - t[q0].off;
        }
    }
    m.hdr = hm ? parse_size(s + t[n - 2].off, t[n - 2].len) : 0;
    m.size = parse_size(s + t[n - 1].off, t[n - 1].len);
    if (m.hdr < 0 || m.size < 0 || m.hdr > m.size)
        return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
    if (p->max_payload >= 0 && m.size > p->max_payload)
        return fail(p, ND_PROTO_ERR_MAX_PAYLOAD, used, cmd);
    return finish_msg(p, s, avail, base, &m, ctl, used, cmd);
}

/* A complete argument line s[0..end) of p->op; the line ends at s[ctl] (just after '\n'). */
static nd_proto_status_t
finish_line(nd_proto_parser_t *p, const char *s, size_t avail, size_t base, size_t end, size_t ctl,
            size_t *used, nd_proto_cmd_t *cmd)
{
    tok_t t[MAX_TOKENS];
    size_t n;
    switch (p->op) {
    case ND_PROTO_OP_PUB:
    case ND_PROTO_OP_HPUB:
        n = split_args(s, end, t, p->op == ND_PROTO_OP_HPUB ? 4 : 3, 0);
        return finish_pub(p, s, avail, base, t, n, ctl, used, cmd);
    case ND_PROTO_OP_SUB:
        n = split_args(s, end, t, 3, 1);
        if (n == 2) {
            cmd->queue = slice(s, 0, 0);
        } else if (n == 3) {
            cmd->queue = slice(s, t[1].off, t[1].len);
        } else {
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        }
        cmd->subject = slice(s, t[0].off, t[0].len);
        cmd->sid = slice(s, t[n - 1].off, t[n - 1].len);
        break;
    case ND_PROTO_OP_UNSUB:
        n = split_args(s, end, t, 2, 1);
        if (n == 1) {
            cmd->max_msgs = -1;
        } else if (n == 2) {
            /* nats-server ignores a bad count: it unsubscribes at once. */
            cmd->max_msgs = parse_size(s + t[1].off, t[1].len);
        } else {
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        }
        cmd->sid = slice(s, t[0].off, t[0].len);
        break;
    case ND_PROTO_OP_RMSG:
    case ND_PROTO_OP_RHMSG:
    case ND_PROTO_OP_LMSG:
    case ND_PROTO_OP_LHMSG:
        return finish_rmsg(p, s, avail, base, end, ctl, used, cmd);
    case ND_PROTO_OP_LSUB:
    case ND_PROTO_OP_LUNSUB: {
        size_t q = p->op == ND_PROTO_OP_LSUB ? 3 : 2; /* the token count with a queue */
        n = split_args(s, end, t, 3, 1);
        cmd->queue = slice(s, 0, 0);
        cmd->max_msgs = 0;
        if (n == q) {
            cmd->queue = slice(s, t[1].off, t[1].len);
            if (q == 3)
                cmd->max_msgs = parse_size(s + t[2].off, t[2].len);
        } else if (n != 1) {
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        }
        cmd->account = slice(s, 0, 0);
        cmd->subject = slice(s, t[0].off, t[0].len);
        break;
    }
    case ND_PROTO_OP_ASUB:
    case ND_PROTO_OP_AUNSUB:
        if (split_args(s, end, t, 1, 1) != 1)
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        cmd->account = slice(s, t[0].off, t[0].len);
        break;
    case ND_PROTO_OP_RSUB:
    case ND_PROTO_OP_RUNSUB: {
        size_t q = p->op == ND_PROTO_OP_RSUB ? 4 : 3; /* the token count with a queue */
        n = split_args(s, end, t, 4, 1);
        cmd->queue = slice(s, 0, 0);
        cmd->max_msgs = 0;
        if (n == q) {
            cmd->queue = slice(s, t[2].off, t[2].len);
            if (q == 4)
                cmd->max_msgs = parse_size(s + t[3].off, t[3].len);
        } else if (n != 2) {
            return fail(p, ND_PROTO_ERR_ARGS, used, cmd);
        }
        cmd->account = slice(s, t[0].off, t[0].len);
        cmd->subject = slice(s, t[1].off, t[1].len);
        break;
    }
    default: /* CONNECT, INFO, -ERR: the caller parses the JSON or logs the text */
        cmd->arg = trimmed(s, end);
        /* No subject: a trace that prints one must not read what an earlier command (or the
         * caller's stack) left there. */
        cmd->subject = slice(s, 0, 0);
        break;
    }
    return done(p, base + ctl, used, cmd);
}

/* Looks up the op name at buf[0..len). Returns: 1 and *out when a whole name allowed by mask
 * matches, 0 when the bytes are a proper prefix of one (need more), -1 when nothing can match. */
static int
match_op(uint32_t mask, const char *buf, size_t len, const opdef_t **out)
{
    int partial = 0;
    for (size_t r = 0; r < N_OPS; r++) {
        const opdef_t *d = &op_table[r];
        if (!(mask & ND_PROTO_OPBIT(d->op)))
            continue;
        size_t n = len < d->len ? len : d->len;
        size_t j = 0;
        while (j < n && upper((unsigned char)buf[j]) == (unsigned char)d->name[j])
            j++;
        if (j < n)
            continue;
        if (n == d->len) {
            *out = d;
            return 1;
        }
        partial = 1;
    }
    return partial ? 0 : -1;
}

void
nd_proto_parser_init(nd_proto_parser_t *p, size_t max_control_line, int64_t max_payload)
{
    memset(p, 0, sizeof *p);
    p->max_control_line = max_control_line;
    p->max_payload = max_payload;
    p->ops = ND_PROTO_OPS_CLIENT;
    nd_proto_parser_reset(p);
}

void
nd_proto_parser_reset(nd_proto_parser_t *p)
{
    p->phase = PH_LINE;
    p->op = ND_PROTO_OP_NONE;
    p->err = 0;
    p->scan = 0;
    p->need = 0;
}

nd_proto_status_t
nd_proto_parse(nd_proto_parser_t *p, const char *buf, size_t len, size_t *used, nd_proto_cmd_t *cmd)
{
    const opdef_t *d = NULL;
    const unsigned char *u = (const unsigned char *)buf;
    const char *s, *nl;
    size_t mcl = p->max_control_line;
    /* No '\n' can be further than mcl + 2 bytes into an argument (the argument, CR, LF). */
    size_t span = mcl < SIZE_MAX - 2 ? mcl + 2 : SIZE_MAX;
    size_t i = 0, a = 0, avail, lim, from, e, end, have;

    *used = 0; /* MORE and errors consume nothing; done() sets it for a command */
    switch (p->phase) {
    case PH_LINE:
        break;
    case PH_BLANKS:
        i = p->scan;
        goto blanks;
    case PH_ARG:
        a = p->arg;
        goto arg;
    case PH_JUNK:
        i = p->scan;
        goto junk;
    case PH_PAYLOAD:
        return payload_resume(p, buf, len, used, cmd);
    default:
        cmd->op = (nd_proto_op_t)p->op;
        return (nd_proto_status_t)p->err;
    }

    /* The publish hot path: "PUB" and a blank, in any case, without the table walk. */
    if (len >= 4 && (u[0] | 0x20) == 'p' && (u[1] | 0x20) == 'u' && (u[2] | 0x20) == 'b' &&
        is_blank(u[3]) && (p->ops & ND_PROTO_OPBIT(ND_PROTO_OP_PUB))) {
        p->op = ND_PROTO_OP_PUB;
        p->arg = 3;
        i = 4;
    } else {
        int m = match_op(p->ops, buf, len, &d);
        if (m < 0)
            return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd);
        if (m == 0)
            return ND_PROTO_MORE;
        i = d->len;
        if (d->grammar == G_SEP) {
            if (i == len) /* match the name again when its separator has arrived */
                return ND_PROTO_MORE;
            if (!is_blank(u[i])) /* "PUBX": a bad op name, so cmd->op stays NONE */
                return fail(p, ND_PROTO_ERR_UNKNOWN_OP, used, cmd);
            i++;
        }
        p->op = d->op;
        p->arg = d->len; /* where the blanks, or the ignored text, begin */
        if (d->grammar == G_NOARG)
            goto junk;
    }

blanks:
    while (i < len && is_blank(u[i]))
        i++;
    /* 2.9.10 puts no bound on the blanks after an op name, but the caller keeps every byte of
     * an unfinished command, so they count against max_control_line on their own. */
    if (i - p->arg > mcl)
        return fail(p, ND_PROTO_ERR_CONTROL_LINE, used, cmd);
    if (i == len) {
        p->scan = i;
        p->phase = PH_BLANKS;
        return ND_PROTO_MORE;
    }
    a = i;
    /* The first argument byte belongs to the argument whatever it is (see the top comment), so
     * the search for '\n' starts after it. */
    p->scan = a + 1;

arg:
    s = buf + a;
    avail = len - a;
    lim = avail < span ? avail : span;
    from = p->scan - a;
    if (from == 1 && (p->op == ND_PROTO_OP_PUB || p->op == ND_PROTO_OP_HPUB)) {
        tok_t t[MAX_TOKENS + 1];
        size_t n;
        if (scan_pub_line(s, lim, t, p->op == ND_PROTO_OP_HPUB ? 4 : 3, &n, &end, &e)) {
            if (end > mcl)
                return fail(p, ND_PROTO_ERR_CONTROL_LINE, used, cmd);
            return finish_pub(p, s, avail, a, t, n, e + 1, used, cmd);
        }
    }
    nl = from < lim ? memchr(s + from, '\n', lim - from) : NULL;
    if (nl == NULL) {
        /* A CR at the end may be the one before '\n', which does not count. Without a '\n' in
         * the first mcl + 2 bytes the argument is too long whatever comes next. */
        have = lim - (lim >= 2 && s[lim - 1] == '\r');
        if (have > mcl)
            return fail(p, ND_PROTO_ERR_CONTROL_LINE, used, cmd);
        p->scan = a + lim;
        p->arg = a;
        p->phase = PH_ARG;
        return ND_PROTO_MORE;
    }
    e = (size_t)(nl - s);
    end = (e >= 2 && s[e - 1] == '\r') ? e - 1 : e;
    if (end > mcl)
        return fail(p, ND_PROTO_ERR_CONTROL_LINE, used, cmd);
    return finish_line(p, s, avail, a, end, e + 1, used, cmd);

junk:
    /* PING, PONG, +OK: 2.9.10 ignores everything up to '\n'. That text counts against
     * max_control_line like an argument, for the same reason as the blanks above. */
    lim = len - p->arg < span ? len : p->arg + span;
    nl = i < lim ? memchr(buf + i, '\n', lim - i) : NULL;
    e = nl != NULL ? (size_t)(nl - buf) : lim;
    have = e - p->arg - (e > p->arg && buf[e - 1] == '\r');
    if (have > mcl)
        return fail(p, ND_PROTO_ERR_CONTROL_LINE, used, cmd);
    if (nl == NULL) {
        p->scan = lim;
        p->phase = PH_JUNK;
        return ND_PROTO_MORE;
    }
    return done(p, e + 1, used, cmd);
}

const char *
nd_proto_status_errtext(nd_proto_status_t st)
{
    switch (st) {
    case ND_PROTO_ERR_UNKNOWN_OP:
        return "Unknown Protocol Operation";
    case ND_PROTO_ERR_CONTROL_LINE:
        /* Lower case: 2.9.10 sends "-ERR 'maximum control line exceeded'" (probed). */
        return "maximum control line exceeded";
    case ND_PROTO_ERR_MAX_PAYLOAD:
        return "Maximum Payload Violation";
    default:
        return NULL;
    }
}

const char *
nd_proto_status_name(nd_proto_status_t st)
{
    switch (st) {
    case ND_PROTO_CMD:
        return "CMD";
    case ND_PROTO_MORE:
        return "MORE";
    case ND_PROTO_ERR_UNKNOWN_OP:
        return "ERR_UNKNOWN_OP";
    case ND_PROTO_ERR_CONTROL_LINE:
        return "ERR_CONTROL_LINE";
    case ND_PROTO_ERR_MAX_PAYLOAD:
        return "ERR_MAX_PAYLOAD";
    case ND_PROTO_ERR_ARGS:
        return "ERR_ARGS";
    }
    return "?";
}

const char *
nd_proto_op_name(nd_proto_op_t op)
{
    for (size_t r = 0; r < N_OPS; r++)
        if (op_table[r].op == op)
            return op_table[r].name;
    return "NONE";
}
