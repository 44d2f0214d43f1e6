"""Platform facts: parsed from what the machine shows, stable between starts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tuna.platforms.collect import (
    Probe,
    collect,
    cpu_facts,
    gpu_summary,
    nvidia_facts,
    rocm_facts,
)

CPUINFO = """processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz
cpu MHz		: 2000.000
flags		: fpu sse4_2 avx2 avx512f fma

processor	: 1
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz
cpu MHz		: 3100.000
flags		: fpu sse4_2 avx2 avx512f fma
"""

NVIDIA_QUERY = "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\n"
NVIDIA_BANNER = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |\n"
ROCM_JSON = json.dumps(
    {
        "card0": {
            "Card series": "AMD Instinct MI210",
            "Card SKU": "D67301",
            "GFX Version": "gfx90a",
        },
        "card1": {
            "Card series": "AMD Instinct MI210",
            "Card SKU": "D67301",
            "GFX Version": "gfx90a",
        },
        "system": {"Driver version": "6.7.0"},
    }
)


def _runner(outputs: dict[str, str]):
    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(" ".join(argv))

    return run


def test_cpu_facts_read_the_first_processor_and_the_frequency_bounds_not_the_current_one(
    tmp_path: Path,
):
    freq = tmp_path / "cpu0" / "cpufreq"
    freq.mkdir(parents=True)
    (freq / "scaling_governor").write_text("performance\n")
    (freq / "cpuinfo_max_freq").write_text("3200000\n")
    facts = cpu_facts(CPUINFO, 2, tmp_path)
    assert facts == {
        "vendor": "GenuineIntel",
        "model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
        "flags": ["avx2", "avx512f", "fma", "fpu", "sse4_2"],
        "cores": 2,
        "governor": "performance",
        "max_khz": 3200000,
    }


def test_nvidia_gpus_with_driver_memory_and_cuda():
    run = _runner(
        {
            "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader": (
                NVIDIA_QUERY
            ),
            "nvidia-smi": NVIDIA_BANNER,
        }
    )
    assert nvidia_facts(run) == [
        {
            "vendor": "nvidia",
            "model": "NVIDIA H100 80GB HBM3",
            "driver": "550.54.15",
            "memory": "81559 MiB",
            "cuda": "12.4",
        }
    ]
    assert nvidia_facts(_runner({})) == []  # not on PATH


def test_rocm_gpus_with_target_driver_and_rocm_version(tmp_path: Path):
    (tmp_path / ".info").mkdir()
    (tmp_path / ".info" / "version").write_text("6.2.0-66\n")
    run = _runner({"rocm-smi --showproductname --showdriverversion --json": ROCM_JSON})
    gpus = rocm_facts(run, tmp_path)
    assert len(gpus) == 2
    assert gpus[0] == {
        "vendor": "amd",
        "model": "AMD Instinct MI210",
        "sku": "D67301",
        "gfx": "gfx90a",
        "driver": "6.7.0",
        "rocm": "6.2.0-66",
    }
    assert rocm_facts(_runner({"rocm-smi --showproductname --showdriverversion --json": "{"})) == []


def test_the_gpu_summary_is_what_all_gpus_share():
    a = {"vendor": "amd", "model": "MI210", "driver": "6.7.0"}
    b = {"vendor": "amd", "model": "MI210", "driver": "6.8.0"}
    assert gpu_summary([a, b]) == {"vendor": "amd", "model": "MI210", "count": 2}
    assert gpu_summary([a]) == {**a, "count": 1}


def test_collect_is_the_same_document_twice_and_names_the_image_go_fish_passes(tmp_path: Path):
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    env = {"TUNA_IMAGE": "tuna-worker:latest", "TUNA_IMAGE_ID": "sha256:abc"}
    run = _runner({"cc --version": "cc (Debian 12.2.0-14) 12.2.0\nCopyright\n"})
    first = collect(run=run, environ=env, proc=tmp_path, sys_cpu=tmp_path)
    assert first == collect(run=run, environ=env, proc=tmp_path, sys_cpu=tmp_path)
    assert first["container"] == {"image": "tuna-worker:latest", "image_id": "sha256:abc"}
    assert first["toolchain"]["cc"] == "cc (Debian 12.2.0-14) 12.2.0"
    assert first["cpu"]["model"].startswith("Intel(R) Xeon(R)")
    assert "gpus" not in first
    assert "container" not in collect(run=run, environ={}, proc=tmp_path, sys_cpu=tmp_path)


def test_a_probe_that_fails_still_gives_a_platform_saying_why():
    def broken() -> dict:
        raise RuntimeError("boom")

    facts = Probe(broken).facts()
    assert "boom" in facts["error"]
    assert facts["os"]["kernel"]
    assert Probe(lambda: {"cpu": {}}).facts() == {"cpu": {}}
