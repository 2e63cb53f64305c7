"""The object store on a full disk: the real error is reported, and it recovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcoord.stores.objects import ObjectStore
from agentcoord.stores.objects.statuserrors import StoreError

pytestmark = pytest.mark.unit


def _prompt(i: int) -> dict[str, object]:
    return {
        "metadata": {"name": f"hp{i}", "annotations": {"pad": "x" * 4000}},
        "spec": {"kind": "notify"},
    }


async def _fill(store: ObjectStore) -> None:
    for i in range(200):
        await store.create("humanprompts", "default", _prompt(i))


async def test_full_disk_is_reported_and_writes_resume(tmp_path: Path) -> None:
    """SQLITE_FULL reads "disk is full" (not a failed rollback); writes work once space is back."""
    async with ObjectStore(tmp_path / "o.db") as store:
        conn = store._db._conn  # the file's limit stands in for a full disk
        assert conn is not None
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(StoreError, match="full"):
            await _fill(store)
        conn.execute("PRAGMA max_page_count = 1073741823")
        await store.create("humanprompts", "default", _prompt(1000))
        names = {o["metadata"]["name"] for o in (await store.list("humanprompts"))[0]}
        assert "hp1000" in names
