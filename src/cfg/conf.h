/* The configuration-file reader: parses nats-server's config format into a tree of nodes.
 *
 * Only syntax lives here (lexing, parsing, variables, includes); mapping keys to server options
 * is a separate layer. Every node and map key carries the file, line and column (both 1-based)
 * where it was written, so that layer can report "<file>:<line>:<col>: ..." errors. nats-server
 * prints 0-based columns in its option errors; callers that want its exact text print col - 1.
 *
 * Value typing follows nats-server 2.9.10 (conf/lex.go, conf/parse.go): durations are not a type
 * of their own but strings ("2m", 30s) or integers (seconds), decided by the option layer.
 * Ctx: any thread; the reader keeps no global state (it reads the environment for $VARs).
 */
#ifndef ND_NET_CONF_H
#define ND_NET_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nd_cfg_type {
    ND_CFG_MAP,
    ND_CFG_ARRAY,
    ND_CFG_STRING,
    ND_CFG_INT,
    ND_CFG_FLOAT,
    ND_CFG_BOOL,
    ND_CFG_DATETIME, /* seconds since the Unix epoch, UTC */
} nd_cfg_type_t;

typedef struct nd_cfg_node nd_cfg_node_t;

/* One map entry: keys keep their written order; a repeated key replaces the earlier value. */
typedef struct nd_cfg_entry {
    char *key;
    int line, col;      /* where the key was written */
    bool used_as_var;   /* the key was referenced as a $variable (not an unknown field then) */
    bool quoted;        /* the key was written in quotes (nats-server's position is inside) */
    nd_cfg_node_t *val; /* owned */
} nd_cfg_entry_t;

struct nd_cfg_node {
    nd_cfg_type_t type;
    char *file; /* owned; the file the value was written in ("<string name>" for text) */
    int line, col;
    /* Where nats-server's token for this value sits when it is an array element: inside the
     * quotes of a quoted string (quoted), just after the closing brace of a map (end_line,
     * end_col; a variable reference's position for a referenced map). */
    bool quoted;
    int end_line, end_col;
    union {
        struct {
            char *s; /* owned, NUL-terminated; may hold NULs written as \x00 */
            size_t len;
        } str;
        int64_t i; /* ND_CFG_INT and ND_CFG_DATETIME */
        double f;
        bool b;
        struct {
            nd_cfg_entry_t *e;
            size_t n, cap;
        } map;
        struct {
            nd_cfg_node_t **v;
            size_t n, cap;
        } arr;
    } u;
};

/* A parse error: text is "<file>:<line>:<col>: <what is wrong>". */
typedef struct nd_cfg_err {
    char file[256];
    int line, col;
    char text[1024];
} nd_cfg_err_t;

/* Limits that keep bad input from exhausting the stack or memory. */
#define ND_CFG_MAX_INPUT   (16u << 20) /* bytes per file or string */
#define ND_CFG_MAX_DEPTH   64          /* nested maps and arrays */
#define ND_CFG_MAX_INCLUDE 16          /* nested includes and environment-variable parses */
#define ND_CFG_MAX_NODES   (1u << 20)  /* nodes per parse, variable copies included */

/* Parses the file at path. Returns: true with *root (an owned ND_CFG_MAP) set, or false with
 * *err filled and *root NULL. Includes are relative to path's directory. */
bool nd_cfg_parse_file(const char *path, nd_cfg_node_t **root, nd_cfg_err_t *err)
    __attribute__((warn_unused_result));
/* Parses text, naming it name in positions and errors. Includes are relative to the working
 * directory, as nats-server's conf.Parse does. */
bool nd_cfg_parse_string(const char *text, const char *name, nd_cfg_node_t **root,
                         nd_cfg_err_t *err) __attribute__((warn_unused_result));
/* Frees a tree returned by a parse function (NULL is fine). */
void nd_cfg_free(nd_cfg_node_t *node);

/* Returns: the entry (borrowed) of map whose key equals key ignoring ASCII case, as nats-server's
 * option layer compares keys; NULL when absent or when map is not a map. */
nd_cfg_entry_t *nd_cfg_map_entry(const nd_cfg_node_t *map, const char *key);
/* Returns: the value (borrowed) for key in map, ignoring case; NULL when absent. */
nd_cfg_node_t *nd_cfg_get(const nd_cfg_node_t *map, const char *key);
/* Returns: the name of a node type ("map", "string", ...). */
const char *nd_cfg_type_name(nd_cfg_type_t t);

#endif
