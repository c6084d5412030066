/* Unit tests of `natsd --passwd` (src/server/passwdtool.c): which arguments ask for it, and the
 * hash it prints for a password piped on stdin (cost 11 and "$2a$" by default, as
 * `nats server passwd`), which the server's own check accepts. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/passwd.h"
#include "server/passwdtool.h"

/* Runs the tool with `input` as stdin and returns what it printed on stdout (static buffer). */
static const char *
run_tool(int argc, char **argv, const char *input, int *rc)
{
    static char out[512];
    char in_path[] = "/tmp/nd_pwin_XXXXXX", out_path[] = "/tmp/nd_pwout_XXXXXX";
    int fd = mkstemp(in_path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, input, strlen(input)), (ssize_t)strlen(input));
    close(fd);
    int ofd = mkstemp(out_path);
    cr_assert(ofd >= 0);
    close(ofd);
    cr_assert_not_null(freopen(in_path, "r", stdin));
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    cr_assert_not_null(freopen(out_path, "w", stdout));
    *rc = nd_passwdtool_run(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    FILE *f = fopen(out_path, "r");
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    unlink(in_path);
    unlink(out_path);
    return out;
}

Test(passwdtool, wanted)
{
    char *a[] = {"natsd", "--passwd", NULL}, *b[] = {"natsd", "passwd", NULL},
         *c[] = {"natsd", "-p", "4222", NULL}, *d[] = {"natsd", NULL};
    cr_expect(nd_passwdtool_wanted(2, a));
    cr_expect(nd_passwdtool_wanted(2, b));
    cr_expect_not(nd_passwdtool_wanted(3, c));
    cr_expect_not(nd_passwdtool_wanted(1, d));
}

Test(passwdtool, hash_of_a_piped_password)
{
    char *argv[] = {"natsd", "--passwd", NULL};
    int rc;
    const char *out = run_tool(2, argv, "correct horse battery staple\n", &rc);
    cr_assert_eq(rc, 0);
    cr_assert_eq(strlen(out), 61, "%s", out); /* 60 and the newline */
    cr_assert(strncmp(out, "$2a$11$", 7) == 0, "%s", out);
    cr_assert(nd_passwd_bcrypt_valid(out, 60));
    cr_assert(nd_passwd_check(out, 60, "correct horse battery staple", 28));
    cr_assert_not(nd_passwd_check(out, 60, "correct horse battery staple\n", 29));
}

Test(passwdtool, cost_and_errors)
{
    char *argv[] = {"natsd", "--passwd", "--cost", "4", NULL};
    int rc;
    const char *out = run_tool(4, argv, "pw\r\n", &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strncmp(out, "$2a$04$", 7) == 0, "%s", out);
    cr_assert(nd_passwd_check(out, 60, "pw", 2), "a CRLF line end is not part of the password");
    run_tool(2, argv, "", &rc);
    cr_expect_eq(rc, 1, "no password");
    char *bad[] = {"natsd", "--passwd", "--cost", "3", NULL};
    run_tool(4, bad, "pw\n", &rc);
    cr_expect_eq(rc, 1, "cost below 4");
    char *extra[] = {"natsd", "--passwd", "-p", "1", NULL};
    run_tool(4, extra, "pw\n", &rc);
    cr_expect_eq(rc, 1, "an unknown argument");
}
