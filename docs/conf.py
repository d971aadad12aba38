"""Sphinx configuration of the fastsoftmax site: the guide (MyST Markdown)
and the API reference (autodoc + numpydoc), built with -W in CI.

    sphinx-build -W --keep-going -b html docs build/docs
"""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

project = "fastsoftmax"
author = "the fastsoftmax developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "numpydoc"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# section anchors for links between guide pages (page.md#a-section)
myst_heading_anchors = 3
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
exclude_patterns = ["_build"]
html_theme = "alabaster"
nitpicky = False
