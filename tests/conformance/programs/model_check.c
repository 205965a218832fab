/*
 * model_check.c -- a plain AscendCL program, compiled against the real CANN
 * headers, that runs a simulator model the way an application would run an
 * OM model on an NPU:
 *
 *   aclInit, aclrtSetDevice, aclrtCreateStream, aclmdlLoadFromFile,
 *   descriptor -> device buffers of the reported sizes -> datasets,
 *   aclmdlSetDynamicBatchSize on the input found by ACL_DYNAMIC_TENSOR_NAME,
 *   H2D copy, aclmdlExecuteAsync, D2H copy, aclrtSynchronizeStream, compare,
 *   then teardown in the documented order.
 *
 * Usage: model_check MODEL EXPECTED BATCH
 *   EXPECTED is a binary file: the float32 input rows for BATCH items
 *   (input 0) followed by the float32 expected output 0 for those items.
 * Exit status 0 when every value matches within tolerance.
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

static int run(const char *model_path, const char *expected_path, uint64_t batch)
{
    FILE *f = fopen(expected_path, "rb");
    if (!f) {
        perror(expected_path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long nbytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *expected_file = malloc((size_t)nbytes);
    if (!expected_file || fread(expected_file, 1, (size_t)nbytes, f) != (size_t)nbytes) {
        fprintf(stderr, "cannot read %s\n", expected_path);
        return 1;
    }
    fclose(f);

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

    size_t n_in = aclmdlGetNumInputs(desc), n_out = aclmdlGetNumOutputs(desc);
    size_t dyn_index = 0;
    CHECK(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &dyn_index));
    aclmdlBatch gears;
    CHECK(aclmdlGetDynamicBatch(desc, &gears));
    int gear_ok = 0;
    for (size_t i = 0; i < gears.batchCount; i++)
        gear_ok |= gears.batch[i] == batch;
    if (!gear_ok || n_in != 2 || n_out < 1 || dyn_index != 1) {
        fprintf(stderr, "unexpected model: %zu inputs, %zu outputs, dynamic input %zu, batch %llu gear %d\n", n_in,
                n_out, dyn_index, (unsigned long long)batch, gear_ok);
        return 1;
    }

    /* input 0 and output 0 are float32 [-1, ...]: items of dims[1..] floats */
    aclmdlIODims in_dims, out_dims;
    CHECK(aclmdlGetInputDims(desc, 0, &in_dims));
    CHECK(aclmdlGetOutputDims(desc, 0, &out_dims));
    if (in_dims.dims[0] != -1 || out_dims.dims[0] != -1 || aclmdlGetInputDataType(desc, 0) != ACL_FLOAT ||
        aclmdlGetOutputDataType(desc, 0) != ACL_FLOAT) {
        fprintf(stderr, "input 0 / output 0 must be batched float32\n");
        return 1;
    }
    size_t in_item = 1, out_item = 1;
    for (size_t i = 1; i < in_dims.dimCount; i++)
        in_item *= (size_t)in_dims.dims[i];
    for (size_t i = 1; i < out_dims.dimCount; i++)
        out_item *= (size_t)out_dims.dims[i];
    size_t in_bytes = in_item * batch * sizeof(float), out_bytes = out_item * batch * sizeof(float);
    if ((size_t)nbytes != in_bytes + out_bytes) {
        fprintf(stderr, "%s has %ld bytes, expected %zu\n", expected_path, nbytes, in_bytes + out_bytes);
        return 1;
    }

    /* device buffers of exactly the sizes the descriptor reports */
    aclmdlDataset *inputs = aclmdlCreateDataset(), *outputs = aclmdlCreateDataset();
    void *in_dev[2] = {NULL, NULL}, *out_dev[16] = {NULL};
    aclDataBuffer *in_buf[2] = {NULL, NULL}, *out_buf[16] = {NULL};
    if (n_out > 16)
        return 1;
    for (size_t i = 0; i < n_in; i++) {
        size_t size = aclmdlGetInputSizeByIndex(desc, i);
        CHECK(aclrtMalloc(&in_dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        in_buf[i] = aclCreateDataBuffer(in_dev[i], size);
        CHECK(aclmdlAddDatasetBuffer(inputs, in_buf[i]));
    }
    for (size_t i = 0; i < n_out; i++) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        CHECK(aclrtMalloc(&out_dev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        out_buf[i] = aclCreateDataBuffer(out_dev[i], size);
        CHECK(aclmdlAddDatasetBuffer(outputs, out_buf[i]));
    }
    CHECK(aclmdlSetDynamicBatchSize(model_id, inputs, dyn_index, batch));

    float *result = malloc(out_bytes);
    if (!result)
        return 1;
    CHECK(aclrtMemcpyAsync(in_dev[0], aclmdlGetInputSizeByIndex(desc, 0), expected_file, in_bytes,
                           ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK(aclmdlExecuteAsync(model_id, inputs, outputs, stream));
    CHECK(aclrtMemcpyAsync(result, out_bytes, out_dev[0], out_bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtSynchronizeStream(stream));

    const float *want = expected_file + in_item * batch;
    int bad = 0;
    for (size_t i = 0; i < out_item * batch; i++)
        if (!(fabsf(result[i] - want[i]) <= 1e-4f + 1e-4f * fabsf(want[i]))) {
            if (bad++ < 5)
                fprintf(stderr, "output[%zu] = %g, expected %g\n", i, result[i], want[i]);
        }

    /* teardown: buffers and datasets, model, memory, stream, device, runtime */
    for (size_t i = 0; i < n_in; i++)
        CHECK(aclDestroyDataBuffer(in_buf[i]));
    for (size_t i = 0; i < n_out; i++)
        CHECK(aclDestroyDataBuffer(out_buf[i]));
    CHECK(aclmdlDestroyDataset(inputs));
    CHECK(aclmdlDestroyDataset(outputs));
    CHECK(aclmdlUnload(model_id));
    CHECK(aclmdlDestroyDesc(desc));
    for (size_t i = 0; i < n_in; i++)
        CHECK(aclrtFree(in_dev[i]));
    for (size_t i = 0; i < n_out; i++)
        CHECK(aclrtFree(out_dev[i]));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    free(result);
    free(expected_file);
    if (bad) {
        fprintf(stderr, "%d of %zu values differ\n", bad, out_item * batch);
        return 1;
    }
    printf("model_check: %zu values match (batch %llu)\n", out_item * batch, (unsigned long long)batch);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL EXPECTED BATCH\n", argv[0]);
        return 2;
    }
    return run(argv[1], argv[2], strtoull(argv[3], NULL, 10));
}
