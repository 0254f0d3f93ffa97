"""Fast-expiry S3 proxy that also takes `delay_seconds` per request (before the expiry check, which
judges the keys as of the request's arrival plus that delay, however late the thread wakes).

A PyIceberg scan opens its files from a thread pool as fast as S3 answers, so against loopback
SeaweedFS a 200-file scan ends in a second. Slowing each request makes the same scan outlive
several short credential lifetimes, with every file still read for real.
"""
from __future__ import annotations

import time

from .s3_expiry_proxy import S3ExpiryProxy


class SlowS3ExpiryProxy(S3ExpiryProxy):
    def __init__(self, *args, delay_seconds: float = 0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.delay_seconds = delay_seconds

    def handle(self, h):
        delay = self.delay_seconds
        self._judged_at.value = self.clock() + delay
        try:
            if delay > 0:
                time.sleep(delay)
            super().handle(h)
        finally:
            self._judged_at.value = None
