/* Integration tests of natsd's command line as a process: --help/--version/bad flags (texts and
 * exit codes as nats-server's), the -P pid file and the --ports_file_dir ports file (written at
 * start, removed at a clean exit), and -sl/--signal against running servers: by pid file, by
 * process name (a uniquely named copy of the binary, so other natsd processes on the machine do
 * not interfere), the "multiple" and "no processes" errors, and a glob.
 * Every wait is a poll with a hang guard; nothing asserts on how long anything took.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static char dir[64];

static void
rm_tree(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static pid_t children[8];
static size_t nchildren;

static void
setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/nd_cli_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
    for (size_t i = 0; i < nchildren; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
        }
    }
    nchildren = 0;
    rm_tree();
}

TestSuite(integ_cli, .init = setup, .fini = teardown, .timeout = 240);

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *
slurp(const char *p)
{
    int fd = open(p, O_RDONLY);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ssize_t r;
    while ((r = read(fd, buf + n, cap - n - 1)) > 0) {
        n += (size_t)r;
        if (cap - n < 2)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    buf[n] = '\0';
    return buf;
}

/* Runs bin with args to completion, stdout and stderr captured. Returns the exit status. */
static int
run(const char *bin, const char *const *args, char **out, char **errs)
{
    char op[128], ep[128];
    snprintf(op, sizeof op, "%s/run.out", dir);
    snprintf(ep, sizeof ep, "%s/run.err", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)bin;
        for (; args && args[n - 1] && n < 31; n++)
            argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    int st = 0;
    long long deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("%s did not exit", bin);
        }
        usleep(10000);
    }
    *out = slurp(op);
    *errs = slurp(ep);
    unlink(op);
    unlink(ep);
    cr_assert(WIFEXITED(st), "%s died by a signal", bin);
    return WEXITSTATUS(st);
}

/* Starts bin as a server logging to logfile, with extra args; waits until the log says it is
 * ready. Returns its pid. */
static pid_t
start_server(const char *bin, const char *logfile, const char *const *extra)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        char *argv[32] = {(char *)bin, "-a", "127.0.0.1", "-p", "-1", "-l", (char *)logfile};
        int n = 7;
        for (size_t i = 0; extra && extra[i] && n < 31; i++)
            argv[n++] = (char *)extra[i];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    children[nchildren++] = pid;
    long long deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        char *log = slurp(logfile);
        bool ready = log && strstr(log, "Server is ready") != NULL;
        free(log);
        if (ready)
            return pid;
        int st;
        cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "server exited before it was ready");
        cr_assert(now_ms() < deadline, "server not ready in time");
        usleep(10000);
    }
}

/* Waits for the server to exit; returns its exit status. */
static int
wait_exit(pid_t pid)
{
    int st = 0;
    long long deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        cr_assert(now_ms() < deadline, "server %d did not exit", (int)pid);
        usleep(10000);
    }
    for (size_t i = 0; i < nchildren; i++)
        if (children[i] == pid)
            children[i] = 0;
    cr_assert(WIFEXITED(st), "server died by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return WEXITSTATUS(st);
}

/* Waits until file contains needle. */
static void
wait_for_text(const char *file, const char *needle)
{
    long long deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    for (;;) {
        char *t = slurp(file);
        bool ok = t && strstr(t, needle) != NULL;
        free(t);
        if (ok)
            return;
        cr_assert(now_ms() < deadline, "\"%s\" never appeared in %s", needle, file);
        usleep(10000);
    }
}

Test(integ_cli, help_version_bad_flags)
{
    const char *bin = nd_integ_server_path();
    char *out, *errs;
    const char *help[] = {"--help", NULL};
    cr_assert_eq(run(bin, help, &out, &errs), 0);
    cr_assert(strncmp(out, "\nUsage: ", 8) == 0, "%s", out);
    cr_assert_not_null(strstr(out, "\nServer Options:\n"));
    cr_assert_not_null(strstr(out, "\nLogging Options:\n"));
    cr_assert_not_null(strstr(out, "\nCommon Options:\n"));
    free(out), free(errs);

    const char *version[] = {"--version", NULL};
    cr_assert_eq(run(bin, version, &out, &errs), 0);
    cr_assert(strncmp(out, "nats-server: v2.10.0\n", 21) == 0, "%s", out);
    cr_assert_not_null(strstr(out, "natsd: v"), "%s", out);
    free(out), free(errs);

    const char *bogus[] = {"--bogus", NULL};
    cr_assert_eq(run(bin, bogus, &out, &errs), 0); /* as nats-server: usage, then exit 0 */
    cr_assert_str_eq(errs, "flag provided but not defined: -bogus\n");
    cr_assert(strncmp(out, "\nUsage: ", 8) == 0, "%s", out);
    free(out), free(errs);

    const char *extra[] = {"extra", NULL};
    cr_assert_eq(run(bin, extra, &out, &errs), 1);
    cr_assert_str_eq(errs, "nats-server: unrecognized command: \"extra\"\n");
    free(out), free(errs);

    const char *check[] = {"-t", NULL};
    cr_assert_eq(run(bin, check, &out, &errs), 1);
    cr_assert_str_eq(errs, "nats-server: must specify [-c, --config] option to check configuration "
                           "file syntax\n");
    free(out), free(errs);
}

/* -t with features natsd has not built: still valid (as nats-server says of the same file), and
 * natsd says what it would ignore before saying so. */
Test(integ_cli, check_config_warns_unbuilt_features)
{
    const char *bin = nd_integ_server_path();
    char conf[160];
    snprintf(conf, sizeof conf, "%s/features.conf", dir);
    nd_integ_write_file(conf, "port: 4222\nprof_port: 65432\nleafnodes { port: 7422 }\n");
    const char *check[] = {"-t", "-c", conf, NULL};
    char *out, *errs;
    cr_assert_eq(run(bin, check, &out, &errs), 0);
    char valid[256];
    snprintf(valid, sizeof valid, "nats-server: configuration file %s is valid\n", conf);
    if (nd_integ_is_reference()) {
        cr_assert_str_eq(errs, valid);
    } else {
        char want[1024];
        snprintf(want, sizeof want,
                 "nats-server: warning: %s:2:1: Profiling is configured but not supported yet by "
                 "natsd: ignored\n%s",
                 conf, valid);
        cr_assert_str_eq(errs, want);
    }
    free(out), free(errs);
}

Test(integ_cli, pid_ports_reopen_quit)
{
    const char *bin = nd_integ_server_path();
    char logf[128], pidf[128];
    snprintf(logf, sizeof logf, "%s/server.log", dir);
    snprintf(pidf, sizeof pidf, "%s/server.pid", dir);
    const char *extra[] = {"-P", pidf, "--ports_file_dir", dir, "-m", "-1", NULL};
    pid_t pid = start_server(bin, logf, extra);

    /* The banner is nats-server's; its version line is natsd's own (--version keeps 2.10.0). */
    char *log = slurp(logf);
    cr_assert_not_null(strstr(log, "[INF] Starting nats-server"), "%s", log);
    const char *vl = strstr(log, "[INF]   Version:  ");
    cr_assert_not_null(vl, "%s", log);
    cr_assert(strncmp(strchr(vl, '(') ? strchr(vl, '(') : "",
                      "(natsd, compatible with nats-server 2.10.0)\n", 44) == 0,
              "%s", log);
    cr_assert_not_null(strstr(log, "natsd"), "%s", log);
    cr_assert_not_null(strstr(log, "[INF]   ID:       N"), "%s", log);
    const char *lp = strstr(log, "Listening for client connections on 127.0.0.1:");
    cr_assert_not_null(lp, "%s", log);
    int port = atoi(lp + strlen("Listening for client connections on 127.0.0.1:"));
    const char *mp = strstr(log, "Starting http monitor on 127.0.0.1:");
    cr_assert_not_null(mp, "%s", log);
    int mport = atoi(mp + strlen("Starting http monitor on 127.0.0.1:"));
    free(log);

    char *pidtext = slurp(pidf);
    cr_assert_not_null(pidtext);
    char want[32];
    snprintf(want, sizeof want, "%d", (int)pid);
    cr_assert_str_eq(pidtext, want);
    free(pidtext);

    const char *base = strrchr(bin, '/') ? strrchr(bin, '/') + 1 : bin;
    char portsf[256];
    snprintf(portsf, sizeof portsf, "%s/%s_%d.ports", dir, base, (int)pid);
    char wantports[160];
    snprintf(wantports, sizeof wantports,
             "{\"nats\":[\"nats://127.0.0.1:%d\"],\"monitoring\":[\"http://127.0.0.1:%d\"]}", port,
             mport);
    wait_for_text(portsf, wantports);
    char *ports = slurp(portsf);
    cr_assert_str_eq(ports, wantports);
    free(ports);

    /* logrotate: move the file away, then -sl reopen=<pid file>. */
    char moved[160];
    snprintf(moved, sizeof moved, "%s.1", logf);
    cr_assert_eq(rename(logf, moved), 0);
    char sig[200];
    snprintf(sig, sizeof sig, "reopen=%s", pidf);
    const char *reopen[] = {"-sl", sig, NULL};
    char *out, *errs;
    cr_assert_eq(run(bin, reopen, &out, &errs), 0, "%s", errs);
    free(out), free(errs);
    wait_for_text(logf, "[INF] File log re-opened");

    snprintf(sig, sizeof sig, "quit=%s", pidf);
    const char *quit[] = {"--signal", sig, NULL};
    cr_assert_eq(run(bin, quit, &out, &errs), 0, "%s", errs);
    free(out), free(errs);
    cr_assert_eq(wait_exit(pid), 0);
    struct stat st;
    cr_assert_neq(stat(pidf, &st), 0, "pid file left behind");
    cr_assert_neq(stat(portsf, &st), 0, "ports file left behind");
    wait_for_text(logf, "Server Exiting..");
    unlink(moved);
}

/* Copies the server binary to dir under a unique short name (process names are cut at 15). */
static void
copy_binary(char *out, size_t cap)
{
    snprintf(out, cap, "%s/nd%05d", dir, (int)(getpid() % 100000));
    int in = open(nd_integ_server_path(), O_RDONLY);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    cr_assert(in >= 0 && fo >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        cr_assert_eq(write(fo, buf, (size_t)n), n);
    close(in);
    close(fo);
}

Test(integ_cli, signal_by_process_name)
{
    char bin[128];
    copy_binary(bin, sizeof bin);
    const char *name = strrchr(bin, '/') + 1;
    char *out, *errs;
    char want[256];

    const char *quit[] = {"-sl", "quit", NULL};
    cr_assert_eq(run(bin, quit, &out, &errs), 1);
    snprintf(want, sizeof want, "nats-server: no %s processes running\n", name);
    cr_assert_str_eq(errs, want);
    free(out), free(errs);

    char log1[128], log2[128];
    snprintf(log1, sizeof log1, "%s/one.log", dir);
    snprintf(log2, sizeof log2, "%s/two.log", dir);
    pid_t p1 = start_server(bin, log1, NULL);

    /* The only one: found without a pid. */
    const char *reopen[] = {"--signal", "reopen", NULL};
    cr_assert_eq(run(bin, reopen, &out, &errs), 0, "%s", errs);
    free(out), free(errs);
    wait_for_text(log1, "File log re-opened");

    pid_t p2 = start_server(bin, log2, NULL);
    cr_assert_eq(run(bin, reopen, &out, &errs), 1);
    pid_t lo = p1 < p2 ? p1 : p2, hi = p1 < p2 ? p2 : p1;
    snprintf(want, sizeof want, "nats-server: multiple %s processes running:\n%d\n%d\n", name,
             (int)lo, (int)hi);
    cr_assert_str_eq(errs, want);
    free(out), free(errs);

    /* A bad command is reported once a target is known. */
    const char *bogus[] = {"-sl", "bogus=*", NULL};
    cr_assert_eq(run(bin, bogus, &out, &errs), 1);
    cr_assert_str_eq(errs, "nats-server: unknown signal \"bogus\"\n");
    free(out), free(errs);

    /* A glob signals every one. */
    const char *all[] = {"-sl", "quit=*", NULL};
    cr_assert_eq(run(bin, all, &out, &errs), 0, "%s", errs);
    free(out), free(errs);
    cr_assert_eq(wait_exit(p1), 0);
    cr_assert_eq(wait_exit(p2), 0);
    unlink(bin);
}

Test(integ_cli, stop_kills)
{
    const char *bin = nd_integ_server_path();
    char logf[128];
    snprintf(logf, sizeof logf, "%s/s.log", dir);
    pid_t pid = start_server(bin, logf, NULL);
    char sig[64];
    snprintf(sig, sizeof sig, "stop=%d", (int)pid);
    const char *stop[] = {"-sl", sig, NULL};
    char *out, *errs;
    cr_assert_eq(run(bin, stop, &out, &errs), 0, "%s", errs);
    free(out), free(errs);
    int st = 0;
    long long deadline = now_ms() + ND_INTEG_PROC_TIMEOUT_MS;
    while (waitpid(pid, &st, WNOHANG) == 0) {
        cr_assert(now_ms() < deadline, "not killed");
        usleep(10000);
    }
    children[0] = 0;
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}
