// Stand-in for CUDA's mma.h: everything is in cuemu.h.
#include "../cuemu.h"
