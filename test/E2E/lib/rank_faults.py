#!/usr/bin/env python3
"""A rank of a data-parallel run that dies or is stopped alone:
every rank ends, none hangs.

    rank_faults.py --bin BUILD/bin --work DIR

The MLP compiled for 2 ranks at ZeRO stage 3 (every step gathers
parameters, so a rank waits on the other within each step) trains under
`mpirun -np 2` for many steps; once rank 0 has logged a few steps:
- kill: rank 1 is killed (SIGKILL). mpirun must end within the timeout,
  non-zero, with a line naming rank 1 and the signal.
- term: rank 1 alone gets SIGTERM. The ranks agree to stop after the same
  step: each exits 143, the consolidated checkpoint is written, and one
  process resumes from it.
Each case runs under a timeout: a hang is a failure, never a wait.
"""
import argparse
import os
import signal
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_vs_torch as t  # noqa: E402
from zero_run import mpi_env, mpirun  # noqa: E402

TIMEOUT = 60


def rank_pid(mpirun, rank):
    """The pid of effrun rank `rank` started by the mpirun process."""
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
                cmd = open("/proc/%s/cmdline" % pid, "rb").read()
            except OSError:
                continue
            if (b"OMPI_COMM_WORLD_RANK=%d" % rank in env and b"effrun" in cmd
                    and b"OMPI_MCA_orte_hnp_uri" not in env and
                    mpirun.poll() is None):
                return int(pid)
        time.sleep(0.1)
    raise SystemExit("no effrun rank %d appeared" % rank)


def wait_for_steps(log, steps):
    deadline = time.time() + TIMEOUT
    while time.time() < deadline:
        if os.path.exists(log) and sum(1 for _ in open(log)) >= steps:
            return
        time.sleep(0.05)
    raise SystemExit("%s: fewer than %d steps logged" % (log, steps))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    steps = 3000
    model, B, data = t.make("mlp", 1, 0)
    names = list(data)
    onnx_path = os.path.join(args.work, "model.onnx")
    t.export(model, tuple(torch.from_numpy(data[k][:B]) for k in names), names,
             onnx_path)
    big = {k: np.resize(v, (2 * steps * B,) + v.shape[1:]) for k, v in data.items()}
    npz = os.path.join(args.work, "data.npz")
    np.savez(npz, **big)
    effc, effrun = os.path.join(args.bin, "effc"), os.path.join(args.bin, "effrun")
    effx = os.path.join(args.work, "dp.effx")
    subprocess.run([effc, onnx_path, "-o", effx, "--world-size", "2",
                    "--zero", "3", "--optimizer", "adamw"], check=True)
    failures = 0

    def start(label, extra=()):
        log = os.path.join(args.work, label + ".jsonl")
        if os.path.exists(log):
            os.remove(log)
        cmd = mpirun(2, effrun) + [effx, "--data", npz, "--steps", str(steps), "--log", log,
               "--quiet"] + list(extra)
        return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                env=mpi_env()), log

    def finish(label, proc):
        try:
            out, _ = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            print("%s: HANG (still running after %d s) MISMATCH" % (label, TIMEOUT))
            return None, out
        return proc.returncode, out

    # kill -9 of rank 1 mid-run.
    proc, log = start("kill")
    wait_for_steps(log, 3)
    os.kill(rank_pid(proc, 1), signal.SIGKILL)
    rc, out = finish("kill", proc)
    named = [l for l in out.splitlines()
             if "rank 1" in l and "signal 9" in l]
    print("kill: mpirun exit %s; %s" % (rc, named[0].strip() if named else out))
    if rc is None or rc == 0 or not named:
        print("kill: expected a non-zero exit and a line naming rank 1 and "
              "signal 9 MISMATCH")
        failures += 1

    # SIGTERM to rank 1 alone: both ranks stop after the same step and save.
    ckpt = os.path.join(args.work, "term.safetensors")
    proc, log = start("term", ["--save", ckpt])
    wait_for_steps(log, 3)
    os.kill(rank_pid(proc, 1), signal.SIGTERM)
    rc, out = finish("term", proc)
    stopped = [l for l in out.splitlines() if "interrupted after" in l]
    print("term: mpirun exit %s; %d rank(s) said: %s" % (
        rc, len(stopped), stopped[0].split("(")[0].strip() if stopped else out))
    if rc is None or rc == 0 or len(stopped) != 2 or not os.path.exists(ckpt):
        print("term: expected both ranks interrupted, a checkpoint MISMATCH")
        failures += 1
    else:
        at = {l.split("at global step ")[1].split(")")[0] for l in stopped}
        if len(at) != 1:
            print("term: ranks stopped at different steps %s MISMATCH" % at)
            failures += 1
        r = subprocess.run(mpirun(2, effrun) + [
                            effx, "--data", npz, "--steps", "1", "--resume",
                            ckpt, "--quiet"], env=mpi_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=TIMEOUT)
        print("term: resumed from the checkpoint: exit %d" % r.returncode)
        if r.returncode != 0:
            print(r.stdout + " MISMATCH")
            failures += 1

    print("rank faults: %s" % ("PASS" if not failures else
                               "FAIL (%d mismatches)" % failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
