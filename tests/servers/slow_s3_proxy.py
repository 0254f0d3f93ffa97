"""Fast-expiry S3 proxy that also takes `delay_seconds` per request (before the expiry check).

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
        if self.delay_seconds > 0:
            time.sleep(self.delay_seconds)
        super().handle(h)
