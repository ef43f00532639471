"""The anchor of `prism-gpu bench --groups nccl`: NCCL's all-reduce driven by PyTorch's torch.distributed.

The bench writes this script (embedded in the binary) to a temporary file and runs
`python3 FILE --world N --plan BYTES:INNER,... --warmup W --repeats R`. One process per GPU
(torch.multiprocessing.spawn) times, with CUDA events, what the bench times through
prism_gpu::nccl: INNER back-to-back in-place float32 sum all-reduces of BYTES bytes per sample,
after W samples of warm-up, R samples per size, every rank starting each sample together. Rank 0
prints JSON lines on stdout: first {"torch", "nccl", "world"}, then per size {"bytes",
"samples_ms"}, each sample the time of one all-reduce on the slowest rank. Failures print
{"error": ...} and exit with status 3. NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
"""
import argparse
import json
import os
import socket
import sys


def fail(message):
    print(json.dumps({"error": message}), flush=True)
    sys.exit(3)


def rank_main(rank, world, port, plan, warmup, repeats):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, device_id=device
    )
    # The collective works: ranks 1..n summed.
    check = torch.full((1024,), float(rank + 1), device=device)
    dist.all_reduce(check)
    if not bool(torch.all(check == world * (world + 1) / 2)):
        raise RuntimeError(f"rank {rank}: all_reduce gave {check[0].item()}, not {world * (world + 1) / 2}")
    if rank == 0:
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        print(json.dumps({"torch": torch.__version__, "nccl": nccl, "world": world}), flush=True)
    buffer = torch.zeros(max(size for size, _ in plan) // 4, dtype=torch.float32, device=device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for size, inner in plan:
        data = buffer[: size // 4]
        for _ in range(warmup * inner):
            dist.all_reduce(data)
        torch.cuda.synchronize()
        samples = []
        for _ in range(repeats):
            dist.barrier()
            torch.cuda.synchronize()
            start.record()
            for _ in range(inner):
                dist.all_reduce(data)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / inner)
        slowest = torch.tensor(samples, dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(json.dumps({"bytes": size, "samples_ms": slowest.tolist()}), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--plan", required=True, help="BYTES:INNER,...")
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--repeats", type=int, required=True)
    args = parser.parse_args()
    plan = [tuple(int(v) for v in item.split(":")) for item in args.plan.split(",")]
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as e:
        fail(f"PyTorch is not installed ({e})")
    if not torch.cuda.is_available() or torch.cuda.device_count() < args.world:
        fail(f"PyTorch sees {torch.cuda.device_count()} CUDA devices, {args.world} needed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.spawn(rank_main, args=(args.world, port, plan, args.warmup, args.repeats), nprocs=args.world)
    except Exception as e:  # a rank failed: its traceback is on stderr
        fail(f"a rank failed: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}")


if __name__ == "__main__":
    main()
