/*
 * configs.c -- the small configurations VPC and JPEGE calls take: regions of
 * interest, resize (interpolation), borders, JPEG-encode quality.  ROI values
 * are stored as given and checked against the picture when a task is
 * submitted (vpc.c); the values with a fixed range (interpolation, border
 * type and value index, encode level) are checked here.
 */
#include <stddef.h>
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

/* A configuration created without arguments, and its destroy call. */
#define CONFIG_LIFETIME(type, kind, create, destroy, arg)                          \
    STANDIN_EXPORT type *create(void)                                              \
    {                                                                              \
        return config_new(#create, sizeof(type), kind);                            \
    }                                                                              \
    STANDIN_EXPORT aclError destroy(type *arg)                                     \
    {                                                                              \
        return config_destroy(#destroy, #arg, arg, kind);                          \
    }

/* A uint32_t value of a configuration that has a largest allowed value. */
typedef struct bounded_field {
    const char *arg;            /* the configuration argument's name */
    dvpp_kind kind;
    size_t offset;              /* of the value in the configuration */
    const char *name;           /* the value's name */
    uint32_t max;
    const char *refusal;        /* what the error says after "<name> <value> " */
} bounded_field;

static aclError bounded_set(const char *fn, const bounded_field *f, void *config, uint32_t value)
{
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, f->arg, config, f->kind);
    if (!rc && value > f->max)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "%s %u %s", f->name, value, f->refusal);
    if (!rc)
        *(uint32_t *)((char *)config + f->offset) = value;
    dvpp_unlock();
    return rc;
}

/* The value, or 0 when config is not a live configuration of its kind. */
static uint32_t bounded_get(const char *fn, const bounded_field *f, const void *config)
{
    uint32_t v = 0;
    dvpp_lock();
    if (!dvpp_obj_check_locked(fn, f->arg, config, f->kind))
        v = *(const uint32_t *)((const char *)config + f->offset);
    dvpp_unlock();
    return v;
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

CONFIG_LIFETIME(acldvppResizeConfig, DVPP_OBJ_RESIZE, acldvppCreateResizeConfig, acldvppDestroyResizeConfig,
                resizeConfig)

static const bounded_field RESIZE_INTERPOLATION = {
    "resizeConfig", DVPP_OBJ_RESIZE, offsetof(acldvppResizeConfig, interpolation), "interpolation",
    DVPP_INTERPOLATION_MAX,
    "is not supported: expected 0 (default, bilinear), 1 (bilinear) or 2 (nearest neighbour)"};

STANDIN_EXPORT aclError acldvppSetResizeConfigInterpolation(acldvppResizeConfig *resizeConfig, uint32_t interpolation)
{
    return bounded_set("acldvppSetResizeConfigInterpolation", &RESIZE_INTERPOLATION, resizeConfig, interpolation);
}

STANDIN_EXPORT uint32_t acldvppGetResizeConfigInterpolation(const acldvppResizeConfig *resizeConfig)
{
    return bounded_get("acldvppGetResizeConfigInterpolation", &RESIZE_INTERPOLATION, resizeConfig);
}

/* ---- border ------------------------------------------------------------------------------------ */

CONFIG_LIFETIME(acldvppBorderConfig, DVPP_OBJ_BORDER, acldvppCreateBorderConfig, acldvppDestroyBorderConfig,
                borderConfig)

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

CONFIG_LIFETIME(acldvppJpegeConfig, DVPP_OBJ_JPEGE, acldvppCreateJpegeConfig, acldvppDestroyJpegeConfig,
                jpegeConfig)

static const bounded_field JPEGE_LEVEL = {
    "jpegeConfig", DVPP_OBJ_JPEGE, offsetof(acldvppJpegeConfig, level), "level", 100,
    "is out of range: expected 0 .. 100"};

STANDIN_EXPORT aclError acldvppSetJpegeConfigLevel(acldvppJpegeConfig *jpegeConfig, uint32_t level)
{
    return bounded_set("acldvppSetJpegeConfigLevel", &JPEGE_LEVEL, jpegeConfig, level);
}

STANDIN_EXPORT uint32_t acldvppGetJpegeConfigLevel(const acldvppJpegeConfig *jpegeConfig)
{
    return bounded_get("acldvppGetJpegeConfigLevel", &JPEGE_LEVEL, jpegeConfig);
}
