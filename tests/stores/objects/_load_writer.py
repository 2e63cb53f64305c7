"""Child process for the crash test: 16 writers hammer a store, printing each acknowledged write."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agentcoord.stores.objects import ObjectStore


async def main(path: Path, tag: str) -> None:
    async with ObjectStore(path) as store:

        async def writer(w: int) -> None:
            i = 0
            while True:
                name = f"{tag}-w{w}-{i}"
                obj = await store.create(
                    "agents", "default", {"metadata": {"name": name}, "spec": {}}
                )
                sys.stdout.write(f"{name} {obj['metadata']['resourceVersion']}\n")
                sys.stdout.flush()
                i += 1

        await asyncio.gather(*(writer(w) for w in range(16)))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2]))
