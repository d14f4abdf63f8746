"""cronduit: a durable job scheduler.

The public Python API starts small: :class:`Cron` evaluates a cron expression in a time zone
with cronduit's DST rules, exactly as the daemon does.
"""

from cronduit.core.cron import Cron, CronError, DstPolicy

__all__ = ["Cron", "CronError", "DstPolicy", "__version__"]
__version__ = "0.1.0"
