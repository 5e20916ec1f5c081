"""System prompts, one Markdown file per intent, and their loader (`prompts.loader`)."""
