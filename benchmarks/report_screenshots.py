"""The HTML report as a person sees it: render the reports of the bundled examples, a 3-partition model and a
ViT-sized graph in headless Chromium, save screenshots, and time the rendering.

    .venv/bin/python benchmarks/report_screenshots.py [--models cifarnet three_partitions ...] [--write-docs]

Per model (random weights, synthetic calibration): compute nodes, partitions, CPU nodes and boundary tensors of
the lowered program; seconds of `report.to_html()` (graph layout by grandalf + SVG, median of 3); the HTML size;
seconds of a headless Chromium screenshot of the page (browser start included); the screenshot under
out/report_screenshots/. Then one Model Explorer check: `report --model-explorer` overlays of DS-CNN for
ethos-u55-128, served by `model-explorer` and screenshot in the same browser once drawn (skipped when the
`ai-edge-model-explorer` package is missing). `--write-docs` also writes docs/report_rendering.md and two PNGs
under docs/img/ (the 3-partition report on ethos-u55-128, Model Explorer). Prints figures, never asserts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

OUT = ROOT / "out" / "report_screenshots"
EXPLORER_MODEL = "ds_cnn_u55"  # the .pte whose first partition Model Explorer shows with its overlays
DOC_SHOTS = {"three_partitions_u55.png": "report_graph_three_partitions_u55.png",
             "model_explorer.png": "model_explorer_ds_cnn_u55.png"}


def _models() -> dict:
    """name -> (factory, target)."""
    from models.split_models import three_partitions
    from models.transformer_blocks import TinyViT

    from executorch_neutron.models import zoo
    from executorch_neutron.models.loading import load_model

    def example(name):
        return lambda: load_model(f"{ROOT}/examples/{name}.py:factory")[:2]

    def vit(depth):  # tests/models/transformer_blocks.py's TinyViT, deeper: hundreds of nodes
        def factory():
            import torch

            torch.manual_seed(0)
            return TinyViT(depth=depth).eval(), (torch.randn(1, 3, 32, 32),)
        return factory

    return {"cifarnet": (example("cifarnet"), "imxrt700"), "ds_cnn": (example("ds_cnn"), "imxrt700"),
            "vww_mobilenet": (example("vww_mobilenet"), "imxrt700"),
            "mobilenet_v2_like": (zoo.mobilenet_v2_like, "imxrt700"),
            "ds_cnn_u55": (example("ds_cnn"), "ethos-u55-128"),
            "three_partitions": (three_partitions, "imxrt700"), "three_partitions_u55": (three_partitions,
                                                                                           "ethos-u55-128"),
            "tiny_vit_depth8": (vit(8), "imxrt700"), "tiny_vit_depth8_documented": (vit(8), "imxrt700")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model_explorer_check(browser: str, pte: Path, out: Path) -> str:
    """Serve the overlays of `pte` with `model-explorer` and screenshot the page; returns a line for the notes."""
    try:
        from model_explorer import config
    except ImportError:
        return "Model Explorer: skipped (ai-edge-model-explorer is not installed)"
    from _browser import app_screenshot

    from executorch_neutron.report.model_explorer import write_overlays

    overlay = next(o for o in write_overlays(pte, out / "model_explorer") if o.files)
    tflite, *data = overlay.files
    cfg = config().add_model_from_path(str(tflite))
    for path in data:
        cfg.add_node_data_from_path(str(path))
    port = _free_port()
    exe = Path(sys.executable).with_name("model-explorer")
    server = subprocess.Popen([str(exe), "--no_open_in_browser", "--host=127.0.0.1", f"--port={port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    png = out / "model_explorer.png"
    try:
        for _ in range(300):  # the server imports torch first: up to a minute
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.2)
        t0 = time.perf_counter()
        # drawn: the graph's canvas and the node-data panel naming the overlay
        ok = app_screenshot(browser, f"http://127.0.0.1:{port}/?data={cfg.to_url_param_value()}", png,
                            ready="document.querySelector('canvas') !== null && "
                                  f"document.body.innerText.includes({json.dumps(overlay.unit)})")
        seconds = time.perf_counter() - t0
    finally:
        server.terminate()
        server.wait(timeout=30)
    return (f"Model Explorer: `model-explorer {tflite.name} --node_data_paths={','.join(p.name for p in data)}` "
            f"({overlay.name} of {EXPLORER_MODEL}) drawn with its overlays in headless Chromium in {seconds:.1f} s "
            f"(server start not included): `{png.relative_to(ROOT)}`" + ("" if ok else " (NOT drawn: see the image)"))


def main() -> int:
    import _docs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", help="default: all")
    _docs.add_argument(p)
    args = p.parse_args()
    import logging

    logging.getLogger("executorch_neutron").setLevel(logging.ERROR)
    from _browser import chromium, screenshot
    from _timing import median_seconds

    from executorch_neutron import lower
    from executorch_neutron.models.zoo import calibration

    browser = chromium()
    OUT.mkdir(parents=True, exist_ok=True)
    models = _models()
    rows = []
    header = (f"{'model':<22} {'target':<14} {'nodes':>5} {'parts':>5} {'cpu':>4} {'cross':>5} {'to_html s':>9} "
              f"{'HTML KiB':>8} {'chromium s':>10}  screenshot")
    print(header)
    for name in args.models or models:
        factory, target = models[name]
        model, inputs = factory()
        constraints = "documented" if name.endswith("_documented") else "sdk-current"  # documented: more splits
        result = lower(model, inputs, [inputs] + calibration(inputs, 3), target=target, constraints=constraints)
        report = result.report
        html_s = median_seconds(report.to_html, 3)
        page = report.save(OUT / f"{name}.html")
        png = OUT / f"{name}.png"
        shot_s = screenshot(browser, page.as_uri(), png) if browser else float("nan")
        row = dict(model=name, target=target, nodes=report.num_compute, partitions=len(report.partitions),
                   cpu=len(report.rejections), crossings=len(report.graph.boundary_tensors), to_html_s=html_s,
                   html_kib=page.stat().st_size / 1024, chromium_s=shot_s,
                   screenshot=str(png.relative_to(ROOT)) if png.is_file() else "")
        rows.append(row)
        if name == EXPLORER_MODEL:
            result.save(OUT / f"{name}.pte")
        print(f"{name:<22} {target:<14} {row['nodes']:>5} {row['partitions']:>5} {row['cpu']:>4} "
              f"{row['crossings']:>5} {html_s:>9.3f} {row['html_kib']:>8.1f} {shot_s:>10.2f}  {row['screenshot']}")
    me_line = ""
    if browser and (OUT / f"{EXPLORER_MODEL}.pte").is_file():
        me_line = model_explorer_check(browser, OUT / f"{EXPLORER_MODEL}.pte", OUT)
        print(me_line)
    if args.write_docs:
        _write_docs(rows, me_line)
    (OUT / "figures.json").write_text(json.dumps(rows, indent=2))
    return 0


def _write_docs(rows, me_line: str) -> None:
    """docs/report_rendering.md: the figures block (through _docs) and the two screenshots under docs/img/."""
    import _docs

    img = ROOT / "docs" / "img"
    img.mkdir(parents=True, exist_ok=True)
    for name, file in DOC_SHOTS.items():
        if (OUT / name).is_file():
            shutil.copyfile(OUT / name, img / file)
    table = ["| model | target | compute nodes | partitions | CPU nodes | boundary tensors | to_html (s) | HTML (KiB) "
             "| Chromium screenshot (s) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {r['model']} | {r['target']} | {r['nodes']} | {r['partitions']} | {r['cpu']} | {r['crossings']} | "
              f"{r['to_html_s']:.3f} | {r['html_kib']:.1f} | {r['chromium_s']:.2f} |" for r in rows]
    table += ["", f"Screenshots (the top of each page) in {OUT.relative_to(ROOT)}/ (not committed)."]
    if me_line:
        table += ["", me_line + "."]
    _docs.write_figures("benchmarks/report_screenshots.py", "report_rendering",
                        "The HTML report and Model Explorer overlays in a browser", "\n".join(table) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
