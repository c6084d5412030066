/* `natsd --passwd`; see passwdtool.h. */
#include "server/passwdtool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "auth/passwd.h"
#include "util/nkey.h"

/* nats server passwd's (and mkpasswd's) defaults. */
#define DEFAULT_COST 11
#define PREFIX       "$2a$"
/* bcrypt uses the first 72 bytes of a password and ignores the rest. */
#define BCRYPT_MAX 72

bool
nd_passwdtool_wanted(int argc, char **argv)
{
    return argc >= 2 && (strcmp(argv[1], "--passwd") == 0 || strcmp(argv[1], "-passwd") == 0 ||
                         strcmp(argv[1], "passwd") == 0);
}

/* Reads one line of f into buf (its end, \n or \r\n, dropped). Returns: its length, or -1 at end
 * of input or when it does not fit. */
static int
read_line(FILE *f, char *buf, size_t cap)
{
    if (fgets(buf, (int)cap, f) == NULL)
        return -1;
    size_t n = strlen(buf);
    if (n == cap - 1 && buf[n - 1] != '\n')
        return -1;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return (int)n;
}

/* Prompts on stderr and reads a line from the terminal with echo off. */
static int
ask(const char *prompt, char *buf, size_t cap)
{
    struct termios old, quiet;
    bool tty = tcgetattr(STDIN_FILENO, &old) == 0;
    fputs(prompt, stderr);
    fflush(stderr);
    if (tty) {
        quiet = old;
        quiet.c_lflag &= (tcflag_t) ~(ECHO | ECHONL);
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    }
    int n = read_line(stdin, buf, cap);
    if (tty)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    fputc('\n', stderr);
    return n;
}

int
nd_passwdtool_run(int argc, char **argv)
{
    unsigned cost = DEFAULT_COST;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--cost") == 0 || strcmp(a, "-cost") == 0) && i + 1 < argc) {
            char *end;
            long c = strtol(argv[++i], &end, 10);
            if (*end != '\0' || c < 4 || c > 31) {
                fprintf(stderr, "natsd: --cost must be a number from 4 to 31\n");
                return 1;
            }
            cost = (unsigned)c;
        } else {
            fprintf(stderr, "usage: natsd --passwd [--cost N]   (the password from the terminal "
                            "or the first line of stdin)\n");
            return 1;
        }
    }
    char pw[1024], again[1024];
    int n;
    if (isatty(STDIN_FILENO)) {
        n = ask("Enter password: ", pw, sizeof pw);
        int m = n < 0 ? -1 : ask("Reenter password: ", again, sizeof again);
        bool same = n >= 0 && m == n && strcmp(pw, again) == 0;
        nd_nkey_wipe(again, sizeof again);
        if (n >= 0 && !same) {
            nd_nkey_wipe(pw, sizeof pw);
            fprintf(stderr, "natsd: the passwords do not match\n");
            return 1;
        }
    } else {
        n = read_line(stdin, pw, sizeof pw);
    }
    if (n <= 0) {
        nd_nkey_wipe(pw, sizeof pw);
        fprintf(stderr, "natsd: no password given (one line on stdin, at most %zu bytes)\n",
                sizeof pw - 2);
        return 1;
    }
    if (n > BCRYPT_MAX)
        fprintf(stderr, "natsd: warning: bcrypt uses only the first %d bytes of a password\n",
                BCRYPT_MAX);
    char *hash = nd_passwd_bcrypt_hash(pw, PREFIX, cost);
    nd_nkey_wipe(pw, sizeof pw);
    if (hash == NULL) {
        fprintf(stderr, "natsd: bcrypt failed\n");
        return 1;
    }
    printf("%s\n", hash);
    nd_free(hash);
    return 0;
}
