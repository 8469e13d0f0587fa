"""startup.py: whole-process wall time and peak RSS of the `tapeflow` program beside its
twins, as a user waits for them: `tapeflow --help`, `tapeflow train configs/xor.yaml`,
`python3 -c "import torch"` and keras_xor.py (the same xor run in Keras). Each command runs
`--runs` times (fewer for the Python ones); the median wall time and the largest peak RSS
are printed as `bench <name> <value> <unit>` lines, then a table. A twin whose import fails
is skipped with a note.

With --beside OTHER_BUILD_DIR the tapeflow cases run for that build too, in the same run
(e.g. the default build beside a -DTFL_CUDA=OFF one), with the ratios of wall time and the
difference of peak RSS. Each train run gets a fresh run directory (a run that trains, never
one that finds itself finished).

Usage: python3 tests/bench/startup.py [BUILD_DIR] [--runs N] [--beside OTHER_BUILD_DIR]
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "../.."))
argv = sys.argv[1:]
runs = 20
beside = None
if "--runs" in argv:
    i = argv.index("--runs")
    runs = int(argv[i + 1])
    del argv[i:i + 2]
if "--beside" in argv:
    i = argv.index("--beside")
    beside = os.path.abspath(argv[i + 1])
    del argv[i:i + 2]
build = os.path.abspath(argv[0]) if argv else os.path.join(root, "build")
tapeflow = os.path.join(build, "examples", "tapeflow")


def measure(cmd, n, cwd):
    """Median wall seconds of n runs of cmd (posix_spawn, no copy of this process) and its
    peak RSS (MiB); None if it fails."""
    walls, rss = [], 0
    devnull = os.open(os.devnull, os.O_WRONLY)
    err_path = os.path.join(cwd, "stderr.txt")
    for i in range(n):
        run_cmd = [a.replace("{i}", str(i)) for a in cmd]
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, err, 2)]
        here_was = os.getcwd()
        os.chdir(cwd)
        t0 = time.perf_counter()
        pid = os.posix_spawn(run_cmd[0], run_cmd, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        walls.append(time.perf_counter() - t0)
        os.chdir(here_was)
        os.close(err)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            with open(err_path, errors="replace") as f:
                print("note: %s failed (%d): %s" % (" ".join(cmd), code, f.read().strip()[-300:]))
            os.close(devnull)
            return None
    os.close(devnull)
    # the peak RSS from GNU time (Debian's `time`): the child of a small process, where a
    # child of this Python process would count Python's pages until its exec
    rss_path = os.path.join(cwd, "rss.txt")
    rss_cmd = [a.replace("{i}", "rss") for a in cmd]
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_path] + rss_cmd, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode == 0:
        with open(rss_path) as f:
            rss = int(f.read().split()[-1]) / 1024.0
    return statistics.median(walls), rss


def tapeflow_cases(program, label, tmp):
    return [
        ("help", [program, "--help"], runs, label),
        ("train_xor", [program, "train", os.path.join(root, "configs/xor.yaml"), "--quiet",
                       "--run-dir", os.path.join(tmp, label + "-run-{i}")], max(3, runs // 2),
         label),
    ]


rows = []
with tempfile.TemporaryDirectory() as tmp:
    cases = tapeflow_cases(tapeflow, "tapeflow", tmp)
    if beside:
        cases += tapeflow_cases(os.path.join(beside, "examples", "tapeflow"),
                                "tapeflow_" + os.path.basename(beside.rstrip("/")), tmp)
    cases += [
        ("import_torch", [sys.executable, "-c", "import torch"], 3, "torch"),
        ("train_xor", [sys.executable, os.path.join(here, "keras_xor.py")], 3, "keras"),
    ]
    for name, cmd, n, who in cases:
        r = measure(cmd, n, tmp)
        if r is None:
            continue
        wall, rss = r
        print("bench startup_%s_%s_wall %.4f s" % (who, name, wall))
        print("bench startup_%s_%s_peak_rss %.1f MiB" % (who, name, rss))
        rows.append((who, name, wall, rss))

print()
print("| program | what | wall (median) | peak RSS |")
print("|---|---|---:|---:|")
for who, name, wall, rss in rows:
    shown = "%.1f ms" % (wall * 1e3) if wall < 1 else "%.2f s" % wall
    print("| %s | %s | %s | %.1f MiB |" % (who, name, shown, rss))
if beside:
    other = "tapeflow_" + os.path.basename(beside.rstrip("/"))
    got = {(w, n): (wall, rss) for w, n, wall, rss in rows}
    print()
    for name in ("help", "train_xor"):
        if ("tapeflow", name) in got and (other, name) in got:
            (w1, r1), (w2, r2) = got[("tapeflow", name)], got[(other, name)]
            print("bench startup_%s_wall_ratio %.3f x" % (name, w1 / w2))
            print("bench startup_%s_rss_diff %.2f MiB" % (name, r1 - r2))
