"""`python -m choreo_kernel` is the `choreo` command line."""

from choreo_kernel.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
