"""effopt's Python package against plain PyTorch (1.13, fp32)."""
import copy
import time

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import effopt
from models import CNN, GPT, MLP, Block

STEPS = 4


def assert_close(a, b, what):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=what)


def mlp_data(seed=0, steps=STEPS):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 12, generator=g), torch.randint(0, 5, (16,), generator=g))
            for _ in range(steps)]


def train_both(model, trainer, opt, batches, loss_of):
    ours, theirs = [], []
    for batch in batches:
        ours.append(trainer.step(*batch))
        opt.zero_grad()
        loss = loss_of(model, batch)
        loss.backward()
        opt.step()
        theirs.append(loss.item())
    return ours, theirs


def test_mlp_sgd_momentum_with_loss_fn():
    torch.manual_seed(0)
    model = MLP()
    batches = mlp_data()
    ref = copy.deepcopy(model)
    trainer = effopt.compile(model, example_inputs=(batches[0][0],),
                             loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],),
                             optimizer="sgd", lr=0.1, momentum=0.9,
                             weight_decay=1e-3)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    ours, theirs = train_both(ref, trainer, opt, batches,
                              lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    assert_close(ours, theirs, "losses")
    trainer.copy_to(model)
    for (name, a), b in zip(model.state_dict().items(), ref.state_dict().values()):
        assert_close(a.numpy(), b.numpy(), name)


def test_cnn_batchnorm_adamw_loss_returning_model():
    torch.manual_seed(1)
    model = CNN()
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 1, 8, 8, generator=g), torch.randint(0, 3, (8,), generator=g))
               for _ in range(STEPS)]
    ref = copy.deepcopy(model)
    trainer = effopt.compile(model, example_inputs=batches[0], optimizer="adamw",
                             lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95))
    opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95))
    ours, theirs = train_both(ref, trainer, opt, batches, lambda m, b: m(*b))
    assert_close(ours, theirs, "losses")
    sd = trainer.state_dict()
    for name in ("bn.running_mean", "bn.running_var", "conv.weight", "fc.weight"):
        assert_close(sd[name].numpy(), ref.state_dict()[name].numpy(), name)


def gpt_batches(steps=STEPS, B=4, T=8, vocab=48, seed=2):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        idx = torch.randint(0, vocab, (B, T + 1), generator=g)
        out.append((idx[:, :-1].contiguous(), idx[:, 1:].contiguous()))
    return out


def test_gpt_causal_mask_buffer_stays_unchanged():
    torch.manual_seed(2)
    model = GPT()
    batches = gpt_batches()
    ref = copy.deepcopy(model)
    trainer = effopt.compile(model, example_inputs=batches[0], optimizer="adamw",
                             lr=3e-3, weight_decay=0.1)
    opt = torch.optim.AdamW(ref.parameters(), lr=3e-3, weight_decay=0.1)
    ours, theirs = train_both(ref, trainer, opt, batches, lambda m, b: m(*b)[0])
    assert_close(ours, theirs, "losses")
    sd = trainer.state_dict()
    for i in range(2):
        name = f"blocks.{i}.mask"
        assert torch.equal(sd[name], torch.tril(torch.ones(8, 8))), name
    # Tied weights: one tensor, under both names.
    assert torch.equal(sd["tok.weight"], sd["head.weight"])
    assert_close(sd["head.weight"].numpy(), ref.head.weight.detach().numpy(), "head.weight")


def test_frozen_submodule():
    torch.manual_seed(3)
    model = MLP()
    model.fc1.requires_grad_(False)
    batches = mlp_data(seed=3)
    ref = copy.deepcopy(model)
    frozen_before = model.fc1.weight.detach().clone()
    trainer = effopt.compile(model, (batches[0][0],), loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],), optimizer="adamw",
                             lr=1e-2)
    opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-2)
    ours, theirs = train_both(ref, trainer, opt, batches,
                              lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    assert_close(ours, theirs, "losses")
    sd = trainer.state_dict()
    assert torch.equal(sd["fc1.weight"], frozen_before)
    assert not any(k.startswith("optimizer.fc1") for k in sd), list(sd)
    assert_close(sd["fc2.weight"].numpy(), ref.fc2.weight.detach().numpy(), "fc2.weight")


def test_frozen_submodule_stored_as_nf4():
    """quantize_frozen="nf4" (effc --quantize-frozen nf4): the frozen weight is
    only its packed storage, equal to the PyTorch reference of bitsandbytes'
    NF4 (test/E2E/lib/nf4_vs_torch.py), and trains like PyTorch with the
    reference-dequantized weight."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "E2E", "lib"))
    import nf4_vs_torch as ref_nf4
    torch.manual_seed(5)
    model = MLP()
    model.fc1.requires_grad_(False)
    batches = mlp_data(seed=5)
    ref = copy.deepcopy(model)
    trainer = effopt.compile(model, (batches[0][0],), loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],), optimizer="adamw",
                             lr=1e-2, quantize_frozen="nf4")
    sd = trainer.state_dict()
    assert "fc1.weight" not in sd, list(sd)
    want = ref_nf4.quantize(model.fc1.weight.detach())
    assert torch.equal(sd["fc1.weight.nf4"].view(torch.uint8), want["nf4"])
    assert torch.equal(sd["fc1.weight.absmax"].view(torch.uint8), want["absmax"])
    with torch.no_grad():
        ref.fc1.weight.copy_(ref_nf4.dequantize(want, tuple(ref.fc1.weight.shape)))
    opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-2)
    ours, theirs = train_both(ref, trainer, opt, batches,
                              lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    assert_close(ours, theirs, "losses")
    assert_close(trainer.state_dict()["fc2.weight"].numpy(),
                 ref.fc2.weight.detach().numpy(), "fc2.weight")


@pytest.fixture(scope="module")
def mlp_trainer():
    torch.manual_seed(4)
    model = MLP()
    batches = mlp_data(seed=4, steps=8)
    trainer = effopt.compile(model, (batches[0][0],), loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],), optimizer="adamw", lr=1e-2)
    return model, trainer, batches


def test_memory_report_is_what_the_runtime_allocated(mlp_trainer):
    _, trainer, _ = mlp_trainer
    report = trainer.memory_report()
    assert report.total_bytes == trainer.allocated_bytes()
    assert report.by_category["parameters"] == (12 * 32 + 32 + 32 * 5 + 5) * 4
    assert "memory report" in str(report) and "optimizer state" in str(report)
    assert '"total_bytes"' in report.to_json()


def test_state_dict_round_trip_through_torch_save(mlp_trainer, tmp_path):
    model, trainer, batches = mlp_trainer
    for b in batches[:2]:
        trainer.step(*b)
    torch.save(trainer.state_dict(), tmp_path / "sd.pt")
    other = effopt.compile(MLP(), (batches[0][0],), loss_fn=F.cross_entropy,
                           example_targets=(batches[0][1],), optimizer="adamw", lr=1e-2)
    other.load_state_dict(torch.load(tmp_path / "sd.pt"))
    for b in batches[2:4]:
        assert trainer.step(*b) == other.step(*b)
    # The safetensors checkpoint effrun writes and resumes.
    trainer.save(tmp_path / "ckpt.safetensors")
    other.load(tmp_path / "ckpt.safetensors")
    assert trainer.step(*batches[4]) == other.step(*batches[4])


def test_copy_to_then_pytorch_gives_the_effopt_loss(mlp_trainer):
    model, trainer, batches = mlp_trainer
    trainer.step(*batches[5])
    trainer.copy_to(model)
    x, y = batches[6]
    with torch.no_grad():
        theirs = F.cross_entropy(model(x), y).item()
    assert_close(trainer.step(x, y), theirs, "loss")


def test_bad_inputs_raise_value_error_naming_the_input(mlp_trainer):
    _, trainer, batches = mlp_trainer
    x, y = batches[0]
    assert trainer.input_names == ["x", "target"]
    with pytest.raises(ValueError, match=r"input 'x': shape \[16, 11\], compiled for \[16, 12\]"):
        trainer.step(x[:, :11], y)
    with pytest.raises(ValueError, match=r"input 'x': dtype float64, compiled for float32"):
        trainer.step(x.double(), y)
    with pytest.raises(ValueError, match=r"input 'target': dtype int32"):
        trainer.step(x, y.int().numpy())
    with pytest.raises(ValueError, match=r"takes 2 inputs \(x, target\), got 1"):
        trainer.step(x)
    assert np.isfinite(trainer.step(x.numpy(), y.numpy()))


def test_fit_returns_the_losses(mlp_trainer, capsys):
    _, trainer, batches = mlp_trainer
    losses = trainer.fit(batches, steps=3, log_every=1)
    assert len(losses) == 3 and all(np.isfinite(losses))


def test_unsupported_op_is_one_clear_error():
    class Odd(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.sin(self.fc(x)).sum()

    with pytest.raises(effopt.CompileError, match=r"Sin") as e:
        effopt.compile(Odd(), (torch.randn(2, 4),))
    assert "\n" not in str(e.value)


def test_export_failure_names_the_op():
    class Inner(nn.Module):
        def forward(self, x):
            return torch.linalg.svd(x)[1]

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.inner = Inner()

        def forward(self, x):
            return self.inner(self.fc(x)).sum()

    with pytest.raises(effopt.ExportError, match=r"cannot export Outer in module 'inner': .*'aten::linalg_svd'") as e:
        effopt.compile(Outer(), (torch.randn(4, 4),))
    assert "\n" not in str(e.value)


def test_bad_option_names_the_flag():
    with pytest.raises(effopt.CompileError, match=r"--optimizer"):
        effopt.compile(MLP(), (torch.randn(2, 12),), loss_fn=F.cross_entropy,
                       example_targets=(torch.zeros(2, dtype=torch.long),),
                       optimizer="lion")


def test_memory_budget_splits_the_example_batch():
    torch.manual_seed(5)
    model = MLP()
    # 128 rows a batch: activations, not the state, decide the plan, so
    # splitting the batch is what brings it under a budget just below it.
    g = torch.Generator().manual_seed(5)
    batches = [(torch.randn(128, 12, generator=g),
                torch.randint(0, 5, (128,), generator=g)) for _ in range(4)]
    ref = copy.deepcopy(model)
    kwargs = dict(loss_fn=F.cross_entropy, example_targets=(batches[0][1],),
                  optimizer="sgd", lr=0.1, momentum=0.9)
    whole = effopt.plan(model, (batches[0][0],), **kwargs).total_bytes
    trainer = effopt.compile(model, (batches[0][0],), memory_budget=whole - 64,
                             **kwargs)
    report = trainer.memory_report()
    assert report.total_bytes <= whole - 64
    assert "accum" in report.to_dict()["title"]
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    ours, theirs = train_both(ref, trainer, opt, batches,
                              lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    assert_close(ours, theirs, "losses")
    with pytest.raises(effopt.CompileError, match=r"^cannot fit 1024 bytes: the smallest"):
        effopt.compile(model, (batches[0][0],), memory_budget="1KiB", **kwargs)


def test_effrun_resumes_what_save_wrote(mlp_trainer, tmp_path):
    import json
    import os
    import subprocess
    _, trainer, batches = mlp_trainer
    trainer.save(tmp_path / "ckpt.safetensors")
    x, y = batches[7]
    # effrun's step i reads rows [i*B, (i+1)*B): the batch at the resumed step.
    n = trainer.global_step + 1
    np.savez(tmp_path / "data.npz", x=np.concatenate([x.numpy()] * n),
             target=np.concatenate([y.numpy()] * n))
    effrun = os.path.join(os.environ["EFFOPT_BUILD_DIR"], "bin", "effrun")
    subprocess.run([effrun, trainer.effx_path, "--data", str(tmp_path / "data.npz"),
                    "--steps", "1", "--resume", str(tmp_path / "ckpt.safetensors"),
                    "--log", str(tmp_path / "log.jsonl"), "-q"], check=True)
    with open(tmp_path / "log.jsonl") as f:
        logged = json.loads(f.readline())
    assert logged["step"] == trainer.global_step
    assert logged["loss"] == pytest.approx(trainer.step(x, y), rel=1e-6)


def test_every_effc_flag_is_an_option_by_the_same_name():
    """effc's flags and the C ABI's names cannot drift apart."""
    import os
    import re
    import subprocess
    from effopt import _lib
    effc = os.path.join(os.environ["EFFOPT_BUILD_DIR"], "bin", "effc")
    help_text = subprocess.run([effc, "--help"], capture_output=True, text=True).stdout
    flags = set(re.findall(r"^\s+--([a-z0-9-]+)", help_text, re.M))
    command_line_only = {"help", "help-list", "version", "batch", "config",
                         "constant-input", "emit", "print-pipeline", "report",
                         "report-json", "report-svg", "time", "zero"}
    assert {"lr", "optimizer", "freeze", "memory-budget", "remat"} <= flags
    for flag in sorted(flags - command_line_only):
        with pytest.raises(effopt.CompileError) as e:
            _lib.compile_onnx("/nonexistent/model.onnx", None, None, [(flag, "1")])
        assert "no such option" not in str(e.value), flag
    with pytest.raises(effopt.CompileError, match=r"^--lrr: no such option"):
        _lib.compile_onnx("/nonexistent/model.onnx", None, None, [("lrr", "1")])
    with pytest.raises(effopt.CompileError, match=r"--lr option: 'x' is not a number"):
        _lib.compile_onnx("/nonexistent/model.onnx", None, None, [("lr", "x")])


def test_plan_of_a_billion_parameters_in_seconds():
    # 1.2B parameters on the meta device: nothing is allocated or read.
    model = GPT(vocab=50257, d=2048, layers=20, heads=16, T=256, device="meta")
    for b in model.blocks:
        b.to("meta")
    n = sum(p.numel() for p in model.parameters())
    assert n > 1.0e9
    idx = torch.zeros(2, 256, dtype=torch.long)
    start = time.perf_counter()
    report = effopt.plan(model, (idx, idx), optimizer="adamw")
    seconds = time.perf_counter() - start
    assert seconds < 30, seconds
    # fp32 parameters and AdamW's two moments.
    assert report.regions["state"] >= 3 * 4 * n
    assert report.by_category["parameters"] > 0


def test_mlp_adafactor_torch_options():
    """Adafactor's torch-style options: eps=(None, eps2), d, beta2_decay,
    and its default lr 1e-2, against the transcription of
    torch.optim.Adafactor in test/E2E/lib (PyTorch 1.13 has none)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "E2E", "lib"))
    from adafactor_vs_torch import TorchAdafactor
    torch.manual_seed(2)
    model = MLP()
    batches = mlp_data(seed=2)
    ref = copy.deepcopy(model)
    trainer = effopt.compile(model, example_inputs=(batches[0][0],),
                             loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],),
                             optimizer="adafactor", eps=(None, 1e-2), d=1.5,
                             beta2_decay=-0.6, weight_decay=0.05)
    opt = TorchAdafactor(ref.parameters(), eps=(None, 1e-2), d=1.5,
                         beta2_decay=-0.6, weight_decay=0.05)
    ours, theirs = train_both(ref, trainer, opt, batches,
                              lambda m, b: F.cross_entropy(m(b[0]), b[1]))
    assert_close(ours, theirs, "losses")
    state = trainer.state_dict()
    for name, p in ref.named_parameters():
        assert_close(state[name].numpy(), p.detach().numpy(), name)
        for slot, value in opt.state[p].items():
            if slot != "step":
                key = "optimizer.%s.%s" % (name, slot)
                assert tuple(state[key].shape) == tuple(value.shape), key
                assert_close(state[key].numpy(), value.numpy(), key)
    with pytest.raises(effopt.CompileError, match="clip-threshold must be >= 1"):
        effopt.compile(model, example_inputs=(batches[0][0],),
                       loss_fn=F.cross_entropy, example_targets=(batches[0][1],),
                       optimizer="adafactor", d=0.5)


def test_lora_adapters_train_like_torch_and_merge(tmp_path):
    """lora={...}: peft-named adapters (effopt's initial A loaded into a
    torch LoRA), the same losses, frozen base weights, and the merged
    weights are W + alpha/r B A."""
    torch.manual_seed(5)
    model = MLP()
    batches = mlp_data(seed=5)
    base = copy.deepcopy(model)
    trainer = effopt.compile(model, (batches[0][0],), loss_fn=F.cross_entropy,
                             example_targets=(batches[0][1],), optimizer="adamw",
                             lr=1e-2, lora={"r": 4, "lora_alpha": 8,
                                            "target_modules": ["fc1"]})
    sd = trainer.state_dict()
    a0, b0 = sd["fc1.lora_A.weight"].clone(), sd["fc1.lora_B.weight"].clone()
    assert a0.shape == (4, 12) and b0.shape == (32, 4) and not b0.any()
    assert a0.abs().max() <= 1 / 12 ** 0.5
    assert not any(k.startswith("fc2.lora") for k in sd), list(sd)
    a = a0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    base.requires_grad_(False)
    opt = torch.optim.AdamW([a, b], lr=1e-2)

    def loss_of(m, batch):
        x, y = batch
        h = torch.relu(m.fc1(x) + (x @ a.t() @ b.t()) * 2.0)
        return F.cross_entropy(m.fc2(h), y)

    ours, theirs = train_both(base, trainer, opt, batches, loss_of)
    assert_close(ours, theirs, "losses")
    sd = trainer.state_dict()
    assert torch.equal(sd["fc1.weight"], model.fc1.weight.detach())
    assert_close(sd["fc1.lora_B.weight"].numpy(), b.detach().numpy(), "lora_B")
    trainer.save_merged_lora(tmp_path / "merged.safetensors")
    with open(tmp_path / "merged.safetensors", "rb") as f:
        raw = f.read()
    import json
    import struct
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    assert sorted(k for k in header if k != "__metadata__") == \
        ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    lo, hi = header["fc1.weight"]["data_offsets"]
    merged = np.frombuffer(raw[8 + n + lo:8 + n + hi], np.float32).reshape(32, 12)
    want = (sd["fc1.weight"].double() + 2.0 * sd["fc1.lora_B.weight"].double()
            @ sd["fc1.lora_A.weight"].double()).numpy()
    np.testing.assert_allclose(merged, want, rtol=1e-6, atol=1e-7)


def test_offload_optimizer_trains_bit_identically_with_less_device_memory():
    """offload="optimizer": the optimizer's state in the host region; the
    same losses and weights to the bit, the device's bytes less by exactly
    the host region, which the report shows apart."""
    torch.manual_seed(6)
    model = MLP()
    batches = mlp_data(seed=6)
    trainers = {}
    for offload in ("none", "optimizer"):
        trainers[offload] = effopt.compile(
            model, (batches[0][0],), loss_fn=F.cross_entropy,
            example_targets=(batches[0][1],), optimizer="adamw", lr=1e-2,
            offload=offload)
    losses = {k: [t.step(*b) for b in batches] for k, t in trainers.items()}
    assert losses["none"] == losses["optimizer"]
    on, off = trainers["none"].state_dict(), trainers["optimizer"].state_dict()
    assert sorted(on) == sorted(off)
    for name in on:
        assert torch.equal(on[name], off[name]), name
    r_on = trainers["none"].memory_report()
    r_off = trainers["optimizer"].memory_report()
    assert r_on.host_bytes == 0 < r_off.host_bytes
    assert r_on.total_bytes - r_off.total_bytes == r_off.host_bytes
    assert r_off.total_bytes == trainers["optimizer"].allocated_bytes()
    assert "optimizer state" in str(r_off) and "offloaded" in str(r_off)
