# The DVPP batch calls of ascend_engine.acl (included by _pyacl.pyx before
# _pyacl_special.pxi): pyACL passes their region counts and region handles as
# Python lists, which no generated wrapper converts (docs/pyacl.md, "DVPP").

ctypedef aclError (*_BatchCropFn)(void *, void *, uint32_t *, uint32_t, void *, void **,
                                  aclrtStream) noexcept nogil
ctypedef aclError (*_BatchCropPasteFn)(void *, void *, uint32_t *, uint32_t, void *, void **, void **,
                                       aclrtStream) noexcept nogil
ctypedef aclError (*_BatchCropResizePasteFn)(void *, void *, uint32_t *, uint32_t, void *, void **, void **,
                                             void *, aclrtStream) noexcept nogil

cdef _BatchCropFn _m_batch_crop = NULL
cdef _BatchCropPasteFn _m_batch_crop_paste = NULL
cdef _BatchCropResizePasteFn _m_batch_crop_resize_paste = NULL

# The VPC takes at most this many regions in one batch call (acldvppVpcBatchCropAsync's
# roiNums); the region arrays handed to C are at least this long, NULL past the list,
# so a list shorter than the counts say is a NULL region the library refuses, never a
# read past the array.
cdef Py_ssize_t _VPC_MAX_ROIS = 256


cdef int _fill_media_batch(void *handle) noexcept:
    global _m_batch_crop, _m_batch_crop_paste, _m_batch_crop_resize_paste
    _m_batch_crop = <_BatchCropFn>dlsym(handle, b"acldvppVpcBatchCropAsync")
    _m_batch_crop_paste = <_BatchCropPasteFn>dlsym(handle, b"acldvppVpcBatchCropAndPasteAsync")
    _m_batch_crop_resize_paste = <_BatchCropResizePasteFn>dlsym(handle, b"acldvppVpcBatchCropResizePasteAsync")
    return 0


cdef object _roi_counts(object values, str fn):
    """The region counts as a uint32 array (roiNums) of the list's length."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{fn}: argument 'roi_nums_list' must be a list of ints, got {_tname(values)}")
    import numpy as np
    counts = np.zeros(max(len(values), 1), np.uint32)
    for i, v in enumerate(values):
        counts[i] = _uint(v, UINT32_MAX, fn, f"roi_nums_list[{i}]")
    return counts


cdef object _regions(object values, str fn, str arg):
    """Region handles (acldvppRoiConfig *) as a pointer array, NULL past the list."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{fn}: argument '{arg}' must be a list of region handles, got {_tname(values)}")
    import numpy as np
    regions = np.zeros(max(len(values), _VPC_MAX_ROIS), np.uintp)
    for i, v in enumerate(values):
        regions[i] = <uintptr_t>_ptr(v, fn, f"{arg}[{i}]")
    return regions


cdef inline void *_data(object array):
    return <void *><uintptr_t>array.ctypes.data


def _media_dvpp_vpc_batch_crop_async(channel_desc, src_batch_pic_descs, roi_nums_list, dst_batch_pic_descs,
                                     crop_area_list, stream):
    """acl.media.dvpp_vpc_batch_crop_async(channel_desc, src_batch_pic_descs, roi_nums_list,
    dst_batch_pic_descs, crop_area_list, stream) -> (dst_batch_pic_descs, ret): acldvppVpcBatchCropAsync,
    size the list's length (releases the GIL)."""
    fn = "acl.media.dvpp_vpc_batch_crop_async"
    cdef void *ch = _ptr(channel_desc, fn, "channel_desc")
    cdef void *src = _ptr(src_batch_pic_descs, fn, "src_batch_pic_descs")
    counts = _roi_counts(roi_nums_list, fn)
    cdef void *dst = _ptr(dst_batch_pic_descs, fn, "dst_batch_pic_descs")
    crops = _regions(crop_area_list, fn, "crop_area_list")
    cdef aclrtStream s = <aclrtStream>_ptr(stream, fn, "stream")
    cdef uint32_t *c_counts = <uint32_t *>_data(counts)
    cdef uint32_t size = <uint32_t>len(roi_nums_list)
    cdef void **c_crops = <void **>_data(crops)
    cdef aclError rc
    if not (_media() and _m_batch_crop is not NULL):
        return dst_batch_pic_descs, _missing("acldvppVpcBatchCropAsync", fn)
    with nogil:
        rc = _m_batch_crop(ch, src, c_counts, size, dst, c_crops, s)
    return dst_batch_pic_descs, rc


def _media_dvpp_vpc_batch_crop_and_paste_async(channel_desc, src_batch_pic_descs, roi_nums_list,
                                               dst_batch_pic_descs, crop_area_list, paste_area_list, stream):
    """acl.media.dvpp_vpc_batch_crop_and_paste_async(channel_desc, src_batch_pic_descs, roi_nums_list,
    dst_batch_pic_descs, crop_area_list, paste_area_list, stream) -> (dst_batch_pic_descs, ret):
    acldvppVpcBatchCropAndPasteAsync (releases the GIL)."""
    fn = "acl.media.dvpp_vpc_batch_crop_and_paste_async"
    cdef void *ch = _ptr(channel_desc, fn, "channel_desc")
    cdef void *src = _ptr(src_batch_pic_descs, fn, "src_batch_pic_descs")
    counts = _roi_counts(roi_nums_list, fn)
    cdef void *dst = _ptr(dst_batch_pic_descs, fn, "dst_batch_pic_descs")
    crops = _regions(crop_area_list, fn, "crop_area_list")
    pastes = _regions(paste_area_list, fn, "paste_area_list")
    cdef aclrtStream s = <aclrtStream>_ptr(stream, fn, "stream")
    cdef uint32_t *c_counts = <uint32_t *>_data(counts)
    cdef uint32_t size = <uint32_t>len(roi_nums_list)
    cdef void **c_crops = <void **>_data(crops)
    cdef void **c_pastes = <void **>_data(pastes)
    cdef aclError rc
    if not (_media() and _m_batch_crop_paste is not NULL):
        return dst_batch_pic_descs, _missing("acldvppVpcBatchCropAndPasteAsync", fn)
    with nogil:
        rc = _m_batch_crop_paste(ch, src, c_counts, size, dst, c_crops, c_pastes, s)
    return dst_batch_pic_descs, rc


def _media_dvpp_vpc_batch_crop_resize_paste_async(channel_desc, src_batch_pic_descs, roi_nums_list,
                                                  dst_batch_pic_descs, crop_area_list, paste_area_list,
                                                  resize_config, stream):
    """acl.media.dvpp_vpc_batch_crop_resize_paste_async(channel_desc, src_batch_pic_descs, roi_nums_list,
    dst_batch_pic_descs, crop_area_list, paste_area_list, resize_config, stream) -> ret:
    acldvppVpcBatchCropResizePasteAsync (releases the GIL)."""
    fn = "acl.media.dvpp_vpc_batch_crop_resize_paste_async"
    cdef void *ch = _ptr(channel_desc, fn, "channel_desc")
    cdef void *src = _ptr(src_batch_pic_descs, fn, "src_batch_pic_descs")
    counts = _roi_counts(roi_nums_list, fn)
    cdef void *dst = _ptr(dst_batch_pic_descs, fn, "dst_batch_pic_descs")
    crops = _regions(crop_area_list, fn, "crop_area_list")
    pastes = _regions(paste_area_list, fn, "paste_area_list")
    cdef void *resize = _ptr(resize_config, fn, "resize_config")
    cdef aclrtStream s = <aclrtStream>_ptr(stream, fn, "stream")
    cdef uint32_t *c_counts = <uint32_t *>_data(counts)
    cdef uint32_t size = <uint32_t>len(roi_nums_list)
    cdef void **c_crops = <void **>_data(crops)
    cdef void **c_pastes = <void **>_data(pastes)
    cdef aclError rc
    if not (_media() and _m_batch_crop_resize_paste is not NULL):
        return _missing("acldvppVpcBatchCropResizePasteAsync", fn)
    with nogil:
        rc = _m_batch_crop_resize_paste(ch, src, c_counts, size, dst, c_crops, c_pastes, resize, s)
    return rc
