"""Small widgets of the console's own: a stacked bar, the status line, the speculation badge, charts."""
