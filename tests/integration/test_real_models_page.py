"""The page of real-model snippets (docs/adapters/real-models.md) stays
true without a network: its blocks, fenced ```` ```python {.provider} ````,
are never run (they need an API key or a model download), but each one
compiles, each of its imports resolves where the package is installed, and
each ``init_chat_model("provider:...")`` names a provider whose package is
installed. An import from a provider package that is not installed is
skipped, with the reason naming the pip command the page lists for it."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from typing import List, Tuple

import pytest
from doc_blocks import ROOT, code_blocks

PAGE = "docs/adapters/real-models.md"
BLOCKS = [(number, code) for name, number, code in code_blocks("python {.provider}") if name == PAGE]

#: Provider modules the page may use without their package in this venv, and
#: how the page says to install each. Anything else must import.
PROVIDERS = {
    "langchain_openai": 'pip install "langchain[openai]"',
    "langchain_anthropic": 'pip install "langchain[anthropic]"',
    "langchain_huggingface": 'pip install "langchain[huggingface]"',
    "llama_index.llms.openai": "pip install llama-index-llms-openai",
    "llama_index.embeddings.openai": "pip install llama-index-embeddings-openai",
    "llama_index.embeddings.huggingface": "pip install llama-index-embeddings-huggingface",
}

Import = Tuple[int, int, str, List[str]]  # (block, line in the block, module, names imported from it)


def _imports() -> List[Import]:
    found: List[Import] = []
    for number, code in BLOCKS:
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found.extend((number, node.lineno, alias.name, []) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.append((number, node.lineno, node.module, [alias.name for alias in node.names]))
    return found


def _chat_providers() -> List[Tuple[int, str]]:
    """(block, provider) for every ``init_chat_model("provider:model")``."""
    return [
        (number, provider) for number, code in BLOCKS for provider in re.findall(r'init_chat_model\("([a-z_-]+):', code)
    ]


def _provider(module: str) -> str:
    return next((name for name in PROVIDERS if module == name or module.startswith(name + ".")), "")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def test_the_page_has_provider_blocks_that_the_docs_test_leaves_alone():
    assert len(BLOCKS) >= 5
    assert not [name for name, _, code in code_blocks("python") if name == PAGE]  # none runs in test_docs.py
    used = {_provider(module) for _, _, module, _ in _imports()}
    used |= {"langchain_%s" % provider.replace("-", "_") for _, provider in _chat_providers()}
    assert used >= set(PROVIDERS)  # every install line the page lists is for something it shows


@pytest.mark.parametrize("number, code", BLOCKS, ids=["block-%d" % number for number, _ in BLOCKS])
def test_every_block_compiles(number, code):
    compile(code, "%s provider block %d" % (PAGE, number), "exec")


@pytest.mark.parametrize(
    "block, line, module, names",
    _imports(),
    ids=["block-%d-line-%d-%s" % (block, line, module) for block, line, module, _ in _imports()],
)
def test_every_import_resolves_where_its_package_is_installed(block, line, module, names):
    provider = _provider(module)
    if provider and not _installed(module):
        pytest.skip("%s is not installed here (the page says: %s)" % (module, PROVIDERS[provider]))
    imported = importlib.import_module(module)
    for name in names:
        found = hasattr(imported, name) or _installed("%s.%s" % (module, name))
        assert found, "%s block %d line %d: %s has no %r" % (PAGE, block, line, module, name)


@pytest.mark.parametrize("block, provider", _chat_providers())
def test_every_chat_model_string_names_a_provider_the_page_installs(block, provider):
    module = "langchain_%s" % provider.replace("-", "_")
    assert module in PROVIDERS, "block %d: init_chat_model provider %r has no install line" % (block, provider)
    if not _installed(module):
        pytest.skip("%s is not installed here (the page says: %s)" % (module, PROVIDERS[module]))
    importlib.import_module(module)


def test_the_page_says_how_to_install_every_provider_package():
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    assert [command for command in PROVIDERS.values() if command not in text] == []
