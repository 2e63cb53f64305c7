"""Claims stress run (docs/claims.md "Rules"): CLIENTS session processes x ATTEMPTS claim attempts
on KEYS keys through MCP, then the invariants are checked on the shadow log: never two write
holders at once (fencing tokens + observed hold intervals), reads share, every attempt is
acquired or names the holder.

Usage: PYTHONPATH=src python bench/claims_stress.py [--clients 32] [--attempts 10000] [--keys 100]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import FAKES, Daemon, make_env  # noqa: E402
from tests.tools.test_claims_stress import check_shadow_log, run_stress  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--attempts", type=int, default=10000)
    ap.add_argument("--keys", type=int, default=100)
    ns = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="agentcoord-stress-"))
    claude = root / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
    claude.chmod(0o755)
    (root / "d").mkdir()
    d = Daemon(root / "d", make_env(root / "d", AGENTCOORD_LOG_LEVEL="WARNING")).start()
    try:
        t = time.perf_counter()
        records = run_stress(d, claude, ns.clients, ns.attempts, ns.keys)
        took = time.perf_counter() - t
    finally:
        d.stop()
    check_shadow_log(records)
    acquired = [r for r in records if r["acquired"]]
    reads = [r for r in acquired if r["mode"] == "read"]
    print(
        f"{ns.clients} clients x {ns.attempts} attempts on {ns.keys} keys: {len(records)} "
        f"attempts in {took:.1f}s ({len(records) / took:,.0f}/s), {len(acquired)} acquired "
        f"({len(reads)} read), {len(records) - len(acquired)} contended; invariants hold"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
