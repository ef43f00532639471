/* Header bindgen reads to generate src/sys/nccl.rs (see tools/regen-bindings and scripts/regen).
 * nccl.h comes from the PyPI wheel nvidia-nccl-cu13 (scripts/install-cuda-toolkit). */
#include <nccl.h>
