"""The version of choreo-kernel: it names the compiler in the emitted CUDA and keys the binary cache."""

__version__ = "0.1.0"
