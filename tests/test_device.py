"""Which device the models run on: the option, the environment, a GPU when torch sees one."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from perspectrum.cli.app import app
from perspectrum.encoders.device import CPU, ENV, Device, choose, use
from perspectrum.errors import PerspectrumError


@pytest.fixture(autouse=True)
def no_device_set(monkeypatch):
    monkeypatch.setenv(ENV, "")  # restored after each test, so `use` never leaks into the rest of the suite


def test_a_gpu_when_torch_sees_one_else_the_cpu() -> None:
    assert choose(cuda_count=lambda: 0) == CPU
    assert choose(cuda_count=lambda: 2) == Device("cuda")
    assert choose() == CPU  # this machine's torch is the CPU wheel


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


def test_use_sets_the_device_for_this_process_and_its_children(monkeypatch) -> None:
    import os

    use("cpu")
    assert os.environ[ENV] == "cpu" and choose(cuda_count=lambda: 1) == CPU
    with pytest.raises(PerspectrumError):
        use("cuda")  # this machine has no GPU: refused before any work
    assert os.environ[ENV] == "cpu"


def test_the_encoders_run_on_the_chosen_device() -> None:
    from perspectrum.encoders.bi_encoder import Encoder

    assert Encoder().device == CPU
    assert Encoder(device="cpu").device == CPU
    with pytest.raises(PerspectrumError, match="no CUDA GPU"):
        _ = Encoder(device="cuda").device


def test_cli_device_option_errors_in_one_line() -> None:
    runner = CliRunner()
    for option, message in (("gpu", "unknown device 'gpu'"), ("cuda", "torch sees no CUDA GPU here")):
        result = runner.invoke(app, ["discover", "Zoos should be banned", "--device", option])
        assert result.exit_code == 1
        assert result.output.count("\n") == 1 and message in result.output and "Traceback" not in result.output
