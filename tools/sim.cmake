# deepum-sim: thin main over deepum_sim's runSim (simulator/lib/SimTool.cpp).
deepum_add_tool(deepum-sim SOURCES deepum-sim.cpp DEPS deepum_sim)
