// Stand-in for cooperative_groups/reduce.h: everything is in cuemu.h.
#include "../../cuemu.h"
