// Stand-in for CUDA's cuda_fp16.h: everything is in cuemu.h.
#include "../cuemu.h"
