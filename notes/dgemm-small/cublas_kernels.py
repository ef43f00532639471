# Which kernels cuBLAS (through PyTorch) runs for f64 products, one profiled launch per shape: run under
#   ncu --profile-from-start off --metrics ... --csv python3 cublas_kernels.py MxNxK,...
# Row-major C[m x n] = A[m x k] @ B[k x n], as `prism-gpu bench` times it; operands random, never zeros.
import sys
import torch

shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")]
gen = torch.Generator(device="cuda").manual_seed(4321)
for m, n, k in shapes:
    a = torch.rand(m, k, dtype=torch.float64, device="cuda", generator=gen) - 0.5
    b = torch.rand(k, n, dtype=torch.float64, device="cuda", generator=gen) - 0.5
    for _ in range(3):
        c = a @ b
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    c = a @ b
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"shape {m}x{n}x{k} done", flush=True)
