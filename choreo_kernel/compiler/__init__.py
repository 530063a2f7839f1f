"""The shared compiler core: preprocess, parse, analyze.  No Jupyter or CuPy here."""
