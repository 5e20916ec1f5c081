"""Small Markdown corpora written into a temporary folder."""
from __future__ import annotations

from pathlib import Path

LONG_PARAGRAPH = (
    "The reconciliation screen lists every imported transaction next to the bank statement line it "
    "matches, and each row can be locked once both amounts agree. "
)

PAGES = {
    "getting-started.md": (
        "# Getting started\n\nInstall the app and open your first budget file.\n\n"
        "## Create a budget\n\nClick **New budget** in the sidebar and give it a name.\n\n"
        "## Import data\n\nUse **File > Import** to bring in a CSV export from your bank.\n"
    ),
    "accounts/overview.md": (
        "# Accounts\n\nAccounts hold your money: checking, savings and credit cards.\n\n"
        "## Account screen\n\nThe account screen has a **Balance** field, an **Add account** button and a "
        "filter menu at the top right.\n\n![Account screen](https://example.com/img/accounts.png)\n"
    ),
    "reports.md": (
        "# Reports\n\nReports show spending over time.\n\n## Net worth\n\nNet worth adds every account balance.\n"
    ),
    # one section long enough to be split into several parts
    "reconcile.md": "# Reconciling\n\n## Reconcile screen\n\n" + "\n\n".join(
        f"Step {i}. " + LONG_PARAGRAPH * 3 for i in range(1, 9)) + "\n",
}


def write_corpus(root: Path, pages: dict[str, str] | None = None) -> Path:
    for name, text in (pages or PAGES).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


class CountingEmbeddings:
    """Wraps the real model and counts what it was asked: texts embedded as documents, questions
    embedded as queries (the calibration's probes are questions)."""

    def __init__(self, inner):
        from fieldguide.embedding import embedding_dimension

        self.inner = inner
        self.texts = 0
        self.queries = 0
        self.dimension = embedding_dimension(inner)

    def embed_documents(self, texts):
        self.texts += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text):
        self.queries += 1
        return self.inner.embed_query(text)
