# cython: language_level=3
"""Cython view of the C executor's header, include/ascend_engine/executor.h.

Plain ``cdef extern`` declarations, nothing else, with the header's own
constants for every size (``AE_NAME_MAX``, ``AE_MESSAGE_MAX``): the header is
the one place they are written.  ``_executor.pyx`` cimports them.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from ascend_engine._acl cimport aclError, aclrtContext, ae_acl_api, ae_dvpp_api


cdef extern from "ascend_engine/executor.h" nogil:
    enum:
        AE_NAME_MAX
        AE_MESSAGE_MAX
        AE_MAX_IO
    const uint64_t AE_NO_REQUEST
    const int AE_INTERRUPTED
    const int AE_REQUEST_FAILED
    const int AE_ROWS_REQUEST
    const int AE_NODE_MODEL
    const int AE_NODE_HOST
    const int AE_NODE_COPY
    const int AE_NODE_IMAGE
    const int AE_IMAGE_DECODE
    const int AE_IMAGE_RESIZE
    const int AE_IMAGE_CROP_RESIZE
    const int AE_GEAR_UPPER
    const int AE_GEAR_LOWER
    const int AE_GEAR_NEAREST
    const int AE_DYN_BATCH
    const int AE_DYN_HW
    const int AE_DYN_DIMS
    enum:
        AE_MAX_GEAR_DIMS

    ctypedef struct ae_error:
        aclError code
        char function[AE_NAME_MAX]
        char node[AE_NAME_MAX]
        char message[AE_MESSAGE_MAX]
        uint64_t request

    ctypedef struct ae_tensor_plan:
        size_t row_bytes
        size_t offset
        size_t capacity
        int domain
        int device

    ctypedef struct ae_host_tensor:
        void *data
        uint64_t rows
        size_t row_bytes

    ctypedef int (*ae_host_fn)(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                               ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                               size_t message_size) noexcept nogil

    ctypedef struct ae_shape_edit:
        size_t *row_bytes           # per tensor, this request (the slot's own)
        int64_t *gear_dims          # node n's gear from n * AE_MAX_GEAR_DIMS
        int *gear_count             # per node
        int n_tensors
        int n_nodes

    ctypedef int (*ae_host_reshape_fn)(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                                       ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out,
                                       ae_shape_edit *shape, char *message, size_t message_size) noexcept nogil

    ctypedef struct ae_node_model:     # AE_NODE_MODEL
        uint32_t id                 # instance 0
        const uint32_t *ids         # instances > 1: every instance's (request r uses r % instances)
        int dyn_index               # -1 for every node without a dynamic input
        size_t dyn_offset
        size_t dyn_size
        int n_gears
        const uint64_t *gears
        uint64_t static_batch

    ctypedef struct ae_node_host:      # AE_NODE_HOST
        ae_host_fn fn
        ae_host_reshape_fn reshape_fn   # a Python step: may change the request's shapes
        void *ctx
        int rows_any
        uint64_t max_rows
        int workers
        int results_stream

    ctypedef struct ae_node_copy:      # AE_NODE_COPY
        int bridge_stream

    ctypedef struct ae_node_shape:     # a model's dynamic shapes
        int dyn_kind                # AE_DYN_*: HW and DIMS nodes take their gear per request
        int n_dims_gears            # dims gears over a host step's rows: the model's gear table
        int dims_count
        const int64_t *dims_gears
        int n_row_dims
        const int *row_dims         # where the inputs' rows sit among a gear's values

    ctypedef struct ae_node_image:     # AE_NODE_IMAGE
        int op                      # AE_IMAGE_*
        uint32_t width
        uint32_t height
        uint32_t max_boxes
        int boxes_float
        uint32_t interpolation

    ctypedef struct ae_node_plan:
        char name[AE_NAME_MAX]
        int kind
        int stream
        int instances               # > 1: model.ids/streams per instance
        const int *streams
        int n_inputs
        const int *inputs
        int n_outputs
        const int *outputs
        int domain
        int device
        ae_node_model model
        ae_node_host host
        ae_node_copy copy
        ae_node_shape shape
        ae_node_image image

    ctypedef struct ae_request_shape:
        const size_t *row_bytes     # per tensor, this request
        const int64_t *gear_dims
        const int *gear_at          # per node
        const int *gear_count       # per node

    ctypedef struct ae_plan:
        aclrtContext context
        int32_t device_id
        int depth
        int n_streams
        int single_stream
        int profile
        int32_t timeout_ms
        int n_tensors
        const ae_tensor_plan *tensors
        int n_nodes
        const ae_node_plan *nodes
        int n_inputs
        const int *input_tensors
        int n_outputs
        const int *output_tensors
        size_t slot_bytes
        uint64_t max_batch
        int spin_wait
        int unsafe_skip_waits
        int gear_policy
        int n_devices
        const aclrtContext *contexts
        const int32_t *device_ids
        const size_t *device_slot_bytes
        const int *stream_devices
        const ae_dvpp_api *dvpp

    ctypedef struct ae_engine:
        pass

    ctypedef struct ae_stats:
        uint64_t requests
        uint64_t failures
        int in_flight
        int in_flight_high_water
        uint64_t enqueue_ns
        uint64_t wait_ns

    int ae_engine_create(const ae_acl_api *api, const ae_plan *plan, ae_engine **out, ae_error *err)
    void ae_engine_destroy(ae_engine *engine)
    int ae_engine_close(ae_engine *engine, ae_error *err)
    int ae_engine_submit_timed(ae_engine *engine, const void *const *inputs, uint64_t rows,
                               void *const *outputs, uint64_t *out_rows, const ae_request_shape *shape,
                               int64_t *times, ae_error *err)
    int ae_engine_complete_one(ae_engine *engine, ae_error *err)
    int ae_engine_flush(ae_engine *engine, ae_error *err)
    int ae_engine_run_batch_timed(ae_engine *engine, const void *const *inputs, uint64_t total_rows,
                                  uint64_t batch, void *const *outputs, int64_t *times, ae_error *err)
    int ae_engine_in_flight(const ae_engine *engine)
    ctypedef int (*ae_poll_fn)(void *ctx) noexcept nogil
    void ae_engine_set_poll(ae_engine *engine, ae_poll_fn poll, void *ctx, int poll_ms)
    aclError ae_engine_wait_request(ae_engine *engine, uint64_t request)
    int ae_engine_complete_waited(ae_engine *engine, uint64_t request, aclError wait_rc, ae_error *err)
    int ae_engine_free_slots(const ae_engine *engine)
    int ae_engine_complete_ready(ae_engine *engine, ae_error *err)
    uint64_t ae_engine_submitted(const ae_engine *engine)
    uint64_t ae_engine_completed(const ae_engine *engine)
    void ae_engine_last_cancelled(const ae_engine *engine, uint64_t *begin, uint64_t *end)
    void ae_engine_get_stats(const ae_engine *engine, ae_stats *out)
    void ae_engine_node_device_ms(const ae_engine *engine, double *out)
    size_t ae_engine_arena_bytes(const ae_engine *engine)
    size_t ae_engine_host_bytes(const ae_engine *engine)
    int AE_TRACE_COLUMNS(int n_nodes)
    int ae_engine_trace_begin(ae_engine *engine, size_t max_requests, ae_error *err)
    size_t ae_engine_trace_end(ae_engine *engine, const double **rows, const uint64_t **requests)
    void ae_chunk_next(const uint64_t *gears, int n_gears, int policy, uint64_t left, uint64_t *gear,
                       uint64_t *take)
    uint64_t ae_chunk_span(const uint64_t *gears, int n_gears, int policy, uint64_t max_rows)
    int ae_rows_to_boxes(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                         ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                         size_t message_size)
