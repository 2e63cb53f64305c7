"""Regenerate the checked-in Python for proto/agent/v1/*.proto.

Usage: python proto/gen.py [OUT_DIR]   (default: src/agentcoord/proto)
Needs grpcio-tools (the ``dev`` extra); the runtime only needs protobuf.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT.parent / "src" / "agentcoord" / "proto"


def generate(out: Path) -> list[Path]:
    """Run protoc on every .proto under proto/ into ``out``; return the generated files."""
    from grpc_tools import protoc

    sources = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.proto"))
    out.mkdir(parents=True, exist_ok=True)
    args = ["protoc", f"-I{ROOT}", f"--python_out={out}", f"--pyi_out={out}", *sources]
    # protoc resolves sources relative to the include path; run from ROOT.
    with contextlib.chdir(ROOT):
        code = protoc.main(args)
    if code != 0:
        raise SystemExit(f"protoc failed with code {code}")
    return sorted(p for p in out.rglob("*_pb2.py*"))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    for path in generate(target):
        print(path)
