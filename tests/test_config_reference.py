"""docs/configuration.md is generated from the settings' field descriptions and must match them."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "scripts" / "config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_reference_is_up_to_date():
    expected = load_script().render().encode("utf-8")
    actual = (ROOT / "docs" / "configuration.md").read_bytes()
    assert actual == expected, (
        "docs/configuration.md differs from the settings in fieldguide/settings.py; regenerate it with\n"
        "    python scripts/config_reference.py > docs/configuration.md")


def test_every_setting_is_described():
    from fieldguide.settings import Settings

    assert [name for name, field in Settings.model_fields.items() if not (field.description or "").strip()] == []
