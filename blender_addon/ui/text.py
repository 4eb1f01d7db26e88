"""Long messages in panels: Blender labels do not wrap, so split them into lines."""

import textwrap

#: Characters per label line; fits a Properties editor of usual width.
LINE = 60


def wrapped_label(layout, text, icon="NONE"):
    """Draws `text` as labels of at most LINE characters, the first with `icon`; the lines
    joined by spaces give `text` back."""
    col = layout.column(align=True)
    for i, line in enumerate(textwrap.wrap(text, LINE, break_long_words=False, break_on_hyphens=False) or [""]):
        col.label(text=line, icon=icon if i == 0 else "BLANK1")
