"""Writing outputs: a real Ctrl-C around the rename, symlinked and long output names, and outputs that would
replace an input or another output (atomic.check_distinct)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from executorch_neutron.core import atomic

pytestmark = pytest.mark.fast


def _interrupt_in(monkeypatch, name: str, after: bool) -> None:
    """Send a real SIGINT from inside os.<name> (before or after its real work), to this thread: `raise_signal`
    delivers it before returning, where `os.kill(getpid())` may reach another thread of a multi-threaded process
    (torch's and LiteRT's pools) and run Python's handler only later, under load after the write is done."""
    real = getattr(os, name)

    def patched(*args):
        if not after:
            signal.raise_signal(signal.SIGINT)
        result = real(*args)
        if after:
            signal.raise_signal(signal.SIGINT)
        return result

    monkeypatch.setattr(os, name, patched)


# where the Ctrl-C lands -> what the target holds afterwards
INTERRUPTS = {
    "temporary_complete_before_rename": ("fsync", False, b"old valid content"),
    "while_setting_permissions": ("chmod", False, b"old valid content"),
    "right_after_rename": ("replace", True, b"new" * 1000),
}


@pytest.mark.parametrize("where", INTERRUPTS, ids=INTERRUPTS.keys())
def test_ctrl_c_around_the_rename_keeps_one_complete_file(tmp_path, monkeypatch, where):
    name, after, expected = INTERRUPTS[where]
    target = tmp_path / "model.pte"
    target.write_bytes(b"old valid content")
    _interrupt_in(monkeypatch, name, after)
    with pytest.raises(KeyboardInterrupt):
        atomic.write_bytes(target, b"new" * 1000)
    monkeypatch.undo()
    assert target.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pte"]  # no temporary file left behind
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# output name -> (where its symlink points, relative to tmp_path, or None)
OUTPUTS = {
    "symlink_into_firmware": ("model.pte", "firmware/model.pte"),
    "symlink_chain": ("model.pte", "link2.pte"),
    "long_legal_name": ("p" * 251 + ".pte", None),
    "plain": ("out.pte", None),
}


@pytest.mark.parametrize("case", OUTPUTS, ids=OUTPUTS.keys())
def test_output_is_written_through_symlinks_and_long_names_work(tmp_path, case):
    name, link_to = OUTPUTS[case]
    (tmp_path / "firmware").mkdir()
    (tmp_path / "firmware" / "model.pte").write_bytes(b"old firmware")
    (tmp_path / "link2.pte").symlink_to("firmware/model.pte")
    if link_to:
        (tmp_path / name).symlink_to(link_to)
    atomic.write_bytes(tmp_path / name, b"new program")
    assert (tmp_path / name).read_bytes() == b"new program"
    assert (tmp_path / name).is_symlink() == bool(link_to)
    if link_to:  # the link is kept and its final target holds the new bytes
        assert (tmp_path / "firmware" / "model.pte").read_bytes() == b"new program"
    assert not list(tmp_path.rglob(".*.tmp"))


def _layout(d: Path) -> None:
    (d / "sub").mkdir()
    (d / "model.py").write_text("model")
    (d / "link.py").symlink_to("model.py")
    os.link(d / "model.py", d / "hard.py")


# inputs, outputs -> the fragment of the error (None: no collision)
COLLISIONS = {
    "output_is_input": ([("the model", "model.py")], [("-o", "model.py")],
                        "-o model.py is the same file as the model model.py"),
    "through_symlink": ([("the model", "model.py")], [("-o", "link.py")], "-o link.py is the same file as the model"),
    "through_dotdot": ([("the model", "model.py")], [("-o", "sub/../model.py")], "-o sub/../model.py is the same"),
    "hard_link": ([("the model", "model.py")], [("-o", "hard.py")], "-o hard.py is the same file as the model"),
    "two_outputs_not_yet_written": ([], [("-o", "new.pte"), ("--report", "sub/../new.pte")],
                                    "--report sub/../new.pte is the same file as -o new.pte"),
    "distinct": ([("the model", "model.py")], [("-o", "model.pte"), ("--report", "model.html")], None),
    "unset_outputs": ([("the model", "model.py")], [("-o", "model.pte"), ("--report", None), ("--etrecord", None)],
                      None),
}


@pytest.mark.parametrize("case", COLLISIONS, ids=COLLISIONS.keys())
def test_an_output_never_resolves_to_an_input_or_another_output(tmp_path, monkeypatch, case):
    inputs, outputs, fragment = COLLISIONS[case]
    _layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    if fragment is None:
        atomic.check_distinct(inputs, outputs)
        return
    with pytest.raises(atomic.PathCollision, match=fragment.replace(".", r"\.")):
        atomic.check_distinct(inputs, outputs)
