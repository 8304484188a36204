"""Widgets of the admin pages (/admin, /calibrate, /models): calibration reports, the
leaderboard, flag review, preflight, run outcomes."""
