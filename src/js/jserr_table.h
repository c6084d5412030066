/* TEMPORARY (branch js-scfg): the rows of nats-server's errors.json that stream_cfg.c needs,
 * until the whole table lands from branch js-jserr. */
#ifndef ND_JS_JSERR_TABLE_H
#define ND_JS_JSERR_TABLE_H

#define ND_JSE_TABLE(X) \
    X(INVALID_JSON, 400, 10025, "invalid JSON: {err}") \
    X(STREAM_MISMATCH, 400, 10056, "stream name in subject does not match request") \
    X(STREAM_NAME_CONTAINS_PATH_SEPARATORS, 400, 10128, "Stream name can not contain path separators") \
    X(STREAM_INVALID_CONFIG_F, 500, 10052, "{err}") \
    X(REPLICAS_COUNT_CANNOT_BE_NEGATIVE, 400, 10133, "replicas count cannot be negative") \
    X(PEDANTIC_F, 400, 10157, "pedantic mode: {err}") \
    X(MIRROR_WITH_FIRST_SEQ, 400, 10143, "stream mirrors can not have first sequence configured") \
    X(MIRROR_WITH_SUBJECTS, 400, 10034, "stream mirrors can not contain subjects") \
    X(MIRROR_WITH_SOURCES, 400, 10031, "stream mirrors can not also contain other sources") \
    X(MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED, 400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter") \
    X(MIRROR_INVALID_SUBJECT_FILTER, 400, 10151, "mirror transform source: {err}") \
    X(MIRROR_INVALID_TRANSFORM_DESTINATION, 400, 10154, "mirror transform: {err}") \
    X(MIRROR_OVERLAPPING_SUBJECT_FILTERS, 400, 10152, "mirror subject filters can not overlap") \
    X(MIRROR_INVALID_STREAM_NAME, 400, 10142, "mirrored stream name is invalid") \
    X(SOURCE_INVALID_STREAM_NAME, 400, 10141, "sourced stream name is invalid") \
    X(SOURCE_DUPLICATE_DETECTED, 400, 10140, "duplicate source configuration detected") \
    X(SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED, 400, 10144, "source with multiple subject transforms cannot also have a single subject filter") \
    X(SOURCE_INVALID_SUBJECT_FILTER, 400, 10145, "source transform source: {err}") \
    X(SOURCE_INVALID_TRANSFORM_DESTINATION, 400, 10146, "source transform: {err}") \
    X(SOURCE_OVERLAPPING_SUBJECT_FILTERS, 400, 10147, "source filters can not overlap") \
    X(STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ_F, 400, 10024, "stream external delivery prefix {prefix} must not contain wildcards") \
    X(STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, 400, 10022, "stream external delivery prefix {prefix} overlaps with stream subject {subject}") \
    X(STREAM_EXTERNAL_API_OVERLAP_F, 400, 10021, "stream external api prefix {prefix} must not overlap with {subject}") \
    X(STREAM_MAX_BYTES_REQUIRED, 400, 10113, "account requires a stream config to have max bytes set") \
    X(STREAM_MAX_STREAM_BYTES_EXCEEDED, 400, 10122, "stream max bytes exceeds account limit max stream bytes") \
    X(STREAM_TRANSFORM_INVALID_SOURCE, 400, 10155, "stream transform source: {err}") \
    X(STREAM_TRANSFORM_INVALID_DESTINATION, 400, 10156, "stream transform: {err}") \
    X(STREAM_REPLICAS_NOT_SUPPORTED, 500, 10074, "replicas > 1 not supported in non-clustered mode") \
    X(STREAM_MIRROR_NOT_UPDATABLE, 400, 10055, "stream mirror configuration can not be updated") \
    X(STREAM_CREATE_F, 500, 10049, "{err}")

#endif
