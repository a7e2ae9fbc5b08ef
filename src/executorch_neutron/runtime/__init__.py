"""Host runtime: run .pte files with our delegates on Linux (host-reference payloads execute in LiteRT).

    from executorch_neutron.runtime import run
    outputs = run(result.pte, [x])            # list[torch.Tensor]

`load(pte)` returns a program to execute repeatedly. The host back-end C++ library is compiled on first use
(needs g++) and registered with the stock `executorch.runtime.Runtime` once per process.
"""

from .errors import HostBuildError, NeutronRuntimeError
from .host import HostProgram, load, run

__all__ = ["HostBuildError", "HostProgram", "NeutronRuntimeError", "load", "run"]
