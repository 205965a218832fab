/*
 * dynamic_check.c -- a plain AscendCL program, compiled against the real CANN
 * headers, that runs a dynamic-image-size or dynamic-dims model through every
 * gear the model lists, the way CANN applications (benchmark tools, OCR
 * pipelines) do:
 *
 *   aclmdlGetDynamicHW / aclmdlGetInputDynamicGearCount + aclmdlGetInputDynamicDims
 *   to learn the gears; buffers of the descriptor's sizes (the largest gear);
 *   per gear: aclmdlSetDynamicHWSize or aclmdlSetInputDynamicDims on the input
 *   found by ACL_DYNAMIC_TENSOR_NAME, H2D of the gear's bytes,
 *   aclmdlExecuteAsync, aclmdlGetCurOutputDims for the output's shape, D2H of
 *   that many bytes, compare.
 *
 * Usage: dynamic_check MODEL DATA
 *   The model has one float32 input (plus ascend_mbatch_shape_data) and a
 *   float32 output 0.  DATA holds, for each gear in the order the model lists
 *   them, the input at that gear's shape followed by the expected output 0.
 * Exit status 0 when every value of every gear matches within tolerance.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        aclError rc_ = (call);                                                             \
        if (rc_ != ACL_SUCCESS) {                                                          \
            const char *m_ = aclGetRecentErrMsg();                                         \
            fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, (int)rc_,  \
                    m_ ? m_ : "(no message)");                                             \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

#define MAX_GEARS 128

static float *read_all(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *data = n > 0 ? malloc((size_t)n) : NULL;
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *count = (size_t)n / sizeof(float);
    return data;
}

static size_t elements(const aclmdlIODims *d)
{
    size_t n = 1;
    for (size_t i = 0; i < d->dimCount; i++)
        n *= (size_t)d->dims[i];
    return n;
}

static int run(const char *model_path, const char *data_path)
{
    size_t data_count = 0, used = 0;
    float *data = read_all(data_path, &data_count);
    if (!data)
        return 1;

    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = NULL;
    CHECK(aclrtCreateStream(&stream));
    uint32_t model_id = 0;
    CHECK(aclmdlLoadFromFile(model_path, &model_id));
    aclmdlDesc *desc = aclmdlCreateDesc();
    if (!desc)
        return 1;
    CHECK(aclmdlGetDesc(desc, model_id));

    /* which mechanism, and its gears: the shape of input 0 per gear */
    static aclmdlIODims gear_in[MAX_GEARS];
    static aclmdlHW hw;
    size_t n_gears = 0;
    int is_hw = 0;
    aclmdlIODims in_dims;
    CHECK(aclmdlGetInputDims(desc, 0, &in_dims));
    CHECK(aclmdlGetDynamicHW(desc, (size_t)-1, &hw));
    if (hw.hwCount > 0) {
        is_hw = 1;
        n_gears = hw.hwCount;
        for (size_t g = 0; g < n_gears; g++) {
            gear_in[g] = in_dims;
            int k = 0;
            for (size_t i = 0; i < in_dims.dimCount; i++)
                if (in_dims.dims[i] == -1)
                    gear_in[g].dims[i] = (int64_t)hw.hw[g][k++];   /* H first, then W */
        }
        printf("dynamic image size: %zu gears\n", n_gears);
    } else {
        CHECK(aclmdlGetInputDynamicGearCount(desc, (size_t)-1, &n_gears));
        if (n_gears == 0 || n_gears > MAX_GEARS) {
            fprintf(stderr, "the model has no dynamic image size and %zu dims gears\n", n_gears);
            return 1;
        }
        CHECK(aclmdlGetInputDynamicDims(desc, (size_t)-1, gear_in, n_gears));
        for (size_t g = 0; g < n_gears; g++)
            gear_in[g].dimCount = in_dims.dimCount;   /* input 0 comes first in each gear */
        printf("dynamic dims: %zu gears\n", n_gears);
    }

    size_t dyn_index = 0;
    CHECK(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &dyn_index));
    size_t n_in = aclmdlGetNumInputs(desc), n_out = aclmdlGetNumOutputs(desc);
    aclmdlDataset *input = aclmdlCreateDataset(), *output = aclmdlCreateDataset();
    void *in_dev[8] = {0}, *out_dev[8] = {0};
    if (n_in > 8 || n_out > 8 || !input || !output)
        return 1;
    for (size_t i = 0; i < n_in; i++) {
        size_t size = aclmdlGetInputSizeByIndex(desc, i);
        CHECK(aclrtMalloc(&in_dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclmdlAddDatasetBuffer(input, aclCreateDataBuffer(in_dev[i], size)));
    }
    for (size_t i = 0; i < n_out; i++) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        CHECK(aclrtMalloc(&out_dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(out_dev[i], size)));
    }

    int bad = 0;
    for (size_t g = 0; g < n_gears; g++) {
        if (is_hw) {
            CHECK(aclmdlSetDynamicHWSize(model_id, input, dyn_index, hw.hw[g][0], hw.hw[g][1]));
        } else {
            aclmdlIODims all;
            CHECK(aclmdlGetInputDynamicDims(desc, (size_t)-1, gear_in, n_gears));   /* every input's dims */
            all = gear_in[g];
            CHECK(aclmdlSetInputDynamicDims(model_id, input, dyn_index, &all));
            gear_in[g].dimCount = in_dims.dimCount;
        }
        size_t in_n = elements(&gear_in[g]);
        aclmdlIODims out_dims;
        CHECK(aclmdlGetCurOutputDims(desc, 0, &out_dims));
        size_t out_n = elements(&out_dims);
        if (used + in_n + out_n > data_count) {
            fprintf(stderr, "gear %zu: %s holds %zu floats, needs %zu\n", g, data_path, data_count,
                    used + in_n + out_n);
            return 1;
        }
        CHECK(aclrtMemcpy(in_dev[0], aclmdlGetInputSizeByIndex(desc, 0), data + used, in_n * sizeof(float),
                          ACL_MEMCPY_HOST_TO_DEVICE));
        used += in_n;
        CHECK(aclmdlExecuteAsync(model_id, input, output, stream));
        float *got = malloc(out_n * sizeof(float));
        if (!got)
            return 1;
        CHECK(aclrtMemcpyAsync(got, out_n * sizeof(float), out_dev[0], out_n * sizeof(float),
                               ACL_MEMCPY_DEVICE_TO_HOST, stream));
        CHECK(aclrtSynchronizeStream(stream));
        size_t wrong = 0;
        for (size_t i = 0; i < out_n; i++)
            if (fabsf(got[i] - data[used + i]) > 1e-4f + 1e-4f * fabsf(data[used + i]))
                wrong++;
        used += out_n;
        free(got);
        printf("gear %zu: input %zu values, output %zu values, %s\n", g, in_n, out_n,
               wrong ? "MISMATCH" : "values match");
        bad |= wrong != 0;
    }

    for (size_t i = 0; i < n_in; i++) {
        CHECK(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(input, i)));
        CHECK(aclrtFree(in_dev[i]));
    }
    for (size_t i = 0; i < n_out; i++) {
        CHECK(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(output, i)));
        CHECK(aclrtFree(out_dev[i]));
    }
    CHECK(aclmdlDestroyDataset(input));
    CHECK(aclmdlDestroyDataset(output));
    CHECK(aclmdlDestroyDesc(desc));
    CHECK(aclmdlUnload(model_id));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    free(data);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODEL DATA\n", argv[0]);
        return 2;
    }
    return run(argv[1], argv[2]);
}
