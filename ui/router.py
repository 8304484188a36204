"""Every page path is known to `st.navigation` in every session, so a typed URL or a reload
never meets Streamlit's "Page not found" dialog: a logged-out visitor gets the login form at
the same address (a deep link survives login, which reruns on that address), a role gets a
plain refusal on another role's page, and its own pages as usual."""

from collections.abc import Callable

import streamlit as st

from ui.auth import login_page

# Each role's pages: (file, title, url path, icon). The first is the role's landing page.
PAGES: dict[str, list[tuple[str, str, str, str]]] = {
    "admin": [
        ("pages/admin.py", "Data and users", "admin", ":material/database:"),
        ("pages/calibrate.py", "Grader calibration", "calibrate", ":material/query_stats:"),
        ("pages/models.py", "Models", "models", ":material/smart_toy:"),
        ("pages/study_results.py", "Results", "results", ":material/table_chart:"),
    ],
    "expert": [("pages/score.py", "Score rationales", "score", ":material/rate_review:")],
    "physician": [("pages/exam.py", "Exam", "exam", ":material/quiz:")],
    "student": [("pages/exam.py", "Exam", "exam", ":material/quiz:")],
}

ALL_PATHS = {u: (f, t) for pages in PAGES.values() for f, t, u, _ in pages}


def refusal() -> None:
    """Another role's page: a plain refusal, nothing of the page."""
    st.error("You do not have access to this page.")


def _as(body: Callable[[], None], name: str) -> Callable[[], None]:
    """`body` under a distinct function name (Streamlit keys callable pages by name)."""

    def page() -> None:
        body()

    page.__name__ = page.__qualname__ = name
    return page


def routes(role: str | None) -> list:
    """The pages of `role` (None: logged out), then every other path, hidden."""
    if role is None:
        return [st.Page(login_page, title="Log in", url_path="login", default=True)] + [
            st.Page(_as(login_page, f"login_{u}"), title="Log in", url_path=u,
                    visibility="hidden") for u in ALL_PATHS]
    # The landing page twice: as the default (at "/", whose path Streamlit leaves empty) and
    # at its own path, so a typed or reloaded "/score" finds it too.
    f, t, u, i = PAGES[role][0]
    own = [st.Page(f, title=t, url_path=f"{u}-home", icon=i, default=True, visibility="hidden")]
    own += [st.Page(f, title=t, url_path=u, icon=i) for f, t, u, i in PAGES[role]]
    mine = {u for *_, u, _ in PAGES[role]}
    return own + [
        st.Page(_as(refusal, f"refuse_{u}"), title=t, url_path=u, visibility="hidden")
        for u, (_, t) in ALL_PATHS.items() if u not in mine]
