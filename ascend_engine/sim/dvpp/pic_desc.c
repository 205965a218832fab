/*
 * pic_desc.c -- picture descriptions (where an image lives and how it is
 * laid out) and batches of them.  Setters store what they are given, as
 * CANN's do; the rules (format, strides, sizes, buffer) are checked when a
 * task is submitted (vpc.c, jpegd.c, jpege.c).  Getters of a NULL or dead
 * description return CANN's defaults (NULL, 0, PIXEL_FORMAT_YUV_400) and
 * record why.  The pictures of a batch belong to it: they are destroyed with
 * acldvppDestroyBatchPicDesc, not one by one.
 */
#include <stdlib.h>

#include "dvpp_internal.h"

static void pic_free(dvpp_obj *o)
{
    free(o);
}

STANDIN_EXPORT acldvppPicDesc *acldvppCreatePicDesc(void)
{
    acldvppPicDesc *d = calloc(1, sizeof *d);
    if (!d || dvpp_obj_add(&d->h, DVPP_OBJ_PIC, pic_free)) {
        free(d);
        aeSimError(ACL_ERROR_BAD_ALLOC, "acldvppCreatePicDesc", "out of host memory");
        return NULL;
    }
    return d;
}

STANDIN_EXPORT aclError acldvppDestroyPicDesc(acldvppPicDesc *picDesc)
{
    const char *fn = "acldvppDestroyPicDesc";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "picDesc", picDesc, DVPP_OBJ_PIC);
    if (!rc && picDesc->batch)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "picDesc %p belongs to batch %p (acldvppGetPicDesc): destroy the batch with "
                        "acldvppDestroyBatchPicDesc", (void *)picDesc, (void *)picDesc->batch);
    if (!rc)
        dvpp_obj_remove_locked(&picDesc->h);
    dvpp_unlock();
    return rc;
}

/* One setter body: check the handle, store the field. */
#define PIC_SETTER(name, type, arg, field)                                         \
    STANDIN_EXPORT aclError name(acldvppPicDesc *picDesc, type arg)                \
    {                                                                              \
        dvpp_lock();                                                               \
        aclError rc = dvpp_obj_check_locked(#name, "picDesc", picDesc, DVPP_OBJ_PIC); \
        if (!rc)                                                                   \
            picDesc->field = arg;                                                  \
        dvpp_unlock();                                                             \
        return rc;                                                                 \
    }

PIC_SETTER(acldvppSetPicDescData, void *, dataDev, data)
PIC_SETTER(acldvppSetPicDescSize, uint32_t, size, size)
PIC_SETTER(acldvppSetPicDescFormat, acldvppPixelFormat, format, format)
PIC_SETTER(acldvppSetPicDescWidth, uint32_t, width, width)
PIC_SETTER(acldvppSetPicDescHeight, uint32_t, height, height)
PIC_SETTER(acldvppSetPicDescWidthStride, uint32_t, widthStride, width_stride)
PIC_SETTER(acldvppSetPicDescHeightStride, uint32_t, heightStride, height_stride)
PIC_SETTER(acldvppSetPicDescRetCode, uint32_t, retCode, ret_code)

#define PIC_GETTER(name, type, field, fallback)                                    \
    STANDIN_EXPORT type name(const acldvppPicDesc *picDesc)                        \
    {                                                                              \
        type v = fallback;                                                         \
        dvpp_lock();                                                               \
        if (!dvpp_obj_check_locked(#name, "picDesc", picDesc, DVPP_OBJ_PIC))        \
            v = (type)picDesc->field;                                              \
        dvpp_unlock();                                                             \
        return v;                                                                  \
    }

PIC_GETTER(acldvppGetPicDescData, void *, data, NULL)
PIC_GETTER(acldvppGetPicDescSize, uint32_t, size, 0)
PIC_GETTER(acldvppGetPicDescFormat, acldvppPixelFormat, format, PIXEL_FORMAT_YUV_400)
PIC_GETTER(acldvppGetPicDescWidth, uint32_t, width, 0)
PIC_GETTER(acldvppGetPicDescHeight, uint32_t, height, 0)
PIC_GETTER(acldvppGetPicDescWidthStride, uint32_t, width_stride, 0)
PIC_GETTER(acldvppGetPicDescHeightStride, uint32_t, height_stride, 0)
PIC_GETTER(acldvppGetPicDescRetCode, uint32_t, ret_code, 0)

/* ---- batches ----------------------------------------------------------------------------------- */

static void batch_free(dvpp_obj *o)
{
    acldvppBatchPicDesc *b = (acldvppBatchPicDesc *)o;
    free(b->pics);
    free(b);
}

STANDIN_EXPORT acldvppBatchPicDesc *acldvppCreateBatchPicDesc(uint32_t batchSize)
{
    const char *fn = "acldvppCreateBatchPicDesc";
    if (batchSize == 0) {
        aeSimError(ACL_ERROR_INVALID_PARAM, fn, "batchSize is 0: expected at least 1 picture");
        return NULL;
    }
    acldvppBatchPicDesc *b = calloc(1, sizeof *b);
    if (b)
        b->pics = calloc(batchSize, sizeof *b->pics);
    if (!b || !b->pics || dvpp_obj_add(&b->h, DVPP_OBJ_BATCH, batch_free)) {
        if (b)
            free(b->pics);
        free(b);
        aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory for %u picture descriptions", batchSize);
        return NULL;
    }
    b->count = batchSize;
    for (uint32_t i = 0; i < batchSize; i++) {
        b->pics[i].batch = b;
        if (dvpp_obj_add(&b->pics[i].h, DVPP_OBJ_PIC, NULL)) {
            dvpp_lock();
            for (uint32_t j = 0; j < i; j++)
                dvpp_obj_remove_locked(&b->pics[j].h);
            dvpp_obj_remove_locked(&b->h);
            dvpp_unlock();
            aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory for %u picture descriptions", batchSize);
            return NULL;
        }
    }
    return b;
}

STANDIN_EXPORT acldvppPicDesc *acldvppGetPicDesc(acldvppBatchPicDesc *batchPicDesc, uint32_t index)
{
    const char *fn = "acldvppGetPicDesc";
    acldvppPicDesc *d = NULL;
    dvpp_lock();
    if (!dvpp_obj_check_locked(fn, "batchPicDesc", batchPicDesc, DVPP_OBJ_BATCH)) {
        if (index < batchPicDesc->count)
            d = &batchPicDesc->pics[index];
        else
            aeSimError(ACL_ERROR_INVALID_PARAM, fn, "index %u is out of range: the batch holds %u pictures (0 .. %u)",
                       index, batchPicDesc->count, batchPicDesc->count - 1);
    }
    dvpp_unlock();
    return d;
}

STANDIN_EXPORT aclError acldvppDestroyBatchPicDesc(acldvppBatchPicDesc *batchPicDesc)
{
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked("acldvppDestroyBatchPicDesc", "batchPicDesc", batchPicDesc, DVPP_OBJ_BATCH);
    if (!rc) {
        for (uint32_t i = 0; i < batchPicDesc->count; i++)
            dvpp_obj_remove_locked(&batchPicDesc->pics[i].h);
        dvpp_obj_remove_locked(&batchPicDesc->h);
    }
    dvpp_unlock();
    return rc;
}
