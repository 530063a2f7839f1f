"""Tuning a Choreo program: time it over a grid of defines, here or on a Dask cluster.

`point.measure_point` is the one job of a sweep (compile with the point's defines, run,
check against the reference, time); `sweep.run_sweep` orders the points and hands them to a
runner: `sweep.InProcess` runs them one after another in this process, `cluster.DaskRunner`
submits them to `dask.distributed` workers, one per GPU. Nothing here imports Jupyter: the
`%sweep` magic (choreo_kernel/kernel) is a thin layer over this package, and so can a
Python autotuner be.
"""
