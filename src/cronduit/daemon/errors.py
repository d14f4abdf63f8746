"""Why a daemon does not start: each a one-line reason the CLI prints as it exits."""


class ListenError(RuntimeError):
    """The HTTP address cannot be listened on (in use, not this host's, taken between the bind
    and the listen, a server that does not come up): the daemon stops, with this one line."""


class AlreadyServing(RuntimeError):
    """Another daemon holds the state directory's lock."""
