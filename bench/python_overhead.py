#!/usr/bin/python3
"""Per-step time of effopt's Python trainer (trainer.step through ctypes)
against effrun on the same .effx and the same batches, in one run.

Exports the example GPT (2 layers d64 T32, batch 8) and the 6-layer GPT
(d256 T128, batch 16), as bench/cpu_vs_torch.py makes them, compiles each with effc, trains N steps with effrun --log (its
per-step time_ms includes copying the batch) and N steps with
effopt.load(effx).step(...) on the same rows, and prints the medians and the
overhead (goal: <= 5%).

usage: /usr/bin/python3 bench/python_overhead.py [--build build] [--steps 60]
       [--threads 2] [--rounds 3] [--models gpt,gpt6]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "python"))


def export(model, out, steps):
    """The model and its batches, as bench/cpu_vs_torch.py makes them."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(SRC, "test", "E2E", "lib"))
    import train_vs_torch as t
    net, B, data = t.make(model, steps, 0)
    names = list(data)
    onnx_path = os.path.join(out, model + ".onnx")
    npz = os.path.join(out, model + ".npz")
    t.export(net, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             onnx_path)
    np.savez(npz, **data)
    return onnx_path, npz


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="gpt,gpt6")
    args = ap.parse_args()
    os.environ["EFFOPT_BUILD_DIR"] = os.path.abspath(args.build)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np
    import effopt

    print(f"{'model':6} {'effrun ms':>10} {'python ms':>10} {'overhead':>9}")
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory() as d:
            onnx_path, data = export(model, d, args.steps)
            effx = os.path.join(d, model + ".effx")
            subprocess.run([os.path.join(args.build, "bin", "effc"), onnx_path,
                            "-o", effx, "--optimizer", "adamw", "--lr", "3e-4"],
                           check=True)
            log = os.path.join(d, "log.jsonl")
            effopt.set_num_threads(args.threads)
            npz = np.load(data)
            # The first steps warm caches and threads in both.
            skip = min(5, args.steps // 4)
            e_rounds, p_rounds = [], []
            # Rounds alternate the two sides, so a burst of load on a shared
            # machine hits both; the best round's median of each is kept.
            for _ in range(args.rounds):
                subprocess.run([os.path.join(args.build, "bin", "effrun"), effx,
                                "--data", data, "--steps", str(args.steps),
                                "--log", log, "--threads", str(args.threads),
                                "-q"], check=True)
                with open(log) as f:
                    effrun_ms = [json.loads(line)["time_ms"] for line in f]
                e_rounds.append(statistics.median(effrun_ms[skip:]))
                trainer = effopt.load(effx)
                arrays = [npz[n] for n in trainer.input_names]
                B = trainer.manifest["batch_size"]
                py_ms = []
                for i in range(args.steps):
                    batch = [a[i * B:(i + 1) * B] for a in arrays]
                    t = time.perf_counter()
                    trainer.step(*batch)
                    py_ms.append((time.perf_counter() - t) * 1000)
                trainer.close()
                p_rounds.append(statistics.median(py_ms[skip:]))
            e, p = min(e_rounds), min(p_rounds)
            print(f"{model:6} {e:10.3f} {p:10.3f} {100 * (p / e - 1):8.1f}%",
                  flush=True)


if __name__ == "__main__":
    main()
