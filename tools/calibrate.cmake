# deepum-calibrate (tools/deepum-calibrate.cu): measures a GPU's Unified Memory
# parameters and writes a device file. A CUDA program built by nvcc with the
# shared runtime, as tests/standin builds TrainStep, so that it runs on a GPU
# and on the CUDA stand-in alike; only where the CUDA toolkit is. It links no
# LLVM: its options are parsed by hand, with the other tools' messages and
# exit statuses (docs/tools.md).
if(DEEPUM_CUDA AND DEEPUM_CUDA_RUNTIME_API_H)
  find_program(DEEPUM_NVCC nvcc HINTS ${CUDAToolkit_BIN_DIR} NO_DEFAULT_PATH)
endif()
if(DEEPUM_NVCC)
  set(deepum_calibrate ${CMAKE_CURRENT_BINARY_DIR}/deepum-calibrate)
  # sm_90 code (H100, H200) and compute_90 PTX for later GPUs.
  deepum_add_nvcc_output(${deepum_calibrate} ${CMAKE_CURRENT_SOURCE_DIR}/deepum-calibrate.cu
    FLAGS -O2 "-gencode=arch=compute_90,code=[sm_90,compute_90]" -DDEEPUM_VERSION=${PROJECT_VERSION}
    INCLUDES ${PROJECT_SOURCE_DIR}/standin/include
    DEPENDS ${PROJECT_SOURCE_DIR}/standin/include/deepum/standin/Twin.h
            ${PROJECT_SOURCE_DIR}/standin/include/deepum/standin/StandIn.h)
  add_custom_target(deepum_calibrate ALL DEPENDS ${deepum_calibrate})
  install(PROGRAMS ${deepum_calibrate} DESTINATION bin)
endif()
