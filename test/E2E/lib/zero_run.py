"""What the data-parallel test scripts share (dp_vs_accum.py,
zero_optim_vs_accum.py, zero_prefetch.py, rank_faults.py): their common
arguments, mpirun's environment and command line, running a tool, and
compiling a model and training it with effrun, read back as its per-step
losses and its checkpoint.
"""
import json
import os
import subprocess

import torch

from train_vs_torch import read_safetensors


def add_common_args(ap):
    """--ranks, --bin (effc and effrun's folder), --work (a scratch folder)."""
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)


def setup(args):
    """One PyTorch thread (the references), the work folder made."""
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)


def mpi_env():
    env = dict(os.environ)
    # mpirun refuses root unless told (CI containers run as root).
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def mpirun(ranks, effrun):
    """The launcher of `ranks` local ranks of effrun."""
    return ["mpirun", "-np", str(ranks), "--oversubscribe", effrun]


def run(cmd):
    """Runs `cmd` (with mpirun's environment); a failure ends the script
    with the command and its output."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=mpi_env())
    if r.returncode != 0:
        raise SystemExit("FAILED: %s\n%s%s" % (" ".join(cmd), r.stdout,
                                               r.stderr))
    return r


class Runs:
    """Compiles one ONNX model with effc and trains it with effrun on one
    data file, each run's files named by its label under `work`."""

    def __init__(self, bin_dir, work, onnx_path, npz_path, effc_flags=()):
        self.effc = os.path.join(bin_dir, "effc")
        self.effrun = os.path.join(bin_dir, "effrun")
        self.work, self.onnx, self.npz = work, onnx_path, npz_path
        self.effc_flags = list(effc_flags)

    def compile(self, label, flags, report=False):
        """The .effx of effc with the common flags and `flags`; with
        `report`, also its --report-json plan: (effx, plan)."""
        effx = os.path.join(self.work, label + ".effx")
        cmd = [self.effc, self.onnx, "-o", effx]
        path = os.path.join(self.work, label + ".json")
        if report:
            cmd += ["--report-json", path]
        run(cmd + self.effc_flags + list(flags))
        return (effx, json.load(open(path))) if report else effx

    def train(self, label, effx, launcher, steps, extra=()):
        """Trains `steps` steps with `launcher + [effx, ...]` (effrun, or
        mpirun's ranks of it): (losses, checkpoint)."""
        log = os.path.join(self.work, label + ".jsonl")
        ckpt = os.path.join(self.work, label + ".safetensors")
        if os.path.exists(log):
            os.remove(log)  # --resume appends to the log
        run(list(launcher) + [effx, "--data", self.npz, "--steps", str(steps),
                              "--log", log, "--save", ckpt, "--quiet"]
            + list(extra))
        return ([json.loads(line)["loss"] for line in open(log)],
                read_safetensors(ckpt))
