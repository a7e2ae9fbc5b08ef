"""`NeutronCompileSpec`: every option of a lowering, parsed once, and what each back end may read of it.

This is the only module that reads or writes ExecuTorch `CompileSpec` lists. Everything downstream (partitioner,
preprocess, the NPU compile step) receives the frozen dataclass, never raw key/value bytes. Each field's metadata
says which back-end kind owns it (`kind`: None for the front end); a back end reads its own options through its
view (`neutron/options.py`, `ethos_u/options.py`), and an option of one back end set on another's target is an
error, decided here from that metadata alone.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # imported where built: the CLI parses its arguments before torch is imported
    from executorch.exir.backend.compile_spec_schema import CompileSpec

from .target import ETHOS_U, KIND_NAMES, NEUTRON, TRANSPOSE_FORMS, AnyTarget, get_target

_KEY_PREFIX = "neutron."

#: `constraints`: which operator table the partitioner follows (the registry tags each constraint with these).
CONSTRAINT_PROFILES: dict[str, str] = {
    "documented": "the operator table of NXP's documentation (the most defensive)",
    "sdk-current": ("what NXP's current eIQ Neutron SDK release (as in ExecuTorch 1.5.1) delegates: softmax, "
                    "max_pool2d, resize, prelu and mul without channel- or size-multiple rules, broadcasting "
                    "add/sub/mul, mean/sum/amax/amin over any dims, clamp with any bounds, sub, maximum, minimum, "
                    "exp, log, rsqrt, padding of any dim and reflection padding"),
}
DEFAULT_PROFILE = "sdk-current"


def _option(default, kind: str | None = None, target_field: bool = False, cli: str = "", help: str = "",
            flag: str | None = None, metavar: str | None = None, choices: tuple = ()):
    """A spec field: `kind` is the back-end kind whose view reads it (None: the front end); `target_field` marks a
    field that, when given, replaces the target's field of the same name (`target_info`). A back end's option also
    says how the CLI offers it (`help`; `flag`, default --<name>; a bool whose default is True is offered as a flag
    that sets it False), so the CLI lists every back end's options without naming any (`cli_options`)."""
    return field(default=default, metadata={"kind": kind, "target_field": target_field, "help": help,
                                            "flag": flag, "metavar": metavar, "choices": choices})


@dataclass(frozen=True)
class CliOption:
    """How the CLI offers a back end's option: `argparse` keywords for `flag`, and the field it sets."""

    name: str
    flag: str
    kind: str
    help: str
    metavar: str | None
    choices: tuple
    default: object

    @property
    def switch(self) -> bool:
        return isinstance(self.default, bool)

    def add_to(self, group) -> None:
        """Add the option to an argparse group (or parser); its value lands in `args.<name>`."""
        words = f"{KIND_NAMES.get(self.kind, self.kind)} targets: {self.help}"
        if self.switch:
            group.add_argument(self.flag, dest=self.name, default=self.default, help=words,
                               action="store_false" if self.default else "store_true")
        else:
            group.add_argument(self.flag, dest=self.name, default=self.default, help=words, metavar=self.metavar,
                               choices=self.choices or None)


def cli_options() -> list[CliOption]:
    """The back ends' own options (fields with a `kind`), in field order, as the CLI offers them."""
    return [CliOption(f.name, f.metadata["flag"] or "--" + f.name.replace("_", "-"), f.metadata["kind"],
                      f.metadata["help"], f.metadata["metavar"], tuple(f.metadata["choices"]), f.default)
            for f in dataclasses.fields(NeutronCompileSpec) if f.metadata.get("kind")]


@dataclass(frozen=True)
class NeutronCompileSpec:
    """Options of the Neutron backend.

    target: Neutron target name (`imxrt700`, `mcxn94x`, `imx95`; called `config` in NXP's converter), or an Arm
        Ethos-U target (`imx93`, `ethos-u55-128`, `ethos-u55-256`, `ethos-u65-256`, `ethos-u85-128` ...
        `ethos-u85-2048`), lowered through Vela.
    extra_flags: extra command-line style flags passed verbatim to the eIQ Neutron converter (SDK only), or to
        Vela for an Ethos-U target (e.g. "--optimise=Size"; a flag given here replaces the target's own).
    operators_not_to_delegate: operators kept on the CPU, e.g. ("aten::convolution", "aten.mul.Tensor").
    use_neutron_for_format_conversion: as NXP documents it. True (default): each partition takes and returns
        ExecuTorch's channels-first tensors and converts to/from NHWC with Transpose ops inside the partition, so
        the NPU does it (payload format flags 0). False: rank-4 partition inputs/outputs are channels-last (format
        flags 1) and the runtime transposes NCHW<->NHWC on the CPU at every partition boundary.
    fetch_constants_to_sram: converter option: prefetch weights to SRAM (needed when they live in FLASH).
    dump_kernel_selection_code: converter option: keep the kernel-selection code, one file per partition.
        (The converter-only options, use_profiling included, cannot act on a host-reference payload: a warning
        names them.)
    intermediates_dir: when set, preprocess writes `<delegation_tag>.tflite` (and converter dumps) here.
    use_profiling: converter option: profiling microcode; the converter's console is parsed into the debug
        handle map (Neutron kernel index -> edge debug handles, see npu/profile_map.py).
    reference: force the host-reference payload even when the eIQ Neutron SDK is installed.
    custom_delegation_options: names of opportunistic delegation options (see SUPPORTED_OPS.md).
    constraints: the operator table the partitioner follows: "sdk-current" (default: what NXP's current SDK
        release delegates) or "documented" (NXP's documented table); see CONSTRAINT_PROFILES and SUPPORTED_OPS.md.
        Both are Neutron's tables: an Ethos-U target ignores the profile (Vela's limits apply instead).
    embed_reference: Ethos-U targets: also store each partition's int8 TFLite in the .pte (named data) so the host
        runtime can run it in LiteRT; False gives a device-only .pte (the Vela payload alone).
    system_config, memory_mode, config_ini: Ethos-U targets: Vela's `--system-config`, `--memory-mode` and
        `--config` (an .ini file; "Arm/vela.ini" is the one Vela ships), as ExecuTorch's `ethosu_compile_spec`
        names them; None keeps the target's (for U85, Arm's defaults Ethos_U85_SYS_DRAM_Mid / Sram_Only).
    transpose_form: Ethos-U targets: how NCHW<->NHWC transposes (a contiguous model's partition I/O) are written
        for Vela: "4d" (one rank-4 TRANSPOSE) or "collapsed" (reshape to rank 3, TRANSPOSE, reshape back: Vela runs
        it in one pass instead of two, cheaper on the U55, far dearer on the U85); None keeps the target's
        ("collapsed" on ethos-u55-*, "4d" elsewhere). Same numbers either way (a transpose moves bytes only).
    """

    target: str = "imxrt700"
    extra_flags: str = ""
    operators_not_to_delegate: tuple[str, ...] = ()
    use_neutron_for_format_conversion: bool = True
    fetch_constants_to_sram: bool = _option(False, NEUTRON, help="prefetch weights to SRAM")
    dump_kernel_selection_code: bool = _option(False, NEUTRON, help="keep the kernel-selection code")
    intermediates_dir: str | None = None
    use_profiling: bool = _option(False, NEUTRON, help="profiling microcode (eIQ SDK)")
    reference: bool = _option(False, NEUTRON, help="host-reference payloads even with the eIQ SDK")
    custom_delegation_options: tuple[str, ...] = ()
    constraints: str = DEFAULT_PROFILE
    embed_reference: bool = _option(True, ETHOS_U, flag="--device-only",
                                    help="leave the partitions' reference TFLite out of the .pte (embed_reference="
                                         "False): smaller, runs only on the device")
    system_config: str | None = _option(None, ETHOS_U, target_field=True, metavar="NAME",
                                        help="Vela's system config, as Arm's ethosu_compile_spec names it; replaces "
                                             "the target's own")
    memory_mode: str | None = _option(None, ETHOS_U, target_field=True, metavar="NAME",
                                      help="Vela's memory mode, as Arm's ethosu_compile_spec names it; replaces the "
                                           "target's own")
    config_ini: str | None = _option(None, ETHOS_U, target_field=True, metavar="FILE",
                                     help="Vela's configuration file (default: Vela's bundled Arm/vela.ini), as Arm's "
                                          "ethosu_compile_spec names it; replaces the target's own")
    transpose_form: str | None = _option(None, ETHOS_U, target_field=True, choices=TRANSPOSE_FORMS,
                                         help="NCHW<->NHWC transposes as one rank-4 TRANSPOSE (4d) or collapsed to "
                                              "rank 3 between reshapes (collapsed); default: the target's (collapsed "
                                              "on ethos-u55-*, where Vela runs it in one pass; see "
                                              "docs/ethos_u_vs_tflite.md)")

    def __post_init__(self) -> None:
        tgt = get_target(self.target)  # validates the name, raises with the valid list
        object.__setattr__(self, "target", tgt.name)
        for kind in sorted(KIND_NAMES.keys() - {tgt.kind}):
            given = [f.name for f in dataclasses.fields(self)
                     if f.metadata.get("kind") == kind and getattr(self, f.name) != f.default]
            if given:
                raise ValueError(f"{', '.join(given)} apply to {KIND_NAMES[kind]} targets only; target {tgt.name!r} "
                                 f"is {KIND_NAMES[tgt.kind]}: drop them or pick a {KIND_NAMES[kind]} target")
        if self.transpose_form not in (None, *TRANSPOSE_FORMS):
            raise ValueError(f"unknown transpose_form {self.transpose_form!r}: use one of {', '.join(TRANSPOSE_FORMS)}")
        for name in ("operators_not_to_delegate", "custom_delegation_options"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(str(v) for v in value))
        if self.constraints not in CONSTRAINT_PROFILES:
            raise ValueError(f"unknown constraints profile {self.constraints!r}: use one of "
                             f"{', '.join(CONSTRAINT_PROFILES)}")
        if self.intermediates_dir is not None:
            object.__setattr__(self, "intermediates_dir", str(self.intermediates_dir))

    @property
    def target_info(self) -> AnyTarget:
        """The target's facts (`target.py`) for any back end; `target_info.kind` names the back end that lowers it.
        Options marked `target_field` (Ethos-U's `system_config`, `memory_mode`, `config_ini`, `transpose_form`)
        replace the target's own when given."""
        tgt = get_target(self.target)
        changes = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                   if f.metadata.get("target_field") and getattr(self, f.name) is not None}
        return dataclasses.replace(tgt, **changes) if changes else tgt

    def replace(self, **changes) -> "NeutronCompileSpec":
        return dataclasses.replace(self, **changes)

    def to_compile_specs(self) -> list[CompileSpec]:
        """Encode as ExecuTorch compile specs: one entry per field, JSON value, in field order."""
        from executorch.exir.backend.compile_spec_schema import CompileSpec

        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = list(value)
            out.append(CompileSpec(_KEY_PREFIX + f.name, json.dumps(value, sort_keys=True).encode()))
        return out

    @staticmethod
    def written_by_us(specs: Sequence[CompileSpec]) -> bool:
        """Whether a CompileSpec list is one `to_compile_specs` wrote (its keys carry our prefix)."""
        return any(spec.key.startswith(_KEY_PREFIX) for spec in specs)

    @classmethod
    def from_compile_specs(cls, specs: Sequence[CompileSpec]) -> "NeutronCompileSpec":
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {}
        for spec in specs:
            if not spec.key.startswith(_KEY_PREFIX):
                continue
            name = spec.key[len(_KEY_PREFIX):]
            if name not in known:
                raise ValueError(f"unknown Neutron compile spec key {spec.key!r}; known: {sorted(known)}")
            value = json.loads(bytes(spec.value).decode())
            kwargs[name] = tuple(value) if isinstance(value, list) else value
        return cls(**kwargs)

    @staticmethod
    def stored_options(specs: Sequence[CompileSpec]) -> dict[str, object]:
        """A CompileSpec list as a .pte stores it, for display: an entry `to_compile_specs` wrote under its option
        name, any other entry under its key; each value JSON-decoded where it is JSON, else as hex."""
        out: dict[str, object] = {}
        for spec in specs:
            value = bytes(spec.value)
            try:
                out[spec.key.removeprefix(_KEY_PREFIX)] = json.loads(value.decode())
            except (UnicodeDecodeError, json.JSONDecodeError):
                out[spec.key] = value.hex()
        return out

    @classmethod
    def coerce(cls, spec: "NeutronCompileSpec | Sequence[CompileSpec] | None" = None, **kwargs) -> "NeutronCompileSpec":
        """Accept a spec, a CompileSpec list, or keyword options."""
        if spec is None:
            return cls(**kwargs)
        if isinstance(spec, cls):
            return spec.replace(**kwargs) if kwargs else spec
        return cls.from_compile_specs(spec).replace(**kwargs)
