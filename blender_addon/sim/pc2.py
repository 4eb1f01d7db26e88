"""A streaming PC2 point-cache writer (the format of Blender's Mesh Cache modifier).

Layout: `POINTCACHE2\\0`, int32 version 1, int32 points, float32 start frame, float32 sample
rate, int32 sample count, then per sample `points × 3` float32 (little endian). Samples are
appended as they come; the header's count is rewritten after each one, so a bake interrupted at
any point leaves a valid cache of the frames already written.
"""

import os
import struct

import numpy as np

HEADER = struct.Struct("<12siiffi")
SIGNATURE = b"POINTCACHE2\0"


class Pc2Writer:
    """Writes samples of `points` vertices to `path` (a context manager). With `exclusive`, a
    file already at `path` is never overwritten: FileExistsError."""

    def __init__(self, path, points, start_frame=1.0, sample_rate=1.0, exclusive=False):
        self.points = int(points)
        self.samples = 0
        self._start, self._rate = float(start_frame), float(sample_rate)
        self._file = open(path, "xb" if exclusive else "wb")
        self._file.write(HEADER.pack(SIGNATURE, 1, self.points, self._start, self._rate, 0))

    def write(self, positions):
        """Appends one sample of (points, 3) positions and updates the header's count."""
        a = np.ascontiguousarray(positions, dtype="<f4")
        if a.shape != (self.points, 3):
            raise ValueError(f"expected ({self.points}, 3) positions, got {a.shape}")
        self._file.seek(0, os.SEEK_END)
        self._file.write(a.tobytes())
        self.samples += 1
        self._file.seek(HEADER.size - 4)
        self._file.write(struct.pack("<i", self.samples))
        self._file.flush()

    def close(self):
        """Flushes, fsyncs and closes (idempotent)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_pc2(path):
    """Reads a PC2 file: returns (start_frame, sample_rate, samples array (s, points, 3))."""
    with open(path, "rb") as f:
        data = f.read()
    signature, version, points, start, rate, samples = HEADER.unpack_from(data)
    if signature != SIGNATURE or version != 1:
        raise ValueError(f"{path} is not a PC2 version 1 file")
    body = np.frombuffer(data, dtype="<f4", offset=HEADER.size, count=samples * points * 3)
    return start, rate, body.reshape(samples, points, 3)
