"""Widgets of /exam: the answer box that saves as it is typed, landing on the revealed stage."""
