"""Sphinx configuration of the choreo-kernel docs.

The pages are MyST Markdown. Choreo code blocks are highlighted by the project's own Pygments
lexer, which the installed package registers as `choreo` (pyproject.toml's entry point), so a
block that the lexer cannot read is a warning, and warnings are errors in CI.
"""

from choreo_kernel import __version__

project = "choreo-kernel"
author = "the choreo-kernel authors"
release = version = __version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

myst_heading_anchors = 3  # `[text](page.md#a-heading)` links to headings down to ###
highlight_language = "text"

html_theme = "alabaster"
html_title = f"choreo-kernel {release}"
html_theme_options = {"description": "Choreo tile programs in Jupyter", "fixed_sidebar": True}
