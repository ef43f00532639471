/* Headers bindgen reads to generate src/sys/ (see tools/regen-bindings and scripts/regen). */
#include <cuda.h>
#include <nvrtc.h>
