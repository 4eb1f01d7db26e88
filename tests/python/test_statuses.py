"""Each CmscStatus value raises its own exception (issue 26): a GPU failing at run time
(CMSC_DEVICE_FAILURE) is told apart from a bug (CMSC_INTERNAL) by its status, not by a message
prefix."""

import pytest

from sim import _native
from sim.errors import (
    BY_STATUS,
    CmscError,
    DeviceFailureError,
    DivergedError,
    InternalError,
    InvalidArgumentError,
    UnavailableError,
)


class _Lib:
    """Stands in for the loaded library: `check` reads only `cmsc_last_error`."""

    def __init__(self, message):
        self.message = message

    def cmsc_last_error(self):
        return self.message.encode()


@pytest.mark.parametrize(
    ("status", "cls"),
    [(1, InvalidArgumentError), (2, DivergedError), (3, UnavailableError), (4, InternalError), (5, DeviceFailureError)],
)
def test_each_status_raises_its_exception_with_the_message(status, cls):
    with pytest.raises(cls) as caught:
        _native.check(_Lib("GPU error: out of memory"), status)
    assert type(caught.value) is cls and caught.value.status == status
    assert str(caught.value) == "GPU error: out of memory"


def test_a_device_failure_is_not_a_bug():
    assert not issubclass(DeviceFailureError, InternalError)
    assert issubclass(DeviceFailureError, CmscError)
    assert sorted(BY_STATUS) == [1, 2, 3, 4, 5]


def test_ok_raises_nothing_and_an_unknown_status_is_a_plain_cmsc_error():
    _native.check(_Lib(""), 0)
    with pytest.raises(CmscError) as caught:
        _native.check(_Lib("from a newer library"), 99)
    assert type(caught.value) is CmscError
