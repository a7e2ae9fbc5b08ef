"""Progress of a long lowering, reported to whoever listens: `lower()` installs a listener for one call, and the
stages below it (the partitioner, `NeutronBackend.preprocess`) emit events without knowing who shows them.

Events: ("partitions", total=N) once the partitioner has tagged N partitions; ("partition", name=tag) after each
partition is converted and compiled. Low in the import order: it needs nothing from the package.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

Listener = Callable[[str, dict], None]
_listener: ContextVar[Listener | None] = ContextVar("executorch_neutron_progress", default=None)


def emit(event: str, **info) -> None:
    listener = _listener.get()
    if listener is not None:
        listener(event, info)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
