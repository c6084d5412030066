/* The configuration-file reader (see conf.h): a single-pass recursive-descent parser.
 *
 * Algorithm: the reader walks the text once with a cursor that tracks line and column. A map
 * body is a sequence of "key [=|:|whitespace] value" pairs ended by a newline, ',' or ';' (or the
 * closing '}'); an array is a sequence of values separated by ',' or newlines. Values are typed
 * from their first character as nats-server's lexer does (conf/lex.go): '{' map, '[' array,
 * quotes strings, '(' a block string ending at a line holding only ')', '$' a variable, a digit or
 * '-' a number or datetime, anything else an unquoted string or boolean. Unquoted values end at
 * whitespace, a newline, ',', ';', ']' or '}'.
 *
 * Numbers (conf/parse.go): digits with an optional size suffix k/m/g/t/p/e (decimal, 1000^n) or
 * that letter followed by b, i or ib (binary, 1024^n); digits, '.', digits is a float; four
 * digits then '-' must be a full Zulu datetime; a number followed by anything else is a string
 * (30s, 1h30m, 127.0.0.1). Deliberate difference: nats-server lexes "1kibb" as an integer and then
 * silently drops the value; here an unknown suffix made only of size letters is an error.
 * Also unlike it, a stray top-level '}' is an error, and an include that nests past
 * ND_CFG_MAX_INCLUDE (a file including itself) is an error rather than unbounded recursion.
 *
 * Variables: $NAME is looked up in the maps being built, innermost first (arrays are skipped),
 * then in the environment, whose value is parsed as "pk=<value>" in a fresh scope. The found value
 * is deep-copied. Environment parses nest, so each one pushes its name and a name already on that
 * stack is a reference cycle. An unquoted "$2a$..." is a bcrypt hash, kept as a string.
 *
 * Invariants that bound resource use on hostile input: nesting depth (ND_CFG_MAX_DEPTH), include
 * and environment nesting (ND_CFG_MAX_INCLUDE), input size (ND_CFG_MAX_INPUT) and total nodes per
 * parse (ND_CFG_MAX_NODES, which stops "billion laughs" growth through variable copies).
 */
#include "cfg/conf.h"
#include "util/hex.h"
#include "util/timefmt.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/alloc.h"

/* Reads f whole, growing the buffer as the text comes, up to one byte over ND_CFG_MAX_INPUT (so
 * the caller can tell a file that is too large). Returns: the text (owned); *len its length. */
static char *
read_capped(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *text = nd_xmalloc(cap);
    for (;;) {
        size_t want = cap - n;
        if (n + want > ND_CFG_MAX_INPUT + 1)
            want = ND_CFG_MAX_INPUT + 1 - n;
        size_t got = fread(text + n, 1, want, f);
        n += got;
        if (got < want || n > ND_CFG_MAX_INPUT)
            break;
        cap *= 2;
        text = nd_xrealloc(text, cap);
    }
    *len = n;
    return text;
}

/* State shared by one top-level parse and everything it includes. */
typedef struct shared {
    nd_cfg_err_t *err;
    bool failed;
    size_t nodes;
    const char *envs[ND_CFG_MAX_INCLUDE]; /* environment variables being parsed, outermost first */
    int nenv;
    int nest; /* include + environment nesting */
} shared_t;

typedef struct rd {
    shared_t *sh;
    const char *s;
    size_t n, i;
    int line, col;
    const char *file;
    const char *dir; /* directory includes are relative to ("" for none) */
    int depth;
    nd_cfg_node_t *scopes[ND_CFG_MAX_DEPTH + 2]; /* maps being built, outermost first */
    int nscopes;
} rd_t;

/* ---- errors and cursor ---------------------------------------------------------------------- */

static void fail_at(rd_t *r, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
fail_at(rd_t *r, int line, int col, const char *fmt, ...)
{
    nd_cfg_err_t *e = r->sh->err;
    if (r->sh->failed)
        return; /* the first error is the one worth reporting */
    r->sh->failed = true;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(e->file, sizeof e->file, "%s", r->file);
    e->line = line;
    e->col = col;
    snprintf(e->text, sizeof e->text, "%s:%d:%d: %s", r->file, line, col, msg);
}

#define FAIL(r, ...) fail_at((r), (r)->line, (r)->col, __VA_ARGS__)

static int
peek(const rd_t *r, size_t k)
{
    return r->i + k < r->n ? (unsigned char)r->s[r->i + k] : -1;
}

static void
adv(rd_t *r)
{
    if (r->i >= r->n)
        return;
    if (r->s[r->i] == '\n') {
        r->line++;
        r->col = 1;
    } else {
        r->col++;
    }
    r->i++;
}

static bool
is_ws(int c)
{
    return c == ' ' || c == '\t';
}

static bool
is_nl(int c)
{
    return c == '\n' || c == '\r';
}

static bool
at_comment(const rd_t *r)
{
    return peek(r, 0) == '#' || (peek(r, 0) == '/' && peek(r, 1) == '/');
}

static void
skip_ws(rd_t *r)
{
    while (is_ws(peek(r, 0)))
        adv(r);
}

static void
skip_comment(rd_t *r)
{
    while (peek(r, 0) != -1 && peek(r, 0) != '\n')
        adv(r);
}

/* Skips whitespace, newlines and comments. */
static void
skip_all(rd_t *r)
{
    for (;;) {
        int c = peek(r, 0);
        if (is_ws(c) || is_nl(c))
            adv(r);
        else if (at_comment(r))
            skip_comment(r);
        else
            return;
    }
}

/* An unquoted value or variable name ends at these. */
static bool
is_val_end(int c)
{
    return c == -1 || is_ws(c) || is_nl(c) || c == ',' || c == ';' || c == ']' || c == '}';
}

static const char *
show(int c, char buf[8])
{
    if (c == -1)
        return "EOF";
    if (c == '\n')
        return "\\n";
    buf[0] = (char)c;
    buf[1] = 0;
    return buf;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

static nd_cfg_node_t *
node_new(rd_t *r, nd_cfg_type_t t, int line, int col)
{
    if (++r->sh->nodes > ND_CFG_MAX_NODES) {
        fail_at(r, line, col, "configuration has more than %u values", ND_CFG_MAX_NODES);
        return NULL;
    }
    nd_cfg_node_t *n = nd_new(nd_cfg_node_t);
    n->type = t;
    n->file = nd_xstrdup(r->file);
    n->line = line;
    n->col = col;
    return n;
}

void
nd_cfg_free(nd_cfg_node_t *n)
{
    if (!n)
        return;
    switch (n->type) {
    case ND_CFG_MAP:
        for (size_t i = 0; i < n->u.map.n; i++) {
            nd_free(n->u.map.e[i].key);
            nd_cfg_free(n->u.map.e[i].val);
        }
        nd_free(n->u.map.e);
        break;
    case ND_CFG_ARRAY:
        for (size_t i = 0; i < n->u.arr.n; i++)
            nd_cfg_free(n->u.arr.v[i]);
        nd_free(n->u.arr.v);
        break;
    case ND_CFG_STRING:
        nd_free(n->u.str.s);
        break;
    default:
        break;
    }
    nd_free(n->file);
    nd_free(n);
}

/* Deep copy for a variable reference: the copy's root takes the reference's position, as
 * nats-server reports a referenced value where it is used. Returns NULL past the node limit. */
static nd_cfg_node_t *
node_copy(rd_t *r, const nd_cfg_node_t *src, int line, int col, bool root)
{
    nd_cfg_node_t *n = node_new(r, src->type, root ? line : src->line, root ? col : src->col);
    if (!n)
        return NULL;
    n->quoted = root ? false : src->quoted;
    n->end_line = root ? line : src->end_line;
    n->end_col = root ? col : src->end_col;
    if (!root) {
        nd_free(n->file);
        n->file = nd_xstrdup(src->file);
    }
    switch (src->type) {
    case ND_CFG_MAP:
        n->u.map.cap = src->u.map.n;
        n->u.map.e = nd_xcalloc(src->u.map.n ? src->u.map.n : 1, sizeof(nd_cfg_entry_t));
        for (size_t i = 0; i < src->u.map.n; i++) {
            nd_cfg_node_t *v = node_copy(r, src->u.map.e[i].val, 0, 0, false);
            if (!v) {
                nd_cfg_free(n);
                return NULL;
            }
            n->u.map.e[i] = src->u.map.e[i];
            n->u.map.e[i].key = nd_xstrdup(src->u.map.e[i].key);
            n->u.map.e[i].val = v;
            n->u.map.n++;
        }
        break;
    case ND_CFG_ARRAY:
        n->u.arr.cap = src->u.arr.n;
        n->u.arr.v = nd_xcalloc(src->u.arr.n ? src->u.arr.n : 1, sizeof(nd_cfg_node_t *));
        for (size_t i = 0; i < src->u.arr.n; i++) {
            nd_cfg_node_t *v = node_copy(r, src->u.arr.v[i], 0, 0, false);
            if (!v) {
                nd_cfg_free(n);
                return NULL;
            }
            n->u.arr.v[n->u.arr.n++] = v;
        }
        break;
    case ND_CFG_STRING:
        n->u.str.len = src->u.str.len;
        n->u.str.s = nd_xmalloc(src->u.str.len + 1);
        memcpy(n->u.str.s, src->u.str.s, src->u.str.len + 1);
        break;
    default:
        n->u = src->u;
        break;
    }
    return n;
}

static nd_cfg_entry_t *
map_find_exact(const nd_cfg_node_t *m, const char *key)
{
    for (size_t i = 0; i < m->u.map.n; i++)
        if (strcmp(m->u.map.e[i].key, key) == 0)
            return &m->u.map.e[i];
    return NULL;
}

/* Takes ownership of key and val. Returns: the entry (borrowed). */
static nd_cfg_entry_t *
map_set(nd_cfg_node_t *m, char *key, int line, int col, nd_cfg_node_t *val)
{
    nd_cfg_entry_t *e = map_find_exact(m, key);
    if (e) {
        /* A repeated key replaces the value, as assigning into nats-server's Go map does. */
        nd_free(key);
        nd_cfg_free(e->val);
        e->val = val;
        e->line = line;
        e->col = col;
        return e;
    }
    if (m->u.map.n == m->u.map.cap) {
        m->u.map.cap = nd_grow_cap(m->u.map.cap, m->u.map.n + 1, 8);
        m->u.map.e = nd_xrealloc(m->u.map.e, m->u.map.cap * sizeof(nd_cfg_entry_t));
    }
    m->u.map.e[m->u.map.n] = (nd_cfg_entry_t){.key = key, .line = line, .col = col, .val = val};
    return &m->u.map.e[m->u.map.n++];
}

static void
arr_push(nd_cfg_node_t *a, nd_cfg_node_t *v)
{
    if (a->u.arr.n == a->u.arr.cap) {
        a->u.arr.cap = nd_grow_cap(a->u.arr.cap, a->u.arr.n + 1, 8);
        a->u.arr.v = nd_xrealloc(a->u.arr.v, a->u.arr.cap * sizeof(nd_cfg_node_t *));
    }
    a->u.arr.v[a->u.arr.n++] = v;
}

/* ---- strings -------------------------------------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t len, cap;
} buf_t;

static void
buf_put(buf_t *b, char c)
{
    if (b->len + 2 > b->cap) {
        b->cap = nd_grow_cap(b->cap, b->len + 2, 32);
        b->s = nd_xrealloc(b->s, b->cap);
    }
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

static void
buf_putn(buf_t *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf_put(b, s[i]);
    if (!b->s)
        buf_put(b, 0), b->len = 0;
}


/* Reads a quoted string at the cursor (on the opening quote) into b. Returns false on error. */
static bool
read_quoted(rd_t *r, buf_t *b)
{
    int q = peek(r, 0);
    adv(r);
    buf_putn(b, "", 0);
    for (;;) {
        int c = peek(r, 0);
        if (c == -1) {
            FAIL(r, "Unexpected EOF.");
            return false;
        }
        if (is_nl(c)) {
            FAIL(r, "Strings cannot contain new lines.");
            return false;
        }
        if (c == q) {
            adv(r);
            return true;
        }
        if (c == '\\' && q == '"') {
            adv(r);
            int e = peek(r, 0);
            switch (e) {
            case 't':
                buf_put(b, '\t');
                break;
            case 'n':
                buf_put(b, '\n');
                break;
            case 'r':
                buf_put(b, '\r');
                break;
            case '"':
                buf_put(b, '"');
                break;
            case '\\':
                buf_put(b, '\\');
                break;
            case 'x': {
                int h = nd_hex_value(peek(r, 1)), l = nd_hex_value(peek(r, 2));
                if (h < 0 || l < 0) {
                    FAIL(r, "Expected two hexadecimal digits after '\\x'.");
                    return false;
                }
                buf_put(b, (char)(h * 16 + l));
                adv(r);
                adv(r);
                break;
            }
            default: {
                char sb[8];
                FAIL(r,
                     "Invalid escape character '%s'. Only the following escape characters are "
                     "allowed: "
                     "\\xXX, \\t, \\n, \\r, \\\", \\\\.",
                     show(e, sb));
                return false;
            }
            }
            adv(r);
            continue;
        }
        buf_put(b, (char)c);
        adv(r);
    }
}

/* ---- values --------------------------------------------------------------------------------- */

static nd_cfg_node_t *parse_value(rd_t *r);
static bool parse_body(rd_t *r, nd_cfg_node_t *m, bool braced);
static bool parse_text(shared_t *sh, const char *text, size_t len, const char *file,
                       const char *dir, nd_cfg_node_t *into);

static nd_cfg_node_t *
str_node(rd_t *r, int line, int col, buf_t *b)
{
    nd_cfg_node_t *n = node_new(r, ND_CFG_STRING, line, col);
    if (!n) {
        nd_free(b->s);
        return NULL;
    }
    if (!b->s)
        buf_putn(b, "", 0);
    n->u.str.s = b->s;
    n->u.str.len = b->len;
    return n;
}

static bool
ieq(const char *a, size_t n, const char *b)
{
    return strlen(b) == n && strncasecmp(a, b, n) == 0;
}

static bool
parse_datetime(const char *t, size_t n, int64_t *out)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
    if (n != sizeof pat - 1)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (pat[i] == 'd' ? !isdigit((unsigned char)t[i]) : t[i] != pat[i])
            return false;
    }
#define D2(o) ((t[o] - '0') * 10 + (t[(o) + 1] - '0'))
    int y = D2(0) * 100 + D2(2), mo = D2(5), d = D2(8), h = D2(11), mi = D2(14), s = D2(17);
#undef D2
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || s > 59)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return false;
    *out = nd_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return true;
}

/* Types an unquoted token that starts with a digit or '-' followed by a digit. */
static nd_cfg_node_t *
number_node(rd_t *r, const char *t, size_t n, int line, int col)
{
    size_t i = t[0] == '-' ? 1 : 0, d0 = i;
    while (i < n && isdigit((unsigned char)t[i]))
        i++;
    size_t ndig = i - d0;
    if (i < n && t[i] == '-' && d0 == 0) {
        nd_cfg_node_t *v;
        int64_t secs;
        if (ndig != 4) {
            fail_at(r, line, col, "All ISO8601 dates must be in full Zulu form.");
            return NULL;
        }
        if (!parse_datetime(t, n, &secs)) {
            fail_at(r, line, col, "Expected Zulu formatted DateTime, but got '%.*s'.", (int)n, t);
            return NULL;
        }
        if ((v = node_new(r, ND_CFG_DATETIME, line, col)))
            v->u.i = secs;
        return v;
    }
    if (i < n && t[i] == '.') {
        size_t j = i + 1;
        while (j < n && isdigit((unsigned char)t[j]))
            j++;
        if (j == n && j > i + 1) {
            nd_cfg_node_t *v = node_new(r, ND_CFG_FLOAT, line, col);
            if (v) {
                char tmp[64];
                if (n >= sizeof tmp) {
                    fail_at(r, line, col, "Float '%.*s' is out of the range.", (int)n, t);
                    nd_cfg_free(v);
                    return NULL;
                }
                memcpy(tmp, t, n);
                tmp[n] = 0;
                v->u.f = strtod(tmp, NULL);
            }
            return v;
        }
        goto string; /* an IP address or similar */
    }
    /* Integer, possibly with a size suffix. */
    int64_t mult = 1;
    if (i < n) {
        static const char units[] = "kmgtpe";
        const char *u = strchr(units, tolower((unsigned char)t[i]));
        size_t rest = n - i - 1;
        const char *s = t + i + 1;
        if (!u || t[i] == 0)
            goto string;
        /* Only size letters after the unit: this is what the lexer takes for a number. */
        for (size_t k = 0; k < rest; k++)
            if (strchr("bBiI", s[k]) == NULL)
                goto string;
        int pow = (int)(u - units) + 1;
        int64_t base;
        if (rest == 0)
            base = 1000;
        else if (ieq(s, rest, "b") || ieq(s, rest, "i") || ieq(s, rest, "ib"))
            base = 1024;
        else {
            fail_at(r, line, col, "Invalid size suffix in '%.*s'.", (int)n, t);
            return NULL;
        }
        while (pow--)
            mult *= base;
    }
    errno = 0;
    char tmp[32];
    if (i >= sizeof tmp || ndig == 0) {
        fail_at(r, line, col, "Integer '%.*s' is out of the range.", (int)n, t);
        return NULL;
    }
    memcpy(tmp, t, i);
    tmp[i] = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno == ERANGE || __builtin_mul_overflow((int64_t)v, mult, &v)) {
        fail_at(r, line, col, "Integer '%.*s' is out of the range.", (int)n, t);
        return NULL;
    }
    nd_cfg_node_t *nv = node_new(r, ND_CFG_INT, line, col);
    if (nv)
        nv->u.i = v;
    return nv;
string:;
    buf_t b = {0};
    buf_putn(&b, t, n);
    return str_node(r, line, col, &b);
}

/* Resolves $name (name borrowed, n bytes) to a copy of its value. */
static nd_cfg_node_t *
lookup_var(rd_t *r, const char *name, size_t n, int line, int col)
{
    char key[256];
    if (n == 0 || n >= sizeof key) {
        fail_at(r, line, col, "Invalid variable reference '$%.*s'.", (int)(n > 64 ? 64 : n), name);
        return NULL;
    }
    memcpy(key, name, n);
    key[n] = 0;
    for (int i = r->nscopes - 1; i >= 0; i--) {
        nd_cfg_entry_t *e = map_find_exact(r->scopes[i], key);
        if (e) {
            e->used_as_var = true;
            return node_copy(r, e->val, line, col, true);
        }
    }
    const char *env = getenv(key);
    if (env) {
        shared_t *sh = r->sh;
        for (int i = 0; i < sh->nenv; i++) {
            if (strcmp(sh->envs[i], key) == 0) {
                fail_at(r, line, col, "Variable reference cycle for '%s'.", key);
                return NULL;
            }
        }
        if (sh->nest >= ND_CFG_MAX_INCLUDE) {
            fail_at(r, line, col, "Variable and include nesting deeper than %d.",
                    ND_CFG_MAX_INCLUDE);
            return NULL;
        }
        size_t el = strlen(env);
        char *text = nd_xmalloc(el + 4);
        memcpy(text, "pk=", 3);
        memcpy(text + 3, env, el + 1);
        char fname[300];
        snprintf(fname, sizeof fname, "<env %s>", key);
        nd_cfg_node_t *tmp = node_new(r, ND_CFG_MAP, line, col);
        bool ok = tmp != NULL;
        if (ok) {
            sh->envs[sh->nenv++] = key;
            sh->nest++;
            ok = parse_text(sh, text, el + 3, fname, "", tmp);
            sh->nest--;
            sh->nenv--;
        }
        nd_free(text);
        nd_cfg_node_t *v = NULL;
        if (ok) {
            nd_cfg_entry_t *e = map_find_exact(tmp, "pk");
            if (e) {
                v = e->val;
                e->val = NULL;
                v->line = v->end_line = line;
                v->col = v->end_col = col;
                v->quoted = false;
                nd_free(v->file);
                v->file = nd_xstrdup(r->file);
            }
        }
        nd_cfg_free(tmp);
        if (v || !ok)
            return v;
    }
    fail_at(r, line, col, "variable reference for '%s' on line %d can not be found", key, line);
    return NULL;
}

static nd_cfg_node_t *
parse_block(rd_t *r, int line, int col)
{
    adv(r); /* '(' */
    size_t start = r->i;
    for (;;) {
        if (peek(r, 0) == -1) {
            FAIL(r, "Unexpected EOF processing block.");
            return NULL;
        }
        /* The block ends at a ')' alone on its line: "\n)" followed by a newline or EOF. */
        if (peek(r, 0) == '\n' && peek(r, 1) == ')' &&
            (peek(r, 2) == '\n' || peek(r, 2) == -1 ||
             (peek(r, 2) == '\r' && peek(r, 3) == '\n'))) {
            buf_t b = {0};
            buf_putn(&b, r->s + start, r->i - start);
            adv(r);
            adv(r);
            return str_node(r, line, col, &b);
        }
        adv(r);
    }
}

static nd_cfg_node_t *
parse_array(rd_t *r, int line, int col)
{
    nd_cfg_node_t *a = node_new(r, ND_CFG_ARRAY, line, col);
    if (!a)
        return NULL;
    adv(r); /* '[' */
    for (;;) {
        skip_all(r);
        if (peek(r, 0) == ']') {
            adv(r);
            return a;
        }
        if (peek(r, 0) == -1) {
            FAIL(r, "Unexpected EOF in array.");
            break;
        }
        nd_cfg_node_t *v = parse_value(r);
        if (!v)
            break;
        arr_push(a, v);
        skip_ws(r);
        int c = peek(r, 0);
        if (c == ',' || is_nl(c)) {
            adv(r);
        } else if (at_comment(r)) {
            skip_comment(r);
        } else if (c != ']') {
            char sb[8];
            FAIL(r,
                 "Expected an array value terminator \",\" or an array terminator \"]\", but got "
                 "'%s' "
                 "instead.",
                 show(c, sb));
            break;
        }
    }
    nd_cfg_free(a);
    return NULL;
}

static nd_cfg_node_t *
parse_value(rd_t *r)
{
    int line = r->line, col = r->col, c = peek(r, 0);
    char sb[8];
    if (c == -1 || is_nl(c)) {
        FAIL(r, "Expected a value, but got '%s' instead.", show(c, sb));
        return NULL;
    }
    if (c == '{' || c == '[') {
        if (r->depth >= ND_CFG_MAX_DEPTH) {
            FAIL(r, "Maps and arrays nested deeper than %d.", ND_CFG_MAX_DEPTH);
            return NULL;
        }
        r->depth++;
        nd_cfg_node_t *v;
        if (c == '[') {
            v = parse_array(r, line, col);
        } else {
            v = node_new(r, ND_CFG_MAP, line, col);
            if (v) {
                adv(r);
                if (!parse_body(r, v, true)) {
                    nd_cfg_free(v);
                    v = NULL;
                } else {
                    v->end_line = r->line;
                    v->end_col = r->col;
                }
            }
        }
        r->depth--;
        return v;
    }
    if (c == '"' || c == '\'') {
        buf_t b = {0};
        if (!read_quoted(r, &b)) {
            nd_free(b.s);
            return NULL;
        }
        nd_cfg_node_t *q = str_node(r, line, col, &b);
        if (q)
            q->quoted = true;
        return q;
    }
    if (c == '(')
        return parse_block(r, line, col);
    if (c == '.') {
        FAIL(r, "Floats must start with a digit, not '.'.");
        return NULL;
    }
    if (c == ',' || c == ';' || c == ']' || c == '}') {
        FAIL(r, "Expected a value, but got '%s' instead.", show(c, sb));
        return NULL;
    }
    size_t start = r->i;
    while (!is_val_end(peek(r, 0)))
        adv(r);
    const char *t = r->s + start;
    size_t n = r->i - start;
    if (c == '$') {
        if (n >= 4 && memcmp(t, "$2a$", 4) == 0)
            goto string; /* a bcrypt hash, not a variable */
        return lookup_var(r, t + 1, n - 1, line, col);
    }
    if (isdigit(c) || (c == '-' && n > 1 && isdigit((unsigned char)t[1])))
        return number_node(r, t, n, line, col);
    static const char *const truthy[] = {"true", "yes", "on"}, *const falsy[] = {"false", "no",
                                                                                 "off"};
    for (int k = 0; k < 3; k++) {
        if (ieq(t, n, truthy[k]) || ieq(t, n, falsy[k])) {
            nd_cfg_node_t *v = node_new(r, ND_CFG_BOOL, line, col);
            if (v)
                v->u.b = ieq(t, n, truthy[k]);
            return v;
        }
    }
string:;
    buf_t b = {0};
    buf_putn(&b, t, n);
    return str_node(r, line, col, &b);
}

/* ---- maps, keys and includes ---------------------------------------------------------------- */

static bool
do_include(rd_t *r, nd_cfg_node_t *m, int line, int col)
{
    skip_ws(r);
    buf_t b = {0};
    int c = peek(r, 0);
    if (c == '"' || c == '\'') {
        if (!read_quoted(r, &b)) {
            nd_free(b.s);
            return false;
        }
    } else {
        size_t start = r->i;
        while (!is_val_end(peek(r, 0)))
            adv(r);
        buf_putn(&b, r->s + start, r->i - start);
    }
    if (b.len == 0) {
        nd_free(b.s);
        fail_at(r, line, col, "Expected a file name after include.");
        return false;
    }
    shared_t *sh = r->sh;
    if (sh->nest >= ND_CFG_MAX_INCLUDE) {
        fail_at(r, line, col, "error parsing include file '%s', includes nested deeper than %d",
                b.s, ND_CFG_MAX_INCLUDE);
        nd_free(b.s);
        return false;
    }
    size_t dl = strlen(r->dir);
    char *path = nd_xmalloc(dl + b.len + 2);
    snprintf(path, dl + b.len + 2, "%s%s%s", r->dir, dl ? "/" : "", b.s);
    bool ok = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail_at(r, line, col, "error parsing include file '%s', open %s: %s", b.s, path,
                strerror(errno));
        goto out;
    }
    size_t len;
    char *text = read_capped(f, &len);
    fclose(f);
    if (len > ND_CFG_MAX_INPUT) {
        fail_at(r, line, col, "error parsing include file '%s', larger than %u bytes", b.s,
                ND_CFG_MAX_INPUT);
        nd_free(text);
        goto out;
    }
    /* The included file is parsed on its own (its variables cannot see ours, as in nats-server)
     * and its keys merge into the current map. */
    nd_cfg_node_t *tmp = node_new(r, ND_CFG_MAP, line, col);
    if (tmp) {
        char *slash = strrchr(path, '/');
        char *idir = slash ? nd_xstrndup(path, (size_t)(slash - path)) : nd_xstrdup("");
        nd_cfg_err_t ierr;
        shared_t sub = {.err = &ierr, .nodes = sh->nodes, .nest = sh->nest + 1, .nenv = sh->nenv};
        memcpy(sub.envs, sh->envs, sizeof sh->envs);
        ok = parse_text(&sub, text, len, path, idir, tmp);
        sh->nodes = sub.nodes;
        nd_free(idir);
        if (!ok) {
            fail_at(r, line, col, "error parsing include file '%s', %s", b.s, ierr.text);
        } else {
            for (size_t i = 0; i < tmp->u.map.n; i++) {
                nd_cfg_entry_t *e = &tmp->u.map.e[i];
                map_set(m, e->key, e->line, e->col, e->val)->quoted = e->quoted;
                e->key = NULL;
                e->val = NULL;
            }
        }
        nd_cfg_free(tmp);
    }
    nd_free(text);
out:
    nd_free(path);
    nd_free(b.s);
    return ok;
}

/* Parses key/value pairs into m until '}' (braced) or EOF (top level). */
static bool
parse_body(rd_t *r, nd_cfg_node_t *m, bool braced)
{
    r->scopes[r->nscopes++] = m;
    bool ok = false;
    char sb[8];
    for (;;) {
        skip_all(r);
        int c = peek(r, 0);
        if (c == '}' && braced) {
            adv(r);
            ok = true;
            break;
        }
        if (c == -1) {
            if (braced)
                FAIL(r, "Unexpected EOF processing map.");
            ok = !braced;
            break;
        }
        int line = r->line, col = r->col;
        buf_t key = {0};
        bool quoted = c == '"' || c == '\'';
        if (quoted) {
            if (!read_quoted(r, &key)) {
                nd_free(key.s);
                break;
            }
        } else {
            size_t start = r->i;
            for (c = peek(r, 0); c != -1 && !is_ws(c) && !is_nl(c) && c != '=' && c != ':' &&
                                 c != '{' && c != '[' && c != '}' && c != ',' && c != ';';
                 c = peek(r, 0))
                adv(r);
            if (r->i == start) {
                FAIL(r, "Expected a key, but got '%s' instead.", show(c, sb));
                break;
            }
            buf_putn(&key, r->s + start, r->i - start);
            if (strcmp(key.s, "include") == 0 && is_ws(c)) {
                nd_free(key.s);
                if (!do_include(r, m, line, col))
                    break;
                goto terminator;
            }
        }
        skip_ws(r);
        c = peek(r, 0);
        if (c == '=' || c == ':') {
            adv(r);
            skip_ws(r);
        }
        c = peek(r, 0);
        if (c == -1 || is_nl(c) || at_comment(r) || c == '}' || c == ',' || c == ';') {
            if (c == -1)
                fail_at(r, line, col, "Unexpected EOF: key '%s' has no value.", key.s);
            else if (is_nl(c) || at_comment(r))
                fail_at(r, line, col, "Expected value but found new line for key '%s'.", key.s);
            else
                fail_at(r, line, col, "Key '%s' has no value.", key.s);
            nd_free(key.s);
            break;
        }
        nd_cfg_node_t *v = parse_value(r);
        if (!v) {
            nd_free(key.s);
            break;
        }
        map_set(m, key.s, line, col, v)->quoted = quoted;
    terminator:
        skip_ws(r);
        c = peek(r, 0);
        if (c == ',' || c == ';') {
            adv(r);
            continue; /* "a: 1, b: 2": another key may follow on the same line */
        }
        if (is_nl(c) || c == -1 || at_comment(r) || (c == '}' && braced))
            continue;
        if (!braced && (c != '}'))
            continue; /* "a: 1, b: 2" on one line, as nats-server's top level allows */
        FAIL(r,
             "Expected a map value terminator \",\" or a map terminator \"}\", but got '%s' "
             "instead.",
             show(c, sb));
        break;
    }
    r->nscopes--;
    return ok;
}

static bool
parse_text(shared_t *sh, const char *text, size_t len, const char *file, const char *dir,
           nd_cfg_node_t *into)
{
    rd_t r = {.sh = sh, .s = text, .n = len, .line = 1, .col = 1, .file = file, .dir = dir};
    if (len > ND_CFG_MAX_INPUT) {
        FAIL(&r, "configuration larger than %u bytes", ND_CFG_MAX_INPUT);
        return false;
    }
    if (memchr(text, 0, len)) {
        FAIL(&r, "configuration contains a NUL byte");
        return false;
    }
    /* A JSON-like document wraps everything in one top-level '{ ... }'. */
    skip_all(&r);
    if (peek(&r, 0) == '{') {
        adv(&r);
        if (!parse_body(&r, into, true))
            return false;
        skip_all(&r);
        if (peek(&r, 0) != -1) {
            char sb[8];
            FAIL(&r, "Unexpected '%s' after the top-level map.", show(peek(&r, 0), sb));
            return false;
        }
        return true;
    }
    return parse_body(&r, into, false);
}

/* ---- public API ----------------------------------------------------------------------------- */

static bool
parse_root(const char *text, size_t len, const char *name, const char *dir, nd_cfg_node_t **root,
           nd_cfg_err_t *err)
{
    shared_t sh = {.err = err};
    memset(err, 0, sizeof *err);
    nd_cfg_node_t *m = nd_new(nd_cfg_node_t);
    m->type = ND_CFG_MAP;
    m->file = nd_xstrdup(name);
    m->line = m->col = 1;
    if (!parse_text(&sh, text, len, name, dir, m)) {
        nd_cfg_free(m);
        *root = NULL;
        return false;
    }
    *root = m;
    return true;
}

bool
nd_cfg_parse_string(const char *text, const char *name, nd_cfg_node_t **root, nd_cfg_err_t *err)
{
    return parse_root(text, strlen(text), name ? name : "<string>", "", root, err);
}

bool
nd_cfg_parse_file(const char *path, nd_cfg_node_t **root, nd_cfg_err_t *err)
{
    *root = NULL;
    memset(err, 0, sizeof *err);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err->file, sizeof err->file, "%s", path);
        snprintf(err->text, sizeof err->text, "open %s: %s", path, strerror(errno));
        return false;
    }
    size_t len;
    char *text = read_capped(f, &len);
    fclose(f);
    if (len > ND_CFG_MAX_INPUT) {
        nd_free(text);
        snprintf(err->file, sizeof err->file, "%s", path);
        snprintf(err->text, sizeof err->text, "%s: larger than %u bytes", path, ND_CFG_MAX_INPUT);
        return false;
    }
    const char *slash = strrchr(path, '/');
    char *dir = slash ? nd_xstrndup(path, (size_t)(slash - path)) : nd_xstrdup("");
    if (slash == path) {
        nd_free(dir);
        dir = nd_xstrdup("/");
    }
    bool ok = parse_root(text, len, path, dir, root, err);
    nd_free(dir);
    nd_free(text);
    return ok;
}

nd_cfg_entry_t *
nd_cfg_map_entry(const nd_cfg_node_t *map, const char *key)
{
    if (!map || map->type != ND_CFG_MAP)
        return NULL;
    for (size_t i = 0; i < map->u.map.n; i++)
        if (strcasecmp(map->u.map.e[i].key, key) == 0)
            return &map->u.map.e[i];
    return NULL;
}

nd_cfg_node_t *
nd_cfg_get(const nd_cfg_node_t *map, const char *key)
{
    nd_cfg_entry_t *e = nd_cfg_map_entry(map, key);
    return e ? e->val : NULL;
}

const char *
nd_cfg_type_name(nd_cfg_type_t t)
{
    switch (t) {
    case ND_CFG_MAP:
        return "map";
    case ND_CFG_ARRAY:
        return "array";
    case ND_CFG_STRING:
        return "string";
    case ND_CFG_INT:
        return "integer";
    case ND_CFG_FLOAT:
        return "float";
    case ND_CFG_BOOL:
        return "boolean";
    case ND_CFG_DATETIME:
        return "datetime";
    }
    return "?";
}
