"""agentcoord.kernel.lazy: modules whose code runs on first use, safely from any thread."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcoord.kernel import lazy as _lazy

pytestmark = pytest.mark.unit

_SLOW_MODULE = """
import time
RAN = getattr(__import__("builtins"), "_lazy_test_runs", 0) + 1
__import__("builtins")._lazy_test_runs = RAN
time.sleep(0.2)  # a reader in another thread arrives while this runs
LAST = "complete"
"""


@pytest.fixture
def slow_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"lazy_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(_SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("builtins._lazy_test_runs", 0, raising=False)
    yield name
    sys.modules.pop(name, None)
    _lazy._deferred[:] = [m for m in _lazy._deferred if m.__name__ != name]


def test_code_runs_on_first_attribute_not_on_import(slow_module: str) -> None:
    """Registering and importing it runs nothing; the first attribute runs it once."""
    import builtins

    module = _lazy.on_first_use(slow_module)
    again = __import__(slow_module)
    assert again is module
    assert builtins._lazy_test_runs == 0  # type: ignore[attr-defined]
    assert module.LAST == "complete"
    assert module.RAN == 1
    assert module.LAST == "complete"
    assert builtins._lazy_test_runs == 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = module.missing


def test_a_reader_in_another_thread_waits_for_the_whole_module(slow_module: str) -> None:
    """While load_deferred runs the code in one thread, a reader elsewhere gets the finished
    module, never a half-run one (3.11's LazyLoader fails this)."""
    module = _lazy.on_first_use(slow_module)
    loader = threading.Thread(target=_lazy.load_deferred)
    loader.start()
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.append(module.LAST))
    reader.start()
    loader.join()
    reader.join()
    assert seen == ["complete"]
    assert module.RAN == 1


def test_an_imported_module_is_returned_as_is() -> None:
    """A module imported already is not wrapped again."""
    assert _lazy.on_first_use("json") is sys.modules["json"]
