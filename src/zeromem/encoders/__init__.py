"""Encoders: lexical tokens, dense vectors and entity mentions (real models, no LLM).

Import the submodules directly (``from zeromem.encoders.embed import ...``); this package
imports nothing heavy so that CRUD-only use never loads torch or spaCy.
"""
