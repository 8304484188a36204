"""The server side of the app: the volume route, security headers, the client's address."""
