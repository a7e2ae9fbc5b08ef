"""What `evaluate` returns: the metric of each row (float PyTorch, PyTorch's quantized model, the .pte on the host,
the .pte on a board) as a text table, a JSON-ready dict, and the HTML report's accuracy section."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from ..core.atomic import write_text
from .metrics import COLUMNS, format_value

FLOAT, QUANTIZED, HOST, BOARD = "float PyTorch", "quantized PyTorch", ".pte on the host", ".pte on the board"


def _json_number(value: float | None) -> float | str | None:
    """A metric as strict JSON holds it: an infinite SQNR (identical outputs) as the string "inf"."""
    return str(value) if value is not None and math.isinf(value) else value


@dataclass
class Row:
    name: str  # FLOAT, QUANTIZED, HOST or BOARD
    metrics: dict[str, float | None]


@dataclass
class EvaluationResult:
    task: str  # "classification" or "regression"
    task_source: str  # how the task was chosen: "given", or "inferred: <why>"
    target: str
    data: str  # where the data set came from
    samples: int
    calibration: str  # what the model was calibrated on
    rows: list[Row]
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # row name -> (N, ...) output 0
    lowering: object = field(default=None, repr=False)  # the LoweringResult (its report carries the accuracy card)
    scored: str = "output 0"  # which output the metrics score, and which they leave out

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS[self.task]

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.name == name)

    def to_dict(self) -> dict:
        return {"task": self.task, "task_source": self.task_source, "target": self.target, "data": self.data,
                "samples": self.samples, "calibration": self.calibration, "scored": self.scored,
                "columns": list(self.columns),
                "rows": [{"name": r.name, "metrics": {k: _json_number(v) for k, v in r.metrics.items()}}
                         for r in self.rows]}

    def __str__(self) -> str:
        cells = [["", *self.columns]] + [[r.name, *(format_value(c, r.metrics.get(c)) for c in self.columns)]
                                         for r in self.rows]
        widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
        table = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(line, widths)))
                 for line in cells]
        return "\n".join([f"evaluated on {self.samples} sample(s) of {self.data}, target {self.target}",
                          f"task: {self.task} ({self.task_source})", f"scored: {self.scored}",
                          f"calibration: {self.calibration}", *table])

    def to_html(self) -> str:
        """The accuracy section of the HTML report: the .pte's headline figure as a card, then every row."""
        head = self.columns[0]
        best = self.rows[-1]
        card = (f"<div class='cards'><div class='card'><b>{escape(format_value(head, best.metrics.get(head)))}</b>"
                f"<span>{escape(head)} of the {escape(best.name)} ({self.samples} samples)</span></div></div>")
        rows = "".join(f"<tr><td>{escape(r.name)}</td>" + "".join(
            f"<td class=n>{escape(format_value(c, r.metrics.get(c)))}</td>" for c in self.columns) + "</tr>"
            for r in self.rows)
        return (f"<h2>Accuracy on {escape(Path(self.data).name)}</h2><p class='note'>{escape(self.task)} "
                f"({escape(self.task_source)}); scored: {escape(self.scored)}; calibration: {escape(self.calibration)}</p>{card}<table><tr>"
                "<th>model</th>" + "".join(f"<th>{escape(c)}</th>" for c in self.columns) + f"</tr>{rows}</table>")

    def save_html(self, path: str | Path) -> Path:
        """The delegation report of the evaluated .pte as one HTML page, with this accuracy section."""
        if self.lowering is None:
            raise ValueError("this result holds no LoweringResult: its report is not known")
        return write_text(path, self.lowering.report.to_html(sections=[self.to_html()]) + "\n")
