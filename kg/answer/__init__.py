"""Answers over search results: answers with citations (cited), questions to templates
(nlquery). Light on purpose: the LLM client is imported by the submodules only."""
