# ruff: noqa: E501  (the table's lines are data: one function, or one C prototype, a line)
"""The one list behind ``ascend_engine.acl``, the pyACL-compatible module.

``tools/gen_pyacl.py`` reads it and writes ``ascend_engine/_pyacl_functions.pxi``
(one ``def`` per line of FUNCTIONS, plus the table of names), which
``ascend_engine/_pyacl.pyx`` includes.  Nothing here is Python code to run: the
two strings are data.

FUNCTIONS, one function a line::

    pyACL name          C function               options

* the pyACL name is ``acl.<name>``, ``acl.rt.<name>``, ``acl.mdl.<name>``,
  ``acl.media.<name>``...;
* the C function is an AscendCL function of include/ascend_engine/acl_functions.h
  (called through the project's run-time table) or a DVPP function of MEDIA
  below (called through the DVPP table ``_pyacl.pyx`` fills from libacl_dvpp.so);
* options:

  - ``out=a,b``: those C parameters are out-parameters; the Python function
    returns ``(a, b, ret)`` (``ret`` last, as pyACL does) and takes the others,
    in order, under their pyACL names (the C name in snake case);
  - ``echo=x``: the result starts with argument ``x`` itself (pyACL's
    ``add_dataset_buffer`` returns ``(dataset, ret)``);
  - ``nogil``: the call releases the GIL (every call that can block: waits,
    synchronous copies, execution, model loading, process_report, and the
    calls that queue work on a stream, which block while its queue is full);
  - ``value``: for a function not returning aclError, what it returns is the
    result alone (a pointer or handle as an int, a size, a name) -- the default
    for those, written out for the reader.

A parameter's C type gives its Python kind: integers and enums are ints
(range-checked), pointers and handles are ints (0 or None for NULL),
``const char *`` is a str, float and double are floats.  Out-parameters of type
aclmdlIODims, aclmdlBatch and aclmdlHW come back as dicts (pyACL's ``dims``,
``batchCount``/``batch``, ``hwCount``/``hw``).

UNSUPPORTED, one function a line: the pyACL functions the simulator cannot do
(single operators, profiling, video decode and encode, ...), with their
parameters and what pyACL returns::

    pyACL name(param, param)   -> ret | handle | (a, ret) | value

They exist so that a program fails as it would on a chip without the feature:
``ret`` is ACL_ERROR_API_NOT_SUPPORT (200001), a handle is 0, a tuple holds 0s
and then the code.

MEDIA: the C prototypes of the DVPP functions (libacl_dvpp.so) FUNCTIONS
names, written as in ascend_engine/sim/include/acl/ops/acl_dvpp.h.
"""

FUNCTIONS = """
# process, device, context, stream, event (acl_rt.h)
finalize                    aclFinalize
rt.set_device               aclrtSetDevice
rt.reset_device             aclrtResetDevice                nogil
rt.get_device               aclrtGetDevice                  out=deviceId
rt.get_device_count         aclrtGetDeviceCount             out=count
rt.get_run_mode             aclrtGetRunMode                 out=runMode
rt.create_context           aclrtCreateContext              out=context
rt.destroy_context          aclrtDestroyContext             nogil
rt.set_context              aclrtSetCurrentContext
rt.get_context              aclrtGetCurrentContext          out=context
rt.create_stream            aclrtCreateStream               out=stream
rt.destroy_stream           aclrtDestroyStream              nogil
rt.synchronize_stream       aclrtSynchronizeStream          nogil
rt.synchronize_stream_with_timeout aclrtSynchronizeStreamWithTimeout nogil
rt.stream_wait_event        aclrtStreamWaitEvent nogil
rt.stream_query             aclrtStreamQuery                out=status
rt.create_event             aclrtCreateEvent                out=event
rt.create_event_with_flag   aclrtCreateEventWithFlag        out=event
rt.destroy_event            aclrtDestroyEvent
rt.record_event             aclrtRecordEvent    nogil
rt.reset_event              aclrtResetEvent
rt.query_event_status       aclrtQueryEventStatus           out=status
rt.synchronize_event        aclrtSynchronizeEvent           nogil
rt.synchronize_event_with_timeout aclrtSynchronizeEventWithTimeout nogil
rt.event_elapsed_time       aclrtEventElapsedTime           out=ms
rt.device_can_access_peer   aclrtDeviceCanAccessPeer        out=canAccessPeer
rt.device_enable_peer_access aclrtDeviceEnablePeerAccess
rt.device_disable_peer_access aclrtDeviceDisablePeerAccess
rt.set_device_sat_mode      aclrtSetDeviceSatMode
rt.get_device_sat_mode      aclrtGetDeviceSatMode           out=mode

# memory and copies
rt.malloc                   aclrtMalloc                     out=devPtr
rt.free                     aclrtFree                       nogil
rt.malloc_host              aclrtMallocHost                 out=hostPtr
rt.free_host                aclrtFreeHost                   nogil
rt.memcpy                   aclrtMemcpy                     nogil
rt.memcpy_async             aclrtMemcpyAsync    nogil
rt.memset                   aclrtMemset                     nogil
rt.memset_async             aclrtMemsetAsync    nogil
rt.get_mem_info             aclrtGetMemInfo                 out=free,total

# host callbacks (launch_callback and process_report are in _pyacl.pyx)
rt.subscribe_report         aclrtSubscribeReport
rt.unsubscribe_report       aclrtUnSubscribeReport          nogil

# data types, data buffers (acl_base.h)
data_type_size              aclDataTypeSize                 value
float16_to_float            aclFloat16ToFloat               value
float_to_float16            aclFloatToFloat16               value
create_data_buffer          aclCreateDataBuffer             value
destroy_data_buffer         aclDestroyDataBuffer
update_data_buffer          aclUpdateDataBuffer
get_data_buffer_addr        aclGetDataBufferAddr            value
get_data_buffer_size_v2     aclGetDataBufferSizeV2          value

# tensor descriptions (create_tensor_desc is in _pyacl.pyx: it takes a list)
destroy_tensor_desc         aclDestroyTensorDesc
get_tensor_desc_type        aclGetTensorDescType            value
get_tensor_desc_format      aclGetTensorDescFormat          value
get_tensor_desc_size        aclGetTensorDescSize            value
get_tensor_desc_element_count aclGetTensorDescElementCount  value
get_tensor_desc_num_dims    aclGetTensorDescNumDims         value
get_tensor_desc_dim_v2      aclGetTensorDescDimV2           out=dimSize
get_tensor_desc_address     aclGetTensorDescAddress         value
get_tensor_desc_by_index    aclGetTensorDescByIndex         value

# models: load, execute (acl_mdl.h)
mdl.load_from_file          aclmdlLoadFromFile              out=modelId nogil
mdl.load_from_mem           aclmdlLoadFromMem               out=modelId nogil
mdl.query_size              aclmdlQuerySize                 out=workSize,weightSize nogil
mdl.load_from_file_with_mem aclmdlLoadFromFileWithMem       out=modelId nogil
mdl.load_from_mem_with_mem  aclmdlLoadFromMemWithMem        out=modelId nogil
mdl.unload                  aclmdlUnload                    nogil
mdl.execute                 aclmdlExecute                   nogil
mdl.execute_async           aclmdlExecuteAsync  nogil

# models: description
mdl.create_desc             aclmdlCreateDesc                value
mdl.destroy_desc            aclmdlDestroyDesc
mdl.get_desc                aclmdlGetDesc
mdl.get_num_inputs          aclmdlGetNumInputs              value
mdl.get_num_outputs         aclmdlGetNumOutputs             value
mdl.get_input_size_by_index aclmdlGetInputSizeByIndex       value
mdl.get_output_size_by_index aclmdlGetOutputSizeByIndex     value
mdl.get_input_dims          aclmdlGetInputDims              out=dims
mdl.get_input_dims_v2       aclmdlGetInputDimsV2            out=dims
mdl.get_output_dims         aclmdlGetOutputDims             out=dims
mdl.get_cur_output_dims     aclmdlGetCurOutputDims          out=dims
mdl.get_input_data_type     aclmdlGetInputDataType          value
mdl.get_output_data_type    aclmdlGetOutputDataType         value
mdl.get_input_format        aclmdlGetInputFormat            value
mdl.get_output_format       aclmdlGetOutputFormat           value
mdl.get_input_name_by_index aclmdlGetInputNameByIndex       value
mdl.get_output_name_by_index aclmdlGetOutputNameByIndex     value
mdl.get_input_index_by_name aclmdlGetInputIndexByName       out=index
mdl.get_output_index_by_name aclmdlGetOutputIndexByName     out=index

# datasets
mdl.create_dataset          aclmdlCreateDataset             value
mdl.destroy_dataset         aclmdlDestroyDataset
mdl.add_dataset_buffer      aclmdlAddDatasetBuffer          echo=dataset
mdl.get_dataset_num_buffers aclmdlGetDatasetNumBuffers      value
mdl.get_dataset_buffer      aclmdlGetDatasetBuffer          value
mdl.set_dataset_tensor_desc aclmdlSetDatasetTensorDesc
mdl.get_dataset_tensor_desc aclmdlGetDatasetTensorDesc      value

# dynamic batch, image size and dims (get/set_input_dynamic_dims are in _pyacl.pyx)
mdl.get_dynamic_batch       aclmdlGetDynamicBatch           out=batch
mdl.set_dynamic_batch_size  aclmdlSetDynamicBatchSize
mdl.get_dynamic_hw          aclmdlGetDynamicHW              out=hw
mdl.set_dynamic_hw_size     aclmdlSetDynamicHWSize
mdl.get_input_dynamic_gear_count aclmdlGetInputDynamicGearCount out=gearCount

# AIPP
mdl.create_aipp             aclmdlCreateAIPP                value
mdl.destroy_aipp            aclmdlDestroyAIPP
mdl.set_aipp_input_format   aclmdlSetAIPPInputFormat
mdl.set_aipp_csc_params     aclmdlSetAIPPCscParams
mdl.set_aipp_rbuv_swap_switch aclmdlSetAIPPRbuvSwapSwitch
mdl.set_aipp_ax_swap_switch aclmdlSetAIPPAxSwapSwitch
mdl.set_aipp_src_image_size aclmdlSetAIPPSrcImageSize
mdl.set_aipp_crop_params    aclmdlSetAIPPCropParams
mdl.set_aipp_padding_params aclmdlSetAIPPPaddingParams
mdl.set_aipp_dtc_pixel_mean aclmdlSetAIPPDtcPixelMean
mdl.set_aipp_dtc_pixel_min  aclmdlSetAIPPDtcPixelMin
mdl.set_aipp_pixel_var_reci aclmdlSetAIPPPixelVarReci
mdl.set_input_aipp          aclmdlSetInputAIPP
mdl.get_aipp_type           aclmdlGetAippType               out=type,dynamicAttachedDataIndex
mdl.get_aipp_data_size      aclmdlGetAippDataSize           out=size

# DVPP (acl_dvpp.h, libacl_dvpp.so)
media.dvpp_malloc           acldvppMalloc                   out=devPtr
media.dvpp_free             acldvppFree                     nogil
media.dvpp_create_channel_desc acldvppCreateChannelDesc     value
media.dvpp_destroy_channel_desc acldvppDestroyChannelDesc
media.dvpp_set_channel_desc_mode acldvppSetChannelDescMode
media.dvpp_get_channel_desc_channel_id acldvppGetChannelDescChannelId value
media.dvpp_create_channel   acldvppCreateChannel
media.dvpp_destroy_channel  acldvppDestroyChannel           nogil
media.dvpp_create_pic_desc  acldvppCreatePicDesc            value
media.dvpp_destroy_pic_desc acldvppDestroyPicDesc
media.dvpp_set_pic_desc_data acldvppSetPicDescData
media.dvpp_set_pic_desc_size acldvppSetPicDescSize
media.dvpp_set_pic_desc_format acldvppSetPicDescFormat
media.dvpp_set_pic_desc_width acldvppSetPicDescWidth
media.dvpp_set_pic_desc_height acldvppSetPicDescHeight
media.dvpp_set_pic_desc_width_stride acldvppSetPicDescWidthStride
media.dvpp_set_pic_desc_height_stride acldvppSetPicDescHeightStride
media.dvpp_set_pic_desc_ret_code acldvppSetPicDescRetCode
media.dvpp_get_pic_desc_data acldvppGetPicDescData          value
media.dvpp_get_pic_desc_size acldvppGetPicDescSize          value
media.dvpp_get_pic_desc_format acldvppGetPicDescFormat      value
media.dvpp_get_pic_desc_width acldvppGetPicDescWidth        value
media.dvpp_get_pic_desc_height acldvppGetPicDescHeight      value
media.dvpp_get_pic_desc_width_stride acldvppGetPicDescWidthStride value
media.dvpp_get_pic_desc_height_stride acldvppGetPicDescHeightStride value
media.dvpp_get_pic_desc_ret_code acldvppGetPicDescRetCode   value
media.dvpp_create_batch_pic_desc acldvppCreateBatchPicDesc  value
media.dvpp_get_pic_desc     acldvppGetPicDesc               value
media.dvpp_destroy_batch_pic_desc acldvppDestroyBatchPicDesc
media.dvpp_create_roi_config acldvppCreateRoiConfig         value
media.dvpp_destroy_roi_config acldvppDestroyRoiConfig
media.dvpp_set_roi_config   acldvppSetRoiConfig
media.dvpp_set_roi_config_left acldvppSetRoiConfigLeft
media.dvpp_set_roi_config_right acldvppSetRoiConfigRight
media.dvpp_set_roi_config_top acldvppSetRoiConfigTop
media.dvpp_set_roi_config_bottom acldvppSetRoiConfigBottom
media.dvpp_create_resize_config acldvppCreateResizeConfig   value
media.dvpp_destroy_resize_config acldvppDestroyResizeConfig
media.dvpp_set_resize_config_interpolation acldvppSetResizeConfigInterpolation
media.dvpp_get_resize_config_interpolation acldvppGetResizeConfigInterpolation value
media.dvpp_create_jpege_config acldvppCreateJpegeConfig     value
media.dvpp_destroy_jpege_config acldvppDestroyJpegeConfig
media.dvpp_set_jpege_config_level acldvppSetJpegeConfigLevel
media.dvpp_get_jpege_config_level acldvppGetJpegeConfigLevel value
media.dvpp_jpeg_get_image_info acldvppJpegGetImageInfo      out=width,height,components
media.dvpp_jpeg_get_image_info_v2 acldvppJpegGetImageInfoV2 out=width,height,components,format
media.dvpp_jpeg_predict_dec_size acldvppJpegPredictDecSize  out=decSize
media.dvpp_jpeg_predict_enc_size acldvppJpegPredictEncSize  out=size
media.dvpp_jpeg_decode_async acldvppJpegDecodeAsync nogil
media.dvpp_jpeg_encode_async acldvppJpegEncodeAsync nogil
media.dvpp_png_get_image_info acldvppPngGetImageInfo        out=width,height,components
media.dvpp_png_predict_dec_size acldvppPngPredictDecSize    out=decSize
media.dvpp_png_decode_async acldvppPngDecodeAsync nogil
media.dvpp_vpc_resize_async acldvppVpcResizeAsync nogil
media.dvpp_vpc_crop_async   acldvppVpcCropAsync nogil
media.dvpp_vpc_crop_resize_async acldvppVpcCropResizeAsync nogil
media.dvpp_vpc_crop_and_paste_async acldvppVpcCropAndPasteAsync nogil
media.dvpp_vpc_crop_resize_paste_async acldvppVpcCropResizePasteAsync nogil
media.dvpp_vpc_convert_color_async acldvppVpcConvertColorAsync nogil
"""

UNSUPPORTED = """
# single operators (acl_op.h, acl_op_compiler.h)
op.create_attr()                                         -> handle
op.destroy_attr(attr)                                    -> value
op.set_attr_int(attr, name, value)                       -> ret
op.set_attr_float(attr, name, value)                     -> ret
op.set_attr_bool(attr, name, value)                      -> ret
op.set_attr_string(attr, name, value)                    -> ret
op.set_attr_list_int(attr, name, values)                 -> ret
op.set_attr_list_float(attr, name, values)               -> ret
op.set_model_dir(model_dir)                              -> ret
op.load(model, model_size)                               -> ret
op.execute(op_type, input_desc, inputs, output_desc, outputs, attr, stream) -> ret
op.execute_v2(op_type, input_desc, inputs, output_desc, outputs, attr, stream) -> ret
op.create_handle(op_type, input_desc, output_desc, attr)  -> (handle, ret)
op.destroy_handle(handle)                                -> value
op.execute_with_handle(handle, inputs, outputs, stream)  -> ret
op.compile(op_type, input_desc, output_desc, attr, engine_type, compile_flag, op_path) -> ret
op.compile_and_execute(op_type, input_desc, inputs, output_desc, outputs, attr, engine_type, compile_flag, op_path, stream) -> ret
op.infer_shape(op_type, input_desc, inputs, num_outputs, output_desc, attr) -> ret
op.cast(input_desc, inputs, output_desc, outputs, truncate, stream) -> ret
set_compile_opt(opt, value)                              -> ret

# profiling (acl_prof.h)
prof.init(profiler_result_path)                          -> ret
prof.finalize()                                          -> ret
prof.create_config(device_ids, aicore_metrics, aicore_events, data_type_config) -> handle
prof.destroy_config(config)                              -> ret
prof.start(config)                                       -> ret
prof.stop(config)                                        -> ret
prof.model_subscribe(model_id, config)                   -> ret
prof.model_unsubscribe(model_id)                         -> ret
prof.create_subscribe_config(time_info_switch, aicore_metrics, fd) -> handle
prof.destroy_subscribe_config(config)                    -> ret
prof.get_op_desc_size()                                  -> (size, ret)
prof.get_op_num(op_info, op_info_len)                    -> (num, ret)
prof.get_op_type(op_info, op_info_len, index)            -> (op_type, ret)
prof.get_op_name(op_info, op_info_len, index)            -> (op_name, ret)
prof.get_op_start(op_info, op_info_len, index)           -> value
prof.get_op_end(op_info, op_info_len, index)             -> value
prof.get_op_duration(op_info, op_info_len, index)        -> value
prof.get_model_id(op_info, op_info_len, index)           -> value

# video decode (VDEC)
media.vdec_create_channel_desc()                         -> handle
media.vdec_destroy_channel_desc(channel_desc)            -> ret
media.vdec_create_channel(channel_desc)                  -> ret
media.vdec_destroy_channel(channel_desc)                 -> ret
media.vdec_set_channel_desc_channel_id(channel_desc, channel_id) -> ret
media.vdec_set_channel_desc_thread_id(channel_desc, thread_id) -> ret
media.vdec_set_channel_desc_callback(channel_desc, callback) -> ret
media.vdec_set_channel_desc_en_type(channel_desc, en_type) -> ret
media.vdec_set_channel_desc_out_pic_format(channel_desc, out_pic_format) -> ret
media.vdec_set_channel_desc_out_mode(channel_desc, out_mode) -> ret
media.vdec_set_channel_desc_ref_frame_num(channel_desc, ref_frame_num) -> ret
media.vdec_set_channel_desc_display_frame_num(channel_desc, display_frame_num) -> ret
media.vdec_create_frame_config()                         -> handle
media.vdec_destroy_frame_config(frame_config)            -> ret
media.vdec_send_frame(channel_desc, input, output, config, user_data) -> ret
media.vdec_send_skipped_frame(channel_desc, input, config, user_data) -> ret
media.dvpp_create_stream_desc()                          -> handle
media.dvpp_destroy_stream_desc(stream_desc)              -> ret
media.dvpp_set_stream_desc_data(stream_desc, data_dev)   -> ret
media.dvpp_set_stream_desc_size(stream_desc, size)       -> ret
media.dvpp_set_stream_desc_format(stream_desc, format)   -> ret
media.dvpp_set_stream_desc_eos(stream_desc, eos)         -> ret
media.dvpp_get_stream_desc_data(stream_desc)             -> value
media.dvpp_get_stream_desc_size(stream_desc)             -> value
media.dvpp_get_stream_desc_ret_code(stream_desc)         -> value

# video encode (VENC)
media.venc_create_channel_desc()                         -> handle
media.venc_destroy_channel_desc(channel_desc)            -> ret
media.venc_create_channel(channel_desc)                  -> ret
media.venc_destroy_channel(channel_desc)                 -> ret
media.venc_set_channel_desc_thread_id(channel_desc, thread_id) -> ret
media.venc_set_channel_desc_callback(channel_desc, callback) -> ret
media.venc_set_channel_desc_en_type(channel_desc, en_type) -> ret
media.venc_set_channel_desc_pic_format(channel_desc, pic_format) -> ret
media.venc_set_channel_desc_pic_width(channel_desc, pic_width) -> ret
media.venc_set_channel_desc_pic_height(channel_desc, pic_height) -> ret
media.venc_set_channel_desc_key_frame_interval(channel_desc, key_frame_interval) -> ret
media.venc_create_frame_config()                         -> handle
media.venc_destroy_frame_config(frame_config)            -> ret
media.venc_set_frame_config_force_i_frame(config, force_i_frame) -> ret
media.venc_set_frame_config_eos(config, eos)             -> ret
media.venc_send_frame(channel_desc, input, reserve, config, user_data) -> ret
"""

MEDIA = """
aclError acldvppMalloc(void **devPtr, size_t size);
aclError acldvppFree(void *devPtr);
acldvppChannelDesc *acldvppCreateChannelDesc(void);
aclError acldvppDestroyChannelDesc(acldvppChannelDesc *channelDesc);
aclError acldvppSetChannelDescMode(acldvppChannelDesc *channelDesc, uint32_t mode);
uint64_t acldvppGetChannelDescChannelId(const acldvppChannelDesc *channelDesc);
aclError acldvppCreateChannel(acldvppChannelDesc *channelDesc);
aclError acldvppDestroyChannel(acldvppChannelDesc *channelDesc);
acldvppPicDesc *acldvppCreatePicDesc(void);
aclError acldvppDestroyPicDesc(acldvppPicDesc *picDesc);
aclError acldvppSetPicDescData(acldvppPicDesc *picDesc, void *dataDev);
aclError acldvppSetPicDescSize(acldvppPicDesc *picDesc, uint32_t size);
aclError acldvppSetPicDescFormat(acldvppPicDesc *picDesc, acldvppPixelFormat format);
aclError acldvppSetPicDescWidth(acldvppPicDesc *picDesc, uint32_t width);
aclError acldvppSetPicDescHeight(acldvppPicDesc *picDesc, uint32_t height);
aclError acldvppSetPicDescWidthStride(acldvppPicDesc *picDesc, uint32_t widthStride);
aclError acldvppSetPicDescHeightStride(acldvppPicDesc *picDesc, uint32_t heightStride);
aclError acldvppSetPicDescRetCode(acldvppPicDesc *picDesc, uint32_t retCode);
void *acldvppGetPicDescData(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescSize(const acldvppPicDesc *picDesc);
acldvppPixelFormat acldvppGetPicDescFormat(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescWidth(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescHeight(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescWidthStride(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescHeightStride(const acldvppPicDesc *picDesc);
uint32_t acldvppGetPicDescRetCode(const acldvppPicDesc *picDesc);
acldvppBatchPicDesc *acldvppCreateBatchPicDesc(uint32_t batchSize);
acldvppPicDesc *acldvppGetPicDesc(acldvppBatchPicDesc *batchPicDesc, uint32_t index);
aclError acldvppDestroyBatchPicDesc(acldvppBatchPicDesc *batchPicDesc);
acldvppRoiConfig *acldvppCreateRoiConfig(uint32_t left, uint32_t right, uint32_t top, uint32_t bottom);
aclError acldvppDestroyRoiConfig(acldvppRoiConfig *roiConfig);
aclError acldvppSetRoiConfig(acldvppRoiConfig *config, uint32_t left, uint32_t right, uint32_t top, uint32_t bottom);
aclError acldvppSetRoiConfigLeft(acldvppRoiConfig *config, uint32_t left);
aclError acldvppSetRoiConfigRight(acldvppRoiConfig *config, uint32_t right);
aclError acldvppSetRoiConfigTop(acldvppRoiConfig *config, uint32_t top);
aclError acldvppSetRoiConfigBottom(acldvppRoiConfig *config, uint32_t bottom);
acldvppResizeConfig *acldvppCreateResizeConfig(void);
aclError acldvppDestroyResizeConfig(acldvppResizeConfig *resizeConfig);
aclError acldvppSetResizeConfigInterpolation(acldvppResizeConfig *resizeConfig, uint32_t interpolation);
uint32_t acldvppGetResizeConfigInterpolation(const acldvppResizeConfig *resizeConfig);
acldvppJpegeConfig *acldvppCreateJpegeConfig(void);
aclError acldvppDestroyJpegeConfig(acldvppJpegeConfig *jpegeConfig);
aclError acldvppSetJpegeConfigLevel(acldvppJpegeConfig *jpegeConfig, uint32_t level);
uint32_t acldvppGetJpegeConfigLevel(const acldvppJpegeConfig *jpegeConfig);
aclError acldvppJpegGetImageInfo(const void *data, uint32_t size, uint32_t *width, uint32_t *height, int32_t *components);
aclError acldvppJpegGetImageInfoV2(const void *data, uint32_t size, uint32_t *width, uint32_t *height, int32_t *components, acldvppJpegFormat *format);
aclError acldvppJpegPredictDecSize(const void *data, uint32_t dataSize, acldvppPixelFormat outputPixelFormat, uint32_t *decSize);
aclError acldvppJpegPredictEncSize(const acldvppPicDesc *inputDesc, const acldvppJpegeConfig *config, uint32_t *size);
aclError acldvppJpegDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size, acldvppPicDesc *outputDesc, aclrtStream stream);
aclError acldvppJpegEncodeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, const void *data, uint32_t *size, acldvppJpegeConfig *config, aclrtStream stream);
aclError acldvppPngGetImageInfo(const void *data, uint32_t dataSize, uint32_t *width, uint32_t *height, int32_t *components);
aclError acldvppPngPredictDecSize(const void *data, uint32_t dataSize, acldvppPixelFormat outputPixelFormat, uint32_t *decSize);
aclError acldvppPngDecodeAsync(acldvppChannelDesc *channelDesc, const void *data, uint32_t size, acldvppPicDesc *outputDesc, aclrtStream stream);
aclError acldvppVpcResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppVpcCropAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea, aclrtStream stream);
aclError acldvppVpcCropResizeAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea, acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppVpcCropAndPasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea, acldvppRoiConfig *pasteArea, aclrtStream stream);
aclError acldvppVpcCropResizePasteAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, acldvppRoiConfig *cropArea, acldvppRoiConfig *pasteArea, acldvppResizeConfig *resizeConfig, aclrtStream stream);
aclError acldvppVpcConvertColorAsync(acldvppChannelDesc *channelDesc, acldvppPicDesc *inputDesc, acldvppPicDesc *outputDesc, aclrtStream stream);
"""
