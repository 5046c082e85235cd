# Executor benchmarks (Google Benchmark, fake backend: the CPU cost of deepum's
# own code). Targets: pool malloc+free <= 200 ns median, launch hook <= 1 us median.
add_executable(executor-bench ${CMAKE_CURRENT_SOURCE_DIR}/executor/ExecutorBench.cpp)
target_link_libraries(executor-bench PRIVATE deepum_warnings deepum_executor benchmark::benchmark)
