#!/usr/bin/env python3
"""PyTorch anchor for prism_gpu::nn (issue 18): the same model and recipe as
`examples/real_gpu_neural_network.rs`.

MLP 784-512-256-10 (ReLU), Adam lr 1e-3 (PyTorch defaults otherwise), mean cross-entropy,
batch 128, 10 epochs, Fashion-MNIST pixels / 255, samples reshuffled every epoch, the data on the
GPU for the whole run, nn.Linear's default initialisation, float32 matmuls (TF32 off, as ours with
the default precision; pass --tf32 for TF32 on both sides).

It prints, on the GPU it finds:
  1. one training step (forward, loss, backward, Adam) at batch 128 and 1024 on random data:
     eager, and replayed as a CUDA graph (Adam with capturable=True), median of CUDA-event timings;
  2. the 10-epoch training run: loss and accuracy per epoch, the test accuracy, and the epoch
     throughput (samples/s) eager and with each step replayed as a CUDA graph (full batches only
     in graph mode: the graph has static shapes; the last partial batch runs eagerly).

Run beside ours on the GPU machine:
  python3 benches/pytorch_mlp.py --data DIR          # DIR holds the Fashion-MNIST *.gz IDX files
  .device/bin/example-real_gpu_neural_network --bench --data DIR
"""

import argparse
import gzip
import json
import os
import statistics
import time

import numpy as np
import torch
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 8:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndims = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndims)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    return data.reshape(dims)


def load(data_dir, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return read_idx(path)
    raise FileNotFoundError(os.path.join(data_dir, stem) + "[.gz]")


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


def make(device, seed, capturable=False):
    torch.manual_seed(seed)
    model = mlp().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
    return model, opt, nn.CrossEntropyLoss()


def step(model, opt, loss_fn, x, y):
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


def capture(model, opt, loss_fn, x, y):
    """Warm up on a side stream, then capture one step into a graph over static x, y."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(model, opt, loss_fn, x, y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss = step(model, opt, loss_fn, x, y)
    return graph, loss


def time_step(fn, iters=100, repeats=7):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / iters)
    return statistics.median(times)


def step_times(device, seed):
    out = {}
    for batch in (128, 1024):
        g = torch.Generator(device="cpu").manual_seed(seed)
        x = torch.rand(batch, 784, generator=g).to(device)
        y = torch.randint(0, 10, (batch,), generator=g).to(device)
        model, opt, loss_fn = make(device, seed)
        eager = time_step(lambda: step(model, opt, loss_fn, x, y))
        model, opt, loss_fn = make(device, seed, capturable=True)
        graph, _ = capture(model, opt, loss_fn, x, y)
        replay = time_step(graph.replay)
        out[batch] = {"eager_us": eager, "graph_us": replay}
        print(f"one training step at batch {batch}: eager {eager:.1f} us, CUDA graph {replay:.1f} us")
    return out


def evaluate(model, loss_fn, x, y, batch=1024):
    model.eval()
    total, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            logits = model(x[i:i + batch])
            total += loss_fn(logits, y[i:i + batch]).item() * logits.shape[0]
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return total / x.shape[0], correct / x.shape[0]


def train(device, data, epochs, batch, seed, graphed):
    xtr, ytr, xte, yte = data
    n = xtr.shape[0]
    model, opt, loss_fn = make(device, seed, capturable=graphed)
    if graphed:
        sx = torch.empty(batch, 784, device=device)
        sy = torch.empty(batch, dtype=torch.long, device=device)
        sx.copy_(xtr[:batch])
        sy.copy_(ytr[:batch])
        graph, static_loss = capture(model, opt, loss_fn, sx, sy)
        # Capturing warmed up and stepped the model: start again from the seed's weights and
        # a fresh optimiser state so that both modes train the same run.
        fresh, _, _ = make(device, seed)
        with torch.no_grad():
            for p, q in zip(model.parameters(), fresh.parameters()):
                p.copy_(q)
        for state in opt.state.values():
            for v in state.values():
                if torch.is_tensor(v):
                    v.zero_()
    gen = torch.Generator(device="cpu").manual_seed(seed)
    history = []
    for epoch in range(1, epochs + 1):
        order = torch.randperm(n, generator=gen).to(device)
        loss_sum = torch.zeros((), device=device)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            if graphed and idx.shape[0] == batch:
                torch.index_select(xtr, 0, idx, out=sx)
                torch.index_select(ytr, 0, idx, out=sy)
                graph.replay()
                loss_sum += static_loss.detach() * batch
            else:
                loss = step(model, opt, loss_fn, xtr[idx], ytr[idx])
                loss_sum += loss.detach() * idx.shape[0]
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        test_loss, test_acc = evaluate(model, loss_fn, xte, yte)
        row = {"epoch": epoch, "loss": loss_sum.item() / n, "test_loss": test_loss, "test_accuracy": test_acc,
               "samples_per_s": n / seconds}
        history.append(row)
        print(f"{'graph' if graphed else 'eager'} epoch {epoch}: loss {row['loss']:.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {test_acc:.4f}, {row['samples_per_s']:.0f} samples/s")
    return history


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--steps-only", action="store_true", help="only the step timings (no data needed)")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    device = torch.device("cuda")
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    result = {"steps": step_times(device, args.seed)}
    if not args.steps_only:
        to = lambda a, dtype: torch.from_numpy(np.array(a)).to(device=device, dtype=dtype)
        data = (
            to(load(args.data, "train-images-idx3-ubyte").reshape(-1, 784), torch.float32) / 255.0,
            to(load(args.data, "train-labels-idx1-ubyte"), torch.long),
            to(load(args.data, "t10k-images-idx3-ubyte").reshape(-1, 784), torch.float32) / 255.0,
            to(load(args.data, "t10k-labels-idx1-ubyte"), torch.long),
        )
        for graphed in (False, True):
            key = "graph" if graphed else "eager"
            result[key] = train(device, data, args.epochs, args.batch, args.seed, graphed)
            print(f"{key}: final test accuracy {result[key][-1]['test_accuracy']:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
