"""Shared test set-up. OpenBLAS threads are pinned to 1: multithreaded BLAS is far slower on small CI machines."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
