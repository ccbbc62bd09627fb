// Stand-in for CUDA's cuda_bf16.h: everything is in cuemu.h.
#include "../cuemu.h"
