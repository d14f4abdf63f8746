"""The config file: text in, frozen records out, every error with its ``FILE:LINE:COL``.

Pure: the caller reads the file and passes its text and the name to show in errors::

    config = load_config(path.read_text(), str(path))

See ``docs/config.md`` for every key and rule.
"""

from cronduit.core.config.errors import ConfigError, ConfigErrors
from cronduit.core.config.loader import load_config
from cronduit.core.config.model import (
    DEFAULT_CATCH_UP,
    AfterSpec,
    CatchUp,
    Config,
    Durable,
    Job,
    Notifier,
    OnSpec,
    OverlapSpec,
    Retry,
    Settings,
    Step,
    Workspace,
)

__all__ = [
    "DEFAULT_CATCH_UP",
    "AfterSpec",
    "CatchUp",
    "Config",
    "ConfigError",
    "ConfigErrors",
    "Durable",
    "Job",
    "Notifier",
    "OnSpec",
    "OverlapSpec",
    "Retry",
    "Settings",
    "Step",
    "Workspace",
    "load_config",
]
