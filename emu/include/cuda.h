// Stand-in for CUDA's cuda.h: everything is in cuemu.h.
#include "../cuemu.h"
