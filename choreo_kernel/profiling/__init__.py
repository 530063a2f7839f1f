"""Why a kernel is slow: Nsight Compute profiles, PTX and SASS, each mapped back to the Choreo lines.

No Jupyter here: the kernel's `%profile`, `%%choreo --ptx/--sass` and `%sweep --metric` are thin
layers over these modules, and the tests drive them on reports recorded on an H200.
"""
