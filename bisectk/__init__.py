"""bisectk: differential bisection for GPU kernels."""

__version__ = "0.1.0"
