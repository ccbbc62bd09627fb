// Stand-in for CUDA's math_constants.h: everything is in cuemu.h.
#include "../cuemu.h"
