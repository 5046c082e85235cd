# deepum-sim: thin main over deepum_sim's runSim (simulator/lib/SimTool.cpp).
# --policy plan runs the executor's own code against the simulated GPU
# (deepum_executor_sim, injected into runSim's options: deepum_sim itself
# never depends on the executor).
deepum_add_tool(deepum-sim SOURCES deepum-sim.cpp DEPS deepum_sim deepum_executor_sim)
