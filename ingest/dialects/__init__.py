"""Docs-site dialects read for their meaning: the text a reader of the rendered page sees.

Documentation is written for a site generator, and each has constructs of its own that
CommonMark reads as literal text. This pass recognises the common ones and gives, for every
source line, what the rendered page shows in its place (its *reading*):

| dialect | construct | reading |
| --- | --- | --- |
| MkDocs / Material | `!!! note "Title"`, `??? tip` (indented body) | `Note: Title`, the body dedented |
| | `=== "Linux"` content tab (indented body) | `Linux:`, the body dedented |
| | `--8<-- "file.md"` snippet | an include (below) |
| | `:material-check:` icons (in tab and admonition titles too), `{ .md-button }` attribute lists, `*[HTML]: …` abbreviations | nothing |
| Docusaurus / MDX | `import …` / `export …` lines, `{/* comments */}` | nothing |
| | `:::tip Title` / `:::note[Title]` … `:::` | `Tip: Title`, the body |
| | `<Tabs>`, `</TabItem>`, other capitalised JSX tags alone on a line | nothing, or their `label`/`title` |
| | `<TabItem value="x" label="Linux">`, `<Admonition type="tip" title="T">` | `Linux:`, `Tip: T` |
| | an inline `<Icon title="Save" />` | `[Save]` |
| | a ```` ```mdx-code-block ```` fence (one may hold another) | its content, read as MDX |
| Nuxt Content (MDC) | `::callout{icon="…"}` (or `::prose-tip`) with a bold title line … `::` | `Note: Title`, the body |
| | `::code-group`, `::card{title="T"}`, `:::tabs-item{label="L"}`, `#slot` lines, YAML props | nothing, `T:`, `L:` |
| | `:icon{name="…" title="Field Width Button"}`, `:kbd[Ctrl]` | `[Field Width Button]`, `Ctrl` |
| | `:partial{content="x"}` | an include |
| Hugo | `{{< notice warning >}}` … `{{< /notice >}}`, `{{< tab "Linux" >}}`, `{{% … %}}` | `Warning:`, `Linux:`, … |
| | `{{< ref "page" >}}` | `page` |
| | a shortcode over several lines (in a paragraph too), `{{< comment >}}` … | as on one line, nothing |
| | `{{< tab lang="toml" >}}` (or a tab of `{{< tabpane lang="toml" >}}`), `{{< highlight py >}}`; a tab of `{{< tabpane text=true >}}` | a code fence; its Markdown |
| | `{{% /tab %}} {{% tab "B" %}}` (shortcodes sharing a line) | each as on a line of its own |
| Jekyll / Liquid | `{% include x.md %}`, `{% if %}` …, `{% highlight py %}`, `{: .note }` | an include, nothing, a code fence, `Note:` |
| | a quoted path put through `relative_url` in `{{ … }}`, `{{ site.repository }}` | the path, nothing |
| every dialect | `<!-- comments -->` (not in a code span), a heading's `{#id}` or a line's `{ .class }` | nothing |
| | HTML wrappers (`<div class="grid cards" markdown>`, `</details>`, table tags), a tag over lines | nothing |
| | `<div class="note info">` (a class naming an admonition type), then `<h5>Title</h5>` | `Note: Title` |
| | `<summary>`, `<strong>`, `<kbd>`, `<a href>` …, `<code>x</code>`, `<br>` | their text, `` `x` ``, a blank |
| | a code fence in a list item, left open where a line indented less ends the item | closed there |
| GitHub (and Hugo themes) | `> [!WARNING]`, `> [!INFO] Title` | `> Warning:`, `> Note: Title` |

An admonition is marked `Note:`, `Tip:` or `Warning:` (its type folded onto these three), then
its title. An include whose file is in the docs folder reads "(included from PATH)" (that file
is indexed on its own); otherwise "(included content not available)", so the reader sees that
something is missing.

Code fences are never read: a fence that shows the syntax keeps it. A construct the pass does
not recognise passes through unchanged, so nothing is ever lost; the stored text of a chunk is
still the Markdown as written (the reading is what is embedded, scored and quoted).

The reading is line-aligned: `read_lines` gives one entry per source line (None where the line
disappears), so a chunk's reading is the reading of its source lines, and a part that starts
inside a construct is read from the state the document had at that line (`Reading.states`).
Which families are on is the folder's dialect: detected from its files (`detect_dialects`) or
set (`FIELDGUIDE_DOCS_DIALECT`).

By job: `syntax` holds the constructs' patterns and shared readings, `folder` the folder's
dialect, `state` what is open between lines, `reader` reads the lines (a block step per family),
`constructs` gives what the page shows for one construct.
"""
from __future__ import annotations

# every name of the pass, importable from the package as from the module it once was
from ingest.dialects.syntax import ADMONITION_TYPES, attributes, label_of, mark, positional
from ingest.dialects.folder import (ALL_FAMILIES, DEFAULT_DIALECT, FAMILIES, NOT_AVAILABLE, Dialect, detect_dialects,
                                    folder_dialect, folder_dialect_of, leftover_syntax, parse_setting, reading_of)
from ingest.dialects.state import Reading, ReadState, join_reading
from ingest.dialects.reader import Reader, read_fragment, read_inline, read_lines
