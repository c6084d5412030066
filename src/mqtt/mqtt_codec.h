/* MQTT 3.1.1 packets and topic names, as pure functions (no server state): the fixed header with
 * its remaining length, the fields of the packets natsd reads, the packets it writes, and the
 * conversion between MQTT topics and NATS subjects that nats-server uses, so an MQTT publish on
 * a/b reaches a NATS subscriber of a.b and back.
 *
 * Topic to subject (nats-server's mqttToNATSSubjectConversion), level by level:
 * - `/` is `.`; a `/` that opens the topic, or follows an empty level, is `/.`; a `/` before
 *   another `/` or at the end is `./` (so empty levels survive: "foo//bar" is "foo./.bar");
 * - `.` inside a level is `//` (a NATS token separator cannot appear in a topic level);
 * - `+` is `*` and `#` is `>` in filters; a topic name with either is refused;
 * - white space (and DEL) is refused: it would break the NATS protocol line.
 * Subject to topic reverses it: `.` is `/`, `//` is `.`, `/.` is `/`, a lone `/` is dropped.
 * Ctx: any thread.
 */
#ifndef ND_MQTT_CODEC_H
#define ND_MQTT_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Packet types (the high nibble of the first byte). */
enum {
    ND_MQTT_CONNECT = 1,
    ND_MQTT_CONNACK = 2,
    ND_MQTT_PUBLISH = 3,
    ND_MQTT_PUBACK = 4,
    ND_MQTT_PUBREC = 5,
    ND_MQTT_PUBREL = 6,
    ND_MQTT_PUBCOMP = 7,
    ND_MQTT_SUBSCRIBE = 8,
    ND_MQTT_SUBACK = 9,
    ND_MQTT_UNSUBSCRIBE = 10,
    ND_MQTT_UNSUBACK = 11,
    ND_MQTT_PINGREQ = 12,
    ND_MQTT_PINGRESP = 13,
    ND_MQTT_DISCONNECT = 14,
};

/* CONNACK return codes. */
enum {
    ND_MQTT_RC_ACCEPTED = 0,
    ND_MQTT_RC_BAD_PROTOCOL = 1,
    ND_MQTT_RC_ID_REJECTED = 2,
    ND_MQTT_RC_UNAVAILABLE = 3,
    ND_MQTT_RC_BAD_USER_PASS = 4,
    ND_MQTT_RC_NOT_AUTHORIZED = 5,
};

/* CONNECT flags. */
#define ND_MQTT_CF_RESERVED    0x01
#define ND_MQTT_CF_CLEAN       0x02
#define ND_MQTT_CF_WILL        0x04
#define ND_MQTT_CF_WILL_QOS    0x18
#define ND_MQTT_CF_WILL_RETAIN 0x20
#define ND_MQTT_CF_PASSWORD    0x40
#define ND_MQTT_CF_USER        0x80

/* PUBLISH flags (low nibble of the first byte). */
#define ND_MQTT_PF_RETAIN 0x01
#define ND_MQTT_PF_QOS    0x06
#define ND_MQTT_PF_DUP    0x08

/* The largest remaining length (four length bytes). */
#define ND_MQTT_MAX_REMAINING 268435455u

typedef enum {
    ND_MQTT_HDR_OK,
    ND_MQTT_HDR_MORE,      /* not all of the fixed header is there yet */
    ND_MQTT_HDR_MALFORMED, /* a fifth length byte */
} nd_mqtt_hdr_status_t;

/* Reads a fixed header from buf[0..len). On OK: *type_flags the first byte, *rem the remaining
 * length, *hdr_len the fixed header's size (2..5). */
nd_mqtt_hdr_status_t nd_mqtt_read_header(const uint8_t *buf, size_t len, uint8_t *type_flags,
                                         uint32_t *rem, size_t *hdr_len);
/* Writes the remaining length n (<= ND_MQTT_MAX_REMAINING) to p. Returns: its bytes (1..4). */
size_t nd_mqtt_put_remaining(uint8_t *p, uint32_t n);

/* A cursor over one packet's variable header and payload. */
typedef struct nd_mqtt_reader {
    const uint8_t *p;
    size_t len, off;
} nd_mqtt_reader_t;

/* Each returns false when the packet ends too soon (malformed). */
bool nd_mqtt_read_u8(nd_mqtt_reader_t *r, uint8_t *v);
bool nd_mqtt_read_u16(nd_mqtt_reader_t *r, uint16_t *v);
/* A length-prefixed string or binary field: *s points into the packet. */
bool nd_mqtt_read_bytes(nd_mqtt_reader_t *r, const uint8_t **s, size_t *n);

/* Whether s is well-formed UTF-8 without NUL (MQTT-1.5.3-1, -2). */
bool nd_mqtt_valid_string(const uint8_t *s, size_t n);

typedef enum {
    ND_MQTT_TOPIC_OK,
    ND_MQTT_TOPIC_SPACE,    /* white space or DEL: unsupported characters */
    ND_MQTT_TOPIC_WILDCARD, /* a wildcard in a topic name */
    ND_MQTT_TOPIC_DOT,      /* a '.' without dots */
} nd_mqtt_topic_status_t;

/* Converts an MQTT topic name (filter: a topic filter, with wildcards) to a NATS subject in out
 * (room for 2 * n + 1 bytes; NUL-terminated). dots: a '.' becomes "//" (nats-server 2.10+);
 * without, a '.' is refused as nats-server 2.9.10 does (ND_MQTT_TOPIC_DOT). Returns: its
 * status; *out_len the length. */
nd_mqtt_topic_status_t nd_mqtt_topic_to_subject(const uint8_t *t, size_t n, bool filter, bool dots,
                                                char *out, size_t *out_len);
/* Converts a NATS subject back to an MQTT topic in out (room for n bytes). dots: "//" is '.'
 * (2.10+); without, "//" stays "//" (2.9.10). Returns: its length. */
size_t nd_mqtt_subject_to_topic(const char *s, size_t n, bool dots, uint8_t *out);
/* The flags a packet type's fixed header must carry (PUBLISH: any, returns 0). */
static inline uint8_t
nd_mqtt_fixed_flags(uint8_t type)
{
    return type == 6 || type == 8 || type == 10 ? 0x2 : 0;
}
/* Whether a filter's subject ends with ".>" after at least one token: "foo/#" must also match
 * "foo", so it needs a second subscription on the parent subject. */
bool nd_mqtt_needs_parent_sub(const char *subject, size_t n);
/* Whether a filter's subject starts with a wildcard ("*", ">", "*.x"): such a filter never
 * matches a topic starting with '$' (MQTT-4.7.2-1). */
bool nd_mqtt_filter_reserved(const char *subject, size_t n);

#endif
