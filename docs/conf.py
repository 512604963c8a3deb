"""Sphinx configuration of the ssl-svm documentation site (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))  # gallery_progress, the gallery's progress lines

project = "ssl-svm"
author = "the ssl-svm developers"
copyright = "2026, the ssl-svm developers"
try:
    from importlib.metadata import version as _version

    release = _version("ssl-svm")
except Exception:  # a checkout that is not installed
    release = "unknown"
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_click",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
root_doc = "index"

# MyST: "## Heading" gets an anchor, so the pages can link to a section as [x](page.md#heading)
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]

# numpydoc: the estimators' docstrings are generated from the Param declarations; the API
# pages list members explicitly, so numpydoc's own member tables would repeat them
numpydoc_show_class_members = False
autodoc_default_options: dict = {}

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
# no network in CI: intersphinx links are resolved only when SSL_DOCS_INTERSPHINX=1
if os.environ.get("SSL_DOCS_INTERSPHINX") != "1":
    intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "show_memory": False,
    "reset_modules": ("matplotlib", "gallery_progress.say"),
}

html_theme = "pydata_sphinx_theme"
html_title = "ssl-svm"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path: list[str] = []
# the pages without sub-pages have no section navigation to show
html_sidebars = {page: [] for page in (
    "index", "auto_examples/index", "getting-started", "few-labels", "python", "commands",
    "cluster", "formats", "contract", "cli-reference", "api", "algorithms", "benchmarks",
    "layout")}

smartquotes = False  # "--lambda" stays two hyphens, not an en dash
