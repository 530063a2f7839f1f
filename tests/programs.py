"""Choreo programs that several test files use: the same text wherever a test needs one.

Each is a whole source (or notebook cell) without a trailing newline, so a test can put a
magic line in front or rename the function with `str.replace`.
"""

# Elementwise add over 16 x 16 tiles: the smallest program that compiles and runs everywhere.
ADD = """\
__co__ f32 [M, N] add(f32 [M, N] a, f32 [M, N] b) {
  f32 [M, N] out;
  parallel {i, j} by [M / 16, N / 16] : block {
    parallel {x, y} by [16, 16] : thread {
      out.chunkat(i, j).at(x, y) = a.chunkat(i, j).at(x, y) + b.chunkat(i, j).at(x, y);
    }
  }
  return out;
}"""

# `a * SCALE + b`: SCALE changes the result, so a sweep over it has points that differ from the first.
SCALED_ADD = """\
#ifndef SCALE
#define SCALE 1
#endif
__co__ f32 [M, N] add(f32 [M, N] a, f32 [M, N] b) {
  f32 [M, N] out;
  parallel {i, j} by [M / 16, N / 16] : block {
    parallel {x, y} by [16, 16] : thread {
      out.chunkat(i, j).at(x, y) = a.chunkat(i, j).at(x, y) * SCALE + b.chunkat(i, j).at(x, y);
    }
  }
  return out;
}"""

# Two async copies into shared memory: a graph with futures and waits, and CUDA to show.
BLEND = """\
__co__ f32 [B, 128] blend(f32 [B, 128] x, f32 [B, 128] y, f32 w) {
  f32 [B, 128] out;
  parallel b by B : block {
    fx = dma.copy.async x.chunkat(b, _) => shared;
    fy = dma.copy.async y.chunkat(b, _) => shared;
    wait fx, fy;
    shared f32 [fx.span] res;
    parallel t by 128 : thread {
      res.at(0, t) = fx.data.at(0, t) * w + fy.data.at(0, t) * (1.0f - w);
    }
    dma.copy res => out.chunkat(b, _);
  }
  return out;
}"""

# Warp 0 triggers `some` only where x > 100, warp 1 waits for it (`wait some` is on line 10):
# with every x small nothing triggers and the wait deadlocks; with some large, too few arrive.
GUARDED_TRIGGER = """
__co__ void guarded(f32 [32] x, global f32 [32] out) {
  parallel b by 1 : block {
    shared event some;
    parallel w by 2 : group, l by 32 : thread {
      inthreads.async (w == 0) {
        if (x.at(l) > 100.0f) { trigger some; }
      }
      inthreads.async (w == 1) {
        wait some;
        out.at(l) = x.at(l);
      }
    }
  }
}"""

# A bounded ituple printed by `with` and by `foreach` (tests/test_control.py, test_gpu_control.py).
TUPLE_PRINTS = """
__co__ void tuples(s32 [4] x) {
  ituple<2> b = {2, 3};
  parallel p by 1 : block {
    with idx in [b] {
      println("with ", idx);
    }
    foreach i in [b] {
      println("foreach ", i);
    }
  }
}
"""
