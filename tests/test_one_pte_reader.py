"""One reader of the .pte format (pte.read_pte): no other module of the package calls ExecuTorch's .pte
deserializer, pte.py names no back end, and the reader's errors say what is wrong with the file."""

import re
from pathlib import Path

import pytest

from executorch_neutron.pte import PteError, read_pte

SRC = Path(__file__).resolve().parents[1] / "src" / "executorch_neutron"
READER = SRC / "pte.py"
# ExecuTorch's .pte deserializer and its flatbuffer-level readers
_DESERIALIZERS = re.compile(r"deserialize_pte_binary|_program_flatbuffer_to_json|_json_to_program|"
                            r"exir\._serialize\._program|exir\._serialize\._flatbuffer")


def test_only_pte_py_deserializes_a_pte():
    readers = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                     if p != READER and _DESERIALIZERS.search(p.read_text()))
    assert not readers, (f"{', '.join(readers)} read the .pte format themselves; read it with pte.read_pte (the one "
                         f"reader) instead")
    assert _DESERIALIZERS.search(READER.read_text()), "pte.py no longer calls ExecuTorch's deserializer"


def test_pte_py_names_no_back_end():
    text = READER.read_text()
    found = sorted({m.group(0) for m in re.finditer(r"Ethos-U|ethos_u|Vela|neutron_estimate|Neutron(?!CompileSpec)|"
                                                    r"\"neutron\.", text)})
    assert not found, (f"pte.py names a back end ({', '.join(found)}); what a delegate shows comes from its back "
                       f"end's row (backends.BACKENDS[...].view)")


@pytest.mark.parametrize("content, expected", [
    (b"\x1c\x00\x00\x00TFL3" + bytes(300), "the data is not an ExecuTorch program: it is a TFLite model"),
    (b"not a program" * 8, "the data is not an ExecuTorch program: its file identifier is b'a pr'"),
    (b"\x1c\x00\x00\x00ET12" + bytes(range(256)) * 4,
     "the data is not a valid .pte: ExecuTorch cannot parse it (the file is truncated or damaged)"),
], ids=["tflite", "identifier", "damaged"])
def test_reader_errors_name_the_problem(content, expected):
    with pytest.raises(PteError, match=re.escape(expected)):
        read_pte(content)


def test_reader_names_a_missing_file(tmp_path):
    with pytest.raises(PteError, match="no .pte file at .*missing.pte"):
        read_pte(tmp_path / "missing.pte")
