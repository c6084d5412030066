/* -sl/--signal: sends a control signal to a running natsd, as `nats-server --signal` does.
 * Ctx: the command-line process (main thread), before any server starts.
 */
#ifndef ND_SIGCTL_H
#define ND_SIGCTL_H

#include <stddef.h>

/* Maps a -sl command to its signal, as nats-server 2.10's CommandToSignal: stop SIGKILL,
 * quit SIGINT, term SIGTERM, reopen SIGUSR1, reload SIGHUP, ldm SIGUSR2.
 * Returns: the signal number, or -1 for an unknown command. */
int nd_sigctl_signal(const char *cmd);

/* Carries out "<cmd>[=<pid>|=<pid>*|=<pidfile>]". Without a pid the target is the single other
 * running process with this process's name (/proc/<pid>/comm), as nats-server finds its own
 * with pgrep; "<prefix>*" signals every such process whose pid starts with prefix.
 * Returns: 0 when sent; -1 with nats-server's text in err (without its "nats-server: " prefix):
 * `invalid pid: x`, `no natsd processes running`, `multiple natsd processes running:\n1\n2`,
 * `unknown signal "x"`, `\nsignal "quit" 12: no such process`,
 * `invalid signal parameters: [a b]`. */
int nd_sigctl_send(const char *arg, char *err, size_t errlen);

/* -sl on the command line: nd_sigctl_send, printing "nats-server: <err>" on stderr on failure.
 * Returns: the result code of nd_opts_parse_args, 2 (sent: exit 0) or 1 (error: exit 1). */
int nd_sigctl_cli(const char *arg);

#endif
