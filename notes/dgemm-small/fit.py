"""Fits the f64 rules' cost model (src/kernels/gemm/double.rs: `score`, `split_choices`) to a
`prism-gpu tune --precisions f64 --candidates F` run: python3 fit.py F [F ...]. For each parameter set
it replays the rules' choice among the DMMA candidates of every shape the rules would give a DMMA tile
and prints how far from the measured best those choices are (geometric mean and worst of best / chosen)."""
import csv, itertools, math, sys
from collections import defaultdict

SMS = 132
ALIGN = 32
MAX_SPLITS = 256
MAX_PARTIALS = 64 << 20
TILES = {"128": (128, 64, 2), "64": (64, 64, 2), "32": (32, 64, 3), "32x32": (32, 32, 4)}


def parse(candidate):
    words = candidate.split()
    if words[0] != "dmma":
        return None
    tile, splits = "128", 1
    for w in words[1:]:
        k, v = w.split("=")
        if k == "tile":
            tile = v
        else:
            splits = int(v)
    return tile, splits


def cut(k, splits):
    if splits == 1:
        return k, 1
    depth = -(-(-(-k // splits)) // ALIGN) * ALIGN
    return depth, -(-k // depth)


def load(paths):
    shapes = defaultdict(dict)  # (m, n, k) -> {(tile, parts): ms}; skinny / simt best kept apart
    best = {}
    for path in paths:
        for r in csv.DictReader(open(path), delimiter="\t"):
            m, n, k = (int(x) for x in r["shape"].split("*")[0].split("x"))
            ms = float(r["ms"])
            key = (m, n, k)
            best[key] = min(best.get(key, 1e9), ms)
            p = parse(r["candidate"])
            if p:
                tile, splits = p
                parts = cut(k, splits)[1]
                shapes[key][(tile, parts)] = min(ms, shapes[key].get((tile, parts), 1e9))
    return shapes, best


def choose(m, n, k, speed, fixed, depth_cost, min_depth):
    outputs = max(m * n, 1)
    max_splits = max(1, min(MAX_PARTIALS // (outputs * 8), k // min_depth, MAX_SPLITS))
    best = (0.0, None)
    for name, (rows, cols, bps) in TILES.items():
        tiles = -(-m // rows) * -(-n // cols)
        slots = bps * SMS
        most = max(1, min(-(-2 * slots // tiles), max_splits))
        ends = [min(max(w * slots // tiles, 1), most) for w in (1, 2)]
        for s in list(range(1, min(most, 16) + 1)) + [e for e in ends if e > 16]:
            _, parts = cut(k, s)
            inside = m * n / (tiles * rows * cols)
            blocks = tiles * parts
            fill = blocks / (-(-blocks // slots) * slots)
            slicing = 1 + fixed + (parts + 1) * depth_cost / k if parts > 1 else 1.0
            v = inside * fill * speed[name] / slicing
            if v > best[0]:
                best = (v, (name, parts))
    return best[1]


def evaluate(shapes, best, params, show=False):
    logs, worst = [], (1.0, None)
    for key, timed in shapes.items():
        m, n, k = key
        if min(m, n) <= 4:  # the skinny kernels' (the rules take them first)
            continue
        choice = choose(m, n, k, *params)
        if choice not in timed:  # an untimed cut: the nearest timed one of the same tile
            same = [c for c in timed if c[0] == choice[0]]
            if not same:
                continue
            choice = min(same, key=lambda c: abs(math.log(c[1] / choice[1])))
        r = best[key] / timed[choice]
        logs.append(math.log(r))
        worst = min(worst, (r, key, choice), key=lambda x: x[0])
        if show:
            b = min(timed, key=timed.get)
            print(f"{m}x{n}x{k}: rules {choice} {r:.2f} of best {b}")
    return math.exp(sum(logs) / len(logs)), worst


if __name__ == "__main__":
    shapes, best = load(sys.argv[1:])
    current = ({"128": 1.0, "64": 0.85, "32": 0.82, "32x32": 0.69}, 0.1, 200.0, 256)
    print("current", evaluate(shapes, best, current))
    results = []
    for s64, s32, s3232, fixed, dc, md in itertools.product(
        [0.85, 0.9, 0.95, 1.0], [0.8, 0.85, 0.9, 0.95, 1.0, 1.05], [0.6, 0.7, 0.8, 0.9, 1.0],
        [0.0, 0.1, 0.2, 0.4], [100.0, 200.0, 400.0, 800.0], [64, 128, 256]):
        p = ({"128": 1.0, "64": s64, "32": s32, "32x32": s3232}, fixed, dc, md)
        g, w = evaluate(shapes, best, p)
        results.append((g, w[0], p))
    results.sort(key=lambda x: -x[0])
    for g, w, p in results[:15]:
        print(f"{g:.4f} worst {w:.2f} {p}")
    if "--show" in sys.argv:
        evaluate(shapes, best, results[0][2], show=True)


def choose_timed(m, n, k, speed, depth_cost, launch_us, min_depth, peak=60e12):
    """The same choice by estimated time: the product's flops at `peak` times the model's value, the
    partial products' traffic as before, plus `launch_us` per extra launch a cut k costs (the reduction,
    and a shorter last slice's own launch)."""
    outputs = max(m * n, 1)
    max_splits = max(1, min(MAX_PARTIALS // (outputs * 8), k // min_depth, MAX_SPLITS))
    best = (1e30, None)
    for name, (rows, cols, bps) in TILES.items():
        tiles = -(-m // rows) * -(-n // cols)
        slots = bps * SMS
        most = max(1, min(-(-2 * slots // tiles), max_splits))
        ends = [min(max(w * slots // tiles, 1), most) for w in (1, 2)]
        for s in list(range(1, min(most, 16) + 1)) + [e for e in ends if e > 16]:
            depth, parts = cut(k, s)
            inside = m * n / (tiles * rows * cols)
            blocks = tiles * parts
            fill = blocks / (-(-blocks // slots) * slots)
            t = 2.0 * m * n * k / (peak * inside * fill * speed[name]) * 1e6
            if parts > 1:
                t = t * (1 + (parts + 1) * depth_cost / k) + launch_us * (1 + (depth * parts != k))
            if t < best[0]:
                best = (t, (name, parts))
    return best[1]
