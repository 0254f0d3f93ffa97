"""`python -m tests.stores adls|gcs [--lifetime S] [--refresh-endpoint] [--refresh-tokens]`: start one
emulated store, Iceberg's REST fixture on it and the vending front; print how to connect; run until
Ctrl-C (or SIGTERM), then stop everything."""
from __future__ import annotations

import argparse
import sys

from tests.servers.child import run_until_interrupted
from tests.stores.catalog import store_catalog
from tests.stores.install import StoreUnavailable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.stores", description=__doc__)
    parser.add_argument("store", choices=("adls", "gcs"))
    parser.add_argument("--lifetime", type=float, default=900, help="seconds each vended token lives (default 900)")
    parser.add_argument("--refresh-endpoint", action="store_true", help="advertise the /credentials refresh endpoint")
    parser.add_argument("--refresh-tokens", action="store_true", help="put a storage-refresh-token on each credential")
    args = parser.parse_args(argv)
    try:
        with store_catalog(args.store, lifetime_s=args.lifetime, advertise_refresh_endpoint=args.refresh_endpoint,
                           refresh_tokens=args.refresh_tokens) as stack:
            print(f"{args.store}: catalog {stack.uri} (Iceberg REST fixture at {stack.fixture.uri})")
            print(f"  warehouse {stack.warehouse}; tokens live {args.lifetime:.0f} s; "
                  f"ask with header X-Iceberg-Access-Delegation: vended-credentials")
            endpoint = stack.emulator.url if args.store == "gcs" else stack.emulator.endpoint("<account>")
            print(f"  store endpoint {endpoint}")
            sys.stdout.flush()
            run_until_interrupted()
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
