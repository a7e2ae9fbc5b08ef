"""The models and samples the CLI and the examples work on: the bundled example networks (`zoo.py`) and what a user
points the CLI at (`loading.py`: `file.py:factory` and `.pt2` models, `.npy` / `.pt` / `.npz` samples)."""
