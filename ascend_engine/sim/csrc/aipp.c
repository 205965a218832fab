/*
 * aipp.c -- aclmdlAIPP: dynamic AIPP parameter sets (image pre-processing
 * done by the NPU's AIPP unit before the first layer).
 *
 * The parameter set is a real object: each setter validates its arguments
 * (switches are 0/1, per-batch setters need batchIndex < the set's batch
 * size, sizes are positive) and stores them.  aclmdlSetInputAIPP checks the
 * stored set for consistency (input format and source size set, every crop
 * window inside the source image) before looking at the model.  A model
 * converted with dynamic AIPP has the ACL_DYNAMIC_AIPP_NAME input: the set,
 * checked per batch image against the model input, is written there as the
 * parameter block the execution reads (aipp_apply.c); on a model without one
 * a valid set fails with 100000, as in CANN 9.1, whose lookup of that input
 * by name fails.
 *
 * Static AIPP (format_aipp.c, aipp_apply.c) is fixed at conversion.
 * aclmdlGetAippType tells the kinds apart (static, dynamic, the parameter
 * input itself, none), and aclmdlGetFirstAippInfo gives an input's settings.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define SIM_AIPP_MAGIC 0x50504941u   /* "AIPP" */

typedef struct aipp_batch {
    int8_t crop_switch;
    int32_t crop_x, crop_y, crop_w, crop_h;
    int8_t pad_switch;
    int32_t pad_top, pad_bottom, pad_left, pad_right;
    int16_t mean[4];
    float min[4], var_reci[4];
} aipp_batch;

struct aclmdlAIPP {
    uint32_t magic;
    uint64_t batch_size;
    aclAippInputFormat input_format;   /* 0 until set */
    int8_t csc_switch;
    int16_t csc_matrix[9];
    uint8_t csc_out_bias[3], csc_in_bias[3];
    int8_t rbuv_swap, ax_swap;
    int32_t src_w, src_h;              /* 0 until set */
    aipp_batch *batches;               /* batch_size entries */
};

static int aipp_ok(const aclmdlAIPP *a)
{
    return a && a->magic == SIM_AIPP_MAGIC;
}

/* Common checks: a live set, an optional 0/1 switch, an optional batch index. */
static aclError check(const char *fn, const aclmdlAIPP *a, int sw, int check_sw, uint64_t batch, int check_batch)
{
    if (!aipp_ok(a))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "aippParmsSet %p is NULL or not from aclmdlCreateAIPP",
                         (const void *)a);
    if (check_sw && sw != 0 && sw != 1)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "switch %d: expected 0 (off) or 1 (on)", sw);
    if (check_batch && batch >= a->batch_size)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "batchIndex %" PRIu64 " out of range: the AIPP set was created "
                         "for %" PRIu64 " batches", batch, a->batch_size);
    return ACL_SUCCESS;
}

SIM_EXPORT aclmdlAIPP *aclmdlCreateAIPP(uint64_t batchSize)
{
    SIM_ENTER_OR(aclmdlCreateAIPP, NULL);
    const char *fn = "aclmdlCreateAIPP";
    if (batchSize == 0 || batchSize > ACL_MAX_BATCH_NUM) {
        sim_error(ACL_ERROR_INVALID_PARAM, fn, "batchSize %" PRIu64 " out of range 1..%d", batchSize,
                  ACL_MAX_BATCH_NUM);
        return NULL;
    }
    aclmdlAIPP *a = calloc(1, sizeof *a);
    aipp_batch *b = calloc((size_t)batchSize, sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        return NULL;
    }
    for (uint64_t i = 0; i < batchSize; i++)
        for (int c = 0; c < 4; c++)
            b[i].var_reci[c] = 1.0f;   /* identity scaling until set */
    a->magic = SIM_AIPP_MAGIC;
    a->batch_size = batchSize;
    a->batches = b;
    SIM_LOG_VAL(aclmdlCreateAIPP, ACL_SUCCESS, "batch %" PRIu64 " -> %p", batchSize, (void *)a);
    return a;
}

SIM_EXPORT aclError aclmdlDestroyAIPP(const aclmdlAIPP *aippParmsSet)
{
    SIM_ENTER(aclmdlDestroyAIPP);
    aclError rc = check("aclmdlDestroyAIPP", aippParmsSet, 0, 0, 0, 0);
    if (rc == ACL_SUCCESS) {
        aclmdlAIPP *a = (aclmdlAIPP *)aippParmsSet;
        a->magic = 0;
        free(a->batches);
        free(a);
    }
    SIM_RETURN(aclmdlDestroyAIPP, rc, "%p", (const void *)aippParmsSet);
}

SIM_EXPORT aclError aclmdlSetAIPPInputFormat(aclmdlAIPP *aippParmsSet, aclAippInputFormat inputFormat)
{
    SIM_ENTER(aclmdlSetAIPPInputFormat);
    const char *fn = "aclmdlSetAIPPInputFormat";
    aclError rc = check(fn, aippParmsSet, 0, 0, 0, 0);
    if (rc == ACL_SUCCESS && ((int)inputFormat < ACL_YUV420SP_U8 || (int)inputFormat > ACL_RAW24))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "inputFormat %d: expected an aclAippInputFormat from "
                       "ACL_YUV420SP_U8 (1) to ACL_RAW24 (14)", (int)inputFormat);
    if (rc == ACL_SUCCESS)
        aippParmsSet->input_format = inputFormat;
    SIM_RETURN(aclmdlSetAIPPInputFormat, rc, "%p format %d", (void *)aippParmsSet, (int)inputFormat);
}

SIM_EXPORT aclError aclmdlSetAIPPCscParams(aclmdlAIPP *aippParmsSet, int8_t cscSwitch, int16_t cscMatrixR0C0,
                                           int16_t cscMatrixR0C1, int16_t cscMatrixR0C2, int16_t cscMatrixR1C0,
                                           int16_t cscMatrixR1C1, int16_t cscMatrixR1C2, int16_t cscMatrixR2C0,
                                           int16_t cscMatrixR2C1, int16_t cscMatrixR2C2, uint8_t cscOutputBiasR0,
                                           uint8_t cscOutputBiasR1, uint8_t cscOutputBiasR2, uint8_t cscInputBiasR0,
                                           uint8_t cscInputBiasR1, uint8_t cscInputBiasR2)
{
    SIM_ENTER(aclmdlSetAIPPCscParams);
    aclError rc = check("aclmdlSetAIPPCscParams", aippParmsSet, cscSwitch, 1, 0, 0);
    if (rc == ACL_SUCCESS) {
        const int16_t m[9] = {cscMatrixR0C0, cscMatrixR0C1, cscMatrixR0C2, cscMatrixR1C0, cscMatrixR1C1,
                              cscMatrixR1C2, cscMatrixR2C0, cscMatrixR2C1, cscMatrixR2C2};
        aippParmsSet->csc_switch = cscSwitch;
        memcpy(aippParmsSet->csc_matrix, m, sizeof m);
        aippParmsSet->csc_out_bias[0] = cscOutputBiasR0;
        aippParmsSet->csc_out_bias[1] = cscOutputBiasR1;
        aippParmsSet->csc_out_bias[2] = cscOutputBiasR2;
        aippParmsSet->csc_in_bias[0] = cscInputBiasR0;
        aippParmsSet->csc_in_bias[1] = cscInputBiasR1;
        aippParmsSet->csc_in_bias[2] = cscInputBiasR2;
    }
    SIM_RETURN(aclmdlSetAIPPCscParams, rc, "%p switch %d", (void *)aippParmsSet, cscSwitch);
}

SIM_EXPORT aclError aclmdlSetAIPPRbuvSwapSwitch(aclmdlAIPP *aippParmsSet, int8_t rbuvSwapSwitch)
{
    SIM_ENTER(aclmdlSetAIPPRbuvSwapSwitch);
    aclError rc = check("aclmdlSetAIPPRbuvSwapSwitch", aippParmsSet, rbuvSwapSwitch, 1, 0, 0);
    if (rc == ACL_SUCCESS)
        aippParmsSet->rbuv_swap = rbuvSwapSwitch;
    SIM_RETURN(aclmdlSetAIPPRbuvSwapSwitch, rc, "%p %d", (void *)aippParmsSet, rbuvSwapSwitch);
}

SIM_EXPORT aclError aclmdlSetAIPPAxSwapSwitch(aclmdlAIPP *aippParmsSet, int8_t axSwapSwitch)
{
    SIM_ENTER(aclmdlSetAIPPAxSwapSwitch);
    aclError rc = check("aclmdlSetAIPPAxSwapSwitch", aippParmsSet, axSwapSwitch, 1, 0, 0);
    if (rc == ACL_SUCCESS)
        aippParmsSet->ax_swap = axSwapSwitch;
    SIM_RETURN(aclmdlSetAIPPAxSwapSwitch, rc, "%p %d", (void *)aippParmsSet, axSwapSwitch);
}

SIM_EXPORT aclError aclmdlSetAIPPSrcImageSize(aclmdlAIPP *aippParmsSet, int32_t srcImageSizeW, int32_t srcImageSizeH)
{
    SIM_ENTER(aclmdlSetAIPPSrcImageSize);
    const char *fn = "aclmdlSetAIPPSrcImageSize";
    aclError rc = check(fn, aippParmsSet, 0, 0, 0, 0);
    if (rc == ACL_SUCCESS && (srcImageSizeW <= 0 || srcImageSizeH <= 0))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "source image %d x %d: width and height must be > 0",
                       srcImageSizeW, srcImageSizeH);
    if (rc == ACL_SUCCESS) {
        aippParmsSet->src_w = srcImageSizeW;
        aippParmsSet->src_h = srcImageSizeH;
    }
    SIM_RETURN(aclmdlSetAIPPSrcImageSize, rc, "%p %dx%d", (void *)aippParmsSet, srcImageSizeW, srcImageSizeH);
}

SIM_EXPORT aclError aclmdlSetAIPPCropParams(aclmdlAIPP *aippParmsSet, int8_t cropSwitch, int32_t cropStartPosW,
                                            int32_t cropStartPosH, int32_t cropSizeW, int32_t cropSizeH,
                                            uint64_t batchIndex)
{
    SIM_ENTER(aclmdlSetAIPPCropParams);
    const char *fn = "aclmdlSetAIPPCropParams";
    aclError rc = check(fn, aippParmsSet, cropSwitch, 1, batchIndex, 1);
    if (rc == ACL_SUCCESS && cropSwitch &&
        (cropStartPosW < 0 || cropStartPosH < 0 || cropSizeW <= 0 || cropSizeH <= 0))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "crop at (%d, %d) size %d x %d: start must be >= 0 and size > 0",
                       cropStartPosW, cropStartPosH, cropSizeW, cropSizeH);
    if (rc == ACL_SUCCESS) {
        aipp_batch *b = &aippParmsSet->batches[batchIndex];
        b->crop_switch = cropSwitch;
        b->crop_x = cropStartPosW;
        b->crop_y = cropStartPosH;
        b->crop_w = cropSizeW;
        b->crop_h = cropSizeH;
    }
    SIM_RETURN(aclmdlSetAIPPCropParams, rc, "%p batch %" PRIu64, (void *)aippParmsSet, batchIndex);
}

SIM_EXPORT aclError aclmdlSetAIPPPaddingParams(aclmdlAIPP *aippParmsSet, int8_t paddingSwitch,
                                               int32_t paddingSizeTop, int32_t paddingSizeBottom,
                                               int32_t paddingSizeLeft, int32_t paddingSizeRight,
                                               uint64_t batchIndex)
{
    SIM_ENTER(aclmdlSetAIPPPaddingParams);
    const char *fn = "aclmdlSetAIPPPaddingParams";
    aclError rc = check(fn, aippParmsSet, paddingSwitch, 1, batchIndex, 1);
    if (rc == ACL_SUCCESS && (paddingSizeTop < 0 || paddingSizeBottom < 0 || paddingSizeLeft < 0 ||
                              paddingSizeRight < 0))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "padding top %d bottom %d left %d right %d: must be >= 0",
                       paddingSizeTop, paddingSizeBottom, paddingSizeLeft, paddingSizeRight);
    if (rc == ACL_SUCCESS) {
        aipp_batch *b = &aippParmsSet->batches[batchIndex];
        b->pad_switch = paddingSwitch;
        b->pad_top = paddingSizeTop;
        b->pad_bottom = paddingSizeBottom;
        b->pad_left = paddingSizeLeft;
        b->pad_right = paddingSizeRight;
    }
    SIM_RETURN(aclmdlSetAIPPPaddingParams, rc, "%p batch %" PRIu64, (void *)aippParmsSet, batchIndex);
}

SIM_EXPORT aclError aclmdlSetAIPPDtcPixelMean(aclmdlAIPP *aippParmsSet, int16_t dtcPixelMeanChn0,
                                              int16_t dtcPixelMeanChn1, int16_t dtcPixelMeanChn2,
                                              int16_t dtcPixelMeanChn3, uint64_t batchIndex)
{
    SIM_ENTER(aclmdlSetAIPPDtcPixelMean);
    aclError rc = check("aclmdlSetAIPPDtcPixelMean", aippParmsSet, 0, 0, batchIndex, 1);
    if (rc == ACL_SUCCESS) {
        int16_t *m = aippParmsSet->batches[batchIndex].mean;
        m[0] = dtcPixelMeanChn0;
        m[1] = dtcPixelMeanChn1;
        m[2] = dtcPixelMeanChn2;
        m[3] = dtcPixelMeanChn3;
    }
    SIM_RETURN(aclmdlSetAIPPDtcPixelMean, rc, "%p batch %" PRIu64, (void *)aippParmsSet, batchIndex);
}

SIM_EXPORT aclError aclmdlSetAIPPDtcPixelMin(aclmdlAIPP *aippParmsSet, float dtcPixelMinChn0, float dtcPixelMinChn1,
                                             float dtcPixelMinChn2, float dtcPixelMinChn3, uint64_t batchIndex)
{
    SIM_ENTER(aclmdlSetAIPPDtcPixelMin);
    aclError rc = check("aclmdlSetAIPPDtcPixelMin", aippParmsSet, 0, 0, batchIndex, 1);
    if (rc == ACL_SUCCESS) {
        float *m = aippParmsSet->batches[batchIndex].min;
        m[0] = dtcPixelMinChn0;
        m[1] = dtcPixelMinChn1;
        m[2] = dtcPixelMinChn2;
        m[3] = dtcPixelMinChn3;
    }
    SIM_RETURN(aclmdlSetAIPPDtcPixelMin, rc, "%p batch %" PRIu64, (void *)aippParmsSet, batchIndex);
}

SIM_EXPORT aclError aclmdlSetAIPPPixelVarReci(aclmdlAIPP *aippParmsSet, float dtcPixelVarReciChn0,
                                              float dtcPixelVarReciChn1, float dtcPixelVarReciChn2,
                                              float dtcPixelVarReciChn3, uint64_t batchIndex)
{
    SIM_ENTER(aclmdlSetAIPPPixelVarReci);
    aclError rc = check("aclmdlSetAIPPPixelVarReci", aippParmsSet, 0, 0, batchIndex, 1);
    if (rc == ACL_SUCCESS) {
        float *v = aippParmsSet->batches[batchIndex].var_reci;
        v[0] = dtcPixelVarReciChn0;
        v[1] = dtcPixelVarReciChn1;
        v[2] = dtcPixelVarReciChn2;
        v[3] = dtcPixelVarReciChn3;
    }
    SIM_RETURN(aclmdlSetAIPPPixelVarReci, rc, "%p batch %" PRIu64, (void *)aippParmsSet, batchIndex);
}

/* The stored set must describe a complete, consistent pre-processing. */
static aclError check_complete(const char *fn, const aclmdlAIPP *a)
{
    if (a->input_format == 0)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the AIPP set has no input format: call "
                         "aclmdlSetAIPPInputFormat first");
    if (a->src_w == 0)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the AIPP set has no source image size: call "
                         "aclmdlSetAIPPSrcImageSize first");
    for (uint64_t i = 0; i < a->batch_size; i++) {
        const aipp_batch *b = &a->batches[i];
        if (b->crop_switch && ((int64_t)b->crop_x + b->crop_w > a->src_w || (int64_t)b->crop_y + b->crop_h > a->src_h))
            return sim_error(ACL_ERROR_INVALID_PARAM, fn, "batch %" PRIu64 ": crop window (%d, %d) size %d x %d "
                             "exceeds the %d x %d source image", i, b->crop_x, b->crop_y, b->crop_w, b->crop_h,
                             a->src_w, a->src_h);
    }
    return ACL_SUCCESS;
}

/* The model's dynamic AIPP input, or NULL. */
static const sim_aipp *dynamic_aipp(const sim_model_info *info)
{
    for (uint32_t k = 0; k < info->n_aipp; k++)
        if (info->aipp[k].dynamic)
            return &info->aipp[k];
    return NULL;
}

static void wr_i32(unsigned char *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)u;
    p[1] = (unsigned char)(u >> 8);
    p[2] = (unsigned char)(u >> 16);
    p[3] = (unsigned char)(u >> 24);
}

static void wr_i16(unsigned char *p, int16_t v)
{
    p[0] = (unsigned char)((uint16_t)v & 0xff);
    p[1] = (unsigned char)((uint16_t)v >> 8);
}

/* The parameter block of set a (layout: format.h, SIM_AIPP_BLOCK_*), as the
 * device reads it from the ascend_dynamic_aipp_data input. */
static void write_block(const aclmdlAIPP *a, unsigned char *block)
{
    memset(block, 0, SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * a->batch_size);
    block[0] = (unsigned char)a->input_format;
    block[1] = (unsigned char)a->csc_switch;
    block[2] = (unsigned char)a->rbuv_swap;
    block[3] = (unsigned char)a->ax_swap;
    block[4] = (unsigned char)a->batch_size;
    wr_i32(block + 8, a->src_w);
    wr_i32(block + 12, a->src_h);
    for (int i = 0; i < 9; i++)
        wr_i16(block + 16 + 2 * i, a->csc_matrix[i]);
    memcpy(block + 40, a->csc_out_bias, 3);
    memcpy(block + 43, a->csc_in_bias, 3);
    for (uint64_t k = 0; k < a->batch_size; k++) {
        const aipp_batch *b = &a->batches[k];
        unsigned char *e = block + SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * k;
        e[0] = (unsigned char)b->crop_switch;
        e[2] = (unsigned char)b->pad_switch;
        wr_i32(e + 8, b->crop_x);
        wr_i32(e + 12, b->crop_y);
        wr_i32(e + 16, b->crop_w);
        wr_i32(e + 20, b->crop_h);
        wr_i32(e + 40, b->pad_top);
        wr_i32(e + 44, b->pad_bottom);
        wr_i32(e + 48, b->pad_left);
        wr_i32(e + 52, b->pad_right);
        for (int c = 0; c < 4; c++) {
            wr_i16(e + 56 + 2 * c, b->mean[c]);
            wr_i16(e + 64 + 2 * c, (int16_t)sim_float_to_half(b->min[c]));
            wr_i16(e + 72 + 2 * c, (int16_t)sim_float_to_half(b->var_reci[c]));
        }
    }
}

/* Set a into the dataset's ascend_dynamic_aipp_data buffer of model info,
 * after checking every batch image's settings against the model input. */
static aclError set_dynamic(const char *fn, const sim_model_info *info, const sim_aipp *dyn, aclmdlDataset *ds,
                            size_t index, const aclmdlAIPP *a)
{
    if (index != dyn->data_input)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu is not the %s input of model '%s' (it is input %u)",
                         index, ACL_DYNAMIC_AIPP_NAME, info->name, dyn->data_input);
    if (a->batch_size != (uint64_t)dyn->n)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the AIPP set was created for %" PRIu64 " images, input %u "
                         "('%s') takes %" PRId64, a->batch_size, dyn->input, info->inputs[dyn->input].name, dyn->n);
    uint64_t need = SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * a->batch_size;
    if (index >= ds->count || !sim_databuf_ok(ds->buffers[index]))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "the dataset needs a buffer of %" PRIu64 " bytes at index %zu "
                         "(%s, aclmdlGetAippDataSize) before the parameters can be set", need, index,
                         ACL_DYNAMIC_AIPP_NAME);
    if (ds->buffers[index]->size < need)   /* GE's code for a parameter buffer too small (CANN 9.1) */
        return sim_error(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, fn, "the buffer at index %zu (%s) holds %zu "
                         "bytes, the parameters of %" PRIu64 " images need %" PRIu64 " (aclmdlGetAippDataSize)",
                         index, ACL_DYNAMIC_AIPP_NAME, ds->buffers[index]->size, a->batch_size, need);
    unsigned char *block = malloc(need);
    if (!block)
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    write_block(a, block);
    char why[512];
    aclError rc = ACL_SUCCESS;
    for (uint64_t k = 0; k < a->batch_size && rc == ACL_SUCCESS; k++) {
        sim_aipp one;
        if (sim_aipp_from_block(dyn, block, need, k, &one, why, sizeof why) != ACL_SUCCESS)
            rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "%s", why);
    }
    if (rc == ACL_SUCCESS)
        memcpy(ds->buffers[index]->data, block, need);
    free(block);
    return rc;
}

SIM_EXPORT aclError aclmdlSetInputAIPP(uint32_t modelId, aclmdlDataset *dataset, size_t index,
                                       const aclmdlAIPP *aippParmsSet)
{
    SIM_ENTER(aclmdlSetInputAIPP);
    const char *fn = "aclmdlSetInputAIPP";
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS)
        rc = check(fn, aippParmsSet, 0, 0, 0, 0);
    if (rc == ACL_SUCCESS && !sim_dataset_ok(dataset))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset", (void *)dataset);
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS && index >= m->meta->info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: model %u has %u inputs", index, modelId,
                       m->meta->info->n_inputs);
    if (rc == ACL_SUCCESS)
        rc = check_complete(fn, aippParmsSet);
    const sim_aipp *dyn = rc == ACL_SUCCESS ? dynamic_aipp(m->meta->info) : NULL;
    if (rc == ACL_SUCCESS && dyn)
        rc = set_dynamic(fn, m->meta->info, dyn, dataset, index, aippParmsSet);
    else if (rc == ACL_SUCCESS)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "model %u ('%s') has no dynamic AIPP input (no input named %s): "
                       "input %zu is not one (aclmdlGetAippType says so)", modelId, m->meta->info->name,
                       ACL_DYNAMIC_AIPP_NAME, index);
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetInputAIPP, rc, "id %u index %zu", modelId, index);
}

SIM_EXPORT aclError aclmdlGetAippType(uint32_t modelId, size_t index, aclmdlInputAippType *type,
                                      size_t *dynamicAttachedDataIndex)
{
    SIM_ENTER(aclmdlGetAippType);
    const char *fn = "aclmdlGetAippType";
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && (!type || !dynamicAttachedDataIndex))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "type or dynamicAttachedDataIndex is NULL");
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS && index >= m->meta->info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: model %u has %u inputs", index, modelId,
                       m->meta->info->n_inputs);
    if (rc == ACL_SUCCESS) {
        const sim_model_info *info = m->meta->info;
        const sim_aipp *a = info->inputs[index].aipp, *dyn = dynamic_aipp(info);
        *type = !a ? ACL_DATA_WITHOUT_AIPP : a->dynamic ? ACL_DATA_WITH_DYNAMIC_AIPP : ACL_DATA_WITH_STATIC_AIPP;
        *dynamicAttachedDataIndex = a && a->dynamic ? (size_t)a->data_input : (size_t)ACL_INVALID_NODE_INDEX;
        if (dyn && index == dyn->data_input)
            *type = ACL_DYNAMIC_AIPP_NODE;
    }
    sim_model_unref(m);
    SIM_RETURN(aclmdlGetAippType, rc, "id %u index %zu", modelId, index);
}

/* One aclmdlIODims: the name and rank-4 dims. */
static void io_dims(aclmdlIODims *d, const char *name, const int64_t *dims, uint32_t rank)
{
    snprintf(d->name, sizeof d->name, "%s", name);
    d->dimCount = rank;
    memcpy(d->dims, dims, sizeof(int64_t) * rank);
}

/* aclAippInfo of a static-AIPP input: the settings as converted; the
 * original model input (its format, dtype and dims) as the source and AIPP
 * output of the one shape a static model has. */
static void fill_info(const sim_model_info *info, const sim_io *io, aclAippInfo *out)
{
    const sim_aipp *a = io->aipp;
    const sim_tensor *t = &info->tensors[a->tensor];
    memset(out, 0, sizeof *out);
    out->srcFormat = t->format;
    out->srcDatatype = t->dtype;
    out->srcDimNum = t->rank;
    out->shapeCount = 1;
    io_dims(&out->outDims[0].srcDims, io->name, t->dims, t->rank);
    out->outDims[0].srcSize = (size_t)t->max_bytes;
    io_dims(&out->outDims[0].aippOutdims, io->name, t->dims, t->rank);
    out->outDims[0].aippOutSize = (size_t)t->max_bytes;
    out->aippExtend = NULL;
    if (a->dynamic)   /* dynamic AIPP: only the original input is described [FirstAipp] */
        return;
    out->inputFormat = a->format;
    out->srcImageSizeW = a->src_w;
    out->srcImageSizeH = a->src_h;
    out->cropSwitch = a->crop;
    out->loadStartPosW = a->crop_x;
    out->loadStartPosH = a->crop_y;
    out->cropSizeW = a->crop_w;
    out->cropSizeH = a->crop_h;
    out->paddingSwitch = a->padding;
    out->leftPaddingSize = a->pad_left;
    out->rightPaddingSize = a->pad_right;
    out->topPaddingSize = a->pad_top;
    out->bottomPaddingSize = a->pad_bottom;
    out->cscSwitch = a->csc;
    out->rbuvSwapSwitch = a->rbuv_swap;
    out->axSwapSwitch = a->ax_swap;
    int32_t *matrix[9] = {&out->matrixR0C0, &out->matrixR0C1, &out->matrixR0C2, &out->matrixR1C0, &out->matrixR1C1,
                          &out->matrixR1C2, &out->matrixR2C0, &out->matrixR2C1, &out->matrixR2C2};
    for (int i = 0; i < 9; i++)
        *matrix[i] = a->matrix[i];
    out->outputBias0 = a->out_bias[0];
    out->outputBias1 = a->out_bias[1];
    out->outputBias2 = a->out_bias[2];
    out->inputBias0 = a->in_bias[0];
    out->inputBias1 = a->in_bias[1];
    out->inputBias2 = a->in_bias[2];
    int32_t *mean[4] = {&out->meanChn0, &out->meanChn1, &out->meanChn2, &out->meanChn3};
    float *min[4] = {&out->minChn0, &out->minChn1, &out->minChn2, &out->minChn3};
    float *var[4] = {&out->varReciChn0, &out->varReciChn1, &out->varReciChn2, &out->varReciChn3};
    for (int i = 0; i < 4; i++) {
        *mean[i] = a->mean[i];
        *min[i] = a->min[i];
        *var[i] = a->var_reci[i];
    }
}

SIM_EXPORT aclError aclmdlGetFirstAippInfo(uint32_t modelId, size_t index, aclAippInfo *aippInfo)
{
    SIM_ENTER(aclmdlGetFirstAippInfo);
    const char *fn = "aclmdlGetFirstAippInfo";
    sim_model *m = NULL;
    aclError rc = sim_check_init(fn);
    if (rc == ACL_SUCCESS && !aippInfo)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "aippInfo is NULL");
    if (rc == ACL_SUCCESS && !(m = sim_model_get(modelId)))
        rc = sim_model_unknown(fn, modelId);
    if (rc == ACL_SUCCESS && index >= m->meta->info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: model %u has %u inputs", index, modelId,
                       m->meta->info->n_inputs);
    if (rc == ACL_SUCCESS && !m->meta->info->inputs[index].aipp)
        rc = sim_error(ACL_ERROR_NOT_STATIC_AIPP, fn, "input %zu ('%s') of model %u has no AIPP "
                       "(aclmdlGetAippType says ACL_DATA_WITHOUT_AIPP)", index, m->meta->info->inputs[index].name,
                       modelId);
    if (rc == ACL_SUCCESS)
        fill_info(m->meta->info, &m->meta->info->inputs[index], aippInfo);
    sim_model_unref(m);
    SIM_RETURN(aclmdlGetFirstAippInfo, rc, "id %u index %zu", modelId, index);
}

SIM_EXPORT aclError aclmdlGetAippDataSize(uint64_t batchSize, size_t *size)
{
    SIM_ENTER(aclmdlGetAippDataSize);
    const char *fn = "aclmdlGetAippDataSize";
    aclError rc = ACL_SUCCESS;
    if (!size)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "size is NULL");
    else if (batchSize == 0)   /* CANN 9.1 sets no upper bound: only the size must fit in a size_t */
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "batchSize is 0: expected the number of images, at least 1");
    else if (batchSize > (SIZE_MAX - SIM_AIPP_BLOCK_HEAD) / SIM_AIPP_BLOCK_BATCH)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "batchSize %" PRIu64 ": %u + %u x batchSize bytes overflows a "
                       "size_t", batchSize, SIM_AIPP_BLOCK_HEAD, SIM_AIPP_BLOCK_BATCH);
    else
        *size = SIM_AIPP_BLOCK_HEAD + SIM_AIPP_BLOCK_BATCH * (size_t)batchSize;
    SIM_RETURN(aclmdlGetAippDataSize, rc, "batch %" PRIu64, batchSize);
}
