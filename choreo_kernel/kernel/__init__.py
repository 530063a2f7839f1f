"""The Jupyter side of choreo-kernel: the `choreo` kernel and the `%%choreo` cell magic.

Nothing in here adds compiler logic: cells go through `choreo_kernel.compile` like any
other caller, and this package turns modules and diagnostics into Jupyter messages.
"""
