# deepum-sim's benchmarks: the simulator's own speed (Google Benchmark), and
# the baselines table (bench/sim/baselines.sh, which drives the deepum-sim tool).
add_executable(deepum-sim-bench sim/SimBench.cpp)
target_link_libraries(deepum-sim-bench PRIVATE deepum_warnings deepum_sim benchmark::benchmark)
target_compile_definitions(deepum-sim-bench PRIVATE DEEPUM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# deepum-sim --compare's time and memory on widened real profiles
# (bench/sim/speed.sh, docs/results/sim-speed.md).
add_executable(deepum-sim-widen sim/WidenProfile.cpp)
target_link_libraries(deepum-sim-widen PRIVATE deepum_warnings deepum_llvm deepum_format)

# Calibration against published real-GPU measurements (docs/results/calibration.md,
# bench/sim/calibration.sh); the ctest runs it at a small size and fails when an
# experiment leaves its tolerance.
add_executable(deepum-sim-calibration sim/Calibration.cpp)
target_link_libraries(deepum-sim-calibration PRIVATE deepum_warnings deepum_sim)
add_test(NAME sim_calibration COMMAND deepum-sim-calibration --small)
