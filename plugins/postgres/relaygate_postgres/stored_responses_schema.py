"""Migration ``0012_stored_responses`` on PostgreSQL: the table of SQLite's
:mod:`gateway_core.store.stored_responses_schema` (kept answers)."""

from __future__ import annotations

STORED_RESPONSES = """
CREATE TABLE stored_responses (
    id TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL,
    key_id BIGINT,
    model TEXT NOT NULL,
    channel_id BIGINT,
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    response TEXT NOT NULL,
    items TEXT
);
CREATE INDEX idx_stored_responses_user ON stored_responses (user_id, created_at, id);
CREATE INDEX idx_stored_responses_expires ON stored_responses (expires_at);
"""
