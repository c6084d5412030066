/* Server log in nats-server's line format: "[pid] 2006/01/02 15:04:05.000000 [INF] text".
 * Ctx: any thread (one write(2) per line, so lines never interleave). */
#ifndef ND_LOG_H
#define ND_LOG_H

#include <stdbool.h>

typedef enum { ND_LOG_FATAL, ND_LOG_ERROR, ND_LOG_WARN, ND_LOG_INFO, ND_LOG_DEBUG, ND_LOG_TRACE } nd_log_level_t;

void nd_log_setup(bool debug, bool trace, bool logtime, const char *file);
bool nd_log_enabled(nd_log_level_t level);
void nd_log(nd_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define nd_log_info(...)  nd_log(ND_LOG_INFO, __VA_ARGS__)
#define nd_log_warn(...)  nd_log(ND_LOG_WARN, __VA_ARGS__)
#define nd_log_error(...) nd_log(ND_LOG_ERROR, __VA_ARGS__)
#define nd_log_debug(...) do { if (nd_log_enabled(ND_LOG_DEBUG)) nd_log(ND_LOG_DEBUG, __VA_ARGS__); } while (0)
#define nd_log_trace(...) do { if (nd_log_enabled(ND_LOG_TRACE)) nd_log(ND_LOG_TRACE, __VA_ARGS__); } while (0)

#endif
