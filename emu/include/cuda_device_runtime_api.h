// Stand-in for CUDA's cuda_device_runtime_api.h: everything is in cuemu.h.
#include "../cuemu.h"
