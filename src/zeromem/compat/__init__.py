"""Drop-in compatible APIs of other memory libraries, over zeromem (zero LLM calls)."""
