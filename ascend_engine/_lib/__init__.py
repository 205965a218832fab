"""Native libraries built with the package: libascendcl_sim.so, the AscendCL simulator."""
