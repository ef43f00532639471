"""The tables of scripts/device-candle-run, from the logs it writes (ours: candle on prism-gpu; real:
candle on the real cudarc with cuBLAS). Usage: candle-tables.py tests|bench|llama|profile DIR"""
import collections
import csv
import glob
import math
import re
import sys


def matches(path, pattern, value):
    """{name: value(match)} of the lines of the log at `path` that `pattern` matches, group 1 the name."""
    found = (re.match(pattern, line) for line in open(path, errors="replace"))
    return {m.group(1): value(m) for m in found if m}


def tests(out):
    def results(side):
        return matches(f"{out}/candle-tests-{side}.log", r"^test (\S+) \.\.\. (ok|FAILED|ignored)", lambda m: m.group(2))

    ours, real = results("ours"), results("real")
    files = collections.defaultdict(collections.Counter)
    for side, res in (("ours", ours), ("real", real)):
        for name, status in res.items():
            files[name.split("::")[0]][(side, status)] += 1
    lines = ["| candle test file | ours passed | ours failed | real passed | real failed | ignored (ours / real) |",
             "|---|---|---|---|---|---|"]
    total = collections.Counter()
    for f in sorted(files):
        c = files[f]
        total.update(c)
        lines.append(f"| {f} | {c['ours', 'ok']} | {c['ours', 'FAILED']} | {c['real', 'ok']} | "
                     f"{c['real', 'FAILED']} | {c['ours', 'ignored']} / {c['real', 'ignored']} |")
    t = total
    lines.append(f"| **all** | **{t['ours', 'ok']}** | **{t['ours', 'FAILED']}** | **{t['real', 'ok']}** | "
                 f"**{t['real', 'FAILED']}** | {t['ours', 'ignored']} / {t['real', 'ignored']} |")
    lost = sorted(n for n, s in real.items() if s == "ok" and ours.get(n) != "ok")
    both = sorted(n for n, s in real.items() if s == "FAILED" and ours.get(n) == "FAILED")
    gained = sorted(n for n, s in ours.items() if s == "ok" and real.get(n) == "FAILED")
    lines += ["", "NVIDIA libraries each process loaded:"]
    for side in ("ours", "real"):
        libs = open(f"{out}/candle-libs-{side}.txt").read().strip()
        lines.append(f"- {side}: {libs or '(none seen)'}")
    lines += ["", f"Passing with the real cudarc, not with ours: {len(lost)}"]
    lines += [f"- {n} ({ours.get(n, 'not run')})" for n in lost]
    lines += [f"Failing on both sides: {len(both)}"] + [f"- {n}" for n in both]
    lines += [f"Failing only with the real cudarc: {len(gained)}"] + [f"- {n}" for n in gained]
    return "candle-tests.md", lines


def bench(out):
    # One log per side and round (candle-bench-ours.log, or candle-bench-ours-1.log, -2, ... from runs
    # alternated side by side); each bench's best round per side, since noise on a shared host only adds time.
    def times(side):
        pattern = r"^test (\S+) \.\.\. bench:\s+([\d,.]+) ns/iter"
        best = {}
        for log in sorted(glob.glob(f"{out}/candle-bench-{side}.log") + glob.glob(f"{out}/candle-bench-{side}-*.log")):
            for name, ns in matches(log, pattern, lambda m: float(m.group(2).replace(",", ""))).items():
                best[name] = min(ns, best.get(name, ns))
        return best

    ours, real = times("ours"), times("real")
    lines = ["| candle bench | real cudarc (us) | ours (us) | real / ours |", "|---|---|---|---|"]
    logs = []
    for n in (n for n in real if n in ours):
        ratio = real[n] / ours[n]
        logs.append(math.log(ratio))
        lines.append(f"| {n} | {real[n] / 1e3:.2f} | {ours[n] / 1e3:.2f} | {ratio:.2f} |")
    if logs:
        lines.append(f"| **geometric mean, {len(logs)} benches** | | | "
                     f"**{math.exp(sum(logs) / len(logs)):.2f}** |")
        lines.append("")
        lines.append(f"Below 0.90: {sum(1 for v in logs if v < math.log(0.9))}; "
                     f"lowest {math.exp(min(logs)):.2f}")
    one_side = sorted(set(real) ^ set(ours))
    if one_side:
        lines.append("Timed on one side only: " + ", ".join(one_side))
    return "candle-bench.md", lines


def llama(out):
    def results(side):
        return {line.split()[1]: float(line.split()[2])
                for line in open(f"{out}/candle-llama-{side}.log") if line.startswith("RESULT ")}

    ours, real = results("ours"), results("real")
    lines = ["| Llama ~1.2B bf16 | real cudarc (tokens/s) | ours (tokens/s) | ours / real |",
             "|---|---|---|---|"]
    for k in (k for k in real if k in ours):
        lines.append(f"| {k} | {real[k]:.1f} | {ours[k]:.1f} | {ours[k] / real[k]:.2f} |")
    return "candle-llama.md", lines


def is_product(kernel):
    """Whether a kernel is a matrix product: ours (gemm_*) or cuBLAS / cuBLASLt's (nvjet_*, *gemm*,
    *gemv*, xmma, cutlass, the split-K reduction; kernel, Kernel and Kernel2 are cuBLAS's unnamed ones)."""
    words = ("gemm", "gemv", "xmma", "cutlass", "nvjet", "splitkreduce")
    return kernel.startswith("gemm_") or kernel in ("kernel", "Kernel", "Kernel2") or any(w in kernel.lower() for w in words)


def profile(out):
    # ncu's CSV (one row per kernel launch, gpu__time_duration in ns) for each phase and side, from
    # candle-profile-<phase>-<side>.log; each phase's wall time per step from the program's own line.
    lines = []
    for phase in sorted({re.match(r".*candle-profile-(\w+)-(ours|real)\.log", p).group(1)
                         for p in glob.glob(f"{out}/candle-profile-*-*.log")}):
        kernels, wall = {}, {}
        for side in ("ours", "real"):
            path = f"{out}/candle-profile-{phase}-{side}.log"
            rows = [line for line in open(path, errors="replace") if line.startswith('"')]
            walls = [line.strip() for line in open(path, errors="replace") if line.startswith("profiled ")]
            wall[side] = walls[0] if walls else "(no wall time)"
            table = collections.defaultdict(lambda: [0, 0.0])
            for row in csv.DictReader(rows):
                if row.get("Metric Name") == "gpu__time_duration.sum":
                    entry = table[row["Kernel Name"]]
                    entry[0] += 1
                    entry[1] += float(row["Metric Value"].replace(",", "")) / 1e3
            kernels[side] = table
        lines += [f"## {phase}", "", f"- ours: {wall['ours']}", f"- real: {wall['real']}", ""]
        lines += ["| | ours launches | ours GPU us | real launches | real GPU us |", "|---|---|---|---|---|"]
        for label, keep in (("products", is_product), ("everything else", lambda k: not is_product(k))):
            sums = {side: [sum(v[i] for k, v in kernels[side].items() if keep(k)) for i in (0, 1)]
                    for side in kernels}
            lines.append(f"| {label} | {sums['ours'][0]} | {sums['ours'][1]:.0f} | {sums['real'][0]} | "
                         f"{sums['real'][1]:.0f} |")
        lines += ["", "| kernel | side | launches | GPU us | us each |", "|---|---|---|---|---|"]
        ranked = sorted(((v[1], side, k, v[0]) for side in kernels for k, v in kernels[side].items()), reverse=True)
        for us, side, k, n in ranked[:40]:
            lines.append(f"| {k[:90]} | {side} | {n} | {us:.0f} | {us / n:.1f} |")
        lines.append("")
    return "candle-profile.md", lines


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    name, lines = {"tests": tests, "bench": bench, "llama": llama, "profile": profile}[kind](out)
    text = "\n".join(lines)
    print(text)
    with open(f"{out}/{name}", "w") as f:
        f.write(text + "\n")
