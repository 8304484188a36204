"""The path prefix the app is served under: Streamlit's `server.baseUrlPath` (from
`.streamlit/config.toml`, `--server.baseUrlPath nmb` or `STREAMLIT_SERVER_BASE_URL_PATH=nmb`),
so that it can live at `https://hospital.example/nmb/`. Streamlit puts its own pages, websocket
and downloads under it; our routes (`serve.py`), the viewers' image URLs and the login cookie's
`Path` take it from here."""

from streamlit import config


def base_path() -> str:
    """The prefix as a URL path: '' when there is none, else '/nmb' (one leading slash, none
    trailing), whatever slashes the setting was written with."""
    value = str(config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{value}" if value else ""
