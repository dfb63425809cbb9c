"""Tools for testing ptxopt itself (random kernels for the differential
fuzzer); not used by the compiler, search or learning code."""
