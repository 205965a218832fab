"""The AscendCL simulator and its model builder."""
