"""Which device the models run on: the option, the environment, a GPU when torch sees one.

The choice is tested with the GPUs torch sees stood in for, so these tests mean the same on
any machine; the last ones run only where torch sees a CUDA GPU, and check that the models
give there what they give on the CPU."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from perspectrum.cli.app import app
from perspectrum.encoders import device
from perspectrum.encoders.device import CPU, ENV, Device, choose, use
from perspectrum.errors import PerspectrumError


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


GPUS = _gpus()
on_a_gpu = pytest.mark.skipif(GPUS == 0, reason="torch sees no CUDA GPU on this machine")


@pytest.fixture(autouse=True)
def no_device_set(monkeypatch):
    monkeypatch.setenv(ENV, "")  # restored after each test, so `use` never leaks into the rest of the suite


@pytest.fixture
def no_gpu(monkeypatch):
    """torch sees no GPU, whatever this machine has."""
    monkeypatch.setattr(device, "_cuda_count", lambda: 0)


def test_a_gpu_when_torch_sees_one_else_the_cpu(monkeypatch) -> None:
    assert choose(cuda_count=lambda: 0) == CPU
    assert choose(cuda_count=lambda: 2) == Device("cuda")
    assert choose() == (Device("cuda") if GPUS else CPU)  # asked of this machine's torch
    monkeypatch.setattr(device, "_cuda_count", lambda: 1)
    assert choose() == Device("cuda")  # asked when called, not when the module was imported


def test_the_option_then_the_environment_override_the_default(monkeypatch) -> None:
    assert choose("cpu", cuda_count=lambda: 1) == CPU
    assert choose(" CUDA:1 ", cuda_count=lambda: 2) == Device("cuda:1")
    monkeypatch.setenv(ENV, "cpu")
    assert choose(cuda_count=lambda: 1) == CPU
    assert choose("cuda", cuda_count=lambda: 1) == Device("cuda")  # the option wins over the environment


def test_a_gpu_torch_cannot_see_or_an_unknown_name_is_a_one_line_error() -> None:
    with pytest.raises(PerspectrumError, match="torch sees no CUDA GPU here"):
        choose("cuda", cuda_count=lambda: 0)
    with pytest.raises(PerspectrumError, match="torch sees 1 CUDA GPU"):
        choose("cuda:1", cuda_count=lambda: 1)
    for bad in ("gpu", "cuda:", "cuda:x", "tpu"):
        with pytest.raises(PerspectrumError, match="unknown device"):
            choose(bad, cuda_count=lambda: 1)


def test_each_device_runs_in_its_own_form() -> None:
    assert (CPU.gpu, CPU.batch_size, CPU.quantize, CPU.half) == (False, 64, True, False)
    gpu = Device("cuda:0")
    assert (gpu.gpu, gpu.batch_size, gpu.quantize, gpu.half) == (True, 256, False, True)


def test_use_sets_the_device_for_this_process_and_its_children(monkeypatch, no_gpu) -> None:
    import os

    use("cpu")
    assert os.environ[ENV] == "cpu" and choose(cuda_count=lambda: 1) == CPU
    with pytest.raises(PerspectrumError):
        use("cuda")  # no GPU: refused before any work
    assert os.environ[ENV] == "cpu"


def test_the_encoders_run_on_the_chosen_device(no_gpu) -> None:
    from perspectrum.encoders.bi_encoder import Encoder

    assert Encoder().device == CPU
    assert Encoder(device="cpu").device == CPU
    with pytest.raises(PerspectrumError, match="no CUDA GPU"):
        _ = Encoder(device="cuda").device


def test_cli_device_option_errors_in_one_line(no_gpu) -> None:
    runner = CliRunner()
    for option, message in (("gpu", "unknown device 'gpu'"), ("cuda", "torch sees no CUDA GPU here")):
        result = runner.invoke(app, ["discover", "Zoos should be banned", "--device", option])
        assert result.exit_code == 1
        assert result.output.count("\n") == 1 and message in result.output and "Traceback" not in result.output


@on_a_gpu
def test_on_a_gpu_the_encoder_gives_the_cpu_vectors(encoder) -> None:
    """Half precision on the GPU: the same vectors as the CPU's float32 up to rounding."""
    import numpy as np

    from perspectrum.encoders.bi_encoder import Encoder

    texts = ["Zoos should be banned.", "Cages are cruel to animals that roam for miles.", "Homework helps."] * 40
    gpu = Encoder(device="cuda")
    assert gpu.device == Device("cuda")
    on_gpu, on_cpu = gpu.encode(texts, batch_size=256), Encoder(device="cpu").encode(texts)
    assert on_gpu.dtype == np.float32 and on_gpu.shape == on_cpu.shape
    assert float(np.min(np.sum(on_gpu * on_cpu, axis=1))) > 0.999


@on_a_gpu
def test_on_a_gpu_a_fine_tune_trains_there_and_hands_back_a_cpu_model() -> None:
    import math

    from perspectrum.train.fine_tune import TrainParams, fine_tune

    pairs = [("Zoos should be banned", "Cages are cruel"), ("Zoos should be banned", "Zoos save species")] * 8
    model, _, stats = fine_tune(pairs, [1.0, 0.0] * 8, TrainParams(epochs=1, batch_size=4, max_length=32, seed=5),
                                device=Device("cuda"))
    assert stats["device"] == "cuda" and stats["steps"] == 4 and math.isfinite(stats["final_loss"])
    assert {p.device.type for p in model.parameters()} == {"cpu"} and not model.training
