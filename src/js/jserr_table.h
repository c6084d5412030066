/* The JetStream API error table: one row per entry of nats-server's server/errors.json
 * (nats-server v2.14.0-585-g1787eee03, commit 1787eee035cf, 226 entries), sorted by err_code.
 *
 * X(NAME, code, err_code, "description"): NAME is nats-server's constant with the JS prefix
 * and the Err suffix dropped, a trailing F (or ErrF) kept as _F, in UPPER_SNAKE; code is the
 * HTTP-like status; err_code is the number clients match on; the description may hold
 * {placeholders} that nd_jserr_set fills in. Written by scripts/gen-jserr-table.py; to
 * refresh, run it on a newer errors.json and review the diff (rows are only ever added
 * upstream, never renumbered).
 */
#ifndef ND_JS_JSERR_TABLE_H
#define ND_JS_JSERR_TABLE_H

/* clang-format off */
#define ND_JSE_TABLE(X) \
    X(ACCOUNT_RESOURCES_EXCEEDED, 400, 10002, "resource limits exceeded for account") \
    X(BAD_REQUEST, 400, 10003, "bad request") \
    X(CLUSTER_INCOMPLETE, 503, 10004, "incomplete results") \
    X(CLUSTER_NO_PEERS_F, 400, 10005, "{err}") \
    X(CLUSTER_NOT_ACTIVE, 500, 10006, "JetStream not in clustered mode") \
    X(CLUSTER_NOT_ASSIGNED, 500, 10007, "JetStream cluster not assigned to this server") \
    X(CLUSTER_NOT_AVAIL, 503, 10008, "JetStream system temporarily unavailable") \
    X(CLUSTER_NOT_LEADER, 500, 10009, "JetStream cluster can not handle request") \
    X(CLUSTER_REQUIRED, 503, 10010, "JetStream clustering support required") \
    X(CLUSTER_TAGS, 400, 10011, "tags placement not supported for operation") \
    X(CONSUMER_CREATE_F, 500, 10012, "{err}") \
    X(CONSUMER_NAME_EXIST, 400, 10013, "consumer name already in use") \
    X(CONSUMER_NOT_FOUND, 404, 10014, "consumer not found") \
    X(SNAPSHOT_DELIVER_SUBJECT_INVALID, 400, 10015, "deliver subject not valid") \
    X(CONSUMER_DURABLE_NAME_NOT_IN_SUBJECT, 400, 10016, "consumer expected to be durable but no durable name set in subject") \
    X(CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT, 400, 10017, "consumer name in subject does not match durable name in request") \
    X(CONSUMER_DURABLE_NAME_NOT_SET, 400, 10018, "consumer expected to be durable but a durable name was not set") \
    X(CONSUMER_EPHEMERAL_WITH_DURABLE_IN_SUBJECT, 400, 10019, "consumer expected to be ephemeral but detected a durable name set in subject") \
    X(CONSUMER_EPHEMERAL_WITH_DURABLE_NAME, 400, 10020, "consumer expected to be ephemeral but a durable name was set in request") \
    X(STREAM_EXTERNAL_API_OVERLAP_F, 400, 10021, "stream external api prefix {prefix} must not overlap with {subject}") \
    X(STREAM_EXTERNAL_DEL_PREFIX_OVERLAPS_F, 400, 10022, "stream external delivery prefix {prefix} overlaps with stream subject {subject}") \
    X(INSUFFICIENT_RESOURCES, 503, 10023, "insufficient resources") \
    X(STREAM_INVALID_EXTERNAL_DELIVERY_SUBJ_F, 400, 10024, "stream external delivery prefix {prefix} must not contain wildcards") \
    X(INVALID_JSON, 400, 10025, "invalid JSON: {err}") \
    X(MAXIMUM_CONSUMERS_LIMIT, 400, 10026, "maximum consumers limit reached") \
    X(MAXIMUM_STREAMS_LIMIT, 400, 10027, "maximum number of streams reached") \
    X(MEMORY_RESOURCES_EXCEEDED, 500, 10028, "insufficient memory resources available") \
    X(MIRROR_CONSUMER_SETUP_FAILED_F, 500, 10029, "{err}") \
    X(MIRROR_MAX_MESSAGE_SIZE_TOO_BIG, 400, 10030, "stream mirror must have max message size >= source") \
    X(MIRROR_WITH_SOURCES, 400, 10031, "stream mirrors can not also contain other sources") \
    X(MIRROR_WITH_START_SEQ_AND_TIME, 400, 10032, "stream mirrors can not have both start seq and start time configured") \
    X(MIRROR_WITH_SUBJECT_FILTERS, 400, 10033, "stream mirrors can not contain filtered subjects") \
    X(MIRROR_WITH_SUBJECTS, 400, 10034, "stream mirrors can not contain subjects") \
    X(NO_ACCOUNT, 503, 10035, "account not found") \
    X(CLUSTER_UNSUPPORT_FEATURE, 503, 10036, "not currently supported in clustered mode") \
    X(NO_MESSAGE_FOUND, 404, 10037, "no message found") \
    X(NOT_EMPTY_REQUEST, 400, 10038, "expected an empty request payload") \
    X(NOT_ENABLED_FOR_ACCOUNT, 503, 10039, "JetStream not enabled for account") \
    X(CLUSTER_PEER_NOT_MEMBER, 400, 10040, "peer not a member") \
    X(RAFT_GENERAL_F, 500, 10041, "{err}") \
    X(RESTORE_SUBSCRIBE_FAILED_F, 500, 10042, "JetStream unable to subscribe to restore snapshot {subject}: {err}") \
    X(SEQUENCE_NOT_FOUND_F, 400, 10043, "sequence {seq} not found") \
    X(CLUSTER_SERVER_NOT_MEMBER, 400, 10044, "server is not a member of the cluster") \
    X(SOURCE_CONSUMER_SETUP_FAILED_F, 500, 10045, "{err}") \
    X(SOURCE_MAX_MESSAGE_SIZE_TOO_BIG, 400, 10046, "stream source must have max message size >= target") \
    X(STORAGE_RESOURCES_EXCEEDED, 500, 10047, "insufficient storage resources available") \
    X(STREAM_ASSIGNMENT_F, 500, 10048, "{err}") \
    X(STREAM_CREATE_F, 500, 10049, "{err}") \
    X(STREAM_DELETE_F, 500, 10050, "{err}") \
    X(STREAM_GENERAL_ERROR_F, 500, 10051, "{err}") \
    X(STREAM_INVALID_CONFIG_F, 500, 10052, "{err}") \
    X(STREAM_LIMITS_F, 500, 10053, "{err}") \
    X(STREAM_MESSAGE_EXCEEDS_MAXIMUM, 400, 10054, "message size exceeds maximum allowed") \
    X(STREAM_MIRROR_NOT_UPDATABLE, 400, 10055, "stream mirror configuration can not be updated") \
    X(STREAM_MISMATCH, 400, 10056, "stream name in subject does not match request") \
    X(STREAM_MSG_DELETE_FAILED_F, 500, 10057, "{err}") \
    X(STREAM_NAME_EXIST, 400, 10058, "stream name already in use with a different configuration") \
    X(STREAM_NOT_FOUND, 404, 10059, "stream not found") \
    X(STREAM_NOT_MATCH, 400, 10060, "expected stream does not match") \
    X(STREAM_REPLICAS_NOT_UPDATABLE, 400, 10061, "Replicas configuration can not be updated") \
    X(STREAM_RESTORE_F, 500, 10062, "restore failed: {err}") \
    X(STREAM_SEQUENCE_NOT_MATCH, 503, 10063, "expected stream sequence does not match") \
    X(STREAM_SNAPSHOT_F, 500, 10064, "snapshot failed: {err}") \
    X(STREAM_SUBJECT_OVERLAP, 400, 10065, "subjects overlap with an existing stream") \
    X(STREAM_TEMPLATE_CREATE_F, 500, 10066, "{err}") \
    X(STREAM_TEMPLATE_DELETE_F, 500, 10067, "{err}") \
    X(STREAM_TEMPLATE_NOT_FOUND, 404, 10068, "template not found") \
    X(STREAM_UPDATE_F, 500, 10069, "{err}") \
    X(STREAM_WRONG_LAST_MSG_ID_F, 400, 10070, "wrong last msg ID: {id}") \
    X(STREAM_WRONG_LAST_SEQUENCE_F, 400, 10071, "wrong last sequence: {seq}") \
    X(TEMP_STORAGE_FAILED, 500, 10072, "JetStream unable to open temp storage for restore") \
    X(TEMPLATE_NAME_NOT_MATCH_SUBJECT, 400, 10073, "template name in subject does not match request") \
    X(STREAM_REPLICAS_NOT_SUPPORTED, 500, 10074, "replicas > 1 not supported in non-clustered mode") \
    X(PEER_REMAP, 503, 10075, "peer remap failed") \
    X(NOT_ENABLED, 503, 10076, "JetStream not enabled") \
    X(STREAM_STORE_FAILED_F, 503, 10077, "{err}") \
    X(CONSUMER_CONFIG_REQUIRED, 400, 10078, "consumer config required") \
    X(CONSUMER_DELIVER_TO_WILDCARDS, 400, 10079, "consumer deliver subject has wildcards") \
    X(CONSUMER_PUSH_MAX_WAITING, 400, 10080, "consumer in push mode can not set max waiting") \
    X(CONSUMER_DELIVER_CYCLE, 400, 10081, "consumer deliver subject forms a cycle") \
    X(CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED, 400, 10082, "consumer requires ack policy for max ack pending") \
    X(CONSUMER_SMALL_HEARTBEAT, 400, 10083, "consumer idle heartbeat needs to be >= 100ms") \
    X(CONSUMER_PULL_REQUIRES_ACK, 400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream") \
    X(CONSUMER_PULL_NOT_DURABLE, 400, 10085, "consumer in pull mode requires a durable name") \
    X(CONSUMER_PULL_WITH_RATE_LIMIT, 400, 10086, "consumer in pull mode can not have rate limit set") \
    X(CONSUMER_MAX_WAITING_NEGATIVE, 400, 10087, "consumer max waiting needs to be positive") \
    X(CONSUMER_HB_REQUIRES_PUSH, 400, 10088, "consumer idle heartbeat requires a push based consumer") \
    X(CONSUMER_FC_REQUIRES_PUSH, 400, 10089, "consumer flow control requires a push based consumer") \
    X(CONSUMER_DIRECT_REQUIRES_PUSH, 400, 10090, "consumer direct requires a push based consumer") \
    X(CONSUMER_DIRECT_REQUIRES_EPHEMERAL, 400, 10091, "consumer direct requires an ephemeral consumer") \
    X(CONSUMER_ON_MAPPED, 400, 10092, "consumer direct on a mapped consumer") \
    X(CONSUMER_FILTER_NOT_SUBSET, 400, 10093, "consumer filter subject is not a valid subset of the interest subjects") \
    X(CONSUMER_INVALID_POLICY_F, 400, 10094, "{err}") \
    X(CONSUMER_INVALID_SAMPLING_F, 400, 10095, "failed to parse consumer sampling configuration: {err}") \
    X(STREAM_INVALID, 500, 10096, "stream not valid") \
    X(STREAM_HEADER_EXCEEDS_MAXIMUM, 400, 10097, "header size exceeds maximum allowed of 64k") \
    X(CONSUMER_WQ_REQUIRES_EXPLICIT_ACK, 400, 10098, "workqueue stream requires explicit ack") \
    X(CONSUMER_WQ_MULTIPLE_UNFILTERED, 400, 10099, "multiple non-filtered consumers not allowed on workqueue stream") \
    X(CONSUMER_WQ_CONSUMER_NOT_UNIQUE, 400, 10100, "filtered consumer not unique on workqueue stream") \
    X(CONSUMER_WQ_CONSUMER_NOT_DELIVER_ALL, 400, 10101, "consumer must be deliver all on workqueue stream") \
    X(CONSUMER_NAME_TOO_LONG_F, 400, 10102, "consumer name is too long, maximum allowed is {max}") \
    X(CONSUMER_BAD_DURABLE_NAME, 400, 10103, "durable name can not contain '.', '*', '>'") \
    X(CONSUMER_STORE_FAILED_F, 500, 10104, "error creating store for consumer: {err}") \
    X(CONSUMER_EXISTING_ACTIVE, 400, 10105, "consumer already exists and is still active") \
    X(CONSUMER_REPLACEMENT_WITH_DIFFERENT_NAME, 400, 10106, "consumer replacement durable config not the same") \
    X(CONSUMER_DESCRIPTION_TOO_LONG_F, 400, 10107, "consumer description is too long, maximum allowed is {max}") \
    X(CONSUMER_WITH_FLOW_CONTROL_NEEDS_HEARTBEATS, 400, 10108, "consumer with flow control also needs heartbeats") \
    X(STREAM_SEALED, 400, 10109, "invalid operation on sealed stream") \
    X(STREAM_PURGE_FAILED_F, 500, 10110, "{err}") \
    X(STREAM_ROLLUP_FAILED_F, 500, 10111, "{err}") \
    X(CONSUMER_INVALID_DELIVER_SUBJECT, 400, 10112, "invalid push consumer deliver subject") \
    X(STREAM_MAX_BYTES_REQUIRED, 400, 10113, "account requires a stream config to have max bytes set") \
    X(CONSUMER_MAX_REQUEST_BATCH_NEGATIVE, 400, 10114, "consumer max request batch needs to be > 0") \
    X(CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL, 400, 10115, "consumer max request expires needs to be >= 1ms") \
    X(CONSUMER_MAX_DELIVER_BACKOFF, 400, 10116, "max deliver is required to be > length of backoff values") \
    X(STREAM_INFO_MAX_SUBJECTS, 500, 10117, "subject details would exceed maximum allowed") \
    X(STREAM_OFFLINE, 500, 10118, "stream is offline") \
    X(CONSUMER_OFFLINE, 500, 10119, "consumer is offline") \
    X(NO_LIMITS, 400, 10120, "no JetStream default or applicable tiered limit present") \
    X(CONSUMER_MAX_PENDING_ACK_EXCESS_F, 400, 10121, "consumer max ack pending exceeds system limit of {limit}") \
    X(STREAM_MAX_STREAM_BYTES_EXCEEDED, 400, 10122, "stream max bytes exceeds account limit max stream bytes") \
    X(STREAM_MOVE_AND_SCALE, 400, 10123, "can not move and scale a stream in a single update") \
    X(STREAM_MOVE_IN_PROGRESS, 400, 10124, "stream move already in progress") \
    X(CONSUMER_MAX_REQUEST_BATCH_EXCEEDED_F, 400, 10125, "consumer max request batch exceeds server limit of {limit}") \
    X(CONSUMER_REPLICAS_EXCEEDS_STREAM, 400, 10126, "consumer config replica count exceeds parent stream") \
    X(CONSUMER_NAME_CONTAINS_PATH_SEPARATORS, 400, 10127, "Consumer name can not contain path separators") \
    X(STREAM_NAME_CONTAINS_PATH_SEPARATORS, 400, 10128, "Stream name can not contain path separators") \
    X(STREAM_RECONFIGURE_NOT_IN_PROGRESS, 400, 10129, "stream reconfiguration not in progress") \
    X(STREAM_NAME_EXIST_RESTORE_FAILED, 400, 10130, "stream name already in use, cannot restore") \
    X(CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH, 400, 10131, "Consumer create request did not match filtered subject from create subject") \
    X(CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH, 400, 10132, "Consumer Durable and Name have to be equal if both are provided") \
    X(REPLICAS_COUNT_CANNOT_BE_NEGATIVE, 400, 10133, "replicas count cannot be negative") \
    X(CONSUMER_REPLICAS_SHOULD_MATCH_STREAM, 400, 10134, "consumer config replicas must match interest retention stream's replicas") \
    X(CONSUMER_METADATA_LENGTH_F, 400, 10135, "consumer metadata exceeds maximum size of {limit}") \
    X(CONSUMER_DUPLICATE_FILTER_SUBJECTS, 400, 10136, "consumer cannot have both FilterSubject and FilterSubjects specified") \
    X(CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED, 400, 10137, "consumer with multiple subject filters cannot use subject based API") \
    X(CONSUMER_OVERLAPPING_SUBJECT_FILTERS, 400, 10138, "consumer subject filters cannot overlap") \
    X(CONSUMER_EMPTY_FILTER, 400, 10139, "consumer filter in FilterSubjects cannot be empty") \
    X(SOURCE_DUPLICATE_DETECTED, 400, 10140, "duplicate source configuration detected") \
    X(SOURCE_INVALID_STREAM_NAME, 400, 10141, "sourced stream name is invalid") \
    X(MIRROR_INVALID_STREAM_NAME, 400, 10142, "mirrored stream name is invalid") \
    X(MIRROR_WITH_FIRST_SEQ, 400, 10143, "stream mirrors can not have first sequence configured") \
    X(SOURCE_MULTIPLE_FILTERS_NOT_ALLOWED, 400, 10144, "source with multiple subject transforms cannot also have a single subject filter") \
    X(SOURCE_INVALID_SUBJECT_FILTER, 400, 10145, "source transform source: {err}") \
    X(SOURCE_INVALID_TRANSFORM_DESTINATION, 400, 10146, "source transform: {err}") \
    X(SOURCE_OVERLAPPING_SUBJECT_FILTERS, 400, 10147, "source filters can not overlap") \
    X(CONSUMER_ALREADY_EXISTS, 400, 10148, "consumer already exists") \
    X(CONSUMER_DOES_NOT_EXIST, 400, 10149, "consumer does not exist") \
    X(MIRROR_MULTIPLE_FILTERS_NOT_ALLOWED, 400, 10150, "mirror with multiple subject transforms cannot also have a single subject filter") \
    X(MIRROR_INVALID_SUBJECT_FILTER, 400, 10151, "mirror transform source: {err}") \
    X(MIRROR_OVERLAPPING_SUBJECT_FILTERS, 400, 10152, "mirror subject filters can not overlap") \
    X(CONSUMER_INACTIVE_THRESHOLD_EXCESS, 400, 10153, "consumer inactive threshold exceeds system limit of {limit}") \
    X(MIRROR_INVALID_TRANSFORM_DESTINATION, 400, 10154, "mirror transform: {err}") \
    X(STREAM_TRANSFORM_INVALID_SOURCE, 400, 10155, "stream transform source: {err}") \
    X(STREAM_TRANSFORM_INVALID_DESTINATION, 400, 10156, "stream transform: {err}") \
    X(PEDANTIC_F, 400, 10157, "pedantic mode: {err}") \
    X(STREAM_DUPLICATE_MESSAGE_CONFLICT, 409, 10158, "duplicate message id is in process") \
    X(CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP, 400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set") \
    X(CONSUMER_INVALID_PRIORITY_GROUP, 400, 10160, "Provided priority group does not exist for this consumer") \
    X(CONSUMER_EMPTY_GROUP_NAME, 400, 10161, "Group name cannot be an empty string") \
    X(CONSUMER_INVALID_GROUP_NAME, 400, 10162, "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters") \
    X(STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_NOT_READY, 503, 10163, "expected last sequence per subject temporarily unavailable") \
    X(STREAM_WRONG_LAST_SEQUENCE_CONSTANT, 400, 10164, "wrong last sequence") \
    X(MESSAGE_TTL_INVALID, 400, 10165, "invalid per-message TTL") \
    X(MESSAGE_TTL_DISABLED, 400, 10166, "per-message TTL is disabled") \
    X(STREAM_TOO_MANY_REQUESTS, 429, 10167, "too many requests") \
    X(MESSAGE_INCR_DISABLED, 400, 10168, "message counters is disabled") \
    X(MESSAGE_INCR_MISSING, 400, 10169, "message counter increment is missing") \
    X(MESSAGE_INCR_PAYLOAD, 400, 10170, "message counter has payload") \
    X(MESSAGE_INCR_INVALID, 400, 10171, "message counter increment is invalid") \
    X(MESSAGE_COUNTER_BROKEN, 400, 10172, "message counter is broken") \
    X(MIRROR_WITH_COUNTERS, 400, 10173, "stream mirrors can not also calculate counters") \
    X(ATOMIC_PUBLISH_DISABLED, 400, 10174, "atomic publish is disabled") \
    X(ATOMIC_PUBLISH_MISSING_SEQ, 400, 10175, "atomic publish sequence is missing") \
    X(ATOMIC_PUBLISH_INCOMPLETE_BATCH, 400, 10176, "atomic publish batch is incomplete") \
    X(ATOMIC_PUBLISH_UNSUPPORTED_HEADER_BATCH, 400, 10177, "atomic publish unsupported header used: {header}") \
    X(CONSUMER_PUSH_WITH_PRIORITY_GROUP, 400, 10178, "priority groups can not be used with push consumers") \
    X(ATOMIC_PUBLISH_INVALID_BATCH_ID, 400, 10179, "atomic publish batch ID is invalid") \
    X(STREAM_MIN_LAST_SEQ, 412, 10180, "min last sequence") \
    X(CONSUMER_ACK_POLICY_INVALID, 400, 10181, "consumer ack policy invalid") \
    X(CONSUMER_REPLAY_POLICY_INVALID, 400, 10182, "consumer replay policy invalid") \
    X(CONSUMER_ACK_WAIT_NEGATIVE, 400, 10183, "consumer ack wait needs to be positive") \
    X(CONSUMER_BACK_OFF_NEGATIVE, 400, 10184, "consumer backoff needs to be positive") \
    X(REQUIRED_API_LEVEL, 412, 10185, "JetStream minimum api level required") \
    X(MIRROR_WITH_MSG_SCHEDULES, 400, 10186, "stream mirrors can not also schedule messages") \
    X(SOURCE_WITH_MSG_SCHEDULES, 400, 10187, "stream source can not also schedule messages") \
    X(MESSAGE_SCHEDULES_DISABLED, 400, 10188, "message schedules is disabled") \
    X(MESSAGE_SCHEDULES_PATTERN_INVALID, 400, 10189, "message schedules pattern is invalid") \
    X(MESSAGE_SCHEDULES_TARGET_INVALID, 400, 10190, "message schedules target is invalid") \
    X(MESSAGE_SCHEDULES_TTL_INVALID, 400, 10191, "message schedules invalid per-message TTL") \
    X(MESSAGE_SCHEDULES_ROLLUP_INVALID, 400, 10192, "message schedules invalid rollup") \
    X(STREAM_EXPECTED_LAST_SEQ_PER_SUBJECT_INVALID, 400, 10193, "missing sequence for expected last sequence per subject") \
    X(STREAM_OFFLINE_REASON_F, 500, 10194, "stream is offline: {err}") \
    X(CONSUMER_OFFLINE_REASON_F, 500, 10195, "consumer is offline: {err}") \
    X(CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE, 400, 10196, "consumer can not have priority groups when policy is none") \
    X(CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY_NONE, 400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none") \
    X(MIRROR_WITH_ATOMIC_PUBLISH, 400, 10198, "stream mirrors can not also use atomic publishing") \
    X(ATOMIC_PUBLISH_TOO_LARGE_BATCH_F, 400, 10199, "atomic publish batch is too large: {size}") \
    X(ATOMIC_PUBLISH_INVALID_BATCH_COMMIT, 400, 10200, "atomic publish batch commit is invalid") \
    X(ATOMIC_PUBLISH_CONTAINS_DUPLICATE_MESSAGE, 400, 10201, "atomic publish batch contains duplicate message id") \
    X(CLUSTER_SERVER_MEMBER_CHANGE_INFLIGHT, 400, 10202, "cluster member change is in progress") \
    X(MESSAGE_SCHEDULES_SOURCE_INVALID, 400, 10203, "message schedules source is invalid") \
    X(CONSUMER_INVALID_RESET, 400, 10204, "invalid reset: {err}") \
    X(BATCH_PUBLISH_DISABLED, 400, 10205, "batch publish is disabled") \
    X(BATCH_PUBLISH_INVALID_PATTERN, 400, 10206, "batch publish pattern is invalid") \
    X(BATCH_PUBLISH_INVALID_BATCH_ID, 400, 10207, "batch publish ID is invalid") \
    X(BATCH_PUBLISH_UNKNOWN_BATCH_ID, 400, 10208, "batch publish ID unknown") \
    X(MIRROR_WITH_BATCH_PUBLISH, 400, 10209, "stream mirrors can not also use batch publishing") \
    X(ATOMIC_PUBLISH_TOO_MANY_INFLIGHT, 429, 10210, "atomic publish too many inflight") \
    X(BATCH_PUBLISH_TOO_MANY_INFLIGHT, 429, 10211, "batch publish too many inflight") \
    X(MESSAGE_SCHEDULES_SCHEDULER_INVALID, 400, 10212, "message schedules invalid scheduler") \
    X(MIRROR_DURABLE_CONSUMER_CFG_INVALID, 400, 10213, "stream mirror consumer config is invalid") \
    X(MIRROR_CONSUMER_REQUIRES_ACK_FC, 400, 10214, "stream mirror consumer requires flow control ack policy") \
    X(SOURCE_DURABLE_CONSUMER_CFG_INVALID, 400, 10215, "stream source consumer config is invalid") \
    X(SOURCE_DURABLE_CONSUMER_DUPLICATE_DETECTED, 400, 10216, "duplicate stream source consumer detected") \
    X(SOURCE_CONSUMER_REQUIRES_ACK_FC, 400, 10217, "stream source consumer requires flow control ack policy") \
    X(CONSUMER_ACK_FC_REQUIRES_PUSH, 400, 10218, "flow control ack policy requires a push based consumer") \
    X(CONSUMER_ACK_FC_REQUIRES_FC, 400, 10219, "flow control ack policy requires flow control") \
    X(CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING, 400, 10220, "flow control ack policy requires max ack pending") \
    X(CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT, 400, 10221, "flow control ack policy requires unset ack wait") \
    X(CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER, 400, 10222, "flow control ack policy requires unset max deliver") \
    X(MESSAGE_SCHEDULES_TIME_ZONE_INVALID, 400, 10223, "message schedules time zone is invalid") \
    X(CLUSTER_RESCUE, 400, 10224, "JetStream system rescue not applied: {err}") \
    X(CONSUMER_STREAM_IDENTITY_MISMATCH_F, 400, 10225, "consumer's stream identity does not match: {msg}") \
    X(STREAM_RECONFIGURE_IN_PROGRESS, 400, 10226, "stream reconfiguration already in progress") \
    X(MESSAGE_SOURCE_HDR_NOT_ALLOWED, 400, 10227, "message stream source header is not allowed") \
    /* end of ND_JSE_TABLE */
/* clang-format on */

#endif
