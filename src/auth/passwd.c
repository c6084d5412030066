/* Password and token checks: bcrypt through libxcrypt, else constant time; see passwd.h. */
#include "auth/passwd.h"

#include <crypt.h>
#include <string.h>

#include "actors/alloc.h"
#include "util/nkey.h"

bool
nd_passwd_is_bcrypt(const char *s, size_t len)
{
    /* ^\$2[abxy]\$\d{2}\$ : 7 characters at least. */
    if (s == NULL || len < 7 || s[0] != '$' || s[1] != '2' || s[3] != '$' || s[6] != '$')
        return false;
    if (s[2] != 'a' && s[2] != 'b' && s[2] != 'x' && s[2] != 'y')
        return false;
    return s[4] >= '0' && s[4] <= '9' && s[5] >= '0' && s[5] <= '9';
}

bool
nd_passwd_bcrypt_valid(const char *s, size_t len)
{
    if (!nd_passwd_is_bcrypt(s, len) || len != 60)
        return false;
    int cost = (s[4] - '0') * 10 + (s[5] - '0');
    if (cost < 4 || cost > 31)
        return false;
    for (size_t i = 7; i < len; i++) {
        char c = s[i];
        if (!(c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

bool
nd_passwd_equal_ct(const void *a, size_t alen, const void *b, size_t blen)
{
    if (alen != blen)
        return false;
    const volatile unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < alen; i++)
        d |= (unsigned char)(x[i] ^ y[i]);
    return d == 0;
}

/* bcrypt through crypt_r. The state buffer is about 32 KiB, so it lives on the heap rather than on
 * a worker's stack, and it is wiped afterwards because it held the password. */
static bool
bcrypt_check(const char *stored, size_t slen, const char *given, size_t glen)
{
    if (memchr(given, '\0', glen) != NULL || memchr(stored, '\0', slen) != NULL)
        return false;
    char *pw = nd_xstrndup(given, glen);
    char *setting = nd_xstrndup(stored, slen);
    struct crypt_data *cd = nd_xcalloc(1, sizeof *cd);
    const char *out = crypt_r(pw, setting, cd);
    /* Failure is NULL or a string starting with '*' ("*0"/"*1"), which never equals a stored
     * bcrypt hash (those start with '$'); compare the whole output in constant time. */
    bool ok = out != NULL && out[0] == '$' && nd_passwd_equal_ct(out, strlen(out), stored, slen);
    nd_nkey_wipe(cd, sizeof *cd);
    nd_nkey_wipe(pw, glen);
    nd_free(cd);
    nd_free(pw);
    nd_free(setting);
    return ok;
}

bool
nd_passwd_check(const char *stored, size_t slen, const char *given, size_t glen)
{
    if (stored == NULL || given == NULL)
        return false;
    if (nd_passwd_is_bcrypt(stored, slen))
        return bcrypt_check(stored, slen, given, glen);
    return nd_passwd_equal_ct(stored, slen, given, glen);
}

char *
nd_passwd_bcrypt_hash(const char *pw, const char *prefix, unsigned cost)
{
    char salt[CRYPT_GENSALT_OUTPUT_SIZE];
    if (crypt_gensalt_rn(prefix, cost, NULL, 0, salt, sizeof salt) == NULL)
        return NULL;
    struct crypt_data *cd = nd_xcalloc(1, sizeof *cd);
    const char *out = crypt_r(pw, salt, cd);
    char *r = (out != NULL && out[0] == '$') ? nd_xstrdup(out) : NULL;
    nd_nkey_wipe(cd, sizeof *cd);
    nd_free(cd);
    return r;
}
