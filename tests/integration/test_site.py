"""The documentation site opens from disk: built as ``make docs`` builds it,
every page's links name files that exist (no folder links, which a browser
shows as a listing from file://, and nothing absolute), no page loads a
script from the network, and search has what it needs offline (the index as
a script, our worker shim before the theme's bundle)."""

from __future__ import annotations

import html.parser
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Links(html.parser.HTMLParser):
    """Every ``href`` and ``src`` of a page, and its scripts' ``src`` in order."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value is not None:
                self.links.append(value)
                if tag == "script" and name == "src":
                    self.scripts.append(value)


def page_links(page: pathlib.Path) -> Links:
    parser = Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        reason = "mkdocs-material not installed (pip install --group docs)"
        if os.environ.get("CI"):
            pytest.fail("the site test must run when CI is set: %s" % reason, pytrace=False)
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def pages(site):
    """The pages a reader opens. 404.html is left out: a server shows it for
    any missing path, so its links are absolute by design, and from file://
    it is never shown."""
    return sorted(page for page in site.rglob("*.html") if page.name != "404.html")


def test_every_page_of_the_nav_is_a_file(site):
    names = {p.relative_to(site).as_posix() for p in pages(site)}
    assert {"index.html", "stores.html", "cli.html", "adapters/agents.html", "api/stores.html"} <= names
    assert not any((site / folder / "index.html").exists() for folder in ("stores", "cli", "concepts"))


def test_every_internal_link_names_a_file_that_exists(site):
    broken, from_home = [], set()
    for page in pages(site):
        for link in page_links(page).links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:  # the web, mailto:, a fragment of this page
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve()
            if page.name == "index.html" and page.parent == site and target.suffix == ".html":
                from_home.add(target.relative_to(site.resolve()).as_posix())
            if parts.path.startswith("/"):
                broken.append("%s: %s is absolute (from file:// it names the disk's root)" % (page.name, link))
            elif not target.is_file():
                broken.append(
                    "%s: %s is %s" % (page.relative_to(site), link, "a folder" if target.is_dir() else "missing")
                )
            elif target.suffix == "" or link.endswith("/"):
                broken.append("%s: %s names no file type" % (page.relative_to(site), link))
    assert broken == []
    # The walk did read the navigation: the home page links every page of the site.
    assert from_home == {page.relative_to(site).as_posix() for page in pages(site)}


def test_no_page_loads_a_script_from_the_network(site):
    remote = [
        (page.relative_to(site).as_posix(), src)
        for page in pages(site)
        for src in page_links(page).scripts
        if urllib.parse.urlsplit(src).scheme
    ]
    assert remote == []


def test_search_works_from_disk_the_index_is_a_script_and_the_worker_shim_loads_first(site):
    index = (site / "search" / "search_index.js").read_text(encoding="utf-8")
    assert index.startswith("var __index = ")
    locations = {doc["location"].split("#")[0] for doc in json.loads(index[len("var __index = ") :])["docs"]}
    assert {"index.html", "stores.html", "api/stores.html"} <= locations
    for page in pages(site):
        scripts = [pathlib.PurePosixPath(src).name for src in page_links(page).scripts]
        shim = scripts.index("iframe-worker.js")
        bundle = next(n for n, name in enumerate(scripts) if name.startswith("bundle."))
        assert shim < bundle, page
    shim = (site / "javascripts" / "iframe-worker.js").read_text(encoding="utf-8")
    assert 'location.protocol !== "file:"' in shim and "window.Worker = FrameWorker" in shim
