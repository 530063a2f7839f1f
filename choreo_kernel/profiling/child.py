"""`python -m choreo_kernel.profiling.child CALL`: make one saved call of a Choreo function, for ncu.

Compiles the saved source for cuda, writes the emitted CUDA and its header beside CALL (ncu
imports them into the report), makes the call, waits for the GPU, and writes where the cubin it
ran is. A failure is one line starting with `choreo profile: ` on stderr and exit status 1.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

from choreo_kernel import module as choreo_module
from choreo_kernel.compiler.cuda import HEADER, header_text
from choreo_kernel.compiler.diagnostics import ChoreoError
from choreo_kernel.profiling.call import CHILD_ERROR, RESULT, Call
from choreo_kernel.runtime.cuda import UNIT, cubin_path


def main(argv: list[str]) -> int:
    spec = Path(argv[0])
    call: Call = pickle.loads(spec.read_bytes())
    try:
        module = choreo_module.compile(call.source, call.defines, "cuda", call.filename)
        (spec.parent / UNIT).write_text(module.cuda_source, encoding="utf-8")
        (spec.parent / HEADER).write_text(header_text(), encoding="utf-8")
        module.function(call.function)(*call.args, **call.kwargs)
        import cupy  # type: ignore[import-not-found]

        cupy.cuda.get_current_stream().synchronize()
    except Exception as error:  # the process boundary: whatever went wrong is the user's one line
        what = "" if isinstance(error, ChoreoError) else f"{type(error).__name__}: "
        print(CHILD_ERROR + what + " ".join(str(error).split()), file=sys.stderr)
        return 1
    result = {"cubin": str(cubin_path(module.cuda_source)), "cuda_source": module.cuda_source}
    (spec.parent / RESULT).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
