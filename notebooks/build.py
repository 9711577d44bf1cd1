"""Write the notebooks (sources only: outputs are never committed).

    python notebooks/build.py

The notebooks are executed headless by ``make test`` (tests/integration/test_notebooks.py),
so every claim they plot is also checked by an ``assert`` in a cell.
"""

from __future__ import annotations

import pathlib

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = pathlib.Path(__file__).resolve().parent

SETUP = """\
import pathlib, sys
ROOT = pathlib.Path.cwd().resolve().parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
%matplotlib inline"""

STARVATION = [
    new_markdown_cell(
        "# Starvation: one shared budget vs pools\n\n"
        "A synthetic 5,000-entry agent memory (notes, tasks, facts, episodes, skills, growth notes and a dozen "
        "behavioural corrections) and 50 queries. The *one budget* retriever ranks everything with the spec's "
        "scorer into one budget as large as all pools together; *pools* fills one reserved budget per group of "
        "types and loads the corrections first, outside every budget. The numbers come from "
        "`benchmarks/starvation.py`, which prints the same table."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        "import starvation, synth\n"
        "store = starvation.make_store()\n"
        "queries = synth.make_queries(50, seed=8)\n"
        "rates = starvation.load_rates(store, queries)\n"
        "for kind in starvation.TYPES:\n"
        "    print(f\"{kind:11s} one budget {rates['shared'][kind]:5.0%}   pools {rates['pools'][kind]:5.0%}\")"
    ),
    new_code_cell(
        "fig, ax = plt.subplots(figsize=(8, 3.5))\n"
        "x = range(len(starvation.TYPES))\n"
        "ax.bar([i - 0.2 for i in x], [rates['shared'][t] for t in starvation.TYPES], 0.4, label='one shared budget')\n"
        "ax.bar([i + 0.2 for i in x], [rates['pools'][t] for t in starvation.TYPES], 0.4, label='pools + always tier')\n"
        "ax.set_xticks(list(x), starvation.TYPES)\n"
        "ax.set_title('Type starvation: one shared budget vs pools')\n"
        "ax.set_xlabel('memory type')\n"
        "ax.set_ylabel('share of queries loading the type')\n"
        "ax.set_ylim(0, 1.05)\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "The seed's finding reproduces: under one budget the low-priority types (episodes, skills, growth) are "
        "structurally absent and corrections load on a minority of queries; with pools each of them loads on "
        "every query."
    ),
    new_code_cell(
        "for kind in ('episode', 'skill', 'growth'):\n"
        "    assert rates['shared'][kind] <= 0.1 and rates['pools'][kind] == 1.0, kind\n"
        "assert rates['shared']['correction'] < 0.5 and rates['pools']['correction'] == 1.0"
    ),
    new_markdown_cell(
        "Facts stay rare in both columns: in this pool plan they share the *content* pool with fresher, "
        "higher-priority notes and tasks, and inside one pool the single-scorer rule applies. Giving facts a pool "
        "of their own is the fix; the pool plan is the place where such priorities are decided."
    ),
    new_markdown_cell(
        "## Corrections under a flood\n\nStarting from a quiet store, fresh high-priority notes that echo the "
        "queries pour in. Under one budget the corrections that still loaded on quiet turns are pushed out; with "
        "the always tier every correction loads at every flood size."
    ),
    new_code_cell(
        "presence = starvation.correction_presence(store, queries)\n"
        "fig, ax = plt.subplots(figsize=(6, 3.5))\n"
        "ax.plot(starvation.FLOODS, presence['shared'], 'o-', label='one shared budget')\n"
        "ax.plot(starvation.FLOODS, presence['pools'], 's-', label='pools + always tier')\n"
        "ax.set_xscale('symlog', linthresh=100)\n"
        "ax.set_xlabel('fresh entries flooding in')\n"
        "ax.set_title('Corrections under a flood of fresh content')\n"
        "ax.set_ylabel('share of corrections loaded')\n"
        "ax.set_ylim(-0.05, 1.05)\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()\n"
        "print(dict(zip(starvation.FLOODS, presence['shared'])))"
    ),
    new_code_cell(
        "assert presence['pools'] == [1.0] * len(starvation.FLOODS)\n"
        "assert presence['shared'][0] > presence['shared'][-1] == 0.0"
    ),
]

LANGCHAIN = [
    new_markdown_cell(
        "# LangChain: a drop-in retriever\n\n"
        "The bundled example store as LangChain documents, `PoolSplitRetriever` in an LCEL RAG chain with a fake "
        "chat model, the why-not report, and per-pool recall over a vector store against a plain top-k."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        "import datetime, math, re, zlib\n"
        "from langchain_core.documents import Document\n"
        "from langchain_core.embeddings import Embeddings\n"
        "from langchain_core.language_models.fake_chat_models import GenericFakeChatModel\n"
        "from langchain_core.messages import AIMessage\n"
        "from langchain_core.prompts import ChatPromptTemplate\n"
        "from langchain_core.runnables import RunnablePassthrough\n"
        "from langchain_core.vectorstores import InMemoryVectorStore\n"
        "from poolsplit_adapters.langchain import PoolSplitRetriever, format_documents\n"
        "from poolsplit_adapters.stores import load_pools, load_store\n"
        "entries = load_store(ROOT / 'examples' / 'memory.jsonl')\n"
        "pools = load_pools(ROOT / 'examples' / 'pools.toml')\n"
        "NOW = datetime.datetime(2026, 11, 20, 9)\n"
        "docs = [Document(page_content=e['content'], id=e['id'],\n"
        "                 metadata={k: v for k, v in e.items() if k not in ('content', 'id')}) for e in entries]\n"
        "len(docs), [p.name for p in pools]"
    ),
    new_code_cell(
        "retriever = PoolSplitRetriever(documents=docs, pools=pools, now=NOW)\n"
        "prompt = ChatPromptTemplate.from_messages([('system', 'Memory:\\n{context}'), ('human', '{question}')])\n"
        "model = GenericFakeChatModel(messages=iter([AIMessage(content='ok')] * 10))\n"
        "chain = {'context': retriever | format_documents, 'question': RunnablePassthrough()} | prompt\n"
        "value = chain.invoke('rounding bug in refunds')\n"
        "print(value.to_messages()[0].content[:1500])"
    ),
    new_code_cell("print(retriever.explain())"),
    new_code_cell(
        "class WordHashEmbedding(Embeddings):\n"
        "    '''Bag of words hashed into 256 dimensions: similar texts, similar vectors; no model download.'''\n"
        "    def _one(self, text):\n"
        "        v = [0.0] * 256\n"
        "        for w in re.findall(r'[a-z0-9]+', text.lower()):\n"
        "            v[zlib.crc32(w.encode()) % 256] += 1\n"
        "        n = math.sqrt(sum(x * x for x in v)) or 1.0\n"
        "        return [x / n for x in v]\n"
        "    def embed_documents(self, texts): return [self._one(t) for t in texts]\n"
        "    def embed_query(self, text): return self._one(text)\n"
        "store = InMemoryVectorStore(WordHashEmbedding())\n"
        "store.add_documents(docs)\n"
        "pooled = PoolSplitRetriever.from_vectorstore(store, pools, fetch_k=12, now=NOW)\n"
        "plain = store.as_retriever(search_kwargs={'k': 24})\n"
        "queries = ['rounding bug in refunds', 'why is the Monday dedupe job slow', 'prepare the pull request',\n"
        "           'deploy checkout to staging', 'backfill September orders', 'retry the payment provider']\n"
        "kinds = ['correction', 'episode', 'skill', 'growth']\n"
        "rate = {name: {k: 0 for k in kinds} for name in ('plain top-k', 'per-pool recall')}\n"
        "for q in queries:\n"
        "    for name, r in (('plain top-k', plain), ('per-pool recall', pooled)):\n"
        "        got = {d.metadata['type'] for d in r.invoke(q)}\n"
        "        for k in kinds:\n"
        "            rate[name][k] += k in got\n"
        "rate"
    ),
    new_code_cell(
        "fig, ax = plt.subplots(figsize=(7, 3.2))\n"
        "for shift, name in ((-0.2, 'plain top-k'), (0.2, 'per-pool recall')):\n"
        "    ax.bar([i + shift for i in range(len(kinds))], [rate[name][k] / len(queries) for k in kinds], 0.4, label=name)\n"
        "ax.set_xticks(range(len(kinds)), kinds)\n"
        "ax.set_title('Plain top-k vs per-pool recall over one vector store')\n"
        "ax.set_xlabel('memory type')\n"
        "ax.set_ylabel('share of queries returning the type')\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()\n"
        "assert all(rate['per-pool recall'][k] == len(queries) for k in kinds)"
    ),
]

LLAMA = [
    new_markdown_cell(
        "# LlamaIndex: memory blocks inside `Memory`\n\n"
        "The bundled store as the long-term memory of a `Memory`, through `poolsplit_memory_blocks`: a "
        "priority-0 block with the corrections (never truncated) and a truncatable pooled block. A "
        "`ContextChatEngine` with `MockLLM` runs a long conversation; LlamaIndex's own instrumentation captures "
        "what the LLM receives on every turn, and the corrections must be in it every time."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        "import datetime\n"
        "from llama_index.core.chat_engine import ContextChatEngine\n"
        "from llama_index.core.instrumentation import get_dispatcher\n"
        "from llama_index.core.instrumentation.event_handlers import BaseEventHandler\n"
        "from llama_index.core.instrumentation.events.llm import LLMChatStartEvent, LLMCompletionStartEvent\n"
        "from llama_index.core.llms import MockLLM\n"
        "from llama_index.core.memory import Memory\n"
        "from llama_index.core.storage.chat_store.base_db import MessageStatus\n"
        "from poolsplit_adapters.llama_index import PoolSplitRetriever, nodes_from, poolsplit_memory_blocks\n"
        "from poolsplit_adapters.render import parse_markers\n"
        "from poolsplit_adapters.stores import load_pools, load_store\n"
        "from poolsplit_adapters import Pool\n"
        "entries = load_store(ROOT / 'examples' / 'memory.jsonl')\n"
        "pools = load_pools(ROOT / 'examples' / 'pools.toml')\n"
        "NOW = datetime.datetime(2026, 11, 20, 9)\n"
        "# the user's standing instructions and preferences, which the flush recognises: a pool of their own\n"
        "standing = Pool('standing', 150, 12, ('instruction', 'preference'))\n"
        "blocks = poolsplit_memory_blocks(entries, [pools[0], standing, *pools[1:]], now=NOW)\n"
        "memory = Memory.from_defaults(session_id='notebook', token_limit=1500, memory_blocks=blocks)\n"
        "# The chat engine's retriever finds facts: give it the facts (the corrections reach the LLM\n"
        "# through the memory blocks; a retriever given them with no pool for them would warn that\n"
        "# they cannot load).\n"
        "facts_only = nodes_from([e for e in entries if e['type'] == 'fact'])\n"
        "facts = PoolSplitRetriever([Pool('facts', 100, 2, ('fact',))], facts_only, now=NOW)\n"
        "engine = ContextChatEngine.from_defaults(retriever=facts, memory=memory, llm=MockLLM(max_tokens=12))\n"
        "corrections = [e['content'] for e in entries if e.get('scope') == 'always']\n"
        "\n"
        "seen = []  # the text of every LLM input, in order\n"
        "class LLMInput(BaseEventHandler):\n"
        "    @classmethod\n"
        "    def class_name(cls): return 'LLMInput'\n"
        "    def handle(self, event, **kwargs):\n"
        "        if isinstance(event, LLMChatStartEvent):\n"
        "            seen.append('\\n'.join(str(m.content) for m in event.messages))\n"
        "        elif isinstance(event, LLMCompletionStartEvent):\n"
        "            seen.append(event.prompt)\n"
        "get_dispatcher().add_event_handler(LLMInput())"
    ),
    new_code_cell(
        "present, sizes, episodes, chat = [], [], [], []\n"
        "for turn in range(40):\n"
        "    engine.chat(f'turn {turn}: the Monday dedupe job is slow again, what changed in the pipeline?')\n"
        "    present.append(sum(c in seen[-1] for c in corrections))\n"
        "    sizes.append(len(parse_markers(seen[-1])))\n"
        "    episodes.append(sum(1 for e in blocks[1].store.index if e['type'] == 'episode'))\n"
        "    chat.append(len(memory.get_all(status=MessageStatus.ACTIVE)))  # Memory's chat queue\n"
        "print('corrections seen by the LLM per turn:', set(present))\n"
        "print('episodes in long-term memory at the end:', episodes[-1])"
    ),
    new_code_cell(
        "flush = next(t for t in range(1, 40) if episodes[t] > episodes[t - 1])  # Memory's first flush\n"
        "fig, ax = plt.subplots(figsize=(9, 3.8))\n"
        "ax.plot(present, label='corrections\\nin the LLM input')\n"
        "ax.plot(sizes, label='memories\\nin the LLM input')\n"
        "ax.plot(chat, label='chat queue\\n(messages)')\n"
        "ax.plot(episodes, label='long-term\\nepisodes')\n"
        "ax.axvline(flush, color='grey', ls=':', label=f'the flush\\n(turn {flush})')\n"
        "ax.set_title('Corrections hold through 40 turns of a LlamaIndex chat')\n"
        "ax.set_xlabel('turn')\n"
        "ax.set_ylabel('count per turn')\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()\n"
        "assert present == [len(corrections)] * 40 and episodes[-1] > 0"
    ),
]

LLAMA += [
    new_markdown_cell(
        "**Why the episodes jump at one turn.** `Memory` keeps the chat in its own queue until the queue holds "
        "more than `token_limit × chat_history_token_ratio` tokens (1,500 × 0.7 here), then hands its oldest "
        "messages, up to `token_flush_size` tokens (which `from_defaults` sets to the same limit), to the memory "
        "blocks in one go, keeping the last turn. Each turn here is a short question and `MockLLM`'s 12-token "
        "answer, so the queue crosses the limit after some thirty turns and the whole chat but the last turn is "
        "flushed at once. The pooled "
        "block writes each flushed line through the write gate: every question is an episode of its own, and the "
        "identical mock answers are stored once (the rest counted as duplicates). Until the flush, the growing "
        "chat leaves less room in the 1,500 tokens, so `Memory` truncates the pooled block entry by entry (the "
        "corrections block, priority 0, never); after it, the pooled block has room again. This is how `Memory` "
        "flushes, not a defect: the cell below checks it against the numbers."
    ),
    new_code_cell(
        "limit = memory.token_limit * memory.chat_history_token_ratio\n"
        "report = blocks[1].store.gate_report\n"
        "print(f'chat queue limit {limit:.0f} tokens, flushed up to {memory.token_flush_size} tokens at a time')\n"
        "print(f'first flush at turn {flush}: messages in the chat queue {chat[flush - 1]} -> {chat[flush]}')\n"
        "print('flushed lines written:', len(report.written), '| refused:', dict(report.refused))\n"
        "assert chat[flush] < chat[flush - 1] and chat[:flush] == sorted(chat[:flush])  # grew, then flushed\n"
        "assert episodes[flush] - episodes[flush - 1] == len(report.written)  # every line written is an episode\n"
        "assert sizes[flush + 1] > sizes[flush]  # the next LLM input: the pooled block has room again"
    ),
]

AGENT = [
    new_markdown_cell(
        "# LangChain agents: corrections survive a long run, the store fills with episodes\n\n"
        "A `create_agent` agent with `PoolSplitMemoryMiddleware`, a fake tool-calling chat model that records every "
        "request, an `InMemorySaver` and an `InMemoryStore`. 120 turns with a tool call each; at turn 40 a flood "
        "of 300 fresh, high-priority notes that echo the questions lands in the user's memory. Per turn we read "
        "what the model actually received and what the store holds."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        "from langchain.agents import create_agent\n"
        "from langchain_core.language_models.fake_chat_models import GenericFakeChatModel\n"
        "from langchain_core.messages import AIMessage, HumanMessage\n"
        "from langchain_core.tools import tool\n"
        "from langgraph.checkpoint.memory import InMemorySaver\n"
        "from langgraph.store.memory import InMemoryStore\n"
        "from poolsplit_adapters import Pool\n"
        "from poolsplit_adapters.langchain import BaseStoreMemory, PoolSplitMemoryMiddleware\n"
        "from poolsplit_adapters.render import parse_markers\n"
        "\n"
        "class ToolCallingFake(GenericFakeChatModel):\n"
        "    '''Calls `lookup` once per question, then answers; records every request.'''\n"
        "    requests: list = []\n"
        "    def bind_tools(self, tools, **kwargs):\n"
        "        return self\n"
        "    def _generate(self, messages, stop=None, run_manager=None, **kwargs):\n"
        "        self.requests.append(list(messages))\n"
        "        n = len(self.requests)\n"
        "        if isinstance(messages[-1], HumanMessage):\n"
        "            call = {'name': 'lookup', 'args': {'q': messages[-1].text}, 'id': f'c{n}'}\n"
        "            reply = AIMessage('', tool_calls=[call])\n"
        "        else:\n"
        "            reply = AIMessage(f'answer {n}')\n"
        "        self.messages = iter([reply])\n"
        "        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)\n"
        "\n"
        "@tool\n"
        "def lookup(q: str) -> str:\n"
        "    '''Look up deploy status.'''\n"
        "    return f'status for {q}: green'\n"
        "\n"
        "store = InMemoryStore()\n"
        "ana = BaseStoreMemory(store, ('memories', 'ana'))\n"
        "corrections = ['Never deploy on Fridays.', 'Quote amounts in integer cents.',\n"
        "               'Open a pull request, never force-push.']\n"
        "for i, text in enumerate(corrections):\n"
        "    ana.put({'id': f'fix-{i}', 'content': text, 'type': 'correction', 'scope': 'always',\n"
        "             'source': 'user:ana'})\n"
        "pools = [Pool('corrections', 0, 0, ('correction',)),\n"
        "         Pool('standing', 150, 12, ('instruction', 'preference')),  # the user's own, recognised\n"
        "         Pool('recent', 300, 4, ('episode', 'note', 'fact'))]\n"
        "memory = PoolSplitMemoryMiddleware(pools, namespace=lambda rt: ('memories', rt.context['user_id']),\n"
        "                                   max_turns=6)\n"
        "model = ToolCallingFake(messages=iter([]))\n"
        "agent = create_agent(model, tools=[lookup], middleware=[memory], checkpointer=InMemorySaver(),\n"
        "                     store=store, system_prompt='You are the deploy assistant.', context_schema=dict)"
    ),
    new_code_cell(
        "present, shown, episodes, state_size = [], [], [], []\n"
        "config = {'configurable': {'thread_id': 'long-run'}}\n"
        "for turn in range(120):\n"
        "    if turn == 40:  # the flood: fresh, high-priority notes that echo the questions\n"
        "        ana.put_many([{'content': f'checkout deploy status note {k}: the checkout deploy is green',\n"
        "                       'type': 'note', 'base_priority': 9, 'source': 'ci'} for k in range(300)])\n"
        "    start = len(model.requests)\n"
        "    agent.invoke({'messages': [('user', f'turn {turn}: is the checkout deploy green?')]}, config,\n"
        "                 context={'user_id': 'ana'})\n"
        "    calls = [parse_markers(r[0].text) for r in model.requests[start:]]\n"
        "    present.append(min(sum(m.get('scope') == 'always' for m in c) for c in calls))\n"
        "    shown.append(len(calls[-1]))\n"
        "    episodes.append(sum(e['type'] == 'episode' for e in ana.entries()))\n"
        "    state_size.append(len(agent.get_state(config).values['messages']))\n"
        "print('model calls:', len(model.requests), '| corrections on every call:', set(present))\n"
        "print('episodes in the store:', episodes[-1], '| messages in the state at the end:', state_size[-1])"
    ),
    new_code_cell(
        "fig, (model_ax, store_ax) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)\n"
        "model_ax.plot(present, label='corrections\\n(fewest in a turn)')\n"
        "model_ax.plot(shown, label='memories in the\\nsystem message')\n"
        "model_ax.plot(state_size, label='messages in the\\ncheckpointed state')\n"
        "model_ax.set_title('What each model call received')\n"
        "model_ax.set_ylabel('count per turn')\n"
        "model_ax.set_ylim(0, max(state_size) * 1.15)\n"
        "store_ax.plot(episodes, color='tab:green', label='episodes')\n"
        "store_ax.set_title('What the store holds: the turns that left the state')\n"
        "store_ax.set_ylabel('episodes in the store')\n"
        "for ax in (model_ax, store_ax):\n"
        "    ax.axvline(40, color='grey', ls=':', label='300-note flood')\n"
        "    ax.set_xlabel('turn')\n"
        "    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "Every model call, before and after the flood, received all three corrections. The state stays at the "
        "goal plus six turns (each a question, the tool call, its result and the answer), and every turn that "
        "left it is in the store as two episodes (the user's side, and the answer with its tool call, linked by one "
        "`exchange` id). The last system message the model saw:"
    ),
    new_code_cell(
        "assert present == [len(corrections)] * 120\n"
        "assert max(state_size) <= 4 + 6 * 4 and state_size[-1] == state_size[60]\n"
        "assert episodes[-1] == 2 * (120 - 6) and episodes == sorted(episodes)  # each turn: the user's side and the answer\n"
        "last = model.requests[-1][0].text\n"
        "assert [m['id'] for m in parse_markers(last)][:3] == ['fix-0', 'fix-1', 'fix-2']\n"
        "print(last)"
    ),
]

TASKS = [
    new_markdown_cell(
        "# Task-aware pool plans and progressive loading\n\n"
        "One query, the bundled example store with summaries (`examples/memory_with_summaries.jsonl`) and one "
        "total budget, planned five ways: one pool plan per task type (`plan_for_task`, weights from "
        "`DEFAULT_PRESETS`). Each bar is what reaches the model, stacked by pool; the corrections load outside "
        "every budget, so their segment is the same in every bar."
    ),
    new_code_cell(SETUP),
    new_code_cell(
        "import datetime\n"
        "from poolsplit_adapters import select\n"
        "from poolsplit_adapters.memory.tasks import TASK_TYPES, detect_task_type, plan_for_task\n"
        "from poolsplit_adapters.memory.progressive import progressive_select\n"
        "from poolsplit_adapters.stores import load_store\n"
        "entries = load_store(ROOT / 'examples' / 'memory_with_summaries.jsonl')\n"
        "NOW = datetime.datetime(2026, 11, 20, 9)\n"
        "TOTAL_TOKENS, TOTAL_ENTRIES = 570, 14\n"
        "context = {'message': 'the Monday dedupe job is slow again, what changed?', 'project': 'pipeline'}\n"
        "kinds = {e['type'] for e in entries}\n"
        "found = detect_task_type(context)\n"
        "print('detected:', found.type, [(m.field, m.signal, m.weight) for m in found.decided_by])\n"
        "plans = {t: plan_for_task(t, total_tokens=TOTAL_TOKENS, total_entries=TOTAL_ENTRIES, entry_types=kinds)\n"
        "         for t in TASK_TYPES}\n"
        "runs = {t: select(entries, plan, context, now=NOW) for t, plan in plans.items()}\n"
        "names = [p.name for p in plans['debugging']]\n"
        "tokens = {t: {n: s.tokens_used + s.always_tokens for n, s in run.stats.items()} for t, run in runs.items()}\n"
        "for t in TASK_TYPES:\n"
        "    print(f'{t:15s}', '  '.join(f'{n} {tokens[t][n]:3d}' for n in names))"
    ),
    new_code_cell(
        "fig, ax = plt.subplots(figsize=(8, 3.8))\n"
        "bottom = [0] * len(TASK_TYPES)\n"
        "for name in names:\n"
        "    heights = [tokens[t][name] for t in TASK_TYPES]\n"
        "    ax.bar(TASK_TYPES, heights, bottom=bottom, label=name)\n"
        "    bottom = [b + h for b, h in zip(bottom, heights)]\n"
        "ax.set_title('Same query, same budget, five task types')\n"
        "ax.set_xlabel('task type the pool plan is made for')\n"
        "ax.set_ylabel('tokens reaching the model')\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()"
    ),
    new_code_cell(
        "for t, run in runs.items():\n"
        "    for n, s in run.stats.items():\n"
        "        assert s.tokens_used <= s.max_tokens and s.entries_used <= s.max_entries, (t, n)\n"
        "    assert sum(p.max_tokens for p in plans[t]) == TOTAL_TOKENS\n"
        "assert len({tokens[t]['corrections'] for t in TASK_TYPES}) == 1  # the always tier does not move\n"
        "assert max(TASK_TYPES, key=lambda t: tokens[t]['episodic']) == 'debugging'\n"
        "assert max(TASK_TYPES, key=lambda t: tokens[t]['semantic']) == 'exploration'\n"
        "assert max(TASK_TYPES, key=lambda t: tokens[t]['anti_patterns']) == 'review'"
    ),
    new_markdown_cell(
        "## Progressive loading under the detected plan\n\n"
        "The same query under the detected type's plan, plain (every entry in full) and progressive (summaries "
        "first; full text only when seed 003's rule asks for it), stacked by layer. The progressive bar's full "
        "segment is the corrections, which always load in full. `benchmarks/progressive.py` measures what the "
        "summaries cost in answers."
    ),
    new_code_cell(
        "plan = plans[found.type]\n"
        "plain = select(entries, plan, context, now=NOW)\n"
        "layered = progressive_select(entries, plan, context, now=NOW)\n"
        "rows = {'plain': {'summary': 0, 'timeline': 0, 'full': sum(c.cost for c in plain.chosen)},\n"
        "        'progressive': layered.metrics.tokens_by_layer()}\n"
        "fig, ax = plt.subplots(figsize=(6, 3.2))\n"
        "left = [0, 0]\n"
        "# a layer that loaded nothing in either mode draws no bar, so it gets no legend entry either\n"
        "layers = [n for n in ('full', 'timeline', 'summary') if rows['plain'][n] or rows['progressive'][n]]\n"
        "for layer in layers:\n"
        "    widths = [rows['plain'][layer], rows['progressive'][layer]]\n"
        "    ax.barh(['plain', 'progressive'], widths, left=left, label=layer)\n"
        "    left = [a + b for a, b in zip(left, widths)]\n"
        "ax.set_title('Plain vs progressive loading, by layer')\n"
        "ax.set_xlabel('tokens reaching the model')\n"
        "ax.set_ylabel('mode')\n"
        "ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1))  # outside the axes: it covers no data\n"
        "fig.tight_layout()\n"
        "plt.show()\n"
        "print(layered.metrics)\n"
        "print('layers with no tokens in either mode:', [n for n in ('full', 'timeline', 'summary') if n not in layers])\n"
        "print('entries reaching the model: plain', len(plain.chosen), '/ progressive', len(layered.chosen))"
    ),
    new_code_cell(
        "assert layered.metrics.total_tokens < sum(c.cost for c in plain.chosen)\n"
        "assert len(layered.chosen) >= len(plain.chosen)\n"
        "assert not layered.deepened  # no detail word, and far more than 3 entries loaded"
    ),
]


def write(name: str, cells: list) -> None:
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(HERE / name))


if __name__ == "__main__":
    write("starvation.ipynb", STARVATION)
    write("langchain.ipynb", LANGCHAIN)
    write("llama_index.ipynb", LLAMA)
    write("agent.ipynb", AGENT)
    write("tasks.ipynb", TASKS)
    print("wrote 5 notebooks to", HERE)
