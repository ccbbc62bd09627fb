// Stand-in for CUDA's device_functions.h: everything is in cuemu.h.
#include "../cuemu.h"
