"""The fast CPU forward: the target's layers on packed weights, and the C++ kernels it may build (csrc/)."""
