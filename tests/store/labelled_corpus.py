"""Two versions of one product's docs: the same files and headings, different facts (v1, v2)."""
from __future__ import annotations

from pathlib import Path

PAGES = {
    "v1": {
        "export.md": "# Exporting data\n\n## Export to CSV\n\nIn version one, choose File, then Export CSV. "
                     "Semicolons separate the fields of the exported file.\n\n## Scheduled exports\n\n"
                     "Version one cannot schedule exports: run each export by hand.\n",
        "sync.md": "# Syncing devices\n\nDevices sync every fifteen minutes over the classic sync protocol.\n\n"
                   "## Sync conflicts\n\nThe newest edit wins a sync conflict; the older one is discarded.\n",
        "accounts.md": "# Accounts\n\n## Closing an account\n\nClose an account from the account menu: choose "
                       "Close and confirm twice.\n",
    },
    "v2": {
        "export.md": "# Exporting data\n\n## Export to CSV\n\nIn version two, open Settings, then Data, and click "
                     "Download CSV. Commas separate the fields of the exported file.\n\n## Scheduled exports\n\n"
                     "Version two runs scheduled exports every night at two o'clock.\n",
        "sync.md": "# Syncing devices\n\nDevices sync instantly over the live sync channel.\n\n"
                   "## Sync conflicts\n\nA sync conflict opens a merge dialog that shows both edits side by side.\n",
        "accounts.md": "# Accounts\n\n## Closing an account\n\nClose an account in Settings, Account, Danger zone; "
                       "closing is final after thirty days.\n",
    },
}


def write_version(root: Path, version: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in PAGES[version].items():
        (root / name).write_text(text, encoding="utf-8")
    return root
