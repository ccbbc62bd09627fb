// The emulator runtime, as precompiled by `emu/nvcc-emu --build-pch` into cuemu.h.gch
// beside this file (make does it). A build includes this file: g++ loads the .gch when it
// is valid and otherwise reads the runtime through this include.
#include "../cuemu.h"
