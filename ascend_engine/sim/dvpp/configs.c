/*
 * configs.c -- the small configurations VPC and JPEGE calls take: regions of
 * interest, resize (interpolation), borders, JPEG-encode quality.  ROI values
 * are stored as given and checked against the picture when a task is
 * submitted (vpc.c); the values with a fixed range (interpolation, border
 * type and value index, encode level) are checked here.
 */
#include <stdlib.h>

#include "dvpp_internal.h"

static void config_free(dvpp_obj *o)
{
    free(o);
}

static void *config_new(const char *fn, size_t size, dvpp_kind kind)
{
    dvpp_obj *o = calloc(1, size);
    if (!o || dvpp_obj_add(o, kind, config_free)) {
        free(o);
        aeSimError(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        return NULL;
    }
    return o;
}

static aclError config_destroy(const char *fn, const char *arg, void *p, dvpp_kind kind)
{
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, arg, p, kind);
    if (!rc)
        dvpp_obj_remove_locked(p);
    dvpp_unlock();
    return rc;
}

/* ---- ROI --------------------------------------------------------------------------------------- */

STANDIN_EXPORT acldvppRoiConfig *acldvppCreateRoiConfig(uint32_t left, uint32_t right, uint32_t top, uint32_t bottom)
{
    acldvppRoiConfig *r = config_new("acldvppCreateRoiConfig", sizeof *r, DVPP_OBJ_ROI);
    if (r) {
        r->left = left;
        r->right = right;
        r->top = top;
        r->bottom = bottom;
    }
    return r;
}

STANDIN_EXPORT aclError acldvppDestroyRoiConfig(acldvppRoiConfig *roiConfig)
{
    return config_destroy("acldvppDestroyRoiConfig", "roiConfig", roiConfig, DVPP_OBJ_ROI);
}

#define ROI_SETTER(name, field)                                                    \
    STANDIN_EXPORT aclError name(acldvppRoiConfig *config, uint32_t field)         \
    {                                                                              \
        dvpp_lock();                                                               \
        aclError rc = dvpp_obj_check_locked(#name, "config", config, DVPP_OBJ_ROI); \
        if (!rc)                                                                   \
            config->field = field;                                                 \
        dvpp_unlock();                                                             \
        return rc;                                                                 \
    }

ROI_SETTER(acldvppSetRoiConfigLeft, left)
ROI_SETTER(acldvppSetRoiConfigRight, right)
ROI_SETTER(acldvppSetRoiConfigTop, top)
ROI_SETTER(acldvppSetRoiConfigBottom, bottom)

STANDIN_EXPORT aclError acldvppSetRoiConfig(acldvppRoiConfig *config, uint32_t left, uint32_t right, uint32_t top,
                                            uint32_t bottom)
{
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked("acldvppSetRoiConfig", "config", config, DVPP_OBJ_ROI);
    if (!rc) {
        config->left = left;
        config->right = right;
        config->top = top;
        config->bottom = bottom;
    }
    dvpp_unlock();
    return rc;
}

/* ---- resize ------------------------------------------------------------------------------------ */

/* 0 (the default) and 1: bilinear; 2: nearest neighbour (docs/simulator.md, "DVPP"). */
#define DVPP_INTERPOLATION_MAX 2u

STANDIN_EXPORT acldvppResizeConfig *acldvppCreateResizeConfig(void)
{
    acldvppResizeConfig *r = config_new("acldvppCreateResizeConfig", sizeof *r, DVPP_OBJ_RESIZE);
    return r;
}

STANDIN_EXPORT aclError acldvppDestroyResizeConfig(acldvppResizeConfig *resizeConfig)
{
    return config_destroy("acldvppDestroyResizeConfig", "resizeConfig", resizeConfig, DVPP_OBJ_RESIZE);
}

STANDIN_EXPORT aclError acldvppSetResizeConfigInterpolation(acldvppResizeConfig *resizeConfig, uint32_t interpolation)
{
    const char *fn = "acldvppSetResizeConfigInterpolation";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "resizeConfig", resizeConfig, DVPP_OBJ_RESIZE);
    if (!rc && interpolation > DVPP_INTERPOLATION_MAX)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "interpolation %u is not supported: expected 0 (default, bilinear), 1 (bilinear) or "
                        "2 (nearest neighbour)", interpolation);
    if (!rc)
        resizeConfig->interpolation = interpolation;
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT uint32_t acldvppGetResizeConfigInterpolation(const acldvppResizeConfig *resizeConfig)
{
    uint32_t v = 0;
    dvpp_lock();
    if (!dvpp_obj_check_locked("acldvppGetResizeConfigInterpolation", "resizeConfig", resizeConfig, DVPP_OBJ_RESIZE))
        v = resizeConfig->interpolation;
    dvpp_unlock();
    return v;
}

/* ---- border ------------------------------------------------------------------------------------ */

STANDIN_EXPORT acldvppBorderConfig *acldvppCreateBorderConfig(void)
{
    acldvppBorderConfig *b = config_new("acldvppCreateBorderConfig", sizeof *b, DVPP_OBJ_BORDER);
    return b;
}

STANDIN_EXPORT aclError acldvppDestroyBorderConfig(acldvppBorderConfig *borderConfig)
{
    return config_destroy("acldvppDestroyBorderConfig", "borderConfig", borderConfig, DVPP_OBJ_BORDER);
}

STANDIN_EXPORT aclError acldvppSetBorderConfigValue(acldvppBorderConfig *borderConfig, uint32_t index, double value)
{
    const char *fn = "acldvppSetBorderConfigValue";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "borderConfig", borderConfig, DVPP_OBJ_BORDER);
    if (!rc && index >= DVPP_BORDER_VALUES)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "index %u is out of range: expected 0 .. %u (one per channel)",
                        index, DVPP_BORDER_VALUES - 1);
    if (!rc && !(value >= 0.0 && value <= 255.0))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "value %g is out of range: expected 0 .. 255", value);
    if (!rc)
        borderConfig->value[index] = value;
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT aclError acldvppSetBorderConfigBorderType(acldvppBorderConfig *borderConfig,
                                                         acldvppBorderType borderType)
{
    const char *fn = "acldvppSetBorderConfigBorderType";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "borderConfig", borderConfig, DVPP_OBJ_BORDER);
    if (!rc && ((int)borderType < BORDER_CONSTANT || (int)borderType > BORDER_REFLECT_101))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "borderType %d is not an acldvppBorderType: expected BORDER_CONSTANT (0), BORDER_REPLICATE "
                        "(1), BORDER_REFLECT (2) or BORDER_REFLECT_101 (3)", (int)borderType);
    if (!rc)
        borderConfig->type = borderType;
    dvpp_unlock();
    return rc;
}

#define BORDER_SETTER(name, field)                                                        \
    STANDIN_EXPORT aclError name(acldvppBorderConfig *borderConfig, uint32_t field)       \
    {                                                                                     \
        dvpp_lock();                                                                      \
        aclError rc = dvpp_obj_check_locked(#name, "borderConfig", borderConfig, DVPP_OBJ_BORDER); \
        if (!rc)                                                                          \
            borderConfig->field = field;                                                  \
        dvpp_unlock();                                                                    \
        return rc;                                                                        \
    }

BORDER_SETTER(acldvppSetBorderConfigTop, top)
BORDER_SETTER(acldvppSetBorderConfigBottom, bottom)
BORDER_SETTER(acldvppSetBorderConfigLeft, left)
BORDER_SETTER(acldvppSetBorderConfigRight, right)

STANDIN_EXPORT double acldvppGetBorderConfigValue(const acldvppBorderConfig *borderConfig, uint32_t index)
{
    const char *fn = "acldvppGetBorderConfigValue";
    double v = -1.0;   /* CANN: a negative value means invalid */
    dvpp_lock();
    if (!dvpp_obj_check_locked(fn, "borderConfig", borderConfig, DVPP_OBJ_BORDER)) {
        if (index < DVPP_BORDER_VALUES)
            v = borderConfig->value[index];
        else
            aeSimError(ACL_ERROR_INVALID_PARAM, fn, "index %u is out of range: expected 0 .. %u", index,
                       DVPP_BORDER_VALUES - 1);
    }
    dvpp_unlock();
    return v;
}

#define BORDER_GETTER(name, type, field, fallback)                                  \
    STANDIN_EXPORT type name(const acldvppBorderConfig *borderConfig)               \
    {                                                                               \
        type v = fallback;                                                          \
        dvpp_lock();                                                                \
        if (!dvpp_obj_check_locked(#name, "borderConfig", borderConfig, DVPP_OBJ_BORDER)) \
            v = borderConfig->field;                                                \
        dvpp_unlock();                                                              \
        return v;                                                                   \
    }

BORDER_GETTER(acldvppGetBorderConfigBorderType, acldvppBorderType, type, BORDER_CONSTANT)
BORDER_GETTER(acldvppGetBorderConfigTop, uint32_t, top, 0)
BORDER_GETTER(acldvppGetBorderConfigBottom, uint32_t, bottom, 0)
BORDER_GETTER(acldvppGetBorderConfigLeft, uint32_t, left, 0)
BORDER_GETTER(acldvppGetBorderConfigRight, uint32_t, right, 0)

/* ---- JPEG encode ---------------------------------------------------------------------------- */

STANDIN_EXPORT acldvppJpegeConfig *acldvppCreateJpegeConfig(void)
{
    acldvppJpegeConfig *j = config_new("acldvppCreateJpegeConfig", sizeof *j, DVPP_OBJ_JPEGE);
    return j;
}

STANDIN_EXPORT aclError acldvppDestroyJpegeConfig(acldvppJpegeConfig *jpegeConfig)
{
    return config_destroy("acldvppDestroyJpegeConfig", "jpegeConfig", jpegeConfig, DVPP_OBJ_JPEGE);
}

STANDIN_EXPORT aclError acldvppSetJpegeConfigLevel(acldvppJpegeConfig *jpegeConfig, uint32_t level)
{
    const char *fn = "acldvppSetJpegeConfigLevel";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "jpegeConfig", jpegeConfig, DVPP_OBJ_JPEGE);
    if (!rc && level > 100)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "level %u is out of range: expected 0 .. 100", level);
    if (!rc)
        jpegeConfig->level = level;
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT uint32_t acldvppGetJpegeConfigLevel(const acldvppJpegeConfig *jpegeConfig)
{
    uint32_t v = 0;
    dvpp_lock();
    if (!dvpp_obj_check_locked("acldvppGetJpegeConfigLevel", "jpegeConfig", jpegeConfig, DVPP_OBJ_JPEGE))
        v = jpegeConfig->level;
    dvpp_unlock();
    return v;
}
