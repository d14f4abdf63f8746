"""The daemon: the asyncio loop, its heartbeat, and the composition root."""
