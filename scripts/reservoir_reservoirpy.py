#!/usr/bin/env python3
"""ReservoirPy (NumPy) on the task of `benches/reservoir.rs`, for the speed comparison.

Mackey-Glass (tau = 17) one step ahead: fit the readout on `--steps` steps (warmup 100), then run
the fitted network over the same steps; the same hyper-parameters as the Rust bench (lr 0.5,
sr 0.9, input scaling 1, input connectivity 1, recurrent connectivity 0.1, no bias, ridge 1e-7).
Prints one line per size with the fit and run times and the one-step RMSE.

    python3 scripts/reservoir_reservoirpy.py --units 1000 10000 --steps 50000
"""
import argparse
import time

import numpy as np
import reservoirpy as rpy
from reservoirpy.datasets import mackey_glass
from reservoirpy.nodes import Reservoir, Ridge


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--steps", type=int, default=50000)
    args = parser.parse_args()
    series = mackey_glass(args.steps + 1, tau=17)
    x, y = series[:-1], series[1:]
    for units in args.units:
        reservoir = Reservoir(
            units, lr=0.5, sr=0.9, input_scaling=1.0, input_connectivity=1.0, rc_connectivity=0.1, seed=7
        )
        esn = reservoir >> Ridge(ridge=1e-7)
        t0 = time.perf_counter()
        esn.fit(x, y, warmup=100)
        t1 = time.perf_counter()
        pred = esn.run(x)
        t2 = time.perf_counter()
        rmse = float(np.sqrt(np.mean((np.asarray(pred)[100:] - y[100:]) ** 2)))
        print(
            f"reservoirpy {rpy.__version__} numpy {np.__version__}: {units} units, {args.steps} steps: "
            f"fit {t1 - t0:.3f} s, run {t2 - t1:.3f} s, fit + run {t2 - t0:.3f} s, RMSE after 100 steps {rmse:.3e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
