/* Integration-test harness: runs a nats-server-compatible binary as a child process and talks to
 * it over raw TCP sockets on 127.0.0.1.
 *
 * Which binary: the environment variable NATSD_TEST_SERVER if set, else the natsd built in the
 * same build directory (ND_INTEG_DEFAULT_SERVER, set by tests/CMakeLists.txt). The same tests run
 * unchanged against the reference nats-server, which is how their expectations were checked.
 *
 * Synchronisation is always a protocol round trip (PING/PONG, or a client library's flush); every
 * wait has a hang guard of ND_INTEG_TIMEOUT_MS and nothing asserts on how long something took.
 *
 * Failure handling: the helpers fail the running Criterion test themselves (cr_assert_fail with
 * the caller's file and line, expected and actual bytes escaped). Every child and socket is
 * registered, so the suite's .fini (nd_integ_cleanup) kills whatever a failed test left behind
 * and prints the server's captured stderr (where a sanitizer report would be). Children also get
 * PR_SET_PDEATHSIG, so a test process killed by Criterion's timeout does not leak a server.
 *
 * Ctx: tests' main thread only (not thread-safe, except that each server's log is captured by its
 * own reader thread behind a mutex).
 */
#ifndef ND_INTEG_HARNESS_H
#define ND_INTEG_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Hang guard for every wait on a socket or a child. Generous on purpose: sanitizer builds are slow
 * and the machine is shared. */
#define ND_INTEG_TIMEOUT_MS 10000
/* Hang guard for a server to start listening or to exit after SIGINT. */
#define ND_INTEG_PROC_TIMEOUT_MS 20000

typedef struct nd_integ_server nd_integ_server_t;
typedef struct nd_integ_conn nd_integ_conn_t;

/* Returns the path of the server binary under test. Borrows: static or environment storage. */
const char *nd_integ_server_path(void);

/* Starts the server with `-a 127.0.0.1 -p <port>` (port 0 means `-p -1`, a random port) plus the
 * NULL-terminated extra arguments (may be NULL), and waits until its log says it listens.
 * Fails the test if it exits first or does not listen in time. Returns: an owned handle. */
nd_integ_server_t *nd_integ_server_start(int port, const char *const *extra_args);

/* Starts the server with exactly the NULL-terminated arguments (no -a/-p added: the config
 * file names the port), and waits as nd_integ_server_start does. */
nd_integ_server_t *nd_integ_server_start_args(const char *const *args);

/* Starts the binary at path (not the server under test: another kind of server in a mixed
 * cluster) with exactly the NULL-terminated arguments, and waits as nd_integ_server_start does.
 * Returns: an owned handle, stopped and killed with the same functions as any other. */
nd_integ_server_t *nd_integ_server_start_bin(const char *path, const char *const *args);

/* Returns the client port the server logged. */
int nd_integ_server_port(const nd_integ_server_t *srv);

/* Sends SIGINT, waits for the exit, then fails the test unless the exit came in time, with status
 * 0 and without a sanitizer report in the log. Frees srv (also on failure, via cleanup). */
void nd_integ_server_stop_at(const char *file, int line, nd_integ_server_t *srv);
#define nd_integ_server_stop(srv) nd_integ_server_stop_at(__FILE__, __LINE__, (srv))

/* Sends sig to the server process. Fails the test if it has exited. */
void nd_integ_server_signal_at(const char *file, int line, nd_integ_server_t *srv, int sig);
#define nd_integ_server_signal(srv, sig) nd_integ_server_signal_at(__FILE__, __LINE__, (srv), (sig))

/* Kills the server with SIGKILL (a crash: no shutdown path runs), reaps it and frees srv. Fails
 * the test if it had already exited before the signal (a crash the test did not ask for). */
void nd_integ_server_kill_at(const char *file, int line, nd_integ_server_t *srv);
#define nd_integ_server_kill(srv) nd_integ_server_kill_at(__FILE__, __LINE__, (srv))

/* The server's output so far, for waiting on lines logged after a point: returns its length. */
size_t nd_integ_server_log_mark(nd_integ_server_t *srv);
/* Returns: whether needle occurs in the output at or after byte `from` (a mark). */
bool nd_integ_server_log_has(nd_integ_server_t *srv, size_t from, const char *needle);
/* Waits (hang guard ND_INTEG_PROC_TIMEOUT_MS) until needle occurs in the output at or after
 * byte `from`; fails the test, showing the log, if it does not. */
void nd_integ_server_wait_log_at(const char *file, int line, nd_integ_server_t *srv, size_t from,
                                 const char *needle);
#define nd_integ_server_wait_log(srv, from, needle)                                                \
    nd_integ_server_wait_log_at(__FILE__, __LINE__, (srv), (from), (needle))

/* Waits for the server to exit by itself (lame duck mode), then checks it as
 * nd_integ_server_stop does (status 0, no sanitizer report) and frees srv. */
void nd_integ_server_wait_exit_at(const char *file, int line, nd_integ_server_t *srv);
#define nd_integ_server_wait_exit(srv) nd_integ_server_wait_exit_at(__FILE__, __LINE__, (srv))

/* Writes the server's captured stdout/stderr to stderr under a header. */
void nd_integ_server_dump_log(const nd_integ_server_t *srv);

/* Suite .fini: closes every registered socket, SIGKILLs every server still running and prints its
 * log (a test that passed has stopped its servers already). */
void nd_integ_cleanup(void);

/* Connects to srv and reads the INFO line. Fails the test on error. Returns: an owned handle. */
nd_integ_conn_t *nd_integ_conn_open_at(const char *file, int line, nd_integ_server_t *srv);
#define nd_integ_conn_open(srv) nd_integ_conn_open_at(__FILE__, __LINE__, (srv))
/* The same for a server on 127.0.0.1:port that the harness did not start (one running inside the
 * test process: the unit tests of src/net). */
nd_integ_conn_t *nd_integ_conn_open_port_at(const char *file, int line, int port);
#define nd_integ_conn_open_port(port) nd_integ_conn_open_port_at(__FILE__, __LINE__, (port))

/* Returns the INFO line as received, including the trailing CRLF. Borrows: owned by c. */
const char *nd_integ_conn_info(const nd_integ_conn_t *c);

/* Closes the socket and frees c. */
void nd_integ_conn_close(nd_integ_conn_t *c);

/* Closes the socket with a TCP reset (SO_LINGER 0), as a crashed client would, and frees c. */
void nd_integ_conn_reset(nd_integ_conn_t *c);

/* Sends all of buf. While the socket is not writable it keeps reading what the server sends, so a
 * large write never deadlocks against the server's replies. Fails the test on error. */
void nd_integ_send_at(const char *file, int line, nd_integ_conn_t *c, const void *buf, size_t len);
#define nd_integ_send(c, buf, len) nd_integ_send_at(__FILE__, __LINE__, (c), (buf), (len))
#define ND_SEND(c, lit)            nd_integ_send_at(__FILE__, __LINE__, (c), (lit), sizeof(lit) - 1)
#define ND_SENDS(c, str)           nd_integ_send_at(__FILE__, __LINE__, (c), (str), strlen(str))

/* Reads until the next len bytes from the server are known and fails the test unless they equal
 * buf exactly. PINGs from the server (its keep-alive, sent about 2 s after CONNECT) are left
 * out of the comparison and not answered (a test never writes bytes it did not ask for), at frame
 * boundaries only (MSG/HMSG payloads are skipped by their sizes). Stops early at the first frame
 * that already differs from buf. */
void nd_integ_expect_at(const char *file, int line, nd_integ_conn_t *c, const void *buf,
                        size_t len);
#define nd_integ_expect(c, buf, len) nd_integ_expect_at(__FILE__, __LINE__, (c), (buf), (len))
#define ND_EXPECT(c, lit)            nd_integ_expect_at(__FILE__, __LINE__, (c), (lit), sizeof(lit) - 1)

/* Reads the next n frames (one server op each, a MSG/HMSG with its payload) and fails the test
 * unless they are, in some order, exactly the n strings given. For deliveries whose relative
 * order the protocol does not define (several subscriptions of one connection matching). */
void nd_integ_expect_unordered_at(const char *file, int line, nd_integ_conn_t *c,
                                  const char *const *frames, size_t n);
#define nd_integ_expect_unordered(c, frames, n)                                                    \
    nd_integ_expect_unordered_at(__FILE__, __LINE__, (c), (frames), (n))

/* Reads the next frame into a malloc'd NUL-terminated string (owned by the caller); returns NULL
 * at end of stream. Fails the test on timeout. */
char *nd_integ_read_frame_at(const char *file, int line, nd_integ_conn_t *c);
#define nd_integ_read_frame(c) nd_integ_read_frame_at(__FILE__, __LINE__, (c))

/* Waits up to timeout_ms until one of the n connections has a complete frame to read (or its
 * stream ended), for a test that drives several connections from one loop. Returns: the index
 * of the first such connection, or -1 on timeout. */
int nd_integ_conn_wait_any(nd_integ_conn_t *const *cs, size_t n, int timeout_ms);

/* Fails the test unless the server closes the connection without sending anything more (server
 * PINGs excepted). A reset counts as a close. */
void nd_integ_expect_close_at(const char *file, int line, nd_integ_conn_t *c);
#define nd_integ_expect_close(c) nd_integ_expect_close_at(__FILE__, __LINE__, (c))

/* Reads and discards everything until the server closes the connection (a reset counts), for a
 * connection the server is expected to give up on mid-stream (a slow consumer: what it had
 * written may end inside a frame). Fails the test if the stream stays silent for the hang
 * guard. Returns: the bytes discarded. */
size_t nd_integ_drain_until_close_at(const char *file, int line, nd_integ_conn_t *c);
#define nd_integ_drain_until_close(c) nd_integ_drain_until_close_at(__FILE__, __LINE__, (c))

/* One PING/PONG round trip: fails unless the next bytes are exactly PONG. */
#define ND_PING(c) (ND_SEND((c), "PING\r\n"), ND_EXPECT((c), "PONG\r\n"))

/* Sets a note (printf format) that every later failure message of the harness ends with, e.g.
 * which case of a table-driven test was running; NULL clears it. */
void nd_integ_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends the escaped form of buf (\r, \n, \t, \\ and \xNN for other non-printables) to a
 * malloc'd string, at most max input bytes, marking any cut. Returns: owned by the caller. */
char *nd_integ_escape(const void *buf, size_t len, size_t max);

/* ---- the server under test and the reference ---- */

/* Returns: whether the server under test is the reference nats-server (its path names it), for
 * the few cases that document a known difference instead of asserting one behaviour. */
bool nd_integ_is_reference(void);

/* Returns the reference binary to compare with (NATSD_TEST_REFERENCE, else /usr/sbin/nats-server
 * when it is executable), or NULL when there is none. Borrows: static or environment storage. */
const char *nd_integ_reference_path(void);

/* Returns a TCP port on 127.0.0.1 that was free a moment ago, for a port the test must name
 * before the server logs it (monitoring). */
int nd_integ_free_port(void);

/* ---- monitoring over HTTP ---- */

/* GETs path (with its query) from the monitoring port on 127.0.0.1 (HTTP/1.1, one connection per
 * request) and fails the test unless the status is 200. Returns: the body, chunks joined,
 * NUL-terminated; owned by the caller (free). */
char *nd_integ_http_get_at(const char *file, int line, int port, const char *path);
#define nd_integ_http_get(port, path) nd_integ_http_get_at(__FILE__, __LINE__, (port), (path))

/* Returns num_routes from /routez on the monitoring port. */
int nd_integ_num_routes_at(const char *file, int line, int port);
#define nd_integ_num_routes(port) nd_integ_num_routes_at(__FILE__, __LINE__, (port))

/* Polls /routez on the monitoring port until num_routes is exactly n (hang guard
 * ND_INTEG_PROC_TIMEOUT_MS, then the test fails showing the last answer). A poll, not a sleep:
 * a route forms or goes when the servers get to it, and nothing is asserted on how long. */
void nd_integ_wait_routes_at(const char *file, int line, int port, int n);
#define nd_integ_wait_routes(port, n) nd_integ_wait_routes_at(__FILE__, __LINE__, (port), (n))

/* Returns how many entries equal subject in the subscriptions_list of every route of
 * /routez?subs=1 together: the interest this server has learnt from its routes (one entry per
 * remote server for plain interest, one per remote queue group). */
int nd_integ_route_sub_count_at(const char *file, int line, int port, const char *subject);
#define nd_integ_route_sub_count(port, subject)                                                    \
    nd_integ_route_sub_count_at(__FILE__, __LINE__, (port), (subject))

/* Polls /routez?subs=1 until nd_integ_route_sub_count is exactly n (hang guard as
 * nd_integ_wait_routes): to wait until a remote subscription (n > 0) or its removal (n = 0)
 * has reached this server. */
void nd_integ_wait_route_sub_at(const char *file, int line, int port, const char *subject, int n);
#define nd_integ_wait_route_sub(port, subject, n)                                                  \
    nd_integ_wait_route_sub_at(__FILE__, __LINE__, (port), (subject), (n))

/* Returns the "leafnodes" count of /leafz on the monitoring port. */
int nd_integ_num_leafs_at(const char *file, int line, int port);
/* Polls /leafz on the monitoring port until it lists exactly n leaf connections (hang guard as
 * nd_integ_wait_routes). */
void nd_integ_wait_leafs_at(const char *file, int line, int port, int n);
#define nd_integ_wait_leafs(port, n) nd_integ_wait_leafs_at(__FILE__, __LINE__, (port), (n))

/* ---- config files ---- */

/* A config file in a directory of its own (made on the first write), where a test may put the
 * files the config names (nd_integ_conf_file). Zero-initialise it. */
typedef struct nd_integ_conf {
    char dir[64];
    char path[128]; /* dir/server.conf */
} nd_integ_conf_t;

/* Writes text to path atomically (a new file renamed over the old one), so a server reloading it
 * never reads half a file. Fails the test on error. */
void nd_integ_write_file(const char *path, const char *text);

/* Writes text as c's config file (atomically; makes the directory if needed). */
void nd_integ_conf_write(nd_integ_conf_t *c, const char *text);

/* Writes into out the path of the file name in c's directory (made if needed), for the files a
 * config names (keys, JWTs, creds). */
void nd_integ_conf_file(nd_integ_conf_t *c, const char *name, char *out, size_t cap);

/* Writes text as c's config and starts the server with `-c <path>` on a random port. Returns: an
 * owned handle, as nd_integ_server_start. */
nd_integ_server_t *nd_integ_conf_start(nd_integ_conf_t *c, const char *text);
/* The same, except that a server exiting because a port its config names is already in use
 * (taken by another process after the test chose it) gives NULL: choose again and retry. */
nd_integ_server_t *nd_integ_conf_try_start(nd_integ_conf_t *c, const char *text);

/* Removes c's directory and everything in it; a no-op for a conf never written. */
void nd_integ_conf_remove(nd_integ_conf_t *c);

/* Stops srv (as nd_integ_server_stop) and then removes c (as nd_integ_conf_remove). */
#define nd_integ_conf_stop(srv, c)                                                                 \
    (nd_integ_server_stop_at(__FILE__, __LINE__, (srv)), nd_integ_conf_remove(c))

/* Sends SIGHUP and waits for the reload's outcome line; fails the test unless it is the one
 * wanted (and the other did not come instead). */
void nd_integ_server_reload_at(const char *file, int line, nd_integ_server_t *srv, bool want_ok);
#define nd_integ_server_reload(srv, want_ok)                                                       \
    nd_integ_server_reload_at(__FILE__, __LINE__, (srv), (want_ok))

/* ---- waiting for callbacks ---- */

/* A counter that callbacks on other threads (a client library's) bump and the test waits on. */
typedef struct nd_integ_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int count;
} nd_integ_waiter_t;

void nd_integ_waiter_init(nd_integ_waiter_t *w);
void nd_integ_waiter_destroy(nd_integ_waiter_t *w);
/* Ctx: any thread. */
void nd_integ_waiter_bump(nd_integ_waiter_t *w);
/* Ctx: any thread. Returns the count now. */
int nd_integ_waiter_get(nd_integ_waiter_t *w);
/* Waits until the count reaches at least target or timeout_ms passes. Returns: the count (below
 * target on timeout). */
int nd_integ_waiter_wait(nd_integ_waiter_t *w, int target, int timeout_ms);

/* ---- the C client (libnats) ---- */

/* Fails the test unless a libnats call returns NATS_OK, showing its status and last error. Only
 * for tests that include <nats/nats.h>: the harness itself does not link libnats. */
#define ND_NATS_OK(call)                                                                           \
    do {                                                                                           \
        natsStatus s_ = (call);                                                                    \
        cr_assert(s_ == NATS_OK, "%s: %s (%s)", #call, natsStatus_GetText(s_),                     \
                  nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");                         \
    } while (0)

/* Writes srv's client URL ("nats://127.0.0.1:<port>") into out. */
void nd_integ_nats_url(const nd_integ_server_t *srv, char *out, size_t cap);

#endif
