"""Faults the GPU must contain (issue 17): a wait that never completes, of every kind, gives up; the
call raises naming the event and the line; and the same process computes correctly afterwards.

Each program of tests/faults waits on an event that its triggers, guarded by a condition that no
input meets, never complete: two warpgroups waiting with warpgroup barriers after the waits, TMA
loads still in flight on a ring, an asynchronous WGMMA in flight, and a grid of 1024 blocks waiting
in a loop. On the GPU each runs in a process of its own (a fault that poisoned the CUDA context
would poison the next test too), which then calls the failing function again and a correct one.
On the sim, in CI, each is the deadlock it is, naming the same events.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import parse_call
from generators import make_arguments

import choreo_kernel as ck

FAULTS = Path(__file__).parent / "faults"
PROGRAMS = sorted(FAULTS.glob("*.co"))
TIMEOUT_S = 2.0  # CHOREO_WAIT_TIMEOUT for these runs


def header(path: Path, key: str) -> str:
    prefix = f"// {key}: "
    return next(line[len(prefix) :] for line in path.read_text().splitlines() if line.startswith(prefix))


def waits(path: Path) -> set[tuple[str, int]]:
    """(event, line) of every wait on one of the events the file's FAULT header names."""
    events = header(path, "FAULT").split()
    found = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = re.match(r"\s*wait (\w+)", line)
        if match and match.group(1) in events:
            found.add((match.group(1), number))
    return found


def test_each_fault_program_names_events_it_waits_on() -> None:
    assert len(PROGRAMS) >= 4
    for path in PROGRAMS:
        assert waits(path), path.name


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda path: path.stem)
def test_on_the_sim_a_fault_program_is_a_deadlock_naming_its_events(path: Path) -> None:
    name, arguments = parse_call(header(path, "CALL"))
    module = ck.compile(path.read_text(), target="sim", filename=path.name)
    with pytest.raises(ck.ChoreoError, match="deadlock") as raised:
        module.function(name)(*make_arguments(arguments).values())
    events = {event for event, _ in waits(path)}
    assert any(f"'{event}'" in str(raised.value) or f" {event}" in str(raised.value) for event in events)


CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import numpy as np
import choreo_kernel as ck
from corpus import parse_call
from generators import make_arguments

path = sys.argv[1]
source = open(path).read()
call = next(line[9:] for line in source.splitlines() if line.startswith("// CALL: "))
name, arguments = parse_call(call)
function = ck.compile(source, target="cuda", filename=path).function(name)
report = {}
for attempt in (1, 2):
    start = time.perf_counter()
    try:
        function(*make_arguments(arguments).values())
        report[f"call{attempt}"] = "returned"
    except ck.ChoreoError as error:
        report[f"call{attempt}"] = str(error)
    report[f"seconds{attempt}"] = time.perf_counter() - start
add = ck.compile(open(sys.argv[3]).read(), target="cuda").add
a = np.arange(256, dtype=np.float32).reshape(16, 16)
try:
    report["next"] = bool((add(a, a).get() == 2 * a).all())
except Exception as error:
    report["next"] = repr(error)
print(json.dumps(report))
"""


@pytest.mark.gpu
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda path: path.stem)
def test_on_the_gpu_a_wait_that_never_completes_is_contained(path: Path) -> None:
    add = Path(__file__).parent / "conformance" / "valid" / "add_blocks_threads.co"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(Path(__file__).parent), str(add)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "CHOREO_WAIT_TIMEOUT": str(TIMEOUT_S)},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    expected = waits(path)
    for attempt in (1, 2):
        message = report[f"call{attempt}"]
        named = re.search(r"a wait on event '(\w+)' at line (\d+)", message)
        assert named is not None, message
        assert (named.group(1), int(named.group(2))) in expected, message
        assert report[f"seconds{attempt}"] < 4 * TIMEOUT_S + 10, report
    assert report["next"] is True, report
