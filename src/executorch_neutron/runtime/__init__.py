"""Host runtime: run .pte files with our delegates on Linux (host-reference payloads execute in LiteRT).

    from executorch_neutron.runtime import run
    outputs = run(result.pte, [x])            # list[torch.Tensor], computed in a child process

`run` executes in a child process (runtime/isolated.py): a kernel or LiteRT that ends its process raises
`HostRunCrashed`, one line saying where, instead of ending the caller's.

`load(pte)` returns a program to execute repeatedly. The host back-end C++ library is compiled on first use
(needs g++) and registered with the stock `executorch.runtime.Runtime` once per process.
"""

from .errors import HostBuildError, NeutronRuntimeError
from .host import HostProgram, load, run
from .isolated import HostRunCrashed

__all__ = ["HostBuildError", "HostProgram", "HostRunCrashed", "NeutronRuntimeError", "load", "run"]
