// Stand-in for CUDA's cooperative_groups.h: everything is in cuemu.h.
#include "../cuemu.h"
