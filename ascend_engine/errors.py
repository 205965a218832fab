"""AscendCL errors as Python exceptions, with the full code table and hints.

Every failing AscendCL call made by ascend-engine raises an :class:`AclError`
subclass chosen by the code's family (see :func:`error_class`).  The
exception carries:

* ``function`` -- the AscendCL function that failed (``"aclrtMemcpy"``);
* ``code`` -- the numeric ``aclError``;
* ``name`` -- its symbolic name (``"ACL_ERROR_RT_CONTEXT_NULL"``);
* ``message`` -- ``aclGetRecentErrMsg()`` read on the failing thread right
  after the call (what the runtime itself says: the call, the argument, what
  it expected);
* ``hint`` -- one line on what usually causes this and what to do.

The code table follows the CANN headers (``acl_base_rt.h``,
``error_codes/rt_error_codes.h``, ``error_codes/ge_error_codes.h``); the
conformance tests check it against them.  The hints come from field
experience, corrected where popular write-ups are wrong: there is no error
code 201001 (a driver/CANN mismatch shows as 207004, 500004 or 507899), no
``ASCEND_RT_MEM_POOL_SIZE`` variable, and ``ASCEND_GLOBAL_LOG_LEVEL=0`` (not 1)
is DEBUG.
"""

from __future__ import annotations

__all__ = [
    "AclError",
    "InvalidParamError",
    "NotInitializedError",
    "ResourceError",
    "OutOfMemoryError",
    "DeviceError",
    "InternalError",
    "AclTimeoutError",
    "ModelError",
    "BackendError",
    "ObjectClosedError",
    "EngineError",
    "EngineBusy",
    "ForkedProcessError",
    "InferenceServerError",
    "ModelConfigError",
    "PipelineError",
    "ReplicaError",
    "ServerUnreachable",
    "SpecError",
    "ToolkitError",
    "AippError",
    "AtcError",
    "ERROR_CODES",
    "TROUBLESHOOTING",
    "error_name",
    "error_description",
    "error_class",
    "hint_for",
    "raise_for",
]

_CODES = (
    (
        100000,
        "ACL_ERROR_INVALID_PARAM",
        "An argument failed validation (null pointer, out-of-range value, etc.)",
    ),
    (100001, "ACL_ERROR_UNINITIALIZE", "AscendCL used before aclInit succeeded (or after aclFinalize)"),
    (100002, "ACL_ERROR_REPEAT_INITIALIZE", "aclInit called again while already initialized"),
    (100003, "ACL_ERROR_INVALID_FILE", "File path/handle is not usable"),
    (100004, "ACL_ERROR_WRITE_FILE", "Writing a file failed"),
    (100005, "ACL_ERROR_INVALID_FILE_SIZE", "File size is wrong/unacceptable"),
    (100006, "ACL_ERROR_PARSE_FILE", "File contents could not be parsed (e.g. bad config JSON)"),
    (100007, "ACL_ERROR_FILE_MISSING_ATTR", "File lacks a required attribute"),
    (100008, "ACL_ERROR_FILE_ATTR_INVALID", "A file attribute has an invalid value"),
    (100009, "ACL_ERROR_INVALID_DUMP_CONFIG", "Dump configuration is invalid"),
    (100010, "ACL_ERROR_INVALID_PROFILING_CONFIG", "Profiling configuration is invalid"),
    (
        100011,
        "ACL_ERROR_INVALID_MODEL_ID",
        "Model id is unknown / not loaded (never returned by CANN 9.1)",
    ),
    (100012, "ACL_ERROR_DESERIALIZE_MODEL", "Offline model (.om) could not be deserialized"),
    (100013, "ACL_ERROR_PARSE_MODEL", "Model contents could not be parsed"),
    (100014, "ACL_ERROR_READ_MODEL_FAILURE", "Reading the model file failed"),
    (100015, "ACL_ERROR_MODEL_SIZE_INVALID", "Model size is invalid"),
    (100016, "ACL_ERROR_MODEL_MISSING_ATTR", "Model lacks a required attribute"),
    (
        100017,
        "ACL_ERROR_MODEL_INPUT_NOT_MATCH",
        "Supplied inputs do not match the model (count/size) (never returned by CANN 9.1)",
    ),
    (
        100018,
        "ACL_ERROR_MODEL_OUTPUT_NOT_MATCH",
        "Supplied outputs do not match the model (count/size) (never returned by CANN 9.1)",
    ),
    (
        100019,
        "ACL_ERROR_MODEL_NOT_DYNAMIC",
        "Dynamic-shape/batch API used on a static model (never returned by CANN 9.1)",
    ),
    (100020, "ACL_ERROR_OP_TYPE_NOT_MATCH", "Single-op: operator type mismatch"),
    (100021, "ACL_ERROR_OP_INPUT_NOT_MATCH", "Single-op: inputs mismatch"),
    (100022, "ACL_ERROR_OP_OUTPUT_NOT_MATCH", "Single-op: outputs mismatch"),
    (100023, "ACL_ERROR_OP_ATTR_NOT_MATCH", "Single-op: attributes mismatch"),
    (100024, "ACL_ERROR_OP_NOT_FOUND", "Single-op: operator not found"),
    (100025, "ACL_ERROR_OP_LOAD_FAILED", "Single-op: loading operator failed"),
    (100026, "ACL_ERROR_UNSUPPORTED_DATA_TYPE", "Data type not supported here"),
    (100027, "ACL_ERROR_FORMAT_NOT_MATCH", "Tensor format mismatch"),
    (100028, "ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED", "Kernel binary selector not registered"),
    (100029, "ACL_ERROR_KERNEL_NOT_FOUND", "Kernel not found"),
    (100030, "ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED", "Kernel binary selector registered twice"),
    (100031, "ACL_ERROR_KERNEL_ALREADY_REGISTERED", "Kernel registered twice"),
    (100032, "ACL_ERROR_INVALID_QUEUE_ID", "Queue id is invalid"),
    (100033, "ACL_ERROR_REPEAT_SUBSCRIBE", "Stream/thread already subscribed (callback reporting)"),
    (100034, "ACL_ERROR_STREAM_NOT_SUBSCRIBE", "Stream has no subscribed report thread"),
    (100035, "ACL_ERROR_THREAD_NOT_SUBSCRIBE", "Calling thread is not subscribed to any stream"),
    (
        100036,
        "ACL_ERROR_WAIT_CALLBACK_TIMEOUT",
        "Waiting for a callback report timed out (aclrtProcessReport)",
    ),
    (100037, "ACL_ERROR_REPEAT_FINALIZE", "aclFinalize called again after finalization"),
    (100038, "ACL_ERROR_NOT_STATIC_AIPP", "Static-AIPP query on a model without static AIPP"),
    (100039, "ACL_ERROR_COMPILING_STUB_MODE", "Running against stub libraries (compile-only mode)"),
    (100040, "ACL_ERROR_GROUP_NOT_SET", "Compute group not set"),
    (100041, "ACL_ERROR_GROUP_NOT_CREATE", "Compute group not created"),
    (100042, "ACL_ERROR_PROF_ALREADY_RUN", "Profiling already running"),
    (100043, "ACL_ERROR_PROF_NOT_RUN", "Profiling not running"),
    (100044, "ACL_ERROR_DUMP_ALREADY_RUN", "Dump already running"),
    (100045, "ACL_ERROR_DUMP_NOT_RUN", "Dump not running"),
    (148046, "ACL_ERROR_PROF_REPEAT_SUBSCRIBE", "Profiling subscription repeated"),
    (148047, "ACL_ERROR_PROF_API_CONFLICT", "Conflicting profiling APIs used together"),
    (148048, "ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG", "Invalid max op-queue-number setting"),
    (148049, "ACL_ERROR_INVALID_OPP_PATH", "Operator package (OPP) path invalid"),
    (148050, "ACL_ERROR_OP_UNSUPPORTED_DYNAMIC", "Operator does not support dynamic shape"),
    (148051, "ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED", "Dependent resources were not released first"),
    (148052, "ACL_ERROR_UNSUPPORTED_JPEG", "JPEG variant not supported"),
    (148053, "ACL_ERROR_INVALID_BUNDLE_MODEL_ID", "Bundle model id invalid"),
    (200000, "ACL_ERROR_BAD_ALLOC", "Memory allocation failed"),
    (200001, "ACL_ERROR_API_NOT_SUPPORT", "API not supported on this product/mode"),
    (200002, "ACL_ERROR_INVALID_DEVICE", "Device id/device invalid"),
    (200003, "ACL_ERROR_MEMORY_ADDRESS_UNALIGNED", "Memory address alignment requirement violated"),
    (200004, "ACL_ERROR_RESOURCE_NOT_MATCH", "Resources do not belong together (e.g. wrong context/device)"),
    (200005, "ACL_ERROR_INVALID_RESOURCE_HANDLE", "Handle (stream/event/etc.) invalid"),
    (200006, "ACL_ERROR_FEATURE_UNSUPPORTED", "Feature unsupported"),
    (200007, "ACL_ERROR_PROF_MODULES_UNSUPPORTED", "Requested profiling modules unsupported"),
    (300000, "ACL_ERROR_STORAGE_OVER_LIMIT", "Storage/capacity limit exceeded"),
    (500000, "ACL_ERROR_INTERNAL_ERROR", "Unclassified internal error"),
    (500001, "ACL_ERROR_FAILURE", "Generic failure"),
    (500002, "ACL_ERROR_GE_FAILURE", "Failure reported by the Graph Engine layer"),
    (500003, "ACL_ERROR_RT_FAILURE", "Failure reported by the runtime layer"),
    (500004, "ACL_ERROR_DRV_FAILURE", "Failure reported by the driver"),
    (500005, "ACL_ERROR_PROFILING_FAILURE", "Failure inside profiling"),
    (107000, "ACL_ERROR_RT_PARAM_INVALID", "Runtime rejected an argument"),
    (107001, "ACL_ERROR_RT_INVALID_DEVICEID", "Device id out of range / invalid"),
    (107002, "ACL_ERROR_RT_CONTEXT_NULL", "No current context on this thread"),
    (107003, "ACL_ERROR_RT_STREAM_CONTEXT", "Stream belongs to a different context than the current one"),
    (107004, "ACL_ERROR_RT_MODEL_CONTEXT", "Model belongs to a different context than the current one"),
    (107005, "ACL_ERROR_RT_STREAM_MODEL", "Stream is not part of the model"),
    (
        107006,
        "ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID",
        "Event has no valid timestamp (not recorded, or not timing-enabled)",
    ),
    (107007, "ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL", "End event timestamp earlier than start event"),
    (107008, "ACL_ERROR_RT_ADDR_UNALIGNED", "Address not aligned as required"),
    (107009, "ACL_ERROR_RT_FILE_OPEN", "Opening a file failed"),
    (107010, "ACL_ERROR_RT_FILE_WRITE", "Writing a file failed"),
    (107011, "ACL_ERROR_RT_STREAM_SUBSCRIBE", "Stream subscription (report thread) error"),
    (107012, "ACL_ERROR_RT_THREAD_SUBSCRIBE", "Thread subscription (report thread) error"),
    (107013, "ACL_ERROR_RT_GROUP_NOT_SET", "Group not set"),
    (107014, "ACL_ERROR_RT_GROUP_NOT_CREATE", "Group not created"),
    (
        107015,
        "ACL_ERROR_RT_STREAM_NO_CB_REG",
        "Callback launched on a stream with no registered report thread",
    ),
    (107016, "ACL_ERROR_RT_INVALID_MEMORY_TYPE", "Memory type invalid for the operation"),
    (107017, "ACL_ERROR_RT_INVALID_HANDLE", "Runtime handle invalid"),
    (107018, "ACL_ERROR_RT_INVALID_MALLOC_TYPE", "Allocation policy/type invalid"),
    (107019, "ACL_ERROR_RT_WAIT_TIMEOUT", "A wait timed out"),
    (107020, "ACL_ERROR_RT_TASK_TIMEOUT", "A task timed out"),
    (107021, "ACL_ERROR_RT_SYSPARAMOPT_NOT_SET", "Queried system parameter option was never set"),
    (107022, "ACL_ERROR_RT_DEVICE_TASK_ABORT", "Device tasks are being aborted"),
    (107023, "ACL_ERROR_RT_STREAM_ABORT", "Stream is being aborted"),
    (107024, "ACL_ERROR_RT_CAPTURE_DEPENDENCY", "Capture: dependency (event) problem"),
    (
        107025,
        "ACL_ERROR_RT_STREAM_UNJOINED",
        "Capture produced an invalid model (a forked stream not joined back)",
    ),
    (107026, "ACL_ERROR_RT_MODEL_CAPTURED", "Model is in captured state"),
    (107027, "ACL_ERROR_RT_STREAM_CAPTURED", "Stream is being captured"),
    (107028, "ACL_ERROR_RT_EVENT_CAPTURED", "Event is being captured"),
    (107029, "ACL_ERROR_RT_STREAM_NOT_CAPTURED", "Stream is not in capture status"),
    (
        107030,
        "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT",
        "Operation not allowed while the stream is being captured",
    ),
    (
        107031,
        "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT",
        "Capture: forbidden implicit dependency on the default stream",
    ),
    (107032, "ACL_ERROR_STREAM_CAPTURE_CONFLICT", "Mutually dependent streams cannot start capture together"),
    (107033, "ACL_ERROR_STREAM_TASK_GROUP_STATUS", "Task-group status error"),
    (107034, "ACL_ERROR_STREAM_TASK_GROUP_INTR", "Task group interrupted"),
    (107035, "ACL_ERROR_RT_TASK_ABORT_STOP", "Task abort stopped before post-processing"),
    (
        107036,
        "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED",
        "Capture end on a stream that did not begin the capture",
    ),
    (107037, "ACL_ERROR_RT_MODEL_RUNNING", "Model still running"),
    (
        107038,
        "ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD",
        "Capture begin and end called from different threads",
    ),
    (107039, "ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY", "Caller-supplied output array too small"),
    (107040, "ACL_ERROR_RT_MODEL_UPDATE_FAILED", "Model update failed"),
    (
        107041,
        "ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC",
        "Async op would degrade to sync, not allowed during capture",
    ),
    (107042, "ACL_ERROR_RT_SYMBOL_NOT_FOUND", "Symbol not found"),
    (107043, "ACL_ERROR_RT_INVALID_SYMBOL", "Device symbol invalid"),
    (107044, "ACL_ERROR_RT_INVALID_DEVICE_FUNCTION", "Device function invalid"),
    (107045, "ACL_ERROR_RT_STREAM_NOT_SUPPORT_OPERA", "Stream does not support this operation"),
    (107046, "ACL_ERROR_RT_SUB_ACLGRAPH_IS_CAPTURING", "A sub-graph is still capturing"),
    (207000, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT", "Feature not supported by runtime/hardware"),
    (207001, "ACL_ERROR_RT_MEMORY_ALLOCATION", "Out of memory (used only for OOM)"),
    (207002, "ACL_ERROR_RT_MEMORY_FREE", "Freeing memory failed"),
    (207003, "ACL_ERROR_RT_AICORE_OVER_FLOW", "AI Core numeric overflow detected"),
    (207004, "ACL_ERROR_RT_NO_DEVICE", "No device available"),
    (207005, "ACL_ERROR_RT_RESOURCE_ALLOC_FAIL", "Runtime resource allocation failed"),
    (207006, "ACL_ERROR_RT_NO_PERMISSION", "No permission"),
    (207007, "ACL_ERROR_RT_NO_EVENT_RESOURCE", "Event resources exhausted"),
    (207008, "ACL_ERROR_RT_NO_STREAM_RESOURCE", "Stream resources exhausted"),
    (207009, "ACL_ERROR_RT_NO_NOTIFY_RESOURCE", "Notify resources exhausted"),
    (207010, "ACL_ERROR_RT_NO_MODEL_RESOURCE", "Model resources exhausted"),
    (207011, "ACL_ERROR_RT_NO_CDQ_RESOURCE", "CDQ resources exhausted"),
    (207012, "ACL_ERROR_RT_OVER_LIMIT", "A limit was exceeded"),
    (207013, "ACL_ERROR_RT_QUEUE_EMPTY", "Queue empty"),
    (207014, "ACL_ERROR_RT_QUEUE_FULL", "Queue full"),
    (207015, "ACL_ERROR_RT_REPEATED_INIT", "Repeated runtime initialization"),
    (207016, "ACL_ERROR_RT_AIVEC_OVER_FLOW", "AI Vector core overflow"),
    (207017, "ACL_ERROR_RT_OVER_FLOW", "Generic overflow"),
    (207018, "ACL_ERROR_RT_DEVICE_OOM", "Device out of memory"),
    (207019, "ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP", "This op cannot be updated"),
    (207020, "ACL_ERROR_RT_TIMEOUT", "Driver-level timeout"),
    (507000, "ACL_ERROR_RT_INTERNAL_ERROR", "Runtime internal error"),
    (507001, "ACL_ERROR_RT_TS_ERROR", "Task scheduler internal error"),
    (507002, "ACL_ERROR_RT_STREAM_TASK_FULL", "Stream task queue full"),
    (507003, "ACL_ERROR_RT_STREAM_TASK_EMPTY", "Stream task queue empty"),
    (507004, "ACL_ERROR_RT_STREAM_NOT_COMPLETE", "Stream has unfinished work"),
    (507005, "ACL_ERROR_RT_END_OF_SEQUENCE", "End of sequence reached"),
    (507006, "ACL_ERROR_RT_EVENT_NOT_COMPLETE", "Event not complete yet"),
    (507007, "ACL_ERROR_RT_CONTEXT_RELEASE_ERROR", "Releasing a context failed"),
    (507008, "ACL_ERROR_RT_SOC_VERSION", "SoC version error"),
    (507009, "ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT", "Task type not supported"),
    (507010, "ACL_ERROR_RT_LOST_HEARTBEAT", "Task scheduler heartbeat lost"),
    (507011, "ACL_ERROR_RT_MODEL_EXECUTE", "Model execution failed"),
    (507012, "ACL_ERROR_RT_REPORT_TIMEOUT", "Report timed out"),
    (507013, "ACL_ERROR_RT_SYS_DMA", "System DMA error"),
    (507014, "ACL_ERROR_RT_AICORE_TIMEOUT", "AI Core timeout"),
    (507015, "ACL_ERROR_RT_AICORE_EXCEPTION", "AI Core exception"),
    (507016, "ACL_ERROR_RT_AICORE_TRAP_EXCEPTION", "AI Core trap exception"),
    (507017, "ACL_ERROR_RT_AICPU_TIMEOUT", "AI CPU timeout"),
    (507018, "ACL_ERROR_RT_AICPU_EXCEPTION", "AI CPU exception"),
    (507019, "ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR", "AI CPU data-dump response error"),
    (507020, "ACL_ERROR_RT_AICPU_MODEL_RSP_ERR", "AI CPU model-operation response error"),
    (507021, "ACL_ERROR_RT_PROFILING_ERROR", "Profiling error"),
    (507022, "ACL_ERROR_RT_IPC_ERROR", "IPC error"),
    (507023, "ACL_ERROR_RT_MODEL_ABORT_NORMAL", "Model aborted (normal abort)"),
    (507024, "ACL_ERROR_RT_KERNEL_UNREGISTERING", "Kernel is being unregistered"),
    (507025, "ACL_ERROR_RT_RINGBUFFER_NOT_INIT", "Ring buffer not initialized"),
    (507026, "ACL_ERROR_RT_RINGBUFFER_NO_DATA", "Ring buffer has no data"),
    (507027, "ACL_ERROR_RT_KERNEL_LOOKUP", "Kernel lookup failed"),
    (507028, "ACL_ERROR_RT_KERNEL_DUPLICATE", "Kernel registered twice"),
    (507029, "ACL_ERROR_RT_DEBUG_REGISTER_FAIL", "Debug registration failed"),
    (507030, "ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL", "Debug unregistration failed"),
    (507031, "ACL_ERROR_RT_LABEL_CONTEXT", "Label not in the current context"),
    (507032, "ACL_ERROR_RT_PROGRAM_USE_OUT", "Program registration slots exhausted"),
    (507033, "ACL_ERROR_RT_DEV_SETUP_ERROR", "Device setup failed"),
    (507034, "ACL_ERROR_RT_VECTOR_CORE_TIMEOUT", "Vector core timeout"),
    (507035, "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION", "Vector core exception"),
    (507036, "ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION", "Vector core trap exception"),
    (507037, "ACL_ERROR_RT_CDQ_BATCH_ABNORMAL", "CDQ batch allocation abnormal"),
    (507038, "ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR", "Die mode cannot be changed"),
    (507039, "ACL_ERROR_RT_DIE_SET_ERROR", "Cannot select a die in single-die mode"),
    (507040, "ACL_ERROR_RT_INVALID_DIEID", "Die id invalid"),
    (507041, "ACL_ERROR_RT_DIE_MODE_NOT_SET", "Die mode not set"),
    (507042, "ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW", "AI Core trap: read out of bounds"),
    (507043, "ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW", "AI Core trap: write out of bounds"),
    (507044, "ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW", "Vector core trap: read out of bounds"),
    (507045, "ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW", "Vector core trap: write out of bounds"),
    (507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT", "Stream synchronize timed out"),
    (507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT", "Event synchronize timed out"),
    (507048, "ACL_ERROR_RT_FFTS_PLUS_TIMEOUT", "FFTS+ timeout"),
    (507049, "ACL_ERROR_RT_FFTS_PLUS_EXCEPTION", "FFTS+ exception"),
    (507050, "ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION", "FFTS+ trap exception"),
    (507051, "ACL_ERROR_RT_SEND_MSG", "Host-device (HDC) message send failed"),
    (507052, "ACL_ERROR_RT_COPY_DATA", "Data copy failed"),
    (507053, "ACL_ERROR_RT_DEVICE_MEM_ERROR", "Device memory error"),
    (507054, "ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR", "HBM multi-bit ECC error"),
    (507055, "ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR", "Suspected device memory error"),
    (507056, "ACL_ERROR_RT_LINK_ERROR", "Link error"),
    (507057, "ACL_ERROR_RT_SUSPECT_REMOTE_ERROR", "Suspected remote-side error"),
    (507899, "ACL_ERROR_RT_DRV_INTERNAL_ERROR", "Driver internal error"),
    (507900, "ACL_ERROR_RT_AICPU_INTERNAL_ERROR", "AI CPU internal error"),
    (507901, "ACL_ERROR_RT_SOCKET_CLOSE", "Host-device (HDC) connection closed"),
    (507902, "ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR", "AI CPU info-load response error"),
    (507903, "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED", "Capture became invalidated"),
    (507904, "ACL_ERROR_RT_COMM_OP_RETRY_FAIL", "HCCL collective retry failed"),
    (507905, "ACL_ERROR_SNAPSHOT_LOCK_TIMEOUT", "Snapshot lock timed out"),
    (507906, "ACL_ERROR_SNAPSHOT_LOCK_FAILED", "Snapshot lock failed"),
    (507907, "ACL_ERROR_SNAPSHOT_UNLOCK_FAILED", "Snapshot unlock failed"),
    (507908, "ACL_ERROR_SNAPSHOT_BACKUP_FAILED", "Snapshot backup failed"),
    (507909, "ACL_ERROR_SNAPSHOT_RESTORE_FAILED", "Snapshot restore failed"),
    (507910, "ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "Host memory range already registered"),
    (507911, "ACL_ERROR_HOST_MEMORY_NOT_REGISTERED", "Host memory was never registered"),
    (507912, "ACL_ERROR_SNAPSHOT_CALLBACK_FAILED", "Snapshot callback failed"),
    (507913, "ACL_ERROR_SNAPSHOT_REGISTER_CALLBACK_FAILED", "Registering snapshot callback failed"),
    (507914, "ACL_ERROR_RT_L3_PORT_ERROR", "L3 port error"),
    (507915, "ACL_ERROR_RT_CCU_TIMEOUT", "CCU timeout"),
    (507916, "ACL_ERROR_RT_CCU_EXCEPTION", "CCU exception"),
    (145000, "ACL_ERROR_GE_PARAM_INVALID", "GE: argument invalid"),
    (145001, "ACL_ERROR_GE_EXEC_NOT_INIT", "GE executor not initialized"),
    (145002, "ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID", "GE: model path invalid"),
    (145003, "ACL_ERROR_GE_EXEC_MODEL_ID_INVALID", "GE: model id invalid"),
    (145006, "ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID", "GE: model data size invalid"),
    (145007, "ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID", "GE: model address invalid"),
    (145008, "ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID", "GE: model queue id invalid"),
    (145009, "ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED", "GE: model loaded twice"),
    (145011, "ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID", "GE: dynamic-shape input address invalid"),
    (145012, "ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID", "GE: dynamic-shape input length invalid"),
    (
        145013,
        "ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID",
        "GE: requested batch size is not one of the model gears",
    ),
    (145014, "ACL_ERROR_GE_AIPP_BATCH_EMPTY", "GE: AIPP batch empty"),
    (145015, "ACL_ERROR_GE_AIPP_NOT_EXIST", "GE: AIPP config absent"),
    (145016, "ACL_ERROR_GE_AIPP_MODE_INVALID", "GE: AIPP mode invalid"),
    (145017, "ACL_ERROR_GE_OP_TASK_TYPE_INVALID", "GE: op task type invalid"),
    (145018, "ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID", "GE: op kernel type invalid"),
    (145019, "ACL_ERROR_GE_PLGMGR_PATH_INVALID", "GE: plugin manager path invalid"),
    (145020, "ACL_ERROR_GE_FORMAT_INVALID", "GE: format invalid"),
    (145021, "ACL_ERROR_GE_SHAPE_INVALID", "GE: shape invalid"),
    (145022, "ACL_ERROR_GE_DATATYPE_INVALID", "GE: data type invalid"),
    (245000, "ACL_ERROR_GE_MEMORY_ALLOCATION", "GE: memory allocation failed"),
    (245001, "ACL_ERROR_GE_MEMORY_OPERATE_FAILED", "GE: memory operation failed"),
    (245002, "ACL_ERROR_GE_DEVICE_MEMORY_OPERATE_FAILED", "GE: device memory operation failed"),
    (345102, "ACL_ERROR_GE_SUBHEALTHY", "GE: sub-healthy state"),
    (345103, "ACL_ERROR_GE_USER_RAISE_EXCEPTION", "GE: user-raised exception"),
    (345104, "ACL_ERROR_GE_DATA_NOT_ALIGNED", "GE: data not aligned"),
    (545000, "ACL_ERROR_GE_INTERNAL_ERROR", "GE internal error"),
    (545001, "ACL_ERROR_GE_LOAD_MODEL", "GE: model load failed"),
    (545002, "ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED", "GE: loading model partition failed"),
    (545003, "ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED", "GE: loading weight partition failed"),
    (545004, "ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED", "GE: loading task partition failed"),
    (545005, "ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED", "GE: loading kernel partition failed"),
    (545006, "ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA", "GE: releasing model data failed"),
    (545007, "ACL_ERROR_GE_COMMAND_HANDLE", "GE: command handling failed"),
    (545008, "ACL_ERROR_GE_GET_TENSOR_INFO", "GE: getting tensor info failed"),
    (545009, "ACL_ERROR_GE_UNLOAD_MODEL", "GE: model unload failed"),
    (545601, "ACL_ERROR_GE_MODEL_EXECUTE_TIMEOUT", "GE: model execution timed out"),
    (545602, "ACL_ERROR_GE_REDEPLOYING", "GE: redeploying"),
)


# code -> symbolic name.  0 has three names in the headers; ACL_SUCCESS is the
# one include/ascend_engine/acl.h defines first and this package uses.
ERROR_CODES: dict[int, str] = {0: "ACL_SUCCESS"}
_DESCRIPTIONS: dict[int, str] = {0: "Call succeeded"}
for _code, _name, _text in _CODES:
    ERROR_CODES[_code] = _name
    _DESCRIPTIONS[_code] = _text
del _code, _name, _text


def error_name(code: int) -> str:
    """Symbolic name of an AscendCL error code, e.g. ``ACL_ERROR_RT_CONTEXT_NULL``.

    Unknown codes give ``"ACL_ERROR_UNKNOWN_<code>"`` rather than failing, so a
    newer CANN's codes still produce a readable exception.
    """
    return ERROR_CODES.get(int(code), f"ACL_ERROR_UNKNOWN_{int(code)}")


def error_description(code: int) -> str:
    """One-line meaning of an AscendCL error code ('' when unknown)."""
    return _DESCRIPTIONS.get(int(code), "")


# ---------------------------------------------------------------------------
# Exception classes
# ---------------------------------------------------------------------------


class AclError(Exception):
    """An AscendCL call failed.

    Attributes: ``function``, ``code``, ``name``, ``message`` (the runtime's
    recent error message, possibly empty) and ``hint`` (possibly empty).
    """

    def __init__(self, function: str, code: int, message: str = "", hint: str | None = None):
        self.function = function
        self.code = int(code)
        self.name = error_name(code)
        self.message = " ".join((message or "").split())  # one line
        self.hint = hint_for(self.code, function) if hint is None else hint
        super().__init__(function, self.code, self.message, self.hint)

    def __str__(self) -> str:
        text = f"{self.function} failed: {self.name} ({self.code})"
        desc = error_description(self.code)
        if self.message:
            text += f": {self.message}"
        elif desc:
            text += f": {desc}"
        if self.hint:
            text += f" -- hint: {self.hint}"
        return text

    def __reduce__(self):
        # Rebuild with the same class and fields (pickling across processes).
        return (self.__class__, (self.function, self.code, self.message, self.hint))


class InvalidParamError(AclError, ValueError):
    """The call was wrong: a rejected argument, handle, or a call in the wrong state
    (codes 100000-100045 outside the model codes, 107xxx, 148xxx)."""


class NotInitializedError(AclError):
    """AscendCL used before ``aclInit`` or after ``aclFinalize`` (100001)."""


class ResourceError(AclError):
    """A resource ran out or does not match (2xxxxx, 3xxxxx): streams, events, handles."""


class OutOfMemoryError(ResourceError, MemoryError):
    """Device (or host) memory exhausted (200000, 207001, 207018, 245000)."""


class DeviceError(AclError):
    """The device or the runtime failed while doing the work (5xxxxx, 507xxx)."""


class InternalError(DeviceError):
    """An internal runtime, driver or graph-engine error (500000, 500001, 507000, 545000...)."""


class AclTimeoutError(AclError, TimeoutError):
    """A wait ran out of time (507046 stream sync, 507047 event sync, 107019, 107020, 100036...)."""


class ModelError(AclError):
    """Loading, describing or executing a model failed (145xxx graph-engine codes, 545xxx, the documented
    100003-100019 model/file codes)."""


class BackendError(RuntimeError):
    """No usable AscendCL backend: the library is missing, incomplete, or the request is invalid."""


class ObjectClosedError(ValueError):
    """A Device, Stream, Event or buffer was used after close()."""


class EngineError(RuntimeError):
    """The engine could not do what was asked: it is closed, a request was
    cancelled because another one failed, or the plan cannot run."""


class HostStepError(EngineError):
    """A host step failed for one request: its function raised (the original
    exception is ``__cause__``; the message carries its traceback), or it
    returned outputs of the wrong dtype, shape or number of rows.  Only that
    request fails; the engine goes on with the others.

    ``step`` is the host step's name, ``request`` the request's number.
    """

    def __init__(self, message, step=None, request=None):
        super().__init__(message)
        self.step = step
        self.request = request


class PipelineError(ValueError):
    """A pipeline graph that cannot be compiled; the message names the node and tensor."""


class SpecError(PipelineError):
    """A spec that does not follow the schema, or whose models cannot be wired.

    ``key`` is the key path of the offending value (``models[1].inputs[0]``,
    ``''`` for the whole document) and ``source`` the spec file, if any.
    """

    def __init__(self, key: str, message: str, source: str | None = None):
        self.key = key
        self.source = source
        self.detail = message
        where = ": ".join(p for p in (source, key) if p)
        super().__init__(f"{where}: {message}" if where else message)


class ModelConfigError(PipelineError):
    """A Triton ``config.pbtxt`` that cannot be read, or that contradicts its model file
    (docs/serve.md, "A Triton model repository"): the message names the file, the field,
    what the model has and what the config says."""


class ToolkitError(RuntimeError):
    """The toolkit folder could not be made; the message says why."""


class AtcError(ValueError):
    """``sim atc`` refused a command line or a model; the message is ATC-style and says why."""


class AippError(ValueError):
    """Static AIPP settings that break one of ATC's rules; the message names the field and the rule."""


class EngineBusy(EngineError):
    """The engine's admission queue is full (``Engine.submit(..., block=False)``)."""


class ReplicaError(EngineError):
    """A replica could not serve a request: it died while the request was
    pending, or it could not start.  ``replica`` is its index in the handle."""

    def __init__(self, message: str, replica: int | None = None):
        super().__init__(message)
        self.replica = replica


class InferenceServerError(Exception):
    """A request ``ascend-engine serve`` answers with a KServe v2 error (docs/serve.md, "Errors").

    ``status`` is the HTTP status (400 bad request, 404 unknown model or
    route, 503 unavailable, 500 internal); ``grpc_code`` the gRPC status
    name the gRPC front end answers with for the same error."""

    GRPC_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED", 411: "INVALID_ARGUMENT",
                  413: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def grpc_code(self) -> str:
        return self.GRPC_CODES.get(self.status, "UNKNOWN")


class ServerUnreachable(ConnectionError):
    """``bench --url``: no KServe v2 server answered at the address and protocol given; the message
    names both and what to check."""


class ForkedProcessError(RuntimeError):
    """AscendCL was used in a process forked from the one that initialised it.

    CANN does not support using a device across ``fork()``: the child must
    not touch the parent's devices, streams, models or engines.  Start worker
    processes with the ``spawn`` (or ``forkserver``) start method, or fork
    before the first AscendCL call."""


_TIMEOUT_CODES = frozenset({100036, 107019, 107020, 207020, 507012, 507046, 507047, 545601})
_OOM_CODES = frozenset({200000, 207001, 207018, 245000})
_NOT_INIT_CODES = frozenset({100001})
_MODEL_CODES = frozenset(
    {100003, 100005, 100011, 100012, 100013, 100014, 100015, 100016, 100017, 100018, 100019}
)
_INTERNAL_CODES = frozenset({500000, 500001, 500002, 500003, 507000, 507001, 507899, 507900, 545000})


def error_class(code: int) -> type[AclError]:
    """The :class:`AclError` subclass that represents ``code``."""
    code = int(code)
    if code in _TIMEOUT_CODES:
        return AclTimeoutError
    if code in _OOM_CODES:
        return OutOfMemoryError
    if code in _NOT_INIT_CODES:
        return NotInitializedError
    if code in _MODEL_CODES or 145000 <= code < 146000:
        return ModelError
    if code in _INTERNAL_CODES:
        return InternalError
    if 545000 <= code < 546000:
        return ModelError if 545001 <= code <= 545009 else InternalError
    family = code // 100000
    if family == 1:
        return InvalidParamError
    if family in (2, 3):
        return ResourceError
    if family == 5:
        return DeviceError
    return AclError


# ---------------------------------------------------------------------------
# Troubleshooting
# ---------------------------------------------------------------------------

_MEMORY_HINT = (
    "device memory exhausted: allocate buffers once at start-up and reuse them (allocation on the hot "
    "path makes memory grow), size your pool at peak working set + 10-20%, check Device.memory_info()"
)
_MODEL_FILE_HINT = (
    "the file is not a model this backend can read: the simulator reads only models saved by "
    "ascend_engine.sim.Graph; a real .om from ATC needs ASCEND_ENGINE_BACKEND=acl on an Ascend machine, "
    "compiled for this SoC"
)
_TIMEOUT_HINT = (
    "the work did not finish in time: a task upstream may be stalled, or the stream waits on an event "
    "that a stalled stream has yet to record; synchronize the producer streams and read the message"
)
_DRIVER_HINT = (
    "driver problem: check that `npu-smi info` works and that the CANN toolkit matches the installed "
    "driver and firmware versions"
)

# code -> hint.  Keep each to one line: it ends the exception's str().
_HINTS: dict[int, str] = {
    100000: "an argument was rejected (see the message)",
    107000: "an argument was rejected (see the message)",
    100001: "AscendCL is not initialized (or already finalized): let ascend_engine initialise it on "
    "first use and do not call aclFinalize yourself",
    100002: "aclInit may run once per process; another library in this process already initialized AscendCL",
    100037: "aclFinalize (or the last aclFinalizeReference) already ran: call aclInit again first, with the "
    "same config file contents as the first aclInit",
    107001: "device id out of range: ascend_engine.devices() lists the valid ids "
    "(ASCEND_SIM_DEVICE_COUNT sets the simulator's count)",
    200002: "device id out of range: ascend_engine.devices() lists the valid ids "
    "(ASCEND_SIM_DEVICE_COUNT sets the simulator's count)",
    107002: "no current context on this thread: contexts are per thread; make the device's context current "
    "on this thread first (Device.make_current() / aclrtSetCurrentContext)",
    107003: "the stream belongs to another context than this thread's current one: make the stream's "
    "context current first",
    107004: "the model belongs to another context than this thread's current one: make the model's "
    "context current first",
    107006: "elapsed time needs two timing events (Event(dev, timing=True)), both recorded and completed",
    107007: "the end event completed before the start event: pass (start, end) in that order (CANN 9.1 "
    "returns a negative time instead)",
    107008: "address not aligned: buffers carved from one allocation should start on 64-byte boundaries "
    "(aclrtMalloc's own alignment)",
    200003: "address not aligned: buffers carved from one allocation should start on 64-byte boundaries "
    "(aclrtMalloc's own alignment)",
    107015: "no thread is subscribed to this stream's callbacks: call aclrtSubscribeReport first and keep a "
    "thread calling aclrtProcessReport",
    107011: "stream subscription: a stream takes exactly one report thread (unsubscribe the old one first), "
    "and only a subscribed stream can be unsubscribed",
    107012: "thread subscription: call aclrtProcessReport / aclrtUnSubscribeReport in the thread that "
    "aclrtSubscribeReport named",
    507012: "no callback became due within the aclrtProcessReport timeout: is work still queued ahead of the "
    "callback?",
    507007: "releasing the context failed: aclrtResetDevice was called more often than aclrtSetDevice for "
    "that device",
    145001: "the model executor is not initialized: call aclInit before loading or executing models",
    # older CANN releases; the API reference marks them as to be dropped
    100034: "no thread is subscribed to this stream's callbacks: call aclrtSubscribeReport first and keep a "
    "thread calling aclrtProcessReport",
    100035: "this thread is not subscribed to any stream: call aclrtProcessReport in the subscribed thread",
    100033: "a stream takes exactly one report thread: unsubscribe the old one first",
    100036: "no callback became due within the timeout: is work still queued ahead of the callback?",
    107017: "invalid handle: it was destroyed already, belongs to a reset device, or was never created",
    200005: "invalid handle: it was destroyed already, belongs to a reset device, or was never created",
    107019: _TIMEOUT_HINT,
    107020: _TIMEOUT_HINT,
    507046: _TIMEOUT_HINT,
    507047: _TIMEOUT_HINT,
    200000: _MEMORY_HINT,
    207001: _MEMORY_HINT,
    207018: _MEMORY_HINT,
    245000: _MEMORY_HINT,
    207002: "freeing failed: the pointer was freed already or did not come from aclrtMalloc",
    207004: "no device visible: ASCEND_RT_VISIBLE_DEVICES names no device (it takes physical ids in "
    "ascending order, comma-separated, no spaces), or a " + _DRIVER_HINT,
    500004: _DRIVER_HINT,
    507899: _DRIVER_HINT,
    207007: "event budget exhausted (about 1023 per device on inference cards): create events once and "
    "reuse them (ASCEND_SIM_MAX_EVENTS sets the simulator's budget)",
    207008: "stream budget exhausted: create streams once and reuse them "
    "(ASCEND_SIM_MAX_STREAMS sets the simulator's budget)",
    100003: _MODEL_FILE_HINT,
    100005: _MODEL_FILE_HINT,
    100012: _MODEL_FILE_HINT,
    100013: _MODEL_FILE_HINT,
    100014: _MODEL_FILE_HINT,
    100015: _MODEL_FILE_HINT,
    545001: _MODEL_FILE_HINT,
    145000: "the graph engine refused an argument: for aclmdlLoadFromFileWithMem, workSize and weightSize "
    "must be at least what aclmdlQuerySize reports",
    145002: "the model file cannot be opened: check the path and its permissions",
    145003: "unknown model id: the model was never loaded or was unloaded already",
    145006: _MODEL_FILE_HINT,
    145012: "the buffer the value goes into is too small: aclmdlGetInputSizeByIndex of the dynamic input "
    "(ascend_mbatch_shape_data), or aclmdlGetAippDataSize for the AIPP parameters",
    145013: "the gear is not one of the model's (or none was set, or the model is static): use a batch "
    "size aclmdlGetDynamicBatch lists, an image size aclmdlGetDynamicHW lists, or dims "
    "aclmdlGetInputDynamicDims lists",
    500002: "the graph engine refused the execution: one buffer per model input and output, each at most 64 "
    "bytes smaller than aclmdlGetInputSizeByIndex / aclmdlGetOutputSizeByIndex (the selected gear's bytes)",
    507011: "the model failed on the device: read the message; the stream's error stays until synchronize "
    "reports it, and later work that depends on it fails too",
}

# Hints for a function when its code has none of its own.
_FUNCTION_HINTS: dict[str, str] = {
    "aclrtSetDevice": "the device may be held by another process (look for leftover inference processes "
    "with `npu-smi info`), or the id is not valid",
    "aclInit": "AscendCL could not start: " + _DRIVER_HINT,
    "aclrtSynchronizeStream": "the stream's queued work failed: the message names the task that failed",
}

# Symptom-based troubleshooting (no error code), for documentation and the CLI:
# (symptom, usual cause, what to do).
TROUBLESHOOTING: tuple[tuple[str, str, str], ...] = (
    (
        "outputs are all zeros or random",
        "the output was read before the stream that produced it finished",
        "synchronize the stream (Stream.synchronize()) or the event recorded after the work before reading",
    ),
    (
        "device memory keeps growing",
        "allocation (aclrtMalloc) on the hot path, not freed or fragmenting",
        "allocate at start-up and reuse buffers in the loop; size the pool at peak working set + 10-20%",
    ),
    (
        "aclrtSetDevice fails / device busy",
        "another process holds the device and has not released it",
        "find leftover inference processes (npu-smi info); check how devices are assigned to processes",
    ),
    (
        "aclInit fails at start",
        "driver missing or CANN and driver versions do not match (codes 207004, 500004, 507899)",
        "install matching driver, firmware and CANN versions; `npu-smi info` must work first",
    ),
    (
        "occasional segmentation fault",
        "buffer too small for the model (shape x dtype instead of the size AscendCL reports), or threads "
        "sharing a context without making it current",
        "size buffers with aclmdlGet{Input,Output}SizeByIndex; make the context current per thread",
    ),
    (
        "first execution is slow",
        "lazy initialization and large dynamic-shape ranges",
        "warm up once after loading; compile few discrete batch gears (1, 2, 4, 8) rather than a wide range",
    ),
    (
        "need more detail",
        "the runtime logs little by default",
        "ASCEND_GLOBAL_LOG_LEVEL=0 is DEBUG (1 is INFO); on the simulator, ASCEND_SIM_LOG logs every call",
    ),
)


# Functions whose failures are host allocations: a code-based hint about
# device memory would send the reader the wrong way.
_HOST_ALLOCATION_HINT = (
    "this allocates host memory (a descriptor, not device memory): the process is out of host memory, "
    "or the runtime's handle limit was reached; release unused datasets and data buffers"
)
_HOST_ALLOCATORS = frozenset({"aclCreateDataBuffer", "aclmdlCreateDataset", "aclmdlCreateDesc",
                              "aclCreateTensorDesc"})


# A rejected argument (100000, 107000) means different things in different calls.
_INVALID_PARAM_CODES = (100000, 107000)
_COPY_HINT = ("an argument was rejected (see the message): destMax is the destination's capacity and must "
              "be >= count, and the copy kind must match where the pointers live")
_INIT_HINT = ("aclInit rejected its configuration (see the message); the simulator reads its ASCEND_SIM_* "
              "environment variables here: docs/simulator.md lists each one and the values it takes")


def hint_for(code: int, function: str | None = None) -> str:
    """The troubleshooting hint for ``code`` (raised by ``function``), or ''."""
    if function in _HOST_ALLOCATORS:
        return _HOST_ALLOCATION_HINT
    if int(code) in _INVALID_PARAM_CODES and function:
        if function.startswith("aclrtMemcpy"):
            return _COPY_HINT
        if function == "aclInit":
            return _INIT_HINT
    hint = _HINTS.get(int(code))
    if hint is None and function:
        hint = _FUNCTION_HINTS.get(function)
    return hint or ""


def raise_for(code: int, function: str, message: str | None = None) -> None:
    """Raise the :class:`AclError` subclass for ``code``; do nothing when ``code`` is 0.

    ``message`` should be ``aclGetRecentErrMsg()`` read on the failing thread;
    the Cython runtime layer passes it.
    """
    if int(code) == 0:
        return
    raise error_class(code)(function, code, message or "")
