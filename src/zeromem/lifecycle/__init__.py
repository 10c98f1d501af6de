"""The memory lifecycle (docs/design.md#lifecycle): per-trace signals, the survival score Ω and its
interaction-count decay, the token-budgeted active memory, cards, and state supersession.

A layer between the indexes and retrieval: it reads the store (traces, stored NER mentions)
and the spaCy pipeline the encoders loaded; retrieval uses its supersession rules. No module
here calls a language model.
"""
