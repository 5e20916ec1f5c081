"""Ingestion: Markdown → heading tree → hierarchical chunks → token-safe parts → store."""
