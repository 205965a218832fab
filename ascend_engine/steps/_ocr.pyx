# cython: boundscheck=False, wraparound=False
"""The OCR steps' native code (steps/csrc/db_postprocess.c): the DB step's
function address and parameter block for a NativeStep, and the same C code
callable on arrays without the GIL (ascend_engine.steps.ocr wraps both)."""

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.string cimport memset, strncpy

import numpy as np

cimport numpy as cnp

cnp.import_array()


cdef extern from "db_postprocess.h" nogil:
    enum: AE_DB_NAME_MAX
    ctypedef struct ae_db_params:
        int64_t map_height
        int64_t map_width
        double thresh
        double box_thresh
        double unclip_ratio
        double min_size
        int64_t max_candidates
        int32_t has_picture
        char name[AE_DB_NAME_MAX]
    int ae_db_boxes(const ae_db_params *params, const float *map, const float *picture, float *boxes,
                    float *scores, uint64_t max_out, uint64_t *count, char *message, size_t message_size)
    int ae_db_postprocess(void *ctx, uint64_t request, const void *inputs, int n_inputs, void *outputs,
                          int n_outputs, uint64_t *rows_out, char *message, size_t message_size)
    int64_t ae_ctc_greedy_line(const float *probs, int64_t columns, int64_t classes, int64_t blank,
                               int32_t *out, int64_t max_out, char *message, size_t message_size)


NAME_MAX = AE_DB_NAME_MAX


def db_postprocess_address():
    """The address of ``ae_db_postprocess`` (an ``ae_host_fn``, executor.h)."""
    return <size_t>&ae_db_postprocess


cdef class DBParams:
    """One DB step's parameters as the C function reads them (``ae_db_params``,
    db_postprocess.h); ``address`` is its context pointer, valid while this
    object lives (a NativeStep keeps it)."""

    cdef ae_db_params p

    def __cinit__(self, str name, int64_t map_height, int64_t map_width, double thresh, double box_thresh,
                  double unclip_ratio, double min_size, int64_t max_candidates, bint has_picture):
        memset(&self.p, 0, sizeof(self.p))
        encoded = name.encode()[:AE_DB_NAME_MAX - 1]
        strncpy(self.p.name, encoded, AE_DB_NAME_MAX - 1)
        self.p.map_height = map_height
        self.p.map_width = map_width
        self.p.thresh = thresh
        self.p.box_thresh = box_thresh
        self.p.unclip_ratio = unclip_ratio
        self.p.min_size = min_size
        self.p.max_candidates = max_candidates
        self.p.has_picture = has_picture

    @property
    def address(self):
        """The address of the parameter block (the step's ``ctx``)."""
        return <size_t>&self.p

    def boxes(self, prob, picture=None):
        """The boxes of one (map_height, map_width) float32 map, by the same C code
        as the step: ((N, 4, 2) float32 corners, (N,) float32 scores); ``picture``
        is (height, width, ratio_h, ratio_w) or None.  A bad map raises ValueError."""
        cdef cnp.ndarray m = np.ascontiguousarray(prob, dtype=np.float32)
        if m.ndim != 2 or m.shape[0] != self.p.map_height or m.shape[1] != self.p.map_width:
            raise ValueError(f"db_postprocess step {self.p.name.decode()!r}: the map must be "
                             f"({self.p.map_height}, {self.p.map_width}) float32, got {np.shape(m)}")
        cdef cnp.ndarray pic
        cdef const float *pic_data = NULL
        if picture is not None:
            pic = np.ascontiguousarray(picture, dtype=np.float32).reshape(-1)
            if pic.shape[0] != 4:
                raise ValueError("picture is (height, width, ratio_h, ratio_w)")
            pic_data = <const float *>cnp.PyArray_DATA(pic)
        cdef uint64_t room = max(self.p.max_candidates, 0)
        cdef cnp.ndarray boxes = np.empty((room, 4, 2), np.float32)
        cdef cnp.ndarray scores = np.empty(room, np.float32)
        cdef uint64_t count = 0
        cdef char message[512]
        cdef int rc
        cdef const float *map_data = <const float *>cnp.PyArray_DATA(m)
        cdef float *box_data = <float *>cnp.PyArray_DATA(boxes)
        cdef float *score_data = <float *>cnp.PyArray_DATA(scores)
        message[0] = 0
        with nogil:
            rc = ae_db_boxes(&self.p, map_data, pic_data, box_data, score_data, room, &count, message,
                             sizeof(message))
        if rc != 0:
            raise ValueError(message.decode(errors="replace"))
        return boxes[:count].copy(), scores[:count].copy()


def ctc_greedy(probs, int64_t blank, int64_t max_out):
    """Greedy CTC over (lines, columns, classes) float32 scores, in C without the
    GIL: (lines, max_out) int32 classes, -1 after each line's last.  A NaN or a
    line of more than max_out characters raises ValueError."""
    cdef cnp.ndarray p = np.ascontiguousarray(probs, dtype=np.float32)
    if p.ndim != 3:
        raise ValueError(f"ctc: scores are (lines, columns, classes), got shape {np.shape(p)}")
    cdef int64_t lines = p.shape[0], columns = p.shape[1], classes = p.shape[2], i, n = 0
    cdef cnp.ndarray out = np.full((lines, max(max_out, 0)), -1, np.int32)
    cdef const float *data = <const float *>cnp.PyArray_DATA(p)
    cdef int32_t *dst = <int32_t *>cnp.PyArray_DATA(out)
    cdef char message[256]
    message[0] = 0
    with nogil:
        for i in range(lines):
            n = ae_ctc_greedy_line(data + i * columns * classes, columns, classes, blank, dst + i * max_out,
                                   max_out, message, sizeof(message))
            if n < 0:
                break
    if n < 0:
        raise ValueError(f"{message.decode(errors='replace')} (line {i})")
    return out
