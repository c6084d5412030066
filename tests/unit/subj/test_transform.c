/* Subject transforms and mapping tables (src/subj/transform.h), table driven.
 *
 * Expected outputs: the "Go" tables are nats-server's own test data
 * (server/subject_transform_test.go, server/sublist_test.go TestValidateDestinationSubject,
 * server/accounts_test.go); the partition table was computed with an independent FNV-1a 32 (and
 * agrees with nats-server's published values foo->3, baz->0, qux->9, "foo.bar"->6 for n = 10); the
 * function tables were computed from a transliteration of TransformTokenizedSubject. Error texts
 * are nats-server 2.11's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cfg/opts.h"
#include "subj/transform.h"

typedef struct {
    const char *src, *dest, *subj, *want;
} match_case_t;

static void
check_match(const match_case_t *c, nd_xf_mode_t mode)
{
    nd_xf_t *xf = NULL;
    char err[256], out[256];
    nd_xf_err_t rc = nd_xf_new(c->src, c->dest, mode, &xf, err, sizeof err);
    cr_assert_eq(rc, ND_XF_OK, "%s -> %s: %s", c->src, c->dest, err);
    cr_assert_not_null(xf, "%s -> %s", c->src, c->dest);
    size_t n = 0;
    nd_xf_match_t m = nd_xf_match(xf, c->subj, strlen(c->subj), out, sizeof out, &n);
    cr_assert_eq(m, ND_XF_MATCHED, "%s -> %s on %s", c->src, c->dest, c->subj);
    cr_assert_str_eq(out, c->want, "%s -> %s on %s", c->src, c->dest, c->subj);
    cr_assert_eq(n, strlen(c->want));
    /* TransformSubject gives the same for a matching subject. */
    n = nd_xf_apply(xf, c->subj, strlen(c->subj), out, sizeof out);
    cr_assert_str_eq(out, c->want);
    nd_xf_free(xf);
}

/* server/subject_transform_test.go TestSubjectTransforms shouldMatch (2.11). */
static const match_case_t go_match[] = {
    {"", "prefix.>", "foo", "prefix.foo"},
    {"foo", "bar", "foo", "bar"},
    {"foo.*.bar.*.baz", "req.$2.$1", "foo.A.bar.B.baz", "req.B.A"},
    {"foo.*.bar.*.baz", "req.{{wildcard(2)}}.{{wildcard(1)}}", "foo.A.bar.B.baz", "req.B.A"},
    {"baz.>", "my.pre.>", "baz.1.2.3", "my.pre.1.2.3"},
    {"baz.>", "foo.bar.>", "baz.1.2.3", "foo.bar.1.2.3"},
    {"*", "foo.bar.$1", "foo", "foo.bar.foo"},
    {"*", "{{splitfromleft(1,3)}}", "12345", "123.45"},
    {"*", "{{SplitFromRight(1,3)}}", "12345", "12.345"},
    {"*", "{{SliceFromLeft(1,3)}}", "1234567890", "123.456.789.0"},
    {"*", "{{SliceFromRight(1,3)}}", "1234567890", "1.234.567.890"},
    {"*", "{{split(1,-)}}", "-abc-def--ghi-", "abc.def.ghi"},
    {"*", "{{split(1,-)}}", "abc-def--ghi-", "abc.def.ghi"},
    {"*.*", "{{split(2,-)}}.{{splitfromleft(1,2)}}", "foo.-abc-def--ghij-", "abc.def.ghij.fo.o"},
    {"*", "{{right(1,1)}}", "1234", "4"},
    {"*", "{{right(1,3)}}", "1234", "234"},
    {"*", "{{right(1,6)}}", "1234", "1234"},
    {"*", "{{left(1,1)}}", "1234", "1"},
    {"*", "{{left(1,3)}}", "1234", "123"},
    {"*", "{{left(1,6)}}", "1234", "1234"},
    /* HEAD's partition values with explicit token lists (2.11 syntax) */
    {"*", "bar.{{partition(10, 1)}}", "foo", "bar.3"},
    {"*", "bar.{{partition(10,1)}}", "baz", "bar.0"},
    {"*", "bar.{{partition(10,1)}}", "qux", "bar.9"},
    {"*", "bar.{{partition(10, 0)}}", "foo", "bar.3"},
    /* accounts_test.go TestAccountWildcardRouteMapping /
       TestGlobalAccountRouteMappingsConfiguration */
    {"foo.*.*", "bar.$2.$1", "foo.1.2", "bar.2.1"},
    {"bar.*.>", "baz.$1.>", "bar.1.2.3", "baz.1.2.3"},
    {"bar.*.*", "RAB.$2.$1", "bar.11.22", "RAB.22.11"},
    {"foo.*", "bar.v1.$1", "foo.x", "bar.v1.x"},
    /* more shapes */
    {">", ">", "a.b.c", "a.b.c"},
    {"", ">", "a", "a"},
    {"foo.>", ">", "foo.a.b", "a.b"},
    {"foo.>", "bar.>", "foo.a", "bar.a"},
    {"*.>", "x.$1.>", "a.b.c", "x.a.b.c"},
    {"*.*.>", "x.$2.y.$1.>", "a.b.c.d", "x.b.y.a.c.d"},
    {"foo.*.>", "bar.{{wildcard(1)}}.>", "foo.q.r", "bar.q.r"},
    {"foo.*.bar", "bar.{{wildcard(1)}}.foo", "foo.q.bar", "bar.q.foo"},
    {"foo.bar.>", "foo.bar.foo.>", "foo.bar.1", "foo.bar.foo.1"},
    {"*", "{{ wildcard(1) }}", "t", "t"},
    {"*", "{{wildcard( 1 )}}", "t", "t"},
    {"*", "{{ Wildcard ( 1 ) }}", "t", "t"},
    {"*", "{{wildcard(+1)}}", "t", "t"},
    {"*", "$01", "t", "t"},
    {"*", "$+1", "t", "t"},
    {"a.*", "$0", "a.t", "a"}, /* index 0 reads source token 0 (Go map default) */
    {"a.*", "$-1", "a.t", "a"},
    {"a.*", "{{wildcard(0)}}.$1", "a.t", "a.t"},
    {"*", "$foo.$1", "t", "$foo.t"}, /* not a number: a literal token */
    {"*", "$.$1", "t", "$.t"},
    {"*", "{{}}.$1", "t", "{{}}.t"}, /* too short to be a function */
    {"*", "{x}.$1", "t", "{x}.t"},
    {"*.*", "$1.$1.$2", "a.b", "a.a.b"},
    {"*.*.*", "$3", "a.b.c", "c"},         /* unused wildcards are allowed (2.10+) */
    {"*", "{{wildcard(1)}}x}}", "t", "t"}, /* nats-server's expressions are not anchored */
    {"*", "{{ x {{wildcard(1)}} }}", "t", "t"},
    {"*", "{{partition(3,1)}}.{{partition(3,1)}}", "foo", "0.0"},
    {"*", "{{SPLIT(1,-)}}x", "a-b", "{{SPLIT(1,-)}}x"}, /* not ending in }}: literal */
    {"foo", "bar.baz", "foo", "bar.baz"},
};

Test(xf, go_should_match)
{
    for (size_t i = 0; i < sizeof go_match / sizeof go_match[0]; i++)
        check_match(&go_match[i], ND_XF_MODE_TRANSFORM);
}

/* Every function over short tokens and all the size edge cases. */
static const match_case_t fn_cases[] = {
    {"x.*", "{{splitFromLeft(1,-1)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,0)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,1)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,2)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,3)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,4)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,6)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,7)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,10)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,11)}}", "x.a", "a"},
    {"x.*", "{{splitFromLeft(1,-1)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,1)}}", "x.ab", "a.b"},
    {"x.*", "{{splitFromLeft(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,3)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,4)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,6)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,7)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{splitFromLeft(1,-1)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,0)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,1)}}", "x.abc", "a.bc"},
    {"x.*", "{{splitFromLeft(1,2)}}", "x.abc", "ab.c"},
    {"x.*", "{{splitFromLeft(1,3)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,4)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,6)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,7)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,10)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,11)}}", "x.abc", "abc"},
    {"x.*", "{{splitFromLeft(1,-1)}}", "x.1234567", "1234567"},
    {"x.*", "{{splitFromLeft(1,0)}}", "x.1234567", "1234567"},
    {"x.*", "{{splitFromLeft(1,1)}}", "x.1234567", "1.234567"},
    {"x.*", "{{splitFromLeft(1,2)}}", "x.1234567", "12.34567"},
    {"x.*", "{{splitFromLeft(1,3)}}", "x.1234567", "123.4567"},
    {"x.*", "{{splitFromLeft(1,4)}}", "x.1234567", "1234.567"},
    {"x.*", "{{splitFromLeft(1,6)}}", "x.1234567", "123456.7"},
    {"x.*", "{{splitFromLeft(1,7)}}", "x.1234567", "1234567"},
    {"x.*", "{{splitFromLeft(1,10)}}", "x.1234567", "1234567"},
    {"x.*", "{{splitFromLeft(1,11)}}", "x.1234567", "1234567"},
    {"x.*", "{{splitFromLeft(1,-1)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{splitFromLeft(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{splitFromLeft(1,1)}}", "x.1234567890", "1.234567890"},
    {"x.*", "{{splitFromLeft(1,2)}}", "x.1234567890", "12.34567890"},
    {"x.*", "{{splitFromLeft(1,3)}}", "x.1234567890", "123.4567890"},
    {"x.*", "{{splitFromLeft(1,4)}}", "x.1234567890", "1234.567890"},
    {"x.*", "{{splitFromLeft(1,6)}}", "x.1234567890", "123456.7890"},
    {"x.*", "{{splitFromLeft(1,7)}}", "x.1234567890", "1234567.890"},
    {"x.*", "{{splitFromLeft(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{splitFromLeft(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SplitFromRight(1,-1)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,0)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,1)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,2)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,3)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,4)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,6)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,7)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,10)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,11)}}", "x.a", "a"},
    {"x.*", "{{SplitFromRight(1,-1)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,1)}}", "x.ab", "a.b"},
    {"x.*", "{{SplitFromRight(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,3)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,4)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,6)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,7)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{SplitFromRight(1,-1)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,0)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,1)}}", "x.abc", "ab.c"},
    {"x.*", "{{SplitFromRight(1,2)}}", "x.abc", "a.bc"},
    {"x.*", "{{SplitFromRight(1,3)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,4)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,6)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,7)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,10)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,11)}}", "x.abc", "abc"},
    {"x.*", "{{SplitFromRight(1,-1)}}", "x.1234567", "1234567"},
    {"x.*", "{{SplitFromRight(1,0)}}", "x.1234567", "1234567"},
    {"x.*", "{{SplitFromRight(1,1)}}", "x.1234567", "123456.7"},
    {"x.*", "{{SplitFromRight(1,2)}}", "x.1234567", "12345.67"},
    {"x.*", "{{SplitFromRight(1,3)}}", "x.1234567", "1234.567"},
    {"x.*", "{{SplitFromRight(1,4)}}", "x.1234567", "123.4567"},
    {"x.*", "{{SplitFromRight(1,6)}}", "x.1234567", "1.234567"},
    {"x.*", "{{SplitFromRight(1,7)}}", "x.1234567", "1234567"},
    {"x.*", "{{SplitFromRight(1,10)}}", "x.1234567", "1234567"},
    {"x.*", "{{SplitFromRight(1,11)}}", "x.1234567", "1234567"},
    {"x.*", "{{SplitFromRight(1,-1)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SplitFromRight(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SplitFromRight(1,1)}}", "x.1234567890", "123456789.0"},
    {"x.*", "{{SplitFromRight(1,2)}}", "x.1234567890", "12345678.90"},
    {"x.*", "{{SplitFromRight(1,3)}}", "x.1234567890", "1234567.890"},
    {"x.*", "{{SplitFromRight(1,4)}}", "x.1234567890", "123456.7890"},
    {"x.*", "{{SplitFromRight(1,6)}}", "x.1234567890", "1234.567890"},
    {"x.*", "{{SplitFromRight(1,7)}}", "x.1234567890", "123.4567890"},
    {"x.*", "{{SplitFromRight(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SplitFromRight(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SliceFromLeft(1,-1)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,0)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,1)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,2)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,3)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,4)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,6)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,7)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,10)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,11)}}", "x.a", "a"},
    {"x.*", "{{SliceFromLeft(1,-1)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,1)}}", "x.ab", "a.b"},
    {"x.*", "{{SliceFromLeft(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,3)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,4)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,6)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,7)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{SliceFromLeft(1,-1)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,0)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,1)}}", "x.abc", "a.b.c"},
    {"x.*", "{{SliceFromLeft(1,2)}}", "x.abc", "ab.c"},
    {"x.*", "{{SliceFromLeft(1,3)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,4)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,6)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,7)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,10)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,11)}}", "x.abc", "abc"},
    {"x.*", "{{SliceFromLeft(1,-1)}}", "x.1234567", "1234567"},
    {"x.*", "{{SliceFromLeft(1,0)}}", "x.1234567", "1234567"},
    {"x.*", "{{SliceFromLeft(1,1)}}", "x.1234567", "1.2.3.4.5.6.7"},
    {"x.*", "{{SliceFromLeft(1,2)}}", "x.1234567", "12.34.56.7"},
    {"x.*", "{{SliceFromLeft(1,3)}}", "x.1234567", "123.456.7"},
    {"x.*", "{{SliceFromLeft(1,4)}}", "x.1234567", "1234.567"},
    {"x.*", "{{SliceFromLeft(1,6)}}", "x.1234567", "123456.7"},
    {"x.*", "{{SliceFromLeft(1,7)}}", "x.1234567", "1234567"},
    {"x.*", "{{SliceFromLeft(1,10)}}", "x.1234567", "1234567"},
    {"x.*", "{{SliceFromLeft(1,11)}}", "x.1234567", "1234567"},
    {"x.*", "{{SliceFromLeft(1,-1)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SliceFromLeft(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SliceFromLeft(1,1)}}", "x.1234567890", "1.2.3.4.5.6.7.8.9.0"},
    {"x.*", "{{SliceFromLeft(1,2)}}", "x.1234567890", "12.34.56.78.90"},
    {"x.*", "{{SliceFromLeft(1,3)}}", "x.1234567890", "123.456.789.0"},
    {"x.*", "{{SliceFromLeft(1,4)}}", "x.1234567890", "1234.5678.90"},
    {"x.*", "{{SliceFromLeft(1,6)}}", "x.1234567890", "123456.7890"},
    {"x.*", "{{SliceFromLeft(1,7)}}", "x.1234567890", "1234567.890"},
    {"x.*", "{{SliceFromLeft(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{SliceFromLeft(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{sliceFromRight(1,-1)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,0)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,1)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,2)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,3)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,4)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,6)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,7)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,10)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,11)}}", "x.a", "a"},
    {"x.*", "{{sliceFromRight(1,-1)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,1)}}", "x.ab", "a.b"},
    {"x.*", "{{sliceFromRight(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,3)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,4)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,6)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,7)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{sliceFromRight(1,-1)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,0)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,1)}}", "x.abc", "a.b.c"},
    {"x.*", "{{sliceFromRight(1,2)}}", "x.abc", "a.bc"},
    {"x.*", "{{sliceFromRight(1,3)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,4)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,6)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,7)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,10)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,11)}}", "x.abc", "abc"},
    {"x.*", "{{sliceFromRight(1,-1)}}", "x.1234567", "1234567"},
    {"x.*", "{{sliceFromRight(1,0)}}", "x.1234567", "1234567"},
    {"x.*", "{{sliceFromRight(1,1)}}", "x.1234567", "1.2.3.4.5.6.7"},
    {"x.*", "{{sliceFromRight(1,2)}}", "x.1234567", "1.23.45.67"},
    {"x.*", "{{sliceFromRight(1,3)}}", "x.1234567", "1.234.567"},
    {"x.*", "{{sliceFromRight(1,4)}}", "x.1234567", "123.4567"},
    {"x.*", "{{sliceFromRight(1,6)}}", "x.1234567", "1.234567"},
    {"x.*", "{{sliceFromRight(1,7)}}", "x.1234567", "1234567"},
    {"x.*", "{{sliceFromRight(1,10)}}", "x.1234567", "1234567"},
    {"x.*", "{{sliceFromRight(1,11)}}", "x.1234567", "1234567"},
    {"x.*", "{{sliceFromRight(1,-1)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{sliceFromRight(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{sliceFromRight(1,1)}}", "x.1234567890", "1.2.3.4.5.6.7.8.9.0"},
    {"x.*", "{{sliceFromRight(1,2)}}", "x.1234567890", "12.34.56.78.90"},
    {"x.*", "{{sliceFromRight(1,3)}}", "x.1234567890", "1.234.567.890"},
    {"x.*", "{{sliceFromRight(1,4)}}", "x.1234567890", "12.3456.7890"},
    {"x.*", "{{sliceFromRight(1,6)}}", "x.1234567890", "1234.567890"},
    {"x.*", "{{sliceFromRight(1,7)}}", "x.1234567890", "123.4567890"},
    {"x.*", "{{sliceFromRight(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{sliceFromRight(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{left(1,-5)}}", "x.a", "a"},
    {"x.*", "{{left(1,0)}}", "x.a", "a"},
    {"x.*", "{{left(1,1)}}", "x.a", "a"},
    {"x.*", "{{left(1,2)}}", "x.a", "a"},
    {"x.*", "{{left(1,9)}}", "x.a", "a"},
    {"x.*", "{{left(1,10)}}", "x.a", "a"},
    {"x.*", "{{left(1,11)}}", "x.a", "a"},
    {"x.*", "{{left(1,-5)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,1)}}", "x.ab", "a"},
    {"x.*", "{{left(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,9)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{left(1,-5)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{left(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{left(1,1)}}", "x.1234567890", "1"},
    {"x.*", "{{left(1,2)}}", "x.1234567890", "12"},
    {"x.*", "{{left(1,9)}}", "x.1234567890", "123456789"},
    {"x.*", "{{left(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{left(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{Right(1,-5)}}", "x.a", "a"},
    {"x.*", "{{Right(1,0)}}", "x.a", "a"},
    {"x.*", "{{Right(1,1)}}", "x.a", "a"},
    {"x.*", "{{Right(1,2)}}", "x.a", "a"},
    {"x.*", "{{Right(1,9)}}", "x.a", "a"},
    {"x.*", "{{Right(1,10)}}", "x.a", "a"},
    {"x.*", "{{Right(1,11)}}", "x.a", "a"},
    {"x.*", "{{Right(1,-5)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,0)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,1)}}", "x.ab", "b"},
    {"x.*", "{{Right(1,2)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,9)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,10)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,11)}}", "x.ab", "ab"},
    {"x.*", "{{Right(1,-5)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{Right(1,0)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{Right(1,1)}}", "x.1234567890", "0"},
    {"x.*", "{{Right(1,2)}}", "x.1234567890", "90"},
    {"x.*", "{{Right(1,9)}}", "x.1234567890", "234567890"},
    {"x.*", "{{Right(1,10)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{Right(1,11)}}", "x.1234567890", "1234567890"},
    {"x.*", "{{split(1,-)}}", "x.a-b-c", "a.b.c"},
    {"x.*", "{{split(1,-)}}", "x.-a", "a"},
    {"x.*", "{{split(1,-)}}", "x.a-", "a"},
    {"x.*", "{{split(1,-)}}", "x.--a", ".a"},
    {"x.*", "{{split(1,-)}}", "x.a--b", "a.b"},
    {"x.*", "{{split(1,-)}}", "x.-", ""},
    {"x.*", "{{split(1,-)}}", "x.--", ""},
    {"x.*", "{{split(1,-)}}", "x.abc", "abc"},
    {"x.*", "{{split(1,XY)}}", "x.aXYbXYc", "a.b.c"},
    {"x.*", "{{split(1,XY)}}", "x.XYXYa", ".a"},
    {"x.*", "{{split(1,_)}}", "x.a__b", "a.b"},
    {"x.*", "{{split(1,)}}", "x.abc", "a.b.c"},
    {"x.*", "{{split(1,)}}", "x.a", "a"},
};

Test(xf, functions)
{
    for (size_t i = 0; i < sizeof fn_cases / sizeof fn_cases[0]; i++)
        check_match(&fn_cases[i], ND_XF_MODE_TRANSFORM);
}

/* partition(): FNV-1a 32 of the named tokens joined without separators, mod n. */
static const match_case_t part_cases[] = {
    {"*.*", "p.{{partition(2,1,2)}}", "Z.east", "p.0"},
    {"*.*", "p.{{partition(7,1,2)}}", "0.Z", "p.0"},
    {"*.*", "p.{{partition(3,1,2)}}", "foo.foo", "p.2"},
    {"*.*", "p.{{partition(100,1,2)}}", "west.east", "p.27"},
    {"*.*", "p.{{partition(10,1,2)}}", "Z.us-east-1", "p.1"},
    {"*.*", "p.{{partition(1,1,2)}}", "customer-42.Z", "p.0"},
    {"*.*", "p.{{partition(5,1,2)}}", "ORDERS.0", "p.1"},
    {"*.*", "p.{{partition(16,1,2)}}", "us-east-1.user@example", "p.2"},
    {"*.*", "p.{{partition(1000,1,2)}}", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.12345", "p.520"},
    {"*.*", "p.{{partition(5,1,2)}}", "west.bar", "p.4"},
    {"*.*", "p.{{partition(7,1,2)}}", "east.12345", "p.2"},
    {"*.*", "p.{{partition(65536,1,2)}}", "west.Z", "p.27420"},
    {"*.*", "p.{{partition(16,1,2)}}", "west.bar", "p.7"},
    {"*.*", "p.{{partition(10,1,2)}}", "customer-42.bar", "p.1"},
    {"*.*", "p.{{partition(7,1,2)}}", "Z.a", "p.3"},
    {"*.*", "p.{{partition(2,1,2)}}", "0.us-east-1", "p.1"},
    {"*.*", "p.{{partition(7,1,2)}}", "Z.qux", "p.6"},
    {"*.*", "p.{{partition(65536,1,2)}}", "bar.foo", "p.65386"},
    {"*.*", "p.{{partition(10,1,2)}}", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.qux", "p.5"},
    {"*.*", "p.{{partition(5,1,2)}}", "0.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "p.2"},
    {"*.*", "p.{{partition(1000,1,2)}}", "12345.east", "p.597"},
    {"*.*", "p.{{partition(10,1,2)}}", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.foo", "p.9"},
    {"*.*", "p.{{partition(16,1,2)}}", "qux.east", "p.0"},
    {"*.*", "p.{{partition(65536,1,2)}}", "ORDERS.customer-42", "p.30693"},
    {"*.*", "p.{{partition(1000,1,2)}}", "bar.bar", "p.251"},
    {"*.*", "p.{{partition(1000,1,2)}}", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.west", "p.734"},
    {"*.*", "p.{{partition(65536,1,2)}}", "qux.bar", "p.49254"},
    {"*.*", "p.{{partition(7,1,2)}}", "west.ORDERS", "p.3"},
    {"*.*", "p.{{partition(16,1,2)}}", "us-east-1.qux", "p.7"},
    {"*.*", "p.{{partition(3,1,2)}}", "0.qux", "p.2"},
    {"*.*", "p.{{partition(1000,1,2)}}", "east.qux", "p.258"},
    {"*.*", "p.{{partition(3,1,2)}}", "foo.qux", "p.2"},
    {"*.*", "p.{{partition(10,1,2)}}", "foo.west", "p.2"},
    {"*.*", "p.{{partition(65536,1,2)}}", "12345.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "p.2456"},
    {"*.*", "p.{{partition(10,1,2)}}", "east.ORDERS", "p.5"},
    {"*.*", "p.{{partition(16,1,2)}}", "a.12345", "p.15"},
    {"*.*", "p.{{partition(100,1,2)}}", "ORDERS.baz", "p.13"},
    {"*.*", "p.{{partition(16,1,2)}}", "foo.baz", "p.0"},
    {"*.*", "p.{{partition(16,1,2)}}", "east.us-east-1", "p.12"},
    {"*.*", "p.{{partition(5,1,2)}}", "bar.0", "p.4"},
    {"*.*", "p.{{partition(65536,1,2)}}", "Z.bar", "p.46354"},
    {"*.*", "p.{{partition(100,1,2)}}", "west.user@example", "p.23"},
    {"*.*", "p.{{partition(16,1,2)}}", "0.Z", "p.15"},
    {"*.*", "p.{{partition(1000,1,2)}}", "Z.bar", "p.306"},
    {"*.*", "p.{{partition(7,1,2)}}", "a.0", "p.4"},
    {"*.*", "p.{{partition(16,1,2)}}", "us-east-1.user@example", "p.2"},
    {"*.*", "p.{{partition(7,1,2)}}", "bar.qux", "p.5"},
    {"*.*", "p.{{partition(3,1,2)}}", "0.0", "p.2"},
    {"*.*", "p.{{partition(1000,1,2)}}", "foo.foo", "p.9"},
    {"*.*", "p.{{partition(65536,1,2)}}", "bar.ORDERS", "p.10291"},
    {"*.*", "p.{{partition(5,1,2)}}", "Z.customer-42", "p.4"},
    {"*.*", "p.{{partition(100,1,2)}}", "ORDERS.12345", "p.63"},
    {"*.*", "p.{{partition(1000,1,2)}}", "customer-42.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "p.998"},
    {"*.*", "p.{{partition(16,1,2)}}", "ORDERS.a", "p.7"},
    {"*.*", "p.{{partition(7,1,2)}}", "east.0", "p.0"},
    {"*.*", "p.{{partition(100,1,2)}}", "east.0", "p.44"},
    {"*.*", "p.{{partition(16,1,2)}}", "0.baz", "p.8"},
    {"*.*", "p.{{partition(100,1,2)}}", "0.ORDERS", "p.62"},
    {"*.*", "p.{{partition(3,1,2)}}", "customer-42.customer-42", "p.0"},
    {"*.*", "p.{{partition(65536,1,2)}}",
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "p.55557"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.a.us-east-1", "o.7.a"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.ORDERS.customer-42", "o.62.ORDERS"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.a.0", "o.47.a"},
    {"orders.*.*", "o.{{partition(10,2)}}.$1", "orders.Z.baz", "o.0.Z"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.12345.foo", "o.23.12345"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.0.foo", "o.0.0"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.foo.east", "o.60.foo"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.bar.west", "o.46.bar"},
    {"orders.*.*", "o.{{partition(10,2)}}.$1", "orders.customer-42.customer-42", "o.6.customer-42"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.user@example.east", "o.2.user@example"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.qux",
     "o.0.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.ORDERS.east", "o.2.ORDERS"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.a.Z", "o.13.a"},
    {"orders.*.*", "o.{{partition(10,2)}}.$1", "orders.0.bar", "o.2.0"},
    {"orders.*.*", "o.{{partition(10,2)}}.$1", "orders.qux.bar", "o.2.qux"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.customer-42.baz", "o.2.customer-42"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.west.qux", "o.9.west"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.customer-42.baz", "o.1.customer-42"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.west.west", "o.0.west"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.us-east-1.bar", "o.2.us-east-1"},
    {"orders.*.*", "o.{{partition(10,2)}}.$1", "orders.west.0", "o.3.west"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1",
     "orders.us-east-1.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "o.2.us-east-1"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.west.foo", "o.23.west"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.12345.baz", "o.2.12345"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1",
     "orders.user@example.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "o.2.user@example"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.baz.east", "o.60.baz"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1",
     "orders.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.ORDERS",
     "o.44.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.0.0", "o.47.0"},
    {"orders.*.*", "o.{{partition(64,2)}}.$1", "orders.foo.Z", "o.13.foo"},
    {"orders.*.*", "o.{{partition(3,2)}}.$1", "orders.baz.user@example", "o.1.baz"},
    {"*.*", "{{Partition(10, 2, 1)}}",
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "5"},
    {"*.*", "{{Partition(10, 2, 1)}}", "0.Z", "3"},
    {"*.*", "{{Partition(10, 2, 1)}}", "0.12345", "0"},
    {"*.*", "{{Partition(64, 2, 1)}}", "0.us-east-1", "21"},
    {"*.*", "{{Partition(10, 2, 1)}}", "bar.user@example", "3"},
    {"*.*", "{{Partition(10, 2, 1)}}", "customer-42.ORDERS", "7"},
    {"*.*", "{{Partition(64, 2, 1)}}", "foo.bar", "42"},
    {"*.*", "{{Partition(10, 2, 1)}}", "user@example.ORDERS", "5"},
    {"*.*", "{{Partition(10, 2, 1)}}", "ORDERS.0", "2"},
    {"*.*", "{{Partition(10, 2, 1)}}", "0.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "3"},
    {"*", "{{partition(1,1)}}", "anything", "0"},
    {"*", "{{partition(2147483647,1)}}", "foo", "703823576"},
    /* Go keeps int32(n): 4294967306 becomes 10, -3 becomes 4294967293 as a uint32 modulus. */
    {"*", "{{partition(4294967306,1)}}", "foo", "3"},
    {"*", "{{partition(-3,1)}}", "foo", "2851307223"},
    /* n = 0: nats-server 2.11 panics (division by zero); 2.12 answers 0, as we do. */
    {"*", "{{partition(0,1)}}", "foo", "0"},
};

Test(xf, partition)
{
    for (size_t i = 0; i < sizeof part_cases / sizeof part_cases[0]; i++)
        check_match(&part_cases[i], ND_XF_MODE_TRANSFORM);
    cr_assert_eq(nd_xf_fnv1a32("", 0), 2166136261u);
    cr_assert_eq(nd_xf_fnv1a32("foo", 3), 2851307223u);
    cr_assert_eq(nd_xf_fnv1a32("foo.bar", 7) % 10, 6u);
}

typedef struct {
    const char *src, *dest;
    nd_xf_mode_t mode;
    nd_xf_err_t code;
    const char *text;
} err_case_t;

#define T  ND_XF_MODE_TRANSFORM
#define S  ND_XF_MODE_STRICT
#define M  ND_XF_MODE_MAPPING
#define MD "invalid mapping destination: "

static const err_case_t err_cases[] = {
    /* server/subject_transform_test.go shouldErr */
    {"foo..", "bar", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.*", "bar.*", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.*", "bar.$2", T, ND_XF_ERR_INDEX_RANGE, MD "wildcard index out of range in $2: [2]"},
    {"foo.*", "bar.$1.>", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.>", "bar.baz", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.*.*", "bar.$2", S, ND_XF_ERR_NOT_ALL_WC,
     MD "not using all of the token wildcard(s) in bar.$2"},
    {"foo.*", "foo.$foo", S, ND_XF_ERR_NOT_ALL_WC,
     MD "not using all of the token wildcard(s) in foo.$foo"},
    {"foo.*", "bar.{{Partition(2,1)}}", S, ND_XF_ERR_IMPORT_FN,
     MD "the only mapping function allowed for import transforms is {{Wildcard()}} in "
        "{{Partition(2,1)}}"},
    {"foo.*", "foo.{{wildcard(2)}}", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{wildcard(2)}}: [2]"},
    {"foo.*", "foo.{{unimplemented(1)}}", T, ND_XF_ERR_UNKNOWN_FN,
     MD "unknown function in {{unimplemented(1)}}"},
    {"foo.*", "foo.{{partition(10)}}", T, ND_XF_ERR_NOT_ENOUGH_ARGS,
     MD "not enough arguments passed to the function in {{partition(10)}}"},
    {"foo.*", "foo.{{wildcard(foo)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{wildcard(foo)}}"},
    {"foo.*", "foo.{{wildcard()}}", T, ND_XF_ERR_NOT_ENOUGH_ARGS,
     MD "not enough arguments passed to the function in {{wildcard()}}"},
    {"foo.*", "foo.{{wildcard(1,2)}}", T, ND_XF_ERR_TOO_MANY_ARGS,
     MD "too many arguments passed to the function in {{wildcard(1,2)}}"},
    {"foo.*", "foo.{{ wildcard5) }}", T, ND_XF_ERR_UNKNOWN_FN,
     MD "unknown function in {{ wildcard5) }}"},
    {"foo.*", "foo.{{splitLeft(2,2}}", T, ND_XF_ERR_UNKNOWN_FN,
     MD "unknown function in {{splitLeft(2,2}}"},
    {"foo", "bla.{{wildcard(1)}}", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{wildcard(1)}}"},
    /* server/sublist_test.go TestValidateDestinationSubject */
    {"*", "foo.{{unknown(1)}}", M, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{unknown(1)}}"},
    {"foo", "foo..}", M, ND_XF_ERR_DEST_INVALID, MD "invalid transform in "},
    {"foo", "foo. bar}", M, ND_XF_ERR_DEST_INVALID, MD "invalid transform"},
    /* more */
    {"foo", "foo.$1", T, ND_XF_ERR_INDEX_RANGE, MD "wildcard index out of range in $1"},
    {"foo", "{{partition(2,1)}}", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{partition(2,1)}}"},
    {"foo", "{{partition(2)}}", T, ND_XF_ERR_NOT_ENOUGH_ARGS,
     MD "not enough arguments passed to the function in {{partition(2)}}"},
    {"foo.>", "{{wildcard(1)}}.>", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{wildcard(1)}}"},
    {"foo.*", "{{wildcard(1)}}.>", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.>", "bar.>.baz", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.>", "bar.>.baz", M, ND_XF_ERR_DEST_INVALID, MD "invalid transform in baz"},
    {"foo.>.bar", "x", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo", "a..b", T, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo", ".a", M, ND_XF_ERR_DEST_INVALID, MD "invalid transform in "},
    {"foo", "a\tb", M, ND_XF_ERR_DEST_INVALID, MD "invalid transform"},
    {"*", "{{WILDCARD(1)}}", T, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{WILDCARD(1)}}"},
    {"*", "{{wildCard(1)}}", T, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{wildCard(1)}}"},
    {"*", "{{wildcard(1}}", T, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{wildcard(1}}"},
    {"*", "{{wildcard( )}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{wildcard( )}}"},
    {"*", "{{wildcard(99999999999999999999)}}", T, ND_XF_ERR_INVALID_ARG,
     MD
     "function argument is invalid or in the wrong format in {{wildcard(99999999999999999999)}}"},
    {"*", "{{wildcard(1 1)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{wildcard(1 1)}}"},
    {"*", "{{wildcard(1,)}}", T, ND_XF_ERR_TOO_MANY_ARGS,
     MD "too many arguments passed to the function in {{wildcard(1,)}}"},
    {"*", "{{partition(x,1)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{partition(x,1)}}"},
    {"*", "{{partition(3,x)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{partition(3,x)}}"},
    {"*", "{{partition(3,1,)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{partition(3,1,)}}"},
    {"*.*", "{{partition(3,1,5)}}", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{partition(3,1,5)}}: [5]"},
    {"*", "{{splitFromLeft(1)}}", T, ND_XF_ERR_NOT_ENOUGH_ARGS,
     MD "not enough arguments passed to the function in {{splitFromLeft(1)}}"},
    {"*", "{{splitFromRight(1,2,3)}}", T, ND_XF_ERR_TOO_MANY_ARGS,
     MD "too many arguments passed to the function in {{splitFromRight(1,2,3)}}"},
    {"*", "{{sliceFromLeft(1,x)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{sliceFromLeft(1,x)}}"},
    {"*", "{{sliceFromRight(x,1)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{sliceFromRight(x,1)}}"},
    {"*", "{{left(1,2147483648)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{left(1,2147483648)}}"},
    {"*", "{{right(2,1)}}", T, ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in {{right(2,1)}}: [2]"},
    {"*", "{{split(1)}}", T, ND_XF_ERR_NOT_ENOUGH_ARGS,
     MD "not enough arguments passed to the function in {{split(1)}}"},
    {"*", "{{split(1,-,x)}}", T, ND_XF_ERR_TOO_MANY_ARGS,
     MD "too many arguments passed to the function in {{split(1,-,x)}}"},
    {"*", "{{split(a,-)}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{split(a,-)}}"},
    {"*", "{{split(1,- )}}", T, ND_XF_ERR_INVALID_ARG,
     MD "function argument is invalid or in the wrong format in {{split(1,- )}}"},
    {"*", "{{foo(1)}}x{{wildcard(1)}}", T, ND_XF_OK, NULL}, /* not anchored: found */
    /* Mapping mode does not know left() and right() (ValidateMapping's list). */
    {"*", "{{left(1,2)}}", M, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{left(1,2)}}"},
    {"*", "x.{{Right(1,2)}}", M, ND_XF_ERR_UNKNOWN_FN, MD "unknown function in {{Right(1,2)}}"},
    {"*", "{{left(1,2)}}", T, ND_XF_OK, NULL},
    /* Strict (imports) */
    {"foo.*", "bar.{{split(1,-)}}", S, ND_XF_ERR_IMPORT_FN,
     MD "the only mapping function allowed for import transforms is {{Wildcard()}} in "
        "{{split(1,-)}}"},
    {"foo.*.*", "bar.$1.$1", S, ND_XF_OK, NULL}, /* nats-server counts references, not wildcards */
    {"foo.*", "bar.{{Wildcard(1)}}", S, ND_XF_OK, NULL},
    {"foo.*.*", "bar.$2", T, ND_XF_OK, NULL},
    {"foo.*.*", "bar.{{wildcard(1)}}", T, ND_XF_OK, NULL},
    {"foo", "bar", T, ND_XF_OK, NULL},
    {"foo.*.bar.*.baz", "req.$2.$1", T, ND_XF_OK, NULL},
    {"baz.>", "mybaz.>", T, ND_XF_OK, NULL},
    {"*", "{{splitfromleft(1,1)}}", T, ND_XF_OK, NULL},
    {"", "prefix.>", T, ND_XF_OK, NULL},
    {"*.*", "{{partition(10,1,2)}}", T, ND_XF_OK, NULL},
    {"foo.*.*", "foo.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(5,1,2)}}", T, ND_XF_OK, NULL},
    /* sublist_test.go TestValidateDestinationSubject, valid ones */
    {"bar", "foo", M, ND_XF_OK, NULL},
    {"foo", "foo.bar", M, ND_XF_OK, NULL},
    {"*", "{{wildcard(1)}}", M, ND_XF_OK, NULL},
    {"foo.>", ">", M, ND_XF_OK, NULL},
    {"foo.*", "bar.{{wildcard(1)}}", M, ND_XF_OK, NULL},
    {"foo.>", "bar.>", M, ND_XF_OK, NULL},
    {"foo.*.>", "bar.{{wildcard(1)}}.>", M, ND_XF_OK, NULL},
    {"foo.*.bar", "bar.{{wildcard(1)}}.foo", M, ND_XF_OK, NULL},
    {"foo.bar.>", "foo.bar.foo.>", M, ND_XF_OK, NULL},
    {"*", "foo.{{wildcard(1)}}", M, ND_XF_OK, NULL},
    {"*", "foo.{{ wildcard(1) }}", M, ND_XF_OK, NULL},
    {"*", "foo.{{wildcard( 1 )}}", M, ND_XF_OK, NULL},
    {"*", "foo.{{partition(2,1)}}", M, ND_XF_OK, NULL},
    {"*.*", "foo.{{SplitFromLeft(2,1)}}", M, ND_XF_OK, NULL},
    {"*.*", "foo.{{SplitFromRight(2,1)}}", M, ND_XF_OK, NULL},
    {"*", "{{left(1,2147483647)}}", T, ND_XF_OK, NULL},
    {"*", "{{left(1,-2147483648)}}", T, ND_XF_OK, NULL},
    {"foo bar", "x", T, ND_XF_OK, NULL}, /* NewSubjectTransform does not look for spaces */
};

Test(xf, compile_errors)
{
    for (size_t i = 0; i < sizeof err_cases / sizeof err_cases[0]; i++) {
        const err_case_t *c = &err_cases[i];
        nd_xf_t *xf = (nd_xf_t *)1;
        char err[512] = "junk";
        nd_xf_err_t rc = nd_xf_new(c->src, c->dest, c->mode, &xf, err, sizeof err);
        cr_assert_eq(rc, c->code, "case %zu: %s -> %s: got %d (%s)", i, c->src, c->dest, rc, err);
        if (c->code == ND_XF_OK) {
            cr_assert_not_null(xf);
            cr_assert_str_eq(err, "");
            nd_xf_free(xf);
        } else {
            cr_assert_null(xf);
            cr_assert_str_eq(err, c->text, "case %zu: %s -> %s", i, c->src, c->dest);
            cr_assert(strncmp(err, nd_xf_strerror(c->code), strlen(nd_xf_strerror(c->code))) == 0);
        }
    }
}

Test(xf, empty_dest_is_no_transform)
{
    nd_xf_t *xf = (nd_xf_t *)1;
    cr_assert_eq(nd_xf_new("foo", "", ND_XF_MODE_TRANSFORM, &xf, NULL, 0), ND_XF_OK);
    cr_assert_null(xf);
    cr_assert_eq(nd_xf_new("foo", NULL, ND_XF_MODE_MAPPING, &xf, NULL, 0), ND_XF_OK);
    cr_assert_null(xf);
}

Test(xf, match_outcomes)
{
    nd_xf_t *xf;
    char out[64];
    size_t n;
    cr_assert_eq(nd_xf_new("foo.*", "bar.$1", T, &xf, NULL, 0), ND_XF_OK);
    cr_assert_eq(nd_xf_match(xf, "baz.x", 5, out, sizeof out, &n), ND_XF_NO_MATCH);
    cr_assert_eq(nd_xf_match(xf, "foo.x.y", 7, out, sizeof out, &n), ND_XF_NO_MATCH);
    cr_assert_eq(nd_xf_match(xf, "foo", 3, out, sizeof out, &n), ND_XF_NO_MATCH);
    cr_assert_eq(nd_xf_match(xf, "foo.*", 5, out, sizeof out, &n), ND_XF_BAD);
    cr_assert_eq(nd_xf_match(xf, "foo.>", 5, out, sizeof out, &n), ND_XF_BAD);
    cr_assert_eq(nd_xf_match(xf, "foo..x", 6, out, sizeof out, &n), ND_XF_BAD);
    cr_assert_eq(nd_xf_match(xf, "", 0, out, sizeof out, &n), ND_XF_BAD);
    cr_assert_eq(nd_xf_match(xf, "foo.x", 5, out, sizeof out, &n), ND_XF_MATCHED);
    cr_assert_str_eq(out, "bar.x");
    cr_assert(!nd_xf_is_constant(xf));
    cr_assert_str_eq(nd_xf_src(xf), "foo.*");
    cr_assert_str_eq(nd_xf_dest(xf), "bar.$1");
    /* A subject that is not matched: TransformSubject still works token-wise; missing tokens
     * give nothing (nats-server: "one.two." for a missing wildcard token). */
    n = nd_xf_apply(xf, "zzz.q", 5, out, sizeof out);
    cr_assert_str_eq(out, "bar.q");
    nd_xf_free(xf);
    cr_assert_eq(nd_xf_new("foo.*", "one.two.{{wildcard(1)}}", T, &xf, NULL, 0), ND_XF_OK);
    n = nd_xf_apply(xf, "foo", 3, out, sizeof out);
    cr_assert_str_eq(out, "one.two.");
    nd_xf_free(xf);
    /* The identity transform keeps anything, even what is not a literal subject. */
    cr_assert_eq(nd_xf_new("", ">", T, &xf, NULL, 0), ND_XF_OK);
    cr_assert_eq(nd_xf_match(xf, "a..b", 4, out, sizeof out, &n), ND_XF_MATCHED);
    cr_assert_str_eq(out, "a..b");
    nd_xf_free(xf);
    cr_assert_eq(nd_xf_new("foo", "bar", T, &xf, NULL, 0), ND_XF_OK);
    cr_assert(nd_xf_is_constant(xf));
    cr_assert_eq(nd_xf_match(xf, "fo", 2, out, sizeof out, &n), ND_XF_NO_MATCH);
    cr_assert_eq(nd_xf_match(xf, "foo", 3, out, sizeof out, &n), ND_XF_MATCHED);
    cr_assert_str_eq(out, "bar");
    nd_xf_free(xf);
}

Test(xf, truncation_and_long_subjects)
{
    nd_xf_t *xf;
    cr_assert_eq(nd_xf_new("a.>", "prefix.>", T, &xf, NULL, 0), ND_XF_OK);
    char small[8], big[1024], subj[512];
    size_t n = nd_xf_apply(xf, "a.bcdefghij", 11, small, sizeof small);
    cr_assert_eq(n, strlen("prefix.bcdefghij"));
    cr_assert_str_eq(small, "prefix.");
    n = nd_xf_apply(xf, "a.bcdefghij", 11, NULL, 0);
    cr_assert_eq(n, 16);
    /* 100 tokens: past the inline token array. */
    size_t l = 0;
    l += (size_t)snprintf(subj + l, sizeof subj - l, "a");
    for (int i = 1; i < 100; i++)
        l += (size_t)snprintf(subj + l, sizeof subj - l, ".t%d", i);
    size_t m;
    cr_assert_eq(nd_xf_match(xf, subj, l, big, sizeof big, &m), ND_XF_MATCHED);
    cr_assert_eq(m, l - 2 + 7);
    cr_assert(strncmp(big, "prefix.t1.t2.", 13) == 0);
    cr_assert(strcmp(big + m - 4, ".t99") == 0);
    nd_xf_free(xf);
    cr_assert_eq(nd_xf_new("a.>", "{{wildcard(1)}}", T, &xf, NULL, 0), ND_XF_ERR_BAD_SUBJECT);
    /* The 40th token, named by a wildcard past the inline array. */
    char src[512];
    l = (size_t)snprintf(src, sizeof src, "a");
    for (int i = 1; i < 40; i++)
        l += (size_t)snprintf(src + l, sizeof src - l, ".*");
    cr_assert_eq(nd_xf_new(src, "x.$39.{{partition(7,39,1)}}", T, &xf, NULL, 0), ND_XF_OK);
    l = (size_t)snprintf(subj, sizeof subj, "a");
    for (int i = 1; i < 40; i++)
        l += (size_t)snprintf(subj + l, sizeof subj - l, ".%d", i);
    cr_assert_eq(nd_xf_match(xf, subj, l, big, sizeof big, &m), ND_XF_MATCHED);
    char want[64];
    snprintf(want, sizeof want, "x.39.%u", nd_xf_fnv1a32("391", 3) % 7);
    cr_assert_str_eq(big, want);
    nd_xf_free(xf);
}

Test(xf, reverse)
{
    static const struct {
        const char *src, *dest, *subj, *rsrc, *rdest;
    } rc[] = {
        {"foo.*.*", "bar.$2.{{Wildcard(1)}}", "foo.b.a", "bar.*.*", "foo.$2.{{Wildcard(1)}}"},
        {"foo.*", "bar.$1", "foo.x", "bar.*", "foo.$1"},
        {"foo", "bar", "foo", "bar", "foo"},
        {"a.*.>", "b.$1.>", "a.x.y.z", "b.*.>", "a.$1.>"},
        {"svc.*.*", "x.{{wildcard(2)}}.y.{{wildcard(1)}}", "svc.p.q", "x.*.y.*",
         "svc.{{wildcard(2)}}.{{wildcard(1)}}"},
    };
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) {
        nd_xf_t *xf, *r;
        char out[128], back[128];
        size_t n;
        cr_assert_eq(nd_xf_new(rc[i].src, rc[i].dest, ND_XF_MODE_STRICT, &xf, NULL, 0), ND_XF_OK);
        r = nd_xf_reverse(xf);
        cr_assert_not_null(r, "%zu", i);
        cr_assert_str_eq(nd_xf_src(r), rc[i].rsrc);
        cr_assert_str_eq(nd_xf_dest(r), rc[i].rdest);
        cr_assert_eq(nd_xf_match(xf, rc[i].subj, strlen(rc[i].subj), out, sizeof out, &n),
                     ND_XF_MATCHED);
        cr_assert_eq(nd_xf_match(r, out, n, back, sizeof back, &n), ND_XF_MATCHED);
        cr_assert_str_eq(back, rc[i].subj, "%zu: %s", i, out);
        nd_xf_free(r);
        nd_xf_free(xf);
    }
}

/* Observed on the reference binary (nats-server 2.9.10, same functions but left/right): a
 * mapping per row, PUB subj, the subject delivered to a ">" subscriber. */
static const match_case_t ref_cases[] = {
    {"p2.*.*", "p2out.{{partition(10,1,2)}}.$1.$2", "p2.foo.bar", "p2out.0.foo.bar"},
    {"p2.*.*", "p2out.{{partition(10,1,2)}}.$1.$2", "p2.customer-42.ORDERS",
     "p2out.5.customer-42.ORDERS"},
    {"p2.*.*", "p2out.{{partition(10,1,2)}}.$1.$2", "p2.a.0", "p2out.6.a.0"},
    {"pb.*", "pb.{{partition(1000,1)}}.$1", "pb.user@example", "pb.712.user@example"},
    {"pb.*", "pb.{{partition(1000,1)}}.$1",
     "pb.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "pb.63.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
    {"pn.*", "pn.{{partition(-3,1)}}.$1", "pn.foo", "pn.2851307223.foo"},
    {"pw.*", "pw.{{partition(4294967306,1)}}.$1", "pw.foo", "pw.3.foo"},
    {"sfl.*", "sfl.out.{{splitFromLeft(1,3)}}", "sfl.12345", "sfl.out.123.45"},
    {"sfl.*", "sfl.out.{{splitFromLeft(1,3)}}", "sfl.123", "sfl.out.123"},
    {"sfr.*", "sfr.out.{{SplitFromRight(1,3)}}", "sfr.12345", "sfr.out.12.345"},
    {"sll.*", "sll.out.{{SliceFromLeft(1,3)}}", "sll.1234567890", "sll.out.123.456.789.0"},
    {"sll.*", "sll.out.{{SliceFromLeft(1,3)}}", "sll.12345678", "sll.out.123.456.78"},
    {"slr.*", "slr.out.{{SliceFromRight(1,3)}}", "slr.1234567890", "slr.out.1.234.567.890"},
    {"slr.*", "slr.out.{{SliceFromRight(1,3)}}", "slr.12345678", "slr.out.12.345.678"},
    {"spl.*", "spl.out.{{split(1,-)}}", "spl.--a-b--c-", "spl.out..a.b.c"},
    {"spl.*", "spl.out.{{split(1,-)}}", "spl.-a", "spl.out.a"},
    {"spm.*", "spm.out.{{split(1,XY)}}", "spm.aXYXYbXY", "spm.out.a.b"},
    {"ws.*.*", "ws.{{ Wildcard ( 2 ) }}.$1", "ws.a.b", "ws.b.a"},
    {"fw.*.>", "fw.$1.>", "fw.a.b.c", "fw.a.b.c"},
};

/* "spl.out..a.b.c" is not deliverable (an empty token): 2.9.10 delivered nothing for it. */
Test(xf, reference_binary)
{
    for (size_t i = 0; i < sizeof ref_cases / sizeof ref_cases[0]; i++)
        check_match(&ref_cases[i], ND_XF_MODE_MAPPING);
}

/* ---- mapping tables ---- */

static const char *
map(const nd_xf_table_t *t, const char *subj, uint32_t rnd, const char *cluster)
{
    static char out[256];
    size_t n = 99;
    nd_xf_map_t r = nd_xf_table_map(t, subj, strlen(subj), cluster, rnd, out, sizeof out, &n);
    if (r == ND_XF_MAP_NONE) {
        cr_assert_eq(n, 0);
        return "<none>";
    }
    if (r == ND_XF_MAP_DROP)
        return "<drop>";
    cr_assert_eq(n, strlen(out));
    return out;
}

static void
add(nd_xf_table_t *t, const char *src, const nd_xf_dest_spec_t *d, size_t n)
{
    char err[256];
    nd_xf_err_t rc = nd_xf_table_add(t, src, d, n, err, sizeof err);
    cr_assert_eq(rc, ND_XF_OK, "%s: %s", src, err);
}

#define D1(s) (nd_xf_dest_spec_t[]){{s, 100, NULL}}, 1
#define W(s, w)                                                                                    \
    {                                                                                              \
        s, w, NULL                                                                                 \
    }

Test(xf_table, simple_literal_and_wildcard)
{
    nd_xf_table_t *t = nd_xf_table_new();
    cr_assert_str_eq(map(t, "foo", 0, NULL), "<none>");
    add(t, "foo", D1("bar"));
    add(t, "foo.*.*", D1("bar.$2.$1"));
    add(t, "bar.*.>", D1("baz.$1.>"));
    add(t, "orders.*", D1("orders.{{partition(10,1)}}.{{wildcard(1)}}"));
    cr_assert_eq(nd_xf_table_count(t), 4);
    cr_assert_str_eq(map(t, "foo", 0, NULL), "bar");
    cr_assert_str_eq(map(t, "foo.1.2", 0, NULL), "bar.2.1");
    cr_assert_str_eq(map(t, "bar.1.2.3", 0, NULL), "baz.1.2.3");
    cr_assert_str_eq(map(t, "bar.1", 0, NULL), "<none>");
    cr_assert_str_eq(map(t, "orders.foo", 0, NULL), "orders.3.foo");
    cr_assert_str_eq(map(t, "orders.baz", 0, NULL), "orders.0.baz");
    cr_assert_str_eq(map(t, "orders.qux", 0, NULL), "orders.9.qux");
    cr_assert_str_eq(map(t, "fo", 0, NULL), "<none>");
    cr_assert_str_eq(map(t, "foo.1", 0, NULL), "<none>");
    cr_assert_str_eq(map(t, "zzz", 0, NULL), "<none>");
    /* RemoveMapping, as TestAccountBasicRouteMapping */
    cr_assert(nd_xf_table_remove(t, "foo"));
    cr_assert(!nd_xf_table_remove(t, "foo"));
    cr_assert_str_eq(map(t, "foo", 0, NULL), "<none>");
    cr_assert_str_eq(map(t, "foo.1.2", 0, NULL), "bar.2.1");
    nd_xf_table_free(t);
}

Test(xf_table, first_match_in_insertion_order)
{
    nd_xf_table_t *t = nd_xf_table_new();
    add(t, "foo.*", D1("w.$1"));
    add(t, "foo.a", D1("lit")); /* shadowed: the wildcard came first */
    add(t, "bar.a", D1("lit2"));
    add(t, "bar.*", D1("w2.$1"));
    add(t, ">", D1("all.>"));
    cr_assert_str_eq(map(t, "foo.a", 0, NULL), "w.a");
    cr_assert_str_eq(map(t, "foo.b", 0, NULL), "w.b");
    cr_assert_str_eq(map(t, "bar.a", 0, NULL), "lit2");
    cr_assert_str_eq(map(t, "bar.b", 0, NULL), "w2.b");
    cr_assert_str_eq(map(t, "x.y", 0, NULL), "all.x.y");
    /* Replacing keeps the place. */
    add(t, "foo.*", D1("w3.$1"));
    cr_assert_str_eq(map(t, "foo.a", 0, NULL), "w3.a");
    /* Removing moves the last mapping (">") into the hole: it now comes first. */
    cr_assert(nd_xf_table_remove(t, "foo.*"));
    cr_assert_str_eq(map(t, "foo.a", 0, NULL), "all.foo.a");
    cr_assert_str_eq(map(t, "bar.a", 0, NULL), "all.bar.a");
    /* And again: "bar.*" moves to the front, now shadowing "bar.a". */
    cr_assert(nd_xf_table_remove(t, ">"));
    cr_assert_str_eq(map(t, "foo.a", 0, NULL), "lit");
    cr_assert_str_eq(map(t, "bar.a", 0, NULL), "w2.a");
    cr_assert_str_eq(map(t, "bar.c", 0, NULL), "w2.c");
    nd_xf_table_free(t);
}

Test(xf_table, many_literals)
{
    nd_xf_table_t *t = nd_xf_table_new();
    char s[32], d[32];
    for (int i = 0; i < 500; i++) {
        snprintf(s, sizeof s, "in.%d", i);
        snprintf(d, sizeof d, "out.%d", i * 2);
        add(t, s, (nd_xf_dest_spec_t[]){{d, 100, NULL}}, 1);
    }
    for (int i = 0; i < 500; i++) {
        snprintf(s, sizeof s, "in.%d", i);
        snprintf(d, sizeof d, "out.%d", i * 2);
        cr_assert_str_eq(map(t, s, 0, NULL), d);
    }
    cr_assert_str_eq(map(t, "in.500", 0, NULL), "<none>");
    cr_assert_str_eq(map(t, "in", 0, NULL), "<none>");
    nd_xf_table_free(t);
}

Test(xf_table, weighted_boundaries)
{
    nd_xf_table_t *t = nd_xf_table_new();
    /* TestAccountSimpleWeightedRouteMapping: bar 50, the other 50 keeps foo. */
    add(t, "foo", (nd_xf_dest_spec_t[]){W("bar", 50)}, 1);
    for (uint32_t r = 0; r < 100; r++)
        cr_assert_str_eq(map(t, "foo", r, NULL), r < 50 ? "bar" : "foo", "r=%u", r);
    cr_assert_str_eq(map(t, "foo", 149, NULL), "bar"); /* rnd % 100 */
    cr_assert_str_eq(map(t, "foo", 150, NULL), "foo");
    cr_assert_str_eq(map(t, "foo", UINT32_MAX, NULL), "foo"); /* 4294967295 % 100 = 95 */
    /* TestAccountMultiWeightedRouteMappings: bar 50, baz 30, foo 20 auto-added; sorted by
     * weight: foo [0,20), baz [20,50), bar [50,100). */
    add(t, "foo", (nd_xf_dest_spec_t[]){W("bar", 50), W("baz", 30)}, 2);
    cr_assert_eq(nd_xf_table_count(t), 1);
    for (uint32_t r = 0; r < 100; r++)
        cr_assert_str_eq(map(t, "foo", r, NULL),
                         r < 20   ? "foo"
                         : r < 50 ? "baz"
                                  : "bar",
                         "r=%u", r);
    /* Equal weights keep their written order. */
    add(t, "eq", (nd_xf_dest_spec_t[]){W("b", 25), W("a", 25), W("c", 50)}, 3);
    cr_assert_str_eq(map(t, "eq", 24, NULL), "b");
    cr_assert_str_eq(map(t, "eq", 25, NULL), "a");
    cr_assert_str_eq(map(t, "eq", 49, NULL), "a");
    cr_assert_str_eq(map(t, "eq", 50, NULL), "c");
    /* The source listed itself: no remainder, the rest is lost. */
    add(t, "loss", (nd_xf_dest_spec_t[]){W("loss", 30), W("x", 20)}, 2);
    cr_assert_str_eq(map(t, "loss", 0, NULL), "x");
    cr_assert_str_eq(map(t, "loss", 19, NULL), "x");
    cr_assert_str_eq(map(t, "loss", 20, NULL), "loss");
    cr_assert_str_eq(map(t, "loss", 49, NULL), "loss");
    cr_assert_str_eq(map(t, "loss", 50, NULL), "<drop>");
    cr_assert_str_eq(map(t, "loss", 99, NULL), "<drop>");
    /* Weight 0 is never chosen. */
    add(t, "zero", (nd_xf_dest_spec_t[]){W("never", 0), W("always", 100)}, 2);
    for (uint32_t r = 0; r < 100; r++)
        cr_assert_str_eq(map(t, "zero", r, NULL), "always");
    /* Wildcard source with weights: the remainder (40, added last) maps w.*.* -> w.$1.$2;
     * sorted: v2 [0,20), v1 [20,60), remainder [60,100). */
    add(t, "w.*.*", (nd_xf_dest_spec_t[]){W("v1.$2.$1", 40), W("v2.{{wildcard(1)}}", 20)}, 2);
    cr_assert_str_eq(map(t, "w.a.b", 0, NULL), "v2.a");
    cr_assert_str_eq(map(t, "w.a.b", 19, NULL), "v2.a");
    cr_assert_str_eq(map(t, "w.a.b", 20, NULL), "v1.b.a");
    cr_assert_str_eq(map(t, "w.a.b", 59, NULL), "v1.b.a");
    cr_assert_str_eq(map(t, "w.a.b", 60, NULL), "w.a.b");
    cr_assert_str_eq(map(t, "w.a.b", 99, NULL), "w.a.b");
    add(t, "f.>", (nd_xf_dest_spec_t[]){W("g.>", 10)}, 1);
    cr_assert_str_eq(map(t, "f.1.2", 9, NULL), "g.1.2");
    cr_assert_str_eq(map(t, "f.1.2", 10, NULL), "f.1.2");
    nd_xf_table_free(t);
}

Test(xf_table, cluster_scoped)
{
    nd_xf_table_t *t = nd_xf_table_new();
    add(t, "svc",
        (nd_xf_dest_spec_t[]){
            {"svc.east", 100, "east"}, {"svc.west", 60, "west"}, {"svc.any", 100, NULL}},
        3);
    cr_assert_str_eq(map(t, "svc", 0, "east"), "svc.east");
    cr_assert_str_eq(map(t, "svc", 99, "east"), "svc.east");
    /* west: svc.west 60 + svc 40 (sorted: svc [0,40), svc.west [40,100)) */
    cr_assert_str_eq(map(t, "svc", 39, "west"), "svc");
    cr_assert_str_eq(map(t, "svc", 40, "west"), "svc.west");
    cr_assert_str_eq(map(t, "svc", 50, "north"), "svc.any");
    cr_assert_str_eq(map(t, "svc", 50, NULL), "svc.any");
    /* Only cluster-scoped destinations: the main list is the source at 100. */
    add(t, "only", (nd_xf_dest_spec_t[]){{"only.c1", 100, "c1"}}, 1);
    cr_assert_str_eq(map(t, "only", 7, "c1"), "only.c1");
    cr_assert_str_eq(map(t, "only", 7, "c2"), "only");
    /* Weights are totalled per cluster. */
    add(t, "two", (nd_xf_dest_spec_t[]){{"a", 60, "c1"}, {"b", 60, "c2"}}, 2);
    nd_xf_table_free(t);
}

typedef struct {
    const char *src;
    nd_xf_dest_spec_t d[3];
    size_t n;
    nd_xf_err_t code;
    const char *text;
} terr_case_t;

static const terr_case_t terr_cases[] = {
    {"foo..bar", {W("x", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"", {W("x", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo bar", {W("x", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.>.x", {W("x", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo", {W("bar", 150)}, 1, ND_XF_ERR_WEIGHT, "individual weights need to be <= 100"},
    {"foo", {W("bar", 50), W("bar", 50)}, 2, ND_XF_ERR_DUPLICATE, "duplicate entry for \"bar\""},
    {"foo",
     {W("bar", 50), W("baz", 60)},
     2,
     ND_XF_ERR_TOTAL_WEIGHT,
     "total weight needs to be <= 100"},
    {"foo",
     {{"a", 60, "c1"}, {"b", 60, "c1"}},
     2,
     ND_XF_ERR_TOTAL_WEIGHT,
     "total weight needs to be <= 100"},
    {"foo",
     {{"a", 60, "c1"}, {"a", 10, "c2"}},
     2,
     ND_XF_ERR_DUPLICATE,
     "duplicate entry for \"a\""},
    {"foo",
     {W("a\"b", 10), W("a\"b", 10)},
     2,
     ND_XF_ERR_DUPLICATE,
     "duplicate entry for \"a\\\"b\""},
    {"foo", {W("", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.*", {W("bar.*", 100)}, 1, ND_XF_ERR_BAD_SUBJECT, "invalid subject"},
    {"foo.*",
     {W("bar.$1", 50), W("bar.{{left(1,1)}}", 50)},
     2,
     ND_XF_ERR_UNKNOWN_FN,
     MD "unknown function in {{left(1,1)}}"},
    {"foo.*",
     {W("bar.$2", 100)},
     1,
     ND_XF_ERR_INDEX_RANGE,
     MD "wildcard index out of range in $2: [2]"},
    {"foo", {W("a..b", 100)}, 1, ND_XF_ERR_DEST_INVALID, MD "invalid transform in "},
};

Test(xf_table, add_errors)
{
    for (size_t i = 0; i < sizeof terr_cases / sizeof terr_cases[0]; i++) {
        const terr_case_t *c = &terr_cases[i];
        nd_xf_table_t *t = nd_xf_table_new();
        char err[256];
        cr_assert_eq(nd_xf_table_add(t, c->src, c->d, c->n, err, sizeof err), c->code, "%zu: %s", i,
                     err);
        cr_assert_str_eq(err, c->text, "%zu", i);
        cr_assert_eq(nd_xf_table_count(t), 0);
        nd_xf_table_free(t);
    }
}

Test(xf_table, from_opts)
{
    nd_mapping_dest_t d1[] = {{"bar", 100, NULL}};
    nd_mapping_dest_t d2[] = {{"bar.v1.$1", 40, NULL}, {"baz.v2.$1", 20, NULL}};
    nd_mapping_dest_t d3[] = {{"RAB.$2.$1", 100, NULL}};
    nd_mapping_dest_t d4[] = {{"x.$3", 100, NULL}};
    nd_mapping_t m[] = {
        {.src = "foo", .dests = d1, .ndests = 1},
        {.src = "foo.*", .weighted = true, .dests = d2, .ndests = 2},
        {.src = "bar.*.*", .dests = d3, .ndests = 1},
        {.src = "bad.*", .dests = d4, .ndests = 1},
    };
    nd_xf_table_t *t = nd_xf_table_new();
    size_t bad = 99;
    char err[256];
    cr_assert_eq(nd_xf_table_add_opts(t, m, 3, &bad, err, sizeof err), ND_XF_OK);
    cr_assert_str_eq(map(t, "foo", 5, NULL), "bar");
    cr_assert_str_eq(map(t, "foo.1", 0, NULL), "baz.v2.1");
    cr_assert_str_eq(map(t, "foo.1", 20, NULL), "bar.v1.1");
    cr_assert_str_eq(map(t, "foo.1", 60, NULL), "foo.1");
    cr_assert_str_eq(map(t, "bar.11.22", 0, NULL), "RAB.22.11");
    cr_assert_eq(nd_xf_table_add_opts(t, m, 4, &bad, err, sizeof err), ND_XF_ERR_INDEX_RANGE);
    cr_assert_eq(bad, 3);
    cr_assert_str_eq(err, MD "wildcard index out of range in $3: [3]");
    nd_xf_table_free(t);
}

Test(xf_table, truncated_output)
{
    nd_xf_table_t *t = nd_xf_table_new();
    add(t, "a.>", D1("a.very.long.prefix.>"));
    char out[8];
    size_t n;
    cr_assert_eq(nd_xf_table_map(t, "a.b", 3, NULL, 0, out, sizeof out, &n), ND_XF_MAP_MAPPED);
    cr_assert_eq(n, strlen("a.very.long.prefix.b"));
    cr_assert_str_eq(out, "a.very.");
    nd_xf_table_free(t);
}

/* Garbage in: random sources, destinations and subjects built from the characters that matter
 * to the parser. Nothing may crash or leak (run under ASan), results must be NUL-terminated
 * and report their full length, and a compiled transform must apply to anything. */
Test(xf, random_inputs)
{
    static const char *const pieces[] = {
        "*",
        ">",
        "a",
        "bc",
        "$1",
        "$2",
        "$0",
        "$-1",
        "{{",
        "}}",
        "(",
        ")",
        ",",
        " ",
        ".",
        "..",
        "-",
        "1",
        "2",
        "99",
        "wildcard",
        "Partition",
        "split",
        "SplitFromLeft",
        "sliceFromRight",
        "left",
        "Right",
        "\t",
        "x",
        "{{wildcard(1)}}",
        "{{partition(3,1,2)}}",
        "{{split(1,-)}}",
        "{{SliceFromLeft(2,2)}}",
        "{{right(1,1)}}",
        "{{split(1,)}}",
    };
    const size_t np = sizeof pieces / sizeof pieces[0];
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    char src[128], dest[256], subj[128], out[64];
    size_t compiled = 0;
    for (int it = 0; it < 20000; it++) {
        char *bufs[3] = {src, dest, subj};
        size_t caps[3] = {sizeof src, sizeof dest, sizeof subj};
        for (int b = 0; b < 3; b++) {
            size_t l = 0;
            bufs[b][0] = '\0';
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            int k = (int)((seed >> 33) % 7);
            for (int j = 0; j < k; j++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                const char *p = pieces[(seed >> 33) % np];
                if (l + strlen(p) + 1 < caps[b]) {
                    memcpy(bufs[b] + l, p, strlen(p) + 1);
                    l += strlen(p);
                }
            }
        }
        nd_xf_mode_t mode = (nd_xf_mode_t)(it % 3);
        nd_xf_t *xf = NULL;
        char err[256];
        if (nd_xf_new(src, dest, mode, &xf, err, sizeof err) != ND_XF_OK || !xf)
            continue;
        compiled++;
        size_t n = nd_xf_apply(xf, subj, strlen(subj), out, sizeof out);
        cr_assert_eq(strlen(out), n < sizeof out ? n : sizeof out - 1);
        size_t m;
        if (nd_xf_match(xf, subj, strlen(subj), out, sizeof out, &m) == ND_XF_MATCHED)
            cr_assert_eq(strlen(out), m < sizeof out ? m : sizeof out - 1);
        nd_xf_t *r = nd_xf_reverse(xf);
        nd_xf_free(r);
        nd_xf_free(xf);
        nd_xf_table_t *t = nd_xf_table_new();
        nd_xf_dest_spec_t d = {dest, (int)(it % 101), NULL};
        if (nd_xf_table_add(t, src, &d, 1, err, sizeof err) == ND_XF_OK)
            (void)nd_xf_table_map(t, subj, strlen(subj), NULL, (uint32_t)it, out, sizeof out, &m);
        nd_xf_table_free(t);
    }
    cr_assert_gt(compiled, 500, "only %zu compiled", compiled);
}
