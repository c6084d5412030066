/* The error table; see src/util/err.h. */
#include "util/err.h"

static const struct {
    const char *name, *text, *proto;
    bool closes;
} table[] = {
#define ND_ERR_ROW(name, text, proto, closes) {#name, text, proto, closes},
    ND_ERR_LIST(ND_ERR_ROW)
#undef ND_ERR_ROW
};

_Static_assert(sizeof(table) / sizeof(table[0]) == ND_ERR__COUNT, "one row per code");

const char *
nd_strerror(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].text : "unknown error";
}

const char *
nd_err_name(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].name : "ND_ERR_UNKNOWN";
}

const char *
nd_err_proto_text(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].proto : NULL;
}

bool
nd_err_closes(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].closes : true;
}
