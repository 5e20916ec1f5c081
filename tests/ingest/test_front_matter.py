"""Simple front matter is read without the YAML parser: it must read exactly as YAML does."""
import yaml
from hypothesis import given, settings as hsettings
from hypothesis import strategies as st

from ingest.markdown import _simple_front_matter

KEYS = ["title", "sidebar_position", "slug", "content_kind", "a-b", "_x", "y", "on", "Yes", "NULL", "x y", " title"]
VALUES = ["Hello", "Tips & Tricks", "'Quoted'", '"Double"', "'it''s'", '"esc\\n"', "1", "0", "01", "1.5", "-1", "0x1F",
          "1_000", "yes", "No", "OFF", "null", "~", "", "/", "/docs/x", "a: b", "a #c", "#c", "[a, b]", "{a: 1}", "- x",
          "!tag", "&anchor", "*alias", "|", "%x", "@x", "don't", "What?", "a  b", "tab\there", "naïve", "2024-01-01",
          ".inf", "e5", "a - b", "'open", "'a' b", "=", "<<", "12:30", "http://x.y", "Fly.io", "(paren)", "+plus"]
line = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from([": ", ":", ":  ", " : "]), st.sampled_from(VALUES),
              st.sampled_from(["", " "])).map("".join),
    st.sampled_from(["", "   ", "# comment", "  indented: x", "- item"]))


@hsettings(max_examples=500, deadline=None)
@given(st.lists(line, max_size=5))
def test_simple_front_matter_reads_as_yaml_does(lines):
    simple = _simple_front_matter(lines)
    if simple is None:
        return  # left to the YAML parser
    truth = yaml.safe_load("\n".join(lines)) or {}
    assert simple == truth
    assert [(k, type(v)) for k, v in simple.items()] == [(k, type(v)) for k, v in truth.items()]


def test_typical_front_matter_is_simple():
    assert _simple_front_matter(["title: 'Tips & Tricks'", "sidebar_position: 2", "slug: /"]) == {
        "title": "Tips & Tricks", "sidebar_position": 2, "slug": "/"}
