/* Subject rules: validation, literals, token counts, matching and subsets (tables). */
#include <criterion/criterion.h>
#include <string.h>

#include "subj/subject.h"

typedef struct {
    const char *s;
    bool pub; /* valid literal (publish) subject */
    bool sub; /* valid subscribe subject */
} valid_case_t;

static const valid_case_t valid_cases[] = {
    /* plain literals */
    {"foo", true, true},
    {"foo.bar", true, true},
    {"foo.bar.baz.qux.a.b.c.d.e.f.g", true, true},
    {"a", true, true},
    {"$SYS.REQ.SERVER.PING", true, true},
    {"_INBOX.abc123.1", true, true},
    {"foo-bar_baz", true, true},
    {"FOO.Bar.123", true, true},
    {"\xc3\xa9t\xc3\xa9.unicode", true, true},
    /* wildcards as whole tokens */
    {"*", false, true},
    {">", false, true},
    {"foo.*", false, true},
    {"*.bar", false, true},
    {"foo.*.baz", false, true},
    {"foo.>", false, true},
    {"*.>", false, true},
    {"*.*.*", false, true},
    {"foo.*.>", false, true},
    /* `>` only as the last token */
    {">.foo", false, false},
    {"foo.>.bar", false, false},
    {">.>", false, false},
    {"foo.>.*", false, false},
    /* wildcard characters inside tokens are literal */
    {"foo*", true, true},
    {"*foo", true, true},
    {"foo>", true, true},
    {">foo", true, true},
    {"foo.bar*", true, true},
    {"foo.**", true, true},
    {"foo.>>", true, true},
    {"foo.*>", true, true},
    {"a*b.c>d", true, true},
    {"foo.>bar.baz", true, true},
    /* empty tokens */
    {"", false, false},
    {".", false, false},
    {"..", false, false},
    {".foo", false, false},
    {"foo.", false, false},
    {"foo..bar", false, false},
    {"foo.bar.", false, false},
    {".*", false, false},
    {"*.", false, false},
    {">.", false, false},
    {"foo.*.", false, false},
    /* whitespace anywhere */
    {" ", false, false},
    {"foo bar", false, false},
    {"foo\tbar", false, false},
    {"foo\rbar", false, false},
    {"foo\nbar", false, false},
    {"foo\fbar", false, false},
    {" foo", false, false},
    {"foo ", false, false},
    {"foo. .bar", false, false},
    {"foo.\t", false, false},
    {"* ", false, false},
    {"> ", false, false},
    {"foo.* ", false, false},
    {"foo.\n.>", false, false},
    /* other control characters and punctuation are allowed (nats-server does the same) */
    {"foo\vbar", true, true},
    {"foo/bar:baz", true, true},
    {"foo,bar;baz", true, true},
};

Test(subj, valid_pub_and_sub_table)
{
    for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
        const valid_case_t *c = &valid_cases[i];
        size_t n = strlen(c->s);
        cr_expect_eq(nd_subj_valid_pub(c->s, n), c->pub, "pub(\"%s\") should be %d", c->s, c->pub);
        cr_expect_eq(nd_subj_valid_sub(c->s, n), c->sub, "sub(\"%s\") should be %d", c->s, c->sub);
        /* A valid subject is literal exactly when it is a valid publish subject. */
        if (c->sub)
            cr_expect_eq(nd_subj_is_literal(c->s, n), c->pub, "literal(\"%s\")", c->s);
    }
}

Test(subj, lengths_not_nul_terminated)
{
    const char buf[] = "foo.bar.*";
    cr_expect(nd_subj_valid_pub(buf, 7));  /* "foo.bar" */
    cr_expect(!nd_subj_valid_pub(buf, 8)); /* "foo.bar." */
    cr_expect(!nd_subj_valid_pub(buf, 9)); /* "foo.bar.*" */
    cr_expect(nd_subj_valid_sub(buf, 9));
    cr_expect(!nd_subj_valid_sub(buf, 0));
    /* An embedded NUL is just a byte: lengths rule. */
    cr_expect(nd_subj_valid_pub("a\0b", 3));
}

Test(subj, queue_names)
{
    static const struct {
        const char *q;
        bool ok;
    } cases[] = {
        {"workers", true}, {"q1", true},    {"a.b.c", true}, {"*", true},    {">", true},
        {"_sys_", true},   {"x-y_z", true}, {"", false},     {" ", false},   {"a b", false},
        {"a\tb", false},   {"a\r", false},  {"\nq", false},  {"q\f", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(nd_subj_valid_queue(cases[i].q, strlen(cases[i].q)), cases[i].ok,
                     "queue \"%s\"", cases[i].q);
}

Test(subj, literal_detection)
{
    cr_expect(nd_subj_is_literal("foo.bar", 7));
    cr_expect(nd_subj_is_literal("foo*.bar>", 9));
    cr_expect(!nd_subj_is_literal("*", 1));
    cr_expect(!nd_subj_is_literal(">", 1));
    cr_expect(!nd_subj_is_literal("a.*.b", 5));
    cr_expect(!nd_subj_is_literal("a.>", 3));
    cr_expect(!nd_subj_is_literal("*.a", 3));
    cr_expect(nd_subj_is_literal("", 0));
}

Test(subj, token_count)
{
    static const struct {
        const char *s;
        size_t n;
    } cases[] = {
        {"", 0},    {"a", 1}, {"a.b", 2},  {"a.b.c", 3},
        {"*.>", 2}, {".", 2}, {"a..b", 3}, {"foo.bar.baz.qux", 4},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_eq(nd_subj_tokens(cases[i].s, strlen(cases[i].s)), cases[i].n, "tokens(%s)",
                     cases[i].s);
}

typedef struct {
    const char *pattern;
    const char *subject;
    bool match;
} match_case_t;

static const match_case_t match_cases[] = {
    {"foo", "foo", true},
    {"foo", "bar", false},
    {"foo", "foo.bar", false},
    {"foo.bar", "foo", false},
    {"foo.bar", "foo.bar", true},
    {"foo.bar", "foo.baz", false},
    {"foo.bar", "foo.barr", false},
    {"foo.barr", "foo.bar", false},
    /* `*`: exactly one token */
    {"*", "foo", true},
    {"*", "foo.bar", false},
    {"foo.*", "foo.bar", true},
    {"foo.*", "foo", false},
    {"foo.*", "foo.bar.baz", false},
    {"*.bar", "foo.bar", true},
    {"*.bar", "foo.baz", false},
    {"foo.*.baz", "foo.bar.baz", true},
    {"foo.*.baz", "foo.bar.bax", false},
    {"*.*", "a.b", true},
    {"*.*", "a", false},
    {"*.*", "a.b.c", false},
    /* `>`: one or more tokens, never zero */
    {">", "foo", true},
    {">", "foo.bar.baz", true},
    {"foo.>", "foo.bar", true},
    {"foo.>", "foo.bar.baz", true},
    {"foo.>", "foo", false},
    {"foo.>", "bar.baz", false},
    {"foo.bar.>", "foo.bar", false},
    {"*.>", "foo", false},
    {"*.>", "foo.bar", true},
    {"foo.*.>", "foo.bar.baz.qux", true},
    {"foo.*.>", "foo.bar", false},
    /* literal tokens with wildcard characters */
    {"foo*", "foo*", true},
    {"foo*", "foox", false},
    {"foo*.bar", "foo*.bar", true},
    {"foo>", "foo.bar", false},
    {"foo.>x", "foo.bar", false},
    /* subject tokens are literal, even `*` and `>` */
    {"foo.*", "foo.*", true},
    {"foo.bar", "foo.*", false},
    {"foo.>", "foo.>", true},
    /* empty tokens in the subject match nothing, even `>` */
    {">", "", false},
    {">", "foo.", false},
    {">", ".foo", false},
    {">", "foo..bar", false},
    {"foo.>", "foo.bar.", false},
    {"foo.>", "foo..bar", false},
    {"*", "", false},
    {"foo.*", "foo.", false},
    {"", "", false},
    {"", "foo", false},
};

Test(subj, match_table)
{
    for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
        const match_case_t *c = &match_cases[i];
        cr_expect_eq(nd_subj_match(c->pattern, strlen(c->pattern), c->subject, strlen(c->subject)),
                     c->match, "match(%s, %s) should be %d", c->pattern, c->subject, c->match);
    }
}

typedef struct {
    const char *sub;
    const char *super;
    bool subset;
} subset_case_t;

static const subset_case_t subset_cases[] = {
    {"foo.bar", "foo.bar", true},
    {"foo.bar", "foo.*", true},
    {"foo.bar", "*.bar", true},
    {"foo.bar", "*.*", true},
    {"foo.bar", "foo.>", true},
    {"foo.bar", ">", true},
    {"foo.bar", "foo", false},
    {"foo.bar", "foo.bar.baz", false},
    {"foo.bar", "foo.baz", false},
    {"foo.bar", "*", false},
    {"foo.*", "foo.*", true},
    {"foo.*", "foo.>", true},
    {"foo.*", "*.*", true},
    {"foo.*", ">", true},
    {"foo.*", "*.>", true},
    {"foo.*", "foo.bar", false},
    {"foo.*", "*", false},
    {"foo.*", "foo.*.baz", false},
    {"foo.>", "foo.>", true},
    {"foo.>", ">", true},
    {"foo.>", "*.>", true},
    {"foo.>", "foo.*", false},
    {"foo.>", "foo.bar", false},
    {"foo.>", "foo.*.>", false},
    {">", ">", true},
    {">", "*", false},
    {">", "*.>", false},
    {">", "foo.>", false},
    {"*", "*", true},
    {"*", ">", true},
    {"*", "foo", false},
    {"*.*", ">", true},
    {"*.*", "*.>", true},
    {"*.*", "*", false},
    {"foo", "foo.>", false},
    {"foo.bar.baz", "foo.*.>", true},
    {"foo.bar.baz", "foo.*.*", true},
    {"foo.*.baz", "foo.bar.>", false},
};

Test(subj, subset_table)
{
    for (size_t i = 0; i < sizeof(subset_cases) / sizeof(subset_cases[0]); i++) {
        const subset_case_t *c = &subset_cases[i];
        cr_expect_eq(nd_subj_subset(c->sub, strlen(c->sub), c->super, strlen(c->super)), c->subset,
                     "subset(%s, %s) should be %d", c->sub, c->super, c->subset);
    }
}

/* A literal subject is a subset of a pattern exactly when the pattern matches it. */
Test(subj, subset_agrees_with_match_for_literals)
{
    static const char *pats[] = {"foo",   "foo.bar", "*",       "*.*",  ">",
                                 "foo.>", "*.bar",   "foo.*.>", "a.b.c"};
    static const char *subs[] = {"foo", "foo.bar", "bar", "a.b.c", "foo.bar.baz", "x.bar"};
    for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++)
        for (size_t j = 0; j < sizeof(subs) / sizeof(subs[0]); j++)
            cr_expect_eq(nd_subj_subset(subs[j], strlen(subs[j]), pats[i], strlen(pats[i])),
                         nd_subj_match(pats[i], strlen(pats[i]), subs[j], strlen(subs[j])),
                         "%s vs %s", subs[j], pats[i]);
}
