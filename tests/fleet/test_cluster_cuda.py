"""The CUDA worker image on the test cluster (issue #26): ``bin/build_docker.sh --cuda`` builds
it offline from the local base with NVIDIA's wheels (cuda-bindings, NVRTC), and go_fish runs a
cuda session's compile phase in it on the cluster's hosts, which have no GPU and no CUDA
install: the cubins come from the image's NVRTC. Its evaluate phase needs a GPU, and a worker
started in the image without one says so in one line, before claiming anything."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from sqlalchemy import select

from tests.fleet.cluster import Cluster
from tests.fleet.fishing import go_fish, register_hosts, states
from tuna.catalog.importer import import_configs
from tuna.catalog.parsing import read_lines
from tuna.db import Database
from tuna.db.enums import JobState
from tuna.db.models import Job, JobKernel, KernelCache
from tuna.jobs.load import load_jobs
from tuna.sessions import SessionSpec, create_session

pytestmark = pytest.mark.cluster

# Odd shapes, small: a forward 3x3 at stride 2 (CudaImplicitGemmFwd) and its backward data
# (CudaImplicitGemmBwdData).
LINES = """\
MIOpenDriver conv -n 1 -c 3 -H 9 -W 7 -k 19 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 1
MIOpenDriver conv -n 1 -c 3 -H 9 -W 7 -k 19 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -F 2
"""


@pytest.fixture(scope="module")
def cuda_image(cluster: Cluster) -> str:
    """tuna-worker-cuda:ci in every host's engine (built from this checkout, layers cached)."""
    return cluster.cuda_image()


def _session(db: Database, image: str) -> int:
    import_configs(db, read_lines(LINES), tag="cuda-odd")
    session = create_session(
        db,
        SessionSpec(
            arch="sm_90",
            num_cu=132,
            backend="cuda",
            docker_image=image,
            label="cuda image on the cluster",
            environment={"CUDA_MAX_CANDIDATES": "2"},
        ),
    )
    return session.id


def test_go_fish_compiles_a_cuda_session_in_the_cuda_image_on_hosts_without_a_gpu(
    cluster: Cluster, cluster_db: Database, cuda_image: str, tmp_path
) -> None:
    db = cluster_db
    sid = _session(db, cuda_image)
    loaded = load_jobs(db, sid, step="perf", tag="cuda-odd")
    assert loaded.inserted == 2  # the forward implicit GEMM and backward data
    register_hosts(db, cluster)  # CPU hosts: the compile phase runs on any arch

    out = go_fish(cluster, tmp_path / "logs", "--session", str(sid), "--compile")
    assert "drained" in out, out

    with db.session() as s:
        reasons = s.scalars(select(Job.reason).where(Job.session == sid)).all()
    assert states(db, sid) == {JobState.COMPILED: 2}, reasons
    with db.session() as s:
        payloads = [json.loads(r) for r in s.scalars(select(Job.result).where(Job.session == sid))]
        kernels = s.execute(
            select(KernelCache.kernel_name, KernelCache.kernel_args)
            .join(JobKernel, JobKernel.kernel == KernelCache.id)
            .join(Job, Job.id == JobKernel.job)
            .where(Job.session == sid)
        ).all()
    # NVRTC from the image's wheels built them: the hosts have no nvcc, the image no CUDA install
    assert [(p["compiler"], p["arch"]) for p in payloads] == [("nvrtc", "sm_90")] * 2
    assert {p["solver"] for p in payloads} == {"CudaImplicitGemmFwd", "CudaImplicitGemmBwdData"}
    names = [name for name, _ in kernels]
    assert sum(n.startswith("support-") for n in names) == 2, names  # a reference per direction
    assert any(re.fullmatch(r"conv-[0-9a-f]{16}\.cubin", n) for n in names), names
    assert all(args.startswith("--gpu-architecture=sm_90 ") for _, args in kernels)


def test_an_evaluation_worker_in_the_cuda_image_without_a_gpu_says_so_in_one_line(
    cluster: Cluster, cluster_db: Database, cuda_image: str
) -> None:
    sid = _session(cluster_db, cuda_image)
    command = shlex.join(
        [
            "docker", "run", "--rm", "--network=host",
            "-v", f"{cluster.worker_db_url_file}:/run/tuna/db-url:ro",
            "-e", "TUNA_DB_URL_FILE=/run/tuna/db-url",
            cuda_image, "tuna", "worker", "-s", str(sid), "--phase", "eval", "--burst",
        ]
    )  # fmt: skip
    r = cluster.ssh_run(cluster.hosts[0].name, command)
    assert r.exit_status == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"Error: session {sid}: its evaluate phase cannot run on this machine: no CUDA driver "
        "on this host (Failed to dlopen libcuda.so.1): the evaluate phase needs an NVIDIA GPU"
    ]
