"""Exceptions, one per CmscStatus value of the C ABI (include/cmsc.h)."""


class CmscError(Exception):
    """A cmsc call failed; the message is the library's `cmsc_last_error()`."""

    status = None


class InvalidArgumentError(CmscError, ValueError):
    """CMSC_INVALID_ARGUMENT: an input was rejected; nothing changed."""

    status = 1


class DivergedError(CmscError):
    """CMSC_DIVERGED: a step produced non-finite state; the simulation kept its last good step."""

    status = 2


class UnavailableError(CmscError):
    """CMSC_UNAVAILABLE: the requested method (e.g. a GPU one) is not available."""

    status = 3


class InternalError(CmscError):
    """CMSC_INTERNAL: a GPU device failure at run time (the message starts "GPU error") or a bug
    in cmsc; after a bug that panicked, the handle is unusable for changes."""

    status = 4


BY_STATUS = {cls.status: cls for cls in (InvalidArgumentError, DivergedError, UnavailableError, InternalError)}


class LibraryError(CmscError):
    """The native library could not be found or loaded, or has the wrong ABI version."""
