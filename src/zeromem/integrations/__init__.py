"""Adapters that put zeromem inside the agent frameworks people already use.

Each module imports its framework lazily (on first use of an adapter), needs its own extra
(``pip install 'zeromem[langgraph]'``, ``[agents]``, ``[llamaindex]``) and says which one when
it is missing. Every adapter reads and writes through ``Memory`` in one scope: no adapter
path calls a language model. docs/integrations.md has the details.
"""
