// Stand-in for CUDA's cuda_runtime.h: everything is in cuemu.h.
#include "../cuemu.h"
