"""Host-level values in the CUDA host plan: a mutable scalar is computed where its statements stand, so
each launch takes the value it has then; an unused host declaration is no step at all."""

from __future__ import annotations

from choreo_kernel.compiler.cuda.plan import HostScalar, Launch
from choreo_kernel.compiler.driver import analyze
from choreo_kernel.compiler.printer import expression

SOURCE = """
__co__ s32 [N] shifted(s32 [N] x) {
  s32 [N] out;
  mutable int offset = 3;
  unused = offset * 2;
  parallel p by N : block
    out.at(p) = x.at(p) + offset;
  offset += 4;
  offset++;
  parallel p by N : block
    out.at(p) = out.at(p) + offset;
  return out;
}
"""


def test_a_mutable_host_scalar_is_computed_between_the_launches() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert not [d for d in analysis.diagnostics if d.severity == "error"]
    assert analysis.lowered is not None
    steps = analysis.lowered.plans["shifted"].steps
    described = [
        ("launch", None) if isinstance(step, Launch) else (step.symbol.name, expression(step.value))
        for step in steps
        if isinstance(step, HostScalar | Launch)
    ]
    assert described == [
        ("offset", "3"),
        ("launch", None),
        ("offset", "offset + 4"),
        ("offset", "offset + 1"),
        ("launch", None),
    ]


def test_each_kernel_takes_the_mutable_as_an_argument() -> None:
    analysis = analyze(SOURCE, target="cuda")
    assert analysis.lowered is not None
    for launch in analysis.lowered.plans["shifted"].launches:
        assert [p.name for p in launch.parameters if p.kind == "scalar"] == ["offset"]
