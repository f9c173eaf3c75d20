"""Bytes <-> frames: NDJSON and Content-Length framing over stdio or in-memory streams."""
