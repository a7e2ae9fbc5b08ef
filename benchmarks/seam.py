"""How far each back end leaks out of its folder: the files under src/ outside a back end's folder that name it.

    python benchmarks/seam.py [--list]

A back end is named by the words its folder owns (its NPU's and compiler's names, its kind constant, its package);
the product's own API names (NeutronCompileSpec, NeutronQuantizer, NeutronRuntimeError, executorch_neutron) are not
back-end names. The figure issue 33 asks for: the files outside each folder that mention its back end, and the lines
naming any back end in the modules that must stay neutral (report/, pte.py, numerics.py, runtime/, cli.py).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "executorch_neutron"

NAMES = {
    "neutron": re.compile(r"\bNeutron(?!CompileSpec|Quantizer|CortexMQuantizer|RuntimeError)|\bNEUTRON\b|"
                          r"neutron_estimate|\bneutron[./]|\beIQ\b"),
    "ethos_u": re.compile(r"Ethos-U|ethos_u|\bETHOS_U\b|EthosU|\bvela|\bVela"),
}
NEUTRAL = ("report/", "pte.py", "numerics.py", "runtime/", "cli.py")


def mentions(name: str) -> dict[str, list[int]]:
    """file (relative to the package) -> line numbers naming back end `name`, outside its own folder."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(f"{name}/"):
            continue
        lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if NAMES[name].search(line)]
        if lines:
            found[rel] = lines
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the files")
    args = parser.parse_args()
    for name in NAMES:
        found = mentions(name)
        neutral = {f: n for f, n in found.items() if f.startswith(NEUTRAL)}
        print(f"{name}: {len(found)} files outside {name}/ name it; in the neutral modules "
              f"{len(neutral)} files, {sum(len(n) for n in neutral.values())} lines")
        if args.list:
            for f, n in found.items():
                print(f"    {f}: {len(n)} line(s)" + (" [neutral]" if f in neutral else ""))


if __name__ == "__main__":
    main()
