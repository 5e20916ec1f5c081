"""The chunk: the unit that is embedded, stored, retrieved and shown."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# 3: heading paths keep an explicit {#id} as written; 4: breadcrumbs render inline Markdown;
# 5: docs-site dialects read for their meaning (`reading`), front matter titles (`page_title`);
# 6: the parent section's intro chunk named at ingest (`parent_group_id`); 7: readings leave out HTML
# comments and attribute lists, read `mdx-code-block` fences as MDX, icons in tab titles, Liquid output;
# 8: HTML read as the page shows it (wrappers' tags nothing, text elements their text); 9: Hugo tabs
# that hold Markdown (`text=true`), a line of several shortcodes read as each on its own line, a
# shortcode over lines in a paragraph, a code fence in a list item closed where the item ends
CHUNKER_VERSION = "9"

# Field order of the public record (`fieldguide chunks`, the store, result lines).
RECORD_FIELDS = (
    "chunk_id", "group_id", "part_index", "part_count", "chunk_type", "content_kind", "source",
    "line_start", "line_end", "heading_path", "text", "embed_text", "token_count", "images",
    "reading", "page_title", "parent_group_id",
)
CHUNK_TYPES = ("section", "subsection", "merged", "note")
CONTENT_KINDS = ("screen", "prose")

# Fixed namespace so the Weaviate object UUID of a chunk id is the same everywhere.
CHUNK_NAMESPACE = "7b1d2c9e-3f4a-5b6c-8d7e-9f0a1b2c3d4e"


@dataclass
class Chunk:
    chunk_id: str
    group_id: str
    part_index: int
    part_count: int
    chunk_type: str
    content_kind: str
    source: str
    line_start: int
    line_end: int
    heading_path: list[str]
    text: str
    embed_text: str
    token_count: int
    images: list[str] = field(default_factory=list)
    # The text as the rendered page reads (`ingest.dialects`): what is embedded, scored and
    # quoted. Equal to `text` where the chunk holds no construct of the docs' dialect.
    reading: str | None = None  # None: not read (the text as written stands for it)
    # The page's title when only its front matter has one (no H1): the first crumb a reader sees.
    page_title: str = ""
    # The group id of the chunk holding the parent heading's own text (the parent's intro, its
    # first part): reassembly fetches it by id. "" when there is none (a top section, a note, a
    # parent with no text of its own).
    parent_group_id: str = ""
    # Why content_kind was decided as it was: debugging aid, not part of the record.
    content_kind_reason: str = ""

    def to_record(self) -> dict:
        record = {name: getattr(self, name) for name in RECORD_FIELDS}
        record["heading_path"] = list(self.heading_path)
        record["images"] = list(self.images)
        if record["reading"] is None:
            record["reading"] = self.text
        return record

    @property
    def uuid(self) -> str:
        return chunk_uuid(self.chunk_id)


def chunk_uuid(chunk_id: str) -> str:
    import uuid  # only the store needs UUIDs: `fieldguide chunks` skips the import (~3 ms)

    return str(uuid.uuid5(uuid.UUID(CHUNK_NAMESPACE), chunk_id))


def make_group_id(source: str, heading_path: list[str], occurrence: int, label: str | None = None) -> str:
    """Stable id of a hierarchical chunk: source path + heading path + occurrence.

    Only the chunk's position in the heading tree goes in, never its text, so editing one
    section leaves every other section's id as it was. `occurrence` tells apart sections
    of one file that share a heading path (and the notes of a file). A labelled doc set (a
    version, a product) puts its label first, so `v1/guide.md` and `v2/guide.md` with the same
    headings never share an id; the unnamed set keeps the ids it always had.
    """
    key = "\x1f".join([*([f"@{label}"] if label else []), source, *heading_path, f"#{occurrence}"])
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


def make_part_id(group_id: str, part_index: int, part_count: int) -> str:
    """A part's id: the group id itself when the chunk was not split."""
    return group_id if part_count == 1 else f"{group_id}-p{part_index}"
