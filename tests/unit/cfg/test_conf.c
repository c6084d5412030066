/* Unit tests of the configuration-file reader (src/cfg/conf.c).
 *
 * Expected typing and error texts follow nats-server 2.9.10's conf package (checked with
 * `nats-server -t -c FILE` where its behaviour is visible). Most cases are table rows: a config
 * text and either the compact dump of the tree it must produce or a fragment of the error text.
 */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg/conf.h"

/* ---- helpers ------------------------------------------------------------------------------- */

typedef struct sb {
    char s[8192];
    size_t len;
} sb_t;

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(sb_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, sizeof b->s - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len += (size_t)n;
    if (b->len >= sizeof b->s)
        b->len = sizeof b->s - 1;
}

/* Compact dump: maps {k=v,...}, arrays [v,...], strings "..." (\n shown as \n), ints, floats %g,
 * bools, datetimes @<unix seconds>. */
static void
dump(sb_t *b, const nd_cfg_node_t *n)
{
    switch (n->type) {
    case ND_CFG_MAP:
        sb_printf(b, "{");
        for (size_t i = 0; i < n->u.map.n; i++) {
            sb_printf(b, "%s%s=", i ? "," : "", n->u.map.e[i].key);
            dump(b, n->u.map.e[i].val);
        }
        sb_printf(b, "}");
        break;
    case ND_CFG_ARRAY:
        sb_printf(b, "[");
        for (size_t i = 0; i < n->u.arr.n; i++) {
            if (i)
                sb_printf(b, ",");
            dump(b, n->u.arr.v[i]);
        }
        sb_printf(b, "]");
        break;
    case ND_CFG_STRING:
        sb_printf(b, "\"");
        for (size_t i = 0; i < n->u.str.len; i++) {
            char c = n->u.str.s[i];
            if (c == '\n')
                sb_printf(b, "\\n");
            else if (c == '\t')
                sb_printf(b, "\\t");
            else if (c == '"' || c == '\\')
                sb_printf(b, "\\%c", c);
            else if ((unsigned char)c < 32)
                sb_printf(b, "\\x%02x", (unsigned char)c);
            else
                sb_printf(b, "%c", c);
        }
        sb_printf(b, "\"");
        break;
    case ND_CFG_INT:
        sb_printf(b, "%lld", (long long)n->u.i);
        break;
    case ND_CFG_FLOAT:
        sb_printf(b, "%gf", n->u.f);
        break;
    case ND_CFG_BOOL:
        sb_printf(b, "%s", n->u.b ? "true" : "false");
        break;
    case ND_CFG_DATETIME:
        sb_printf(b, "@%lld", (long long)n->u.i);
        break;
    }
}

static void
expect_ok(const char *text, const char *want)
{
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t err;
    bool ok = nd_cfg_parse_string(text, "t.conf", &root, &err);
    cr_assert(ok, "parse of <<%s>> failed: %s", text, err.text);
    sb_t b = {.len = 0};
    dump(&b, root);
    cr_expect_str_eq(b.s, want, "parse of <<%s>>", text);
    nd_cfg_free(root);
}

static void
expect_err(const char *text, const char *want)
{
    nd_cfg_node_t *root = (nd_cfg_node_t *)1;
    nd_cfg_err_t err;
    bool ok = nd_cfg_parse_string(text, "t.conf", &root, &err);
    if (ok) {
        sb_t b = {.len = 0};
        dump(&b, root);
        cr_expect(!ok, "<<%s>> parsed as %s, want error %s", text, b.s, want);
        nd_cfg_free(root);
        return;
    }
    cr_expect_null(root);
    cr_expect(strstr(err.text, want) != NULL, "<<%s>>: error \"%s\" lacks \"%s\"", text, err.text,
              want);
}

typedef struct ok_case {
    const char *text, *want;
} ok_case_t;

/* ---- syntax that parses -------------------------------------------------------------------- */

static const ok_case_t ok_cases[] = {
    /* separators and terminators */
    {"a = 1", "{a=1}"},
    {"a: 1", "{a=1}"},
    {"a 1", "{a=1}"},
    {"a=1", "{a=1}"},
    {"a:1", "{a=1}"},
    {"a\t:\t1", "{a=1}"},
    {"a: 1;", "{a=1}"},
    {"a: 1,", "{a=1}"},
    {"a: 1, b: 2", "{a=1,b=2}"},
    {"a: 1; b: 2", "{a=1,b=2}"},
    {"a: 1\r\nb: 2\r\n", "{a=1,b=2}"},
    {"", "{}"},
    {"\n\n  \n", "{}"},
    {"a: 1\na: 2", "{a=2}"},
    {"A: 1\na: 2", "{A=1,a=2}"},
    {"\"quoted key\": 1", "{quoted key=1}"},
    {"'sq key' = 2", "{sq key=2}"},
    {"dotted.key-x_y: 3", "{dotted.key-x_y=3}"},
    /* comments */
    {"# only a comment", "{}"},
    {"// only a comment", "{}"},
    {"a: 1 # trailing", "{a=1}"},
    {"a: 1 // trailing", "{a=1}"},
    {"a: 1; # trailing", "{a=1}"},
    {"# c1\na: 1\n// c2\nb: 2", "{a=1,b=2}"},
    {"a: \"x # not a comment\"", "{a=\"x # not a comment\"}"},
    /* maps */
    {"m { a: 1 }", "{m={a=1}}"},
    {"m{a:1}", "{m={a=1}}"},
    {"m: { a: 1, b: 2 }", "{m={a=1,b=2}}"},
    {"m = {\n a: 1\n b: 2\n}", "{m={a=1,b=2}}"},
    {"m { a: 1; b: 2; }", "{m={a=1,b=2}}"},
    {"m {}", "{m={}}"},
    {"m { n { o { p: 1 } } }", "{m={n={o={p=1}}}}"},
    {"m { # c\n a: 1 # c\n}", "{m={a=1}}"},
    {"{ a: 1, b: 2 }", "{a=1,b=2}"},
    {"{\n \"a\": 1,\n \"b\": [1, 2]\n}\n", "{a=1,b=[1,2]}"},
    /* arrays */
    {"a: [1, 2, 3]", "{a=[1,2,3]}"},
    {"a [1, 2]", "{a=[1,2]}"},
    {"a: []", "{a=[]}"},
    {"a: [\n 1\n 2\n]", "{a=[1,2]}"},
    {"a: [\n 1,\n 2,\n]", "{a=[1,2]}"},
    {"a: [ 1, # one\n 2 // two\n]", "{a=[1,2]}"},
    {"a: [[1], [2, [3]]]", "{a=[[1],[2,[3]]]}"},
    {"a: [{x: 1}, {y: 2}]", "{a=[{x=1},{y=2}]}"},
    {"a: [foo, bar]", "{a=[\"foo\",\"bar\"]}"},
    {"a: [\"x\", 'y', z]", "{a=[\"x\",\"y\",\"z\"]}"},
    /* strings */
    {"a: hello", "{a=\"hello\"}"},
    {"a: \"hello world\"", "{a=\"hello world\"}"},
    {"a: 'hello world'", "{a=\"hello world\"}"},
    {"a: \"t\\tn\\nq\\\"b\\\\\"", "{a=\"t\\tn\\nq\\\"b\\\\\"}"},
    {"a: \"\\x41\\x7a\"", "{a=\"Az\"}"},
    {"a: 'raw \\t \\q'", "{a=\"raw \\\\t \\\\q\"}"},
    {"a: \"\"", "{a=\"\"}"},
    {"a: nats://host:4222", "{a=\"nats://host:4222\"}"},
    {"a: foo#bar", "{a=\"foo#bar\"}"},
    {"a: 127.0.0.1", "{a=\"127.0.0.1\"}"},
    {"a: -", "{a=\"-\"}"},
    {"a: -x", "{a=\"-x\"}"},
    {"a: (\nline one\nline two\n)\nb: 1", "{a=\"\\nline one\\nline two\",b=1}"},
    {"a: (\n  x ) y\n)", "{a=\"\\n  x ) y\"}"},
    {"a: ($x {}\n)", "{a=\"$x {}\"}"},
    /* booleans */
    {"a: true", "{a=true}"},
    {"a: TRUE", "{a=true}"},
    {"a: yes", "{a=true}"},
    {"a: On", "{a=true}"},
    {"a: false", "{a=false}"},
    {"a: No", "{a=false}"},
    {"a: off", "{a=false}"},
    {"a: \"true\"", "{a=\"true\"}"},
    {"a: truex", "{a=\"truex\"}"},
    /* integers and sizes */
    {"a: 0", "{a=0}"},
    {"a: -1", "{a=-1}"},
    {"a: 9223372036854775807", "{a=9223372036854775807}"},
    {"a: -9223372036854775808", "{a=-9223372036854775808}"},
    {"a: 2k", "{a=2000}"},
    {"a: 2K", "{a=2000}"},
    {"a: 2kb", "{a=2048}"},
    {"a: 2KB", "{a=2048}"},
    {"a: 2ki", "{a=2048}"},
    {"a: 2kib", "{a=2048}"},
    {"a: 2m", "{a=2000000}"},
    {"a: 2mb", "{a=2097152}"},
    {"a: 2Mi", "{a=2097152}"},
    {"a: 2mib", "{a=2097152}"},
    {"a: 1g", "{a=1000000000}"},
    {"a: 1gb", "{a=1073741824}"},
    {"a: 1GiB", "{a=1073741824}"},
    {"a: 1t", "{a=1000000000000}"},
    {"a: 1tb", "{a=1099511627776}"},
    {"a: 1p", "{a=1000000000000000}"},
    {"a: 1e", "{a=1000000000000000000}"},
    {"a: -5k", "{a=-5000}"},
    {"a: 8k;", "{a=8000}"},
    {"a: [1k, 2mb]", "{a=[1000,2097152]}"},
    /* durations stay strings, as nats-server keeps them */
    {"a: 30s", "{a=\"30s\"}"},
    {"a: 1h30m", "{a=\"1h30m\"}"},
    {"a: \"2m\"", "{a=\"2m\"}"},
    {"a: 500ms", "{a=\"500ms\"}"},
    {"a: 10x", "{a=\"10x\"}"},
    /* floats */
    {"a: 1.5", "{a=1.5f}"},
    {"a: -0.25", "{a=-0.25f}"},
    {"a: 10.0", "{a=10f}"},
    /* datetimes */
    {"a: 1970-01-01T00:00:00Z", "{a=@0}"},
    {"a: 2021-03-04T05:06:07Z", "{a=@1614834367}"},
    {"a: 2000-02-29T23:59:59Z", "{a=@951868799}"},
    /* variables */
    {"v: 4222\nport: $v", "{v=4222,port=4222}"},
    {"v: \"s\"\nm { x: $v }", "{v=\"s\",m={x=\"s\"}}"},
    {"v: 1\nm { v: 2\n x: $v }\ny: $v", "{v=1,m={v=2,x=2},y=1}"},
    {"v: [1, {a: b}]\nw: $v", "{v=[1,{a=\"b\"}],w=[1,{a=\"b\"}]}"},
    {"v: 1\na: [$v, $v]", "{v=1,a=[1,1]}"},
    {"pw: $2a$11$abcdefghij", "{pw=\"$2a$11$abcdefghij\"}"},
    {"a: \"$v\"", "{a=\"$v\"}"},
};

Test(cfg, syntax_ok)
{
    for (size_t i = 0; i < sizeof ok_cases / sizeof ok_cases[0]; i++) {
        expect_ok(ok_cases[i].text, ok_cases[i].want);
    }
}

/* ---- errors -------------------------------------------------------------------------------- */

static const ok_case_t err_cases[] = {
    {"a: \"x", "t.conf:1:6: Unexpected EOF."},
    {"a: 'x", "Unexpected EOF."},
    {"a: \"x\ny\"", "Strings cannot contain new lines."},
    {"a: \"\\q\"",
     "Invalid escape character 'q'. Only the following escape characters are allowed"},
    {"a: \"\\xZ1\"", "Expected two hexadecimal digits after '\\x'."},
    {"a: [1 2]",
     "Expected an array value terminator \",\" or an array terminator \"]\", but got '2'"},
    {"a: [1, 2", "t.conf:1:9: Expected an array value terminator \",\" or an array terminator "
                 "\"]\", but got 'EOF'"},
    {"a: [1, 2,", "Unexpected EOF in array."},
    {"m { a: 1 b: 2 }",
     "Expected a map value terminator \",\" or a map terminator \"}\", but got 'b'"},
    {"m { a: 1", "t.conf:1:9: Unexpected EOF processing map."},
    {"a:", "t.conf:1:1: Unexpected EOF: key 'a' has no value."},
    {"a\nb: 1", "Expected value but found new line for key 'a'."},
    {"a: # c", "Expected value but found new line for key 'a'."},
    {"a: ,", "Key 'a' has no value."},
    {"a: [,]", "Expected a value, but got ','"},
    {"a: ]", "Expected a value, but got ']'"},
    {"}", "t.conf:1:1: Expected a key, but got '}' instead."},
    {"{ a: 1 } b", "Unexpected 'b' after the top-level map."},
    {"a: .5", "Floats must start with a digit"},
    {"a: 2021-01-01T00:00Z", "Expected Zulu formatted DateTime, but got '2021-01-01T00:00Z'."},
    {"a: 2021-13-01T00:00:00Z", "Expected Zulu formatted DateTime"},
    {"a: 2021-02-29T00:00:00Z", "Expected Zulu formatted DateTime"},
    {"a: 10-20", "All ISO8601 dates must be in full Zulu form."},
    {"a: 99999999999999999999", "Integer '99999999999999999999' is out of the range."},
    {"a: 9223372036854775808", "is out of the range."},
    {"a: 10e", "Integer '10e' is out of the range."},
    {"a: 10000000000gb", "is out of the range."},
    {"a: 1kibb", "Invalid size suffix in '1kibb'."},
    {"a: 1kbi", "Invalid size suffix"},
    {"a: ./x.pem", "Floats must start with a digit"},
    {"a: $nope_not_defined_anywhere",
     "variable reference for 'nope_not_defined_anywhere' on line 1 can not be found"},
    {"a: 1\nb: $c", "t.conf:2:4: variable reference for 'c' on line 2 can not be found"},
    {"m { x: 1 }\ny: $x", "variable reference for 'x'"},
    {"a: [ $x ]", "variable reference for 'x'"},
    {"a: $", "Invalid variable reference"},
    {"a: (\nnever closed", "Unexpected EOF processing block."},
    {"a: (\n  )\n", "Unexpected EOF processing block."},
    {"include", "Unexpected EOF: key 'include' has no value."},
    {"include ./does/not/exist.conf", "error parsing include file './does/not/exist.conf', open"},
    {"a: \"x\" y", "Unexpected EOF: key 'y' has no value."},
};

Test(cfg, syntax_errors)
{
    for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++)
        expect_err(err_cases[i].text, err_cases[i].want);
}

Test(cfg, nul_byte_and_size_limits)
{
    nd_cfg_node_t *root;
    nd_cfg_err_t err;
    /* Nesting past the limit is an error, not a stack overflow. */
    size_t n = ND_CFG_MAX_DEPTH + 10;
    char *deep = calloc(1, 2 * n + 8);
    strcpy(deep, "a: ");
    for (size_t i = 0; i < n; i++)
        strcat(deep, "[");
    cr_assert_not(nd_cfg_parse_string(deep, "t.conf", &root, &err));
    cr_expect(strstr(err.text, "nested deeper than") != NULL, "%s", err.text);
    free(deep);
    /* Exactly at the limit is fine. */
    sb_t b = {.len = 0};
    sb_printf(&b, "a: ");
    for (int i = 0; i < ND_CFG_MAX_DEPTH; i++)
        sb_printf(&b, "[");
    for (int i = 0; i < ND_CFG_MAX_DEPTH; i++)
        sb_printf(&b, "]");
    cr_assert(nd_cfg_parse_string(b.s, "t.conf", &root, &err), "%s", err.text);
    nd_cfg_free(root);
    /* Variables that double at each level ("billion laughs") hit the node limit. */
    sb_t l = {.len = 0};
    sb_printf(&l, "v0: [1,1,1,1,1,1,1,1]\n");
    for (int i = 1; i < 12; i++)
        sb_printf(&l, "v%d: [$v%d,$v%d,$v%d,$v%d,$v%d,$v%d,$v%d,$v%d]\n", i, i - 1, i - 1, i - 1,
                  i - 1, i - 1, i - 1, i - 1, i - 1);
    cr_assert_not(nd_cfg_parse_string(l.s, "t.conf", &root, &err));
    cr_expect(strstr(err.text, "configuration has more than") != NULL, "%s", err.text);
    cr_expect_null(root);
}

Test(cfg, positions_and_lookup)
{
    nd_cfg_node_t *root;
    nd_cfg_err_t err;
    const char *text =
        "# header\nPort: 4222\ncluster {\n  name: c1\n  routes = [\n    nats://a:6222\n  ]\n}\n";
    cr_assert(nd_cfg_parse_string(text, "pos.conf", &root, &err), "%s", err.text);
    nd_cfg_entry_t *e = nd_cfg_map_entry(root, "port");
    cr_assert_not_null(e);
    cr_expect_str_eq(e->key, "Port");
    cr_expect_eq(e->line, 2);
    cr_expect_eq(e->col, 1);
    cr_expect_eq(e->val->line, 2);
    cr_expect_eq(e->val->col, 7);
    cr_expect_str_eq(e->val->file, "pos.conf");
    nd_cfg_node_t *cl = nd_cfg_get(root, "CLUSTER");
    cr_assert_not_null(cl);
    cr_expect_eq(cl->type, ND_CFG_MAP);
    nd_cfg_entry_t *name = nd_cfg_map_entry(cl, "name");
    cr_assert_not_null(name);
    cr_expect_eq(name->line, 4);
    cr_expect_eq(name->col, 3);
    nd_cfg_node_t *routes = nd_cfg_get(cl, "routes");
    cr_assert_not_null(routes);
    cr_assert_eq(routes->type, ND_CFG_ARRAY);
    cr_expect_eq(routes->u.arr.v[0]->line, 6);
    cr_expect_eq(routes->u.arr.v[0]->col, 5);
    cr_expect_null(nd_cfg_get(root, "nope"));
    cr_expect_null(nd_cfg_get(routes, "x"));
    cr_expect_str_eq(nd_cfg_type_name(ND_CFG_DATETIME), "datetime");
    nd_cfg_free(root);

    /* A variable's use marks its definition, and the copy sits where it is used. */
    cr_assert(nd_cfg_parse_string("v: 1\nw: 2\nx:  $v", "v.conf", &root, &err), "%s", err.text);
    cr_expect(nd_cfg_map_entry(root, "v")->used_as_var);
    cr_expect_not(nd_cfg_map_entry(root, "w")->used_as_var);
    cr_expect_eq(nd_cfg_get(root, "x")->line, 3);
    cr_expect_eq(nd_cfg_get(root, "x")->col, 5);
    nd_cfg_free(root);
    nd_cfg_free(NULL);
}

Test(cfg, environment_variables)
{
    nd_cfg_node_t *root;
    nd_cfg_err_t err;
    setenv("ND_CFG_T_INT", "10", 1);
    setenv("ND_CFG_T_STR", "hello", 1);
    setenv("ND_CFG_T_SIZE", "1mb", 1);
    setenv("ND_CFG_T_ARR", "[1, 2]", 1);
    setenv("ND_CFG_T_IND", "$ND_CFG_T_INT", 1);
    setenv("ND_CFG_T_SELF", "$ND_CFG_T_SELF", 1);
    setenv("ND_CFG_T_A", "$ND_CFG_T_B", 1);
    setenv("ND_CFG_T_B", "$ND_CFG_T_A", 1);
    setenv("ND_CFG_T_BAD", "\"unterminated", 1);
    setenv("ND_CFG_T_EMPTY", "", 1);
    expect_ok("a: $ND_CFG_T_INT", "{a=10}");
    expect_ok("a: $ND_CFG_T_STR", "{a=\"hello\"}");
    expect_ok("a: $ND_CFG_T_SIZE", "{a=1048576}");
    expect_ok("a: $ND_CFG_T_ARR", "{a=[1,2]}");
    expect_ok("a: $ND_CFG_T_IND", "{a=10}");
    expect_ok("ND_CFG_T_INT: 5\na: $ND_CFG_T_INT", "{ND_CFG_T_INT=5,a=5}");
    expect_err("a: $ND_CFG_T_SELF", "Variable reference cycle for 'ND_CFG_T_SELF'.");
    expect_err("a: $ND_CFG_T_A", "Variable reference cycle for 'ND_CFG_T_A'.");
    expect_err("a: $ND_CFG_T_BAD", "<env ND_CFG_T_BAD>:1:17: Unexpected EOF.");
    expect_err("a: $ND_CFG_T_EMPTY", "key 'pk' has no value.");
    cr_assert(nd_cfg_parse_string("a: $ND_CFG_T_INT", "e.conf", &root, &err));
    cr_expect_str_eq(nd_cfg_get(root, "a")->file, "e.conf");
    nd_cfg_free(root);
}

/* ---- files and includes -------------------------------------------------------------------- */

static char tmpdir[256];

static void
write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void
mk_tmp(void)
{
    strcpy(tmpdir, "/tmp/nd_cfg_test_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    cr_assert_eq(mkdir(sub, 0700), 0);
}

static void
rm_tmp(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

static bool
parse_rel(const char *rel, nd_cfg_node_t **root, nd_cfg_err_t *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    return nd_cfg_parse_file(path, root, err);
}

Test(cfg, includes, .init = mk_tmp, .fini = rm_tmp)
{
    nd_cfg_node_t *root;
    nd_cfg_err_t err;
    write_file("main.conf",
               "port: 4222\ninclude sub/auth.conf\nm {\n  include 'sub/inner.conf'\n}\nafter: 1\n");
    write_file("sub/auth.conf", "authorization {\n  include \"users.conf\"\n}\n");
    write_file("sub/users.conf", "user: bob\npassword: 's3cret'\n");
    write_file("sub/inner.conf", "x: 1; y: [a, b]\n");
    cr_assert(parse_rel("main.conf", &root, &err), "%s", err.text);
    sb_t b = {.len = 0};
    dump(&b, root);
    cr_expect_str_eq(b.s, "{port=4222,authorization={user=\"bob\",password=\"s3cret\"},m={x=1,y=["
                          "\"a\",\"b\"]},after=1}");
    nd_cfg_node_t *user = nd_cfg_get(nd_cfg_get(root, "authorization"), "user");
    cr_assert_not_null(user);
    cr_expect(strstr(user->file, "sub/users.conf") != NULL, "%s", user->file);
    cr_expect_eq(user->line, 1);
    cr_expect_eq(user->col, 7);
    nd_cfg_free(root);

    /* An error inside an included file names both files. */
    write_file("bad.conf", "a: 1\ninclude sub/broken.conf\n");
    write_file("sub/broken.conf", "\nz: [1 2]\n");
    cr_assert_not(parse_rel("bad.conf", &root, &err));
    cr_expect(strstr(err.text, "bad.conf:2:1: error parsing include file 'sub/broken.conf'") !=
                  NULL,
              "%s", err.text);
    cr_expect(strstr(err.text, "sub/broken.conf:2:7: Expected an array value terminator") != NULL,
              "%s", err.text);

    /* A file that includes itself stops at the nesting limit. */
    write_file("loop.conf", "include loop.conf\n");
    cr_assert_not(parse_rel("loop.conf", &root, &err));
    cr_expect(strstr(err.text, "loop.conf:1:1: error parsing include file 'loop.conf', ") != NULL,
              "%s", err.text);

    /* Missing files. */
    cr_assert_not(parse_rel("missing.conf", &root, &err));
    cr_expect(strstr(err.text, "missing.conf") != NULL, "%s", err.text);
    write_file("miss.conf", "include nope.conf\n");
    cr_assert_not(parse_rel("miss.conf", &root, &err));
    cr_expect(strstr(err.text, "miss.conf:1:1: error parsing include file 'nope.conf', open") !=
                  NULL,
              "%s", err.text);

    /* Variables of the including file are not visible in the included one (as in nats-server). */
    write_file("vars.conf", "v: 1\ninclude sub/usesvar.conf\n");
    write_file("sub/usesvar.conf", "w: $v_not_here\n");
    cr_assert_not(parse_rel("vars.conf", &root, &err));
    cr_expect(strstr(err.text, "variable reference for 'v_not_here'") != NULL, "%s", err.text);
}

/* ---- realistic configurations -------------------------------------------------------------- */

static const char realistic[] =
    "# A realistic server configuration.\n"
    "server_name: n1\n"
    "listen: 0.0.0.0:4222\n"
    "http: 8222\n"
    "max_payload: 1MB\n"
    "ping_interval: \"2m\"\n"
    "write_deadline: 10s\n"
    "debug: false; trace: false\n"
    "\n"
    "tls {\n"
    "  cert_file: \"./certs/server.pem\"\n"
    "  key_file:  \"./certs/key.pem\"\n"
    "  ca_file:   certs/ca.pem\n"
    "  verify:    true\n"
    "  timeout:   2.5\n"
    "}\n"
    "\n"
    "cluster {\n"
    "  name: c1\n"
    "  listen: 0.0.0.0:6222\n"
    "  authorization { user: route, password: $ROUTE_PASS_LOCAL, timeout: 0.5 }\n"
    "  routes = [\n"
    "    nats-route://route:pw@n2:6222\n"
    "    nats-route://route:pw@n3:6222\n"
    "  ]\n"
    "}\n"
    "\n"
    "ROUTE_PASS_LOCAL: unused\n"
    "\n"
    "jetstream {\n"
    "  store_dir: '/var/lib/nats'\n"
    "  max_mem: 1G\n"
    "  max_file: 10GiB\n"
    "  domain: hub\n"
    "}\n"
    "\n"
    "accounts {\n"
    "  SYS: { users: [ { user: sys, password: "
    "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG } ] }\n"
    "  A: {\n"
    "    jetstream: enabled\n"
    "    users: [\n"
    "      { user: a, password: a, permissions: { publish: [\"foo.>\", \"_INBOX.>\"], subscribe: "
    "\">\" } }\n"
    "    ]\n"
    "    exports: [ { stream: \"events.>\" }, { service: \"svc.req\", response: singleton } ]\n"
    "  }\n"
    "  B: { users: [ {user: b, password: b} ], imports: [ { stream: { account: A, subject: "
    "\"events.>\" }, prefix: ext } ] }\n"
    "}\n"
    "system_account: SYS\n"
    "\n"
    "leafnodes {\n"
    "  port: 7422\n"
    "  remotes = [\n"
    "    { url: \"nats-leaf://hub:7422\", account: A, credentials: \"/etc/a.creds\" },\n"
    "    { urls: [\"nats-leaf://h1:7422\", \"nats-leaf://h2:7422\"] }\n"
    "  ]\n"
    "}\n"
    "authorization {\n"
    "  timeout: 1\n"
    "  ADMIN = { publish = \">\", subscribe = \">\" }\n"
    "  users = [ { user: admin, password: x, permissions: $ADMIN } ]\n"
    "}\n"
    "expires: 2030-01-01T00:00:00Z\n";

Test(cfg, realistic_config)
{
    nd_cfg_node_t *root;
    nd_cfg_err_t err;
    cr_assert(nd_cfg_parse_string(realistic, "nats.conf", &root, &err), "%s", err.text);
    cr_expect_eq(root->u.map.n, 17);
    cr_expect_str_eq(nd_cfg_get(root, "listen")->u.str.s, "0.0.0.0:4222");
    cr_expect_eq(nd_cfg_get(root, "http")->u.i, 8222);
    cr_expect_eq(nd_cfg_get(root, "max_payload")->u.i, 1048576);
    cr_expect_str_eq(nd_cfg_get(root, "ping_interval")->u.str.s, "2m");
    cr_expect_str_eq(nd_cfg_get(root, "write_deadline")->u.str.s, "10s");
    cr_expect_eq(nd_cfg_get(root, "trace")->type, ND_CFG_BOOL);

    nd_cfg_node_t *tls = nd_cfg_get(root, "tls");
    cr_assert_not_null(tls);
    cr_expect_str_eq(nd_cfg_get(tls, "ca_file")->u.str.s, "certs/ca.pem");
    cr_expect(nd_cfg_get(tls, "verify")->u.b);
    cr_expect_float_eq(nd_cfg_get(tls, "timeout")->u.f, 2.5, 1e-9);

    nd_cfg_node_t *cl = nd_cfg_get(root, "cluster");
    sb_t b = {.len = 0};
    dump(&b, nd_cfg_get(cl, "authorization"));
    /* ROUTE_PASS_LOCAL is defined after its use, so it comes from... nowhere: see below. */
    cr_expect_str_eq(b.s, "{user=\"route\",password=\"pw-from-env\",timeout=0.5f}");
    cr_expect_eq(nd_cfg_get(cl, "routes")->u.arr.n, 2);
    cr_expect_str_eq(nd_cfg_get(cl, "routes")->u.arr.v[1]->u.str.s,
                     "nats-route://route:pw@n3:6222");

    nd_cfg_node_t *js = nd_cfg_get(root, "jetstream");
    cr_expect_eq(nd_cfg_get(js, "max_mem")->u.i, 1000000000);
    cr_expect_eq(nd_cfg_get(js, "max_file")->u.i, 10LL * 1024 * 1024 * 1024);
    cr_expect_str_eq(nd_cfg_get(js, "store_dir")->u.str.s, "/var/lib/nats");

    nd_cfg_node_t *acc = nd_cfg_get(root, "accounts");
    cr_expect_eq(acc->u.map.n, 3);
    nd_cfg_node_t *sysu = nd_cfg_get(nd_cfg_get(acc, "SYS"), "users")->u.arr.v[0];
    cr_expect_str_eq(nd_cfg_get(sysu, "password")->u.str.s,
                     "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG");
    b.len = 0;
    dump(&b, nd_cfg_get(acc, "A"));
    cr_expect_str_eq(
        b.s,
        "{jetstream=\"enabled\",users=[{user=\"a\",password=\"a\",permissions={publish=[\"foo.>\","
        "\"_INBOX.>\"],subscribe=\">\"}}],exports=[{stream=\"events.>\"},{service=\"svc.req\","
        "response=\"singleton\"}]}");
    b.len = 0;
    dump(&b, nd_cfg_get(nd_cfg_get(acc, "b"), "imports"));
    cr_expect_str_eq(b.s, "[{stream={account=\"A\",subject=\"events.>\"},prefix=\"ext\"}]");

    nd_cfg_node_t *remotes = nd_cfg_get(nd_cfg_get(root, "leafnodes"), "remotes");
    cr_assert_eq(remotes->type, ND_CFG_ARRAY);
    cr_expect_eq(remotes->u.arr.n, 2);
    cr_expect_eq(nd_cfg_get(remotes->u.arr.v[1], "urls")->u.arr.n, 2);

    nd_cfg_node_t *auth = nd_cfg_get(root, "authorization");
    b.len = 0;
    dump(&b, nd_cfg_get(auth, "users"));
    cr_expect_str_eq(
        b.s, "[{user=\"admin\",password=\"x\",permissions={publish=\">\",subscribe=\">\"}}]");
    cr_expect(nd_cfg_map_entry(auth, "ADMIN")->used_as_var);
    cr_expect_eq(nd_cfg_get(root, "expires")->type, ND_CFG_DATETIME);
    cr_expect_eq(nd_cfg_get(root, "expires")->u.i, 1893456000);
    nd_cfg_free(root);
}

/* The realistic config's cluster password refers to a variable defined later in the file, so it
 * resolves from the environment, which this constructor sets before any test runs. */
__attribute__((constructor)) static void
set_route_env(void)
{
    setenv("ROUTE_PASS_LOCAL", "pw-from-env", 1);
}
