"""mkdocs hook: the search index as a script, so that search works from ``file://``.

The search plugin writes ``search/search_index.json``, which a page opened from ``file://``
cannot fetch (its origin is ``null``). After each build this hook writes the same index as
``search/search_index.js`` (it sets ``window.mkdocs_search_index``), which the theme's search
box (``docs/overrides/search/main.js``) loads with a ``<script>`` element.
"""

from __future__ import annotations

import json
import pathlib


def on_post_build(config, **kwargs) -> None:
    """Write ``search/search_index.js`` beside the search plugin's ``search_index.json``.

    Arguments:
        config: the mkdocs configuration of the build (its ``site_dir`` is read).

    Raises:
        FileNotFoundError: the search plugin wrote no ``search_index.json`` (it is not
            enabled, or it ran after this hook).
    """
    folder = pathlib.Path(config["site_dir"]) / "search"
    index = json.loads((folder / "search_index.json").read_text(encoding="utf-8"))
    # ensure_ascii: the script is plain ASCII whatever the page's charset; "</" cannot close
    # a script element that is loaded from its own file, so no further escaping is needed
    text = "window.mkdocs_search_index = " + json.dumps(index, ensure_ascii=True) + ";\n"
    (folder / "search_index.js").write_text(text, encoding="ascii")
