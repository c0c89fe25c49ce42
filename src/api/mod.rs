//! The HTTP API for the app (tiny_http).
