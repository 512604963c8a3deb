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
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx_click",
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
]
templates_path = ["_templates"]
# one page per class of the API (docs/_templates/class.rst: its methods and the gallery's
# examples that use it)
autosummary_generate = True
# the copy buttons leave out the shell's and Python's prompts
copybutton_prompt_text = r"\$ |>>> |\.\.\. "
copybutton_prompt_is_regexp = True

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
    "reset_modules_order": "both",  # gallery_progress says the start and the time taken
    # "Examples using ssl_svm.TSVM" on each class's page (minigallery in _templates/class.rst)
    "doc_module": ("ssl_svm",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"ssl_svm": None},
}

html_theme = "pydata_sphinx_theme"
html_title = "ssl-svm"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 7,  # the root toctree has 7 entries: one row, no "More"
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path = ["_static"]
html_css_files = ["custom.css"]
# the top-level pages without sub-pages have no section navigation to show; the user guide's
# pages and the API's classes keep theirs (the left column lists the section's pages)
html_sidebars = {page: [] for page in (
    "index", "auto_examples/index", "cli-reference", "algorithms", "benchmarks", "layout")}

# MathJax from this site, not from a CDN: the formulas render offline. Its files come from
# the sphinx-mathjax-offline package (the docs extra); only what the pages' TeX needs
mathjax_path = "mathjax/tex-chtml.js"
MATHJAX_PARTS = ("tex-chtml.js", "output/chtml", "input/tex/extensions", "a11y", "ui")


def _copy_mathjax(app, exc):
    import importlib.util
    import shutil

    if exc is not None or app.builder.format != "html":
        return
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or spec.origin is None:
        raise RuntimeError("the docs need sphinx-mathjax-offline (pip install -e '.[docs]')")
    src = Path(spec.origin).parent / "static" / "mathjax"
    dst = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        if (src / part).is_dir():
            shutil.copytree(src / part, dst / part, dirs_exist_ok=True)
        else:
            dst.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / part, dst / part)


def setup(app):
    app.connect("build-finished", _copy_mathjax)

smartquotes = False  # "--lambda" stays two hyphens, not an en dash
