"""Shrink a `docker save` archive to what some engines lack, for `docker load` into them.

    python3 slim_image.py SAVED.tar OUT.tar HAVE...

HAVE: one file per engine, each line the JSON list of an image's layer diff IDs there
(`docker image inspect --format '{{json .RootFS.Layers}}' $(docker images -q)`). A layer's
layer.tar is left out when every engine already has that layer on the same parents (the same
chain ID): docker load (moby's tarexport) looks a layer up by chain ID and opens its file only
when it lacks it. The manifest, the image config and the other layers are copied as they are,
so the loaded image is the same image (the same ID) as the saved one.

bin/test-cluster uses it so that a host whose engine keeps the base, the examples' packages and
Tuna's dependencies from earlier runs receives only Tuna's own layer (a few MB, not 760).
Prints the bytes of layers kept and left out.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from typing import Any


def chain_ids(diff_ids: list[str]) -> list[str]:
    """The chain ID of each layer of an image (the image spec's ChainID)."""
    chains: list[str] = []
    for diff in diff_ids:
        if not chains:
            chains.append(diff)
        else:
            digest = hashlib.sha256(f"{chains[-1]} {diff}".encode()).hexdigest()
            chains.append(f"sha256:{digest}")
    return chains


def engine_chains(path: str) -> set[str]:
    have: set[str] = set()
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and line != "null":
                have.update(chain_ids(json.loads(line)))
    return have


def read_json(archive: tarfile.TarFile, name: str) -> Any:
    f = archive.extractfile(name)
    if f is None:
        raise SystemExit(f"{name} is not a file in the archive")
    return json.load(f)


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    saved, out, haves = argv[0], argv[1], argv[2:]
    everywhere = set.intersection(*(engine_chains(p) for p in haves)) if haves else set()
    with tarfile.open(saved) as src:
        manifest = read_json(src, "manifest.json")
        skip: set[str] = set()
        for image in manifest:
            config = read_json(src, image["Config"])
            diff_ids = config["rootfs"]["diff_ids"]
            if len(diff_ids) != len(image["Layers"]):
                raise SystemExit(f"{saved}: {image['Config']} and its manifest disagree")
            for chain, layer in zip(chain_ids(diff_ids), image["Layers"], strict=True):
                if chain in everywhere:
                    skip.add(layer)
        kept = left = 0
        with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
            for member in src:
                if member.name in skip:
                    left += member.size
                    continue
                if member.isfile():
                    kept += member.size
                    dst.addfile(member, src.extractfile(member))
                else:
                    dst.addfile(member)
    print(f"{kept / 1e6:.1f} MB kept, {left / 1e6:.1f} MB of layers every engine has left out")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
