"""Sphinx configuration of the API reference (built with -W in CI)."""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "fastsoftmax"
author = "the fastsoftmax developers"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
autodoc_default_options = {"members": True, "undoc-members": False}
autodoc_typehints = "none"
exclude_patterns = ["_build"]
html_theme = "alabaster"
nitpicky = False
