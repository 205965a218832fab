/*
 * dynamic.c -- dynamic image size (HW) and dynamic dims.
 *
 * Simulator models can have a dynamic batch (model.c) but never dynamic HW
 * or dynamic dims gears.  These functions therefore answer as the NPU does
 * for a model compiled without those options: the queries succeed and report
 * no gears, the setters validate their arguments and then fail with
 * ACL_ERROR_MODEL_NOT_DYNAMIC (100019) and a message saying which feature
 * the model lacks.  Argument checks come first so that a wrong call is
 * reported as such even on a model that could never accept it.
 */
#include <inttypes.h>
#include <string.h>

#include "model.h"

SIM_EXPORT aclError aclmdlGetDynamicHW(const aclmdlDesc *modelDesc, size_t index, aclmdlHW *hw)
{
    SIM_ENTER(aclmdlGetDynamicHW);
    const char *fn = "aclmdlGetDynamicHW";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!hw)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "hw is NULL");
    else if (index != (size_t)-1 && index >= info->n_inputs)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: the model has %u inputs (or pass -1)",
                       index, info->n_inputs);
    else
        memset(hw, 0, sizeof *hw);   /* hwCount 0: no dynamic image size gears */
    SIM_RETURN(aclmdlGetDynamicHW, rc, "%p index %zu", (const void *)modelDesc, index);
}

SIM_EXPORT aclError aclmdlGetInputDynamicGearCount(const aclmdlDesc *modelDesc, size_t index, size_t *gearCount)
{
    SIM_ENTER(aclmdlGetInputDynamicGearCount);
    const char *fn = "aclmdlGetInputDynamicGearCount";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (!gearCount)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "gearCount is NULL");
    else if (index != (size_t)-1)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index is %zu: this argument is unused and must be -1", index);
    else
        *gearCount = 0;   /* no dynamic dims gears */
    SIM_RETURN(aclmdlGetInputDynamicGearCount, rc, "%p", (const void *)modelDesc);
}

SIM_EXPORT aclError aclmdlGetInputDynamicDims(const aclmdlDesc *modelDesc, size_t index, aclmdlIODims *dims,
                                              size_t gearCount)
{
    SIM_ENTER(aclmdlGetInputDynamicDims);
    const char *fn = "aclmdlGetInputDynamicDims";
    const sim_model_info *info = sim_desc_info(fn, modelDesc);
    aclError rc = ACL_SUCCESS;
    if (!info)
        rc = ACL_ERROR_INVALID_PARAM;
    else if (index != (size_t)-1)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "index is %zu: this argument is unused and must be -1", index);
    else if (gearCount != 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "gearCount %zu does not match the model's %d dynamic dims gears "
                       "(aclmdlGetInputDynamicGearCount)", gearCount, 0);
    (void)dims;   /* nothing to fill: zero gears */
    SIM_RETURN(aclmdlGetInputDynamicDims, rc, "%p gears %zu", (const void *)modelDesc, gearCount);
}

/* Shared checks of the dynamic setters: runtime, model, dataset, index. */
static aclError setter_checks(const char *fn, uint32_t modelId, const aclmdlDataset *dataset, size_t index,
                              const sim_model_info **info_out, sim_model **m_out)
{
    aclError rc = sim_check_init(fn);
    if (rc != ACL_SUCCESS)
        return rc;
    sim_model *m = sim_model_get(modelId);
    if (!m)
        return sim_error(ACL_ERROR_INVALID_MODEL_ID, fn, "modelId %u is not a loaded model", modelId);
    *m_out = m;
    *info_out = m->meta->info;
    if (!sim_dataset_ok(dataset))
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "dataset %p is NULL or not a live dataset",
                         (const void *)dataset);
    if (index >= m->meta->info->n_inputs)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "index %zu out of range: model %u has %u inputs", index,
                         modelId, m->meta->info->n_inputs);
    return ACL_SUCCESS;
}

static aclError not_dynamic(const char *fn, uint32_t modelId, const sim_model_info *info, const char *feature)
{
    return sim_error(ACL_ERROR_MODEL_NOT_DYNAMIC, fn, "model %u ('%s') has no %s: simulator models support dynamic "
                     "batch only (%s)", modelId, info->name, feature,
                     info->n_gears ? "this one has batch gears: use aclmdlSetDynamicBatchSize"
                                   : "this one is static");
}

SIM_EXPORT aclError aclmdlSetDynamicHWSize(uint32_t modelId, aclmdlDataset *dataset, size_t index, uint64_t height,
                                           uint64_t width)
{
    SIM_ENTER(aclmdlSetDynamicHWSize);
    const char *fn = "aclmdlSetDynamicHWSize";
    const sim_model_info *info = NULL;
    sim_model *m = NULL;
    aclError rc = setter_checks(fn, modelId, dataset, index, &info, &m);
    if (rc == ACL_SUCCESS && (height == 0 || width == 0))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "height %" PRIu64 " x width %" PRIu64 ": both must be > 0", height,
                       width);
    if (rc == ACL_SUCCESS)
        rc = not_dynamic(fn, modelId, info, "dynamic image size (HW gears)");
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetDynamicHWSize, rc, "id %u index %zu %" PRIu64 "x%" PRIu64, modelId, index, height, width);
}

SIM_EXPORT aclError aclmdlSetInputDynamicDims(uint32_t modelId, aclmdlDataset *dataset, size_t index,
                                              const aclmdlIODims *dims)
{
    SIM_ENTER(aclmdlSetInputDynamicDims);
    const char *fn = "aclmdlSetInputDynamicDims";
    const sim_model_info *info = NULL;
    sim_model *m = NULL;
    aclError rc = setter_checks(fn, modelId, dataset, index, &info, &m);
    if (rc == ACL_SUCCESS && !dims)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims is NULL");
    if (rc == ACL_SUCCESS && (dims->dimCount == 0 || dims->dimCount > ACL_MAX_DIM_CNT))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "dims->dimCount %zu out of range 1..%d", dims->dimCount,
                       ACL_MAX_DIM_CNT);
    if (rc == ACL_SUCCESS)
        rc = not_dynamic(fn, modelId, info, "dynamic dims gears");
    sim_model_unref(m);
    SIM_RETURN(aclmdlSetInputDynamicDims, rc, "id %u index %zu", modelId, index);
}
