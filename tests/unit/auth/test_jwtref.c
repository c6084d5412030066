/* Interop of src/auth/jwt.c and src/util/nkey.c with the reference server: operator, account and
 * user JWTs made by our encoder, and CONNECT nonce signatures made by our signer, are given to
 * nats-server (NATSD_TEST_REFERENCE, else /usr/sbin/nats-server; skipped when neither exists) in
 * operator mode with `resolver: MEMORY`. It must accept the good user and enforce the user JWT's
 * permissions, and refuse an expired user, a revoked user and a nonce signed by the wrong key.
 * This pins our token format to what the official server verifies, not just to our own decoder.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actors/alloc.h"
#include "auth/jwt.h"
#include "util/nkey.h"

static const char *
reference(void)
{
    const char *r = getenv("NATSD_TEST_REFERENCE");
    if (r != NULL && r[0] != '\0')
        return access(r, X_OK) == 0 ? r : NULL;
    return access("/usr/sbin/nats-server", X_OK) == 0 ? "/usr/sbin/nats-server" : NULL;
}

typedef struct key {
    char seed[ND_NKEY_SEED_LEN + 1], pub[ND_NKEY_PUBLIC_LEN + 1];
} keypair_t;

static void
key_new(keypair_t *k, uint8_t role)
{
    uint8_t sk[32], pk[32];
    cr_assert(nd_nkey_random(sk, sizeof sk));
    cr_assert(nd_nkey_seed_public(sk, pk));
    nd_nkey_encode_seed(role, sk, k->seed);
    nd_nkey_encode_public(role, pk, k->pub);
    nd_nkey_wipe(sk, sizeof sk);
}

static char *
enc(const char *json, const keypair_t *issuer)
{
    json_error_t je;
    json_t *c = json_loads(json, JSON_PRESERVE_ORDER, &je);
    cr_assert_not_null(c, "%s", je.text);
    char *t = NULL;
    cr_assert_eq(nd_jwt_encode(c, issuer->seed, strlen(issuer->seed), 0, &t), ND_OK);
    json_decref(c);
    return t;
}

static int
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t l = sizeof a;
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int
dial(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads until `want` appears in the text received so far, or 10 s pass (a hang guard only). */
static void
read_until(int fd, char *buf, size_t cap, const char *want)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int waited = 0; waited < 10000 && strstr(buf, want) == NULL;) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, 100);
        if (r == 0) {
            waited += 100;
            continue;
        }
        ssize_t k = read(fd, buf + n, cap - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
        buf[n] = '\0';
    }
}

/* Connects as the user (JWT + nonce signed with signer's seed), sends extra, then a final PING
 * and returns what the server answered up to its PONG or -ERR 'Authorization Violation'. */
static void
session(int port, const char *ujwt, const keypair_t *signer, const char *extra, char *out,
        size_t cap)
{
    int fd = dial(port);
    cr_assert_geq(fd, 0);
    char info[8192];
    read_until(fd, info, sizeof info, "\r\n");
    char *np = strstr(info, "\"nonce\":\"");
    cr_assert_not_null(np, "INFO without nonce: %s", info);
    np += 9;
    size_t k = strcspn(np, "\"");
    char *sig = NULL;
    cr_assert(nd_jwt_sign_nonce(signer->seed, strlen(signer->seed), np, k, &sig));
    size_t need = strlen(ujwt) + strlen(sig) + strlen(extra) + 128;
    char *msg = nd_xmalloc(need);
    int l = snprintf(msg, need,
                     "CONNECT {\"jwt\":\"%s\",\"sig\":\"%s\",\"verbose\":false,\"pedantic\":false}"
                     "\r\n%sPING\r\n",
                     ujwt, sig, extra);
    cr_assert_eq(write(fd, msg, (size_t)l), l);
    read_until(fd, out, cap, strstr(extra, "PING") ? "PONG\r\nPONG\r\n" : "\r\n");
    if (strstr(out, "PONG") == NULL && strstr(out, "-ERR") == NULL)
        read_until(fd, out, cap, "\r\n");
    nd_free(msg);
    nd_free(sig);
    close(fd);
}

Test(jwtref, reference_server_accepts_our_tokens, .timeout = 60)
{
    const char *ref = reference();
    if (ref == NULL)
        cr_skip_test("no reference nats-server");
    keypair_t op, sys, acc, user, revoked;
    key_new(&op, ND_NKEY_PREFIX_OPERATOR);
    key_new(&sys, ND_NKEY_PREFIX_ACCOUNT);
    key_new(&acc, ND_NKEY_PREFIX_ACCOUNT);
    key_new(&user, ND_NKEY_PREFIX_USER);
    key_new(&revoked, ND_NKEY_PREFIX_USER);
    static const char lim[] = "\"limits\":{\"subs\":-1,\"conn\":-1,\"leaf\":-1,\"imports\":-1,"
                              "\"exports\":-1,\"data\":-1,\"payload\":-1,\"wildcards\":true}";
    char j[2048];
    long now = (long)time(NULL);
    snprintf(j, sizeof j,
             "{\"sub\":\"%s\",\"name\":\"OP\",\"nats\":{\"type\":\"operator\","
             "\"system_account\":\"%s\"}}",
             op.pub, sys.pub);
    char *ojwt = enc(j, &op);
    snprintf(j, sizeof j, "{\"sub\":\"%s\",\"name\":\"SYS\",\"nats\":{\"type\":\"account\",%s}}",
             sys.pub, lim);
    char *sjwt = enc(j, &op);
    snprintf(
        j, sizeof j,
        "{\"sub\":\"%s\",\"name\":\"A\",\"nats\":{\"type\":\"account\",\"revocations\":{\"%s\":"
        "%ld},%s}}",
        acc.pub, revoked.pub, now + 3600, lim);
    char *ajwt = enc(j, &op);
    snprintf(
        j, sizeof j,
        "{\"sub\":\"%s\",\"name\":\"U\",\"nats\":{\"type\":\"user\",\"pub\":{\"allow\":[\"ok.>\"],"
        "\"deny\":[\"ok.no\"]},\"sub\":{\"deny\":[\"secret\"]},\"subs\":-1,\"data\":-1,"
        "\"payload\":-1}}",
        user.pub);
    char *ujwt = enc(j, &acc);
    snprintf(j, sizeof j,
             "{\"sub\":\"%s\",\"name\":\"E\",\"exp\":%ld,\"nats\":{\"type\":\"user\",\"subs\":-1,"
             "\"data\":-1,\"payload\":-1}}",
             user.pub, now - 60);
    char *ejwt = enc(j, &acc);
    snprintf(j, sizeof j,
             "{\"sub\":\"%s\",\"name\":\"R\",\"nats\":{\"type\":\"user\",\"subs\":-1,\"data\":-1,"
             "\"payload\":-1}}",
             revoked.pub);
    char *rjwt = enc(j, &acc);

    char dir[] = "/tmp/natsd-jwtref-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char conf[256];
    snprintf(conf, sizeof conf, "%s/op.conf", dir);
    int port = free_port();
    FILE *f = fopen(conf, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "listen: 127.0.0.1:%d\noperator: %s\nsystem_account: %s\nresolver: MEMORY\n"
            "resolver_preload: {\n  %s: %s\n  %s: %s\n}\n",
            port, ojwt, sys.pub, acc.pub, ajwt, sys.pub, sjwt);
    fclose(f);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        /* The server dies with this test process, even when an assertion ends it early. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execl(ref, ref, "-c", conf, (char *)NULL);
        _exit(127);
    }
    int fd = -1;
    for (int i = 0; i < 200 && fd < 0; i++) {
        fd = dial(port);
        if (fd < 0)
            usleep(50000);
    }
    cr_assert_geq(fd, 0, "reference server did not start");
    close(fd);

    char out[8192];
    session(port, ujwt, &user, "PUB ok.yes 0\r\n\r\nPUB ok.no 0\r\n\r\nSUB secret 1\r\nPING\r\n",
            out, sizeof out);
    cr_expect_not_null(strstr(out, "PONG"), "good user refused: %s", out);
    cr_expect_not_null(strstr(out, "-ERR 'Permissions Violation for Publish to \"ok.no\"'"), "%s",
                       out);
    cr_expect_null(strstr(out, "ok.yes"), "%s", out);
    cr_expect_not_null(strstr(out, "-ERR 'Permissions Violation for Subscription to \"secret\"'"),
                       "%s", out);
    session(port, ejwt, &user, "", out, sizeof out);
    cr_expect_not_null(strstr(out, "-ERR 'Authorization Violation'"), "expired user: %s", out);
    session(port, rjwt, &revoked, "", out, sizeof out);
    cr_expect_not_null(strstr(out, "-ERR 'Authorization Violation'"), "revoked user: %s", out);
    session(port, ujwt, &revoked, "", out, sizeof out);
    cr_expect_not_null(strstr(out, "-ERR 'Authorization Violation'"), "wrong nonce key: %s", out);

    kill(pid, SIGTERM);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    unlink(conf);
    rmdir(dir);
    nd_free(ojwt);
    nd_free(sjwt);
    nd_free(ajwt);
    nd_free(ujwt);
    nd_free(ejwt);
    nd_free(rjwt);
}
