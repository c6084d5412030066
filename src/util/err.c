/* Error texts; see src/util/err.h. */
#include "util/err.h"

static const struct {
    const char *desc, *text;
    bool closes;
} table[] = {
#define ND_ERR_ROW(name, desc, text, closes) {desc, text, closes},
    ND_ERR_LIST(ND_ERR_ROW)
#undef ND_ERR_ROW
};

const char *
nd_strerror(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].desc : "unknown error";
}

const char *
nd_err_proto_text(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].text : NULL;
}

bool
nd_err_closes(nd_err_t err)
{
    return (unsigned)err < ND_ERR__COUNT ? table[err].closes : true;
}
