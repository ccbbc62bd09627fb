// Stand-in for CUDA's device_launch_parameters.h: everything is in cuemu.h.
#include "../cuemu.h"
