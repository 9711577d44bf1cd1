"""The API reference reads as a reference: built from the docstrings with
`mkdocs build --strict`, it prints no Sphinx role (``:class:`Pool```) or
``Example::`` literally, its cross-references are links that land on a
heading, every public module has one page listing what it exports (public
names first, nothing else), and the docstrings' examples and lists render as
code and lists."""

from __future__ import annotations

import html
import importlib
import os
import pathlib
import re
import subprocess
import sys
from typing import Dict, List

import pytest

pytest.importorskip("mkdocstrings_handlers.python")

ROOT = pathlib.Path(__file__).resolve().parents[2]

# page of the reference -> the module whose __all__ it documents, and what it
# opens with: the class a user constructs first.
PAGES = {
    "api/core": ("poolsplit_adapters", "Pool"),
    "api/langchain": ("poolsplit_adapters.langchain", "PoolSplitRetriever"),
    "api/llama-index": ("poolsplit_adapters.llama_index", "PoolSplitRetriever"),
    "api/memory": ("poolsplit_adapters.memory", "WriteGate"),
    "api/stores": ("poolsplit_adapters.stores", "SQLiteMemoryStore"),
    "api/relevance": ("poolsplit_adapters.relevance", "RelevanceScorer"),
}
# Exported but left out on purpose: the version string,
# and the LlamaIndex re-exports of two names the LangChain page documents.
LEFT_OUT = {
    "poolsplit_adapters": {"__version__"},
    "poolsplit_adapters.llama_index": {"capture_selections", "SELECTION_KEY"},
}
# Rendered without being exported: the core's module (the algorithm) and its
# one fill with the seams a candidate source implements. The package's select
# and retrieve_pools are shown as the core's own, which they wrap.
ALSO_SHOWN = {"poolsplit_adapters": {"poolsplit", "fill_pools", "ListCandidates", "Candidates", "Counting", "Layering"}}

ROLE = re.compile(r":(class|meth|func|attr|mod|data|exc|obj):(`|<code>)")
OBJECT_HEADING = re.compile(r'<h3 id="(poolsplit_adapters[\w.]*)" class="doc doc-heading"')
AUTOREF = re.compile(r'<a class="autorefs autorefs-internal"[^>]*href="([^"]*)"')


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    folder = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)]
    built = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-4000:]
    return folder


def page(site: pathlib.Path, name: str) -> str:
    return (site / (name + ".html")).read_text(encoding="utf-8")


def objects(site: pathlib.Path, name: str) -> List[str]:
    """The ids of the page's top-level object headings, in page order."""
    return OBJECT_HEADING.findall(page(site, name))


def test_no_page_prints_a_sphinx_role_or_a_literal_block_marker(site):
    printed: Dict[str, List[str]] = {}
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        found = [m.group(0) for m in ROLE.finditer(text)] + re.findall(r"Example::", text)
        if found:
            printed[path.relative_to(site).as_posix()] = found[:5]
    assert printed == {}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_public_module_has_a_page_with_exactly_what_it_exports(site, name):
    module_name, first = PAGES[name]
    exported = set(importlib.import_module(module_name).__all__) - LEFT_OUT.get(module_name, set())
    shown = [ident.rsplit(".", 1)[-1] for ident in objects(site, name)]
    assert shown[0] == first
    assert sorted(set(shown) - ALSO_SHOWN.get(module_name, set())) == sorted(exported)
    assert len(shown) == len(set(shown)), "a name shown twice"


def test_internal_and_deprecated_names_stay_out_of_the_reference(site):
    for name in PAGES:
        text = page(site, name)
        for internal in ("DocumentRecall", "BaseRetrieverRecall", "Scope", "seamed", "seams"):
            assert not re.search(r'<h\d id="[\w.]*\.%s"' % internal, text), (name, internal)


def test_cross_references_are_links_that_land_on_a_heading(site):
    links = 0
    for name in PAGES:
        for href in AUTOREF.findall(page(site, name)):
            target, _, anchor = html.unescape(href).partition("#")
            # pages are files (use_directory_urls: false): a link names one
            landing = (site / name).parent / target if target else site / (name + ".html")
            assert landing.exists(), (name, href)
            assert 'id="%s"' % anchor in landing.read_text(encoding="utf-8"), (name, href)
            links += 1
    assert links > 200
    # A docstring's [`Pool`][] on the LangChain page is a link to the core page.
    middleware = page(site, "api/langchain").split(
        'id="poolsplit_adapters.langchain.middleware.PoolSplitMemoryMiddleware"'
    )[1]
    assert 'href="core.html#poolsplit_adapters.Pool"' in middleware.split("<h3 ")[0]


def test_examples_render_as_code_and_lettered_steps_as_a_list(site):
    langchain = page(site, "api/langchain")
    retriever = langchain.split('id="poolsplit_adapters.langchain.PoolSplitRetriever"')[1].split("<h4 ")[0]
    code = " ".join(re.sub(r"<[^>]+>", "", block) for block in re.findall(r"<pre.*?</pre>", retriever, re.S))
    assert "PoolSplitRetriever(documents=docs, pools=pools)" in html.unescape(code)
    core = page(site, "api/core")
    steps = re.search(r"<ol>.*?</ol>", core.split('id="poolsplit_adapters.poolsplit"')[1], re.S)
    assert steps is not None
    assert re.search(r"<ul>\s*<li>a\. every always-scope entry first", steps.group(0))
