/* libFuzzer driver for the config-file reader (src/cfg/conf.c).
 *
 * Input: the text of a config file. Every call parses an exactly sized, NUL-terminated heap copy,
 * so ASan reports any read past the text. Checks what conf.h promises: a parse either succeeds
 * with a map root whose every node has a known type, a 1-based position, and map keys that are
 * NUL-terminated strings, or fails with a "<name>:<line>:<col>: ..." text (name: this text's,
 * or "<env X>" for an environment variable's value parsed by a $X reference) and no tree; nesting
 * stays within ND_CFG_MAX_DEPTH. The tree is freed (LeakSanitizer checks that). Includes are
 * resolved against the working directory, as nats-server does; the corpus has none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const nd_cfg_node_t *n, int depth)
{
    if (n == NULL || depth > ND_CFG_MAX_DEPTH + 1 || n->line < 1 || n->col < 1)
        abort();
    switch (n->type) {
    case ND_CFG_MAP:
        for (size_t i = 0; i < n->u.map.n; i++) {
            const nd_cfg_entry_t *e = &n->u.map.e[i];
            if (e->key == NULL || e->line < 1)
                abort();
            (void)strlen(e->key);
            check(e->val, depth + 1);
        }
        break;
    case ND_CFG_ARRAY:
        for (size_t i = 0; i < n->u.arr.n; i++)
            check(n->u.arr.v[i], depth + 1);
        break;
    case ND_CFG_STRING:
        if (n->u.str.s == NULL || n->u.str.s[n->u.str.len] != '\0')
            abort();
        break;
    case ND_CFG_INT:
    case ND_CFG_FLOAT:
    case ND_CFG_BOOL:
    case ND_CFG_DATETIME:
        break;
    default:
        abort();
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text == NULL)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    nd_cfg_node_t *root = NULL;
    nd_cfg_err_t err;
    memset(&err, 0, sizeof err);
    if (nd_cfg_parse_string(text, "fuzz.conf", &root, &err)) {
        if (root == NULL || root->type != ND_CFG_MAP)
            abort();
        check(root, 0);
    } else {
        /* The position names this text, or an environment variable's value ("<env X>") that a
         * $X reference parsed. */
        if (root != NULL || memchr(err.text, '\0', sizeof err.text) == NULL ||
            (strncmp(err.text, "fuzz.conf:", 10) != 0 && strncmp(err.text, "<env ", 5) != 0))
            abort();
    }
    nd_cfg_free(root);
    free(text);
    return 0;
}
