"""Exceptions, one per CmscStatus value of the C ABI (include/cmsc.h)."""


class CmscError(Exception):
    """A cmsc call failed; the message is the library's `cmsc_last_error()`."""

    status = None


class InvalidArgumentError(CmscError, ValueError):
    """CMSC_INVALID_ARGUMENT: an input was rejected; nothing changed."""

    status = 1


class DivergedError(CmscError):
    """CMSC_DIVERGED: a step produced non-finite state or a runaway vertex (the message names
    it); the simulation kept its last good step."""

    status = 2


class UnavailableError(CmscError):
    """CMSC_UNAVAILABLE: the requested method (e.g. a GPU one) is not available."""

    status = 3


class InternalError(CmscError):
    """CMSC_INTERNAL: a bug in cmsc (or a factorization that could not be set up); after a bug
    that panicked, the handle is unusable for changes."""

    status = 4


class DeviceFailureError(CmscError):
    """CMSC_DEVICE_FAILURE: a GPU failed at run time (out of memory, a launch failure, a lost
    device); not a bug. The simulation kept its last good step; the device may fail again, so
    recreate the simulation with a CPU method to go on."""

    status = 5


#: Status value → exception class, one per CmscStatus value after CMSC_OK.
BY_STATUS = {
    cls.status: cls
    for cls in (InvalidArgumentError, DivergedError, UnavailableError, InternalError, DeviceFailureError)
}


class LibraryError(CmscError):
    """The native library could not be found or loaded, or has the wrong ABI version."""
