# cython: language_level=3
"""The native steps' C functions and their contexts (ascend_engine/steps/csrc/steps.h).

Each ``*_context`` function allocates a step's parameter struct, fills it
and returns a :class:`Context` owning it; ``ADDRESSES`` holds each step's
``ae_host_fn`` address.  A :class:`Context` must outlive every engine using
it: the builder keeps it as its NativeStep's ``keep``.  :func:`call` runs a
step directly on numpy arrays (without the GIL), as an engine's worker
would: the tests and the benchmarks use it.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t, uintptr_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, strncpy

import numpy as np

cdef extern from "ascend_engine/executor.h":
    ctypedef struct ae_host_tensor:
        void *data
        uint64_t rows
        size_t row_bytes
    ctypedef int (*ae_host_fn)(void *ctx, uint64_t request, const ae_host_tensor *inputs, int n_inputs,
                               ae_host_tensor *outputs, int n_outputs, uint64_t *rows_out, char *message,
                               size_t message_size) noexcept nogil

cdef extern from "steps.h":
    enum: AE_STEP_NAME_MAX
    enum: AE_DECODE_MAX_LEVELS
    enum: AE_DECODE_MAX_ANCHORS
    ctypedef struct ae_decode_ctx:
        char name[128]
        int kind
        uint64_t n
        uint64_t channels
        double width
        double height
        int clip
        int n_levels
        int strides[8]
        int n_anchors
        float anchors[8][16][2]
        float variances[2]
        const float *priors
    ctypedef struct ae_nms_ctx:
        char name[128]
        uint64_t n
        uint64_t classes
        int class_agnostic
        float iou_threshold
        float score_threshold
        uint64_t max_boxes
        uint64_t max_images
    ctypedef struct ae_rowwise_ctx:
        char name[128]
        uint64_t vectors
        uint64_t length
        uint64_t k
    ctypedef struct ae_ctc_ctx:
        char name[128]
        uint64_t steps
        uint64_t classes
        int64_t blank
    ctypedef struct ae_crop_ctx:
        char name[128]
        uint64_t height
        uint64_t width
        uint64_t channels
        uint64_t out_height
        uint64_t out_width
        int pixels
        int interpolation
        int has_index
        float border
    int ae_step_decode_boxes(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *,
                             char *, size_t) noexcept nogil
    int ae_step_nms(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *, char *,
                    size_t) noexcept nogil
    int ae_step_topk(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *, char *,
                     size_t) noexcept nogil
    int ae_step_softmax(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *, char *,
                        size_t) noexcept nogil
    int ae_step_ctc_greedy(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *,
                           char *, size_t) noexcept nogil
    int ae_step_crop_resize(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *,
                            char *, size_t) noexcept nogil
    int ae_step_warp_affine(void *, uint64_t, const ae_host_tensor *, int, ae_host_tensor *, int, uint64_t *,
                            char *, size_t) noexcept nogil

# decode_boxes kinds, as steps.h numbers them
DECODE_KINDS = {"xywh": 0, "yolox": 1, "ltrb": 2, "yolov5": 3, "ssd": 4}
MAX_LEVELS = AE_DECODE_MAX_LEVELS
MAX_ANCHORS = AE_DECODE_MAX_ANCHORS
NAME_MAX = AE_STEP_NAME_MAX - 1

ADDRESSES = {
    "decode_boxes": <uintptr_t>ae_step_decode_boxes,
    "nms": <uintptr_t>ae_step_nms,
    "topk": <uintptr_t>ae_step_topk,
    "softmax": <uintptr_t>ae_step_softmax,
    "ctc_greedy": <uintptr_t>ae_step_ctc_greedy,
    "crop_resize_host": <uintptr_t>ae_step_crop_resize,
    "warp_affine_host": <uintptr_t>ae_step_warp_affine,
}


cdef class Context:
    """A step's parameter struct (calloc'd, freed with this object) and what it points to."""
    cdef void *ptr
    cdef readonly str step
    cdef object arrays      # numpy arrays the struct points into

    def __dealloc__(self):
        free(self.ptr)

    @property
    def address(self):
        """The struct's address: the NativeStep's context."""
        return <uintptr_t>self.ptr

    def __repr__(self):
        return f"<steps context {self.step} at {<uintptr_t>self.ptr:#x}>"


cdef Context _new(str step, size_t size, str name):
    cdef Context c = Context.__new__(Context)
    c.step = step
    c.ptr = calloc(1, size)
    if c.ptr == NULL:
        raise MemoryError(f"{step} {name!r}: cannot allocate its context")
    encoded = name.encode()[:NAME_MAX]
    strncpy(<char *>c.ptr, encoded, NAME_MAX)    # every struct starts with its node's name
    return c


def decode_context(str name, str kind, uint64_t n, uint64_t channels, double width, double height, bint clip,
                   strides=(), anchors=(), priors=None, variances=(0.1, 0.2)):
    """decode_boxes' context: checked values only (ascend_engine/steps/detection.py checks them)."""
    cdef Context c = _new("decode_boxes", sizeof(ae_decode_ctx), name)
    cdef ae_decode_ctx *d = <ae_decode_ctx *>c.ptr
    cdef const float[:, ::1] view
    d.kind = DECODE_KINDS[kind]
    d.n = n
    d.channels = channels
    d.width = width
    d.height = height
    d.clip = clip
    d.n_levels = len(strides)
    for i, s in enumerate(strides):
        d.strides[i] = s
    d.n_anchors = len(anchors[0]) if len(anchors) else 0
    for level, pairs in enumerate(anchors):
        for a, (w, h) in enumerate(pairs):
            d.anchors[level][a][0] = w
            d.anchors[level][a][1] = h
    d.variances[0], d.variances[1] = variances
    if priors is not None:
        arr = np.ascontiguousarray(priors, dtype=np.float32)
        view = arr
        d.priors = &view[0, 0]
        c.arrays = arr
    return c


def nms_context(str name, uint64_t n, uint64_t classes, bint class_agnostic, float iou_threshold,
                float score_threshold, uint64_t max_boxes, uint64_t max_images):
    """nms' context."""
    cdef Context c = _new("nms", sizeof(ae_nms_ctx), name)
    cdef ae_nms_ctx *d = <ae_nms_ctx *>c.ptr
    d.n, d.classes, d.class_agnostic = n, classes, class_agnostic
    d.iou_threshold, d.score_threshold = iou_threshold, score_threshold
    d.max_boxes, d.max_images = max_boxes, max_images
    return c


def rowwise_context(str step, str name, uint64_t vectors, uint64_t length, uint64_t k=0):
    """topk's and softmax's context."""
    cdef Context c = _new(step, sizeof(ae_rowwise_ctx), name)
    cdef ae_rowwise_ctx *d = <ae_rowwise_ctx *>c.ptr
    d.vectors, d.length, d.k = vectors, length, k
    return c


def ctc_context(str name, uint64_t steps, uint64_t classes, int64_t blank):
    """ctc_greedy's context."""
    cdef Context c = _new("ctc_greedy", sizeof(ae_ctc_ctx), name)
    cdef ae_ctc_ctx *d = <ae_ctc_ctx *>c.ptr
    d.steps, d.classes, d.blank = steps, classes, blank
    return c


def crop_context(str step, str name, uint64_t height, uint64_t width, uint64_t channels, uint64_t out_height,
                 uint64_t out_width, bint uint8, bint bilinear, bint has_index, float border=0.0):
    """crop_resize_host's and warp_affine_host's context."""
    cdef Context c = _new(step, sizeof(ae_crop_ctx), name)
    cdef ae_crop_ctx *d = <ae_crop_ctx *>c.ptr
    d.height, d.width, d.channels = height, width, channels
    d.out_height, d.out_width = out_height, out_width
    d.pixels = 0 if uint8 else 1
    d.interpolation = 1 if bilinear else 0
    d.has_index = has_index
    d.border = border
    return c


class StepError(RuntimeError):
    """A native step refused its inputs (the message the engine would fail the request with)."""


def call(str step, Context context, inputs, outputs, uint64_t request=0, int repeat=1):
    """Run ``step`` on numpy arrays as an engine's worker does: ``inputs``
    C-contiguous arrays (first dimension the rows), ``outputs`` arrays to
    write (their first dimension the room).  Returns the rows written;
    raises :class:`StepError` with the step's message.  ``repeat`` calls it
    that many times in a row without the GIL (the benchmarks time one call
    without this function's own cost)."""
    cdef ae_host_fn fn = <ae_host_fn><uintptr_t>ADDRESSES[step]
    cdef int n_in = len(inputs), n_out = len(outputs)
    cdef ae_host_tensor tin[8]
    cdef ae_host_tensor tout[8]
    cdef uint64_t rows = 0
    cdef char message[1024]
    cdef int rc
    cdef void *ctx = context.ptr
    if n_in > 8 or n_out > 8:
        raise ValueError("at most 8 inputs and 8 outputs")
    keep = []
    for i, a in enumerate(inputs):
        if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.ndim >= 1):
            raise ValueError(f"input {i} must be a C-contiguous numpy array with rows")
        keep.append(a)
        tin[i].data = <void *><uintptr_t>a.ctypes.data
        tin[i].rows = a.shape[0]
        tin[i].row_bytes = a.nbytes // a.shape[0] if a.shape[0] else a.itemsize * int(np.prod(a.shape[1:]))
    for o, a in enumerate(outputs):
        if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable and a.ndim >= 1):
            raise ValueError(f"output {o} must be a writable C-contiguous numpy array with rows")
        tout[o].data = <void *><uintptr_t>a.ctypes.data
        tout[o].rows = a.shape[0]
        tout[o].row_bytes = a.itemsize * int(np.prod(a.shape[1:]))
    message[0] = 0
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    with nogil:
        for _ in range(repeat):
            rc = fn(ctx, request, tin, n_in, tout, n_out, &rows, message, sizeof(message))
            if rc:
                break
    if rc:
        raise StepError(message.decode(errors="replace"))
    return rows
