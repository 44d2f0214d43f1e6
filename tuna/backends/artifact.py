"""A build directory as bytes and back: what a search stores in ``artifact`` (any backend's
builds, and a search's sources).

The bytes are a gzip-compressed tar of the directory, made reproducible (names sorted,
times, owners and modes normalised, no gzip time stamp) so that identical builds give
identical bytes and are stored once (the store addresses them by sha256). They are capped
(:data:`DEFAULT_MAX_BYTES`; ``spec["artifact_max_bytes"]``): a larger build is a failed
build with that reason, not a giant row.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

from tuna.errors import BackendError

DEFAULT_MAX_BYTES = 12 * 1024 * 1024  # under MariaDB's default max_allowed_packet (16 MiB)


class ArtifactError(BackendError):
    """Raised when an artifact cannot be packed or unpacked as it is (its member would land
    outside its directory)."""


class ArtifactTooLarge(ArtifactError):
    """Raised when a build directory packs to more than its cap."""


def pack(directory: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """``directory`` as reproducible tar.gz bytes, at most ``max_bytes``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(_walk(directory)):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(directory).as_posix())
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                info.mode = 0o755 if info.mode & 0o111 else 0o644
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                if info.isdir():
                    info.mode = 0o755
                tar.addfile(info)
    data = gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
    if len(data) > max_bytes:
        raise ArtifactTooLarge(
            f"the build directory packs to {len(data) / 2**20:.1f} MiB, over the cap of "
            f"{max_bytes / 2**20:.1f} MiB; build less into it or raise artifact_max_bytes"
        )
    return data


def unpack(data: bytes, directory: Path) -> Path:
    """Unpack :func:`pack`'s bytes into ``directory`` (created); returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r") as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4 (and backports)
            tar.extractall(directory, filter="data")
        else:  # an older Python (a worker image's): refuse what the data filter refuses
            for member in tar.getmembers():
                _check_member(member, directory)
            tar.extractall(directory)  # noqa: S202 (members checked above)
    return directory


def _check_member(member: tarfile.TarInfo, directory: Path) -> None:
    root = directory.resolve()
    target = (directory / member.name).resolve()
    if not target.is_relative_to(root) or not (member.isfile() or member.isdir()):
        if member.issym():
            link = (target.parent / member.linkname).resolve()
            if link.is_relative_to(root):
                return
        raise ArtifactError(f"artifact member {member.name!r} would land outside its directory")


def _walk(directory: Path) -> list[Path]:
    out: list[Path] = []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            out.append(Path(root) / name)
    return out
