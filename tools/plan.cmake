# deepum-plan: profile -> plan (planner/). The logic lives in deepum_planner.
deepum_add_tool(deepum-plan SOURCES deepum-plan.cpp DEPS deepum_planner)
