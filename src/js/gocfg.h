/* JetStream's Go-shaped configs (StreamConfig, ConsumerConfig and the requests around them)
 * decoded and encoded as nats-server's encoding/json does, from one table per Go struct.
 *
 * A table (nd_gocfg_struct_t) lists a C struct's fields in the Go struct's order with their JSON
 * names, kinds and omitempty flags. Decoding walks a body's keys through it as Go's encoding/json
 * does: keys match names exactly, then case-insensitively (nd_gojson_key_is); null leaves a field
 * alone, or sets a pointer, slice, map or time to nil, and is handed to an enum's unmarshaller; a
 * value of the wrong type is remembered as the first error ("json: cannot unmarshal ... into Go
 * struct field S.path of type T") while decoding goes on; an unmarshaller's error (an enum's, a
 * time's) replaces it and stops decoding; unknown keys are errors only in strict mode. Encoding
 * walks the same table, so the canonical JSON has nats-server's key order and omits exactly what
 * Go's omitempty omits.
 *
 * Used by stream_cfg.c and consumer_cfg.c, which add the defaults and checks of their own.
 * Ctx: any thread.
 */
#ifndef ND_JS_GOCFG_H
#define ND_JS_GOCFG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "js/apijson.h"

/* What a field is in Go and how the C struct holds it. */
typedef enum {
    ND_GOCFG_STR,    /* string: char * (NULL = "") */
    ND_GOCFG_INT,    /* int (64-bit): int64_t */
    ND_GOCFG_I32,    /* int32: int64_t */
    ND_GOCFG_I64,    /* int64: int64_t */
    ND_GOCFG_U64,    /* uint64: uint64_t, the whole range */
    ND_GOCFG_SEQ,    /* uint64 of a stream sequence: uint64_t, refused above INT64_MAX */
    ND_GOCFG_DUR,    /* time.Duration: int64_t nanoseconds */
    ND_GOCFG_BOOL,   /* bool */
    ND_GOCFG_STRS,   /* []string: char **, the count a size_t at noff */
    ND_GOCFG_DURS,   /* []time.Duration: int64_t *, the count a size_t at noff */
    ND_GOCFG_MAP,    /* map[string]string: a json_t object, or NULL */
    ND_GOCFG_TIME,   /* *time.Time: nd_gotime_t */
    ND_GOCFG_ENUM,   /* a string enum with its own UnmarshalJSON: int64_t, per the table en */
    ND_GOCFG_PTR,    /* *struct (sub): a pointer, NULL = nil */
    ND_GOCFG_STRUCT, /* struct (sub) held inline */
    ND_GOCFG_LIST,   /* []*struct or []struct (sub, as gotype says): void **, count at noff */
    ND_GOCFG_CUSTOM, /* the owner's own: the hooks in custom */
} nd_gocfg_kind_t;

/* How an enum's unmarshaller refuses a value. */
typedef enum {
    ND_GOCFG_ENUM_QUOTED, /* "can not unmarshal %q" of the raw JSON */
    ND_GOCFG_ENUM_PREFIX, /* unknown, then the raw JSON */
    ND_GOCFG_ENUM_STRING, /* decodes a Go string first (its type error), then unknown alone */
} nd_gocfg_enum_err_t;

typedef struct nd_gocfg_enumval {
    const char *text;
    int64_t v;
} nd_gocfg_enumval_t;

typedef struct nd_gocfg_enum {
    const nd_gocfg_enumval_t *vals; /* the texts it reads; the first of a value is written */
    size_t nvals;
    const char *other; /* written for a value not in vals */
    bool nocase;       /* texts compare ignoring ASCII case */
    nd_gocfg_enum_err_t err;
    const char *unknown; /* ND_GOCFG_ENUM_PREFIX, ND_GOCFG_ENUM_STRING: the error text */
} nd_gocfg_enum_t;

typedef struct nd_gocfg_dec nd_gocfg_dec_t;

/* A field the codec does not know: each hook gets the field's address in the struct. */
typedef struct nd_gocfg_custom {
    void (*decode)(nd_gocfg_dec_t *d, void *field, const json_t *v); /* v may be null */
    json_t *(*encode)(const void *field, bool omitempty);            /* NULL: omitted */
    void (*free)(void *field);                                       /* leaves it nil */
} nd_gocfg_custom_t;

typedef struct nd_gocfg_struct nd_gocfg_struct_t;

typedef struct nd_gocfg_field {
    const char *name; /* the JSON name */
    nd_gocfg_kind_t kind;
    size_t off, noff; /* the field's offset; the count's for slices */
    bool omitempty;
    const char *gotype; /* Go's type in type errors; NULL: the kind's ("int", "[]string", ...) */
    const nd_gocfg_struct_t *sub;
    const nd_gocfg_enum_t *en;
    const nd_gocfg_custom_t *custom;
    bool request_only; /* the request's own field: not written with config_only */
} nd_gocfg_field_t;

struct nd_gocfg_struct {
    const char *goname; /* "StreamConfigRequest": type errors name "server.<goname>" */
    size_t size;
    const nd_gocfg_field_t *f;
    size_t nf;
};

/* Table rows: T the C struct, n the JSON name, k the kind without its prefix, m the member. */
#define ND_GOCFG_F(T, n, k, m, o)                                                                  \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_##k, .off = offsetof(T, m), .omitempty = o                     \
    }
#define ND_GOCFG_FN(T, n, k, m, cnt, o)                                                            \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_##k, .off = offsetof(T, m), .noff = offsetof(T, cnt),          \
        .omitempty = o                                                                             \
    }
#define ND_GOCFG_FSUB(T, n, k, m, o, sd, gt)                                                       \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_##k, .off = offsetof(T, m), .omitempty = o, .gotype = gt,      \
        .sub = sd                                                                                  \
    }
#define ND_GOCFG_FLIST(T, n, m, cnt, o, sd, gt)                                                    \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_LIST, .off = offsetof(T, m), .noff = offsetof(T, cnt),         \
        .omitempty = o, .gotype = gt, .sub = sd                                                    \
    }
#define ND_GOCFG_FENUM(T, n, m, o, e, gt)                                                          \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_ENUM, .off = offsetof(T, m), .omitempty = o, .gotype = gt,     \
        .en = e                                                                                    \
    }
#define ND_GOCFG_FCUSTOM(T, n, m, o, c, gt)                                                        \
    {                                                                                              \
        .name = n, .kind = ND_GOCFG_CUSTOM, .off = offsetof(T, m), .omitempty = o, .gotype = gt,   \
        .custom = c                                                                                \
    }
#define ND_GOCFG_NF(a) (sizeof(a) / sizeof((a)[0]))

/* A decoding: set aj (the number literals of nd_apijson_parse; NULL for a json_t built here)
 * and strict, zero the rest. */
struct nd_gocfg_dec {
    const nd_apijson_t *aj;
    bool strict;
    bool fatal;    /* an unmarshaller failed: Go stops decoding */
    char err[400]; /* the first error ("" = none) */
};

/* Decodes root into base, a struct of sd (zeroed, or holding what the keys override): null
 * decodes nothing, anything but an object is Go's error for the whole value.
 * Returns: false with d->err. base may hold fields either way: free it with nd_gocfg_free. */
bool nd_gocfg_decode(nd_gocfg_dec_t *d, const nd_gocfg_struct_t *sd, void *base, json_t *root);

/* An unmarshaller's error (for custom fields): replaces any earlier type error and ends
 * decoding. */
void nd_gocfg_fail(nd_gocfg_dec_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Returns: a new object of base's fields in sd's order, as Go's encoding/json writes them;
 * config_only leaves out the request_only ones. */
json_t *nd_gocfg_encode(const nd_gocfg_struct_t *sd, const void *base, bool config_only);

/* Frees what base's fields own and leaves them nil (base itself is the caller's). */
void nd_gocfg_free(const nd_gocfg_struct_t *sd, void *base);

/* Frees v, a []string of n strings, and each string; v may be NULL. */
void nd_gocfg_strs_free(char **v, size_t n);

/* Go's %q of a byte string into out: quoted, with \" \\ and \x.. escapes, cut to fit. */
void nd_gocfg_quote(const char *raw, char *out, size_t cap);

/* Returns: whether two canonical configs are equal but for their "_nats." metadata keys (the
 * server's own, which a create request's config does not carry). */
bool nd_gocfg_equal(const json_t *a, const json_t *b);

/* Sets the metadata's "_nats.req.level" (the API level the config needs: "1" or "0") and drops
 * the dynamic "_nats.ver" and "_nats.level" (setStaticStreamMetadata and
 * setStaticConsumerMetadata). metadata: an object, or NULL, which it creates. */
void nd_gocfg_set_req_level(json_t **metadata, bool level1);

#endif
