"""The resolver: names, types, shapes, levels and storage, the first analysis pass over a function."""

from choreo_kernel.compiler.analysis.resolve.resolver import Resolver

__all__ = ["Resolver"]
