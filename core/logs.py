"""Structured log lines: `time level logger key=value ...`, to stderr. PORFIRY_LOG_LEVEL sets the level."""
import logging
import os


def setup_logging(level: str | None = None) -> None:
    level = (level or os.environ.get("PORFIRY_LOG_LEVEL", "INFO")).upper()
    logging.basicConfig(
        level=getattr(logging, level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
