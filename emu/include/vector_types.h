// Stand-in for CUDA's vector_types.h: everything is in cuemu.h.
#include "../cuemu.h"
