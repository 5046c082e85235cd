# Executor benchmarks (Google Benchmark, fake backend: the CPU cost of deepum's
# own code). Targets: pool malloc+free <= 200 ns median, launch hook <= 1 us
# median, with the launch-time guard's argument scan too (where the CUDA
# headers are: KernelParams.cpp alone, which needs no CUPTI).
add_executable(executor-bench ${CMAKE_CURRENT_SOURCE_DIR}/executor/ExecutorBench.cpp)
target_link_libraries(executor-bench PRIVATE deepum_warnings deepum_executor benchmark::benchmark
  ${CMAKE_DL_LIBS})
if(DEEPUM_CUDA)
  target_sources(executor-bench PRIVATE ${PROJECT_SOURCE_DIR}/cupti/lib/KernelParams.cpp)
  target_include_directories(executor-bench PRIVATE ${PROJECT_SOURCE_DIR}/cupti/include)
  target_include_directories(executor-bench SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(executor-bench PRIVATE DEEPUM_BENCH_LAUNCH_ARGUMENTS=1)
endif()
