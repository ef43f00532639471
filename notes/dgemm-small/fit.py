"""Fits the f64 rules' cost model (src/kernels/gemm/double.rs) to a `prism-gpu tune --precisions f64
--candidates F` run: python3 fit.py F [F ...] [--show]. For a grid of parameters it replays the rules' choice among
the DMMA candidates of every shape the rules would give a DMMA tile (C's short side over 4) and prints how close
those choices come to the measured best (geometric mean and worst of best / chosen), for two models:
- "relative" (the rules before be0eda9): the largest share of the tiles inside C x the waves' fill x the tile's
  speed, over 1 + a fixed share + the partial products' traffic when k is cut;
- "time" (`double::estimated_us` since be0eda9): the shortest estimated time, the flops at a fixed rate per
  multiprocessor over the same share, fill and speed, times the traffic term, plus a cost per launch beyond the
  first (the reduction, and a shorter last slice's own launch)."""
import csv, itertools, math, sys
from collections import defaultdict

SMS = 132
ALIGN = 32
MAX_SPLITS = 256
MAX_PARTIALS = 64 << 20
FLOP_PER_SM_US = 455_000.0
TILES = {"128": (128, 64, 2), "64": (64, 64, 2), "32": (32, 64, 3), "32x32": (32, 32, 4)}


def parse(candidate):
    """(tile, splits) of a `dmma ...` candidate's name, None for the other kernels."""
    words = candidate.split()
    if words[0] != "dmma":
        return None
    tile, splits = "128", 1
    for w in words[1:]:
        key, value = w.split("=")
        if key == "tile":
            tile = value
        else:
            splits = int(value)
    return tile, splits


def cut(k, splits):
    """`plan::cut_k`: (depth, parts) of k in `splits` slices a multiple of ALIGN deep."""
    if splits == 1:
        return k, 1
    depth = -(-(-(-k // splits)) // ALIGN) * ALIGN
    return depth, -(-k // depth)


def load(paths):
    """{(m, n, k): {(tile, parts): ms}} of the DMMA candidates, and each shape's best time of any kernel."""
    shapes, best = defaultdict(dict), {}
    for path in paths:
        for r in csv.DictReader(open(path), delimiter="\t"):
            key = tuple(int(x) for x in r["shape"].split("*")[0].split("x"))
            ms = float(r["ms"])
            best[key] = min(best.get(key, 1e9), ms)
            p = parse(r["candidate"])
            if p:
                tile, splits = p
                slot = (tile, cut(key[2], splits)[1])
                shapes[key][slot] = min(ms, shapes[key].get(slot, 1e9))
    return shapes, best


def plans(m, n, k, min_depth):
    """Every (tile, depth, parts, share inside C, fill, speed key) the rules score: slice counts 1-16, the wave
    ends and the equal cuts (`double::split_choices`)."""
    outputs = max(m * n, 1)
    max_splits = max(1, min(MAX_PARTIALS // (outputs * 8), k // min_depth, MAX_SPLITS))
    steps = k // ALIGN if k % ALIGN == 0 else 0
    even = [d for i in range(1, math.isqrt(steps) + 1) if steps % i == 0 for d in (i, steps // i)]
    for name, (rows, cols, per_sm) in TILES.items():
        tiles, slots = -(-m // rows) * -(-n // cols), per_sm * SMS
        most = max(1, min(-(-2 * slots // tiles), max_splits))
        ends = [min(max(w * slots // tiles, 1), most) for w in (1, 2)]
        for s in sorted(set(range(1, min(most, 16) + 1)) | {e for e in ends + even if 16 < e <= most}):
            depth, parts = cut(k, s)
            blocks = tiles * parts
            yield name, depth, parts, m * n / (tiles * rows * cols), blocks / (-(-blocks // slots) * slots)


def choose_relative(m, n, k, speed, fixed, depth_cost, min_depth):
    def value(p):
        name, _, parts, inside, fill = p
        slicing = 1 + fixed + (parts + 1) * depth_cost / k if parts > 1 else 1.0
        return inside * fill * speed[name] / slicing
    p = max(plans(m, n, k, min_depth), key=value)
    return p[0], p[2]


def choose_time(m, n, k, speed, depth_cost, launch_us, min_depth):
    def us(p):
        name, depth, parts, inside, fill = p
        t = 2.0 * m * n * k / (FLOP_PER_SM_US * SMS * inside * fill * speed[name])
        if parts == 1:
            return t
        return t * (1 + (parts + 1) * depth_cost / k) + launch_us * (1 + (depth * parts != k))
    p = min(plans(m, n, k, min_depth), key=us)
    return p[0], p[2]


def evaluate(shapes, best, choose, params, show=False):
    """Geometric mean and worst of best / chosen over the shapes whose choice (or the nearest cut of its tile)
    was timed."""
    logs, worst = [], (1.0, None)
    for (m, n, k), timed in shapes.items():
        if min(m, n) <= 4:  # the skinny kernels' (the rules take them first)
            continue
        choice = choose(m, n, k, *params)
        if choice not in timed:
            same = [c for c in timed if c[0] == choice[0]]
            if not same:
                continue
            choice = min(same, key=lambda c: abs(math.log(c[1] / choice[1])))
        r = best[(m, n, k)] / timed[choice]
        logs.append(math.log(r))
        worst = min(worst, (r, (m, n, k), choice), key=lambda x: x[0])
        if show and r < 0.95:
            print(f"  {m}x{n}x{k}: rules {choice} {r:.2f} of the best, {min(timed, key=timed.get)}")
    return math.exp(sum(logs) / len(logs)), worst


def speeds(s64, s32, s3232):
    return {"128": 1.0, "64": s64, "32": s32, "32x32": s3232}


if __name__ == "__main__":
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    shapes, best = load(paths)
    grid = list(itertools.product([0.85, 0.9, 0.95, 1.0], [0.8, 0.85, 0.9], [0.6, 0.7, 0.8]))
    for label, choose, more in [
        ("relative", choose_relative, itertools.product([0.0, 0.1, 0.2], [100.0, 200.0, 400.0], [64, 256])),
        ("time", choose_time, itertools.product([100.0, 200.0, 400.0], [4.0, 8.0, 12.0], [64, 256])),
    ]:
        more = list(more)
        results = sorted(
            ((evaluate(shapes, best, choose, (speeds(*s), *o)), (speeds(*s), *o)) for s in grid for o in more),
            key=lambda x: -x[0][0],
        )
        print(label)
        for (g, w), p in results[:5]:
            print(f"  {g:.4f} worst {w[0]:.2f} at {w[1]} {p}")
        if "--show" in sys.argv:
            evaluate(shapes, best, choose, results[0][1], show=True)
    before = (speeds(0.85, 0.82, 0.69), 0.1, 200.0, 256)
    print("the first build of the four tiles (relative):", evaluate(shapes, best, choose_relative, before))
    product = (speeds(0.95, 0.85, 0.7), 200.0, 8.0, 64)
    print("the product's (time):", evaluate(shapes, best, choose_time, product))
