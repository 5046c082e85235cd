# deepum-plan's benchmarks: the results table of docs/results/plan.md (plan beside
# deepum-sim's baselines) and the planner's speed on repeated real profiles.
if(TARGET deepum_executor_sim)
  add_executable(deepum-plan-results plan/PlanResults.cpp)
  target_link_libraries(deepum-plan-results PRIVATE deepum_warnings deepum_llvm deepum_planner
                                                    deepum_executor_sim)
endif()
add_executable(deepum-plan-speed plan/PlanSpeed.cpp)
target_link_libraries(deepum-plan-speed PRIVATE deepum_warnings deepum_llvm deepum_planner)
