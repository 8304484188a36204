"""Widgets of /score: the rubric form, the queue, the keyboard shortcuts."""
